"""Lowering stays linear and cheap per node: structural checks of the caches that make it so (no wall-clock
asserts).  Each test counts the expensive calls on graphs of two sizes: the count must not grow with the number of
repeated ops (or must grow by at most one per op where the work is inherently per op)."""
import builtins
import collections
import operator

import pytest
import torch
import torch.nn as nn

import fxla
from fxla.dialects.fxla import opdef as opdef_module
from fxla.dialects.fxla import verifier
from fxla.dialects.fxla.opdef import sig_of, type_cache
from fxla.dialects.mlir import fxla_context, ir
from fxla.frontend import ShapeProp, propagate_shapes, symbolic_trace
from fxla.frontend.node import map_aggregate, map_arg
from fxla.lowering import lower_to_fxla, lower_to_stablehlo, verify_stablehlo


def _chain(n):
    def fn(x):
        for i in range(n // 2):
            x = x * 1.0001 + 0.5 if i % 2 else x + 0.25
        return x
    return fn


def _lowered(n):
    return lower_to_fxla(fxla.symbolic_trace(_chain(n)), (torch.randn(16),))


class _Unmemoised(ShapeProp):
    """A subclass runs every node (ShapeProp memoises only for itself)."""


def _metas(gm):
    return [(n.name, n.meta.get("tensor_meta"), n.meta.get("value", "-")) for n in gm.graph.nodes]


# -- shape propagation -------------------------------------------------------------------------------------------

def test_shape_prop_runs_each_distinct_op_once():
    for n in (40, 400):
        gm = fxla.symbolic_trace(_chain(n))
        prop = ShapeProp(gm)
        prop.run(torch.randn(16))
        ops = sum(node.op == "call_function" for node in gm.graph.nodes)
        # three distinct calls (x + 0.25, x * 1.0001, + 0.5) on one signature; every other node is a hit
        assert prop.memo_hits == ops - 3


def test_memoised_shape_prop_matches_running_every_node():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.norms = nn.ModuleList(nn.LayerNorm(6) for _ in range(3))
            self.lin = nn.Linear(6, 6)

        def forward(self, x):
            for norm in self.norms:
                x = norm(x).transpose(0, 1)[1:].transpose(0, 1) + x[:, 1:].sum()
                x = torch.cat([x, x[:, :1]], dim=1)           # back to 6 columns
                x = self.lin(x).relu() * 2
            parts = torch.split(x, 2, dim=1)
            top = torch.max(x, dim=1)
            return parts[0].t().contiguous(), top.values, top.indices, x.size(1), x.view(-1)[3:].shape

    m = M().eval()
    x = torch.randn(4, 6)
    gm = symbolic_trace(m)
    memo = ShapeProp(gm)
    out = memo.run(x)
    got = _metas(gm)
    assert memo.memo_hits > 5
    _Unmemoised(gm).run(x)
    assert got == _metas(gm)
    # strides and storage offsets of views come back exactly (they decide later view/contiguity questions)
    ref = m(x)
    assert out[0].stride() == ref[0].stride() and out[1].shape == ref[1].shape and out[3] == 6


def test_rebuilt_views_keep_strides_and_offsets():
    def fn(x):
        a = x.t()[1:]
        b = x.t()[1:]          # equal call on equal arguments: a memo hit
        return a, b

    gm = fxla.symbolic_trace(fn)
    prop = ShapeProp(gm)
    a, b = prop.run(torch.randn(3, 5))
    assert prop.memo_hits >= 2
    assert (a.shape, a.stride(), a.storage_offset()) == (b.shape, b.stride(), b.storage_offset())
    assert not b.is_contiguous() and b.storage_offset() == 1 and b.device.type == "meta"


def test_in_place_and_out_and_hooked_calls_are_not_memoised():
    def fn(x, y):
        x.unsqueeze_(0)
        x.unsqueeze_(0)                         # changes x's shape: must run every time
        torch.add(y, 1, out=y)
        torch.add(y, 1, out=y)
        return x.shape, y

    gm = fxla.symbolic_trace(fn)
    prop = ShapeProp(gm)
    prop.run(torch.randn(3), torch.randn(2))
    assert prop.memo_hits == 0
    unsqueezed = [n.meta["tensor_meta"].shape for n in gm.graph.nodes if n.target == "unsqueeze_"]
    assert unsqueezed == [(1, 3), (1, 1, 3)]

    class Hooked(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.ReLU(), nn.ReLU()
            self.b.register_forward_hook(lambda mod, args, out: out[..., :1])

        def forward(self, x):
            return self.a(x), self.b(x)

    gm = symbolic_trace(Hooked())                # (the hooked layer is traced through, its hook included)
    propagate_shapes(gm, torch.randn(2, 3))
    output = next(n for n in gm.graph.nodes if n.op == "output")
    assert [m.shape for m in output.meta["tensor_meta"]] == [(2, 3), (2, 1)]


def test_concrete_shapes_tracing_memoises_meta_values():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(8)

        def forward(self, x):
            return x + self.ln(x).softmax(-1) * x.shape[-1]

    blocks = nn.Sequential(*[Block() for _ in range(6)])
    tracer = fxla.frontend.Tracer(concrete_shapes=True)
    graph = tracer.trace(blocks, example_inputs=(torch.randn(2, 8),))
    assert tracer._meta_memo.hits >= 5 * 4              # blocks 2..6 reuse block 1's four ops
    metas = [n.meta.get("tensor_meta") for n in graph.nodes]
    assert all(m is None or m.shape == (2, 8) for m in metas)


# -- the fxla dialect's Python module is found once --------------------------------------------------------------

def test_wrapping_fxla_ops_imports_nothing():
    counts = []
    for n in (20, 200):
        program = _lowered(n)
        imports = collections.Counter()
        orig = builtins.__import__

        def counting(name, *args, **kwargs):
            imports[name] += 1
            return orig(name, *args, **kwargs)

        builtins.__import__ = counting
        try:
            lower_to_stablehlo(program.module)
        finally:
            builtins.__import__ = orig
        counts.append(sum(v for k, v in imports.items() if k.endswith(".fxla") or k.endswith("fxla")))
    assert counts == [0, 0]


# -- verifier and type inference: once per distinct op form ------------------------------------------------------

def test_verifier_checks_each_distinct_signature_once(monkeypatch):
    calls = []
    real = verifier._problem
    monkeypatch.setattr(verifier, "_problem", lambda op: calls.append(op.name) or real(op))
    for n in (20, 200):
        calls.clear()
        program = _lowered(n)
        calls.clear()
        assert verifier.verify_fxla(program.module.operation) == []
        assert len(calls) <= 6                         # 3 constants + add, mul, add: not one per op


def test_verifier_still_reports_every_bad_op():
    with fxla_context(), ir.Location.unknown():
        module = ir.Module.parse('''
          func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
            %0 = "fxla.add"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<3xf32> loc("m.py":1:1)
            %1 = "fxla.add"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<3xf32> loc("m.py":2:1)
            %2 = "fxla.add"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("m.py":3:1)
            return %2 : tensor<2xf32>
          }''')
        found = verifier.verify_fxla(module.operation)
    assert [str(d).split(":")[1] for d in found] == ["1", "2"]
    assert all("result #0 has type tensor<3xf32>" in str(d) for d in found)


def test_inference_and_sig_of_are_per_distinct_form(monkeypatch):
    infers, sigs = [], []
    real_sig = opdef_module._sig_of
    monkeypatch.setattr(opdef_module, "_sig_of", lambda t: sigs.append(1) or real_sig(t))
    from fxla.dialects.fxla import ops
    real_infer = {d: d.infer for d in (ops.add, ops.mul, ops.constant)}
    for d, fn in real_infer.items():
        object.__setattr__(d, "infer", lambda s, a, fn=fn: infers.append(1) or fn(s, a))
    try:
        counts = []
        for n in (20, 200):
            infers.clear(), sigs.clear()
            _lowered(n)
            counts.append((len(infers), len(sigs)))
    finally:
        for d, fn in real_infer.items():
            object.__setattr__(d, "infer", fn)
    assert counts[0] == counts[1]


def test_sig_cache_is_scoped():
    with fxla_context():
        t = ir.Type.parse("tensor<2x3xf32>")
        assert opdef_module._CACHES.get() is None
        with type_cache():
            assert sig_of(t) == sig_of(ir.Type.parse("tensor<2x3xf32>"))
            with type_cache():
                assert opdef_module._CACHES.get().sigs
        assert opdef_module._CACHES.get() is None        # nothing outlives the block
        assert sig_of(ir.Type.parse("tensor<?xf32>")) is None
        assert sig_of(ir.Type.parse("tensor<4xcomplex<f32>>")).elem == "complex<f32>"


# -- the strict re-parse ---------------------------------------------------------------------------------------

def test_bytecode_reparse_equals_text_reparse():
    program = _lowered(30)
    strict = lower_to_stablehlo(program.module)
    by_text = verify_stablehlo(program.module.operation.get_asm(enable_debug_info=True))
    assert strict.operation.get_asm(enable_debug_info=True) == by_text.operation.get_asm(enable_debug_info=True)
    assert not strict.context.allow_unregistered_dialects


# -- argument mapping fast paths ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [
    (1, [2, {"a": 3, "b": (4, slice(1, 5, None))}], torch.Size([2, 3])),
    collections.namedtuple("P", "x y")(1, [2]),
    collections.OrderedDict(a=(1, 2)),
    torch.return_types.max((1, 2)),
    {"k": [(), [], {}]},
])
def test_map_aggregate_keeps_container_types(value):
    def types(v):
        if isinstance(v, dict):
            return (type(v), tuple((k, types(e)) for k, e in v.items()))
        if isinstance(v, (tuple, list)):
            return (type(v), tuple(types(e) for e in v))
        return type(v)

    mapped = map_aggregate(value, lambda v: v)
    assert mapped == value and types(mapped) == types(value)
    seen = []
    assert map_arg(value, seen.append) == value and seen == []
    calls = []
    map_aggregate(value, calls.append)
    assert calls == [v for v in _leaves(value)]


def _leaves(v):
    if isinstance(v, dict):
        for e in v.values():
            yield from _leaves(e)
    elif isinstance(v, (tuple, list)):
        for e in v:
            yield from _leaves(e)
    elif isinstance(v, slice):
        yield from (v.start, v.stop, v.step)
    else:
        yield v


def test_map_arg_visits_nodes_in_order():
    gm = fxla.symbolic_trace(lambda x, y: operator.add(x, y))
    x, y = [n for n in gm.graph.nodes if n.op == "placeholder"]
    seen = []
    out = map_arg((x, [y, {"z": x}], slice(y, None, None)), lambda n: seen.append(n.name) or n.name)
    assert out == ("x", ["y", {"z": "x"}], slice("y", None, None)) and seen == ["x", "y", "x", "y"]
