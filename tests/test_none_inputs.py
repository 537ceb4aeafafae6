"""Calls that give None to inputs of a shape-agnostic trace run a trace with them fixed at None (fxla.none_inputs):
every ``is None`` test answers as in eager PyTorch, wherever the model makes it."""
import copy
import itertools

import jax.numpy as jnp
import pytest
import torch

import fxla
from fxla.none_inputs import MAX_VARIANTS


class Scaled(torch.nn.Module):
    """``mask is None`` changes the result although the other branch does not read ``mask`` at all."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x, mask=None):
        if mask is None:
            x = x * 2
        return self.lin(x) + 1


def _helper(x, bias):
    return x if bias is None else x + bias


class Nested(torch.nn.Module):
    """The test is in a helper and in a submodule's forward, not in the compiled forward."""

    def __init__(self):
        super().__init__()
        self.inner = Scaled()

    def forward(self, x, bias=None, mask=None):
        return self.inner(_helper(x, bias), mask)


class Four(torch.nn.Module):
    def forward(self, x, a=None, b=None, c=None, d=None):
        for k, v in enumerate((a, b, c, d)):
            x = x * (k + 2) if v is None else x + v
        return x


def _same(got, want):
    torch.testing.assert_close(got, want.detach(), rtol=1e-5, atol=1e-6)


def test_default_none_takes_the_none_branch():
    torch.manual_seed(0)
    model, x, mask = Scaled(), torch.randn(2, 3), torch.ones(3)
    fast = fxla.compile(model)
    _same(fast(x), model(x))                      # the first call: the default None
    _same(fast(x, mask), model(x, mask))
    _same(fast(x, None), model(x, None))
    _same(fast(x, mask=None), model(x))
    assert fast.cache_size == 2                   # (the tensor call's program and the None call's)


def test_none_after_a_tensor_call_and_in_helpers():
    torch.manual_seed(0)
    model, x = Nested(), torch.randn(2, 3)
    fast = fxla.compile(model)
    for bias, mask in itertools.product((None, torch.full((3,), 0.5)), (None, torch.ones(3))):
        for _ in range(2):                        # (the second call: the variant's plan)
            _same(fast(x, bias, mask), model(x, bias, mask))
    _same(fast(x, mask=torch.ones(3)), model(x, mask=torch.ones(3)))


def test_variants_are_bounded_and_dropped_ones_made_again():
    model, x = Four(), torch.randn(4)
    fast = fxla.compile(model)
    fast.recompile_budget = 64
    patterns = list(itertools.product((None, torch.ones(4)), repeat=4))
    assert len(patterns) - 1 > MAX_VARIANTS
    for _ in range(2):
        for args in patterns:
            _same(fast(x, *args), model(x, *args))
    assert len(fast._nones._variants) == MAX_VARIANTS


def test_gradients_through_a_none_variant():
    torch.manual_seed(0)
    model = Scaled()
    fast = fxla.compile(model)
    x = torch.randn(2, 3, requires_grad=True)
    fast(x).square().sum().backward()
    got = x.grad.clone(), model.lin.weight.grad.clone()
    x.grad = None
    model.zero_grad()
    model(x).square().sum().backward()
    _same(got[0], x.grad)
    _same(got[1], model.lin.weight.grad)


class ModeDependent(torch.nn.Module):
    def forward(self, x, scale=None):
        if scale is None:
            scale = 3.0 if self.training else 5.0
        return x * scale


def test_variants_follow_the_mode():
    model, x = ModeDependent(), torch.randn(3)
    fast = fxla.compile(model)
    for mode in (True, False, True):
        model.train(mode)
        _same(fast(x), model(x))
        _same(fast(x, torch.full((3,), 2.0)), model(x, torch.full((3,), 2.0)))


def test_lower_trace_for_and_jax_function_route_none_calls():
    torch.manual_seed(0)
    model, x = Scaled(), torch.randn(2, 3)
    fast = fxla.compile(model)
    gm, values = fast.trace_for(x)
    assert [n.target for n in gm.graph.nodes if n.op == "placeholder"] == ["x"] and len(values) == 1
    assert "stablehlo" in fast.lower(x, None).stablehlo
    assert fast.executable_for(x, None) is not fast.executable_for(x, torch.ones(3))
    fn = fast.as_jax_function(jnp.asarray(x.numpy()), None)
    _same(torch.from_numpy(fn(jnp.asarray(x.numpy()), None).__array__().copy()), model(x))
    jax_out = fxla.compile(model, output="jax")
    _same(torch.from_numpy(jax_out(jnp.asarray(x.numpy())).__array__().copy()), model(x))


def test_dynamic_module_keeps_polymorphic_programs_for_none_calls():
    model = Scaled()
    fast = fxla.compile(model, dynamic={"x": {0: fxla.Dim("batch")}})
    for n in (2, 5, 7):
        x = torch.randn(n, 3)
        _same(fast(x), model(x))
    assert fast._nones._variants                  # (the None call's member: polymorphic too)
    member = next(iter(fast._nones._variants.values()))
    assert member._dynamic is not None and member._dynamic.lowerings == 1


def test_compile_step_with_a_none_batch_argument():
    torch.manual_seed(0)
    model = Scaled()
    twin = copy.deepcopy(model)
    opt, twin_opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, twin))

    def loss_fn(m, x, mask):
        return m(x, mask).square().mean()
    step = fxla.compile_step(model, opt, loss_fn)
    x = torch.randn(4, 3)
    for mask in (None, torch.ones(3), None):
        got = step(x, mask)
        twin_opt.zero_grad()
        want = loss_fn(twin, x, mask)
        want.backward()
        twin_opt.step()
        torch.testing.assert_close(got.detach(), want.detach(), rtol=1e-5, atol=1e-6)
    for a, b in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(a.detach(), b.detach(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("given", ["positional", "keyword"])
def test_none_for_a_required_parameter(given):
    class Required(torch.nn.Module):
        def forward(self, x, y):
            return x + 1 if y is None else x + y
    model, x = Required(), torch.randn(3)
    fast = fxla.compile(model)
    got = fast(x, None) if given == "positional" else fast(x, y=None)
    _same(got, model(x, None))
    _same(fast(x, torch.ones(3)), model(x, torch.ones(3)))


def test_export_of_a_none_call_holds_the_none_trace(tmp_path):
    torch.manual_seed(0)
    model, x, mask = Scaled(), torch.randn(2, 3), torch.ones(3)
    fxla.export(model, (x,), tmp_path / "none")
    fxla.export(model, (x, mask), tmp_path / "mask")
    _same(fxla.load(tmp_path / "none")(x, None), model(x))
    _same(fxla.load(tmp_path / "none")(x), model(x))          # (called like the example: the default None)
    _same(fxla.load(tmp_path / "mask")(x, mask), model(x, mask))


class _Resets(torch.nn.Module):
    """The None branch replaces a buffer (a new object): the tensor call after it reads the new one, as eager."""

    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(3))

    def forward(self, x, reset=None):
        if reset is None:
            self.register_buffer("cache", torch.full((3,), 7.0))
        else:
            self.cache.add_(1.0)            # (the new buffer, changed in place: written back by its name)
        return x + self.cache


def test_a_none_trace_that_replaces_a_buffer_leaves_no_stale_program():
    model, twin, x, t = _Resets(), _Resets(), torch.zeros(3), torch.ones(3)
    fast = fxla.compile(model)
    for reset in (t, t, None, t, t, None, t, t, t):
        _same(fast(x, reset), twin(x, reset))
        _same(model.cache, twin.cache)


def test_lower_and_precompile_bind_defaults_as_a_call_does():
    fast = fxla.compile(lambda x, w=torch.full((3,), 3.0): x * w)
    x = torch.ones(3)
    assert "stablehlo.multiply" in fast.lower(x).stablehlo
    fast.precompile((x,))
    _same(fast(x), x * 3)


def test_export_marking_an_argument_given_as_none_is_a_clear_error(tmp_path):
    class Masked(torch.nn.Module):
        def forward(self, x, mask=None):
            return x * 2 if mask is None else x * mask

    with pytest.raises(fxla.FxlaError, match="marks mask, which the example inputs give as None"):
        fxla.export(Masked(), (torch.randn(2, 4), None), tmp_path / "a", dynamic_shapes={"mask": {1: fxla.Dim("n")}})
    fxla.export(Masked(), (torch.randn(2, 4), None), tmp_path / "b", dynamic_shapes={"x": {1: fxla.Dim("n")}})
    x = torch.randn(2, 7)
    torch.testing.assert_close(fxla.load(tmp_path / "b")(x), x * 2)
