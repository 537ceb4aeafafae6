"""VJP rules of the ``pool`` family (see :mod:`fxla.lowering.autodiff.registry`).

* ``max_pool`` (and the legacy ``max_pool2d``): each window's cotangent goes to the one element torch's forward
  picks -- the position ``fxla.max_pool_with_indices`` returns (the first maximum in the window's row-major scan,
  the last NaN; padding never wins), recomputed in the backward from the input.  torch differentiates
  ``max_pool*d`` through its ``_with_indices`` kernel, whose indices these are.
* ``max_pool_with_indices``: through the indices the forward returned.
* ``avg_pool``: each window's cotangent, divided by torch's divisor for that window, is spread evenly over the
  window (a transposed convolution with a ones kernel); the padding is then cut away.

Cotangents are accumulated in f32 for f16/bf16 inputs and rounded once.
"""
from __future__ import annotations

import math

import numpy as np

from fxla.dialects.fxla import ops
from fxla.dialects.mlir import ir

from ..patterns.pool import avg_divisors
from .registry import vjp_rule


def _compute(elem: str) -> str:
    return "f32" if elem in ("f16", "bf16") else elem


def _scatter_positions(ctx, ct, indices, x, spatial: int):
    """The cotangent of ``x`` where each element of ``ct`` belongs to the input element at its ``indices`` entry
    (a row-major position within the trailing ``spatial`` dims of ``x``); overlapping windows add up."""
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
    _, indices = ctx.emit(ops.max_pool_with_indices, x, kernel_size=list(kernel_size), stride=list(stride),
                          padding=list(padding), dilation=list(dilation), ceil_mode=ceil_mode)
    return (_scatter_positions(ctx, ct, indices, x, len(kernel_size)),)


@vjp_rule(ops.max_pool_with_indices)
def _max_pool_with_indices(ctx, ct, x, *, result, kernel_size, stride, padding, dilation, ceil_mode):
    ct_values, _ = ct                    # (the indices are integers: never a cotangent)
    if ct_values is None:
        return (None,)
    return (_scatter_positions(ctx, ct_values, result[1], x, len(kernel_size)),)


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
    dx = ctx.emit(ops.pad, spread, low=[0, 0] + low, high=[0, 0] + high) if any(low + high) else spread
    return (ctx.like(ctx.reshape(dx, xs.shape), x),)
