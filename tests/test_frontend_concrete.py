"""The tracer's shape-specialising mode: ``Tracer(concrete_shapes=True)`` /
``symbolic_trace(model, example_inputs=...)``.  Every Proxy carries a meta value, so shape, dtype
and device queries are Python values; tensor values stay symbolic."""
import collections
import copy
import operator

import pytest
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from torch.testing import assert_close

from fxla.frontend import (Graph, GraphModule, TensorMeta, TraceError, Tracer, propagate_shapes, symbolic_trace,
                           wrap)


class ShapeBranches(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        b, n = x.shape[:2]
        if x.size(-1) == 4 and len(x) == 2 and x.dim() == 3 and x.ndim == 3 and x.numel() == 24:
            x = self.lin(x)
        else:
            x = -x
        pos = torch.arange(n, device=x.device, dtype=x.dtype)  # real tensor: becomes a constant
        return x.reshape(b * n, -1) + pos.repeat_interleave(b)[:, None], torch.numel(x), x.is_floating_point()


def test_shape_queries_are_python_values():
    m, x = ShapeBranches(), torch.randn(2, 3, 4)
    gm = symbolic_trace(m, example_inputs=(x,))
    gm.graph.lint()
    out = gm(x)
    same = m(x)
    assert_close(out[0], same[0]) and out[1:] == (24, True)
    kinds = [(n.op, n.target) for n in gm.graph.nodes]
    assert ("call_module", "lin") in kinds and ("call_function", operator.neg) not in kinds
    assert not any(n.target in ("size", "dim", "numel") or n.target is getattr for n in gm.graph.nodes)
    assert "reshape(6, -1)" in gm.code and "return (add, 24, True)" in gm.code
    with pytest.raises(TraceError, match="no concrete value"):
        symbolic_trace(m)  # the default mode cannot take those branches


def test_specialization_is_recorded():
    m, x = ShapeBranches(), torch.randn(2, 3, 4)
    gm = symbolic_trace(m, example_inputs={"x": x})
    spec = gm.specialization
    assert spec == {"inputs": {"x": TensorMeta((2, 3, 4), torch.float32)}, "fixed": {}, "device": torch.device("cpu")}
    assert gm.graph.meta["specialization"] is spec
    assert gm.graph.copy().meta["specialization"] == spec and copy.deepcopy(gm).specialization == spec
    assert symbolic_trace(m.lin).specialization is None and Graph().meta == {}


def test_meta_values_become_tensor_meta():
    m, x = ShapeBranches(), torch.randn(2, 3, 4)
    gm = symbolic_trace(m, example_inputs=(x,))
    by_name = {n.name: n for n in gm.graph.nodes}
    assert by_name["x"].meta["tensor_meta"] == TensorMeta((2, 3, 4), torch.float32)
    assert by_name["lin"].meta["tensor_meta"] == TensorMeta((2, 3, 4), torch.float32)
    traced = {n.name: n.meta.get("tensor_meta") for n in gm.graph.nodes}
    propagate_shapes(gm, x)
    assert traced == {n.name: n.meta.get("tensor_meta") for n in gm.graph.nodes}
    assert m.lin.weight.device.type == "cpu"  # leaf modules ran on meta copies of their state


class KwargsModel(nn.Module):
    def forward(self, x, mask=None, scale=2.0, *, flag=False, **extra):
        y = x * scale
        if mask is not None:
            y = y.masked_fill(mask, 0.0)
        return {"y": y, "flag": flag, "extra": len(extra)}


def test_unnamed_parameters_are_fixed_at_their_defaults():
    x = torch.randn(3)
    gm = symbolic_trace(KwargsModel(), example_inputs={"x": x})
    assert [n.target for n in gm.graph.find_nodes("placeholder")] == ["x"]
    assert gm.specialization["fixed"] == {"mask": None, "scale": 2.0, "flag": False, "extra": {}}
    assert_close(gm(x)["y"], x * 2)
    mask = torch.tensor([True, False, True])
    gm2 = symbolic_trace(KwargsModel(), example_inputs={"x": x, "mask": mask}, concrete_args={"scale": 3.0})
    assert [n.target for n in gm2.graph.find_nodes("placeholder")] == ["x", "mask"]
    assert_close(gm2(x, mask)["y"], (x * 3).masked_fill(mask, 0.0))
    with pytest.raises(TraceError, match="example input for parameter 'x'"):
        symbolic_trace(KwargsModel(), example_inputs={"mask": mask})
    with pytest.raises(TraceError, match="unknown"):
        symbolic_trace(KwargsModel(), example_inputs={"y": x})
    with pytest.raises(TraceError, match="example inputs for"):
        symbolic_trace(nn.ReLU(), example_inputs=(x, x))


def test_tracer_api():
    x = torch.randn(2, 4)
    with pytest.raises(TraceError, match="needs example inputs"):
        Tracer(concrete_shapes=True).trace(nn.Linear(4, 4))
    with pytest.raises(TraceError, match="not in concrete_shapes mode"):
        Tracer().trace(nn.Linear(4, 4), example_inputs=(x,))
    tracer = Tracer(concrete_shapes=True)
    graph = tracer.trace(ShapeBranches(), example_inputs=(torch.randn(2, 3, 4),))
    assert graph.meta["specialization"]["inputs"]["x"].shape == (2, 3, 4)
    p = symbolic_trace(lambda x: x.relu(), example_inputs=(x,))  # plain functions too
    assert_close(p(x), x.relu())


def test_iteration_and_unpacking():
    class Rows(nn.Module):
        def forward(self, x, pair):
            total = sum(row * i for i, row in enumerate(x))  # iterates dim 0
            a, b = pair
            first = next(iter(x))  # peeking leaves no dead node behind
            return total + a * b + len(pair)

    x, pair = torch.randn(3, 2), (torch.randn(2), torch.randn(2))
    gm = symbolic_trace(Rows(), example_inputs=(x, pair))
    assert_close(gm(x, pair), Rows()(x, pair))
    getitems = [n for n in gm.graph.nodes if n.target is operator.getitem]
    assert len(getitems) == 5 and all(n.users for n in gm.graph.nodes if n.op != "output")


def test_duck_typing_sees_a_tensor():
    class Duck(nn.Module):
        def forward(self, x):
            if hasattr(x, "jax"):  # transformers' torchax probe
                return x.jax()
            return x + 1 if hasattr(x, "relu") else x

    x = torch.randn(2)
    gm = symbolic_trace(Duck(), example_inputs=(x,))
    assert_close(gm(x), x + 1)
    with pytest.raises(AttributeError):
        symbolic_trace(lambda x: x.no_such_method(), example_inputs=(x,))


def test_wrapped_functions_and_leaves_stay_in_the_graph():
    @wrap
    def nrows(t):
        return t.shape[0]  # returns an int, but a leaf is a leaf

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(3)

        def forward(self, x):
            h = self.norm(x)
            return h * nrows(h) + h.shape[1]

    x = torch.randn(2, 3)
    gm = symbolic_trace(M(), example_inputs=(x,))
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert calls[0].target is nrows.__fxla_wrapped__ and calls[0].meta["value"] == 2
    assert_close(gm(x), M()(x))


def test_ops_without_meta_kernels_keep_tracing():
    def masked(x):
        y = x[x > 0]  # data-dependent shape: no meta value
        return y.sum() + x.shape[0]

    x = torch.randn(5)
    gm = symbolic_trace(masked, example_inputs=(x,))
    assert_close(gm(x), masked(x))
    getitem = next(n for n in gm.graph.nodes if n.target is operator.getitem)
    assert "tensor_meta" not in getitem.meta and "value" not in getitem.meta

    def uses_its_shape(x):
        y = x[x > 0]
        return y * 2 if y.shape[0] > 1 else y

    with pytest.raises(TraceError, match="shape of .* is unknown too"):
        symbolic_trace(uses_its_shape, example_inputs=(x,))


def test_dict_subclass_outputs_become_dicts():
    class Output(collections.OrderedDict):
        pass

    def f(x):
        return Output(last=x * 2, first=x)

    x = torch.randn(2)
    for gm in (symbolic_trace(f), symbolic_trace(f, example_inputs=(x,))):
        out = gm(x)
        assert type(out) is dict and list(out) == ["last", "first"]


def test_default_mode_is_unchanged():
    class MethodsAndAttrs(nn.Module):
        def forward(self, x):
            return x.view(x.size(0), -1) * x.shape[1] + x.dim()

    x = torch.randn(2, 3, 4)
    ours, theirs = symbolic_trace(MethodsAndAttrs()), torch.fx.symbolic_trace(MethodsAndAttrs())
    assert [(n.op, n.target) for n in ours.graph.nodes] == [(n.op, n.target) for n in theirs.graph.nodes]
    assert ours.specialization is None
    concrete = symbolic_trace(MethodsAndAttrs(), example_inputs=(x,))
    assert len(concrete.graph.nodes) < len(ours.graph.nodes)
    assert_close(concrete(x), ours(x))


def test_device_is_the_inputs_device():
    def f(x):
        assert isinstance(x.shape[0], int) and isinstance(x.size(), torch.Size) and x.dtype is torch.float32
        assert x.device == torch.device("cpu") and x.is_cpu and not x.is_cuda and x.get_device() == -1
        return torch.zeros(x.shape, device=x.device) + x

    x = torch.randn(2)
    gm = symbolic_trace(f, example_inputs=(x,))
    assert gm.specialization["device"] == torch.device("cpu")
    assert_close(gm(x), x)
    assert "zeros" not in gm.code  # a factory call on concrete shapes ran eagerly: a constant


def test_save_and_load_keep_the_specialization(tmp_path):
    from fxla.frontend import load, save
    x = torch.randn(3)
    gm = symbolic_trace(KwargsModel(), example_inputs={"x": x})
    save(gm, tmp_path / "m")
    back = load(tmp_path / "m")
    assert back.specialization == gm.specialization
    assert_close(back(x)["y"], gm(x)["y"])
    save(symbolic_trace(KwargsModel(), concrete_args={"extra": {}}), tmp_path / "plain")
    assert load(tmp_path / "plain").specialization is None
