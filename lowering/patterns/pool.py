"""Patterns for the ``pool`` family: ``stablehlo.reduce_window`` over the pooled dims; max pooling with
indices reduces (value, position) pairs in one variadic window."""
from __future__ import annotations

import math

import numpy as np

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.symbolic import DYNAMIC
from fxla.dialects.fxla.types import is_float
from fxla.dialects.mlir import hlo, ir

from .builder import Builder, compare, compute_type, pattern


def _window_pads(b: Builder, x, lead, kernel_size, stride, padding, dilation, ceil_mode):
    """The (low, high) padding of each dim of ``x``'s pooling windows: ``padding`` on both ends, and in ceil mode
    the high end padded to where the last window ends (a ``tensor<i64>`` where that depends on a ``?`` size)."""
    xs = b.sig(x)
    pads = [(0, 0)] * lead
    for i in range(len(kernel_size)):
        size, k, s, p, d = xs.shape[lead + i], kernel_size[i], stride[i], padding[i], dilation[i]
        out = b.result.shape[lead + i]
        if not ceil_mode and DYNAMIC in (size, out):
            pads.append((p, p))             # (floor mode: the same windows as torch's, whatever the size)
            continue
        # the windows cover (out - 1) * s + d * (k - 1) + 1 elements; in ceil mode they may overhang the padding
        out = b.dims()[lead + i] if out == DYNAMIC else out
        size = b.dim_of(x, lead + i) if size == DYNAMIC else size
        needed = b.arith(hlo.AddOp, b.arith(hlo.MulOp, out, s), d * (k - 1) + 1 - s)
        pads.append((p, b.arith(hlo.MaxOp, b.arith(hlo.SubtractOp, needed, b.arith(hlo.AddOp, size, p)), 0)))
    return pads


def _reduce_window(b: Builder, x, init, body, window, strides, dilations, pads, result_type):
    elem = b.sig(x).elem
    return b.window_reduce([x], [b.splat(init, elem)], window, pads, [result_type],
                           lambda acc, new: [body(acc, new).result], strides=strides, dilations=dilations)[0]


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


def _divisors(b: Builder, x, lead, kernel_size, stride, padding, include_pad, elem) -> ir.Value:
    """torch's per-window divisors of an average pool over ``?`` sizes, as :func:`avg_divisors` computes them,
    in ops: along each pooled dim the window ``[o * s - p, o * s - p + k)`` clipped to the padded input
    (``include_pad``) or to the input, the dims' counts multiplied, broadcast to the result's shape."""
    dims = b.dims()
    total = None
    for i in range(len(kernel_size)):
        k, s, p = kernel_size[i], stride[i], padding[i]
        out, size = dims[lead + i], b.dim_of(x, lead + i)
        o = b.iota([out], 0, "i64")
        start = hlo.SubtractOp(hlo.MulOp(o, b.splat(s, "i64", [out])).result, b.splat(p, "i64", [out])).result
        end = hlo.MinOp(hlo.AddOp(start, b.splat(k, "i64", [out])).result,
                        b.fill(b.arith(hlo.AddOp, size, p), "i64", [out])).result
        if not include_pad:
            start = hlo.MaxOp(start, b.splat(0, "i64", [out])).result
            end = hlo.MinOp(end, b.fill(size, "i64", [out])).result
        count = b.broadcast_dims(hlo.SubtractOp(end, start).result, dims, [lead + i])
        total = count if total is None else hlo.MulOp(total, count).result
    return b.convert(total, elem)


@pattern(ops.avg_pool)
def _avg_pool(b: Builder, x, *, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    xs = b.sig(x)
    n = len(kernel_size)
    lead = xs.rank - n
    elem = compute_type(xs.elem)
    ones = [1] * n
    pads = _window_pads(b, x, lead, kernel_size, stride, padding, ones, ceil_mode)
    total = _reduce_window(b, b.convert(x, elem), 0, hlo.AddOp, [1] * lead + list(kernel_size),
                           [1] * lead + list(stride), [1] * xs.rank, pads, b.type(b.result.shape, elem))
    out = b.result.shape[lead:]
    if divisor_override:
        div = b.splat(divisor_override, elem, b.result.shape)
    elif DYNAMIC in xs.shape[lead:]:
        if ceil_mode or (any(padding) and not count_include_pad):      # (divisors vary with the window's position)
            div = _divisors(b, x, lead, kernel_size, stride, padding, count_include_pad, elem)
        else:   # floor-mode windows counting the padding hold k elements each, whatever the size
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
    pads = _window_pads(b, x, lead, kernel_size, stride, padding, dilation, ceil_mode)
    return _reduce_window(b, x, b.lowest(xs.elem), hlo.MaxOp, [1] * lead + list(kernel_size),
                          [1] * lead + list(stride), [1] * lead + list(dilation), pads, b.result_type)


_NO_POSITION = (1 << 63) - 1      # the position of padding: loses every tie against a real element


def _flat_positions(b: Builder, x: ir.Value, lead: int) -> ir.Value:
    """i64 tensor of ``x``'s shape: each element's row-major position within the trailing (spatial) dims."""
    dims = b.dims_of(x)
    spatial = dims[lead:]
    total = None
    for i in range(len(spatial)):
        iota = b.iota(dims, lead + i, "i64")
        stride = b.count(spatial[i + 1:])
        term = iota if stride == 1 else hlo.MulOp(iota, b.fill(stride, "i64", dims)).result
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
    pads = _window_pads(b, x, lead, kernel_size, stride, padding, dilation, ceil_mode)
    out_types = [b.type(b.result.shape, xs.elem), b.type(b.result.shape, "i64")]

    def body(av, ai, cv, ci):
        pick = max_with_position(b, av, ai, cv, ci, xs.elem)
        return [hlo.SelectOp(pick, cv, av).result, hlo.SelectOp(pick, ci, ai).result]
    return tuple(b.window_reduce([x, _flat_positions(b, x, lead)],
                                 [b.splat(b.lowest(xs.elem), xs.elem), b.splat(_NO_POSITION, "i64")],
                                 [1] * lead + list(kernel_size), pads, out_types, body,
                                 strides=[1] * lead + list(stride), dilations=[1] * lead + list(dilation)))
