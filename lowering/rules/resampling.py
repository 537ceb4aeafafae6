"""F.interpolate and the nn upsampling modules: nearest, nearest-exact, linear/bilinear/trilinear, bicubic and area
(area is adaptive average pooling to the output size).

Each resized dim is a gather of its taps along that dim, weighted and summed, with torch's CPU arithmetic: nearest
modes one tap (no weight), linear modes two, bicubic four (torch's cubic convolution, taps clamped into the input),
the last dim first as torch's kernels nest them.  Source coordinates and weights are computed in torch's opmath
type (float32; float64 for double inputs); half-precision inputs are computed in f32 and rounded once, like
torch's CPU kernels.  For static sizes the tap positions and weights are constants computed here; for a symbolic
input or output size (docs/shapes.md) the same arithmetic is ops: the coordinates from an iota of the output size,
the scale from the sizes as values, so the program stays polymorphic in it.  A non-finite input element reaches
only the outputs whose taps read it, as in eager (a product with an [out, in] weight matrix would spread it through
its zero weights to every output of the row).
"""
from __future__ import annotations

import functools
from fractions import Fraction
from typing import Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F

from fxla.dialects.fxla import Sig, ops, type_of
from fxla.dialects.mlir import ir
from fxla.frontend.shape_prop import has_symbolic_sizes, register_meta_function, register_meta_module

from ..emit import compute_elem, ntuple
from ..registry import register, register_module

_LINEAR_MODES = {"linear": 1, "bilinear": 2, "trilinear": 3}
_ADAPTIVE_AVG_POOL = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}


def _opmath(elem: str):
    """The numpy type of torch's interpolation arithmetic for inputs of ``elem`` (its CPU kernels' opmath)."""
    return np.float64 if elem == "f64" else np.float32


def _cubic_weights(t, dt=np.float32):
    """torch's cubic convolution coefficients of the 4 taps at offsets -1, 0, 1, 2 (in ``dt``, A = -0.75); ``t``:
    numbers or arrays of ``dt``, or values with ``dt`` arithmetic (:class:`_Ops`)."""
    a, one, two = dt(-0.75), dt(1), dt(2)

    def near(x):                  # |x| <= 1
        return ((a + two) * x - (a + dt(3))) * x * x + one

    def far(x):                   # 1 < |x| < 2
        return ((a * x - dt(5) * a) * x + dt(8) * a) * x - dt(4) * a

    return far(t + one), near(t), near(one - t), far(two - t)


# -- one resized dim's taps: constants (static sizes) ----------------------------------------------------------------
def _static_source(size: int, out: int, factor, align_corners: bool, dt, clamp: bool) -> np.ndarray:
    """torch's source coordinate of every output position, in ``dt`` (``clamp``: negative ones become 0, as the
    linear modes)."""
    o = np.arange(out, dtype=dt)
    if align_corners:
        return o * (dt(size - 1) / dt(out - 1)) if out > 1 else np.zeros(out, dt)
    scale = dt(1.0 / float(factor)) if factor is not None else dt(dt(size) / dt(out))
    src = scale * (o + dt(0.5)) - dt(0.5)
    return np.maximum(src, dt(0)) if clamp else src


def _static_taps(size: int, out: int, factor, mode: str, align_corners: bool, dt):
    """``[(positions, weights or None)]`` of one dim as numpy arrays; ``None`` where the dim is unchanged."""
    if mode.startswith("nearest"):
        scale = np.float32(1.0 / float(factor)) if factor is not None else np.float32(np.float32(size) / np.float32(out))
        if size == out and scale == 1:
            return None
        dst = np.arange(out, dtype=np.float32)
        src = np.floor((dst + np.float32(0.5)) * scale) if mode == "nearest-exact" else np.floor(dst * scale)
        return [(np.minimum(src.astype(np.int64), size - 1), None)]
    if mode in _LINEAR_MODES:
        src = _static_source(size, out, factor, align_corners, dt, clamp=True)
        i0 = np.minimum(np.floor(src).astype(np.int64), size - 1)
        i1 = np.minimum(i0 + 1, size - 1)
        lam = (src - i0.astype(dt)).astype(dt)
        if size == out and np.array_equal(i0, np.arange(out)) and not lam.any():
            return None
        return [(i0, (dt(1) - lam).astype(dt)), (i1, lam)]
    src = _static_source(size, out, factor, align_corners, dt, clamp=False)         # bicubic
    floor = np.floor(src)
    i0 = floor.astype(np.int64)
    weights = [np.asarray(w, dt) for w in _cubic_weights((src - floor).astype(dt), dt)]
    if size == out and np.array_equal(i0, np.arange(out)) and not (src - floor).any():
        return None                                      # (every position reads itself with weight 1)
    return [(np.clip(i0 - 1 + k, 0, size - 1), w) for k, w in enumerate(weights)]


# -- one resized dim's taps: ops (symbolic sizes) --------------------------------------------------------------------
class _Ops:
    """An ``elem`` value with Python arithmetic as fxla ops (numbers become ``elem`` constants), so
    :func:`_cubic_weights` builds the same formula as ops."""

    def __init__(self, ctx, value: ir.Value, elem: str):
        self.ctx, self.value, self.elem = ctx, value, elem

    def _of(self, other) -> ir.Value:
        return other.value if isinstance(other, _Ops) else _value(self.ctx, _opmath(self.elem)(other), self.elem)

    def _op(self, opdef, a, b) -> "_Ops":
        return _Ops(self.ctx, self.ctx.emit(opdef, self._of(a), self._of(b)), self.elem)

    def __add__(self, o): return self._op(ops.add, self, o)          # noqa: E704
    def __radd__(self, o): return self._op(ops.add, o, self)         # noqa: E704
    def __sub__(self, o): return self._op(ops.sub, self, o)          # noqa: E704
    def __rsub__(self, o): return self._op(ops.sub, o, self)         # noqa: E704
    def __mul__(self, o): return self._op(ops.mul, self, o)          # noqa: E704
    def __rmul__(self, o): return self._op(ops.mul, o, self)         # noqa: E704


def _value(ctx, v, elem: str) -> ir.Value:
    """A size (int or ``SymInt``) or a float as a 0-d ``elem`` value (a float made in ``elem`` itself)."""
    if not isinstance(v, (float, np.floating)):
        return ctx.convert(ctx.tensor(v), elem)
    return ctx.emit(ops.constant, value=ir.DenseElementsAttr.get(np.asarray(v, _opmath(elem))))


def _source(ctx, size, out, factor, align_corners: bool, elem: str, clamp: bool) -> ir.Value:
    """:func:`_static_source` as ops (an ``[out]`` ``elem`` value)."""
    dst = ctx.emit(ops.arange, start=0.0, step=1.0, length=out, result_type=type_of(Sig((out,), elem)))
    if align_corners:
        if out <= 1:       # torch: source 0 (a derived symbolic out, h // 4, may be 1: then a guard records it)
            return ctx.emit(ops.mul, dst, _value(ctx, 0.0, elem))
        ratio = ctx.emit(ops.div, _value(ctx, size - 1, elem), _value(ctx, out - 1, elem))
        return ctx.emit(ops.mul, dst, ratio)
    half = _value(ctx, 0.5, elem)
    src = ctx.emit(ops.sub, ctx.emit(ops.mul, _scale(ctx, size, out, factor, elem), ctx.emit(ops.add, dst, half)),
                   half)
    return ctx.emit(ops.maximum, src, _value(ctx, 0.0, elem)) if clamp else src


def _scale(ctx, size, out, factor, elem: str) -> ir.Value:
    """torch's source/destination scale of one dim (``1 / scale_factor`` when given, else size / out)."""
    if factor is not None:
        return _value(ctx, _opmath(elem)(1.0 / float(factor)), elem)
    return ctx.emit(ops.div, _value(ctx, size, elem), _value(ctx, out, elem))


def _symbolic_taps(ctx, size, out, factor, mode: str, align_corners: bool, elem: str):
    """:func:`_static_taps` as ops: ``[(positions i64 value, weights value or None)]``."""
    last = ctx.tensor(size - 1, like=ctx.tensor(0))
    if mode.startswith("nearest"):
        dst = ctx.emit(ops.arange, start=0.0, step=1.0, length=out, result_type=type_of(Sig((out,), "f32")))
        if mode == "nearest-exact":
            dst = ctx.emit(ops.add, dst, _value(ctx, 0.5, "f32"))
        src = ctx.emit(ops.floor, ctx.emit(ops.mul, dst, _scale(ctx, size, out, factor, "f32")))
        return [(ctx.emit(ops.minimum, ctx.convert(src, "i64"), last), None)]
    if mode in _LINEAR_MODES:
        src = _source(ctx, size, out, factor, align_corners, elem, clamp=True)
        i0 = ctx.emit(ops.minimum, ctx.convert(ctx.emit(ops.floor, src), "i64"), last)
        i1 = ctx.emit(ops.minimum, ctx.emit(ops.add, i0, ctx.tensor(1, like=i0)), last)
        lam = ctx.emit(ops.sub, src, ctx.convert(i0, elem))
        return [(i0, ctx.emit(ops.sub, _value(ctx, 1.0, elem), lam)), (i1, lam)]
    src = _source(ctx, size, out, factor, align_corners, elem, clamp=False)          # bicubic
    floor = ctx.emit(ops.floor, src)
    i0 = ctx.convert(floor, "i64")
    weights = _cubic_weights(_Ops(ctx, ctx.emit(ops.sub, src, floor), elem), _opmath(elem))
    zero = ctx.tensor(0, like=i0)
    return [(ctx.emit(ops.minimum, ctx.emit(ops.maximum, ctx.emit(ops.add, i0, ctx.tensor(k - 1, like=i0)), zero),
                      last), w.value) for k, w in enumerate(weights)]


def _resize_dim(ctx, x, dim: int, size, out, factor, mode: str, align_corners: bool):
    """Dim ``dim`` of ``x`` resized from ``size`` to ``out``: its taps gathered, weighted and summed in order."""
    elem = ctx.sig(x).elem
    if isinstance(size, int) and isinstance(out, int):
        taps = _static_taps(size, out, factor, mode, align_corners, _opmath(elem))
        if taps is None:
            return x
        taps = [(ctx.int_constant(i), None if w is None else ctx.emit(ops.constant, value=ir.DenseElementsAttr.get(w)))
                for i, w in taps]
    else:
        taps = _symbolic_taps(ctx, size, out, factor, mode, align_corners, "f64" if elem == "f64" else "f32")
    total = None
    for index, weight in taps:
        g = ctx.emit(ops.index_select, x, index, dim=dim)
        if weight is not None:
            shape = [1] * ctx.sig(g).rank
            shape[dim] = ctx.sig(g).shape[dim]
            g = ctx.emit(ops.mul, g, ctx.reshape(ctx.convert(weight, elem), tuple(shape)))
        total = g if total is None else ctx.emit(ops.add, total, g)
    return total


@register(F.interpolate)
def _interpolate(ctx, input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None, antialias=False):
    s = ctx.sig(input)
    n = s.rank - 2
    out = ctx.result_sig.shape[2:]
    if antialias:
        raise ctx.error("interpolate(antialias=True) is not supported", "no lowering yet", "use antialias=False")
    if mode == "area":               # torch's definition: adaptive average pooling to the output size
        return ctx.lower(_ADAPTIVE_AVG_POOL[n], input, out)
    if any(isinstance(d, int) and d == 0 for d in tuple(s.shape[2:]) + tuple(out)):
        raise ctx.error(f"interpolate(mode={mode!r}): input and output sizes should be greater than 0, but got "
                        f"input {tuple(s.shape[2:])} and output {tuple(out)}",
                        "why: torch's kernels refuse an empty input or output size (a scale factor that rounds a "
                        "size down to 0) and raise RuntimeError at this call", "pass a size or scale factor that "
                        "gives every spatial dim at least one output")
    if not (mode in ("nearest", "nearest-exact", "bicubic") or mode in _LINEAR_MODES):
        raise ctx.error(f"interpolate(mode={mode!r}) is not supported yet", "fxla lowers nearest, nearest-exact, "
                        "linear, bilinear, trilinear, bicubic and area", "use one of those modes")
    if mode in _LINEAR_MODES and _LINEAR_MODES[mode] != n:
        raise ctx.error(f"interpolate(mode={mode!r}) expects a rank-{_LINEAR_MODES[mode] + 2} input, got rank "
                        f"{s.rank}", "torch rejects it too", "use the mode matching the input's rank")
    if mode == "bicubic" and n != 2:
        raise ctx.error(f"interpolate(mode='bicubic') expects a rank-4 input, got rank {s.rank}",
                        "torch rejects it too", "pass an [N, C, H, W] input")
    factors = ntuple(scale_factor, n) if scale_factor is not None and not recompute_scale_factor else (None,) * n
    nearest = mode.startswith("nearest")
    x = input if nearest else ctx.convert(input, compute_elem(s.elem))
    for i in reversed(range(n)):                         # the last dim first, as torch's kernels nest the taps
        x = _resize_dim(ctx, x, 2 + i, s.shape[2 + i], out[i], factors[i], mode, bool(align_corners))
    return x if nearest else ctx.convert(x, s.elem)


#: sizes up to which :func:`_exact_ratio` checks a scale factor's ``(n * p) // q`` against torch's double floor
SCALE_CHECKED = 1 << 22


@functools.lru_cache(maxsize=256)
def _exact_ratio(factor: float) -> Optional[Tuple[int, int]]:
    """``(p, q)`` (``q`` at most 4096) such that torch's ``floor(n * factor)``, computed in double, equals
    ``(n * p) // q`` for every size ``n`` below :data:`SCALE_CHECKED` (checked at every one of them), else None.
    1/3 and 0.1 pass (1/3's double is just below 1/3, yet every ``n * factor`` at a multiple of 3 still rounds to
    the integer; 0.1's is just above 1/10); 0.7 does not (``floor(10 * 0.7)`` is 7, ``floor(90 * 0.7)`` is 62)."""
    ratio = Fraction(factor).limit_denominator(1 << 12)
    n = np.arange(SCALE_CHECKED, dtype=np.int64)
    torch_sizes = np.floor(n.astype(np.float64) * factor).astype(np.int64)
    return (ratio.numerator, ratio.denominator) if np.array_equal(torch_sizes, n * ratio.numerator //
                                                                   ratio.denominator) else None


def _scaled_size(size, factor: float):
    """torch's ``floor(size * factor)`` (in double) for a symbolic ``size``, as size arithmetic where it is exact:
    a factor of at most 16 significant bits over a power-of-two denominator (2, 0.5, 1.5, 0.25, ...) times a size
    below 2**31 is exact in double, so the floor is ``(size * p) // q``; another factor whose floor equals
    ``(size * p) // q`` for every size below :data:`SCALE_CHECKED` (:func:`_exact_ratio`: 1/3, 0.1) is that too,
    with the condition ``size < SCALE_CHECKED`` (checked per call, as every condition the program relies on).
    Other factors (0.7) read the size as a number, which fixes it to the traced one (torch's own formula, with a
    guard)."""
    ratio = Fraction(float(factor))
    if ratio.numerator < 2 ** 16 and ratio.denominator <= 2 ** 16:
        return size * ratio.numerator // ratio.denominator if ratio.denominator != 1 else size * ratio.numerator
    exact = _exact_ratio(float(factor))
    if exact is not None and size < SCALE_CHECKED:
        return size * exact[0] // exact[1]
    return int(np.floor(float(size) * float(factor)))


def _interpolate_meta(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                      recompute_scale_factor=None, antialias=False):
    """F.interpolate's result on meta/fake tensors: torch's own where the input's sizes are numbers; for symbolic
    ones its output sizes by arithmetic (torch's upsample kernels read the sizes as doubles, which would fix every
    dim, the channels too), ``size`` as given or ``floor(in * scale_factor)`` (:func:`_scaled_size`).  The
    lowering rule checks the arguments; torch's own checks ran on the traced call, and a symbolic output size
    must be positive, as torch's kernels check at every call (a guard: each call's sizes are checked against
    it).  Static sizes of 0 the lowering rule refuses."""
    if not has_symbolic_sizes(input) or size is None and scale_factor is None:
        return F.interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)
    n = input.dim() - 2
    if size is not None:
        out = list(size) if isinstance(size, (list, tuple)) else [size] * n
    else:
        out = [_scaled_size(d, f) for d, f in zip(input.shape[2:], ntuple(scale_factor, n))]
    if mode != "area":                 # (area is adaptive average pooling, which takes an empty output)
        for d, o in zip(input.shape[2:], out):
            if isinstance(o, torch.SymInt):
                torch._check(o > 0, lambda d=d, o=o: f"F.interpolate: input and output sizes should be greater "
                             f"than 0, but got input {d} and output {o}")
    return input.new_empty(tuple(input.shape[:2]) + tuple(out))


register_meta_function(F.interpolate, _interpolate_meta)

for _module in (torch.nn.Upsample, torch.nn.UpsamplingNearest2d, torch.nn.UpsamplingBilinear2d):
    register_meta_module(_module, lambda mod, input: _interpolate_meta(input, mod.size, mod.scale_factor))
    register_module(_module, F.interpolate, attrs=("size", "scale_factor", "mode"),
                    align_corners=lambda mod: True if isinstance(mod, torch.nn.UpsamplingBilinear2d)
                    else mod.align_corners,
                    recompute_scale_factor=lambda mod: getattr(mod, "recompute_scale_factor", None))
