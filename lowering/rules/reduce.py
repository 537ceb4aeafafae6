"""Reductions: sum/mean, amax/amin, max/min (all three overloads), argmax/argmin, prod, var/std, any/all,
logsumexp, sort/argsort, topk.  Ops with (values, indices) results return torch's named tuples."""
from __future__ import annotations

from functools import partial

import torch

from fxla.dialects.fxla import Sig, ops, type_of
from fxla.dialects.fxla.types import is_float
from fxla.dialects.mlir import ir

from ..dtypes import elem_of
from ..emit import norm_root, refuse_bool
from ..registry import register


def _dims(dim):
    return () if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))


def _reduce(ctx, input, dim=None, keepdim=False, *, dtype=None, opdef):
    dims = () if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    if dtype is not None:
        input = ctx.emit(ops.convert, input, result_type=type_of(Sig(ctx.sig(input).shape, elem_of(dtype))))
    result = ctx.emit(opdef, input, dims=dims, keepdim=bool(keepdim))
    if dtype is not None and ctx.sig(result).elem != elem_of(dtype):
        # fxla.sum widens integers to i64; an explicit dtype= (e.g. int32) is kept by torch.  Integer sums wrap
        # modulo 2**bits, so summing in i64 and narrowing gives the same values.
        result = ctx.emit(ops.convert, result, result_type=ctx.result_type)
    return result


for _opdef, _keys in ((ops.sum, (torch.sum, torch.Tensor.sum)), (ops.mean, (torch.mean, torch.Tensor.mean))):
    register(*_keys)(partial(_reduce, opdef=_opdef))


def _extreme(ctx, input, dim=(), keepdim=False, *, opdef):
    return ctx.emit(opdef, input, dims=_dims(dim), keepdim=bool(keepdim))


register(torch.amax, torch.Tensor.amax)(partial(_extreme, opdef=ops.amax))
register(torch.amin, torch.Tensor.amin)(partial(_extreme, opdef=ops.amin))


def _max_min(ctx, input, dim=None, keepdim=False, *, extreme, arg, elementwise, result):
    """torch.max(x) / torch.max(x, dim, keepdim) -> (values, indices) / torch.max(x, other)."""
    if isinstance(dim, ir.Value):
        return ctx.emit(elementwise, input, dim)
    if dim is None:             # (torch's gradient is shared among the NaNs where the result is NaN)
        nan_ties = True if is_float(ctx.sig(input).elem) else None
        return ctx.emit(extreme, input, dims=(), keepdim=False, nan_ties=nan_ties)
    indices = ctx.emit(arg, input, dim=dim, keepdim=bool(keepdim))
    if not is_float(ctx.sig(input).elem):
        return result((ctx.emit(extreme, input, dims=(dim,), keepdim=bool(keepdim)), indices))
    # the values read at the indices: the same numbers as the extreme, and torch's gradient (all of it to the
    # element the index names, where amax would share it among ties)
    rank = ctx.sig(input).rank
    kept = indices if keepdim or rank == 0 else ctx.reshape(
        indices, tuple(1 if d == dim % rank else n for d, n in enumerate(ctx.sig(input).shape)))
    values = ctx.emit(ops.gather, input, kept, dim=dim)
    return result((values if keepdim or rank == 0 else ctx.reshape(values, ctx.sig(indices).shape), indices))


register(torch.max, torch.Tensor.max)(partial(_max_min, extreme=ops.amax, arg=ops.argmax, elementwise=ops.maximum,
                                              result=torch.return_types.max))
register(torch.min, torch.Tensor.min)(partial(_max_min, extreme=ops.amin, arg=ops.argmin, elementwise=ops.minimum,
                                              result=torch.return_types.min))


def _arg(ctx, input, dim=None, keepdim=False, *, opdef):
    refuse_bool(ctx, input, opdef.name)
    return ctx.emit(opdef, input, dim=dim, keepdim=bool(keepdim))


register(torch.argmax, torch.Tensor.argmax)(partial(_arg, opdef=ops.argmax))
register(torch.argmin, torch.Tensor.argmin)(partial(_arg, opdef=ops.argmin))


@register(torch.prod, torch.Tensor.prod)
def _prod(ctx, input, dim=None, keepdim=False, *, dtype=None):
    return _reduce(ctx, input, dim, keepdim, dtype=dtype, opdef=ops.prod)


def _variance(ctx, input, dim=None, unbiased=None, keepdim=False, *, correction=None, root=False):
    if isinstance(dim, bool):                    # the var(input, unbiased) overload
        dim, unbiased = None, dim
    if correction is None:
        correction = 0 if unbiased is False else 1
    y = ctx.emit(ops.var, input, dims=_dims(dim), keepdim=bool(keepdim), correction=int(correction))
    return norm_root(ctx, y) if root else y      # (std: no gradient where it is 0, torch's std_backward)


register(torch.var, torch.Tensor.var)(_variance)
register(torch.std, torch.Tensor.std)(partial(_variance, root=True))


def _truth(ctx, input, dim=None, keepdim=False, *, opdef):
    return ctx.emit(opdef, input, dims=_dims(dim), keepdim=bool(keepdim))


register(torch.any, torch.Tensor.any)(partial(_truth, opdef=ops.any))
register(torch.all, torch.Tensor.all)(partial(_truth, opdef=ops.all))


@register(torch.logsumexp, torch.Tensor.logsumexp)
def _logsumexp(ctx, input, dim, keepdim=False):
    return ctx.emit(ops.logsumexp, input, dims=_dims(dim), keepdim=bool(keepdim))


@register(torch.sort, torch.Tensor.sort)
def _sort(ctx, input, dim=-1, descending=False, stable=False):
    return torch.return_types.sort(ctx.emit(ops.sort, input, dim=dim, descending=bool(descending)))


@register(torch.argsort, torch.Tensor.argsort)
def _argsort(ctx, input, dim=-1, descending=False, stable=False):
    return ctx.emit(ops.sort, input, dim=dim, descending=bool(descending))[1]


@register(torch.topk, torch.Tensor.topk)
def _topk(ctx, input, k, dim=-1, largest=True, sorted=True):
    refuse_bool(ctx, input, "topk")
    return torch.return_types.topk(ctx.emit(ops.topk, input, k=k, dim=dim, largest=bool(largest)))
