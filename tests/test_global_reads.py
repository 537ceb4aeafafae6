"""Plain globals and closure variables the traced code reads are watched like plain attributes
(fxla.frontend.global_reads): a call after one changed runs the trace of the new value, as eager reads it."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla
from fxla.frontend.global_reads import plain_reads
from fxla.modes import StateChangeError

BETA = 0.0
SCALE = 1.0


def _kl_annealed(m, x, y):
    out = m(x)
    return F.cross_entropy(out, y) + BETA * out.pow(2).mean()


class _Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 3)

    def forward(self, x):
        return self.l(x) * SCALE


def _batches(n):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(6, 4, generator=g), torch.randint(0, 3, (6,), generator=g)) for _ in range(n)]


def _train(step_fn, loss_fn, model, opt, set_value):
    losses = []
    for i, (x, y) in enumerate(_batches(4)):
        set_value(float(i))
        if step_fn is None:
            opt.zero_grad()
            loss = loss_fn(model, x, y)
            loss.backward()
            opt.step()
        else:
            loss = step_fn(x, y)
        losses.append(float(loss.detach()))
    return losses


def _compare(loss_fn, set_value):
    torch.manual_seed(0)
    ref = nn.Linear(4, 3)
    model = copy.deepcopy(ref)
    opt_ref, opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (ref, model))
    want = _train(None, loss_fn, ref, opt_ref, set_value)
    got = _train(fxla.compile_step(model, opt, loss_fn), loss_fn, model, opt, set_value)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model.weight, ref.weight, rtol=1e-5, atol=1e-6)


def test_a_loss_reading_a_global_that_the_loop_changes_follows_it():
    def set_beta(v):
        global BETA
        BETA = v
    try:
        _compare(_kl_annealed, set_beta)
    finally:
        set_beta(0.0)


def test_a_loss_reading_a_closure_variable_that_the_loop_changes_follows_it():
    beta = 0.0

    def loss_fn(m, x, y):
        out = m(x)
        return F.cross_entropy(out, y) + beta * out.pow(2).mean()

    def set_beta(v):
        nonlocal beta
        beta = v
    _compare(loss_fn, set_beta)


def test_a_forward_reading_a_global_follows_it():
    global SCALE
    model, x = _Scaled(), torch.randn(2, 4)
    fast = fxla.compile(model)
    try:
        for value in (1.0, 2.0, 1.0):
            SCALE = value
            torch.testing.assert_close(fast(x), model(x))
    finally:
        SCALE = 1.0


def test_a_global_changing_on_every_call_is_a_clear_error():
    global SCALE
    model, x = _Scaled(), torch.randn(2, 4)
    fast = fxla.compile(model)
    try:
        with pytest.raises(StateChangeError, match=r"global SCALE changed on call after call \(now [^(]*SCALE = "
                                                   r"\d+\.0\)(.|\n)*fix: (.|\n)*a global or closure variable"):
            for i in range(20):
                SCALE = float(i)
                torch.testing.assert_close(fast(x), model(x))
    finally:
        SCALE = 1.0


def test_only_plain_values_loaded_by_the_code_are_watched():
    limit = 3

    def fn(x):
        return [F.relu(x) * SCALE for _ in range(limit)]       # (a comprehension's code, a closure cell)
    labels = [label for *_, label in plain_reads(fn)]
    assert labels == ["test_only_plain_values_loaded_by_the_code_are_watched.<locals>.fn: global SCALE",
                      "test_only_plain_values_loaded_by_the_code_are_watched.<locals>.fn: closure variable limit"]
