"""scatter_reduce (sum, prod, amax, amin, mean; include_self), index_add, index_copy, as fxla.scatter.

``include_self=False`` first resets every position that receives a value to the reduction's identity (a bool
scatter marks them), so only the scattered values combine there.  ``mean`` is a sum divided by the count of
combined values (integers floor-divide, as torch).  index_add / index_copy scatter whole slices: their 1-D
index is broadcast over the source's other dims.
"""
from __future__ import annotations

import torch

from fxla.dialects.fxla import Sig, ops, type_of
from fxla.dialects.fxla.types import is_float

from ..registry import register
from .indexing import reshape

#: scatter_reduce's reduce -> (fxla.scatter's reduce, the identity used when include_self=False)
_REDUCE = {"sum": ("add", 0), "prod": ("multiply", 1), "amax": ("amax", "lowest"), "amin": ("amin", "highest"),
           "mean": ("add", 0)}


def _splat(ctx, value, sig):
    scalar = ctx.tensor(value)
    if ctx.sig(scalar).elem != sig.elem:
        scalar = ctx.emit(ops.convert, scalar, result_type=type_of(Sig((), sig.elem)))
    return scalar if not sig.shape else ctx.emit(ops.expand, scalar, shape=sig.shape)


def _identity(sig, which):
    if which not in ("lowest", "highest"):
        return which
    if sig.elem == "i1":
        return which == "highest"
    if is_float(sig.elem):
        return float("-inf") if which == "lowest" else float("inf")
    info = torch.iinfo({"ui8": torch.uint8, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32,
                        "i64": torch.int64}[sig.elem])
    return info.min if which == "lowest" else info.max


def _touched(ctx, input, index, dim):
    """i1 [input.shape]: whether some element of ``index`` scatters to each position (a bool scatter)."""
    return ctx.emit(ops.scatter, _splat(ctx, False, Sig(ctx.sig(input).shape, "i1")), index,
                    _splat(ctx, True, Sig(ctx.sig(index).shape, "i1")), dim=dim)


@register(torch.scatter_reduce, torch.Tensor.scatter_reduce)
def _scatter_reduce(ctx, input, dim, index, src, reduce, *, include_self=True):
    if reduce not in _REDUCE:
        raise ctx.error(f"scatter_reduce(reduce={reduce!r}) is unknown", "torch accepts sum, prod, mean, amax, amin",
                        "use one of those")
    s = ctx.sig(input)
    combine, identity = _REDUCE[reduce]
    start = input
    touched = None
    if not include_self:
        touched = _touched(ctx, input, index, dim)
        start = ctx.emit(ops.where, touched, _splat(ctx, _identity(s, identity), Sig((), s.elem)), input)
    total = ctx.emit(ops.scatter, start, index, src, dim=dim, reduce=combine)
    if reduce != "mean":
        return total
    ones = _splat(ctx, 1, Sig(ctx.sig(index).shape, s.elem))
    base = _splat(ctx, 1, s) if include_self else \
        ctx.emit(ops.where, touched, _splat(ctx, 0, Sig((), s.elem)), _splat(ctx, 1, Sig((), s.elem)))
    count = ctx.emit(ops.scatter, base, index, ones, dim=dim, reduce="add")
    return ctx.emit(ops.div if is_float(s.elem) else ops.floor_divide, total, count)


def _slice_index(ctx, index, source, dim):
    """The 1-D ``index`` broadcast to ``source``'s shape along ``dim`` (whole-slice scatter coordinates)."""
    shape = ctx.sig(source).shape
    d = dim % len(shape) if shape else 0
    if not shape:
        return reshape(ctx, index, ())
    n = ctx.sig(index).shape[0] if ctx.sig(index).rank else 1
    column = reshape(ctx, index, tuple(n if i == d else 1 for i in range(len(shape))))
    return ctx.emit(ops.expand, column, shape=shape)


@register(torch.index_add, torch.Tensor.index_add)
def _index_add(ctx, input, dim, index, source, *, alpha=1):
    if alpha != 1:
        source = ctx.emit(ops.mul, source, ctx.tensor(alpha, like=source))
        if ctx.sig(source).elem != ctx.sig(input).elem:
            source = ctx.emit(ops.convert, source, result_type=type_of(Sig(ctx.sig(source).shape,
                                                                           ctx.sig(input).elem)))
    return ctx.emit(ops.scatter, input, _slice_index(ctx, index, source, dim), source, dim=dim, reduce="add")


@register(torch.index_copy, torch.Tensor.index_copy)
def _index_copy(ctx, input, dim, index, source):
    return ctx.emit(ops.scatter, input, _slice_index(ctx, index, source, dim), source, dim=dim)
