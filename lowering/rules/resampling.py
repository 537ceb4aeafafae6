"""F.interpolate and the nn upsampling modules: nearest, nearest-exact, linear/bilinear/trilinear, bicubic and area
(area is adaptive average pooling to the output size).

Nearest modes gather with a constant index list per resized dim.  Linear modes and bicubic are a product with a
constant [out, in] weight matrix per resized dim, built here with torch's float32 index arithmetic; half-precision
inputs are computed in f32 and rounded once, like torch's CPU kernels.

A resized dim with a symbolic input or output size (docs/shapes.md) gets the same arithmetic in ops instead of
constants: the source coordinates from an iota of the output size and the scale from the sizes as values, then
gathers of the taps weighted by their interpolation weights (:func:`_symbolic_dim`), so the program stays
polymorphic in it.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import torch
import torch.nn.functional as F

from fxla.dialects.fxla import Sig, ops, type_of
from fxla.dialects.mlir import ir

from fxla.frontend.shape_prop import register_meta_function, register_meta_module

from ..emit import compute_elem, ntuple, resample_dim
from ..registry import register, register_module


def _scales(in_sizes, out_sizes, scale_factor, recompute_scale_factor, dt=np.float32):
    """torch's source/destination scale per dim in its CPU kernels' opmath type ``dt`` (float32; float64 for
    double inputs)."""
    n = len(in_sizes)
    if scale_factor is not None and not recompute_scale_factor:
        factors = ntuple(scale_factor, n)
        return [dt(1.0 / float(f)) for f in factors]
    return [dt(dt(i) / dt(o)) for i, o in zip(in_sizes, out_sizes)]


def _source_index(o, size, out, scale, align_corners, clamp, dt=np.float32):
    """torch's source coordinate of output index ``o`` in ``dt`` (``clamp``: negative ones become 0, as linear
    modes)."""
    if align_corners:
        return dt(o) * (dt(size - 1) / dt(out - 1)) if out > 1 else dt(0)
    src = dt(scale) * (dt(o) + dt(0.5)) - dt(0.5)
    return max(src, dt(0)) if clamp else src


def _linear_matrix(size, out, scale, align_corners, dt=np.float32):
    m = np.zeros((out, size))
    for o in range(out):
        src = _source_index(o, size, out, scale, align_corners, clamp=True, dt=dt)
        i0 = min(int(np.floor(src)), size - 1)
        i1 = min(i0 + 1, size - 1)
        lam = float(src) - i0
        m[o, i0] += 1.0 - lam
        m[o, i1] += lam
    return m


_LINEAR_MODES = {"linear": 1, "bilinear": 2, "trilinear": 3}


def _cubic_weights(t, dt=np.float32):
    """torch's cubic convolution coefficients of the 4 taps at offsets -1, 0, 1, 2 (in ``dt``, A = -0.75)."""
    a, one, two = dt(-0.75), dt(1), dt(2)

    def near(x):                  # |x| <= 1
        return ((a + two) * x - (a + dt(3))) * x * x + one

    def far(x):                   # 1 < |x| < 2
        return ((a * x - dt(5) * a) * x + dt(8) * a) * x - dt(4) * a

    return far(t + one), near(t), near(one - t), far(two - t)


def _opmath(elem: str):
    """The numpy type of torch's interpolation arithmetic for inputs of ``elem`` (its CPU kernels' opmath)."""
    return np.float64 if elem == "f64" else np.float32


def _cubic_matrix(size, out, scale, align_corners, dt=np.float32):
    """[out, size] bicubic weights: 4 taps around torch's unclamped source index, taps clamped into the input."""
    m = np.zeros((out, size))
    for o in range(out):
        src = _source_index(o, size, out, scale, align_corners, clamp=False, dt=dt)
        i0 = int(np.floor(src))
        t = dt(src - dt(i0))
        for k, w in enumerate(_cubic_weights(t, dt)):
            m[o, min(max(i0 - 1 + k, 0), size - 1)] += float(w)
    return m


# -- symbolic sizes: the same arithmetic as ops --------------------------------------------------------------------
def _value(ctx, v, elem: str):
    """A size (int or ``SymInt``) or a float as a 0-d ``elem`` value (a float made in ``elem`` itself)."""
    if not isinstance(v, (float, np.floating)):
        return ctx.convert(ctx.tensor(v), elem)
    return ctx.emit(ops.constant, value=ir.DenseElementsAttr.get(np.asarray(v, np.float64 if elem == "f64" else
                                                                             np.float32)))


def _scale(ctx, size, out, factor, elem: str):
    """torch's source/destination scale of one dim (``1 / scale_factor`` when given, else size / out), in its
    opmath type ``elem`` (double for f64 inputs)."""
    if factor is not None:
        return _value(ctx, np.float32(1.0 / float(factor)) if elem == "f32" else 1.0 / float(factor), elem)
    return ctx.emit(ops.div, _value(ctx, size, elem), _value(ctx, out, elem))


def _source(ctx, size, out, factor, align_corners: bool, elem: str, clamp: bool):
    """:func:`_source_index` of every output position (an ``[out]`` ``elem`` value)."""
    dst = ctx.emit(ops.arange, start=0.0, step=1.0, length=out, result_type=type_of(Sig((out,), elem)))
    if align_corners:                                   # (a symbolic out is >= 2: sizes 0 and 1 are never symbolic)
        ratio = ctx.emit(ops.div, _value(ctx, size - 1, elem), _value(ctx, out - 1, elem))
        return ctx.emit(ops.mul, dst, ratio)
    half = _value(ctx, 0.5, elem)
    src = ctx.emit(ops.sub, ctx.emit(ops.mul, _scale(ctx, size, out, factor, elem), ctx.emit(ops.add, dst, half)),
                   half)
    return ctx.emit(ops.maximum, src, _value(ctx, 0.0, elem)) if clamp else src


def _clip(ctx, index, size):
    """``index`` (i64) clamped into [0, size)."""
    return ctx.emit(ops.minimum, ctx.emit(ops.maximum, index, ctx.tensor(0, like=index)), ctx.tensor(size - 1, like=index))


def _weighted(ctx, x, dim: int, taps):
    """sum over ``(index, weight)`` taps of ``x`` gathered at ``index`` along ``dim`` times ``weight`` ([out],
    broadcast along ``dim``)."""
    total = None
    for index, weight in taps:
        g = ctx.emit(ops.index_select, x, index, dim=dim)
        shape = [1] * ctx.sig(g).rank
        shape[dim] = ctx.sig(g).shape[dim]
        term = ctx.emit(ops.mul, g, ctx.reshape(ctx.convert(weight, ctx.sig(x).elem), tuple(shape)))
        total = term if total is None else ctx.emit(ops.add, total, term)
    return total


def _cubic_value_weights(ctx, t, elem: str):
    """:func:`_cubic_weights` of every position's fraction ``t`` (``elem`` values)."""
    a = lambda v: _value(ctx, _opmath(elem)(v), elem)                               # noqa: E731
    mul, add, sub = (lambda p, q: ctx.emit(ops.mul, p, q)), (lambda p, q: ctx.emit(ops.add, p, q)), \
        (lambda p, q: ctx.emit(ops.sub, p, q))
    A = np.float32(-0.75)

    def near(x):
        return add(mul(mul(sub(mul(a(A + 2), x), a(A + 3)), x), x), a(1))

    def far(x):
        return sub(mul(add(mul(sub(mul(a(A), x), a(5 * A)), x), a(8 * A)), x), a(4 * A))
    return far(add(t, a(1))), near(t), near(sub(a(1), t)), far(sub(a(2), t))


def _symbolic_dim(ctx, x, dim: int, size, out, factor, mode: str, align_corners: bool):
    """Resize dim ``dim`` of ``x`` from ``size`` to ``out`` (either symbolic) as torch's CPU kernels do."""
    if mode in ("nearest", "nearest-exact"):
        dst = ctx.emit(ops.arange, start=0.0, step=1.0, length=out, result_type=type_of(Sig((out,), "f32")))
        if mode == "nearest-exact":
            dst = ctx.emit(ops.add, dst, _value(ctx, 0.5, "f32"))
        src = ctx.emit(ops.floor, ctx.emit(ops.mul, dst, _scale(ctx, size, out, factor, "f32")))
        index = ctx.emit(ops.minimum, ctx.convert(src, "i64"), ctx.tensor(size - 1, like=ctx.tensor(0)))
        return ctx.emit(ops.index_select, x, index, dim=dim)
    elem = "f64" if ctx.sig(x).elem == "f64" else "f32"     # (coordinates in torch's opmath type)
    if mode in _LINEAR_MODES:
        src = _source(ctx, size, out, factor, align_corners, elem, clamp=True)
        i0 = ctx.emit(ops.minimum, ctx.convert(ctx.emit(ops.floor, src), "i64"), ctx.tensor(size - 1, like=ctx.tensor(0)))
        i1 = ctx.emit(ops.minimum, ctx.emit(ops.add, i0, ctx.tensor(1, like=i0)), ctx.tensor(size - 1, like=i0))
        lam = ctx.emit(ops.sub, src, ctx.convert(i0, elem))
        return _weighted(ctx, x, dim, [(i0, ctx.emit(ops.sub, _value(ctx, 1.0, elem), lam)), (i1, lam)])
    src = _source(ctx, size, out, factor, align_corners, elem, clamp=False)          # bicubic
    floor = ctx.emit(ops.floor, src)
    i0 = ctx.convert(floor, "i64")
    weights = _cubic_value_weights(ctx, ctx.emit(ops.sub, src, floor), elem)
    return _weighted(ctx, x, dim, [(_clip(ctx, ctx.emit(ops.add, i0, ctx.tensor(k - 1, like=i0)), size), w)
                                   for k, w in enumerate(weights)])


def _symbolic(size, out) -> bool:
    return not (isinstance(size, int) and isinstance(out, int))


@register(F.interpolate)
def _interpolate(ctx, input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None, antialias=False):
    s = ctx.sig(input)
    n = s.rank - 2
    out = ctx.result_sig.shape[2:]
    if antialias:
        raise ctx.error("interpolate(antialias=True) is not supported", "no lowering yet", "use antialias=False")
    if mode in ("nearest", "nearest-exact", "bicubic") or mode in _LINEAR_MODES:
        factors = ntuple(scale_factor, n) if scale_factor is not None and not recompute_scale_factor else (None,) * n
        if any(_symbolic(a, b) for a, b in zip(s.shape[2:], out)):
            return _symbolic_interpolate(ctx, input, out, factors, mode, bool(align_corners))
    if mode == "area":               # torch's definition: adaptive average pooling to the output size
        return ctx.lower(_ADAPTIVE_AVG_POOL[n], input, out)
    scales = _scales(s.shape[2:], out, scale_factor, recompute_scale_factor)
    if mode in ("nearest", "nearest-exact"):
        x = input
        for i in range(n):
            size_i, o = s.shape[2 + i], out[i]
            if size_i == o and scales[i] == 1:
                continue
            dst = np.arange(o, dtype=np.float32)
            src = np.floor((dst + np.float32(0.5)) * scales[i]) if mode == "nearest-exact" else np.floor(dst * scales[i])
            idx = np.minimum(src.astype(np.int64), size_i - 1)
            x = ctx.emit(ops.index_select, x, ctx.int_constant(idx), dim=2 + i)
        return x
    dt = _opmath(s.elem)
    if mode in _LINEAR_MODES:
        if _LINEAR_MODES[mode] != n:
            raise ctx.error(f"interpolate(mode={mode!r}) expects a rank-{_LINEAR_MODES[mode] + 2} input, got rank "
                            f"{s.rank}", "torch rejects it too", "use the mode matching the input's rank")
        x = ctx.convert(input, compute_elem(s.elem))
        scales = _scales(s.shape[2:], out, scale_factor, recompute_scale_factor, dt)
        for i in range(n):
            m = _linear_matrix(s.shape[2 + i], out[i], scales[i], bool(align_corners), dt)
            if not (m.shape[0] == m.shape[1] and np.array_equal(m, np.eye(m.shape[0]))):
                x = resample_dim(ctx, x, 2 + i, m)
        return ctx.convert(x, s.elem)
    if mode == "bicubic":
        if n != 2:
            raise ctx.error(f"interpolate(mode='bicubic') expects a rank-4 input, got rank {s.rank}",
                            "torch rejects it too", "pass an [N, C, H, W] input")
        x = ctx.convert(input, compute_elem(s.elem))
        scales = _scales(s.shape[2:], out, scale_factor, recompute_scale_factor, dt)
        for i in range(n):
            m = _cubic_matrix(s.shape[2 + i], out[i], scales[i], bool(align_corners), dt)
            if not (m.shape[0] == m.shape[1] and np.array_equal(m, np.eye(m.shape[0]))):
                x = resample_dim(ctx, x, 2 + i, m)
        return ctx.convert(x, s.elem)
    raise ctx.error(f"interpolate(mode={mode!r}) is not supported yet", "fxla lowers nearest, nearest-exact, linear, "
                    "bilinear, trilinear, bicubic and area", "use one of those modes")


def _symbolic_interpolate(ctx, input, out, factors, mode: str, align_corners: bool):
    """F.interpolate where a resized dim is symbolic: the static dims as above, the symbolic ones in ops."""
    s = ctx.sig(input)
    n = s.rank - 2
    if mode in _LINEAR_MODES and _LINEAR_MODES[mode] != n or mode == "bicubic" and n != 2:
        raise ctx.error(f"interpolate(mode={mode!r}) does not take a rank-{s.rank} input", "torch rejects it too",
                        "use the mode matching the input's rank")
    x = input if mode.startswith("nearest") else ctx.convert(input, compute_elem(s.elem))
    for i in reversed(range(n)):                         # the last dim first, as torch's kernels nest the taps
        size_i, o = s.shape[2 + i], out[i]
        if _symbolic(size_i, o):
            x = _symbolic_dim(ctx, x, 2 + i, size_i, o, factors[i], mode, align_corners)
            continue
        if mode.startswith("nearest"):
            x = _symbolic_dim(ctx, x, 2 + i, size_i, o, factors[i], mode, align_corners)
            continue
        dt = _opmath(s.elem)
        scale = dt(1.0 / float(factors[i])) if factors[i] is not None else dt(dt(size_i) / dt(o))
        build = _cubic_matrix if mode == "bicubic" else _linear_matrix
        m = build(size_i, o, scale, align_corners, dt)
        if not (m.shape[0] == m.shape[1] and np.array_equal(m, np.eye(m.shape[0]))):
            x = resample_dim(ctx, x, 2 + i, m)
    return ctx.convert(x, s.elem)


_ADAPTIVE_AVG_POOL = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}

def _scaled_size(size, factor: float):
    """torch's ``floor(size * factor)`` (in double) for a symbolic ``size``, as size arithmetic where it is exact:
    a factor of at most 16 significant bits over a power-of-two denominator (2, 0.5, 1.5, 0.25, ...) times a size
    below 2**31 is exact in double, so the floor is ``(size * p) // q``.  Other factors (1/3) read the size as a
    number, which fixes it to the traced one (torch's own formula, with a guard)."""
    ratio = Fraction(float(factor))
    if ratio.numerator < 2 ** 16 and ratio.denominator <= 2 ** 16:
        return size * ratio.numerator // ratio.denominator if ratio.denominator != 1 else size * ratio.numerator
    return int(np.floor(float(size) * float(factor)))


def _interpolate_meta(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                      recompute_scale_factor=None, antialias=False):
    """F.interpolate's result on meta/fake tensors: torch's own where the input's sizes are numbers; for symbolic
    ones its output sizes by arithmetic (torch's upsample kernels read the sizes as doubles, which would fix every
    dim, the channels too), ``size`` as given or ``floor(in * scale_factor)`` (:func:`_scaled_size`).  The
    lowering rule checks the arguments; torch's own checks ran on the traced call."""
    if all(isinstance(d, int) for d in input.shape) or size is None and scale_factor is None:
        return F.interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)
    n = input.dim() - 2
    if size is not None:
        out = list(size) if isinstance(size, (list, tuple)) else [size] * n
    else:
        out = [_scaled_size(d, f) for d, f in zip(input.shape[2:], ntuple(scale_factor, n))]
    return input.new_empty(tuple(input.shape[:2]) + tuple(out))


register_meta_function(F.interpolate, _interpolate_meta)

for _module in (torch.nn.Upsample, torch.nn.UpsamplingNearest2d, torch.nn.UpsamplingBilinear2d):
    register_meta_module(_module, lambda mod, input: _interpolate_meta(input, mod.size, mod.scale_factor))
    register_module(_module, F.interpolate, attrs=("size", "scale_factor", "mode"),
                    align_corners=lambda mod: True if isinstance(mod, torch.nn.UpsamplingBilinear2d)
                    else mod.align_corners,
                    recompute_scale_factor=lambda mod: getattr(mod, "recompute_scale_factor", None))
