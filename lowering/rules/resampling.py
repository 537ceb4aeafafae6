"""F.interpolate and the nn upsampling modules: nearest, nearest-exact, linear/bilinear/trilinear, bicubic and area
(area is adaptive average pooling to the output size).

Nearest modes gather with a constant index list per resized dim.  Linear modes and bicubic are a product with a
constant [out, in] weight matrix per resized dim, built here with torch's float32 index arithmetic; half-precision
inputs are computed in f32 and rounded once, like torch's CPU kernels.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from fxla.dialects.fxla import ops

from ..emit import compute_elem, ntuple, resample_dim
from ..registry import register, register_module


def _scales(in_sizes, out_sizes, scale_factor, recompute_scale_factor):
    """torch's source/destination scale per dim (float32 arithmetic, as its CPU kernels use)."""
    n = len(in_sizes)
    if scale_factor is not None and not recompute_scale_factor:
        factors = ntuple(scale_factor, n)
        return [np.float32(1.0 / float(f)) for f in factors]
    return [np.float32(np.float32(i) / np.float32(o)) for i, o in zip(in_sizes, out_sizes)]


def _source_index(o, size, out, scale, align_corners, clamp):
    """torch's float32 source coordinate of output index ``o`` (``clamp``: negative ones become 0, as linear modes)."""
    if align_corners:
        return np.float32(o) * (np.float32(size - 1) / np.float32(out - 1)) if out > 1 else np.float32(0)
    src = np.float32(scale) * (np.float32(o) + np.float32(0.5)) - np.float32(0.5)
    return max(src, np.float32(0)) if clamp else src


def _linear_matrix(size, out, scale, align_corners):
    m = np.zeros((out, size))
    for o in range(out):
        src = _source_index(o, size, out, scale, align_corners, clamp=True)
        i0 = min(int(np.floor(src)), size - 1)
        i1 = min(i0 + 1, size - 1)
        lam = float(src) - i0
        m[o, i0] += 1.0 - lam
        m[o, i1] += lam
    return m


_LINEAR_MODES = {"linear": 1, "bilinear": 2, "trilinear": 3}


def _cubic_weights(t: np.float32, a: np.float32 = np.float32(-0.75)):
    """torch's cubic convolution coefficients of the 4 taps at offsets -1, 0, 1, 2 (float32, A = -0.75)."""
    one, two = np.float32(1), np.float32(2)

    def near(x):                  # |x| <= 1
        return ((a + two) * x - (a + np.float32(3))) * x * x + one

    def far(x):                   # 1 < |x| < 2
        return ((a * x - np.float32(5) * a) * x + np.float32(8) * a) * x - np.float32(4) * a

    return far(t + one), near(t), near(one - t), far(two - t)


def _cubic_matrix(size, out, scale, align_corners):
    """[out, size] bicubic weights: 4 taps around torch's unclamped source index, taps clamped into the input."""
    m = np.zeros((out, size))
    for o in range(out):
        src = _source_index(o, size, out, scale, align_corners, clamp=False)
        i0 = int(np.floor(src))
        t = np.float32(src - np.float32(i0))
        for k, w in enumerate(_cubic_weights(t)):
            m[o, min(max(i0 - 1 + k, 0), size - 1)] += float(w)
    return m


@register(F.interpolate)
def _interpolate(ctx, input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None, antialias=False):
    s = ctx.sig(input)
    n = s.rank - 2
    out = ctx.result_sig.shape[2:]
    if antialias:
        raise ctx.error("interpolate(antialias=True) is not supported", "no lowering yet", "use antialias=False")
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
    if mode in _LINEAR_MODES:
        if _LINEAR_MODES[mode] != n:
            raise ctx.error(f"interpolate(mode={mode!r}) expects a rank-{_LINEAR_MODES[mode] + 2} input, got rank "
                            f"{s.rank}", "torch rejects it too", "use the mode matching the input's rank")
        x = ctx.convert(input, compute_elem(s.elem))
        for i in range(n):
            m = _linear_matrix(s.shape[2 + i], out[i], scales[i], bool(align_corners))
            if not (m.shape[0] == m.shape[1] and np.array_equal(m, np.eye(m.shape[0]))):
                x = resample_dim(ctx, x, 2 + i, m)
        return ctx.convert(x, s.elem)
    if mode == "bicubic":
        if n != 2:
            raise ctx.error(f"interpolate(mode='bicubic') expects a rank-4 input, got rank {s.rank}",
                            "torch rejects it too", "pass an [N, C, H, W] input")
        x = ctx.convert(input, compute_elem(s.elem))
        for i in range(n):
            m = _cubic_matrix(s.shape[2 + i], out[i], scales[i], bool(align_corners))
            if not (m.shape[0] == m.shape[1] and np.array_equal(m, np.eye(m.shape[0]))):
                x = resample_dim(ctx, x, 2 + i, m)
        return ctx.convert(x, s.elem)
    if mode == "area":               # torch's definition: adaptive average pooling to the output size
        return ctx.lower(_ADAPTIVE_AVG_POOL[n], input, out)
    raise ctx.error(f"interpolate(mode={mode!r}) is not supported yet", "fxla lowers nearest, nearest-exact, linear, "
                    "bilinear, trilinear, bicubic and area", "use one of those modes")


_ADAPTIVE_AVG_POOL = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}

for _module in (torch.nn.Upsample, torch.nn.UpsamplingNearest2d, torch.nn.UpsamplingBilinear2d):
    register_module(_module, F.interpolate, attrs=("size", "scale_factor", "mode"),
                    align_corners=lambda mod: True if isinstance(mod, torch.nn.UpsamplingBilinear2d)
                    else mod.align_corners,
                    recompute_scale_factor=lambda mod: getattr(mod, "recompute_scale_factor", None))
