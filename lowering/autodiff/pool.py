"""VJP rules of the ``pool`` family (see :mod:`fxla.lowering.autodiff.registry`).

* ``max_pool`` (and the legacy ``max_pool2d``): each window's cotangent goes to the one element torch's forward
  picks (torch differentiates ``max_pool*d`` through its ``_with_indices`` kernel): the first maximum in the
  window's row-major scan, the last NaN of a window holding NaN; padding never wins.  The backward finds it from
  the input and the forward's result: one strided slice of the padded input per window element, compared with
  the result (equal, or NaN), and a chain of selects keeping the first (last) such element's offset; the
  cotangent is scatter-added at the window's position plus that offset, one position (i32 where it fits) in the
  flattened input: a one-dimensional scatter, whose index tuples XLA CPU builds in a sixth of the memory of
  (batch, channel, position) in int64.  (A variadic ``reduce_window`` of (value, int64 position) pairs, as
  ``max_pool_with_indices`` lowers, cost XLA CPU 2-3x as much.)
* ``max_pool_with_indices``: through the indices the forward returned.
* ``avg_pool``: each window's cotangent, divided by torch's divisor for that window, is spread evenly over the
  window (a transposed convolution with a ones kernel); the padding is then cut away.

Cotangents are accumulated in f32 for f16/bf16 inputs and rounded once.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from fxla.dialects.fxla import Sig, ops, type_of
from fxla.dialects.mlir import ir

from ..emit import may_be_nonzero
from ..patterns.pool import avg_divisors
from .registry import vjp_rule


def _compute(elem: str) -> str:
    return "f32" if elem in ("f16", "bf16") else elem


def _scatter_positions(ctx, ct, indices, x, spatial: int):
    """The cotangent of ``x`` where each element of ``ct`` belongs to the input element at its ``indices`` entry
    (a row-major position within the trailing ``spatial`` dims of ``x``; all of them: a position in the flattened
    ``x``, a one-dimensional scatter); overlapping windows add up."""
    xs, cs = ctx.sig(x), ctx.sig(ct)
    lead = xs.rank - spatial
    batch = tuple(xs.shape[:lead])
    elem = _compute(xs.elem)
    outputs = math.prod(cs.shape[lead:])
    src = ctx.reshape(ctx.convert(ct, elem), batch + (outputs,))
    index = ctx.reshape(indices, batch + (outputs,))
    zeros = ctx.full(0, batch + (math.prod(xs.shape[lead:]),), elem)
    dx = ctx.emit(ops.scatter, zeros, index, src, dim=lead, reduce="add")
    return ctx.like(ctx.reshape(dx, xs.shape), x)


@vjp_rule(ops.max_pool, ops.max_pool2d)
def _max_pool(ctx, ct, x, *, result, kernel_size, stride, padding, dilation, ceil_mode):
    xs, ys = ctx.sig(x), ctx.sig(result)
    n = len(kernel_size)
    lead = xs.rank - n
    if 0 in ys.shape or 0 in xs.shape:
        return (ctx.zeros_like(x),)
    low, high = [0] * lead, [0] * lead
    for i in range(n):                 # the padded extent the windows cover (ceil_mode may need more at the end)
        needed = (ys.shape[lead + i] - 1) * stride[i] + dilation[i] * (kernel_size[i] - 1) + 1
        low.append(padding[i])
        high.append(torch.sym_max(needed - xs.shape[lead + i] - padding[i], 0))    # (symbolic: no guard)
    padded, real = x, None
    if may_be_nonzero(low + high):
        padded = ctx.emit(ops.pad, x, low=low, high=high)
        real = ctx.emit(ops.pad, ctx.full(True, xs.shape, "i1"), low=low, high=high)  # padding never wins
    taps = []                          # per window element, row-major: its slice start in the padded input
    for offsets in np.ndindex(*kernel_size):
        taps.append([0] * lead + [o * d for o, d in zip(offsets, dilation)])
    steps = [1] * lead + list(stride)
    y_nan = ctx.emit(ops.ne, result, result)

    def tap(value, start):
        limit = [s + (m - 1) * k + 1 for s, m, k in zip(start, ys.shape, steps)]
        return ctx.emit(ops.slice, value, start=start, limit=limit, stride=steps)

    # which window element torch picked (the first maximum, or the last NaN of a window holding NaN), as its
    # offset from the window's first element in the flattened spatial dims of x
    sizes = xs.shape[lead:]
    flat = [math.prod(sizes[i + 1:]) for i in range(n)]
    offsets = [sum(st * f for st, f in zip(start[lead:], flat)) for start in taps]
    candidates = []
    for start in taps:
        v = tap(padded, start)
        hit = ctx.emit(ops.logical_or, ctx.emit(ops.eq, v, result), ctx.emit(ops.ne, v, v))
        candidates.append(hit if real is None else ctx.emit(ops.logical_and, tap(real, start), hit))
    wide = math.prod(xs.shape) >= 1 << 31               # (positions in i32 where they fit)
    index_elem, index_dtype = ("i64", np.int64) if wide else ("i32", np.int32)
    numbers = {}

    def number(o):
        """The offset ``o`` as an ``index_elem`` scalar: a constant, or computed from the sizes it is made of."""
        key = str(o.node.expr) if isinstance(o, torch.SymInt) else o
        if key not in numbers:
            numbers[key] = ctx.convert(ctx.tensor(o), index_elem) if isinstance(o, torch.SymInt) else \
                ctx.emit(ops.constant, value=ir.DenseElementsAttr.get(np.asarray(o, dtype=index_dtype)))
        return numbers[key]
    first, last = number(offsets[-1]), number(offsets[0])      # (some element of every window is picked)
    for t in range(1, len(taps)):
        last = ctx.emit(ops.where, candidates[t], number(offsets[t]), last)
    for t in reversed(range(len(taps) - 1)):
        first = ctx.emit(ops.where, candidates[t], number(offsets[t]), first)
    position = ctx.emit(ops.where, y_nan, last, first)
    # plus the position of the window's first element (it may lie in the padding; the picked one never does) and
    # of its plane: a position in the flattened x, so that the scatter is one-dimensional (XLA CPU builds a scatter's
    # full index tuples; one i32 each is a sixth of (batch, channel, position) in int64)
    planes = [math.prod(xs.shape[j + 1:lead]) * math.prod(sizes) for j in range(lead)]
    for j, (start, step) in enumerate([(0, p) for p in planes] +
                                      [(-padding[i] * flat[i], stride[i] * flat[i]) for i in range(n)]):
        m = ys.shape[j]
        if m == 1 and start == 0:
            continue
        if isinstance(start, torch.SymInt) or isinstance(step, torch.SymInt):    # (sizes: computed, not fixed)
            along = ctx.emit(ops.arange, result_type=type_of(Sig((m,), index_elem)), start=0.0, step=1.0, length=m)
            along = ctx.emit(ops.add, ctx.emit(ops.mul, along, number(step)), number(start))
        else:
            along = ctx.emit(ops.arange, result_type=type_of(Sig((m,), index_elem)), start=float(start),
                             step=float(step), length=m)
        along = ctx.reshape(along, tuple(m if k == j else 1 for k in range(ys.rank)))
        position = ctx.emit(ops.add, position, along)
    return (_scatter_positions(ctx, ct, position, x, xs.rank),)


@vjp_rule(ops.max_pool_with_indices)
def _max_pool_with_indices(ctx, ct, x, *, result, kernel_size, stride, padding, dilation, ceil_mode):
    ct_values, _ = ct                    # (the indices are integers: never a cotangent)
    if ct_values is None:
        return (None,)
    return (_scatter_positions(ctx, ct_values, result[1], x, len(kernel_size)),)


def _symbolic_divisors(ctx, in_sizes, out_sizes, kernel_size, stride, padding, include_pad, elem):
    """:func:`avg_divisors` of every window where sizes are symbolic, as ops: along each pooled dim the window
    ``[o * s - p, o * s - p + k)`` clipped to the padded input (``include_pad``) or to the input, the dims' counts
    multiplied (in i64: exact, then converted once, as the static divisors' f64 products are), shaped to
    broadcast over the pooled dims of the cotangent."""
    n = len(kernel_size)
    total = None
    for i in range(n):
        k, s, p = kernel_size[i], stride[i], padding[i]
        o = ctx.emit(ops.arange, result_type=type_of(Sig((out_sizes[i],), "i64")), start=0.0, step=1.0,
                     length=out_sizes[i])
        start = ctx.emit(ops.sub, ctx.emit(ops.mul, o, ctx.tensor(s)), ctx.tensor(p))
        end = ctx.emit(ops.minimum, ctx.emit(ops.add, start, ctx.tensor(k)), ctx.tensor(in_sizes[i] + p))
        if not include_pad:
            start = ctx.emit(ops.maximum, start, ctx.tensor(0))
            end = ctx.emit(ops.minimum, end, ctx.tensor(in_sizes[i]))
        count = ctx.reshape(ctx.emit(ops.sub, end, start), tuple(out_sizes[i] if j == i else 1 for j in range(n)))
        total = count if total is None else ctx.emit(ops.mul, total, count)
    return ctx.convert(total, elem)


@vjp_rule(ops.avg_pool)
def _avg_pool(ctx, ct, x, *, result, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    xs, cs = ctx.sig(x), ctx.sig(ct)
    n = len(kernel_size)
    lead = xs.rank - n
    elem = _compute(xs.elem)
    in_sizes, out_sizes = xs.shape[lead:], cs.shape[lead:]
    g = ctx.convert(ct, elem)
    if divisor_override:
        g = ctx.emit(ops.div, g, ctx.tensor(float(divisor_override), like=g))
    elif any(isinstance(d, torch.SymInt) for d in tuple(in_sizes) + tuple(out_sizes)):
        g = ctx.emit(ops.div, g, _symbolic_divisors(ctx, in_sizes, out_sizes, kernel_size, stride, padding,
                                                    count_include_pad, elem))
    else:
        counts = np.ones((), dtype=np.float64)
        for i in range(n):
            counts = np.multiply.outer(counts, avg_divisors(in_sizes[i], out_sizes[i], kernel_size[i], stride[i],
                                                         padding[i], count_include_pad))
        np_dtype = np.float64 if elem == "f64" else np.float32
        divisor = ctx.emit(ops.constant, value=ir.DenseElementsAttr.get(np.ascontiguousarray(counts.astype(np_dtype))))
        g = ctx.emit(ops.div, g, divisor)          # (broadcast over the batch dims)
    # spread each window's share over its window: a stride-`stride` transposed convolution with a ones kernel,
    # one feature, the batch dims folded into one; it covers the padded input from its low end
    batch = math.prod(xs.shape[:lead])
    g = ctx.reshape(g, (batch, 1) + tuple(out_sizes))
    ones = ctx.full(1, (1, 1) + tuple(kernel_size), elem)
    spread = ctx.emit(ops.conv, g, ones, None, stride=list(stride), padding=[0] * n, dilation=[1] * n,
                      transposed=True)
    low = [-p for p in padding]
    high = [size + p - c for size, p, c in zip(in_sizes, padding, ctx.sig(spread).shape[2:])]
    dx = ctx.emit(ops.pad, spread, low=[0, 0] + low, high=[0, 0] + high) if may_be_nonzero(low + high) else spread
    return (ctx.like(ctx.reshape(dx, xs.shape), x),)
