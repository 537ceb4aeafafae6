"""Outputs and inputs that share memory, as in eager: an output that eager returns as a view of an input or of
another output is made again from that tensor after the call (fxla.frontend.passes.output_views), and a call whose
inputs share memory with an input the program changes runs a variant where the view is indexing of its base
(fxla.input_aliases) -- through fxla.compile and the torch.compile backend (a graph break between a view and a
write into it)."""
from __future__ import annotations

import operator

import pytest
import torch
import torch.nn as nn

import fxla
from fxla.frontend.view_recipes import apply_recipe, view_recipe
from fxla.write_back import InputMutationError

from test_aliasing_hardening import VIEWS


def _shares(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _fn_module(fn):
    class M(nn.Module):
        def forward(self, x):
            return fn(x)
    return M()


@pytest.mark.parametrize("name, fn", VIEWS, ids=[n for n, _ in VIEWS])
def test_view_of_input_shares_memory_as_eager(name, fn):
    torch.manual_seed(0)
    x = torch.randn(2, 4, 6)
    model = _fn_module(fn)
    try:
        compiled = fxla.compile(model)
        got = compiled(x.clone())
    except fxla.FxlaError:
        pytest.skip("fxla refuses this view with its own error")
    want = fn(x.clone())
    torch.testing.assert_close(got, want)
    xc, xe = x.clone(), x.clone()
    got, want = compiled(xc), fn(xe)
    assert _shares(got, xc) == _shares(want, xe)
    if _shares(want, xe) and not want.is_conj() and torch._debug_has_internal_overlap(want) != 1:
        got.add_(5)
        want.add_(5)
        torch.testing.assert_close(xc, xe)


class _Outputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, d):
        v = self.lin(x)
        x.mul_(2)
        return x, v, v[:, :2], x[1:], d["a"], v, x.view(x.size(0), -1).t(), v.view_as(v.t().contiguous().t())


def test_outputs_share_memory_with_inputs_and_each_other():
    torch.manual_seed(0)
    model = _Outputs()
    compiled = fxla.compile(model)
    x, a = torch.randn(3, 4), torch.randn(2)
    xe, xc, ae, ac = x.clone(), x.clone(), a.clone(), a.clone()
    want, got = model(xe, {"a": ae}), compiled(xc, {"a": ac})
    assert got[0] is xc and got[4] is ac and got[5] is got[1]
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    for k in (2, 3, 6, 7):
        want[k].add_(10 * k)
        got[k].add_(10 * k)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    torch.testing.assert_close(xc, xe)


class _Views(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        v = self.lin(x)
        return v, v[:, :2], x[1:].t(), x


def test_views_keep_gradients():
    torch.manual_seed(0)
    model = _Views()
    compiled = fxla.compile(model)
    x = torch.randn(3, 4)
    grads = []
    for fn in (model, compiled):
        model.zero_grad()
        xin = x.clone().requires_grad_()
        out = fn(xin)
        assert out[3] is xin
        (out[0].sum() + (out[1] ** 2).sum() + (out[2] * 3).sum()).backward()
        grads.append((xin.grad.clone(), model.lin.weight.grad.clone()))
    for g, w in zip(*grads):
        torch.testing.assert_close(g, w)


def test_reshape_of_non_contiguous_input_copies_as_eager():
    compiled = fxla.compile(_fn_module(lambda x: x.reshape(-1)))
    x = torch.randn(4, 3).t()
    out = compiled(x)
    assert not _shares(out, x)
    torch.testing.assert_close(out, x.reshape(-1))
    y = torch.randn(3, 4)
    assert _shares(compiled(y), y)


@pytest.mark.parametrize("make", [
    lambda b: b[1:, ::2], lambda b: b[2], lambda b: b[:, 1:3].transpose(0, 2), lambda b: b[None, 1:2, :, None],
    lambda b: b.permute(2, 0, 1)[1:, :, 2], lambda b: b, lambda b: b[..., 3],
], ids=["slices", "select", "transpose", "unsqueeze", "permute", "itself", "last"])
def test_view_recipe_makes_the_view_again(make):
    base = torch.randn(4, 5, 6)
    view = make(base)
    recipe = view_recipe(view, base)
    assert recipe is not None
    again = apply_recipe(recipe, base)
    assert again.shape == view.shape and again.storage_offset() == view.storage_offset()
    assert torch.equal(again, view)


def test_view_recipe_none_for_reshapes_and_partial_overlap():
    base = torch.randn(4, 6)
    assert view_recipe(base.view(2, 12), base) is None
    assert view_recipe(base[1:], base[:3]) is None
    assert view_recipe(base.view(-1)[3:9], base) is None
    assert view_recipe(torch.randn(4, 6), base) is None


def test_changed_input_sharing_memory_with_another_runs_as_eager():
    def f(a, b):
        a.add_(100)
        return b * 2, a + 1

    compiled = fxla.compile(f)
    for make in (lambda x: (x[:, :2], x), lambda x: (x[2], x), lambda x: (x[:, 1::2], x)):
        x = torch.randn(3, 4)
        xe, xc = x.clone(), x.clone()
        want, got = f(*make(xe)), compiled(*make(xc))
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)
        torch.testing.assert_close(xc, xe)
    x = torch.randn(4, 4)
    before = x.clone()
    with pytest.raises(InputMutationError, match="shares its memory"):
        compiled(x[:3], x[1:])                  # overlapping slices: no indexing makes one from the other
    with pytest.raises(InputMutationError, match="shares its memory"):
        compiled(x, x[1:])                      # the base changed, its view read after: functionalize refuses
    with pytest.raises(InputMutationError, match="shares its memory"):
        compiled(x[1:].t(), x)                  # a write through a transpose: functionalize refuses
    torch.testing.assert_close(x, before)


def _graph_break():
    torch._dynamo.graph_break()


def _break_then_write_view(x):
    v = x * 2
    w = v[:, :2]
    _graph_break()
    w.add_(100)
    return v


def _break_then_write_input_view(x):
    y = x[1:]
    _graph_break()
    y.mul_(3)
    return x


def _out_into_view(x):
    v = torch.zeros(3, 8)
    torch.add(x, 1, out=v[:, :4])
    return v


def _break_then_read_base(x):
    v = x.sin()
    w = v[1:, ::2]
    _graph_break()
    w.mul_(-1)
    return v.sum(0) + w.sum()


@pytest.mark.parametrize("fn", [_break_then_write_view, _break_then_write_input_view, _out_into_view,
                                _break_then_read_base])
def test_backend_views_across_graph_breaks(fn):
    torch._dynamo.reset()
    x = torch.randn(3, 4)
    xe, xc = x.clone(), x.clone()
    want = fn(xe)
    got = torch.compile(fn, backend="fxla")(xc)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(xc, xe)


def test_view_of_a_computed_value_is_refused_with_a_fix():
    from fxla.frontend import Graph, GraphModule, PassError, TensorMeta
    from fxla.frontend import meta as M
    from fxla.frontend.passes.output_views import output_views
    graph = Graph()
    x, y = graph.placeholder("x"), graph.placeholder("y")
    index = graph.call_method("argmax", (y,))
    view = graph.call_function(operator.getitem, (x, index))      # x[t] with a 0-d tensor t: a view in eager
    graph.output(view)
    for node, shape, dtype in ((x, (3, 4), torch.float32), (y, (3,), torch.float32), (index, (), torch.int64),
                               (view, (4,), torch.float32)):
        node.meta[M.TENSOR_META] = TensorMeta(shape, dtype)
    with pytest.raises(PassError) as info:
        output_views(GraphModule(nn.Module(), graph))
    text = str(info.value)
    assert "output 0 of forward is, in eager, a view of an input" in text and "'argmax'" in text
    assert "fix: return a copy (`.clone()`)" in text


def test_output_views_through_the_torch_compile_backend_keep_input_identity():
    def f(x):
        return x, x[0], x.view(-1)

    torch._dynamo.reset()
    x = torch.randn(2, 3)
    got = torch.compile(f, backend="fxla")(x)
    assert got[0] is x
    got[1].add_(1)
    got[2][-1] = 7.0
    torch.testing.assert_close(x[0], got[1])
    assert x[1, 2].item() == 7.0


def test_changed_input_sharing_memory_in_a_function_returning_none_runs_once():
    def bump(a, b):
        a.add_(1)

    compiled = fxla.compile(bump)
    x = torch.zeros(3, 4)
    assert compiled(x[:, :2], x) is None
    assert compiled(x[:, :2], x) is None
    torch.testing.assert_close(x[:, :2], torch.full((3, 2), 2.0))
    torch.testing.assert_close(x[:, 2:], torch.zeros(3, 2))


class _Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(3, 2, batch_first=True)

    def forward(self, x, cache, d):
        return x.max(0), x[0], cache, d, x.size(), self.gru(x[None]), torch.unbind(x), x[1]


def test_views_next_to_outputs_that_are_several_tensors():
    """Tuple results (max, GRU, unbind), structured arguments returned and sizes: the outputs made again are counted
    per tensor the program returns, not per graph node."""
    torch.manual_seed(0)
    model = _Mixed()
    x, cache, d = torch.randn(2, 3), [torch.zeros(2), torch.ones(2)], {"a": torch.zeros(2), "b": torch.ones(2)}
    compiled = fxla.compile(model)
    for _ in range(2):                          # (the second call: the signature's plan)
        want, got = model(x, cache, d), compiled(x, cache, d)
        flat_w, spec_w = torch.utils._pytree.tree_flatten(want)
        flat_g, spec_g = torch.utils._pytree.tree_flatten(got)
        assert len(flat_w) == len(flat_g)
        for g, w in zip(flat_g, flat_w):
            if isinstance(w, torch.Tensor):
                torch.testing.assert_close(g, w)
            else:
                assert g == w
        assert _shares(got[1], x) and _shares(got[7], x)


def test_jax_array_inputs_get_torch_outputs():
    import jax.numpy as jnp
    compiled = fxla.compile(lambda x: (x, x[1:], x.t(), x.view(-1)))
    x = jnp.arange(6.0).reshape(2, 3)
    got = compiled(x)
    assert all(isinstance(t, torch.Tensor) for t in got)
    torch.testing.assert_close(got[2], torch.arange(6.0).reshape(2, 3).t())


def test_view_sized_by_a_computed_tensor():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 6)

        def forward(self, x):
            h = self.lin(x)
            return h, x.view(h.size(0), 2, -1), x.expand_as(h[:, :4])

    model = M()
    x = torch.randn(3, 4)
    got, want = fxla.compile(model)(x), model(x)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    assert _shares(got[1], x) and _shares(got[2], x)


def test_duplicate_outputs_and_output_views_keep_the_fast_call():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            h = self.lin(x)
            return h, h, h[:, :2]

    compiled = fxla.compile(M())
    x = torch.randn(2, 4)
    with torch.no_grad():
        for _ in range(3):
            got = compiled(x)
            assert got[0] is got[1] and _shares(got[2], got[0])
    plans = list(compiled._plans.values())
    assert plans and plans[0].host is not None


def test_changed_input_sharing_memory_more_patterns():
    def f(a, b, scale):
        a.add_(scale)
        return b * 2, a + 1

    compiled = fxla.compile(f)
    for make in (lambda x: (x[:, :1], x), lambda x: (x[:, :], x), lambda x: (x, x)):
        for scale in (1, 2):
            x = torch.randn(3, 4)
            xe, xc = x.clone(), x.clone()
            a, b = make(xc)
            want, got = f(*make(xe), scale), compiled(a=a, b=b, scale=scale)
            for g, w in zip(got, want):
                torch.testing.assert_close(g, w)
            torch.testing.assert_close(xc, xe)


def test_backend_write_into_a_view_after_a_shape_change():
    def g(x):
        v = x * 2
        w = v[:, :2]
        _graph_break()
        w.add_(100)
        return v

    torch._dynamo.reset()
    compiled = torch.compile(g, backend="fxla")
    for n in (4, 6, 8):                         # (from the second size dynamo passes the sizes as inputs)
        x = torch.randn(n, 3)
        torch.testing.assert_close(compiled(x), g(x))


def test_unary_plus_is_the_input_itself_for_writes():
    def f(x):
        y = +x
        y.add_(1)
        return x * 1

    x = torch.randn(3, 2)
    xc, xe = x.clone(), x.clone()
    torch.testing.assert_close(fxla.compile(f)(xc), f(xe))
    torch.testing.assert_close(xc, xe)


def test_tuples_of_views_returned_whole():
    def f(x):
        return x.chunk(2), torch.unbind(x * 2), x.split([1, 3], 1)

    x = torch.randn(4, 4)
    xc, xe = x.clone(), x.clone()
    got, want = fxla.compile(f)(xc), f(xe)
    assert all(_shares(t, xc) for t in got[0] + got[2]) and not any(_shares(t, xc) for t in got[1])
    for g, w in ((got[0][1], want[0][1]), (got[2][1], want[2][1]), (got[1][2], want[1][2])):
        g.add_(10)
        w.add_(10)
    torch.testing.assert_close(xc, xe)
    for g, w in zip(torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want)):
        torch.testing.assert_close(g, w)


def test_atleast_list_form_and_detached_aliases():
    got = fxla.compile(lambda x: torch.atleast_2d([x[0], x * 2])[0])
    x = torch.randn(2, 3)
    out = got(x)
    assert _shares(out, x)
    torch.testing.assert_close(out, torch.atleast_2d(x[0]))

    def f(a, b):
        b.add_(1)
        return a * 2

    compiled = fxla.compile(f)
    w = torch.randn(3, 4, requires_grad=True)
    with pytest.raises(InputMutationError, match="shares its memory"):
        compiled(w, w.detach()[1:])             # (which alias carries history is not in the strides)
