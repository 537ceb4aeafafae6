"""Shape-polymorphic artifacts (issue #21, item 4): ``fxla.export(..., dynamic_shapes=...)`` writes the
polymorphic fxla program and its constraints; ``fxla.load`` runs every size the Dims allow, refined and compiled
once per size, and checks the constraints from plain JSON (api/export_symbolic.py)."""
from __future__ import annotations

import json
import os
import warnings

import pytest
import torch

import fxla
from fxla.runtime import ArtifactError
from fxla.runtime.artifact import metadata_digest
from test_symbolic_dims import _model, _split_heads


@pytest.fixture
def artifact(tmp_path):
    model = _model()
    path = str(tmp_path / "attention")
    meta = fxla.export(model, (torch.randn(2, 8, 16),), path, dynamic_shapes={"x": {1: fxla.Dim("seq", max=64)}})
    return model, path, meta


def test_one_artifact_runs_every_size(artifact):
    model, path, meta = artifact
    assert sorted(os.listdir(path)) == ["metadata.json", "polymorphic.mlirbc", "polymorphic.stablehlo.mlirbc",
                                        "program.mlirbc", "weights.bin"]
    assert meta["symbolic"]["dims"] == [{"name": "seq", "min": 2, "max": 64, "multiple_of": 1, "uses": [[0, 1]]}]
    assert meta["symbolic"]["outputs"] == [{"shape": [2, None, 16]}]
    loaded = fxla.load(path)
    for n in (8, 5, 13, 64, 5):
        x = torch.randn(2, n, 16)
        torch.testing.assert_close(loaded(x), model(x), rtol=1e-5, atol=1e-5)
    assert len(loaded._symbolic._executables) == 3        # (8 is the exported program itself)
    assert loaded._symbolic.stablehlo is not None         # (the sizes refined the polymorphic StableHLO)


def test_the_polymorphic_stablehlo_runs_without_fxla(artifact):
    """Any StableHLO consumer can run the artifact's other sizes: deserialize the portable artifact, set main's
    argument types, refine with StableHLO's shape refinement (jaxlib's, as jax.export does) and compile with PJRT --
    no fxla lowering involved (fxla.base.jax_private only names the two jaxlib functions)."""
    import jax
    import numpy as np
    from jax.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo
    from fxla.base import jax_private
    model, path, meta = artifact
    with open(os.path.join(path, "polymorphic.stablehlo.mlirbc"), "rb") as f:
        portable = f.read()
    state = model.state_dict()
    params = [state[p["name"]].numpy() for p in meta["params"]]      # (main's trailing arguments, in order)
    device = jax.devices("cpu")[0]
    for n in (3, 21):
        x = torch.randn(2, n, 16)
        args = [x.numpy()] + params
        with jax_mlir.make_ir_context() as ctx, ir.Location.unknown():
            module = stablehlo.deserialize_portable_artifact(ctx, portable)
            main = next(op for op in module.body.operations if op.operation.name == "func.func")
            block = main.regions[0].blocks[0]
            for a, value in zip(block.arguments, args):
                a.set_type(ir.RankedTensorType.get(value.shape, ir.RankedTensorType(a.type).element_type))
            results = [v.type for v in list(block.operations)[-1].operands]
            main.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([a.type for a in block.arguments],
                                                                                    results))
            refined = jax_private.refine_polymorphic_shapes(module.operation.get_asm(binary=True))
            text = ir.Module.parse(refined).operation.get_asm()
        assert "?" not in text and "dynamic" not in text and f"tensor<2x{n}x16xf32>" in text
        executable = jax_private.compile_and_load(device.client, text, [device], _options())
        out = executable.execute_sharded([jax.device_put(a, device) for a in args])
        got = np.asarray(out.disassemble_into_single_device_arrays()[0][0])
        np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-5, atol=1e-5)


def _options():
    from fxla.base.jax_private import _xla_client
    return _xla_client().CompileOptions()


def test_sizes_outside_the_dims_are_refused(artifact):
    _, path, _ = artifact
    loaded = fxla.load(path)
    with pytest.raises(fxla.ShapeConstraintError, match=r"Dim 'seq' = 65 is outside \[2, 64\]"):
        loaded(torch.randn(2, 65, 16))
    with pytest.raises(fxla.FxlaError, match="only the dims marked with fxla.Dim at export may change"):
        loaded(torch.randn(3, 8, 16))


def test_constraints_travel_with_the_artifact(tmp_path):
    path = str(tmp_path / "split")
    meta = fxla.export(_split_heads, (torch.randn(2, 8, 3),), path, dynamic_shapes={"x": {1: fxla.Dim("seq")}})
    assert meta["symbolic"]["guards"] and all(set(g) == {"expr", "node"} for g in meta["symbolic"]["guards"])
    loaded = fxla.load(path)
    x = torch.randn(2, 12, 3)
    torch.testing.assert_close(loaded(x), _split_heads(x))
    with pytest.raises(fxla.ShapeConstraintError, match=r"\(seq = 10\) break a constraint .* \(made by %view\): "
                                                         r".*seq // 4"):
        loaded(torch.randn(2, 10, 3))


class _Narrows(torch.nn.Module):
    def forward(self, x):
        return torch.narrow(x, 1, 0, 8) * 2


def test_export_warns_of_the_constraints_its_program_adds_to_the_dims(tmp_path):
    from fxla.export_symbolic import ExportConstraintWarning
    seq = fxla.Dim("seq", max=64)
    with pytest.warns(ExportConstraintWarning, match=r"Dims allow \(seq in \[2, 64\]\) .*: 0 <= \(-8 \+ seq\) "
                                                     r"\(made by %narrow at .*test_export_symbolic.py:\d+"):
        fxla.export(_Narrows(), (torch.randn(2, 16),), str(tmp_path / "narrow"), dynamic_shapes={"x": {1: seq}})
    with pytest.raises(fxla.ShapeConstraintError, match=r"\(seq = 5\) break a constraint"):
        fxla.load(str(tmp_path / "narrow"))(torch.randn(2, 5))
    with warnings.catch_warnings():             # (no constraint beyond the Dims: nothing to say)
        warnings.simplefilter("error", ExportConstraintWarning)
        fxla.export(lambda x: x * 2, (torch.randn(2, 16),), str(tmp_path / "plain"), dynamic_shapes={"x": {1: seq}})


def _rewrite_symbolic(path, change):
    with open(os.path.join(path, "metadata.json")) as f:
        meta = json.load(f)
    change(meta["symbolic"])
    # an author who also rewrites metadata.json's digest (the digest catches accidental edits): the fields are
    # still checked one by one, and the constraints evaluated by the bounded evaluator
    meta["metadata_sha256"] = metadata_digest(meta)
    with open(os.path.join(path, "metadata.json"), "w") as f:
        json.dump(meta, f)


@pytest.mark.parametrize("expr", [
    {"op": "__import__", "args": [1]},                        # not an operation: refused, never looked up
    {"op": "mul", "args": [1 << 40, 1 << 40, 1 << 40]},       # out of range
    {"op": "floordiv", "args": [1, 0]},
    {"op": "eq", "args": ["os.system('x')", 1]},              # strings are not expressions
    {"dim": "nope"},
])
def test_a_tampered_constraint_is_an_artifact_error(tmp_path, expr):
    path = str(tmp_path / "split")
    fxla.export(_split_heads, (torch.randn(2, 8, 3),), path, dynamic_shapes={"x": {1: fxla.Dim("seq")}})
    _rewrite_symbolic(path, lambda s: s["guards"].append({"expr": expr, "node": "view"}))
    loaded = fxla.load(path)
    with pytest.raises(ArtifactError, match="a constraint in metadata.json cannot be evaluated"):
        loaded(torch.randn(2, 12, 3))


def test_deeply_nested_constraints_are_refused(tmp_path):
    path = str(tmp_path / "split")
    fxla.export(_split_heads, (torch.randn(2, 8, 3),), path, dynamic_shapes={"x": {1: fxla.Dim("seq")}})
    deep = 1
    for _ in range(200):
        deep = {"op": "add", "args": [deep, 1]}
    _rewrite_symbolic(path, lambda s: s["guards"].append({"expr": deep, "node": "view"}))
    with pytest.raises(ArtifactError, match="too large"):
        fxla.load(path)(torch.randn(2, 12, 3))


def test_malformed_symbolic_metadata_is_refused(tmp_path):
    path = str(tmp_path / "split")
    fxla.export(_split_heads, (torch.randn(2, 8, 3),), path, dynamic_shapes={"x": {1: fxla.Dim("seq")}})
    _rewrite_symbolic(path, lambda s: s.update(dims=[{"name": "seq"}]))
    with pytest.raises(ArtifactError, match="'symbolic' is malformed"):
        fxla.load(path)


def test_a_program_returning_a_size_is_not_exported_polymorphically(tmp_path):
    def f(x):
        return x * 2, x.size(1)
    with pytest.raises(ArtifactError, match="it returns a size"):
        fxla.export(f, (torch.randn(2, 5),), str(tmp_path / "f"), dynamic_shapes={"x": {1: fxla.Dim("n")}})


def test_the_compiled_module_returns_each_calls_size():
    def f(x):
        return x * 2, x.size(1)
    fast = fxla.compile(f, dynamic={"x": {1: fxla.Dim("n")}})
    assert fast(torch.randn(2, 5))[1] == 5
    assert fast(torch.randn(2, 9))[1] == 9 and type(fast(torch.randn(2, 9))[1]) is int


def test_a_loaded_artifact_checks_its_index_inputs_and_positions(tmp_path):
    from test_index_bounds import Positions, Tokens
    from fxla.lowering.index_bounds import IndexOutOfRangeError
    tokens = Tokens().eval().requires_grad_(False)
    path = str(tmp_path / "tokens")
    meta = fxla.export(tokens, (torch.tensor([[1, 2, 3]]),), path)
    assert [c["input"] for c in meta["input_checks"]] == [0]
    loaded = fxla.load(path)
    torch.testing.assert_close(loaded(torch.tensor([[9, 0, 3]])), tokens(torch.tensor([[9, 0, 3]])))
    with pytest.raises(IndexOutOfRangeError, match="holds 10"):
        loaded(torch.tensor([[1, 10, 3]]))
    positions = Positions().eval().requires_grad_(False)
    path = str(tmp_path / "positions")
    fxla.export(positions, (torch.randn(2, 4, 4),), path, dynamic_shapes={"x": {1: fxla.Dim("seq")}})
    loaded = fxla.load(path)
    x = torch.randn(2, 10, 4)
    torch.testing.assert_close(loaded(x), positions(x))
    with pytest.raises(IndexOutOfRangeError, match="index 10 of a dim of size 10"):
        loaded(torch.randn(2, 11, 4))


def test_dynamic_true_exports_with_a_batch_of_one(tmp_path):
    model = _model()
    path = str(tmp_path / "all")
    meta = fxla.export(model, (torch.randn(1, 8, 16),), path, dynamic_shapes=True)
    marked = [k for d in meta["symbolic"]["dims"] for _, k in d["uses"]]
    assert 1 in marked and 0 not in marked                                   # (the size-1 batch dim is static)
    loaded = fxla.load(path)
    for n in (5, 12):
        x = torch.randn(1, n, 16)
        torch.testing.assert_close(loaded(x), model(x), rtol=1e-5, atol=1e-5)


class _Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=True)
        self.out = torch.nn.Linear(12, 3)

    def forward(self, x):
        return self.out(self.lstm(x)[0])


def test_a_recurrent_model_exports_one_artifact_for_every_length(tmp_path):
    """An LSTM's layers are loops over a symbolic length: one artifact with a symbolic batch and length runs every
    size from its polymorphic StableHLO (each size refined and compiled, never lowered again)."""
    torch.manual_seed(0)
    model = _Tagger().eval()
    path = str(tmp_path / "tagger")
    fxla.export(model, (torch.randn(2, 5, 4),), path, dynamic_shapes={"x": {0: fxla.Dim("b"), 1: fxla.Dim("t")}})
    loaded = fxla.load(path)
    for b, t in ((2, 5), (3, 17), (2, 40)):
        x = torch.randn(b, t, 4)
        with torch.no_grad():
            torch.testing.assert_close(loaded(x), model(x), rtol=1e-5, atol=1e-5)
    assert loaded._symbolic.stablehlo is not None
