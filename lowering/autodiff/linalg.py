"""VJP rules of the ``linalg`` family: ``linear`` and ``matmul`` (1-D operands, broadcast batch dims)."""
from __future__ import annotations

import math

from fxla.dialects.fxla import ops

from .registry import vjp_rule


def _swap_last(ctx, x):
    rank = ctx.sig(x).rank
    return ctx.emit(ops.permute, x, dims=list(range(rank - 2)) + [rank - 1, rank - 2])


def _broadcast(a, b) -> tuple:
    """The broadcast of the batch shapes ``a`` and ``b`` (the forward's operands, which broadcast): a dim of 1
    takes the other's size.  Sizes may be symbolic; a symbolic size is never 1 here (a 1 would be a static dim)."""
    a, b = (1,) * (len(b) - len(a)) + tuple(a), (1,) * (len(a) - len(b)) + tuple(b)
    return tuple(y if isinstance(x, int) and x == 1 else x for x, y in zip(a, b))


@vjp_rule(ops.matmul)
def _matmul(ctx, ct, lhs, rhs, *, result):
    a_shape, b_shape = ctx.sig(lhs).shape, ctx.sig(rhs).shape
    a = ctx.reshape(lhs, (1,) + a_shape) if len(a_shape) == 1 else lhs         # [k] -> [1, k]
    b = ctx.reshape(rhs, b_shape + (1,)) if len(b_shape) == 1 else rhs         # [k] -> [k, 1]
    sa, sb = ctx.sig(a).shape, ctx.sig(b).shape
    full = _broadcast(sa[:-2], sb[:-2]) + (sa[-2], sb[-1])
    g = ctx.reshape(ct, full)
    d_a = ctx.emit(ops.matmul, g, _swap_last(ctx, b))                        # [..., m, k]
    d_b = ctx.emit(ops.matmul, _swap_last(ctx, a), g)                        # [..., k, n]
    return ctx.reshape(ctx.sum_to(d_a, sa), a_shape), ctx.reshape(ctx.sum_to(d_b, sb), b_shape)


@vjp_rule(ops.linear)
def _linear(ctx, ct, input, weight, bias, *, result):
    out, inp = ctx.sig(weight).shape
    m = math.prod(ctx.sig(input).shape[:-1])
    flat_ct = ctx.reshape(ct, (m, out))
    d_input = ctx.reshape(ctx.emit(ops.matmul, flat_ct, weight), ctx.sig(input).shape)
    d_weight = ctx.emit(ops.matmul, ctx.emit(ops.permute, flat_ct, dims=(1, 0)), ctx.reshape(input, (m, inp)))
    d_bias = None if bias is None else ctx.reshape(ctx.emit(ops.sum, flat_ct, dims=(0,), keepdim=False) if
                                                   ctx.sig(bias).shape else ctx.emit(ops.sum, flat_ct, dims=()),
                                                   ctx.sig(bias).shape)
    return d_input, d_weight, d_bias
