"""Tests of the frontend's Transformer, graph deep copy, pickle-free save/load and graph passes.

Every test runs the rewritten/reloaded module and compares it with eager PyTorch; the
subgraph rewriter is also compared with torch.fx.subgraph_rewriter on the same model.
"""
import copy
import json
import math
import operator
import os
import shutil

import pytest
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from torch.testing import assert_close

import fxla.frontend as ff
from fxla.errors import FxlaError
from fxla.frontend import (GraphModule, PassError, SerializationError, ShapeProp, Transformer, fuse_conv_bn,
                           graph_to_dot, graph_to_svg, load, replace_pattern, save, split_module, symbolic_trace)

THIS_FILE = __file__


# ---- models ------------------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 16, bias=False)
        self.fc3 = nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu(self.fc1(x))  # @mlp-relu
        h = torch.relu(self.fc2(h))
        return F.softmax(self.fc3(h) * 2.0, dim=-1)


class ConvBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8, affine=False)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


def randomize_bn(model):
    """Give every BatchNorm non-trivial running stats and affine parameters."""
    g = torch.Generator().manual_seed(0)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g))
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            if m.affine:
                m.weight.data.copy_(torch.randn(m.num_features, generator=g))
                m.bias.data.copy_(torch.randn(m.num_features, generator=g))
    return model


def tuple_fn(x, y):
    s = x + y
    return s.relu(), (x * y, torch.cat([x, y], dim=0)[1:, ...]), {"m": s.max(dim=-1).values, "k": 3}


def same(actual, expected, **tol):
    if isinstance(expected, torch.Tensor):
        assert_close(actual, expected, **tol)
    elif isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            same(a, e, **tol)
    elif isinstance(expected, dict):
        assert actual.keys() == expected.keys()
        for k in expected:
            same(actual[k], expected[k], **tol)
    else:
        assert actual == expected


def op_targets(graph):
    return [(n.op, n.target) for n in graph.nodes]


# ---- Transformer -------------------------------------------------------------------------------
class ReluToSigmoid(Transformer):
    def call_function(self, target, args, kwargs):
        if target is torch.relu:
            return torch.sigmoid(*args, **kwargs)
        return super().call_function(target, args, kwargs)


def test_transformer_identity_copies_graph_and_meta():
    model = MLP()
    gm = symbolic_trace(model)
    new = Transformer(gm).transform()
    assert isinstance(new, GraphModule) and new is not gm
    assert op_targets(new.graph) == op_targets(gm.graph)
    for old, n in zip(gm.graph.nodes, new.graph.nodes):
        assert n.meta["source"] == old.meta["source"]
    assert new.fc1 is gm.fc1  # submodules shared by reference
    x = torch.randn(3, 8)
    same(new(x), model(x))


def test_transformer_swaps_relu_for_sigmoid():
    model = MLP()
    gm = symbolic_trace(model)
    new = ReluToSigmoid(gm).transform()
    new.graph.lint()
    targets = [n.target for n in new.graph.nodes if n.op == "call_function"]
    assert torch.relu not in targets and targets.count(torch.sigmoid) == 2
    x = torch.randn(3, 8)
    expected = F.softmax(model.fc3(torch.sigmoid(model.fc2(torch.sigmoid(model.fc1(x))))) * 2.0, dim=-1)
    same(new(x), expected)
    assert not torch.allclose(new(x), model(x))
    relu_src = next(n for n in gm.graph.nodes if n.target is torch.relu).meta["source"]
    sig = next(n for n in new.graph.nodes if n.target is torch.sigmoid)
    assert sig.meta["source"] == relu_src and relu_src.file == THIS_FILE  # source carried over
    same(gm(x), model(x))  # the original is untouched


def test_transformer_matches_torch_fx_transformer():
    class FxReluToSigmoid(torch.fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is torch.relu:
                return torch.sigmoid(*args, **kwargs)
            return super().call_function(target, args, kwargs)

    model = MLP()
    ours = ReluToSigmoid(symbolic_trace(model)).transform()
    theirs = FxReluToSigmoid(torch.fx.symbolic_trace(model)).transform()
    assert op_targets(ours.graph) == op_targets(theirs.graph)
    x = torch.randn(2, 8)
    same(ours(x), theirs(x))


def test_transformer_method_module_and_structured_output():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.register_buffer("offset", torch.ones(4))

        def forward(self, x, scale=2.0):
            return {"a": self.lin(x).relu() + self.offset, "b": (x.sum(-1) * scale,)}

    class DoubleMethods(Transformer):
        def call_method(self, target, args, kwargs):
            out = super().call_method(target, args, kwargs)
            return out * 2 if target == "relu" else out

    m = M()
    gm = symbolic_trace(m)
    x = torch.randn(2, 4)
    same(Transformer(gm).transform()(x), m(x))
    new = DoubleMethods(gm).transform()
    same(new(x, 3.0), {"a": m.lin(x).relu() * 2 + m.offset, "b": (x.sum(-1) * 3.0,)})
    assert new.graph.output_node.meta["source"] == gm.graph.output_node.meta["source"]


# ---- graph deep copy ---------------------------------------------------------------------------
def test_graph_deepcopy_and_copy_preserve_meta():
    gm = symbolic_trace(ConvBN().eval())
    ShapeProp(gm).run(torch.randn(1, 3, 8, 8))
    g = copy.deepcopy(gm.graph)
    g.lint()
    assert g.owning_module is None and str(g) == str(gm.graph)
    for old, new in zip(gm.graph.nodes, g.nodes):
        assert new is not old and new.graph is g
        assert new.meta == old.meta and new.meta is not old.meta
        assert [a.name for a in new.all_input_nodes] == [a.name for a in old.all_input_nodes]
    first = next(iter(g.nodes))
    first.meta["tensor_meta"] = None  # the copy's meta is independent
    assert next(iter(gm.graph.nodes)).meta["tensor_meta"] is not None
    shallow = gm.graph.copy()
    assert [n.meta for n in shallow.nodes] == [n.meta for n in gm.graph.nodes]
    x = torch.randn(2, 3, 8, 8)
    same(GraphModule(gm, g)(x), gm(x))


def test_graph_deepcopy_maps_node_references_in_meta():
    gm = symbolic_trace(MLP())
    nodes = list(gm.graph.nodes)
    nodes[2].meta["origin"] = nodes[1]
    g = copy.deepcopy(gm.graph)
    copied = list(g.nodes)
    assert copied[2].meta["origin"] is copied[1]


# ---- save / load -------------------------------------------------------------------------------
def roundtrip(gm, tmp_path, *inputs):
    path = tmp_path / "saved"
    save(gm, path)
    assert sorted(os.listdir(path)) == ["graph.json", "modules.json", "tensors.bin"]
    loaded = load(path)
    loaded.graph.lint()
    assert op_targets(loaded.graph) == op_targets(gm.graph)
    assert [n.name for n in loaded.graph.nodes] == [n.name for n in gm.graph.nodes]
    assert loaded.code == gm.code
    same(loaded(*inputs), gm(*inputs))
    return loaded, path


def test_save_load_mlp(tmp_path):
    model = MLP()
    gm = symbolic_trace(model)
    x = torch.randn(5, 8)
    loaded, path = roundtrip(gm, tmp_path, x)
    same(loaded(x), model(x))
    assert isinstance(loaded.fc1.weight, nn.Parameter) and loaded.fc1.weight.requires_grad
    assert loaded.fc2.bias is None and type(loaded.fc1) is nn.Linear
    assert loaded.fc1.in_features == 8 and loaded.fc1.weight.data_ptr() != model.fc1.weight.data_ptr()
    assert type(loaded).__name__ == "MLP"
    src = [n.meta["source"] for n in loaded.graph.nodes]
    assert src == [n.meta["source"] for n in gm.graph.nodes] and src[2].file == THIS_FILE
    graph_json = json.loads((path / "graph.json").read_text())
    assert "pickle" not in (path / "graph.json").read_text()
    assert {"$": "fn", "name": "torch.nn.functional.softmax"} in [n["target"] for n in graph_json["nodes"]]


@pytest.mark.parametrize("training", [False, True])
def test_save_load_cnn_with_batchnorm(tmp_path, training):
    model = randomize_bn(ConvBN()).train(training)
    model.bn1.num_batches_tracked += 7
    gm = symbolic_trace(model)
    x = torch.randn(4, 3, 8, 8)
    ShapeProp(gm).run(x)
    expected = copy.deepcopy(gm)(x)
    loaded, _ = roundtrip(copy.deepcopy(gm), tmp_path, x)
    same(loaded(x), expected)
    assert loaded.training is training and loaded.bn1.training is training
    assert loaded.bn1.num_batches_tracked.dtype == torch.int64
    assert int(loaded.bn1.num_batches_tracked) == 7 + 2 * training
    assert loaded.bn2.weight is None and loaded.bn2.affine is False
    assert [n.meta.get("tensor_meta") for n in loaded.graph.nodes] == \
           [n.meta.get("tensor_meta") for n in gm.graph.nodes]


def test_save_load_function_with_tuple_outputs_and_literals(tmp_path):
    gm = symbolic_trace(tuple_fn)
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    roundtrip(gm, tmp_path, x, y)

    def literals(x):
        x = x.to(torch.float64).clamp(min=-math.inf, max=math.inf)
        return x[..., None, 1:2:1] + torch.ones(3, dtype=torch.float64, device=torch.device("cpu")), x.shape[0]

    gm = symbolic_trace(literals)
    loaded, _ = roundtrip(gm, tmp_path / "lit", torch.randn(2, 3))
    assert loaded._tensor_constant0.dtype == torch.float64


def test_save_load_shared_parameters_and_constants(tmp_path):
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 4)
            self.b.weight = self.a.weight
            self.scale = torch.tensor([2.0, 3.0, 4.0, 5.0])
            self.mask = torch.tensor([True, False, True, True])

        def forward(self, x):
            return self.b(self.a(x)) * self.scale + self.mask.to(x.dtype) + self.a.weight.sum()

    gm = symbolic_trace(Tied())
    loaded, _ = roundtrip(gm, tmp_path, torch.randn(3, 4))
    assert loaded.a.weight is loaded.b.weight


def test_save_rejects_unencodable_content(tmp_path):
    def helper(x):
        return x * 2

    wrapped = ff.wrap(helper)

    def uses_helper(x):
        return wrapped(x) + 1

    with pytest.raises(SerializationError) as e:
        save(symbolic_trace(uses_helper), tmp_path / "a")
    assert "helper" in str(e.value) and "fix:" in str(e.value)

    class Custom(nn.Module):
        def forward(self, x):
            return x + 1

    class Tracer(ff.Tracer):
        def is_leaf_module(self, m, name):
            return isinstance(m, Custom) or super().is_leaf_module(m, name)

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = Custom()

        def forward(self, x):
            return self.c(x)

    outer = Outer()
    gm = GraphModule(outer, Tracer().trace(outer))
    assert [n.op for n in gm.graph.nodes] == ["placeholder", "call_module", "output"]
    with pytest.raises(SerializationError, match="only torch.nn leaf modules"):
        save(gm, tmp_path / "b")


def saved_mlp(tmp_path):
    path = tmp_path / "saved"
    save(symbolic_trace(MLP()), path)
    return path


def expect_load_error(path, match):
    with pytest.raises(SerializationError) as e:
        load(path)
    text = str(e.value)
    assert isinstance(e.value, FxlaError) and "fix:" in text and THIS_FILE in text, text
    assert match in text, text
    return text


@pytest.mark.parametrize("name", ["tensors.bin", "modules.json", "graph.json"])
def test_load_truncated_file(tmp_path, name):
    path = saved_mlp(tmp_path)
    data = (path / name).read_bytes()
    (path / name).write_bytes(data[: len(data) // 2])
    expect_load_error(path, "not valid JSON" if name == "graph.json" else "truncated")


@pytest.mark.parametrize("name", ["tensors.bin", "modules.json"])
def test_load_tampered_file(tmp_path, name):
    path = saved_mlp(tmp_path)
    data = bytearray((path / name).read_bytes())
    data[-5] ^= 0x01
    (path / name).write_bytes(bytes(data))
    expect_load_error(path, "modified after saving")


def test_load_tampered_graph_json(tmp_path):
    path = saved_mlp(tmp_path)
    original = json.loads((path / "graph.json").read_text())
    edits = {
        "unknown function": (lambda g: g["nodes"][2].update(target={"$": "fn", "name": "os.system"}), "os.system"),
        "undefined node": (lambda g: g["nodes"][3].update(args=[{"$": "node", "name": "nope"}]), "nope"),
        "bad opcode": (lambda g: g["nodes"][1].update(op="call_everything"), "unknown opcode"),
        "missing key": (lambda g: g.pop("nodes"), "KeyError"),
        "unknown tag": (lambda g: g["nodes"][3].update(args=[{"$": "pickle"}]), "unknown value tag"),
        "missing module": (lambda g: g["nodes"][1].update(target="fc9"), "fc9"),
    }
    for what, (edit, match) in edits.items():
        g = copy.deepcopy(original)
        edit(g)
        (path / "graph.json").write_text(json.dumps(g))
        expect_load_error(path, match)
    (path / "graph.json").write_text(json.dumps(original))
    load(path)
    os.remove(path / "tensors.bin")
    expect_load_error(path, "tensors.bin cannot be read")
    with pytest.raises(SerializationError):
        load(tmp_path / "missing")


def test_load_malformed_tensor_index(tmp_path):
    """A tensors.bin rewritten consistently with graph.json (hash updated) is still validated."""
    import hashlib
    path = saved_mlp(tmp_path)
    data = bytearray((path / "tensors.bin").read_bytes())
    n = int.from_bytes(data[8:16], "little")
    index = data[16:16 + n].decode().replace('"float32"', '"float64"', 1)
    data[16:16 + n] = index.encode()
    (path / "tensors.bin").write_bytes(bytes(data))
    g = json.loads((path / "graph.json").read_text())
    g["files"]["tensors.bin"]["sha256"] = hashlib.sha256(bytes(data)).hexdigest()
    (path / "graph.json").write_text(json.dumps(g))
    expect_load_error(path, "do not fit shape")


# ---- replace_pattern ---------------------------------------------------------------------------
class RewriteMe(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, y):
        a = torch.relu(torch.add(x, y))
        b = torch.relu(torch.add(self.lin(a), a))
        c = torch.add(b, 1.0)  # add with a literal: still matches (placeholder binds the literal)
        d = torch.relu(c) * torch.add(c, y)  # this add is used outside the pattern: no match
        return d + torch.relu(torch.add(d, x))


def add_relu(x, y):
    return torch.relu(torch.add(x, y))


def add_relu_replacement(x, y):
    return torch.sigmoid(torch.sub(x, y)) * 2


def test_replace_pattern_matches_torch_fx():
    model = RewriteMe()
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    gm = symbolic_trace(copy.deepcopy(model))
    fgm = torch.fx.symbolic_trace(copy.deepcopy(model))
    ours = replace_pattern(gm, add_relu, add_relu_replacement)
    theirs = torch.fx.subgraph_rewriter.replace_pattern(fgm, add_relu, add_relu_replacement)
    gm.graph.lint()
    assert len(ours) == len(theirs) == 3
    assert op_targets(gm.graph) == [(n.op, n.target) for n in fgm.graph.nodes]
    same(gm(x, y), fgm(x, y))
    assert torch.relu in [n.target for n in gm.graph.nodes]  # relu(c) was not part of a match
    assert [m.anchor.name for m in ours] == ["relu", "relu_1", "relu_3"]
    # y matched the first match's relu, which that match replaced: the map names its replacement
    assert {p.name: g.name for p, g in ours[1].nodes_map.items()} == \
           {p.name: g.name for p, g in theirs[1].nodes_map.items()} == \
           {"relu": "relu_1", "add": "add_1", "x": "lin", "y": "mul_1"}
    assert all(n.meta["source"] is not None for n in gm.graph.nodes)


def test_replace_pattern_semantics():
    class M(nn.Module):
        def forward(self, x):
            return torch.neg(torch.neg(x)) + torch.neg(torch.neg(torch.neg(torch.neg(x))))

    gm = symbolic_trace(M())
    matches = replace_pattern(gm, lambda x: torch.neg(torch.neg(x)), lambda x: x)
    assert len(matches) == 3  # non-overlapping, earlier matches win
    assert [n.op for n in gm.graph.nodes] == ["placeholder", "call_function", "output"]
    x = torch.randn(4)
    same(gm(x), x + x)

    # replacement reading a constant tensor and a submodule; multi-output pattern
    def pattern(x):
        s = torch.sigmoid(x)
        return s * 2, s + 1

    class Repl(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Identity()

        def forward(self, x):
            s = self.lin(torch.tanh(x))
            return s * torch.tensor(3.0), s - 1

    def target_fn(x):
        s = torch.sigmoid(x)
        a, b = s * 2, s + 1
        return a / b

    gm = symbolic_trace(target_fn)
    assert len(replace_pattern(gm, pattern, Repl())) == 1
    t = torch.tanh(x)
    same(gm(x), (t * 3.0) / (t - 1))

    with pytest.raises(PassError, match="fix:"):
        replace_pattern(gm, lambda x, y: torch.relu(x), lambda x, y: x)  # y unused
    with pytest.raises(PassError, match="same signature"):
        replace_pattern(gm, lambda x: torch.relu(x), lambda x, y: x)
    assert replace_pattern(gm, add_relu, add_relu_replacement) == []


# ---- split_module ------------------------------------------------------------------------------
def test_split_module_mlp():
    model = MLP()
    gm = symbolic_trace(model)
    x = torch.randn(3, 8)
    counter = {"n": 0}

    def callback(node):  # new partition after each linear layer
        pid = counter["n"]
        if node.op == "call_module":
            counter["n"] += 1
        return pid

    split = split_module(gm, model, callback)
    split.graph.lint()
    subs = [n.target for n in split.graph.nodes if n.op == "call_module"]
    assert subs == ["submod_0", "submod_1", "submod_2", "submod_3"]
    for name in subs:
        sub = getattr(split, name)
        assert isinstance(sub, GraphModule)
        sub.graph.lint()
    assert split.submod_0.fc1 is model.fc1
    same(split(x), model(x))
    assert all(n.meta.get("source") is not None for n in split.submod_1.graph.nodes if n.op != "placeholder")


def test_split_module_multiple_outputs_and_order():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4, 4))

        def forward(self, x, y=1.0):
            a = x @ self.w
            b = torch.relu(a)
            c = torch.sigmoid(a) + y
            d = b * c + self.w.sum()
            return d, a, (self.w,)

    m = M()
    gm = symbolic_trace(m)
    x = torch.randn(2, 4)
    parts = {"matmul": 0, "relu": 1, "sigmoid": 1, "add": 1, "mul": 2, "sum_1": 0, "add_1": 2}
    split = split_module(gm, gm, lambda n: parts[n.name])
    same(split(x), m(x))
    same(split(x, 3.0), m(x, 3.0))
    ops = [n for n in split.graph.nodes if n.op == "call_function"]
    assert all(n.target is operator.getitem for n in ops)
    with pytest.raises(PassError, match="cycle"):
        split_module(gm, gm, lambda n: {"relu": 1, "mul": 1}.get(n.name, 0))


# ---- fuse_conv_bn ------------------------------------------------------------------------------
def test_fuse_conv_bn_matches_eager():
    model = randomize_bn(ConvBN()).eval()
    gm = symbolic_trace(model)
    fused = fuse_conv_bn(gm)
    fused.graph.lint()
    mods = [fused.get_submodule(n.target) for n in fused.graph.nodes if n.op == "call_module"]
    assert not any(isinstance(m, nn.BatchNorm2d) for m in mods)
    assert not hasattr(fused, "bn1") and not hasattr(fused, "bn2")
    assert len([n for n in fused.graph.nodes if n.op == "call_module"]) == 4
    assert isinstance(fused.conv2, nn.Conv2d) and fused.conv2.bias is not None
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        assert_close(fused(x), model(x), atol=1e-5, rtol=1e-5)
    assert any(n.target == "bn1" for n in gm.graph.nodes)  # input untouched
    assert gm.conv1.weight is model.conv1.weight


def test_fuse_conv_bn_shared_conv_gets_fresh_name():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 3, 3, padding=1)
            self.bn = nn.BatchNorm2d(3)

        def forward(self, x):
            return self.conv(self.bn(self.conv(x)))  # conv called twice, only the first feeds bn

    m = randomize_bn(M()).eval()
    fused = fuse_conv_bn(symbolic_trace(m))
    targets = [n.target for n in fused.graph.nodes if n.op == "call_module"]
    assert targets == ["conv_bn_fused", "conv"]
    x = torch.randn(1, 3, 6, 6)
    with torch.no_grad():
        assert_close(fused(x), m(x), atol=1e-5, rtol=1e-5)


def test_fuse_conv_bn_skips_unfusible():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 1)
            self.bn = nn.BatchNorm2d(4)

        def forward(self, x):
            y = self.conv(x)
            return self.bn(y) + y  # conv output has another user

    m = randomize_bn(M()).eval()
    fused = fuse_conv_bn(symbolic_trace(m))
    assert any(n.target == "bn" for n in fused.graph.nodes)
    train = fuse_conv_bn(symbolic_trace(randomize_bn(ConvBN()).train()))
    assert sum(n.target in ("bn1", "bn2") for n in train.graph.nodes) == 2


# ---- graphviz ----------------------------------------------------------------------------------
def test_graph_to_dot():
    gm = symbolic_trace(ConvBN())
    ShapeProp(gm).run(torch.randn(1, 3, 8, 8))
    dot = graph_to_dot(gm.graph)
    assert dot.startswith('digraph "graph" {') and dot.rstrip().endswith("}")
    for n in gm.graph.nodes:
        assert f'"{n.name}" [label="{n.name}\\n' in dot
        for inp in n.all_input_nodes:
            assert f'"{inp.name}" -> "{n.name}";' in dot
    assert "float32[1, 8, 8, 8]" in dot and "call_module: conv1" in dot


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` not installed")
def test_graph_to_svg():
    gm = symbolic_trace(MLP())
    svg = graph_to_svg(gm.graph)
    assert "<svg" in svg and all(n.name in svg for n in gm.graph.nodes)


def test_graph_to_svg_without_dot(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(PassError, match="apt-get install graphviz") as e:
        graph_to_svg(symbolic_trace(MLP()).graph)
    assert "fix:" in str(e.value)


def test_public_api():
    for name in ("Transformer", "save", "load", "SerializationError", "PassError", "replace_pattern",
                 "split_module", "fuse_conv_bn", "graph_to_dot", "graph_to_svg", "passes"):
        assert hasattr(ff, name) and name in ff.__all__, name
    assert issubclass(SerializationError, FxlaError) and issubclass(PassError, FxlaError)


def test_submodule_helpers_and_node_argument_updates():
    # torch.fx's pass-author API: move a call_module target to a new module, then drop what is unused
    model = MLP()
    gm = symbolic_trace(model)
    fc = next(n for n in gm.graph.nodes if n.op == "call_module" and isinstance(gm.get_submodule(n.target), nn.Linear))
    old = gm.get_submodule(fc.target)
    copy_of_old = nn.Linear(old.in_features, old.out_features)
    copy_of_old.load_state_dict(old.state_dict())
    assert gm.add_submodule("extra.moved", copy_of_old)          # creates the empty parent "extra"
    assert not gm.add_submodule(f"{fc.target}.weight.bad", nn.ReLU())   # a prefix is a tensor, not a module
    old_target, fc.target = fc.target, "extra.moved"
    gm.recompile()
    gm.delete_all_unused_submodules()
    assert old_target not in dict(gm.named_modules()) and "extra.moved" in dict(gm.named_modules())
    x = torch.randn(2, 8)
    assert_close(gm(x), model(x))
    assert gm.delete_submodule("extra.moved") and not gm.delete_submodule("extra.moved")

    g = ff.Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    add = g.call_function(torch.add, (x, x))
    g.output(add)
    add.update_arg(1, y)
    assert add.args == (x, y) and add in y.users
    add.update_kwarg("alpha", 2)
    add.insert_arg(0, y)
    assert add.args == (y, x, y) and add.kwargs == {"alpha": 2}
    add.update_arg(0, x)
    add.update_arg(2, x)
    assert add not in y.users and list(x.users) == [add]
