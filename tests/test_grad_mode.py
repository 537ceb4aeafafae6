"""fxla.frontend.passes.grad_mode: ``torch.no_grad()`` inside ``forward`` cuts gradients as in eager, through
fxla.compile (the tracer records the grad-mode switches) and torch.compile(backend="fxla") (dynamo's graphs hold
them).  Before, both routes ignored the region: a distillation teacher got gradients, and gradients flowed back
through values eager computes without history."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn

import fxla

TOL = dict(rtol=1e-5, atol=1e-6)


class Distill(nn.Module):
    """A student trained towards a teacher that runs under no_grad on the student's own features."""

    def __init__(self):
        super().__init__()
        self.student, self.teacher, self.head = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 2)

    def forward(self, x):
        h = torch.tanh(self.student(x))
        with torch.no_grad():
            t = self.teacher(h) * 2                       # (its history, and h's through it, cut)
            t = t.softmax(-1)
        out = self.head(h)
        return (out - t[:, :2]).pow(2).mean() + (h * t).sum()


class WithDecorator(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(3, 3), nn.Linear(3, 3)

    @torch.no_grad()
    def target(self, x):
        return self.b(x).relu(), self.b(x).sigmoid()       # (a tuple made under no_grad)

    def forward(self, x):
        r, s = self.target(x)
        with torch.set_grad_enabled(False):
            scale = x.abs().mean()
        with torch.enable_grad():                          # (enabled again inside a disabled region: no cut)
            y = self.a(x)
        return (y * r + s * scale).sum()


@pytest.mark.parametrize("route", ["compile", "backend", "dynamic"])
@pytest.mark.parametrize("build", [Distill, WithDecorator])
def test_gradients_through_a_no_grad_region_match_eager(route, build):
    torch.manual_seed(0)
    model = build()
    reference = copy.deepcopy(model)
    fast = {"compile": lambda: fxla.compile(model), "dynamic": lambda: fxla.compile(model, dynamic=True),
            "backend": lambda: torch.compile(model, backend="fxla")}[route]()
    for n in (5, 7):
        x = torch.randn(n, 4 if build is Distill else 3, generator=torch.Generator().manual_seed(n))
        xs = [x.clone().requires_grad_() for _ in range(2)]
        for m, f, xx in ((reference, reference, xs[0]), (model, fast, xs[1])):
            m.zero_grad(set_to_none=True)
            f(xx).backward()
        torch.testing.assert_close(xs[1].grad, xs[0].grad, **TOL)
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            if q.grad is None:         # (used only under no_grad: eager's None; fxla's zeros, docs/training.md)
                assert p.grad is None or not p.grad.any(), name
            else:
                torch.testing.assert_close(p.grad, q.grad, **TOL, msg=lambda m: f"{name}: {m}")


def test_the_graph_holds_no_marker_and_detaches_what_leaves_the_region():
    torch.manual_seed(0)
    fast = fxla.compile(Distill())
    fast(torch.randn(2, 4))
    code = fast.graph_module.code
    assert "_set_grad_enabled" not in code and ".detach()" in code
    assert torch.is_grad_enabled()


def test_no_grad_state_updates_in_forward_still_write_back():
    """An EMA of the features kept in a buffer, updated in place under no_grad (the momentum-encoder pattern)."""
    class Ema(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.register_buffer("ema", torch.zeros(3))

        def forward(self, x):
            h = self.lin(x)
            with torch.no_grad():
                self.ema.mul_(0.9).add_(h.mean(0) * 0.1)
            return (h - self.ema).pow(2).sum()

    torch.manual_seed(0)
    model = Ema()
    reference = copy.deepcopy(model)
    fast = fxla.compile(model)
    for step in range(3):
        x = torch.randn(4, 3)
        for m, f in ((reference, reference), (model, fast)):
            m.zero_grad()
            f(x).backward()
        torch.testing.assert_close(model.ema, reference.ema, **TOL)
        torch.testing.assert_close(model.lin.weight.grad, reference.lin.weight.grad, **TOL)
