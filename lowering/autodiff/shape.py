"""VJP rules of the ``shape`` family: each moves the cotangent back the way its op moved elements.

``reshape`` reshapes it back, ``permute`` applies the inverse permutation, ``expand`` sums over the broadcast
dims, ``concat`` slices each input's part out (converted back to that input's element type: concat promotes),
``flip`` flips it again, and ``pad`` pads it by the negated amounts: the padding is cut off and what a negative
padding cropped comes back as zeros (the pad ``value`` is an attribute and gets no gradient).  ``keep_history``
gives its cotangent to ``history`` as it is (the value changed in place under ``torch.no_grad()`` gets none).
"""
from __future__ import annotations

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.types import is_float

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


@vjp_rule(ops.keep_history)
def _keep_history(ctx, ct, x, history, *, result):
    return (None, ct)


@vjp_rule(ops.expand)
def _expand(ctx, ct, x, *, result, shape):
    return (ctx.sum_to(ct, ctx.sig(x).shape),)


@vjp_rule(ops.concat)
def _concat(ctx, ct, inputs, *, result, dim):
    d = dim % ctx.sig(result).rank
    grads, at = [], 0
    for x in inputs:
        s = ctx.sig(x)
        size = s.shape[d]
        grads.append(ctx.like(ctx.slice_dim(ct, d, at, at + size), x) if is_float(s.elem) else None)
        at += size
    return grads


@vjp_rule(ops.flip)
def _flip(ctx, ct, x, *, result, dims):
    return (ctx.emit(ops.flip, ct, dims=list(dims)) if dims else ct,)


@vjp_rule(ops.pad)
def _pad(ctx, ct, x, *, result, low, high, value):
    if not any(low) and not any(high):
        return (ct,)
    return (ctx.emit(ops.pad, ct, low=[-n for n in low], high=[-n for n in high]),)
