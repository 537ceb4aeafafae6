"""Patterns for structured fxla ops: contractions, convolution, pooling, reductions, normalisation, layout."""
from __future__ import annotations

import math

import numpy as np

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.types import broadcast_shapes
from fxla.dialects.mlir import hlo, ir

from .builder import Builder, pattern
from .elementwise import compute_type


def _dims(dims, rank):
    return [d % rank for d in dims] if rank else []


def _dot(b: Builder, lhs, rhs, out_shape, *, lhs_batch=(), rhs_batch=(), lhs_contract, rhs_contract):
    dn = hlo.DotDimensionNumbers.get(lhs_batching_dimensions=list(lhs_batch),
                                     rhs_batching_dimensions=list(rhs_batch),
                                     lhs_contracting_dimensions=list(lhs_contract),
                                     rhs_contracting_dimensions=list(rhs_contract))
    return hlo.DotGeneralOp(b.type(out_shape, b.sig(lhs).elem), lhs, rhs, dn).result


@pattern(ops.linear)
def _linear(b: Builder, x, w, bias):
    xs = b.sig(x)
    y = _dot(b, x, w, b.result.shape, lhs_contract=[xs.rank - 1], rhs_contract=[1])
    if bias is not None:
        y = hlo.AddOp(y, b.broadcast(bias, b.result.shape)).result
    return y


@pattern(ops.matmul)
def _matmul(b: Builder, lhs, rhs):
    ls, rs = b.sig(lhs), b.sig(rhs)
    if ls.rank == 1:
        lhs = b.reshape(lhs, (1, ls.shape[0]))
        ls = b.sig(lhs)
    if rs.rank == 1:
        rhs = b.reshape(rhs, (rs.shape[0], 1))
        rs = b.sig(rhs)
    batch = broadcast_shapes(ls.shape[:-2], rs.shape[:-2])
    nb = len(batch)
    lhs = b.broadcast(lhs, batch + ls.shape[-2:])
    rhs = b.broadcast(rhs, batch + rs.shape[-2:])
    out = batch + (ls.shape[-2], rs.shape[-1])
    y = _dot(b, lhs, rhs, out, lhs_batch=range(nb), rhs_batch=range(nb), lhs_contract=[nb + 1],
             rhs_contract=[nb])
    return b.reshape(y, b.result.shape)


def _padding_attr(pairs):
    return ir.DenseIntElementsAttr.get(np.asarray(pairs, dtype=np.int64).reshape(len(pairs), 2))


@pattern(ops.conv)
def _conv(b: Builder, x, w, bias, *, stride, padding, dilation, groups, transposed, output_padding):
    xs, ws = b.sig(x), b.sig(w)
    n = xs.rank - 2
    spatial = list(range(2, 2 + n))
    dn = hlo.ConvDimensionNumbers.get(
        input_batch_dimension=0, input_feature_dimension=1, input_spatial_dimensions=spatial,
        kernel_output_feature_dimension=0, kernel_input_feature_dimension=1, kernel_spatial_dimensions=spatial,
        output_batch_dimension=0, output_feature_dimension=1, output_spatial_dimensions=spatial)
    if not transposed:
        y = hlo.ConvolutionOp(b.result_type, x, w, dn, feature_group_count=groups, batch_group_count=1,
                              window_strides=list(stride), padding=_padding_attr([(p, p) for p in padding]),
                              rhs_dilation=list(dilation)).result
    else:
        # conv_transpose == a stride-1 convolution of the input dilated by `stride`, with the kernel flipped
        # spatially and its [C, O/g] feature dims swapped per group, padded by d*(k-1)-p (+ output_padding high)
        kernel = ws.shape[2:]
        cin, cout_g = ws.shape[0], ws.shape[1]
        w = hlo.ReverseOp(w, spatial).result
        w = b.reshape(w, (groups, cin // groups, cout_g) + tuple(kernel))
        w = hlo.TransposeOp(w, [0, 2, 1] + [3 + i for i in range(n)]).result
        w = b.reshape(w, (groups * cout_g, cin // groups) + tuple(kernel))
        out_pad = list(output_padding) or [0] * n
        pads = [(d * (k - 1) - p, d * (k - 1) - p + op) for k, p, d, op in zip(kernel, padding, dilation, out_pad)]
        y = hlo.ConvolutionOp(b.result_type, x, w, dn, feature_group_count=groups, batch_group_count=1,
                              window_strides=[1] * n, padding=_padding_attr(pads), lhs_dilation=list(stride),
                              rhs_dilation=list(dilation)).result
    if bias is not None:
        y = hlo.AddOp(y, b.broadcast_dims(bias, b.result.shape, [1])).result
    return y


def _window_pads(b: Builder, xs, lead, kernel_size, stride, padding, dilation):
    pads = [(0, 0)] * lead
    for i in range(len(kernel_size)):
        size, k, s, p, d = xs.shape[lead + i], kernel_size[i], stride[i], padding[i], dilation[i]
        needed = (b.result.shape[lead + i] - 1) * s + d * (k - 1) + 1    # extent the windows cover
        pads.append((p, max(needed - size - p, 0)))                       # ceil_mode may need more on the high end
    return pads


def _reduce_window(b: Builder, x, init, body, window, strides, dilations, pads, result_type):
    elem = b.sig(x).elem
    op = hlo.ReduceWindowOp([result_type], [x], [b.splat(init, elem)], list(window), window_strides=list(strides),
                            window_dilations=list(dilations), padding=_padding_attr(pads))
    scalar = b.type((), elem)
    block = op.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        hlo.ReturnOp([body(block.arguments[0], block.arguments[1]).result])
    return op.result


def _avg_divisors(size, out, k, s, p, include_pad):
    """torch's per-window divisor along one dim: the window clipped to the padded input (include_pad), or to
    the input itself."""
    counts = []
    for o in range(out):
        start = o * s - p
        end = min(start + k, size + p)
        if not include_pad:
            start, end = max(start, 0), min(end, size)
        counts.append(end - start)
    return np.asarray(counts, dtype=np.float64)


@pattern(ops.avg_pool)
def _avg_pool(b: Builder, x, *, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    xs = b.sig(x)
    n = len(kernel_size)
    lead = xs.rank - n
    elem = compute_type(xs.elem)
    ones = [1] * n
    pads = _window_pads(b, xs, lead, kernel_size, stride, padding, ones)
    total = _reduce_window(b, b.convert(x, elem), 0, hlo.AddOp, [1] * lead + list(kernel_size),
                           [1] * lead + list(stride), [1] * xs.rank, pads, b.type(b.result.shape, elem))
    out = b.result.shape[lead:]
    if divisor_override:
        div = b.splat(divisor_override, elem, b.result.shape)
    else:
        counts = np.ones((), dtype=np.float64)
        for i in range(n):
            c = _avg_divisors(xs.shape[lead + i], out[i], kernel_size[i], stride[i], padding[i], count_include_pad)
            counts = np.multiply.outer(counts, c)
        np_dtype = np.float64 if elem == "f64" else np.float32
        attr = ir.DenseElementsAttr.get(np.ascontiguousarray(counts.astype(np_dtype)), type=b.type(out, elem).element_type)
        div = b.broadcast(hlo.ConstantOp(attr).result, b.result.shape)
    return b.convert(hlo.DivOp(total, div).result, b.result.elem)


@pattern(ops.max_pool, ops.max_pool2d)
def _max_pool(b: Builder, x, *, kernel_size, stride, padding, dilation, ceil_mode):
    xs = b.sig(x)
    lead = xs.rank - len(kernel_size)
    pads = _window_pads(b, xs, lead, kernel_size, stride, padding, dilation)
    return _reduce_window(b, x, b.lowest(xs.elem), hlo.MaxOp, [1] * lead + list(kernel_size),
                          [1] * lead + list(stride), [1] * lead + list(dilation), pads, b.result_type)


@pattern(ops.reshape)
def _reshape(b: Builder, x, *, shape):
    return hlo.ReshapeOp(b.result_type, x).result


@pattern(ops.permute)
def _permute(b: Builder, x, *, dims):
    return hlo.TransposeOp(x, _dims(dims, b.sig(x).rank)).result


def _keep(b: Builder, x, dims):
    """Dims to reduce (all when empty) normalised."""
    rank = b.sig(x).rank
    return sorted(set(_dims(dims, rank))) if dims else list(range(rank))


@pattern(ops.sum)
def _sum(b: Builder, x, *, dims, keepdim):
    # f16/bf16: accumulated in f32 and rounded once, as torch's CPU kernel does
    x = b.convert(x, compute_type(b.result.elem))
    total = b.reduce(x, _keep(b, x, dims), 0, hlo.AddOp)
    return b.reshape(b.convert(total, b.result.elem), b.result.shape)


@pattern(ops.mean)
def _mean(b: Builder, x, *, dims, keepdim):
    elem = compute_type(b.result.elem)
    reduced = _keep(b, x, dims)
    xs = b.sig(x)
    x = b.convert(x, elem)
    total = b.reduce(x, reduced, 0, hlo.AddOp)
    count = math.prod(xs.shape[d] for d in reduced)
    mean = hlo.DivOp(total, b.splat(count, elem, b.sig(total).shape)).result
    return b.reshape(b.convert(mean, b.result.elem), b.result.shape)


def _softmax_parts(b: Builder, x, dim):
    """(shifted = x - max, exp(shifted), sum broadcast back) computed in the compute type along ``dim``."""
    xs = b.sig(x)
    elem = compute_type(xs.elem)
    d = dim % xs.rank if xs.rank else 0
    x = b.convert(x, elem)
    keep_dims = [i for i in range(xs.rank) if i != d]
    peak = b.broadcast_dims(b.reduce(x, [d], b.lowest(elem), hlo.MaxOp), xs.shape, keep_dims)
    shifted = hlo.SubtractOp(x, peak).result
    exps = hlo.ExpOp(shifted).result
    total = b.broadcast_dims(b.reduce(exps, [d], 0, hlo.AddOp), xs.shape, keep_dims)
    return shifted, exps, total


def _self_difference(b: Builder, x):
    x = b.convert(x, compute_type(b.sig(x).elem))
    return hlo.SubtractOp(x, x).result


@pattern(ops.softmax)
def _softmax(b: Builder, x, *, dim):
    if b.sig(x).rank == 0:               # exp(x - x) / exp(x - x): 1, or nan for a nan or infinite x (torch)
        exps = hlo.ExpOp(_self_difference(b, x)).result
        return b.convert(hlo.DivOp(exps, exps).result, b.result.elem)
    _, exps, total = _softmax_parts(b, x, dim)
    return b.convert(hlo.DivOp(exps, total).result, b.result.elem)


@pattern(ops.log_softmax)
def _log_softmax(b: Builder, x, *, dim):
    if b.sig(x).rank == 0:               # x - x: 0, or nan for a nan or infinite x (torch)
        return b.convert(_self_difference(b, x), b.result.elem)
    shifted, _, total = _softmax_parts(b, x, dim)
    return b.convert(hlo.SubtractOp(shifted, hlo.LogOp(total).result).result, b.result.elem)


@pattern(ops.layer_norm)
def _layer_norm(b: Builder, x, weight, bias, *, normalized_rank, eps):
    xs = b.sig(x)
    elem = compute_type(xs.elem)
    dims = list(range(xs.rank - normalized_rank, xs.rank))
    lead = list(range(xs.rank - normalized_rank))
    count = math.prod(xs.shape[d] for d in dims)
    x = b.convert(x, elem)

    def mean_over(v):
        total = b.reduce(v, dims, 0, hlo.AddOp)
        mean = hlo.DivOp(total, b.splat(count, elem, b.sig(total).shape)).result
        return b.broadcast_dims(mean, xs.shape, lead)

    centered = hlo.SubtractOp(x, mean_over(x)).result
    var = mean_over(hlo.MulOp(centered, centered).result)
    y = hlo.MulOp(centered, hlo.RsqrtOp(hlo.AddOp(var, b.splat(eps, elem, xs.shape)).result).result).result
    if weight is not None:
        y = hlo.MulOp(y, b.broadcast(b.convert(weight, elem), xs.shape)).result
    if bias is not None:
        y = hlo.AddOp(y, b.broadcast(b.convert(bias, elem), xs.shape)).result
    return b.convert(y, b.result.elem)

