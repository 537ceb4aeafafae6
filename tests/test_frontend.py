"""Tests of fxla.frontend: tracing, codegen, GraphModule, Interpreter, graph editing, shape propagation.

Most model tests are differential: the traced GraphModule must match eager PyTorch, and the
graph's (op, target) sequence must match torch.fx.symbolic_trace on the same model.
"""
import copy
import math
import operator

import pytest
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from torch.testing import assert_close

import fxla.frontend as ff
from fxla.frontend import (Graph, GraphError, GraphModule, Interpreter, InterpreterError, Node, Proxy,
                           SourceLocation, TensorMeta, TraceError, Tracer, map_arg, propagate_shapes,
                           symbolic_trace, wrap)

from support import marker_line  # noqa: E402

THIS_FILE = __file__


def line_of(marker: str) -> int:
    return marker_line(THIS_FILE, marker)


def same(actual, expected):
    """assert_close for nested structures that may also hold non-tensor leaves (dtypes, None, ...)."""
    if isinstance(expected, torch.Tensor):
        assert_close(actual, expected, equal_nan=True)
    elif isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            same(a, e)
    elif isinstance(expected, dict):
        assert actual.keys() == expected.keys()
        for k in expected:
            same(actual[k], expected[k])
    else:
        assert actual == expected


def op_targets(graph, normalize=lambda t: t):
    return [(n.op, normalize(n.target)) for n in graph.nodes]


def check(model, *inputs, concrete_args=None, fx=True, normalize=lambda t: t):
    """Trace ``model``; GraphModule, regenerated code and Interpreter must equal eager;
    (op, target) sequence must equal torch.fx's."""
    fx_model = copy.deepcopy(model)  # before fxla registers tensor constants on the root
    gm = symbolic_trace(model, concrete_args=concrete_args)
    gm.graph.lint()
    expected = model(*copy.deepcopy(inputs), **(concrete_args or {}))
    same(gm(*copy.deepcopy(inputs)), expected)
    same(Interpreter(gm).run(*copy.deepcopy(inputs)), expected)
    assert all("source" in n.meta and n.meta["source"] is not None for n in gm.graph.nodes)
    gm.recompile()  # regenerated code runs too
    same(gm(*copy.deepcopy(inputs)), expected)
    if fx:
        fgm = torch.fx.symbolic_trace(fx_model, concrete_args=concrete_args)
        ours = op_targets(gm.graph, normalize)
        theirs = [(n.op, normalize(n.target)) for n in fgm.graph.nodes]
        if concrete_args:  # fx keeps concrete args as placeholders + `_assert(flag == True)` guards;
            guards = {("call_function", operator.eq), ("call_function", torch._assert)}  # fxla bakes them in
            ours = [t for t in ours if t[0] != "placeholder"]
            theirs = [t for t in theirs if t[0] != "placeholder" and t not in guards]
        assert ours == theirs, f"\nfxla: {ours}\nfx:   {theirs}"
    return gm


# ---- models ------------------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        h = self.fc1(x)  # @mlp-fc1
        h = self.relu(h)
        return self.fc2(h)


class CNN(nn.Module):
    def __init__(self, use_view=False):
        super().__init__()
        self.use_view = use_view
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 4 * 4, 10)

    def forward(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        if self.use_view:
            x = x.view(x.size(0), -1)
        else:
            x = torch.flatten(x, 1)
        return self.fc(x)


class EncoderBlock(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads, self.head_dim = heads, d // heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff1, self.ff2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

    def split(self, t, b, s):
        return t.view(b, s, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.split(self.q(x), b, s), self.split(self.k(x), b, s), self.split(self.v(x), b, s)
        att = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, s, d)
        x = self.ln1(x + self.o(y))
        return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))


class Magic(nn.Module):
    def forward(self, x, y):
        a = x + 1, 1 + x, x - y, 2 - x, x * 2, 3 * x, x / 2, 2 / (x.abs() + 1), x // 2, 7 // (y.abs() + 1)
        b = x % 3, x ** 2, 2 ** x, x @ y.T, -x, +x, abs(x), x == y, x != y, x < y, x <= y, x > y, x >= y
        return a + b


class IntMagic(nn.Module):
    def forward(self, x, y):
        return (~x, x & y, x | y, x ^ y, x << 1, x >> 1, 3 & x, 3 | x, 3 ^ x, 1 << x)


class InPlace(nn.Module):
    def forward(self, x, y):
        z = x * 1
        z += y
        z -= 1
        z *= y
        z /= 2
        return z


class Indexing(nn.Module):
    def forward(self, x):
        return (x[0], x[:, 1:3], x[..., None], x[::2], x[0, 1], x[:, -1], x[[0, 2]], x[1:, :2, None],
                x[x > 0], x[..., 0])


class Outputs(nn.Module):
    def forward(self, x):
        return {"sum": x.sum(), "pair": (x.relu(), [x.sigmoid(), x * 2]), "none": None, "n": 3}


class NestedInputs(nn.Module):
    def forward(self, pair, named):
        a, b = pair
        return a * named["scale"] + b[0] + named["shift"]


class OwnParams(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(5, 3))
        self.register_buffer("offset", torch.randn(3))
        self.scale = torch.tensor(2.0)  # plain tensor attribute

    def forward(self, x):
        return (x @ self.weight + self.offset) * self.scale + self.weight.sum()


class Constants(nn.Module):
    def forward(self, x):
        return x + torch.ones(3), x.to(torch.float64) * torch.arange(3.0), x.new_zeros(2).dtype


class MethodsAndAttrs(nn.Module):
    def forward(self, x):
        n = x.size(0)
        return (x.view(n, -1).relu().softmax(-1), x.transpose(1, 2), x.shape[1], x.ndim, x[0].T.shape, x.dtype,
                x.reshape(x.shape[0], -1).sum(dim=1, keepdim=True), torch.cat([x, x], dim=1),
                x.permute(2, 0, 1).mean(-1), x.masked_fill(x > 0, float("-inf")).clamp(min=-1.0))


class Containers(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2))
        self.blocks = nn.ModuleList([nn.Linear(2, 2) for _ in range(2)])
        self.heads = nn.ModuleDict({"a": nn.Linear(2, 1), "b": nn.Linear(2, 1)})

    def forward(self, x):
        x = self.seq(x)
        for blk in self.blocks:
            x = blk(x) + x
        return self.heads["a"](x) - self.heads["b"](x)


class WithFlag(nn.Module):
    def forward(self, x, flag, k=2):
        if flag:
            return x * k
        return x - k


def _leaf_helper(x, n):
    if x.sum() > 0:  # data-dependent: not traceable, so must stay a leaf
        return x * n
    return x - n


leaf_helper = wrap(_leaf_helper)


def named_helper(x):
    return x.abs() if x.mean() > 0 else x


wrap("named_helper")


class UsesWrapped(nn.Module):
    def forward(self, x):
        return leaf_helper(x, 3) + named_helper(x) + 1


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))  # @inner-relu


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.wrapper = nn.Sequential(Inner())

    def forward(self, x):
        y = self.inner(x)
        z = torch.sigmoid(  # @outer-sigmoid
            y)
        return self.wrapper(z) + z  # @outer-add


# ---- differential tests ------------------------------------------------------------------------
def test_mlp():
    gm = check(MLP(), torch.randn(2, 8))
    assert [(n.op, n.target) for n in gm.graph.nodes if n.op == "call_module"] == [
        ("call_module", "fc1"), ("call_module", "relu"), ("call_module", "fc2")]
    assert gm.code.strip().startswith("def forward(self, x):")
    assert "fc1 = self.fc1(x);  x = None" in gm.code


@pytest.mark.parametrize("use_view", [False, True])
def test_cnn(use_view):
    gm = check(CNN(use_view), torch.randn(2, 3, 16, 16))
    targets = [n.target for n in gm.graph.nodes]
    assert (torch.flatten in targets) != use_view
    if use_view:
        assert "view = pool_1.view(size, -1)" in gm.code


def test_encoder_block():
    gm = check(EncoderBlock(), torch.randn(2, 5, 16))
    assert operator.matmul in [n.target for n in gm.graph.nodes]
    assert "@" in gm.code and "torch.softmax(" in gm.code and "torch.nn.functional.gelu(" in gm.code


def test_magic_and_reflected_ops():
    x, y = torch.randn(3, 3), torch.randn(3, 3)
    gm = check(Magic(), x, y)
    code = gm.code
    for snippet in ("x + 1", "1 + x", "2 - x", "3 * x", "2 ** x", "-x", "+x", "x == y", "x >= y", "// 2", "% 3"):
        assert snippet in code, snippet
    assert "abs(x)" in code or "x.abs()" in code
    calls = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert calls.count(operator.add) >= 2 and operator.pow in calls and operator.neg in calls


def test_int_magic_ops():
    x, y = torch.tensor([1, 2, 3]), torch.tensor([3, 1, 0])
    gm = check(IntMagic(), x, y)
    assert "~x" in gm.code and "1 << x" in gm.code and "3 ^ x" in gm.code


def test_inplace_ops():
    # torch.fx's Proxy has no __iadd__ (Python falls back to __add__); fxla records operator.iadd.
    to_fx = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
             operator.itruediv: operator.truediv}
    gm = check(InPlace(), torch.randn(4), torch.randn(4), normalize=lambda t: to_fx.get(t, t))
    assert operator.iadd in [n.target for n in gm.graph.nodes]
    gm.graph.eliminate_dead_code()  # in-place nodes are impure
    assert len([n for n in gm.graph.nodes if n.target in to_fx]) == 4


def test_getitem_and_slicing():
    gm = check(Indexing(), torch.randn(4, 5, 6))
    for snippet in ("x[0]", "x[:, 1:3]", "x[..., None]", "x[::2]", "x[0, 1]", "x[:, -1]", "x[[0, 2]]",
                    "x[1:, :2, None]"):
        assert snippet in gm.code, snippet


def test_structured_outputs():
    gm = check(Outputs(), torch.randn(3))
    out = gm(torch.randn(3))
    assert set(out) == {"sum", "pair", "none", "n"} and out["none"] is None and out["n"] == 3
    assert isinstance(out["pair"][1], list)


def test_nested_inputs():
    pair = (torch.randn(3), [torch.randn(3)])
    named = {"scale": torch.randn(3), "shift": 1.5}
    check(NestedInputs(), pair, named)


def test_own_parameters_are_get_attr():
    m = OwnParams()
    gm = check(m, torch.randn(2, 5))
    attrs = [n for n in gm.graph.nodes if n.op == "get_attr"]
    assert [n.target for n in attrs] == ["weight", "offset", "scale"]  # one node per qualname (cached)
    assert gm.weight is m.weight and "offset" in dict(gm.named_buffers())
    assert "self.weight" in gm.code


class HasOwnParamsChild(nn.Module):
    def __init__(self):
        super().__init__()
        self.child = OwnParams()

    def forward(self, x):
        return self.child(x) - self.child.weight.mean()


def test_parameters_inside_non_leaf_submodule():
    gm = check(HasOwnParamsChild(), torch.randn(2, 5))
    assert [n.target for n in gm.graph.nodes if n.op == "get_attr"] == ["child.weight", "child.offset", "child.scale"]
    weight = next(n for n in gm.graph.nodes if n.target == "child.weight")
    assert weight.meta["source"].module_path == "child" and len(weight.users) == 3


def test_codegen_edge_cases():
    g = Graph()
    x = g.placeholder("x", default=1.0)
    y = g.placeholder("y")  # required after a defaulted input -> keyword-only
    bits = g.call_method("bit_length", (5,))
    anded = g.call_function(operator.and_, (x, y))
    g.output((g.call_function(operator.add, (x, y)), bits, anded))
    gm = GraphModule(nn.Module(), g)
    assert "def forward(self, x = 1.0, *, y):" in gm.code and "(5).bit_length()" in gm.code
    assert gm(x=3, y=6) == (9, 3, 2)
    assert not anded.is_impure() and g.call_function(torch.relu_, (x,)).is_impure()


def test_tensor_constants():
    gm = check(Constants(), torch.randn(3))
    attrs = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    assert attrs == ["_tensor_constant0", "_tensor_constant1"]
    assert_close(gm._tensor_constant0, torch.ones(3))
    assert "torch.float64" in gm.code


def test_methods_and_attributes():
    gm = check(MethodsAndAttrs(), torch.randn(2, 3, 4))
    methods = [n.target for n in gm.graph.nodes if n.op == "call_method"]
    assert {"size", "view", "relu", "softmax", "transpose", "reshape", "permute"} <= set(methods)
    assert "x.shape" in gm.code and "float('-inf')" in gm.code


def test_containers_trace_through():
    gm = check(Containers(), torch.randn(3, 4))
    mods = [n.target for n in gm.graph.nodes if n.op == "call_module"]
    assert mods == ["seq.0", "seq.1", "seq.2", "blocks.0", "blocks.1", "heads.a", "heads.b"]


def test_concrete_args():
    m = WithFlag()
    gm = check(m, torch.randn(3), concrete_args={"flag": True})
    assert [n.target for n in gm.graph.nodes if n.op == "placeholder"] == ["x", "k"]
    assert_close(gm(torch.ones(3), 5), torch.ones(3) * 5)
    gm2 = symbolic_trace(m, concrete_args={"flag": False, "k": 4})
    assert_close(gm2(torch.ones(3)), torch.ones(3) - 4)
    assert "def forward(self, x):" in gm2.code


def test_wrap_keeps_leaf():
    x = torch.randn(4)
    gm = symbolic_trace(UsesWrapped())
    calls = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert calls[:2] == [_leaf_helper, named_helper.__fxla_wrapped__]
    assert_close(gm(x), UsesWrapped()(x))
    assert_close(gm(-x.abs()), UsesWrapped()(-x.abs()))
    regm = symbolic_trace(gm)  # retracing generated code keeps the leaves
    assert [n.target for n in regm.graph.nodes if n.op == "call_function"][:2] == calls[:2]
    with pytest.raises(TraceError):
        symbolic_trace(lambda x: _leaf_helper(x, 3))  # unwrapped original is traced into


def test_custom_tracer_is_leaf_module():
    class LeafInner(Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, Inner) or super().is_leaf_module(m, qualname)

    class FxLeafInner(torch.fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, Inner) or super().is_leaf_module(m, qualname)

    m, x = Outer(), torch.randn(2, 4)
    tracer = LeafInner()
    gm = GraphModule(tracer.root if False else m, tracer.trace(m), "Outer")
    assert [n.target for n in gm.graph.nodes if n.op == "call_module"] == ["inner", "wrapper.0"]
    assert_close(gm(x), m(x))
    fx_graph = FxLeafInner().trace(m)
    assert op_targets(gm.graph) == [(n.op, n.target) for n in fx_graph.nodes]


def test_plain_function():
    def fn(x, y=2.0):
        return torch.tanh(x) * y + torch.zeros(1)

    gm = symbolic_trace(fn)
    assert type(gm).__name__ == "fn" and "def forward(self, x, y = 2.0):" in gm.code
    x = torch.randn(3)
    assert_close(gm(x), fn(x))
    assert_close(gm(x, 3.0), fn(x, 3.0))
    assert [(n.op, n.target) for n in gm.graph.nodes] == [
        (n.op, n.target) for n in torch.fx.symbolic_trace(fn).graph.nodes]


# ---- graph API ---------------------------------------------------------------------------------
def test_graph_editing():
    m = MLP()
    gm = symbolic_trace(m)
    g = gm.graph
    relu = next(n for n in g.nodes if n.target == "relu")
    fc2 = next(n for n in g.nodes if n.target == "fc2")
    with g.inserting_after(relu):
        neg = g.call_function(torch.neg, (relu,))
        dead = g.call_function(torch.exp, (neg,))
    assert relu.next is neg and neg.next is dead and dead.next is fc2 and fc2.prev is dead
    changed = relu.replace_all_uses_with(neg, delete_user_cb=lambda u: u is not neg)
    assert changed == [fc2] and fc2.args == (neg,)
    assert list(relu.users) == [neg] and set(neg.users) == {dead, fc2}
    with pytest.raises(GraphError, match="still has users"):
        g.erase_node(relu)
    assert g.eliminate_dead_code() and dead not in list(g.nodes) and list(neg.users) == [fc2]
    g.lint()
    gm.recompile()
    x = torch.randn(2, 8)
    assert_close(gm(x), m.fc2(-m.relu(m.fc1(x))))
    assert "neg = torch.neg(relu)" in gm.code
    with g.inserting_before(fc2):
        extra = g.call_method("clone", (neg,))
    fc2.replace_input_with(neg, extra)
    assert fc2.all_input_nodes == [extra] and extra.users == {fc2: None}
    g.lint()
    fc2.args = (neg,)  # setting args updates use-lists
    assert extra.users == {} and fc2 in neg.users
    g.erase_node(extra)
    g.lint()
    assert "extra" not in str(g)


def test_graph_building_and_printing():
    g = Graph()
    x = g.placeholder("x")
    w = g.get_attr("fc1.weight")
    mm = g.call_function(operator.matmul, (x, w))
    r1 = g.call_function(torch.relu, (mm,))
    r2 = g.call_function(torch.relu, (r1,))
    v = g.call_method("view", (r2, 2, -1))
    idx = g.call_function(operator.getitem, (v, (slice(None), slice(1, 3))))
    g.output((idx, {"dt": torch.float32, "e": Ellipsis, "i": float("inf"), "s": slice(None, 2)}))
    g.lint()
    assert [n.name for n in g.nodes] == ["x", "fc1_weight", "matmul", "relu", "relu_1", "view", "getitem", "output"]
    assert r1.format_node() == "%relu : [num_users=1] = call_function[target=torch.relu](args = (%matmul,), kwargs = {})"
    text = str(g)
    assert text.startswith("graph(x):") and "get_attr[target=fc1.weight]" in text
    code = g.python_code()
    assert isinstance(code, str) and "view = relu_1.view(2, -1)" in code and "getitem = view[:, 1:3]" in code
    assert "self.fc1.weight" in code and "torch.float32" in code and "float('inf')" in code
    root = nn.Module()
    root.fc1 = nn.Linear(4, 3)
    gm = GraphModule(root, g)
    out, extras = gm(torch.randn(5, 3))
    assert out.shape == (2, 2) and extras == {"dt": torch.float32, "e": ..., "i": math.inf, "s": slice(None, 2)}
    gm2 = GraphModule({"fc1.weight": torch.randn(3, 4)}, g.copy())
    assert gm2(torch.randn(5, 3))[0].shape == (2, 2)
    table = g.tabular()
    assert table.splitlines()[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert "class GraphModule(torch.nn.Module):" in gm.print_readable(print_output=False)
    assert "def forward" in str(gm)


def test_lint_catches_broken_graphs():
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(torch.relu, (x,))
    g.output(a)
    g.lint()
    with g.inserting_before(a):
        b = g.call_function(torch.neg, (x,))
    a.args = (b,)
    g.lint()
    b.prepend(a)  # move a before its input
    with pytest.raises(GraphError, match="not defined earlier"):
        g.lint()
    b.append(a)
    g.lint()
    g.output(a)
    with pytest.raises(GraphError, match="after the output"):
        g.lint()


def test_map_arg_and_unique_names():
    g = Graph()
    x = g.placeholder("x")
    y = g.placeholder("input")  # a builtin name gets a suffix
    assert y.name == "input_1"
    nested = (x, [y, {"k": slice(x, None, 2)}], 3)
    assert map_arg(nested, lambda n: n.name) == ("x", ["input_1", {"k": slice("x", None, 2)}], 3)
    names = [g.call_function(torch.relu, (x,)).name for _ in range(3)]
    assert names == ["relu", "relu_1", "relu_2"]
    assert g.get_attr("layers.0.weight").name == "layers_0_weight"
    assert g.call_function(getattr, (x, "shape")).name == "getattr_1"


def test_graph_module_copies_by_reference_and_deepcopy():
    m = MLP()
    gm = symbolic_trace(m)
    assert gm.fc1 is m.fc1 and gm.fc2.weight is m.fc2.weight
    gm2 = copy.deepcopy(gm)
    x = torch.randn(2, 8)
    assert gm2.fc1 is not m.fc1
    assert_close(gm2(x), m(x))
    assert type(gm).__name__ == "MLP" and type(gm) is not type(gm2)


# ---- interpreter and shape propagation ---------------------------------------------------------
def test_interpreter_override_and_error():
    m = MLP()
    gm = symbolic_trace(m)

    class Counting(Interpreter):
        calls = 0

        def call_module(self, target, args, kwargs):
            Counting.calls += 1
            return super().call_module(target, args, kwargs)

    x = torch.randn(2, 8)
    assert_close(Counting(gm).run(x), m(x))
    assert Counting.calls == 3
    with pytest.raises(InterpreterError) as info:
        Interpreter(gm).run(torch.randn(2, 7))
    msg = str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert f"{THIS_FILE}:{line_of('@mlp-fc1')}:" in msg and "self.fc1(x)" in msg and "fix:" in msg


def test_shape_prop_cnn():
    m = CNN(use_view=True)
    gm = symbolic_trace(m)
    out = propagate_shapes(gm, torch.randn(2, 3, 16, 16))
    assert out == TensorMeta((2, 10), torch.float32)
    by_name = {n.name: n for n in gm.graph.nodes}
    assert by_name["x"].meta["tensor_meta"] == TensorMeta((2, 3, 16, 16), torch.float32)
    assert by_name["conv1"].meta["tensor_meta"].shape == (2, 8, 16, 16)
    assert by_name["pool"].meta["tensor_meta"].shape == (2, 8, 8, 8)
    assert by_name["view"].meta["tensor_meta"].shape == (2, 64)
    assert by_name["size"].meta["value"] == 2 and "tensor_meta" not in by_name["size"].meta
    assert m.conv1.weight.device.type == "cpu"  # parameters untouched


def test_shape_prop_values_and_structures():
    gm = symbolic_trace(MethodsAndAttrs())
    out = propagate_shapes(gm, torch.randn(2, 3, 4))
    assert out[0] == TensorMeta((2, 12), torch.float32) and out[2] is None and out[5] is None
    by_target = {n.target: n for n in gm.graph.nodes if n.op == "call_method"}
    assert by_target["size"].meta["value"] == 2
    shape_nodes = [n for n in gm.graph.nodes if n.target is getattr and n.args[1] == "dtype"]
    assert shape_nodes[0].meta["value"] == torch.float32
    gm2 = symbolic_trace(Outputs())
    out2 = propagate_shapes(gm2, torch.randn(3))
    assert out2["pair"] == (TensorMeta((3,), torch.float32), [TensorMeta((3,), torch.float32)] * 2)
    gm3 = symbolic_trace(NestedInputs())
    assert propagate_shapes(gm3, (torch.randn(3), [torch.randn(3)]), {"scale": torch.randn(3), "shift": 1}) \
        == TensorMeta((3,), torch.float32)
    gm4 = symbolic_trace(EncoderBlock())
    assert propagate_shapes(gm4, torch.randn(2, 5, 16)) == TensorMeta((2, 5, 16), torch.float32)
    assert [n for n in gm4.graph.nodes if n.target is getattr][0].meta["value"] == torch.Size([2, 5, 16])


# ---- source locations --------------------------------------------------------------------------
def test_source_locations():
    gm = symbolic_trace(Outer())
    nodes = {n.name: n for n in gm.graph.nodes}
    relu = nodes["relu"].meta["source"]
    assert isinstance(relu, SourceLocation)
    assert relu.file == THIS_FILE and relu.line == line_of("@inner-relu") and relu.module_path == "inner"
    assert "torch.relu(self.lin(x))" in relu.source_line and relu.col > 1
    assert str(relu) == f"{THIS_FILE}:{relu.line}:{relu.col}"
    assert nodes["inner_lin"].meta["source"].module_path == "inner"
    sig = nodes["sigmoid"].meta["source"]
    assert sig.line == line_of("@outer-sigmoid") and sig.module_path == ""
    assert sig.col == sig.source_line.index("torch.sigmoid") + 1
    assert nodes["relu_1"].meta["source"].module_path == "wrapper.0"
    assert nodes["relu_1"].meta["source"].line == line_of("@inner-relu")
    assert nodes["add"].meta["source"].line == line_of("@outer-add")
    assert all(n.meta["source"].file == THIS_FILE for n in gm.graph.nodes)


def test_public_api():
    for name in ("Graph", "Node", "Proxy", "Tracer", "symbolic_trace", "wrap", "GraphModule", "Interpreter",
                 "TensorMeta", "propagate_shapes", "SourceLocation", "TraceError", "InterpreterError",
                 "GraphError", "map_arg"):
        assert hasattr(ff, name), name
    from fxla.errors import FxlaError
    assert issubclass(TraceError, FxlaError) and issubclass(GraphError, FxlaError)
    assert issubclass(InterpreterError, FxlaError)
    assert isinstance(next(iter(symbolic_trace(MLP()).graph.nodes)), Node)
    assert Proxy.__hash__ is object.__hash__


def test_size_varargs_with_symbolic_sizes():
    # torch's argument parser rejects a Proxy among several size ints before __torch_function__ runs; the
    # tracer packs the sizes into one tuple while tracing and restores torch.zeros & co. afterwards.
    def fn(x):
        n = x.shape[0]
        return torch.zeros(n, 4) + torch.ones(n, 1), torch.empty(2, n).shape, torch.rand(n, 3).shape

    original = torch.zeros
    gm = symbolic_trace(fn)
    assert torch.zeros is original
    assert [n.args for n in gm.graph.nodes if n.target is torch.zeros][0][0][1] == 4
    x = torch.randn(5, 2)
    got = gm(x)
    assert torch.equal(got[0], torch.ones(5, 4)) and got[1] == (2, 5) and got[2] == (5, 3)
    assert torch.zeros(2, 3).shape == (2, 3)       # outside tracing: the real function


def test_unpacking_results_of_known_arity():
    # (values, indices) pairs have a known length even without example inputs: star-unpacking and len() trace
    def fn(x):
        parts = (*torch.sort(x, 1),)
        top = [*x.topk(2)]
        n = len(torch.max(x, 0))
        return parts[0] + parts[1], top[1], torch.max(x, x).shape[0] + n

    gm = symbolic_trace(fn)
    x = torch.randn(3, 4)
    got, want = gm(x), fn(x)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]) and got[2] == want[2] == 5
    with pytest.raises(TraceError, match="cannot iterate over"):
        symbolic_trace(lambda x: (*torch.max(x, x),))      # elementwise max: one tensor, length unknown
