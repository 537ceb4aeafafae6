"""In-place tensor mutation (fxla.frontend.passes.functionalize): compiled results match eager, later uses read the
new value, dtypes are kept, and what needs view tracking or a write-back is refused with a clear error."""
from __future__ import annotations

import operator
import re

import numpy as np
import pytest
import torch
import torch.nn as nn
from torch.utils._pytree import tree_leaves as pytree_leaves

import fxla
from fxla.frontend import PassError, TraceError, propagate_shapes, symbolic_trace
from fxla.frontend.passes import functionalize
from fxla.frontend.passes.functionalize import setitem


def _check(fn, *inputs, atol=1e-6):
    want = fn(*(x.clone() for x in inputs))
    got = fxla.compile(fn)(*inputs)
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    for w, g in zip(want, got):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, atol=atol, rtol=1e-5)


def _methods(x):
    y = x.clone()
    y.add_(1).mul_(2)              # chained: add_ returns y itself
    a = y * 1                      # reads y between two mutations
    y.clamp_(-1, 1)
    z = y                          # a Python alias is the same tensor
    z.sub_(x)
    y.masked_fill_(x > 0, 3.0)
    return a, y, z


def _operators(x, w):
    y = x @ w
    y += 1
    s = y
    y *= x[:, :1]
    y /= 2
    return s, y


def _fill_zero_copy(x, w):
    y = x.new_empty(3, 4)
    y.copy_(x)
    a = y.sum()
    y.zero_()
    b = y + 1
    y.fill_(w[0, 0])
    return a, b, y


def _setitem_then_read(x):
    y = x.exp()
    before = y[0].clone()
    y[0] = 0
    y[:, 1] = y[:, 2]               # the value reads the already-mutated y
    after = y.sum(0)
    return before, after, y


def test_methods_chain_alias_and_later_uses():
    _check(_methods, torch.randn(3, 4))


def test_python_inplace_operators():
    _check(_operators, torch.randn(3, 4), torch.randn(4, 4))


def test_fill_zero_copy():
    _check(_fill_zero_copy, torch.randn(3, 4), torch.randn(4, 4))


def test_setitem_later_uses_read_the_new_value():
    _check(_setitem_then_read, torch.randn(3, 4))


def _out_arguments(x, w):
    y = torch.empty(3, 4)
    r = torch.add(x, 1, out=y)              # y (and r, which is y) hold the result; later reads see it
    z = torch.nn.functional.normalize(x @ w, dim=0, out=x)
    return r * 2, y.sum(), z, x


def _views_of_views_written_twice(h):
    h = h.clone()
    v = h[:, 1:5]
    w = v[0]
    w.mul_(2)                   # through the inner view ...
    v[:, 0] = 3.0               # ... then the outer one: both reach h (the second was dropped)
    v[1].add_(1)
    return h, v                 # (w read after v's changes: refused, PassError -- it would not see them)


def test_views_of_views_written_twice_reach_their_base():
    _check(_views_of_views_written_twice, torch.arange(18.).reshape(3, 6))


def test_out_arguments_write_their_tensor():
    x = torch.randn(3, 4)
    _check(_out_arguments, x.clone(), torch.randn(4, 4))


def test_an_out_tuple_is_refused():
    def max_out(x):
        v, i = torch.empty(4), torch.empty(4, dtype=torch.long)
        torch.max(x, 0, out=(v, i))
        return v
    with pytest.raises(PassError, match=r"(?s)writes its results into out=\(\.\.\.\).*fix: assign the results"):
        fxla.compile(max_out)(torch.randn(3, 4))


def test_an_out_argument_of_another_shape_is_refused():
    def resized(x):
        y = torch.zeros(2)
        torch.add(x, 1, out=y)
        return y
    with pytest.raises(PassError, match=r"(?s)writes a result of shape \[3\] into out= of shape \[2\].*fix: assign"):
        fxla.compile(resized)(torch.randn(3))


def test_inplace_keeps_self_dtype():
    def fn(x):
        y = x.half()
        y.add_(torch.ones(3, dtype=torch.float32) * 0.5)     # f16 += f32: stays f16
        i = x.long()
        i.add_(3)
        return y, i
    _check(fn, torch.randn(2, 3) * 4, atol=1e-3)


def test_inplace_activation_module_and_functional():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(inplace=True), nn.Linear(4, 4), nn.Hardtanh(inplace=True))
    x = torch.randn(5, 4)
    torch.testing.assert_close(fxla.compile(model)(x), model(x))

    def fn(x):
        y = x * 3
        torch.nn.functional.relu(y, inplace=True)
        return y + 1
    _check(fn, torch.randn(4, 4))


def test_graph_without_mutation_is_returned_unchanged():
    gm = symbolic_trace(lambda x: x.relu() + 1)
    propagate_shapes(gm, torch.randn(2))
    assert functionalize(gm) is gm


def test_rewrite_replaces_setitem_and_does_not_touch_the_input_graph():
    gm = symbolic_trace(_setitem_then_read)
    propagate_shapes(gm, torch.randn(3, 4))
    before = gm.code
    out = functionalize(gm)
    targets = [n.target for n in out.graph.nodes]
    assert operator.setitem not in targets and targets.count(setitem) == 2
    assert gm.code == before and operator.setitem in [n.target for n in gm.graph.nodes]
    x = torch.randn(3, 4)
    for w, g in zip(_setitem_then_read(x.clone()), out(x)):
        torch.testing.assert_close(g, w)


def test_setitem_function_is_out_of_place():
    x = torch.zeros(2, 3)
    y = setitem(x, (slice(None), 1), 5.0)
    assert x.sum() == 0 and y[:, 1].tolist() == [5.0, 5.0]


def _error(fn, *inputs, module=None):
    with pytest.raises(PassError) as info:
        fxla.compile(module or fn)(*inputs)
    return str(info.value)


def test_error_mutating_a_view():
    def fn(x):
        y = x * 2
        v = y.view(-1)
        v.add_(1)
        return y
    msg = _error(fn, torch.randn(2, 3))
    assert "in-place .add_() on %view, which is (or may be) a view of .view()'s input" in msg
    assert "test_functionalize.py:" in msg and "v.add_(1)" in msg
    assert "fix: call .clone() on the view before changing it" in msg


def test_error_mutating_after_a_view_that_is_used_later():
    def fn(x):
        y = x * 2
        row = y[0]
        y.mul_(3)
        return row + 1
    msg = _error(fn, torch.randn(2, 3))
    assert re.search(r"in-place \.mul_\(\) on %mul, after %getitem took a view of it that is used later "
                     r"\(by %add\)", msg), msg
    assert "y.mul_(3)" in msg and "fix: clone the view (%getitem.clone())" in msg


def _bump(x, y):
    x += y                          # the caller's x changes, as in eager
    x[0] = 7
    return x * 2, y.relu_()         # so does y (an in-place activation)


def test_mutated_inputs_are_written_back():
    fast = fxla.compile(_bump)
    for _ in range(3):              # later calls: the checked plan, which writes back too (no shortcut skips it)
        x, y = torch.randn(3, 4), torch.randn(4)
        xe, ye = x.clone(), y.clone()
        want = _bump(xe, ye)
        got = fast(x, y)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)
        torch.testing.assert_close(x, xe)
        torch.testing.assert_close(y, ye)
    assert fast.lower(x, y).program.mutated_inputs == [0, 1]
    (plan,) = fast._plans.values()
    assert plan.host is None and plan.direct is None


def test_mutated_input_passed_twice_is_an_error():
    """Two inputs over overlapping memory, neither a view of the other: refused before anything is written.  (One
    tensor passed twice, or a tensor and a slice of it, runs as eager: fxla.input_aliases.)"""
    x = torch.randn(5)
    before = x.clone()
    with pytest.raises(fxla.InputMutationError) as info:
        fxla.compile(_bump)(x[:4], x[1:])
    assert "changes its tensor input 0 in place (e.g. `x += 1`), but input 1 shares its memory" in str(info.value)
    torch.testing.assert_close(x, before)          # nothing was written back
    same = torch.randn(4)
    want = same.clone()
    torch.testing.assert_close(fxla.compile(_bump)(same, same[:]), _bump(want, want[:]))
    torch.testing.assert_close(same, want)


def test_mutated_jax_input_is_an_error():
    import jax.numpy as jnp
    fast = fxla.compile(_bump)
    with pytest.raises(fxla.InputMutationError) as info:
        fast(jnp.ones((3, 4)), torch.ones(4))
    msg = str(info.value)
    assert "_bump changes its tensor input 0 in place (e.g. `x += 1`), but it was given a jax.Array" in msg
    assert "fix: pass a torch tensor" in msg
    with pytest.raises(fxla.InputMutationError, match=r"a JAX function cannot change its arguments"):
        fast.as_jax_function(torch.ones(3, 4), torch.ones(4))


def test_export_and_load_write_mutated_inputs_back(tmp_path):
    x, y = torch.randn(3, 4), torch.randn(4)
    meta = fxla.export(_bump, (x, y), tmp_path / "bump")
    assert meta["mutated_inputs"] == [0, 1]
    loaded = fxla.load(tmp_path / "bump")
    xe, ye = x.clone(), y.clone()
    want = _bump(xe, ye)
    got = loaded(x, y)
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(x, xe)
    torch.testing.assert_close(y, ye)


def test_error_shape_changing_inplace():
    def fn(x):
        y = x + 1
        y.unsqueeze_(0)
        return y
    msg = _error(fn, torch.randn(3))
    assert "in-place .unsqueeze_() on %add changes the tensor's shape or strides in place" in msg
    assert "fix: use the out-of-place form (y = y.unsqueeze(...))" in msg


@pytest.mark.parametrize("body,wording", [
    (lambda y: y.__setitem__((torch.tensor([0]), 1), 1.0), "mixing tensor indices with other indices"),
    (lambda y: y.__setitem__((torch.tensor([0, 1]), torch.tensor([0, 1, 1])), 1.0),
     "index tensors of shapes [[2], [3]] do not broadcast"),
    (lambda y: y.__setitem__(y[:, 0] > 0, torch.ones(3, 3)),
     "x[mask] = value with a value of shape [3, 3] is not supported"),
])
def test_setitem_lowering_errors(body, wording):
    def fn(x):
        y = x.clone()
        body(y)
        return y
    with pytest.raises(fxla.FxlaError, match=re.escape(wording)):
        fxla.compile(fn)(torch.randn(4, 2))


def _setitem(x):
    y = torch.zeros(3, 4)
    y[0] = x[0]
    return y + 1, y[:, :2].sum()


def _arange_setitem(x):
    y = torch.arange(12).reshape(3, 4)          # a view of the factory's tensor: that tensor is traced
    y[1] = x
    return y * 2, y[2]


def _cache_update(k, pos):
    cache = torch.zeros(1, 2, 6, 4)             # a Hugging Face StaticCache made on its first call
    cache.index_copy_(2, pos, k)
    return cache, cache[:, :, :3].sum(-1)


def _caught(x):
    y = torch.full((3, 4), 2.0)
    try:                                        # the first trace's error is caught here: traced again all the same
        y.mul_(x)
    except Exception:
        y = y * 0
    return y


@pytest.mark.parametrize("fn,inputs", [
    (_setitem, lambda: (torch.randn(3, 4),)),
    (lambda x: torch.empty(3, 4).copy_(x).sum(), lambda: (torch.randn(3, 4),)),
    (_cache_update, lambda: (torch.randn(1, 2, 2, 4), torch.tensor([1, 4]))),
    (_arange_setitem, lambda: (torch.arange(4) * 7,)),
    (lambda x: torch.zeros(4, 3).t().copy_(x).sum(0), lambda: (torch.randn(3, 4),)),
    (_caught, lambda: (torch.randn(3, 4),)),
], ids=["setitem", "copy_", "index_copy_", "arange_setitem", "view_copy_", "caught"])
@pytest.mark.parametrize("concrete_shapes", [False, True])
def test_tensor_made_from_constants_then_changed_with_a_traced_value(fn, inputs, concrete_shapes):
    """``torch.zeros(3, 4)`` runs at trace time (a constant); changed in place with a traced value afterwards, it is
    traced from its creation (fxla.frontend.factories), and its later uses read the new value, as in eager."""
    args = inputs()
    want = fn(*(a.clone() for a in args))
    got = fxla.compile(fn, concrete_shapes=concrete_shapes)(*args)
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    for w, g in zip(want, got):
        torch.testing.assert_close(g, w)


def test_traced_code_making_its_tensors_in_another_order_on_the_second_trace_is_refused():
    """The tensor to trace from its creation is found by tracing twice: code that makes other tensors the second
    time (here: Python state changed by the first trace) is refused, never traced from the wrong creation."""
    runs = []

    def fn(x):
        runs.append(1)
        y = torch.ones(3) if len(runs) % 2 else torch.arange(3.0)
        y[0] = x[0]
        return y

    with pytest.raises(TraceError, match=r"factory call number 0 of the trace is torch.arange, but on the first "
                                         r"trace it was torch.ones"):
        fxla.compile(fn)(torch.randn(3))


@pytest.mark.parametrize("alias", [lambda x: x.to("cpu"), lambda x: x.to(torch.device("cpu")),
                                   lambda x: x.to("cpu").detach(), lambda x: x.view(2, 3)[:]],
                         ids=["to_cpu", "to_device", "to_detach", "view_slice"])
def test_writing_into_an_input_through_itself_writes_the_input(alias):
    """``x.to("cpu")`` of a CPU tensor is ``x`` itself (a Hugging Face StaticCache's ``cumulative_length``): eager
    changes ``x`` (and ``x`` read later shows it); fxla writes the new value back the same."""
    def fn(x):
        y = alias(x)
        y.add_(8)
        return y * 2, x + 1

    eager_x, fxla_x = torch.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    want, got = fn(eager_x), fxla.compile(fn)(fxla_x)
    for w, g in zip(want, got):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    torch.testing.assert_close(fxla_x, eager_x, rtol=0, atol=0)


@pytest.mark.parametrize("alias", [lambda x: x.contiguous(), lambda x: x.reshape(2, 3),
                                   lambda x: x.to("cpu", copy=True)],
                         ids=["contiguous", "reshape", "to_copy"])
def test_writing_into_an_input_through_what_may_be_a_copy_is_refused(alias):
    """``contiguous``/``reshape`` copy for some layouts (the caller's strides decide), ``copy=True`` always does:
    refused, as before."""
    def fn(x):
        alias(x).add_(8)
        return x + 1

    with pytest.raises(PassError, match="view of"):
        fxla.compile(fn)(torch.arange(6.0).reshape(2, 3))


def _through_slice(b, x):
    b = b.clone()                   # torchvision's Swin V2: qkv_bias[length:2 * length].zero_()
    n = b.numel() // 3
    b[n:2 * n].zero_()
    return b * x


def _through_nested(r, x):
    r = r.clone()
    a = r[1:]
    a[0].mul_(x[0])                 # a view of a view: both r and a change
    return r + 1, a * 2


def _through_select_narrow(r, x):
    r = r.clone()
    r.select(1, 2).add_(x[:, 0])
    r.narrow(0, 1, 2).fill_(5)
    return r, r.sum()


def _through_input_part(x, y):
    x[1:3].add_(y[:2])              # the caller's x changes in those elements, as in eager
    x.select(0, 0).mul_(2)
    return x.sum()


@pytest.mark.parametrize("fn, shapes", [(_through_slice, [(9,), (9,)]), (_through_nested, [(4, 3), (3,)]),
                                        (_through_select_narrow, [(4, 3), (4, 3)]),
                                        (_through_input_part, [(5,), (5,)])],
                         ids=["slice", "nested", "select_narrow", "input_part"])
def test_writing_into_a_part_writes_through_into_its_base(fn, shapes):
    """A write into a view made by basic indexing (``b[i:j]``, ``b[0][1:]``, ``select``, ``narrow``) changes
    those elements of the base in eager: fxla computes the base's new value (``setitem``, level by level) for the
    base's and the views' later uses, and writes a mutated input back to the caller's tensor."""
    torch.manual_seed(0)
    inputs = [torch.randn(s) for s in shapes]
    eager_in, fxla_in = [t.clone() for t in inputs], [t.clone() for t in inputs]
    want, got = fn(*eager_in), fxla.compile(fn)(*fxla_in)
    for w, g in zip(pytree_leaves(want), pytree_leaves(got)):
        torch.testing.assert_close(g, w, rtol=1e-6, atol=1e-6)
    for w, g in zip(eager_in, fxla_in):
        torch.testing.assert_close(g, w, rtol=0, atol=0)


def test_error_writing_into_a_part_whose_base_has_another_view_used_later():
    """Written through into the base, but another view of the base taken before (not recomputed) is read
    afterwards: refused."""
    def fn(x):
        r = x * 1
        v = r.t()
        r[0].zero_()
        return r, v
    msg = _error(fn, torch.randn(3, 3))
    assert "and %t, which shares its memory, is used later" in msg


def test_error_mutating_a_concrete_tensor_with_a_traced_value():
    """A concrete tensor no factory made (``torch.zeros(3, 4) + 1`` ran at trace time): still refused."""
    def fn(x):
        y = torch.zeros(3, 4) + 1   # concrete: its later uses would be evaluated at trace time
        y[0] = x[0]
        return y

    def gn(x):
        y = torch.ones(3, 4) * 2
        y.copy_(x)
        return y.sum()
    for f, what in ((fn, "t[...] = <traced value>"), (gn, "in-place .copy_(<traced value>)")):
        with pytest.raises(fxla.TraceError) as info:
            fxla.compile(f)(torch.randn(3, 4))
        msg = str(info.value)
        assert f"{what} on a tensor that is not traced" in msg and "test_functionalize.py:" in msg
        assert "fix: create the tensor from a traced value (x.new_zeros(3, 4)" in msg


class _Stateful(nn.Module):
    """A counter, a cache row written each call, a rebinding assignment and a plain attribute."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.register_buffer("steps", torch.zeros(()))
        self.register_buffer("cache", torch.zeros(4, 3))
        self.register_buffer("decay", torch.ones(3))

    def forward(self, x):
        self.steps += 1
        self.cache[1] = x[0]
        self.decay = self.decay * 0.5          # a new tensor assigned to a buffer: recorded as copy_
        self.h = x * 2                         # a plain attribute: visible in this call, set after each call
        return self.lin(x) * self.steps + self.cache.sum() + self.h * self.decay


def _twin():
    torch.manual_seed(0)
    model, eager = _Stateful(), _Stateful()
    eager.load_state_dict(model.state_dict())
    return model, eager


def test_module_state_is_updated_like_eager():
    model, eager = _twin()
    fast = fxla.compile(model)
    assert isinstance(model.steps, torch.Tensor) and not hasattr(model, "h")   # tracing left the module intact
    for x in (torch.randn(2, 3), torch.randn(2, 3), torch.randn(5, 3), torch.randn(2, 3)):   # two signatures
        torch.testing.assert_close(fast(x), eager(x))
        for name in ("steps", "cache", "decay", "h"):
            torch.testing.assert_close(getattr(model, name), getattr(eager, name))
    assert model.steps.item() == 4
    assert fast.lower(torch.randn(2, 3)).program.mutated_params == ["steps", "cache", "decay"]
    with pytest.raises(fxla.InputMutationError, match=r"its parameters/buffers \['steps', 'cache', 'decay'\]"):
        fast.as_jax_function(torch.randn(2, 3))


def test_mutated_parameter_used_by_a_dot_keeps_its_layout():
    class Decay(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            y = self.lin(x)                    # the weight as a dot's [out, in] rhs ...
            with torch.no_grad():
                self.lin.weight.mul_(0.9)      # ... and updated after it: stored in torch's layout
            return y
    torch.manual_seed(0)
    model, eager = Decay(), Decay()
    eager.load_state_dict(model.state_dict())
    fast = fxla.compile(model)
    for _ in range(3):
        x = torch.randn(2, 4)
        torch.testing.assert_close(fast(x), eager(x))
    torch.testing.assert_close(model.lin.weight, eager.lin.weight)
    assert all(perm == () for name, perm in fast._params if name == "lin.weight")


def test_exported_state_carries_over_between_calls(tmp_path):
    model, eager = _twin()
    x = torch.randn(2, 3)
    meta = fxla.export(model, (x,), tmp_path / "stateful")
    assert meta["mutated_params"] == ["steps", "cache", "decay"]
    loaded = fxla.load(tmp_path / "stateful")
    for _ in range(3):
        x = torch.randn(2, 3)
        torch.testing.assert_close(loaded(x), eager(x))
        torch.testing.assert_close(loaded.attributes["h"], eager.h)     # no module: kept on the loaded program


def test_assigning_a_buffer_another_shape_or_dtype_is_an_error():
    class Retype(nn.Module):
        def __init__(self, grow):
            super().__init__()
            self.grow = grow
            self.register_buffer("seen", torch.zeros(1, 3))

        def forward(self, x):
            if self.grow:
                self.seen = torch.cat([self.seen, x])
            else:
                self.seen = self.seen.double() + 1
            return x + 1
    with pytest.raises(PassError) as info:
        fxla.compile(Retype(False))(torch.randn(2, 3))
    msg = str(info.value)
    assert "assigning a torch.float64 tensor of shape [1, 3] to 'seen', a torch.float32 tensor of shape [1, 3]" in msg
    assert "self.seen = self.seen.double() + 1" in msg and "fix: register the buffer with its final shape" in msg
    with pytest.raises(fxla.FxlaError) as info:            # caught by shape propagation (copy_ cannot broadcast)
        fxla.compile(Retype(True))(torch.randn(2, 3))
    assert "self.seen = torch.cat([self.seen, x])" in str(info.value)
    assert "output with shape [1, 3] doesn't match the broadcast shape [3, 3]" in str(info.value)


def test_rejected_call_leaves_the_module_state_unchanged():
    import jax.numpy as jnp

    class Both(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("steps", torch.zeros(()))

        def forward(self, x):
            self.steps += 1
            x += 1
            return x * 2
    model = Both()
    with pytest.raises(fxla.InputMutationError):
        fxla.compile(model)(jnp.ones(3))
    assert model.steps.item() == 0          # the input check runs before the state is written


class _Records(nn.Module):
    """Stores results on itself, as research code does (attention maps, the last hidden state)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.last = None

    def forward(self, x):
        y = self.lin(x)
        self.last = y                        # a tensor
        self.pair = (y.sum(), "sum")         # a container with a constant
        self.lin.rows = x.shape[0]           # a size, on a submodule
        self.last = y + 1                    # assigned again: the last assignment wins
        z = y * 2
        self.z = z
        z.add_(1)                            # mutated after the assignment: the attribute is that same tensor
        return z


@pytest.mark.parametrize("options", [{}, {"output": "jax"}, {"concrete_shapes": True}],
                         ids=["torch", "jax", "concrete_shapes"])
def test_attributes_forward_assigns_are_set_after_each_call(options):
    torch.manual_seed(0)
    model, eager = _Records(), _Records()
    eager.load_state_dict(model.state_dict())
    fast = fxla.compile(model, **options)
    assert model.last is None and not hasattr(model, "pair") and not hasattr(model, "z")   # tracing left it intact
    for x in (torch.randn(2, 4), torch.randn(3, 4), torch.randn(2, 4)):
        with torch.no_grad():
            want = eager(x)
        got = fast(x)
        torch.testing.assert_close(got if isinstance(got, torch.Tensor) else torch.from_numpy(np.array(got)), want)
        for name in ("last", "z"):
            value = getattr(model, name)
            assert isinstance(value, torch.Tensor)                  # module state is torch, whatever output=
            torch.testing.assert_close(value, getattr(eager, name))
        assert type(model.pair) is tuple and model.pair[1] == "sum"
        torch.testing.assert_close(model.pair[0], eager.pair[0])
        assert model.lin.rows == x.shape[0]


def test_attribute_writes_are_shown_and_refused_where_nothing_can_be_set():
    fast = fxla.compile(_Records())
    program = fast.lower(torch.randn(2, 4)).program
    assert [w.name for w in program.written_attributes] == ["last", "pair", "lin.rows", "z"]
    assert program.written_attributes[2].leaves == [2]          # a static leaf: set without a program result
    with pytest.raises(fxla.InputMutationError, match=r"its attributes \['last', 'pair', 'lin.rows', 'z'\]"):
        fast.as_jax_function(torch.randn(2, 4))


def test_a_plain_tensor_attribute_carried_across_calls_is_an_error():
    class Carry(nn.Module):
        def __init__(self):
            super().__init__()
            self.h = torch.zeros(4)              # not a buffer

        def forward(self, x):
            self.h = self.h + x
            return self.h
    with pytest.raises(TraceError) as info:
        fxla.compile(Carry())
    text = str(info.value)
    assert "assigns a traced value to `h`, a plain tensor attribute of Carry" in text
    assert "self.h = self.h + x" in text and "fix: make it a buffer (self.register_buffer('h'" in text


def test_a_loaded_artifact_writes_back_inputs_and_keeps_attributes(tmp_path):
    class Both(nn.Module):
        def forward(self, x):
            self.last = x * 3
            x += 1                                # a mutated input as well as a written attribute
            return x * 2

    fxla.export(Both(), (torch.zeros(3),), tmp_path / "both")
    loaded = fxla.load(tmp_path / "both")
    x = torch.ones(3)
    assert loaded(x).tolist() == [4, 4, 4] and x.tolist() == [2, 2, 2]
    assert loaded.attributes["last"].tolist() == [3, 3, 3]


class _EvalInplaceDropout(torch.nn.Module):
    """EfficientNet's classifier: Dropout(inplace=True) on a flattened view that is used again afterwards."""

    def __init__(self):
        super().__init__()
        self.flatten = torch.nn.Flatten()
        self.drop = torch.nn.Dropout(0.2, inplace=True)
        self.fc = torch.nn.Linear(12, 3)

    def forward(self, x):
        y = self.flatten(x)
        return self.fc(self.drop(y)) + y.sum()


def test_inplace_dropout_in_eval_mode_writes_nothing():
    """In eval mode (or with p=0) an in-place dropout returns its input unchanged, as eager's does: not a
    mutation, so a view of an input that is used afterwards is fine (EfficientNet-B0 was refused)."""
    import fxla
    torch.manual_seed(0)
    model = _EvalInplaceDropout().eval()
    x = torch.randn(2, 3, 4)
    before = x.clone()
    with torch.no_grad():
        torch.testing.assert_close(fxla.compile(model)(x), model(x))
    assert torch.equal(x, before)


def test_eval_dropout_inplace_given_positionally_writes_nothing():
    """``F.dropout(x, p, False, True)`` (dynamo passes every argument positionally: torchvision's classifier
    heads) returns its input in eval mode: no write, so a view of a value used later is fine."""
    import torch.nn.functional as F

    def head(x, w):
        flat = torch.flatten(x, 1)
        return F.linear(F.dropout(flat, 0.2, False, True), w), x.sum()
    x, w = torch.randn(2, 3, 2), torch.randn(4, 6)
    got, want = fxla.compile(head)(x, w), head(x, w)
    for g, e in zip(got, want):
        torch.testing.assert_close(g, e)


def test_an_op_result_tuple_assigned_to_an_attribute_is_refused():
    """``self.stats = h.max(-1)`` (a torch.return_types tuple): fxla left MLIR objects in the attribute."""
    class Stats(nn.Module):
        def forward(self, x):
            self.stats = x.max(-1)
            return x * 2
    with pytest.raises(fxla.LoweringError, match=r"(?s)a tuple of tensors.*attribute stats.*fix: assign its parts"):
        fxla.compile(Stats())(torch.randn(3, 4))
