"""Symbolic dimensions (issue #21, item 1): ``fxla.compile(model, dynamic=...)`` lowers one polymorphic fxla
program for every size of the marked dims (``?`` dims, ``fxla.dim_size`` and size arithmetic), refines it per
call, and checks the constraints it relies on (api/symbolic.py, frontend/symbolic.py, lowering/symbolic.py,
lowering/refine.py).  The oracle is eager PyTorch at every size."""
from __future__ import annotations

import logging

import pytest
import torch
import torch.nn as nn

import fxla
from fxla.frontend import symbolic_trace
from fxla.frontend.passes.prepare import prepare_graph
from fxla.frontend.symbolic import SymbolicShapes
from fxla.lowering import lower_to_fxla
from fxla.lowering.refine import refine
from support import relu_static_only


class Attention(nn.Module):
    """Shapes from sizes: a view by the symbolic length, transposes, matmuls, softmax, arange(seq), a slice."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.ln = nn.LayerNorm(16)

    def forward(self, x):
        b, s, d = x.shape
        h = self.ln(self.lin(x)).view(b, s, 4, 4).transpose(1, 2)
        a = torch.softmax(h @ h.transpose(-1, -2) / 2.0, -1) @ h
        return a.transpose(1, 2).reshape(b, s, d) + torch.arange(s).float()[:, None] + x[:, -1:, :]


def _model():
    torch.manual_seed(0)
    return Attention().eval().requires_grad_(False)


def test_one_lowering_for_every_size_equals_eager():
    m = _model()
    fast = fxla.compile(m, dynamic={"x": {1: fxla.Dim("seq", max=64)}})
    for n in (5, 7, 12, 7, 33):
        x = torch.randn(2, n, 16)
        torch.testing.assert_close(fast(x), m(x), rtol=1e-5, atol=1e-5)
    assert fast._dynamic.lowerings == 1        # traced and lowered once ...
    assert fast.cache_size == 4                # ... and compiled in XLA once per size


def test_the_polymorphic_program_carries_dynamic_dims_and_size_ops():
    x = torch.randn(2, 7, 16)
    gm = symbolic_trace(_model())
    symbols = SymbolicShapes({0: {1: fxla.Dim("seq")}}, [x])
    with symbols.tracing():
        prepared = prepare_graph(gm, tuple(symbols.fake_leaves))
    program = lower_to_fxla(prepared, symbols=symbols)
    text = program.text()
    assert "%arg0: tensor<2x?x16xf32>" in text and "-> tensor<2x?x16xf32>" in text
    assert "fxla.dim_size %arg0 {dim = 1}" in text
    # view(b, s, ...) and arange(s): the symbolic attribute, then the ? result dims' sizes
    assert 'fxla.sym = ["shape.1", "result0.1"]' in text and 'fxla.sym = ["length", "result0.0"]' in text
    refined = refine(program, [(2, 9, 16)])
    static = refined.text()
    assert "?" not in static and "fxla.sym" not in static and "dim_size" not in static
    assert "tensor<2x9x16xf32>" in static and "tensor<9xi64>" in static


def test_dim_bounds_and_divisibility_are_checked():
    m = _model()
    fast = fxla.compile(m, dynamic={"x": {1: fxla.Dim("seq", max=64, multiple_of=4)}})
    fast(torch.randn(2, 8, 16))
    with pytest.raises(fxla.ShapeConstraintError, match=r"x.size\(1\) \(Dim 'seq'\) = 65 > max 64"):
        fast(torch.randn(2, 65, 16))
    with pytest.raises(fxla.ShapeConstraintError, match="10 is not a multiple of 4"):
        fast(torch.randn(2, 10, 16))


def test_one_dim_for_two_inputs_must_agree():
    def f(ids, mask):
        return ids * mask
    seq = fxla.Dim("seq")
    fast = fxla.compile(f, dynamic={"ids": {1: seq}, "mask": {1: seq}})
    a, b = torch.randn(2, 6), torch.randn(2, 6)
    torch.testing.assert_close(fast(a, b), a * b)
    with pytest.raises(fxla.ShapeConstraintError, match=r"one Dim 'seq' have different sizes: ids.size\(1\) = 6, "
                                                         r"mask.size\(1\) = 7"):
        fast(torch.randn(2, 6), torch.randn(2, 7))


def _split_heads(x):
    b, s, d = x.shape
    return x.view(b, s // 4, 4 * d)            # needs s % 4 == 0 (line checked by the test below)


def test_a_constraint_the_trace_relied_on_names_itself_and_its_line():
    fast = fxla.compile(_split_heads, dynamic={"x": {1: fxla.Dim("seq")}})
    x = torch.randn(2, 8, 3)
    torch.testing.assert_close(fast(x), _split_heads(x))
    y = torch.randn(2, 12, 3)
    torch.testing.assert_close(fast(y), _split_heads(y))
    with pytest.raises(fxla.ShapeConstraintError) as info:
        fast(torch.randn(2, 10, 3))
    text = str(info.value)
    assert "seq = 10" in text and "seq" in text.splitlines()[0] and "relies on" in text
    assert "test_symbolic_dims.py" in text and "x.view(b, s // 4, 4 * d)" in text
    assert fast._dynamic.lowerings == 1
    with pytest.raises(RuntimeError):         # (eager refuses that size too)
        _split_heads(torch.randn(2, 10, 3))


def test_split_heads_numerics_at_every_valid_size():
    fast = fxla.compile(_split_heads, dynamic={"x": {1: fxla.Dim("seq", multiple_of=4)}})
    for n in (4, 8, 20):
        x = torch.randn(2, n, 3)
        torch.testing.assert_close(fast(x), _split_heads(x))
    assert fast._dynamic.lowerings == 1


class Features(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(7, 3)

    def forward(self, x):
        return self.fc(x).relu()


def test_a_named_dim_an_op_must_fix_is_an_error_naming_the_op():
    fast = fxla.compile(Features().eval(), dynamic={"x": {1: fxla.Dim("features")}})
    with pytest.raises(fxla.ShapeConstraintError, match="Dim 'features' cannot stay symbolic: .*needs it to be 7"):
        fast(torch.randn(2, 7))


def test_an_op_fxla_cannot_lower_is_that_error_under_a_named_dim():
    fast = fxla.compile(lambda x: torch.as_strided(x, (2, 2), (1, 1)), dynamic={"x": {2: fxla.Dim("h")}})
    with pytest.raises(fxla.UnsupportedOpError, match="function torch.as_strided"):
        fast(torch.randn(2, 3, 5, 5))


def test_a_rule_that_cannot_take_symbolic_sizes_is_a_dim_error_naming_it(monkeypatch, caplog):
    relu_static_only(monkeypatch)
    fast = fxla.compile(lambda x: torch.relu(x) * 2, dynamic={"x": {1: fxla.Dim("n")}})
    with pytest.raises(fxla.ShapeConstraintError, match="cannot be lowered once for every size of its Dims: "
                                                        "relu: a . size for the test"):
        fast(torch.randn(2, 5))
    loose = fxla.compile(lambda x: torch.relu(x) * 2, dynamic=True)      # (dynamic=True: lowered per size)
    with caplog.at_level(logging.INFO, logger="fxla"):
        for n in (5, 6):
            x = torch.randn(2, n)
            torch.testing.assert_close(loose(x), torch.relu(x) * 2)
    # the failed polymorphic lowering is one phase of the first signature's compile (its record was dropped)
    assert "no polymorphic program for symbolic dims" in caplog.text
    assert "why: the first call; phases: polymorphic attempt " in caplog.text


def test_dynamic_true_keeps_the_dims_an_op_fixes_fixed():
    m = Features().eval().requires_grad_(False)
    fast = fxla.compile(m, dynamic=True)
    for b in (2, 3, 9):
        x = torch.randn(b, 7)
        torch.testing.assert_close(fast(x), m(x))
    assert fast._dynamic.lowerings == 1


def test_sizes_0_and_1_are_compiled_for_their_shapes(caplog):
    m = _model()
    fast = fxla.compile(m, dynamic={"x": {1: fxla.Dim("seq")}})
    with caplog.at_level(logging.INFO, logger="fxla.compile"):
        x = torch.randn(2, 1, 16)
        torch.testing.assert_close(fast(x), m(x), rtol=1e-5, atol=1e-5)
    assert "x.size(1) = 1 not symbolic (sizes 0 and 1 never are)" in caplog.text
    assert fast._dynamic.lowerings == 0


def test_an_int_argument_can_be_a_dims_size():
    def f(x, n):
        return x[:, :n - 1] * 2
    seq = fxla.Dim("seq")
    fast = fxla.compile(f, dynamic={"x": {1: seq}, "n": seq})
    for k in (5, 9):
        x = torch.randn(3, k)
        torch.testing.assert_close(fast(x, k), f(x, k))
    assert fast._dynamic.lowerings == 1
    with pytest.raises(fxla.ShapeConstraintError, match=r"n = 6, but it is the size of Dim 'seq', x.size\(1\) = 5"):
        fast(torch.randn(3, 5), 6)


def test_option_errors():
    m = _model()
    with pytest.raises(fxla.OptionError, match="dynamic='yes' is not supported"):
        fxla.compile(m, dynamic="yes")
    with pytest.raises(fxla.OptionError, match=r"marks the int argument\(s\) \['n'\] as a Dim's size, but "
                       r"concrete_shapes=True makes a Python int a constant"):
        fxla.compile(lambda x, n: x * n, dynamic={"x": {1: fxla.Dim("seq")}, "n": fxla.Dim("seq")},
                     concrete_shapes=True)
    with pytest.raises(fxla.OptionError, match=r"names \['y'\], which the traced program does not take"):
        fxla.compile(m, dynamic={"y": {1: fxla.Dim("seq")}}, concrete_shapes=True)
    with pytest.raises(fxla.OptionError, match=r"is not \{dim index: fxla.Dim\}"):
        fxla.compile(m, dynamic={"x": {1: "seq"}})
    fast = fxla.compile(m, dynamic={"y": {1: fxla.Dim("seq")}})
    with pytest.raises(fxla.OptionError, match=r"names \['y'\], which the traced program does not take"):
        fast(torch.randn(2, 5, 16))
    with pytest.raises(ValueError, match="need 2 <= min <= max"):
        fxla.Dim("seq", min=3, max=2)
    with pytest.raises(fxla.FxlaError, match=r"(?s)Dim\('seq', min=1\): min must be at least 2\n  at .*"
                                             r"test_symbolic_dims.py.*why: sizes 0 and 1 are never symbolic"):
        fxla.Dim("seq", min=1)                     # (a ValueError too)


def test_torch_compile_lowers_each_symbolic_graph_once(caplog):
    torch._dynamo.reset()
    m = _model()
    fn = torch.compile(m, backend="fxla", dynamic=True)
    with caplog.at_level(logging.INFO, logger="fxla.compile"):
        for n in (5, 6, 9, 13):
            x = torch.randn(2, n, 16)
            torch.testing.assert_close(fn(x), m(x), rtol=1e-5, atol=1e-5)
    torch._dynamo.reset()
    assert caplog.text.count("polymorphic program #") == 1
    assert caplog.text.count("refine") >= 4


def test_dynamic_true_keeps_size_1_dims_static_and_the_rest_symbolic():
    m = _model()
    fast = fxla.compile(m, dynamic=True)
    for n in (5, 9, 17):                         # batch 1: a broadcast-sized dim, static; the length symbolic
        x = torch.randn(1, n, 16)
        torch.testing.assert_close(fast(x), m(x), rtol=1e-5, atol=1e-5)
    assert fast._dynamic.lowerings == 1


@pytest.mark.parametrize("fn", [lambda x: torch.roll(x, x.shape[1] // 3, 1),
                                lambda x: x.roll((-(x.shape[1] // 2) - 1, 1), (1, 0))],
                         ids=["shift_of_size", "negative_shifts_of_sizes"])
def test_roll_by_a_shift_computed_from_a_size(fn):
    """A SymInt shift (once a raw TypeError in the rule: ``tuple(SymInt)``) is size arithmetic of one program."""
    fast = fxla.compile(fn, dynamic={"x": {1: fxla.Dim("n", max=64)}})
    for n in (10, 7, 9, 12, 3):
        x = torch.randn(3, n)
        torch.testing.assert_close(fast(x), fn(x), rtol=0, atol=0)
    assert fast._dynamic.lowerings == 1


INDEXING = {"from_the_end": lambda x: x[..., -x.shape[-1]:] * 2, "twice_from_the_end": lambda x: x[:, -2 * x.shape[1]:],
            "int_of_size": lambda x: x[:, x.shape[1] // 2], "negative_int_of_size": lambda x: x[:, -(x.shape[1] // 2)],
            "middle_of_sorted": lambda x: x.sort(1).values[:, x.shape[1] // 2],
            "two_ints": lambda x: x[x.shape[1] // 4, x.shape[1] // 2 - 1, ...]}


@pytest.mark.parametrize("name", list(INDEXING))
def test_indexing_by_sizes_is_one_program(name, fresh_dynamo):
    """``x[..., -n:]`` (once 'slice [-s69:s69:1] is not a forward slice') and an int index that is a SymInt
    (``x[:, n // 2]``: once refused, and torch's own indexing fixed the size) lower once for every size."""
    fn = INDEXING[name]
    named = fxla.compile(fn, dynamic={"x": {1: fxla.Dim("n", max=64)}})
    loose = fxla.compile(fn, dynamic=True)
    dynamo = torch.compile(fn, backend="fxla", dynamic=True)
    for n in (10, 7, 9, 12, 3, 2):
        x = torch.randn(5, n, 3)
        for fast in (named, loose, dynamo):
            torch.testing.assert_close(fast(x), fn(x), rtol=0, atol=0)
    assert named._dynamic.lowerings == 1


def test_an_int_index_of_a_size_must_lie_in_its_dim():
    fn = lambda x: x[:, 2 * x.shape[1] // 3 + 5]      # noqa: E731 (in range from n = 16 on)
    fast = fxla.compile(fn, dynamic={"x": {1: fxla.Dim("n", max=64)}})
    for n in (20, 16, 30):
        x = torch.randn(3, n)
        torch.testing.assert_close(fast(x), fn(x), rtol=0, atol=0)
    with pytest.raises(IndexError):
        fn(torch.randn(3, 10))
    with pytest.raises(fxla.ShapeConstraintError, match=r"\(n = 10\) break the constraint .*\+ 5 < n"):
        fast(torch.randn(3, 10))


def test_a_refused_slice_names_the_dim_not_an_internal_symbol():
    fast = fxla.compile(lambda x: x[:, torch.sym_max(x.shape[1] - 20, -3):], dynamic={"x": {1: fxla.Dim("n")}})
    with pytest.raises(fxla.ShapeConstraintError, match=r"slice \[Min\(n, Max\(-3, n - 20\)\):n:1\] .* size n "):
        fast(torch.randn(3, 10))


def test_a_dim_pinned_by_a_guard_is_the_documented_first_compile_error():
    """Tensor.unfold's window count and float math on a size pin a Dim by an Eq guard over it alone (it holds at one
    or two sizes): the first compile names the op, as for a size read as a number, instead of every later size
    failing an Eq constraint that said eager would fail; dynamic=True lowers such a program per size, and a
    constraint that holds at many sizes (n % 4 == 0) stays a constraint."""
    def windows(x):
        return x.unfold(1, 3, 2).sum(-1)

    def scaled(x):
        return x / (x.shape[1] - 0.5)

    for fn, op in ((windows, "unfold"), (scaled, "truediv")):
        fast = fxla.compile(fn, dynamic={"x": {1: fxla.Dim("n", max=64)}})
        with pytest.raises(fxla.ShapeConstraintError, match=rf"Dim 'n' cannot stay symbolic: %{op}"):
            fast(torch.randn(3, 10))
        loose = fxla.compile(fn, dynamic=True)
        for n in (10, 11, 14):
            x = torch.randn(3, n)
            torch.testing.assert_close(loose(x), fn(x))

    for width, sizes in ((4, (8, 12, 20)), (64, (128, 192, 64)), (100, (200, 300))):     # (n % width == 0)
        def rows(x, width=width):
            return x.view(x.shape[0], -1, width).sum(-1)

        fast = fxla.compile(rows, dynamic={"x": {1: fxla.Dim("n", max=4096)}})
        for n in sizes:
            x = torch.randn(3, n)
            torch.testing.assert_close(fast(x), rows(x))
        with pytest.raises(fxla.ShapeConstraintError):
            fast(torch.randn(3, sizes[0] + 2))


def _add(x, y):
    return x + y


def test_dim_specs_that_cannot_be_meant_are_errors():
    """Two Dims of one name with different ranges (one symbol, whose range was the first's), a float bound, a
    tuple spec with an entry count other than the tensor's dims."""
    with pytest.raises(fxla.FxlaError, match="two Dims named 's' differ"):
        fxla.compile(_add, dynamic={"x": {1: fxla.Dim("s", max=8)}, "y": {1: fxla.Dim("s", max=16)}})
    with pytest.raises(fxla.FxlaError, match="min, max and multiple_of are ints"):
        fxla.Dim("s", max=10.5)
    import numpy as np
    assert fxla.Dim("s", max=np.int64(64)).max == 64 and type(fxla.Dim("s", max=np.int64(64)).max) is int
    fast = fxla.compile(lambda x: x * 2, dynamic={"x": (None, fxla.Dim("s"), None)})
    with pytest.raises(fxla.FxlaError, match="a tuple of 3 entries, but x has 2 dims"):
        fast(torch.randn(2, 4))
    same = fxla.Dim("s", max=16)
    both = fxla.compile(_add, dynamic={"x": {1: same}, "y": {1: fxla.Dim("s", max=16)}})
    torch.testing.assert_close(both(torch.ones(2, 12), torch.ones(2, 12)), torch.full((2, 12), 2.0))
