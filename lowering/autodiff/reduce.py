"""VJP rules of the ``reduce`` family: a reduction's cotangent is broadcast back over the reduced dims."""
from __future__ import annotations

import math

from fxla.dialects.fxla import ops

from .registry import vjp_rule


def _dims(rank, dims):
    return sorted({d % rank for d in dims}) if dims else list(range(rank))


def _kept(ctx, ct, x, dims, keepdim):
    """``ct`` reshaped so it broadcasts against ``x`` (size-1 dims where ``dims`` were reduced)."""
    shape = ctx.sig(x).shape
    reduced = _dims(len(shape), dims)
    kept = tuple(1 if i in reduced else n for i, n in enumerate(shape))
    return ctx.reshape(ct, kept)


@vjp_rule(ops.sum)
def _sum(ctx, ct, x, *, result, dims, keepdim):
    return (ctx.like(ctx.expand(_kept(ctx, ct, x, dims, keepdim), ctx.sig(x).shape), x),)


@vjp_rule(ops.mean)
def _mean(ctx, ct, x, *, result, dims, keepdim):
    shape = ctx.sig(x).shape
    count = math.prod(shape[d] for d in _dims(len(shape), dims))
    scaled = ctx.emit(ops.div, ct, ctx.tensor(float(count), like=ct))
    return (ctx.like(ctx.expand(_kept(ctx, scaled, x, dims, keepdim), shape), x),)
