"""fxla.gradients: where fxla cannot differentiate a call (an op without a gradient — floor_divide has none in
torch either —, a loaded forward-only artifact), its torch outputs behave for autograd as eager's do up to the
backward, which raises GradientError with the reason instead of training without the compiled part.
Differentiated calls are tested in tests/test_autograd.py."""
from __future__ import annotations

import re
import sys

import pytest
import torch
import torch.nn as nn

import fxla
from fxla.gradients import GradientError

HERE = re.escape(__file__)


class FloorDiv(nn.Module):
    def forward(self, x):
        return torch.floor_divide(x, 0.25)          # no derivative, in torch or in fxla


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4), FloorDiv())


def backward_error(out) -> str:
    with pytest.raises(GradientError) as info:
        out.sum().backward()
    return str(info.value)


@pytest.mark.parametrize("call", [0, 1, 2], ids=["first (general path)", "second (plan)", "third"])
def test_outputs_require_grad_like_eager_and_backward_is_a_clear_error(call):
    model = mlp()
    fast = fxla.compile(model)
    x = torch.randn(3, 8)
    for _ in range(call):
        fast(x)
    out = fast(x)                                                  # the call site the message names
    line = sys._getframe().f_lineno - 1
    want = model(x)
    assert out.requires_grad and want.requires_grad and out.grad_fn is not None
    torch.testing.assert_close(out, want)
    message = backward_error(out)
    assert message.startswith("backward through the outputs of fxla-compiled Sequential: fxla cannot "
                              "differentiate this call")
    assert "cannot differentiate fxla.floor_divide" in message
    assert re.search(rf"\n  at {HERE}:{line}:1\n\s+out = fast\(x\)  +# the call site", message), message
    names = r"(\d\.(weight|bias), ){3}\d\.(weight|bias)"
    assert re.search(rf"why: that call ran with grad mode on and {names} required grad", message), message
    assert "fix: " in message and "torch.no_grad()" in message and "requires_grad_(False)" in message


def test_a_loss_with_other_terms_does_not_train_silently_without_the_compiled_part():
    model = mlp()
    fast = fxla.compile(model)
    loss = fast(torch.randn(3, 8)).square().mean() + 1e-3 * model[0].weight.square().sum()
    with pytest.raises(GradientError):
        loss.backward()


@pytest.mark.parametrize("mode", [torch.no_grad, torch.inference_mode])
def test_no_grad_and_inference_mode_give_plain_tensors_through_the_c_shortcut(mode):
    model = mlp()
    fast = fxla.compile(model)
    x = torch.randn(3, 8)
    with mode():
        fast(x)
        plan = next(iter(fast._plans.values()))
        assert plan.host is not None and plan.host[4] is True      # its parameters require grad
        out = fast(x)
        assert not out.requires_grad and out.grad_fn is None
        torch.testing.assert_close(out, model(x))
    assert fast(x).requires_grad                                   # grad mode on again: guarded again


def test_frozen_model_gives_plain_tensors_and_an_input_that_requires_grad_is_named():
    model = mlp().requires_grad_(False)
    fast = fxla.compile(model)
    x = torch.randn(3, 8)
    out = fast(x)
    assert not out.requires_grad
    assert next(iter(fast._plans.values())).host[4] is True        # (its parameters may be unfrozen later)
    assert not fast(x).requires_grad
    x.requires_grad_()
    for _ in range(2):                                             # general path, then the plan
        out = fast(x)
        assert out.requires_grad
        torch.testing.assert_close(out, model(x))
        assert "input 0 required grad" in backward_error(out)


def test_integer_outputs_stay_plain_and_guarded_outputs_act_like_eager_ones():
    def f(x, w):
        y = torch.floor_divide(x @ w, 0.25)
        return y, y.argmax(-1)
    fast = fxla.compile(f)
    x, w = torch.randn(2, 3), torch.randn(3, 4, requires_grad=True)
    y, i = fast(x, w)
    assert y.requires_grad and not i.requires_grad and i.dtype == torch.int64
    torch.testing.assert_close(y, f(x, w)[0])
    assert y.detach().numpy().shape == (2, 4)
    with pytest.raises(RuntimeError, match="requires grad"):      # as eager's output refuses it
        y.numpy()
    y.mul_(2)                                                      # in place, as on eager's output
    assert "input 1 required grad" in backward_error(y)


def test_jax_outputs_have_no_guard():
    import jax
    fast = fxla.compile(mlp(), output="jax")
    out = fast(torch.randn(3, 8))
    assert isinstance(out, jax.Array)


def test_loaded_artifact_guards_inputs_that_require_grad(tmp_path):
    model = mlp()
    x = torch.randn(3, 8)
    fxla.export(model, (x,), tmp_path / "m")
    loaded = fxla.load(tmp_path / "m")
    assert not loaded(x).requires_grad                             # its weights are its own
    out = loaded(x.requires_grad_())
    assert out.requires_grad and "input 0 required grad" in backward_error(out)


def test_torch_compile_backend_training_fails_at_backward_with_the_reason():
    model = mlp()
    compiled = torch.compile(model, backend="fxla")
    out = compiled(torch.randn(3, 8))
    assert out.requires_grad
    assert "cannot differentiate fxla.floor_divide" in backward_error(out)
    with torch.no_grad():
        torch.testing.assert_close(compiled(torch.ones(3, 8)), model(torch.ones(3, 8)))


def test_a_long_list_of_parameters_is_shortened():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4), FloorDiv())
    message = backward_error(fxla.compile(model)(torch.randn(2, 4)))
    assert re.search(r"grad mode on and (\d\.(weight|bias), ){2}\d\.(weight|bias) and 3 more required grad", message)
