"""Patterns for max pooling with indices: one variadic ``stablehlo.reduce_window`` over (values, positions)."""
from __future__ import annotations

import math

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.types import is_float
from fxla.dialects.mlir import hlo, ir

from .builder import Builder, pattern
from .nn import _padding_attr, _window_pads
from .reduce import _compare

_NO_POSITION = (1 << 63) - 1      # the position of padding: loses every tie against a real element


def _flat_positions(b: Builder, shape, lead: int) -> ir.Value:
    """i64 tensor of ``shape``: each element's row-major position within the trailing (spatial) dims."""
    spatial = shape[lead:]
    total = None
    for i in range(len(spatial)):
        iota = hlo.IotaOp(b.type(shape, "i64"), lead + i).result
        stride = math.prod(spatial[i + 1:])
        term = iota if stride == 1 else hlo.MulOp(iota, b.splat(stride, "i64", shape)).result
        total = term if total is None else hlo.AddOp(total, term).result
    return total


def max_with_position(b: Builder, av, ai, cv, ci, elem: str) -> ir.Value:
    """Whether (cv, ci) beats (av, ai) in torch's max scan: greater value, on ties the first position; a NaN beats
    every number and the later of two NaNs wins (torch's ``val > max || isnan(val)``).  A total order, so the
    reduction is associative and commutative."""
    greater = _compare(cv, av, "GT", elem)
    tie = hlo.AndOp(_compare(cv, av, "EQ", elem), _compare(ci, ai, "LT", "i64")).result
    beats = hlo.OrOp(greater, tie).result
    if not is_float(elem):
        return beats
    c_nan, a_nan = _compare(cv, cv, "NE", elem), _compare(av, av, "NE", elem)
    both = hlo.AndOp(c_nan, a_nan).result
    later = hlo.AndOp(both, _compare(ci, ai, "GT", "i64")).result
    c_only = hlo.AndOp(c_nan, hlo.NotOp(a_nan).result).result
    numbers = hlo.AndOp(beats, hlo.NotOp(hlo.OrOp(c_nan, a_nan).result).result).result
    return hlo.OrOp(hlo.OrOp(later, c_only).result, numbers).result


@pattern(ops.max_pool_with_indices)
def _max_pool_with_indices(b: Builder, x, *, kernel_size, stride, padding, dilation, ceil_mode):
    xs = b.sig(x)
    lead = xs.rank - len(kernel_size)
    pads = _window_pads(b, xs, lead, kernel_size, stride, padding, dilation)
    positions = _flat_positions(b, xs.shape, lead)
    out_types = [b.type(b.result.shape, xs.elem), b.type(b.result.shape, "i64")]
    op = hlo.ReduceWindowOp(out_types, [x, positions], [b.splat(b.lowest(xs.elem), xs.elem),
                                                        b.splat(_NO_POSITION, "i64")],
                            [1] * lead + list(kernel_size), window_strides=[1] * lead + list(stride),
                            window_dilations=[1] * lead + list(dilation), padding=_padding_attr(pads))
    sv, si = b.type((), xs.elem), b.type((), "i64")
    block = op.regions[0].blocks.append(sv, si, sv, si)
    with ir.InsertionPoint(block):
        av, ai, cv, ci = block.arguments
        pick = max_with_position(b, av, ai, cv, ci, xs.elem)
        hlo.ReturnOp([hlo.SelectOp(pick, cv, av).result, hlo.SelectOp(pick, ci, ai).result])
    return op.results[0], op.results[1]
