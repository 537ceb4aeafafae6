"""``dump_dir=`` (fxla.dumps): every stage of every compiled graph and signature in a folder, for fxla.compile
and torch.compile(backend="fxla"); fxla never overwrites, deletes or follows a symlink out of the folder."""
from __future__ import annotations

import os

import pytest
import torch
import torch.nn as nn

import fxla
import fxla.backend
from fxla.dumps import DumpError, GraphDump
from fxla.lowering import UnsupportedOpError

STAGE_FILES = {"signature.txt", "graph.txt", "code.py", "fxla.mlir", "stablehlo.mlir", "hlo.txt", "phases.txt"}


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU())


def files(folder):
    return {p.name for p in folder.iterdir()}


def test_compile_dumps_every_stage_per_signature(tmp_path):
    fast = fxla.compile(mlp(), dump_dir=tmp_path / "dumps")
    with torch.no_grad():
        fast(torch.randn(2, 4))
        fast(torch.randn(2, 4))                   # the same signature: nothing new
        fast(torch.randn(3, 4))
    graph = tmp_path / "dumps" / "Sequential"
    assert files(graph) == {"signature-1", "signature-2"}
    first, second = graph / "signature-1", graph / "signature-2"
    assert STAGE_FILES <= files(first) and STAGE_FILES <= files(second)
    assert (first / "signature.txt").read_text() == ("Sequential: input signature #1\ninputs: input=float32[2, 4]\n"
                                                     "why compiled: the first call\n")
    assert "why compiled: changed from signature #1: input float32[2, 4] -> float32[3, 4]" in \
        (second / "signature.txt").read_text()
    assert "placeholder" in (first / "graph.txt").read_text() and "def forward" in (first / "code.py").read_text()
    assert "fxla.linear" in (first / "fxla.mlir").read_text()
    assert "stablehlo.dot_general" in (second / "stablehlo.mlir").read_text()
    assert "tensor<3x8xf32>" in (second / "stablehlo.mlir").read_text()
    assert (first / "hlo.txt").read_text().startswith("HloModule ")
    assert (first / "phases.txt").read_text().startswith("total ")


def test_torch_compile_option_dumps_each_dynamo_graph(tmp_path):
    torch._dynamo.reset()
    model = mlp()
    compiled = torch.compile(model, backend="fxla", options={"dump_dir": str(tmp_path)})
    with torch.no_grad():
        compiled(torch.randn(2, 4))
    (graph,) = [p for p in tmp_path.iterdir()]
    assert graph.name.startswith("dynamo-graph-") and files(graph) == {"dynamo.txt", "signature-1"}
    listing = (graph / "dynamo.txt").read_text()
    assert "placeholders" in listing and "class GraphModule(torch.nn.Module)" in listing and '"f32[2, 4]"' in listing
    assert STAGE_FILES <= files(graph / "signature-1")
    assert "(dynamo graph #" in (graph / "signature-1" / "signature.txt").read_text()


def test_existing_names_are_skipped_and_left_alone(tmp_path):
    dumps, outside = tmp_path / "dumps", tmp_path / "outside"
    (dumps / "Sequential").mkdir(parents=True)
    (dumps / "Sequential" / "keep.txt").write_text("mine")
    (dumps / "Sequential-2").write_text("a file of mine")
    outside.mkdir()
    os.symlink(outside, dumps / "Sequential-3")          # a symlink out of the folder: never followed
    for _ in range(2):                                   # a second module (a second run) gets a new folder too
        with torch.no_grad():
            fxla.compile(mlp(), dump_dir=dumps)(torch.randn(2, 4))
    assert (dumps / "Sequential" / "keep.txt").read_text() == "mine" and files(dumps / "Sequential") == {"keep.txt"}
    assert (dumps / "Sequential-2").read_text() == "a file of mine"
    assert list(outside.iterdir()) == []
    assert STAGE_FILES <= files(dumps / "Sequential-4" / "signature-1")
    assert STAGE_FILES <= files(dumps / "Sequential-5" / "signature-1")


def test_a_file_name_taken_gets_a_new_name(tmp_path):
    dump = GraphDump(str(tmp_path))
    (tmp_path / "hlo.txt").write_text("not fxla's")
    os.symlink(tmp_path / "elsewhere.txt", tmp_path / "hlo.2.txt")      # a dangling symlink: not written through
    assert dump.write("hlo.txt", "HloModule m") == str(tmp_path / "hlo.3.txt")
    assert (tmp_path / "hlo.txt").read_text() == "not fxla's" and not (tmp_path / "elsewhere.txt").exists()
    assert (tmp_path / "hlo.3.txt").read_text() == "HloModule m\n"


def test_a_failed_compile_leaves_the_stages_before_the_failure(tmp_path):
    @fxla.wrap
    def opaque(x):
        return x + 1

    fast = fxla.compile(lambda x: opaque(x) * 2, dump_dir=tmp_path)
    with pytest.raises(UnsupportedOpError):
        fast(torch.ones(3))
    (signature,) = (tmp_path / "_lambda_").iterdir()           # (the name made safe for a folder)
    assert files(signature) == {"signature.txt", "graph.txt", "code.py"}


def test_unusable_dump_dir_is_refused(tmp_path):
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(DumpError, match="it is not a directory") as info:
        fxla.compile(mlp(), dump_dir=tmp_path / "a-file")
    assert "fix:" in str(info.value)
    with pytest.raises(DumpError, match="it must be a folder path"):
        fxla.compile(mlp(), dump_dir=3)
    with pytest.raises(fxla.OptionError, match="pass only device, max_signatures, dump_dir"):
        fxla.backend.fxla_backend(torch.fx.symbolic_trace(mlp()), [torch.randn(2, 4)], options={"dump": "x"})


GRADIENT_FILES = {"gradient.txt", "fxla.mlir", "stablehlo.mlir", "hlo.txt", "phases.txt"}


def training_step(fast, model, x):
    fast(x).pow(2).sum().backward()
    for p in model.parameters():
        p.grad = None


def test_a_training_step_dumps_its_forward_with_residuals_and_backward(tmp_path):
    from fxla.tools.opt import main as fxla_opt
    model = mlp()
    fast = fxla.compile(model, dump_dir=tmp_path)
    training_step(fast, model, torch.randn(3, 4))
    training_step(fast, model, torch.randn(3, 4))               # nothing new
    signature = tmp_path / "Sequential" / "signature-1"
    assert STAGE_FILES | {"forward-with-residuals", "backward"} <= files(signature)
    forward, backward = signature / "forward-with-residuals", signature / "backward"
    assert GRADIENT_FILES <= files(forward) and GRADIENT_FILES <= files(backward)
    assert (forward / "gradient.txt").read_text() == (
        "Sequential: forward with residuals for input signature #1\ngradients of: 0.bias, 0.weight\n"
        "why compiled: the first call of input signature #1 that records gradients of these tensors\n")
    assert "why compiled: the first backward through its forward" in (backward / "gradient.txt").read_text()
    # the forward returns the output, then the residual the backward reads (ReLU's output); the backward takes
    # it, the cotangent and the input, and returns the two gradients
    assert "-> (tensor<3x8xf32>, tensor<3x8xf32>)" in (forward / "fxla.mlir").read_text()
    assert "return %1, %1 : " in (forward / "fxla.mlir").read_text()
    assert "-> (tensor<8xf32>, tensor<8x4xf32>)" in (backward / "fxla.mlir").read_text()
    assert "fxla.where" in (backward / "fxla.mlir").read_text()
    assert fxla_opt([str(backward / "fxla.mlir"), "--verify-fxla", "-o", str(tmp_path / "out.mlir")]) == 0
    assert "stablehlo.dot_general" in (backward / "stablehlo.mlir").read_text()
    assert (forward / "hlo.txt").read_text().startswith("HloModule ")
    assert (backward / "hlo.txt").read_text() != (signature / "hlo.txt").read_text()
    assert [line.split()[0] for line in (forward / "phases.txt").read_text().splitlines()] == \
        ["total", "prepare", "fxla", "vjp", "stablehlo", "layout", "compile"]
    assert [line.split()[0] for line in (backward / "phases.txt").read_text().splitlines()] == \
        ["total", "stablehlo", "layout", "compile"]
    training_step(fast, model, torch.randn(3, 4, requires_grad=True))   # another set requiring grad: new folders
    assert {"forward-with-residuals-2", "backward-2"} <= files(signature)
    assert "gradients of: input, 0.bias, 0.weight" in \
        (signature / "backward-2" / "gradient.txt").read_text()
    assert (forward / "gradient.txt").read_text().startswith("Sequential: forward with residuals")   # as it was


def test_torch_compile_training_step_dumps_its_gradient_programs(tmp_path):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    compiled = torch.compile(model, backend="fxla", options={"dump_dir": str(tmp_path)})
    training_step(compiled, model, torch.randn(3, 4))
    (graph,) = [p for p in tmp_path.iterdir()]
    signature = graph / "signature-1"
    assert GRADIENT_FILES <= files(signature / "forward-with-residuals")
    assert GRADIENT_FILES <= files(signature / "backward")
    assert (signature / "backward" / "gradient.txt").read_text().startswith(
        f"DynamoGraph (dynamo graph #{graph.name.split('-')[-1]}): backward for input signature #1\n")


def test_jax_grad_through_as_jax_function_dumps_the_halves_it_lowers(tmp_path):
    jax = pytest.importorskip("jax")
    torch.manual_seed(0)
    f = fxla.compile(nn.Linear(4, 2), dump_dir=tmp_path).as_jax_function(torch.randn(3, 4))
    jax.grad(lambda a: f(a).sum())(jax.numpy.ones((3, 4)))
    signature = tmp_path / "Linear" / "signature-1"
    assert {"jax-forward-with-residuals", "jax-backward"} <= files(signature)
    for half in ("jax-forward-with-residuals", "jax-backward"):
        assert {"gradient.txt", "fxla.mlir", "stablehlo.mlir", "phases.txt"} == files(signature / half)
        assert "gradients of: input\n" in (signature / half / "gradient.txt").read_text()


def test_gradient_folders_are_made_without_following_a_symlink(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    dump = GraphDump(str(tmp_path / "graph"))
    (tmp_path / "graph").mkdir()
    folder = dump.signature(1)
    assert dump.subfolder(folder, "backward") == os.path.join("signature-1", "backward")
    assert dump.subfolder(folder, "backward") == os.path.join("signature-1", "backward-2")
    # the signature's folder replaced by a symlink to a folder outside that has a "backward" too: no component of
    # the path is followed
    os.rename(tmp_path / "graph" / "signature-1", tmp_path / "moved")
    (outside / "backward").mkdir()
    os.symlink(outside, tmp_path / "graph" / "signature-1")
    with pytest.raises(DumpError, match="fxla made it; it was replaced or removed since"):
        dump.write("hlo.txt", "HloModule m", os.path.join("signature-1", "backward"))
    with pytest.raises(DumpError, match="replaced or removed since"):
        dump.subfolder(os.path.join("signature-1", "backward"), "inner")
    with pytest.raises(DumpError, match="replaced or removed since"):
        dump.subfolder("signature-1", "forward-with-residuals")
    assert [p.name for p in outside.iterdir()] == ["backward"] and list((outside / "backward").iterdir()) == []
