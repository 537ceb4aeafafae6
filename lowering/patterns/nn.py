"""Patterns for the ``nn`` family: convolution, softmax and layer normalisation."""
from __future__ import annotations

import math

from fxla.dialects.fxla import ops
from fxla.dialects.mlir import hlo

from .builder import Builder, compute_type, padding_attr, pattern


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
                              window_strides=list(stride), padding=padding_attr([(p, p) for p in padding]),
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
                              window_strides=[1] * n, padding=padding_attr(pads), lhs_dilation=list(stride),
                              rhs_dilation=list(dilation)).result
    if bias is not None:
        y = hlo.AddOp(y, b.broadcast_dims(bias, b.result.shape, [1])).result
    return y


def _softmax_parts(b: Builder, x, dim):
    """(shifted = x - max, exp(shifted), sum broadcast back) computed in the compute type along ``dim``."""
    xs = b.sig(x)
    elem = compute_type(xs.elem)
    d = dim % xs.rank if xs.rank else 0
    x = b.convert(x, elem)
    keep_dims = [i for i in range(xs.rank) if i != d]
    shape = b.dims_of(x)
    peak = b.broadcast_dims(b.reduce(x, [d], b.lowest(elem), hlo.MaxOp), shape, keep_dims)
    shifted = hlo.SubtractOp(x, peak).result
    exps = hlo.ExpOp(shifted).result
    total = b.broadcast_dims(b.reduce(exps, [d], 0, hlo.AddOp), shape, keep_dims)
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
    shape = b.dims_of(x)
    count = b.count([shape[d] for d in dims])
    x = b.convert(x, elem)

    def mean_over(v):
        total = b.reduce(v, dims, 0, hlo.AddOp)
        mean = hlo.DivOp(total, b.fill(count, elem, b.dims_of(total))).result
        return b.broadcast_dims(mean, shape, lead)

    centered = hlo.SubtractOp(x, mean_over(x)).result
    var = mean_over(hlo.MulOp(centered, centered).result)
    y = hlo.MulOp(centered, hlo.RsqrtOp(hlo.AddOp(var, b.splat(eps, elem, shape)).result).result).result
    if weight is not None:
        y = hlo.MulOp(y, b.broadcast(b.convert(weight, elem), shape)).result
    if bias is not None:
        y = hlo.AddOp(y, b.broadcast(b.convert(bias, elem), shape)).result
    return b.convert(y, b.result.elem)
