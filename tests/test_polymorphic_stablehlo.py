"""Polymorphic StableHLO (issue #21, item 1): a polymorphic fxla program is converted once into StableHLO that
keeps its ``?`` dims (sizes from ``stablehlo.get_dimension_size`` arithmetic, StableHLO's dynamic ops), and each
call's sizes only refine it with StableHLO's own shape refinement (jaxlib's ``refine_polymorphic_shapes``, as
``jax.export`` does) before XLA compiles it (lowering/to_stablehlo.py ``convert_polymorphic``, lowering/refine.py
``refine_stablehlo``, api/symbolic.py).  The oracle is eager PyTorch at every size."""
from __future__ import annotations

import io
import os
import logging

import pytest
import torch

import fxla
from fxla.dialects.fxla import ops
from fxla.dialects.fxla.symbolic import UNKNOWN, NotPolymorphicError
from fxla.frontend import symbolic_trace
from fxla.frontend.passes.prepare import prepare_graph
from fxla.frontend.symbolic import SymbolicShapes
from fxla.lowering import lower_to_fxla
from fxla.lowering.errors import LoweringError
from fxla.lowering.passes import lower_polymorphic_to_stablehlo
from fxla.lowering.patterns.builder import PATTERNS
from fxla.lowering.refine import refine_stablehlo
from test_symbolic_dims import _model, _split_heads


def _polymorphic(fn, x, dims):
    symbols = SymbolicShapes(dims, [x])
    with symbols.tracing():
        prepared = prepare_graph(symbolic_trace(fn), tuple(symbols.fake_leaves))
    return lower_to_fxla(prepared, symbols=symbols)


def _programs(fast):
    return [p for variants in fast._dynamic.programs.values() for p in variants]


def test_the_stablehlo_keeps_the_dynamic_dims_and_refines_to_every_size():
    program = _polymorphic(_model(), torch.randn(2, 7, 16), {0: {1: fxla.Dim("seq")}})
    module = lower_polymorphic_to_stablehlo(program.module)
    text = module.operation.get_asm()
    assert "tensor<2x?x16xf32>" in text and "fxla." not in text
    for op in ("get_dimension_size", "dynamic_reshape", "dynamic_broadcast_in_dim", "dynamic_iota",
               "real_dynamic_slice"):
        assert f"stablehlo.{op}" in text, op
    buffer = io.BytesIO()
    module.operation.write_bytecode(buffer)
    params = [(16,), (16, 16), (16,), (16,)]
    for n in (2, 9, 40):
        refined = refine_stablehlo(buffer.getvalue(), [(2, n, 16)] + params).operation.get_asm()
        assert "?" not in refined and "dynamic" not in refined
        assert f"-> tensor<2x{n}x16xf32>" in refined


def test_each_size_refines_the_stablehlo_and_equals_eager():
    m = _model()
    fast = fxla.compile(m, dynamic={"x": {1: fxla.Dim("seq", max=64)}})
    for n in (5, 7, 12, 33):
        x = torch.randn(2, n, 16)
        torch.testing.assert_close(fast(x), m(x), rtol=1e-5, atol=1e-5)
    (poly,) = _programs(fast)
    assert poly.stablehlo is not None               # (the sizes refined the polymorphic StableHLO)
    assert fast._dynamic.lowerings == 1 and fast.cache_size == 4


def _mean_var(x):
    return x.mean(1), x.var(1), torch.logsumexp(x, 1)


def _pool_gather_matmul(x):
    y = torch.nn.functional.avg_pool1d(x, 3, 2, 1) * 2
    return (y.index_select(1, torch.tensor([0, 2])), x[0] @ x[1].transpose(0, 1), torch.sort(x, 2).values,
            torch.cumsum(x, 2), torch.cummax(x, 2), torch.logcumsumexp(x, 2),
            torch.topk(x, 2, dim=2), torch.nn.functional.pad(x, (1, 2)), torch.nn.ZeroPad1d((2, 0))(x))


# a mean over the ? dim divides by its size as a value; `s // 4` is a select on compare results (StableHLO's
# refinement folds those, not xor); floor-mode pools over ? dims, a gather of a table with a ? dim, a matmul of
# ? sizes, a sort and a top-k along one, constant padding of one (F.pad's shape by arithmetic: torch's kernel
# reads the sizes as ints), cumulative scans along one (StableHLO's dynamic_reduce_window)
@pytest.mark.parametrize("fn, shape, sizes", [(_mean_var, (2, 0, 4), (3, 6, 17)), (_split_heads, (2, 0, 3), (8, 12, 20)),
                                              (_pool_gather_matmul, (2, 3, 0), (5, 8, 13))],
                         ids=["mean_var", "floor_division", "pool_gather_matmul"])
def test_ops_over_symbolic_dims_refine_and_equal_eager(fn, shape, sizes):
    dim = shape.index(0)
    fast = fxla.compile(fn, dynamic={"x": {dim: fxla.Dim("n")}})
    for n in sizes:
        x = torch.randn(*(n if d == 0 else d for d in shape))
        torch.testing.assert_close(fast(x), fn(x))
    (poly,) = _programs(fast)                       # (one polymorphic program for every size: no dim fixed)
    assert poly.stablehlo is not None


def _pools(x):
    F = torch.nn.functional
    return (F.max_pool2d(x, 2, ceil_mode=True), F.max_pool2d(x, 3, 2, 1, ceil_mode=True),
            F.max_pool2d(x, 2, 2, 0, 2, ceil_mode=True), F.avg_pool2d(x, 3, 2, ceil_mode=True),
            F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
            F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
            F.avg_pool1d(x.flatten(2), 3, 2, 1, ceil_mode=True, count_include_pad=False),
            F.max_pool2d(x, 3, 2, 1, return_indices=True), F.max_pool2d(x, 2, 2, 0, ceil_mode=True, return_indices=True))


def test_ceil_mode_pools_and_position_dependent_divisors_over_symbolic_dims():
    """Ceil-mode windows pad the high end to where the last window ends (a size expression: StableHLO's
    dynamic_reduce_window); average pools' divisors that vary with the window's position are computed from an
    iota of window positions; max pools with indices number positions by the ? sizes."""
    fast = fxla.compile(_pools, dynamic={"x": {2: fxla.Dim("h"), 3: fxla.Dim("w")}})
    for h, w in ((6, 8), (7, 9), (11, 5), (8, 13)):
        x = torch.randn(2, 3, h, w)
        torch.testing.assert_close(fast(x), _pools(x))
    (poly,) = _programs(fast)
    assert poly.stablehlo is not None and b"stablehlo.dynamic_reduce_window" in poly.stablehlo


def test_sizes_that_do_not_fit_the_program_are_an_error():
    program = _polymorphic(_split_heads, torch.randn(2, 8, 3), {0: {1: fxla.Dim("seq")}})
    buffer = io.BytesIO()
    lower_polymorphic_to_stablehlo(program.module).operation.write_bytecode(buffer)
    with pytest.raises(LoweringError, match="does not fit"):
        refine_stablehlo(buffer.getvalue(), [(2, 8, 4)])


def _refuse_polymorphic(monkeypatch, opdef):
    """``opdef``'s pattern refusing ? dims in its result, as a pattern that needs a ? size as a number does (every
    fxla op the op suite reaches has a polymorphic form now)."""
    pattern = PATTERNS[opdef]

    def refuse(b, *operands, **attrs):
        if UNKNOWN in b.result.shape:
            raise NotPolymorphicError(f"{opdef.name}: refused for the test")
        return pattern(b, *operands, **attrs)
    monkeypatch.setitem(PATTERNS, opdef, refuse)


@pytest.fixture
def rng_without_polymorphic_form(monkeypatch):
    _refuse_polymorphic(monkeypatch, ops.rng)


def test_an_op_without_a_polymorphic_form_is_converted_per_size(caplog, rng_without_polymorphic_form):
    fast = fxla.compile(_random_draw, dynamic={"x": {2: fxla.Dim("h")}})
    with caplog.at_level(logging.INFO, logger="fxla"):
        for n in (5, 8):
            x = torch.randn(2, 3, n, 8)
            torch.testing.assert_close(fast(x), _random_draw(x))
    assert "no polymorphic StableHLO" in caplog.text and "'fxla.rng' op has no polymorphic" in caplog.text
    assert _programs(fast)[0].stablehlo is None and fast._dynamic.lowerings == 1


def _draws(x):
    F = torch.nn.functional
    return (torch.rand_like(x), torch.randn(x.shape[0], 3, x.shape[2], dtype=torch.float64),
            torch.randint(0, 7, x.shape[1:]), F.dropout(x, 0.5, training=True), torch.bernoulli(torch.sigmoid(x)))


def test_random_ops_of_symbolic_shapes_draw_what_the_static_program_draws():
    """The ? shape is StableHLO's dynamic_rng_bit_generator, which the refinement turns into the static
    program's rng_bit_generator: under the same torch.manual_seed, the same numbers at every size."""
    poly, static = fxla.compile(_draws, dynamic={"x": {2: fxla.Dim("h")}}), fxla.compile(_draws)
    for n in (3, 5, 17):
        x = torch.randn(2, 3, n)
        torch.manual_seed(n)
        drawn = poly(x)
        torch.manual_seed(n)
        for a, b in zip(drawn, static(x)):
            assert a.shape[-1] == n and a.dtype == b.dtype and torch.equal(a, b)
    (program,) = _programs(poly)
    assert program.stablehlo is not None and poly._dynamic.lowerings == 1


def _diagonals(x):
    return torch.einsum("bii->bi", x), torch.einsum("bii,bj->bij", x, x[:, 0]), torch.einsum("bii->b", x)


def test_einsum_diagonals_over_symbolic_dims():
    fast = fxla.compile(_diagonals, dynamic={"x": {1: fxla.Dim("n"), 2: fxla.Dim("n")}})
    for n in (2, 5, 11):
        x = torch.randn(3, n, n)
        torch.testing.assert_close(fast(x), _diagonals(x))
    (program,) = _programs(fast)
    assert program.stablehlo is not None


def test_a_dynamic_size_cannot_be_used_as_a_number():
    for use in (lambda d: d * 2, lambda d: d + 1, lambda d: d // 2, lambda d: d > 3, lambda d: int(d),
                lambda d: max(d, 2), lambda d: 2 * d, lambda d: sum([d, 1])):
        with pytest.raises(NotPolymorphicError):
            use(UNKNOWN)
    assert UNKNOWN == -(1 << 63) and UNKNOWN != 3 and (2, UNKNOWN) == (2, -(1 << 63))


def test_torch_compile_symbolic_graphs_refine_the_stablehlo():
    lin = torch.nn.Linear(8, 8)
    def f(x):
        return torch.softmax(lin(x), -1) + torch.arange(x.shape[1]).float()[:, None]
    compiled = torch.compile(f, backend="fxla", dynamic=True)
    for n in (3, 5, 11):
        x = torch.randn(2, n, 8)
        torch.testing.assert_close(compiled(x), f(x), rtol=1e-5, atol=1e-5)


def test_a_size_the_stablehlo_does_not_refine_to_falls_back_to_fxla(monkeypatch, caplog):
    import fxla.pipeline as pipeline

    def refuse(polymorphic, refined):
        raise LoweringError("refused for the test")
    m = _model()
    fast = fxla.compile(m, dynamic={"x": {1: fxla.Dim("seq")}})
    fast(torch.randn(2, 5, 16))
    monkeypatch.setattr(pipeline, "refine_stablehlo_like", refuse)
    with caplog.at_level(logging.INFO, logger="fxla"):
        for n in (7, 9):
            x = torch.randn(2, n, 16)
            torch.testing.assert_close(fast(x), m(x), rtol=1e-5, atol=1e-5)
    assert "does not refine to" in caplog.text and "refused for the test" in caplog.text
    assert _programs(fast)[0].stablehlo is None          # (the fxla route from then on)


def test_an_artifact_without_polymorphic_stablehlo_loads_and_runs_every_size(tmp_path, monkeypatch):
    _refuse_polymorphic(monkeypatch, ops.slice)
    path = str(tmp_path / "square_slice")
    fxla.export(_square_slice, (torch.randn(2, 3, 6, 8),), path, dynamic_shapes={"x": {2: fxla.Dim("h", max=8)}})
    assert "polymorphic.stablehlo.mlirbc" not in os.listdir(path)
    loaded = fxla.load(path)
    for n in (3, 7):
        x = torch.randn(2, 3, n, 8)
        torch.testing.assert_close(loaded(x), _square_slice(x))


def _square_slice(x):
    return torch.einsum("bcii->bci", x[:, :, :, :x.shape[2]]) * 2


def _random_draw(x):
    return x * 2 + torch.rand_like(x) * 0


def test_a_ceil_division_of_sizes_refines_in_both_dialects(caplog):
    """math.ceil(s / 4) in a dynamo graph is -((-s) // 4): written with subtract (StableHLO's refinement folds it,
    not negate), and fxla's refinement evaluates it (it once stopped at the negation: an internal error)."""
    import math

    def first_quarter(x):
        return x[:, :math.ceil(x.shape[1] / 4)] * 2
    compiled = torch.compile(first_quarter, backend="fxla", dynamic=True)
    with caplog.at_level(logging.INFO, logger="fxla"):
        for n in (5, 8, 13):
            x = torch.randn(2, n)
            torch.testing.assert_close(compiled(x), first_quarter(x))
    assert "polymorphic program #1" in caplog.text
    assert "no polymorphic StableHLO" not in caplog.text and "does not refine" not in caplog.text


class _Pads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.reflect, self.circular = torch.nn.ReflectionPad2d(1), torch.nn.CircularPad2d((0, 1, 1, 0))

    def forward(self, x):
        F = torch.nn.functional
        return (F.pad(x, (2, 1, 1, 3), mode="reflect"), F.pad(x, (3, 2, 2, 1), mode="replicate"),
                F.pad(x, (1, 2, 2, 0), mode="circular"), F.pad(x, (-1, 2, 1, -2), mode="reflect"),
                F.pad(x, (2, -1, -1, 1), mode="circular"), F.pad(x, (0, 0, 2, 2), mode="replicate"),
                self.reflect(x), self.circular(x))


def test_reflect_replicate_and_circular_padding_over_symbolic_dims():
    """Each padded position's source (reflected about the edges, clamped, wrapped) is computed from an iota of
    the padded ? size, so one program serves every size (before: the sizes were fixed by the constant index
    lists); a size too small for reflect padding is refused as eager refuses it (a named Dim: the constraint
    the program relies on, at the op's line)."""
    pads = _Pads()
    fast = fxla.compile(pads, dynamic={"x": {2: fxla.Dim("h"), 3: fxla.Dim("w")}})
    for h, w in ((6, 8), (7, 5), (4, 13), (11, 4)):
        x = torch.randn(2, 3, h, w)
        torch.testing.assert_close(fast(x), pads(x), rtol=0, atol=0)
    (poly,) = _programs(fast)
    assert poly.stablehlo is not None and fast._dynamic.lowerings == 1
    x = torch.randn(2, 3, 3, 6)          # reflect padding 3 needs h >= 4 (torch: "must be less than the dim")
    with pytest.raises(RuntimeError):
        pads(x)
    with pytest.raises(fxla.FxlaError, match=r"break the constraint h - 1 >= 3 .*\n.*test_polymorphic_stablehlo"):
        fast(x)
    with pytest.raises(fxla.FxlaError, match="must be at most 2 for a size-3 dim"):     # (traced at that size)
        fxla.compile(pads, dynamic=True)(x)


def _aranges(x):
    n = x.size(1)
    return (x.index_select(1, torch.arange(n - 1, -1, -1)), x + torch.arange(n - 1, -1, -1),
            x[:, torch.arange(1, n, 2)], x * torch.arange(n * 2, n * 5, 3).float(),
            torch.arange(n, 0, -1, dtype=torch.int32).sum() + x.size(0))


def test_arange_from_symbolic_sizes_keeps_them_symbolic():
    """``arange`` whose start is a size expression (a reversed index list, a stride over the sizes) is the iota
    plus the start as a value; before, reading the start as a number fixed the size."""
    fast = fxla.compile(_aranges, dynamic={"x": {1: fxla.Dim("n")}})
    for n in (5, 8, 13):
        x = torch.randn(3, n)
        got, want = fast(x), _aranges(x)
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        assert got[-1].dtype == want[-1].dtype
    (poly,) = _programs(fast)
    assert poly.stablehlo is not None


class _Resize(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Upsample(scale_factor=2, mode="bilinear")
        self.near = torch.nn.UpsamplingNearest2d(scale_factor=2)

    def forward(self, x):
        F = torch.nn.functional
        return (F.interpolate(x, scale_factor=2), F.interpolate(x, scale_factor=0.5, mode="nearest-exact"),
                F.interpolate(x, scale_factor=1.5, mode="bilinear"),
                F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
                F.interpolate(x, scale_factor=(2, 0.5), mode="bicubic"),
                F.interpolate(x, size=(9, 4), mode="bilinear"), F.interpolate(x, size=(5, 7), mode="bicubic",
                                                                              align_corners=True),
                F.interpolate(x, scale_factor=3, mode="bilinear", recompute_scale_factor=True),
                F.interpolate(x.flatten(2), scale_factor=2, mode="linear"),
                F.interpolate(x[:, :, :3], size=x.shape[2:], mode="bilinear"),       # to another tensor's ? size
                F.interpolate(x, scale_factor=(1 / 3, 2 / 3), mode="bilinear"),     # non-dyadic, proven exact
                self.up(x), self.near(x))


def test_interpolation_over_symbolic_dims():
    """Nearest, linear, bilinear and bicubic resizing of ? dims (scale factors, sizes, align_corners, the nn
    modules): source coordinates from an iota of the output size and scales from the sizes as values, as torch's
    float32 kernels compute them; one polymorphic StableHLO program for every size (before: every dim fixed, the
    channels too, by torch's upsample kernels reading the sizes as doubles)."""
    resize = _Resize()
    fast = fxla.compile(resize, dynamic={"x": {1: fxla.Dim("c"), 2: fxla.Dim("h"), 3: fxla.Dim("w")}})
    for c, h, w in ((2, 6, 8), (3, 7, 5), (2, 12, 9)):
        x = torch.randn(2, c, h, w)
        for got, want in zip(fast(x), resize(x)):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=2e-6)
    (poly,) = _programs(fast)
    assert poly.stablehlo is not None
    # float64: coordinates and weights in double, as torch's opmath (before: float32 ones, 6e-7 off), both paths
    x = torch.randn(1, 2, 6, 5, dtype=torch.float64)
    for mode in ("bilinear", "bicubic"):
        resample = lambda x: torch.nn.functional.interpolate(x, scale_factor=1.7, mode=mode)    # noqa: E731
        for dynamic in (False, True):
            torch.testing.assert_close(fxla.compile(resample, dynamic=dynamic)(x), resample(x))


def _to_one(x):
    F = torch.nn.functional
    return tuple(F.interpolate(x, size=size, mode=mode, align_corners=True) for mode in ("bilinear", "bicubic")
                 for size in ((1, 1), (1, 3), (3, 1)))


def test_an_align_corners_output_of_size_1_over_a_symbolic_dim():
    """torch reads source 0 for an output dim of size 1 (its (size - 1) / (out - 1) would divide by 0): an
    output size 1 over a ? dim was all NaN before (found by the op sweep of 2026-12-06)."""
    fast = fxla.compile(_to_one, dynamic={"x": {2: fxla.Dim("h"), 3: fxla.Dim("w")}})
    for h, w in ((4, 6), (5, 9)):
        x = torch.randn(2, 3, h, w)
        torch.testing.assert_close(fast(x), _to_one(x))
    x = torch.randn(2, 3, 6)
    line = lambda x: torch.nn.functional.interpolate(x, size=(1,), mode="linear", align_corners=True)  # noqa: E731
    torch.testing.assert_close(fxla.compile(line, dynamic=True)(x), line(x))


def test_non_dyadic_scale_factors_are_size_arithmetic_only_where_torch_agrees():
    """A scale factor like 1/3 gives the output size ``(n * p) // q`` only where that equals torch's
    ``floor(n * factor)`` in double at every size below ``SCALE_CHECKED`` (1/3 and 0.1 do; 0.7 does not:
    ``floor(90 * 0.7)`` is 62): checked here against torch's own shape rule, and a 0.7 dim stays fixed."""
    from fxla.lowering.rules.resampling import _exact_ratio
    for factor in (1 / 3, 0.1, 2 / 3, 0.7, 1 / 7, 0.3):
        ratio = _exact_ratio(factor)
        if ratio is None:
            continue
        for n in range(int(1 / factor) + 1, 3000):      # (torch refuses an empty output)
            want = torch.nn.functional.interpolate(torch.empty(1, 1, n, device="meta"), scale_factor=factor)
            assert want.shape[-1] == n * ratio[0] // ratio[1], (factor, n)
    assert _exact_ratio(1 / 3) == (1, 3) and _exact_ratio(0.1) == (1, 10) and _exact_ratio(0.7) is None
    resize = lambda x: torch.nn.functional.interpolate(x, scale_factor=0.7)    # noqa: E731
    with pytest.raises(fxla.ShapeConstraintError, match="Dim 'n' cannot stay symbolic: %interpolate"):
        fxla.compile(resize, dynamic={"x": {2: fxla.Dim("n")}})(torch.randn(1, 2, 30))


def _adaptive(x):
    F = torch.nn.functional
    return (F.adaptive_avg_pool2d(x, (3, 4)), F.adaptive_avg_pool2d(x, (None, 2)), F.adaptive_avg_pool1d(x.flatten(2), 5),
            F.adaptive_avg_pool2d(x, 1), F.interpolate(x, size=(4, 3), mode="area"),
            F.interpolate(x, scale_factor=0.5, mode="area"), F.adaptive_max_pool2d(x, (3, 4), return_indices=True),
            F.adaptive_max_pool1d(x.flatten(2), 5, return_indices=True), F.adaptive_max_pool2d(x, 2),
            F.adaptive_max_pool2d(x, (None, 2)), F.adaptive_max_pool2d(x, (3, None), return_indices=True))


def test_adaptive_pools_over_symbolic_dims():
    """Adaptive pooling of a ? dim to a fixed size, torch's windows [floor(o * n / out), ceil((o + 1) * n / out)):
    averages as a [out, n] matrix built from iotas (also ``interpolate(mode="area")``, defined as it), maxima over
    windows gathered through an [out, n // out + 2] position table built from iotas, with torch's pick (the first
    maximum, the last NaN) and its indices (before: the sizes fixed by constant matrices and tables); a ``None``
    output size of a max pool keeps the input's ? size."""
    fast = fxla.compile(_adaptive, dynamic={"x": {2: fxla.Dim("h"), 3: fxla.Dim("w")}})
    for h, w in ((6, 8), (7, 9), (12, 5), (13, 17)):
        x = torch.randn(2, 3, h, w)
        x[0, 1, 2, 1] = x[1, 0, 0, 0] = float("nan")
        torch.testing.assert_close(fast(x), _adaptive(x), rtol=1e-5, atol=1e-6, equal_nan=True)
    (poly,) = _programs(fast)
    assert poly.stablehlo is not None
    # a None output size keeps the input's ? size (before: torch's meta kernel read it, fixing the Dim: an error)
    pool = torch.nn.AdaptiveMaxPool2d((None, 3), return_indices=True)
    fast = fxla.compile(pool, dynamic={"input": {2: fxla.Dim("h"), 3: fxla.Dim("w")}})
    for h, w in ((6, 8), (9, 7)):
        x = torch.randn(2, 3, h, w)
        torch.testing.assert_close(fast(x), pool(x))
    assert len(_programs(fast)) == 1


def _sizes_as_values(x, y, w):
    F = torch.nn.functional
    return (torch.einsum("bhqd,bhkd,bhke->bhqe", x, y, w), torch.roll(x, (3, -2), (2, 3)), torch.roll(x, 2),
            F.kl_div(x.log_softmax(-1), (x * 2).softmax(-1), reduction="batchmean"), torch.zeros_like(x) + 1,
            x.new_ones(x.shape[2], 3), torch.full(y.shape, 2.5), torch.empty(x.shape).shape[0])


def test_rules_that_read_sizes_keep_them_symbolic():
    """Found by the op sweep of 2026-12-06, each fixed a dim before: an einsum of three operands (torch plans its
    contraction order from the sizes as ints; fxla's meta function turns opt_einsum off), a roll along a ? dim
    (``if shift % n`` was a guard), KL divergence's batchmean (``float(batch)``), and creation ops of a
    traced shape (a splat constant needs a static type: now a 0-d constant broadcast)."""
    fast = fxla.compile(_sizes_as_values, dynamic={"x": {0: fxla.Dim("b"), 2: fxla.Dim("q"), 3: fxla.Dim("d")},
                                                   "y": {0: fxla.Dim("b"), 2: fxla.Dim("k"), 3: fxla.Dim("d")},
                                                   "w": {0: fxla.Dim("b"), 2: fxla.Dim("k")}})
    for b, q, k, d in ((2, 4, 6, 5), (3, 3, 2, 4), (5, 6, 9, 3)):        # (q = 3 divides the roll of 3)
        x, y, w = torch.randn(b, 3, q, d), torch.randn(b, 3, k, d), torch.randn(b, 3, k, 2)
        torch.testing.assert_close(fast(x, y, w), _sizes_as_values(x, y, w))
    (program,) = _programs(fast)
    assert program.stablehlo is not None and fast._dynamic.lowerings == 1


def _pools_1d(x):
    F = torch.nn.functional
    return (F.max_pool1d(x, 2), F.max_pool1d(x, 3, 2, 1, ceil_mode=True), F.max_pool1d(x, 3, 1, 1, dilation=2),
            F.max_pool1d(x, 3, 2, return_indices=True), torch.max_pool1d(x, 2),
            torch.nn.MaxPool1d(3, 2, 1, return_indices=True)(x))


def test_max_pool1d_keeps_the_length_symbolic():
    """torch's max_pool1d reads the length as an int (a named Dim was an error, ``dynamic=True`` a program per
    length); its meta result is now the 2-d pool's over a height of 1."""
    fast = fxla.compile(_pools_1d, dynamic={"x": {2: fxla.Dim("n")}})
    for n in (8, 9, 13, 20):
        x = torch.randn(2, 3, n)
        torch.testing.assert_close(fast(x), _pools_1d(x), rtol=0, atol=0)
    (program,) = _programs(fast)
    assert program.stablehlo is not None


def _im2col(x, y):
    F = torch.nn.functional
    return (F.unfold(x, (2, 3), padding=1, stride=(1, 2)), torch.nn.Unfold(2)(x), F.unfold(x[0], 3, dilation=2),
            F.fold(y, (6, 8), 2, stride=2), torch.nn.Fold((5, 7), 2, padding=1, stride=2)(y))


def test_unfold_and_fold_keep_the_sizes_symbolic():
    """torch's im2col / col2im read the sizes as ints; their meta results are now size arithmetic."""
    fast = fxla.compile(_im2col, dynamic={"x": {0: fxla.Dim("b"), 2: fxla.Dim("h"), 3: fxla.Dim("w")},
                                          "y": {0: fxla.Dim("b")}})
    for b, h, w in ((2, 6, 7), (3, 9, 5), (2, 11, 12)):
        x, y = torch.randn(b, 3, h, w), torch.randn(b, 12, 12)
        torch.testing.assert_close(fast(x, y), _im2col(x, y), rtol=0, atol=0)
    (program,) = _programs(fast)
    assert program.stablehlo is not None


class _Recurrent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(4, 5, bidirectional=True)
        self.gru = torch.nn.GRU(4, 3, batch_first=True)
        self.rnn = torch.nn.RNN(4, 3, nonlinearity="relu")
        self.cell, self.gru_cell = torch.nn.LSTMCell(4, 6), torch.nn.GRUCell(4, 2)

    def forward(self, x):
        return (self.lstm(x), self.gru(x.transpose(0, 1)), self.rnn(x), self.cell(x[0]), self.gru_cell(x[1]),
                self.lstm(x[:, 0]))


def test_recurrent_layers_keep_the_batch_and_the_length_symbolic():
    """torch's RNN modules check their inputs with the sizes as ints (a named batch Dim was an error); their meta
    results are now size arithmetic.  Each layer is a loop over its steps (fxla.rnn / fxla.lstm), so the sequence
    length stays symbolic too: one polymorphic program for every (length, batch), equal to eager."""
    m = _Recurrent().eval().requires_grad_(False)
    fast = fxla.compile(m, dynamic={"x": {0: fxla.Dim("t"), 1: fxla.Dim("b")}})
    for steps, b in ((3, 2), (3, 7), (5, 3), (2, 2)):
        x = torch.randn(steps, b, 4)
        torch.testing.assert_close(fast(x), m(x))
    (program,) = _programs(fast)
    assert program.stablehlo is not None
    loose = fxla.compile(m, dynamic=True)
    for steps, b in ((2, 2), (3, 5), (6, 3)):
        x = torch.randn(steps, b, 4)
        torch.testing.assert_close(loose(x), m(x))
    (program,) = _programs(loose)
    assert program.stablehlo is not None


def test_negative_list_indices_over_a_symbolic_dim():
    """x[[0, -1]] wraps -1 by the size as a value (before: the dim was fixed), and relies on the size being large
    enough for every negative entry: a named Dim refuses a smaller size, dynamic=True lowers it on its own, which
    raises as eager does -- never a clamped read."""
    fast = fxla.compile(lambda x: (x[[0, -1]], x[[-3, 1]]), dynamic={"x": {0: fxla.Dim("n")}})
    for n in (6, 3, 4):
        x = torch.randn(n, 2)
        torch.testing.assert_close(fast(x), (x[[0, -1]], x[[-3, 1]]), rtol=0, atol=0)
    (program,) = _programs(fast)
    assert program.stablehlo is not None
    with pytest.raises(fxla.ShapeConstraintError, match=r"break the constraint n - 3 >= 0"):
        fast(torch.randn(2, 2))
    loose = fxla.compile(lambda x: x[[-3, 1]], dynamic=True)
    loose(torch.randn(5, 2))
    with pytest.raises(IndexError):
        loose(torch.randn(2, 2))


def _class_losses(x, i, y):
    F = torch.nn.functional
    return (F.cross_entropy(x, i, label_smoothing=0.1), F.cross_entropy(x, i, label_smoothing=0.3, reduction="sum"),
            F.multilabel_soft_margin_loss(x, y), F.multi_margin_loss(x, i),
            F.multilabel_margin_loss(x, torch.where(y > 0.5, i[:, None], -1)))


def test_losses_over_a_symbolic_class_count():
    """The class count as a value (label smoothing's eps / C computed in f64 as torch's double, the margin losses'
    1 / C): before, each fixed the class dim."""
    fast = fxla.compile(_class_losses, dynamic={"x": {0: fxla.Dim("b"), 1: fxla.Dim("c")},
                                                "i": {0: fxla.Dim("b")}, "y": {0: fxla.Dim("b"), 1: fxla.Dim("c")}})
    for b, c in ((4, 5), (3, 7), (6, 3)):
        x, i, y = torch.randn(b, c), torch.randint(0, c, (b,)), torch.rand(b, c)
        torch.testing.assert_close(fast(x, i, y), _class_losses(x, i, y))
    (program,) = _programs(fast)
    assert program.stablehlo is not None


def _attention(q, k, v):
    F = torch.nn.functional
    return (F.scaled_dot_product_attention(q, k, v), F.scaled_dot_product_attention(q, k, v, is_causal=True),
            F.scaled_dot_product_attention(q, k, v, scale=0.3))


def test_attention_over_a_symbolic_head_dim():
    """The default scale 1 / sqrt(d) of a ? head dim is computed in f64 as ops (before: float() fixed d), bit for
    bit the static program's."""
    dims = {"q": {2: fxla.Dim("s"), 3: fxla.Dim("d")}, "k": {2: fxla.Dim("s"), 3: fxla.Dim("d")},
            "v": {2: fxla.Dim("s")}}
    fast, static = fxla.compile(_attention, dynamic=dims), fxla.compile(_attention)
    for s, d in ((4, 8), (5, 7), (9, 16)):
        q, k, v = torch.randn(2, 3, s, d), torch.randn(2, 3, s, d), torch.randn(2, 3, s, 6)
        got = fast(q, k, v)
        torch.testing.assert_close(got, static(q, k, v), rtol=0, atol=0)
        torch.testing.assert_close(got, _attention(q, k, v))
    (program,) = _programs(fast)
    assert program.stablehlo is not None


class _TrainNorms(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(3)
        self.inorm = torch.nn.InstanceNorm1d(3, track_running_stats=True)
        self.pool = torch.nn.MaxPool1d(3, 2, 1, return_indices=True)

    def forward(self, x):
        return self.bn(x), self.inorm(x), self.pool(x)


def test_running_statistics_and_module_pools_over_symbolic_dims():
    """Training-mode BatchNorm / InstanceNorm update the running variance with the unbiased factor n / (n - 1),
    now computed in f64 as ops where n is a symbolic size (a Python float of it fixed the batch); nn.MaxPool1d
    as a leaf module keeps the length (its meta result is the 2-d pool's)."""
    fast_model, eager_model = _TrainNorms().train(), _TrainNorms().train()
    fast = fxla.compile(fast_model, dynamic={"x": {0: fxla.Dim("b"), 2: fxla.Dim("n")}})
    for b, n in ((2, 8), (5, 9), (3, 14)):
        x = torch.randn(b, 3, n)
        torch.testing.assert_close(fast(x), eager_model(x))
        torch.testing.assert_close(fast_model.state_dict(), eager_model.state_dict())
    (program,) = _programs(fast)
    assert program.stablehlo is not None


def _sized_by_torch(x, y):
    F = torch.nn.functional
    n = x.shape[2]
    return (torch.kron(x[0, 0], y), torch.kron(y, x[0]), F.local_response_norm(x, 3), torch.nn.LocalResponseNorm(2)(x),
            F.local_response_norm(x[:, 0], 2), torch.linspace(-1, 2, n), torch.logspace(0, 1, n, base=2.0),
            torch.linspace(x.min(), x.max(), n))


def test_kron_local_response_norm_and_linspace_keep_the_sizes_symbolic():
    """torch's kron, local_response_norm and linspace/logspace (steps read from a traced size) read the sizes as
    ints, which fixed them; their meta results are now size arithmetic, and linspace's step is computed from the
    count as a value.  One program for every size, equal to eager."""
    fast = fxla.compile(_sized_by_torch, dynamic={"x": {0: fxla.Dim("b"), 2: fxla.Dim("n")},
                                                  "y": {0: fxla.Dim("r"), 1: fxla.Dim("c")}})
    for b, n, r, c in ((2, 5, 3, 4), (3, 8, 2, 6), (2, 11, 5, 3)):
        x, y = torch.randn(b, 3, n, 4), torch.randn(r, c)
        torch.testing.assert_close(fast(x, y), _sized_by_torch(x, y), rtol=1e-6, atol=1e-6)
    (program,) = _programs(fast)
    assert program.stablehlo is not None


class _Bilinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bilinear = torch.nn.Bilinear(4, 3, 5)

    def forward(self, x, y, mask, source):
        w, b = self.bilinear.weight, self.bilinear.bias
        return self.bilinear(x, y), torch.bilinear(x, y, w, b), x.masked_scatter(mask, source), \
            torch.masked_scatter(x[0], mask[:1], source)


def test_bilinear_and_masked_scatter_with_a_broadcast_mask_keep_the_sizes_symbolic():
    """torch's bilinear reads its sizes as ints and masked_scatter's meta fails on a broadcast mask of symbolic
    sizes; both meta results are size arithmetic now.  One program for every size, equal to eager."""
    torch.manual_seed(0)
    model = _Bilinear()
    fast = fxla.compile(model, dynamic={"x": {0: fxla.Dim("b"), 1: fxla.Dim("n")}, "y": {0: fxla.Dim("b"),
                                        1: fxla.Dim("n")}, "mask": {0: fxla.Dim("n")}, "source": {0: fxla.Dim("s")}})
    for b, n in ((2, 5), (3, 8), (4, 3)):
        x, y = torch.randn(b, n, 4), torch.randn(b, n, 3)
        mask = torch.rand(n, 4) > 0.5
        source = torch.randn(b * n * 4)
        torch.testing.assert_close(fast(x, y, mask, source), model(x, y, mask, source))
    (program,) = _programs(fast)
    assert program.stablehlo is not None


def _pad_to_multiple(x):
    w = x.shape[-1]
    return torch.nn.functional.pad(x, (1, (7 - w % 7) % 7, 0, 2), value=2.0).cumsum(-1)


def test_constant_padding_by_a_symbolic_amount_is_one_program():
    """Padding up to a multiple (Swin's windows: ``(7 - W % 7) % 7``) keeps the amount symbolic: one program
    with a ``stablehlo.dynamic_pad`` for every width, not one per remainder."""
    fast = fxla.compile(_pad_to_multiple, dynamic={"x": {1: fxla.Dim("w")}})
    for w in (5, 7, 9, 16, 21):
        x = torch.randn(3, w)
        torch.testing.assert_close(fast(x), _pad_to_multiple(x))
    (program,) = _programs(fast)
    from fxla.dialects.mlir import ir, strict_context
    with strict_context():
        text = ir.Module.parse(program.stablehlo).operation.get_asm()
    assert "stablehlo.dynamic_pad" in text


def _ctc_and_functional_rnn(x, y, w):
    F = torch.nn.functional
    steps, batch = x.shape[:2]
    loss = F.ctc_loss(x.log_softmax(2), y, torch.full((batch,), steps), torch.full((batch,), y.shape[1]),
                      reduction="none")
    h = torch.zeros(1, batch, 4)
    out, h_n = torch.gru(x[..., :3], h, [w[:12, :3], w[12:24, :4], w[24], w[25]], True, 1, 0.0, False, False, False)
    return loss, out, h_n


def test_ctc_loss_and_functional_rnns_keep_the_steps_symbolic():
    """The CTC loss's loops take the time steps, the batch and the target length symbolic, and so do the
    functional recurrent forms (their meta results are size arithmetic): one program for every size."""
    torch.manual_seed(0)
    fast = fxla.compile(_ctc_and_functional_rnn, dynamic={"x": {0: fxla.Dim("t"), 1: fxla.Dim("b")},
                                                          "y": {0: fxla.Dim("b"), 1: fxla.Dim("s")}})
    for steps, b, s in ((10, 2, 3), (14, 3, 5), (9, 4, 2)):
        x, y = torch.randn(steps, b, 6), torch.randint(1, 6, (b, s))
        w = torch.randn(26, 12)                 # (the GRU's W_ih, W_hh and biases, sliced)
        torch.testing.assert_close(fast(x, y, w), _ctc_and_functional_rnn(x, y, w), rtol=1e-5, atol=1e-5)
    (program,) = _programs(fast)
    assert program.stablehlo is not None
