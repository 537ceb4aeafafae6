"""Ops lowered as compositions of fxla ops: pooling (avg / adaptive avg), group_norm, interpolate / nn.Upsample
(nearest, linear modes, bicubic, area),
addmm / baddbmm, Tensor.type_as, F.normalize and torch.einsum.

Half-precision inputs of the float compositions are computed in f32 and rounded once, like torch's CPU kernels.
Resampling (adaptive pooling with uneven windows, linear/bilinear/trilinear/bicubic interpolation) is a product with a
constant [out, in] weight matrix per spatial dim, built here with torch's index arithmetic.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F

from fxla.dialects.fxla import Sig, ops, type_of
from fxla.dialects.mlir import ir

from ..registry import register
from .indexing import int_constant, reshape, slice_dim
from .nn import _pair


def _as(ctx, x, elem):
    s = ctx.sig(x)
    return x if s.elem == elem else ctx.emit(ops.convert, x, result_type=type_of(Sig(s.shape, elem)))


def _work_elem(elem):
    return "f32" if elem in ("f16", "bf16") else elem


def _matrix(ctx, m: np.ndarray, elem: str):
    dtype = np.float64 if elem == "f64" else np.float32
    return ctx.emit(ops.constant, value=ir.DenseElementsAttr.get(np.ascontiguousarray(m.astype(dtype))))


def _resample_dim(ctx, x, dim: int, m: np.ndarray):
    """Contract dim ``dim`` of ``x`` with the constant ``m`` ([out, size]): out[..., o, ...] = sum_i m[o, i] x[.., i, ..]."""
    rank = ctx.sig(x).rank
    perm = [d for d in range(rank) if d != dim] + [dim]
    moved = x if dim == rank - 1 else ctx.emit(ops.permute, x, dims=perm)
    y = ctx.emit(ops.matmul, moved, _matrix(ctx, m.T, ctx.sig(x).elem))
    if dim == rank - 1:
        return y
    inverse = [perm.index(d) for d in range(rank)]
    return ctx.emit(ops.permute, y, dims=inverse)


# -- average pooling ---------------------------------------------------------------------------------------------
def _avg_pool(ctx, input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
              divisor_override=None, *, n):
    kernel = _pair(kernel_size, n)
    stride = kernel if stride in (None, [], ()) else _pair(stride, n)
    return ctx.emit(ops.avg_pool, input, kernel_size=kernel, stride=stride, padding=_pair(padding, n),
                    ceil_mode=bool(ceil_mode), count_include_pad=bool(count_include_pad),
                    divisor_override=int(divisor_override or 0))


def _avg_pool_module(ctx, input, *, mod, n):
    return _avg_pool(ctx, input, mod.kernel_size, mod.stride, mod.padding, mod.ceil_mode, mod.count_include_pad,
                     getattr(mod, "divisor_override", None), n=n)


register(F.avg_pool1d, torch.avg_pool1d)(partial(_avg_pool, n=1))
register(F.avg_pool2d)(partial(_avg_pool, n=2))
register(F.avg_pool3d)(partial(_avg_pool, n=3))
register(torch.nn.AvgPool1d)(partial(_avg_pool_module, n=1))
register(torch.nn.AvgPool2d)(partial(_avg_pool_module, n=2))
register(torch.nn.AvgPool3d)(partial(_avg_pool_module, n=3))



# -- power-average pooling and local response normalisation (torch's formulas, on avg_pool) -------------------
def _lp_pool(ctx, input, norm_type, kernel_size, stride=None, ceil_mode=False, *, n):
    """(sum of x^p over each window)^(1/p): avg_pool(x^p) times the window size; p = inf is max_pool(|x|)."""
    p = float(norm_type)
    kernel = _pair(kernel_size, n)
    if p in (float("inf"), float("-inf")):
        raise ctx.error(f"lp_pool with norm_type={norm_type} is not supported", "fxla lowers finite norm types",
                        "use max_pool on x.abs() for the infinity norm")
    powered = ctx.emit(ops.pow, input, ctx.tensor(p, like=input))
    mean = _avg_pool(ctx, powered, kernel, stride, 0, ceil_mode, n=n)
    # torch: sign(out) * relu(|out|) * prod(kernel), then ** (1/p)
    out = ctx.emit(ops.mul, ctx.emit(ops.sign, mean), ctx.emit(ops.relu, ctx.emit(ops.abs, mean)))
    out = ctx.emit(ops.mul, out, ctx.tensor(float(np.prod(kernel)), like=out))
    return ctx.emit(ops.pow, out, ctx.tensor(1.0 / p, like=out))


def _lp_pool_module(ctx, input, *, mod, n):
    return _lp_pool(ctx, input, mod.norm_type, mod.kernel_size, mod.stride, mod.ceil_mode, n=n)


for _n, _fn, _module in ((1, F.lp_pool1d, torch.nn.LPPool1d), (2, F.lp_pool2d, torch.nn.LPPool2d),
                         (3, F.lp_pool3d, torch.nn.LPPool3d)):
    register(_fn)(partial(_lp_pool, n=_n))
    register(_module)(partial(_lp_pool_module, n=_n))


@register(F.local_response_norm)
def _local_response_norm(ctx, input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels (zero padded)) ** beta."""
    s = ctx.sig(input)
    squares = ctx.emit(ops.mul, input, input)
    low, high = size // 2, (size - 1) // 2
    padded = ctx.emit(ops.pad, squares, low=[0, low] + [0] * (s.rank - 2), high=[0, high] + [0] * (s.rank - 2))
    total = None
    for offset in range(size):
        window = slice_dim(ctx, padded, 1, offset, offset + s.shape[1])
        total = window if total is None else ctx.emit(ops.add, total, window)
    div = ctx.emit(ops.mul, total, ctx.tensor(alpha / size, like=total))
    div = ctx.emit(ops.pow, ctx.emit(ops.add, div, ctx.tensor(float(k), like=div)), ctx.tensor(float(beta), like=div))
    return ctx.emit(ops.div, input, div)


@register(torch.nn.LocalResponseNorm)
def _local_response_norm_module(ctx, input, *, mod):
    return _local_response_norm(ctx, input, mod.size, mod.alpha, mod.beta, mod.k)


def _adaptive_matrix(size: int, out: int) -> np.ndarray:
    """torch's adaptive windows: [floor(o * size / out), ceil((o + 1) * size / out)), each averaged."""
    m = np.zeros((out, size))
    for o in range(out):
        start, end = (o * size) // out, -((-(o + 1) * size) // out)
        m[o, start:end] = 1.0 / (end - start)
    return m


def _adaptive_avg_pool(ctx, input, output_size, *, n):
    s = ctx.sig(input)
    sizes = s.shape[s.rank - n:]
    out = ctx.result_sig.shape[s.rank - n:]
    if all(size % o == 0 for size, o in zip(sizes, out)):         # even windows: a plain average pool
        kernel = tuple(size // o for size, o in zip(sizes, out))
        return ctx.emit(ops.avg_pool, input, kernel_size=kernel, stride=kernel, padding=(0,) * n)
    x = _as(ctx, input, _work_elem(s.elem))
    for i, (size, o) in enumerate(zip(sizes, out)):
        if size != o:
            x = _resample_dim(ctx, x, s.rank - n + i, _adaptive_matrix(size, o))
    return _as(ctx, x, s.elem)


def _adaptive_module(ctx, input, *, mod, n):
    return _adaptive_avg_pool(ctx, input, mod.output_size, n=n)


register(F.adaptive_avg_pool1d, torch.adaptive_avg_pool1d)(partial(_adaptive_avg_pool, n=1))
register(F.adaptive_avg_pool2d)(partial(_adaptive_avg_pool, n=2))
register(F.adaptive_avg_pool3d)(partial(_adaptive_avg_pool, n=3))
register(torch.nn.AdaptiveAvgPool1d)(partial(_adaptive_module, n=1))
register(torch.nn.AdaptiveAvgPool2d)(partial(_adaptive_module, n=2))
register(torch.nn.AdaptiveAvgPool3d)(partial(_adaptive_module, n=3))


# -- group_norm --------------------------------------------------------------------------------------------------
@register(F.group_norm, torch.group_norm)
def _group_norm(ctx, input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    s = ctx.sig(input)
    n, c = s.shape[0], s.shape[1]
    if c % num_groups:
        raise ctx.error(f"group_norm: {c} channels are not divisible by {num_groups} groups", "torch rejects it too",
                        "choose num_groups dividing the channel count")
    elem = _work_elem(s.elem)
    x = reshape(ctx, _as(ctx, input, elem), (n, num_groups, math.prod(s.shape[1:]) // num_groups))
    y = reshape(ctx, ctx.emit(ops.layer_norm, x, None, None, normalized_rank=1, eps=float(eps)), s.shape)
    per_channel = (c,) + (1,) * (s.rank - 2)
    if weight is not None:
        y = ctx.emit(ops.mul, y, reshape(ctx, _as(ctx, weight, elem), per_channel))
    if bias is not None:
        y = ctx.emit(ops.add, y, reshape(ctx, _as(ctx, bias, elem), per_channel))
    return _as(ctx, y, s.elem)


@register(torch.nn.GroupNorm)
def _group_norm_module(ctx, input, *, mod):
    target = ctx.node.target
    weight = ctx.param(f"{target}.weight") if mod.weight is not None else None
    bias = ctx.param(f"{target}.bias") if mod.bias is not None else None
    return _group_norm(ctx, input, mod.num_groups, weight, bias, mod.eps)


# -- interpolate -------------------------------------------------------------------------------------------------
def _scales(in_sizes, out_sizes, scale_factor, recompute_scale_factor):
    """torch's source/destination scale per dim (float32 arithmetic, as its CPU kernels use)."""
    n = len(in_sizes)
    if scale_factor is not None and not recompute_scale_factor:
        factors = _pair(scale_factor, n)
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
            x = ctx.emit(ops.index_select, x, int_constant(ctx, idx), dim=2 + i)
        return x
    if mode in _LINEAR_MODES:
        if _LINEAR_MODES[mode] != n:
            raise ctx.error(f"interpolate(mode={mode!r}) expects a rank-{_LINEAR_MODES[mode] + 2} input, got rank "
                            f"{s.rank}", "torch rejects it too", "use the mode matching the input's rank")
        x = _as(ctx, input, _work_elem(s.elem))
        for i in range(n):
            m = _linear_matrix(s.shape[2 + i], out[i], scales[i], bool(align_corners))
            if not (m.shape[0] == m.shape[1] and np.array_equal(m, np.eye(m.shape[0]))):
                x = _resample_dim(ctx, x, 2 + i, m)
        return _as(ctx, x, s.elem)
    if mode == "bicubic":
        if n != 2:
            raise ctx.error(f"interpolate(mode='bicubic') expects a rank-4 input, got rank {s.rank}",
                            "torch rejects it too", "pass an [N, C, H, W] input")
        x = _as(ctx, input, _work_elem(s.elem))
        for i in range(n):
            m = _cubic_matrix(s.shape[2 + i], out[i], scales[i], bool(align_corners))
            if not (m.shape[0] == m.shape[1] and np.array_equal(m, np.eye(m.shape[0]))):
                x = _resample_dim(ctx, x, 2 + i, m)
        return _as(ctx, x, s.elem)
    if mode == "area":               # torch's definition: adaptive average pooling to the output size
        return _adaptive_avg_pool(ctx, input, out, n=n)
    raise ctx.error(f"interpolate(mode={mode!r}) is not supported yet", "fxla lowers nearest, nearest-exact, linear, "
                    "bilinear, trilinear, bicubic and area", "use one of those modes")


@register(torch.nn.Upsample, torch.nn.UpsamplingNearest2d, torch.nn.UpsamplingBilinear2d)
def _upsample_module(ctx, input, *, mod):
    align = True if isinstance(mod, torch.nn.UpsamplingBilinear2d) else mod.align_corners
    return _interpolate(ctx, input, mod.size, mod.scale_factor, mod.mode, align,
                        getattr(mod, "recompute_scale_factor", None))


# -- addmm / baddbmm ---------------------------------------------------------------------------------------------
def _add_product(ctx, input, a, b, *, beta=1, alpha=1, out=None):
    if out is not None:
        raise ctx.error("out= is not supported", "fxla programs are functional", "drop out= and use the result")
    product = ctx.emit(ops.matmul, a, b)
    if alpha != 1:
        product = ctx.emit(ops.mul, product, ctx.tensor(alpha, like=product))
    if beta == 0:                  # torch ignores input entirely (even NaN/inf) when beta == 0
        return product
    if beta != 1:
        input = ctx.emit(ops.mul, ctx.tensor(input), ctx.tensor(beta, like=product))
    return ctx.emit(ops.add, ctx.tensor(input, like=product), product)


register(torch.addmm, torch.Tensor.addmm, torch.baddbmm, torch.Tensor.baddbmm)(_add_product)


# -- type_as -----------------------------------------------------------------------------------------------------
@register(torch.Tensor.type_as)
def _type_as(ctx, input, other):
    if ctx.sig(input).elem == ctx.result_sig.elem:
        return input
    return ctx.emit(ops.convert, input, result_type=ctx.result_type)


# -- F.normalize -------------------------------------------------------------------------------------------------
@register(F.normalize)
def _normalize(ctx, input, p=2.0, dim=1, eps=1e-12, out=None):
    s = ctx.sig(input)
    elem = _work_elem(s.elem)
    x = _as(ctx, input, elem)
    if p == 2:
        norm = ctx.emit(ops.sqrt, ctx.emit(ops.sum, ctx.emit(ops.mul, x, x), dims=(dim,), keepdim=True))
    elif p == 1:
        norm = ctx.emit(ops.sum, ctx.emit(ops.abs, x), dims=(dim,), keepdim=True)
    elif p == float("inf"):
        norm = ctx.emit(ops.amax, ctx.emit(ops.abs, x), dims=(dim,), keepdim=True)
    else:
        powered = ctx.emit(ops.pow, ctx.emit(ops.abs, x), ctx.tensor(float(p), like=x))
        norm = ctx.emit(ops.pow, ctx.emit(ops.sum, powered, dims=(dim,), keepdim=True),
                        ctx.tensor(1.0 / float(p), like=x))
    denom = ctx.emit(ops.maximum, norm, ctx.tensor(float(eps), like=norm))
    return _as(ctx, ctx.emit(ops.div, x, denom), s.elem)


# -- einsum ------------------------------------------------------------------------------------------------------
def _parse_einsum(ctx, equation, ranks):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ctx.error(f"einsum '{equation}' names {len(terms)} operands, got {len(ranks)}", "torch rejects it too",
                        "pass one operand per term")
    letters = set(c for c in eq if c.isalpha())
    spare = iter(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in letters)
    ell_len = max([r - (len(t) - 3) for t, r in zip(terms, ranks) if "..." in t] or [0])
    ell = "".join(next(spare) for _ in range(ell_len))
    expanded = []
    for t, r in zip(terms, ranks):
        if "..." in t:
            k = r - (len(t) - 3)
            t = t.replace("...", ell[ell_len - k:])
        if len(t) != r:
            raise ctx.error(f"einsum term '{t}' does not match a rank-{r} operand", "torch rejects it too",
                            "name one subscript per dim")
        expanded.append(t)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts = {}
        for t in expanded:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    return expanded, out


def _einsum_diagonal(ctx, x, term):
    """Take the diagonal of every subscript repeated within ``term`` ('ii' -> 'i'): the two dims moved last,
    merged into one of n * n elements and sliced with stride n + 1."""
    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        p = term.index(c)
        q = term.index(c, p + 1)
        shape = ctx.sig(x).shape
        if shape[p] != shape[q]:
            raise ctx.error(f"einsum subscript '{c}' is repeated for dims of sizes {shape[p]} and {shape[q]}",
                            "a diagonal needs equal sizes; torch rejects it too", "fix the equation")
        n = shape[p]
        rest = [i for i in range(len(term)) if i not in (p, q)]
        if rest + [p, q] != list(range(len(term))):
            x = ctx.emit(ops.permute, x, dims=rest + [p, q])
        lead = tuple(shape[i] for i in rest)
        x = reshape(ctx, x, lead + (n * n,))
        starts, limits, strides = [0] * (len(lead) + 1), list(lead) + [n * n], [1] * len(lead) + [n + 1]
        x = ctx.emit(ops.slice, x, start=starts, limit=limits, stride=strides)
        term = "".join(term[i] for i in rest) + c
    return x, term


def _einsum_reduce(ctx, x, term, keep):
    """Sum away the subscripts of ``term`` not in ``keep``."""
    drop = [i for i, c in enumerate(term) if c not in keep]
    if drop:
        x = ctx.emit(ops.sum, x, dims=tuple(drop))
        term = "".join(c for c in term if c in keep)
    return x, term


def _einsum_pair(ctx, a, ta, b, tb, keep):
    """Contract two operands; the result keeps the subscripts in ``keep`` (batch, then a's free, then b's free)."""
    a, ta = _einsum_reduce(ctx, a, ta, set(tb) | keep)
    b, tb = _einsum_reduce(ctx, b, tb, set(ta) | keep)
    sa, sb = ctx.sig(a).shape, ctx.sig(b).shape
    size = {}
    for t, s in ((ta, sa), (tb, sb)):
        for c, d in zip(t, s):
            size[c] = d if size.get(c, 1) == 1 else size[c]     # broadcast: 1 gives way (to 0 too)
    batch = [c for c in ta if c in tb and c in keep]
    contract = [c for c in ta if c in tb and c not in keep]
    free_a = [c for c in ta if c not in tb]
    free_b = [c for c in tb if c not in ta]

    def arrange(x, t, order, shape):
        perm = [t.index(c) for c in order]
        if perm != list(range(len(t))):
            x = ctx.emit(ops.permute, x, dims=perm)
        want = tuple(size[c] for c in order)
        if ctx.sig(x).shape != want:          # size-1 batch dims broadcast, as in torch.einsum
            x = ctx.emit(ops.expand, x, shape=want)
        return reshape(ctx, x, shape)

    nb, m, k, nn_ = (math.prod(size[c] for c in g) for g in (batch, free_a, contract, free_b))
    lhs = arrange(a, ta, batch + free_a + contract, (nb, m, k))
    rhs = arrange(b, tb, batch + contract + free_b, (nb, k, nn_))
    y = ctx.emit(ops.matmul, lhs, rhs)
    order = batch + free_a + free_b
    return reshape(ctx, y, tuple(size[c] for c in order)), "".join(order)


@register(torch.einsum)
def _einsum(ctx, equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    terms, out = _parse_einsum(ctx, equation, [ctx.sig(x).rank for x in operands])
    operands, terms = zip(*(_einsum_diagonal(ctx, x, t) for x, t in zip(operands, terms)))
    x, t = operands[0], terms[0]
    for i in range(1, len(operands)):
        later = set(out).union(*terms[i + 1:])
        x, t = _einsum_pair(ctx, x, t, operands[i], terms[i], later)
    x, t = _einsum_reduce(ctx, x, t, set(out))
    if t != out:
        x = ctx.emit(ops.permute, x, dims=[t.index(c) for c in out])
    if ctx.sig(x).elem != ctx.result_sig.elem:
        x = _as(ctx, x, ctx.result_sig.elem)
    return x
