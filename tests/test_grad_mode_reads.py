"""Forward reading the caller's grad mode (``torch.is_grad_enabled()``): a trace per caller's mode
(fxla.frontend.grad_enables, fxla.modes), every call's value as eager's; and forward turning grad on inside its
own ``no_grad`` region under a ``no_grad`` caller (refused, as a region at the caller's level is)."""
from __future__ import annotations

import copy
import logging

import pytest
import torch
from torch import nn

import fxla


class _BranchesOnGradMode(nn.Module):
    """Takes another branch when the caller's grad mode is off (a cheaper inference path)."""

    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 4)

    def forward(self, x, mask=None):
        h = self.l(x)
        if mask is not None:
            h = h * mask
        if torch.is_grad_enabled():
            return torch.tanh(h) * 2
        return h * 3


def _check(fast, model, *args):
    """One call of ``fast`` and ``model`` in the current grad mode: the same value and history."""
    got, want = fast(*args), model(*args)
    torch.testing.assert_close(got, want)
    assert got.requires_grad == want.requires_grad
    return got, want


@pytest.mark.parametrize("options", [{}, {"concrete_shapes": True}], ids=["default", "concrete_shapes"])
def test_a_branch_on_the_grad_mode_follows_each_calls_mode(options):
    torch.manual_seed(0)
    model = _BranchesOnGradMode()
    fast = fxla.compile(model, **options)
    x = torch.randn(2, 4)
    for grad in (False, True, False, False, True, True, False, True):   # (alternating, the planned calls too)
        with torch.set_grad_enabled(grad):
            got, want = _check(fast, model, x)
    got.sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    want.sum().backward()
    for g, p in zip(grads, model.parameters()):
        torch.testing.assert_close(g, p.grad)


def test_compiled_under_no_grad_then_called_in_both_modes():
    torch.manual_seed(0)
    model = _BranchesOnGradMode()
    x = torch.randn(2, 4)
    with torch.no_grad():
        fast = fxla.compile(model)
        _check(fast, model, x)
    _check(fast, model, x)
    with torch.inference_mode():
        _check(fast, model, x)


def test_a_call_with_a_none_input_whose_trace_alone_reads_the_mode():
    class ReadsOnlyWithoutMask(nn.Module):
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(4, 4)

        def forward(self, x, mask=None):
            if mask is None and not torch.is_grad_enabled():
                return self.l(x) - 1
            return self.l(x) if mask is None else self.l(x) * mask

    torch.manual_seed(0)
    model, x = ReadsOnlyWithoutMask(), torch.randn(2, 4)
    fast = fxla.compile(model)
    with torch.no_grad():                          # (the main trace has the mask: the None trace reads the mode)
        _check(fast, model, x)
        _check(fast, model, x, torch.ones(2, 4))
        _check(fast, model, x)
    _check(fast, model, x)
    with torch.no_grad():
        _check(fast, model, x)


def test_a_compiled_function_reading_the_mode():
    def f(x, w):
        y = x @ w
        return y.relu() if torch.is_grad_enabled() else y.sigmoid()

    fast = fxla.compile(f)
    x, w = torch.randn(3, 4), torch.randn(4, 2, requires_grad=True)
    for grad in (True, False, True, False):
        with torch.set_grad_enabled(grad):
            torch.testing.assert_close(fast(x, w), f(x, w))


def test_a_mode_saved_before_no_grad_and_restored_runs_under_a_no_grad_call():
    class SavesTheMode(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x):
            grad = torch.is_grad_enabled()
            with torch.no_grad():
                stats = self.a(x).mean()
            torch.set_grad_enabled(grad)           # (a plain call: the mode it saved, true only for a grad caller)
            return self.b(x) - stats

    torch.manual_seed(0)
    model, x = SavesTheMode(), torch.randn(3, 4)
    fast = fxla.compile(model)
    with torch.no_grad():
        _check(fast, model, x)                     # (not refused: the trace for a no_grad caller sets it off)
    got, want = _check(fast, model, x)
    got.sum().backward()
    grad = model.b.weight.grad.clone()
    model.zero_grad()
    want.sum().backward()
    torch.testing.assert_close(grad, model.b.weight.grad)
    assert model.a.weight.grad is None


def test_the_recompile_log_names_the_grad_mode(caplog):
    model, x = _BranchesOnGradMode(), torch.randn(2, 4)
    fast = fxla.compile(model)
    fast(x, torch.ones(2, 4))
    with caplog.at_level(logging.INFO, logger="fxla"), torch.no_grad():
        fast(x, torch.ones(2, 4))
    assert "a call under no_grad of a model that reads the grad mode or turns it on: traced for it" in caplog.text


def test_two_threads_in_two_grad_modes_each_get_their_own_result():
    """Grad mode is a thread's: a call under no_grad in one thread and one with grad in another run their own
    traces side by side (nothing of the module switches between them)."""
    import threading
    torch.manual_seed(0)
    model, x = _BranchesOnGradMode(), torch.randn(2, 4)
    fast = fxla.compile(model)
    with torch.no_grad():
        want = {False: model(x)}
        fast(x)
    want[True] = model(x).detach()
    fast(x)
    wrong, errors = {True: 0, False: 0}, []

    def calls(grad):
        try:
            for _ in range(300):
                with torch.set_grad_enabled(grad):
                    y = fast(x)
                if not torch.allclose(y.detach(), want[grad]) or y.requires_grad != grad:
                    wrong[grad] += 1
        except Exception as err:  # noqa: BLE001
            errors.append(err)
    threads = [threading.Thread(target=calls, args=(grad,)) for grad in (True, False)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and wrong == {True: 0, False: 0}


def test_hugging_face_use_cache_under_gradient_checkpointing_follows_the_mode():
    """transformers turns use_cache off under gradient checkpointing only when grad mode is on: under no_grad eager
    returns a cache (which fxla.compile cannot return: a clear error, not a call without it)."""
    import sys
    sys.path[:0] = ["tests", "utils"]
    from torchvision_cpu import import_torchvision
    import_torchvision()
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=32, resid_pdrop=0.0,
                        embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(config)
    model.gradient_checkpointing_enable()
    model.train()
    ids = torch.randint(0, 64, (1, 6))
    eager = copy.deepcopy(model)
    fast = fxla.compile(model, concrete_shapes=True)
    want, got = eager(ids, use_cache=True), fast(ids, use_cache=True)
    assert want.past_key_values is None and got.past_key_values is None
    torch.testing.assert_close(got.logits, want.logits)
    with torch.no_grad():
        assert eager(ids, use_cache=True).past_key_values is not None
        with pytest.raises(fxla.TraceError, match="DynamicCache"):
            fast(ids, use_cache=True)


class _EnablesInsideNoGrad(nn.Module):
    """torch.enable_grad() nested in forward's own no_grad region: eager's region has a history under a no_grad
    caller too."""

    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 4)

    def forward(self, x):
        with torch.no_grad():
            h = self.l(x)
            with torch.enable_grad():
                return self.l(h)


def test_enable_grad_inside_forwards_no_grad_under_a_no_grad_call_is_refused():
    torch.manual_seed(0)
    model, x = _EnablesInsideNoGrad(), torch.randn(2, 4)
    fast = fxla.compile(model)
    with torch.no_grad():
        assert model(x).requires_grad
        with pytest.raises(fxla.GradientError, match=r"turns grad mode on(.|\n)*test_grad_mode_reads"):
            fast(x)
    got, want = _check(fast, model, x)
    got.sum().backward()
    grad = model.l.weight.grad.clone()
    model.zero_grad()
    want.sum().backward()
    torch.testing.assert_close(grad, model.l.weight.grad)
    model.requires_grad_(False)                    # (nothing requires grad: nothing to lose, it runs)
    with torch.no_grad():
        _check(fast, model, x)


def test_the_set_grad_enabled_decorator_under_a_no_grad_call_is_refused():
    class Decorated(nn.Module):
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(4, 4)

        @torch.set_grad_enabled(True)
        def forward(self, x):
            return self.l(x).tanh() + self.helper(x)

        @torch.enable_grad()
        def helper(self, x):
            return self.l(x)

    torch.manual_seed(0)
    model, x = Decorated(), torch.randn(2, 4)
    fast = fxla.compile(model)
    with torch.no_grad():
        assert model(x).requires_grad
        with pytest.raises(fxla.GradientError, match="turns grad mode on"):
            fast(x)
    _check(fast, model, x)


class _RegionBy(nn.Module):
    """Turns grad mode on by a flag (``set_grad_enabled(self.flag)``); ``use``: what the output does with the
    region's result."""

    def __init__(self, use: str):
        super().__init__()
        self.a, self.b, self.flag, self.use = nn.Linear(4, 4), nn.Linear(4, 4), True, use

    def forward(self, x):
        with torch.no_grad():
            h = self.a(x)
        with torch.set_grad_enabled(self.flag):
            y = self.b(h)
        if self.use == "returned":
            return y
        if self.use == "under_no_grad":         # (the caller's no_grad: eager's output has no history)
            return y * 2 + self.a(x)
        with torch.enable_grad():               # ("enable_grad": a second region, only parameters of a)
            return self.a(x).tanh() + y.detach()


@pytest.mark.parametrize("route", ["compile", "backend"])
def test_a_region_turned_on_by_a_flag_whose_result_is_returned_is_refused_under_no_grad(route):
    torch.manual_seed(0)
    model, x = _RegionBy("returned"), torch.randn(2, 4)
    fast = fxla.compile(model) if route == "compile" else torch.compile(model, backend="fxla")
    with torch.no_grad():
        assert model(x).requires_grad
        with pytest.raises(fxla.GradientError, match=r"turns grad mode on(.|\n)*" + (
                "test_grad_mode_reads" if route == "compile" else "")):
            fast(x)
    model.flag = False                         # (a flag off: no region, it runs)
    with torch.no_grad():
        _check(fast, model, x)
    model.flag = True
    _check(fast, model, x)


@pytest.mark.parametrize("use", ["under_no_grad", "enable_grad"])
def test_what_gets_a_history_under_no_grad_decides_the_refusal(use):
    """A region's result used only under the caller's no_grad gives eager's output no history: the call runs; a
    region reading only some parameters is refused only while one of those requires grad."""
    torch.manual_seed(0)
    model, x = _RegionBy(use), torch.randn(2, 4)
    fast = fxla.compile(model)
    with torch.no_grad():
        if use == "under_no_grad":
            _check(fast, model, x)
            _check(fast, model, x)
        else:
            with pytest.raises(fxla.GradientError, match="turns grad mode on"):
                fast(x)
            model.a.requires_grad_(False)       # (b's parameters require grad still: b's region is no output's)
            _check(fast, model, x)
            _check(fast, model, x)
            model.a.requires_grad_(True)
    got, want = _check(fast, model, x)
    got.sum().backward()
    grads = [p.grad for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    want.sum().backward()
    for g, p in zip(grads, model.parameters()):
        assert (g is None) == (p.grad is None)
        torch.testing.assert_close(g, p.grad) if g is not None else None


class _KeepsHistory(nn.Module):
    """A region's result, then under the caller's no_grad: a view, the tensor itself, changed in place, stored on
    the module -- each keeps eager's history."""

    def __init__(self, form: str):
        super().__init__()
        self.l, self.form = nn.Linear(4, 1), form

    def forward(self, x):
        with torch.enable_grad():
            e = self.l(x)
        if self.form == "view":
            return e.squeeze(-1)
        if self.form == "same":
            return e.float().contiguous()
        if self.form == "in_place":
            e += 1
            return e * 1 if False else e
        self.cache = e
        return e.detach() * 2


@pytest.mark.parametrize("form", ["view", "same", "in_place", "stored"])
def test_a_history_kept_under_no_grad_is_refused(form):
    torch.manual_seed(0)
    model, x = _KeepsHistory(form), torch.randn(3, 4)
    fast = fxla.compile(model)
    with torch.no_grad():
        kept = model(x) if form != "stored" else (model(x), model.cache)[1]
        assert kept.requires_grad
        with pytest.raises(fxla.GradientError, match="turns grad mode on"):
            fast(x)
    _check(fast, model, x)


def test_a_transformer_encoder_frozen_after_compiling_as_eager():
    """The encoder's nested-tensor path depends on its parameters' requires_grad: watched, so freezing it after the
    first call (a frozen backbone) takes eager's path."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, dropout=0.0)
    encoder = nn.TransformerEncoder(layer, 2).eval()
    x, pad = torch.randn(2, 5, 8), torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    fast = fxla.compile(encoder)
    for frozen in (False, True, False):
        encoder.requires_grad_(not frozen)
        got, want = fast(x, src_key_padding_mask=pad), encoder(x, src_key_padding_mask=pad)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        assert bool(want[1, 3:].abs().sum() == 0) == frozen
