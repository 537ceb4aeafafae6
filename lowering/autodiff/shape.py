"""VJP rules of the ``shape`` family: each moves the cotangent back the way its op moved elements."""
from __future__ import annotations

from fxla.dialects.fxla import ops

from .registry import vjp_rule


@vjp_rule(ops.reshape)
def _reshape(ctx, ct, x, *, result, shape):
    return (ctx.reshape(ct, ctx.sig(x).shape),)


@vjp_rule(ops.permute)
def _permute(ctx, ct, x, *, result, dims):
    rank = ctx.sig(x).rank
    dims = [d % rank for d in dims] if rank else []
    inverse = [0] * rank
    for i, d in enumerate(dims):
        inverse[d] = i
    return (ctx.emit(ops.permute, ct, dims=inverse),)


@vjp_rule(ops.expand)
def _expand(ctx, ct, x, *, result, shape):
    return (ctx.sum_to(ct, ctx.sig(x).shape),)
