"""Patterns for the ``pool`` family: ``stablehlo.reduce_window`` over the pooled dims; max pooling with
indices reduces (value, position) pairs in one variadic window."""
from __future__ import annotations

import math

import numpy as np

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.symbolic import DYNAMIC, NotPolymorphicError
from fxla.dialects.fxla.types import is_float
from fxla.dialects.mlir import hlo, ir

from .builder import Builder, compare, compute_type, padding_attr, pattern


def _window_pads(b: Builder, xs, lead, kernel_size, stride, padding, dilation, ceil_mode):
    pads = [(0, 0)] * lead
    for i in range(len(kernel_size)):
        size, k, s, p, d = xs.shape[lead + i], kernel_size[i], stride[i], padding[i], dilation[i]
        if size == DYNAMIC:
            if ceil_mode:
                raise NotPolymorphicError("ceil_mode windows over a ? dim")
            pads.append((p, p))         # (floor mode: the same windows as torch's, whatever the size)
            continue
        needed = (b.result.shape[lead + i] - 1) * s + d * (k - 1) + 1    # extent the windows cover
        pads.append((p, max(needed - size - p, 0)))                       # ceil_mode may need more on the high end
    return pads


def _reduce_window(b: Builder, x, init, body, window, strides, dilations, pads, result_type):
    elem = b.sig(x).elem
    op = hlo.ReduceWindowOp([result_type], [x], [b.splat(init, elem)], list(window), window_strides=list(strides),
                            window_dilations=list(dilations), padding=padding_attr(pads))
    scalar = b.type((), elem)
    block = op.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        hlo.ReturnOp([body(block.arguments[0], block.arguments[1]).result])
    return op.result


def avg_divisors(size, out, k, s, p, include_pad):
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
    pads = _window_pads(b, xs, lead, kernel_size, stride, padding, ones, ceil_mode)
    total = _reduce_window(b, b.convert(x, elem), 0, hlo.AddOp, [1] * lead + list(kernel_size),
                           [1] * lead + list(stride), [1] * xs.rank, pads, b.type(b.result.shape, elem))
    out = b.result.shape[lead:]
    if divisor_override:
        div = b.splat(divisor_override, elem, b.result.shape)
    elif DYNAMIC in xs.shape[lead:]:
        # floor-mode windows counting the padding hold k elements each, whatever the size; other divisors vary
        # with the window's position, which a ? size leaves unknown here
        if ceil_mode or (any(padding) and not count_include_pad):
            raise NotPolymorphicError("position-dependent divisors over a ? dim")
        div = b.splat(float(math.prod(kernel_size)), elem, b.result.shape)
    else:
        counts = np.ones((), dtype=np.float64)
        for i in range(n):
            c = avg_divisors(xs.shape[lead + i], out[i], kernel_size[i], stride[i], padding[i], count_include_pad)
            counts = np.multiply.outer(counts, c)
        np_dtype = np.float64 if elem == "f64" else np.float32
        attr = ir.DenseElementsAttr.get(np.ascontiguousarray(counts.astype(np_dtype)), type=b.type(out, elem).element_type)
        div = b.broadcast(hlo.ConstantOp(attr).result, b.result.shape)
    return b.convert(hlo.DivOp(total, div).result, b.result.elem)


@pattern(ops.max_pool, ops.max_pool2d)
def _max_pool(b: Builder, x, *, kernel_size, stride, padding, dilation, ceil_mode):
    xs = b.sig(x)
    lead = xs.rank - len(kernel_size)
    pads = _window_pads(b, xs, lead, kernel_size, stride, padding, dilation, ceil_mode)
    return _reduce_window(b, x, b.lowest(xs.elem), hlo.MaxOp, [1] * lead + list(kernel_size),
                          [1] * lead + list(stride), [1] * lead + list(dilation), pads, b.result_type)


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
    greater = compare(cv, av, "GT", elem)
    tie = hlo.AndOp(compare(cv, av, "EQ", elem), compare(ci, ai, "LT", "i64")).result
    beats = hlo.OrOp(greater, tie).result
    if not is_float(elem):
        return beats
    c_nan, a_nan = compare(cv, cv, "NE", elem), compare(av, av, "NE", elem)
    both = hlo.AndOp(c_nan, a_nan).result
    later = hlo.AndOp(both, compare(ci, ai, "GT", "i64")).result
    c_only = hlo.AndOp(c_nan, hlo.NotOp(a_nan).result).result
    numbers = hlo.AndOp(beats, hlo.NotOp(hlo.OrOp(c_nan, a_nan).result).result).result
    return hlo.OrOp(hlo.OrOp(later, c_only).result, numbers).result


@pattern(ops.max_pool_with_indices)
def _max_pool_with_indices(b: Builder, x, *, kernel_size, stride, padding, dilation, ceil_mode):
    xs = b.sig(x)
    lead = xs.rank - len(kernel_size)
    pads = _window_pads(b, xs, lead, kernel_size, stride, padding, dilation, ceil_mode)
    positions = _flat_positions(b, xs.shape, lead)
    out_types = [b.type(b.result.shape, xs.elem), b.type(b.result.shape, "i64")]
    op = hlo.ReduceWindowOp(out_types, [x, positions], [b.splat(b.lowest(xs.elem), xs.elem),
                                                        b.splat(_NO_POSITION, "i64")],
                            [1] * lead + list(kernel_size), window_strides=[1] * lead + list(stride),
                            window_dilations=[1] * lead + list(dilation), padding=padding_attr(pads))
    sv, si = b.type((), xs.elem), b.type((), "i64")
    block = op.regions[0].blocks.append(sv, si, sv, si)
    with ir.InsertionPoint(block):
        av, ai, cv, ci = block.arguments
        pick = max_with_position(b, av, ai, cv, ci, xs.elem)
        hlo.ReturnOp([hlo.SelectOp(pick, cv, av).result, hlo.SelectOp(pick, ci, ai).result])
    return op.results[0], op.results[1]
