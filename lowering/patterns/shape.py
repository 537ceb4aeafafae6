"""Patterns for the ``shape`` family: reshape, transpose, broadcast, concatenate, reverse and pad."""
from __future__ import annotations

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.symbolic import DYNAMIC
from fxla.dialects.fxla.types import is_float
from fxla.dialects.mlir import hlo

from .builder import Builder, normalized_dims, pattern


@pattern(ops.reshape)
def _reshape(b: Builder, x, *, shape):
    return b.reshape(x, b.dims())


@pattern(ops.permute)
def _permute(b: Builder, x, *, dims):
    return hlo.TransposeOp(x, normalized_dims(dims, b.sig(x).rank)).result


@pattern(ops.expand)
def _expand(b: Builder, x, *, shape):
    return b.broadcast(x, b.dims())


@pattern(ops.concat)
def _concat(b: Builder, inputs, *, dim):
    values = [b.convert(v, b.result.elem) for v in inputs]
    return hlo.ConcatenateOp(values, dim % b.result.rank).result


@pattern(ops.dim_size)
def _dim_size(b: Builder, x, *, dim):
    size = hlo.GetDimensionSizeOp(x, dim % b.sig(x).rank).result      # (a tensor<i32>)
    return hlo.ConvertOp(b.result_type, size).result


@pattern(ops.detach)
def _detach(b: Builder, x, *, first_order=None):
    return x                 # (gradients are fxla's: in StableHLO a detach is its input)


@pattern(ops.keep_history)
def _keep_history(b: Builder, x, history):
    return x                 # (the history is for fxla's gradients only)


@pattern(ops.no_gradient)
def _no_gradient(b: Builder, x, *, op, reason):
    return x


@pattern(ops.flip)
def _flip(b: Builder, x, *, dims):
    dims = normalized_dims(dims, b.sig(x).rank)
    return hlo.ReverseOp(x, dims).result if dims else x


@pattern(ops.pad)
def _pad(b: Builder, x, *, low, high, value):
    elem = b.result.elem
    fill = b.splat(value if is_float(elem) else int(value), elem)
    if DYNAMIC not in low and DYNAMIC not in high:
        return hlo.PadOp(x, fill, list(low), list(high), [0] * len(low)).result
    return hlo.DynamicPadOp(b.result_type, x, fill, b.shape_value(b.sizes("low", low)),
                            b.shape_value(b.sizes("high", high)), b.shape_value([0] * len(low))).result
