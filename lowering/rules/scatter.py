"""scatter_reduce (sum, prod, amax, amin, mean; include_self), index_add, index_copy, as fxla.scatter;
``x[idx] = value`` out of place; masked_scatter.

``include_self=False`` first resets every position that receives a value to the reduction's identity (a bool
scatter marks them), so only the scattered values combine there.  ``mean`` is a sum divided by the count of
combined values (integers floor-divide, as torch).  index_add / index_copy scatter whole slices: their 1-D
index is broadcast over the source's other dims.
"""
from __future__ import annotations

import math

import torch

from fxla.dialects.fxla import Sig, ops, type_of
from fxla.dialects.fxla.types import broadcast_shapes, is_float, same_shape

from fxla.dialects.mlir import ir
from fxla.frontend.passes.functionalize import setitem as functional_setitem
from fxla.frontend.shape_prop import at_traced_sizes, has_symbolic_sizes, register_meta_function

from ..emit import dim_size, expand_key, merge_tensor_indices, spread, tensor_index
from ..registry import register
from ..value_checks import check_indices

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
    check_indices(ctx, index, dim_size(ctx, input, dim), "scatter_reduce")
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
        return ctx.reshape(index, ())
    n = ctx.sig(index).shape[0] if ctx.sig(index).rank else 1
    column = ctx.reshape(index, tuple(n if i == d else 1 for i in range(len(shape))))
    return ctx.emit(ops.expand, column, shape=shape)


@register(torch.index_add, torch.Tensor.index_add)
def _index_add(ctx, input, dim, index, source, *, alpha=1):
    check_indices(ctx, index, dim_size(ctx, input, dim), "index_add")
    if alpha != 1:
        source = ctx.emit(ops.mul, source, ctx.tensor(alpha, like=source))
        if ctx.sig(source).elem != ctx.sig(input).elem:
            source = ctx.emit(ops.convert, source, result_type=type_of(Sig(ctx.sig(source).shape,
                                                                           ctx.sig(input).elem)))
    return ctx.emit(ops.scatter, input, _slice_index(ctx, index, source, dim), source, dim=dim, reduce="add")


@register(torch.index_copy, torch.Tensor.index_copy)
def _index_copy(ctx, input, dim, index, source):
    check_indices(ctx, index, dim_size(ctx, input, dim), "index_copy")
    return ctx.emit(ops.scatter, input, _slice_index(ctx, index, source, dim), source, dim=dim)


# -- x[idx] = value, out of place (what fxla.frontend.passes.functionalize records) -------------------------------
def _assigned(ctx, value, elem: str, shape) -> "ir.Value":
    """``value`` (tensor or number) in ``elem``, broadcast to ``shape`` as torch's ``x[idx] = value`` does
    (leading size-1 dims of the value beyond ``shape``'s rank are dropped)."""
    v = value if isinstance(value, ir.Value) else ctx.tensor(value)
    v = ctx.convert(v, elem)
    vs = ctx.sig(v).shape
    while len(vs) > len(shape) and vs[0] == 1:
        vs = vs[1:]
        v = ctx.reshape(v, vs)
    return v if tuple(vs) == tuple(shape) else ctx.emit(ops.expand, v, shape=tuple(shape))


def _in_mask_order(ctx, mask, values, dim: int):
    """``values`` (``count`` entries along ``dim``) laid out over the positions of the 1-D bool ``mask``: the
    ``k``-th selected position gets entry ``k`` (``cumsum(mask) - 1``, clamped into range), unselected ones an
    arbitrary entry -- the rows a ``where`` over the mask then takes, as torch fills a selection in order."""
    count = ctx.sig(values).shape[dim]
    order = ctx.emit(ops.cumsum, ctx.emit(ops.convert, mask, result_type=type_of(Sig(ctx.sig(mask).shape, "i64"))),
                     dim=0)
    order = ctx.emit(ops.clamp, ctx.emit(ops.sub, order, ctx.tensor(1, like=order)), ctx.tensor(0, like=order),
                     ctx.tensor(count - 1, like=order))
    return ctx.emit(ops.index_select, values, order, dim=dim)


def _set_mask(ctx, input, at: int, mask, value):
    """``x[..., mask] = value``: torch broadcasts the value to the selection's shape ``(*lead, count, *trail)``
    (``count`` = how many positions the mask selects).  A value that does not span ``count`` (size 1 or absent
    there: a scalar, a row of the trailing dims) is the same at every selected position, so the write is a
    ``where`` over the mask; one that does holds one entry per selected position, in order
    (:func:`_in_mask_order`); that it has as many as the mask selects is a value check of the program
    (:mod:`fxla.lowering.value_checks`), as torch checks it against the data."""
    sig = ctx.sig(input)
    m = ctx.sig(mask).shape
    lead, trail = tuple(sig.shape[:at]), tuple(sig.shape[at + len(m):])
    if isinstance(value, ir.Value):
        vs = tuple(ctx.sig(value).shape)
        while len(vs) > len(lead) + 1 + len(trail) and vs[0] == 1:
            vs = vs[1:]
        padded = (1,) * (len(lead) + 1 + len(trail) - len(vs)) + vs
        fits = len(padded) == len(lead) + 1 + len(trail) and all(
            v in (1, d) for v, d in zip(padded[:len(lead)] + padded[len(lead) + 1:], lead + trail))
        if not fits:
            raise ctx.error(f"x[mask] = value with a value of shape {list(ctx.sig(value).shape)} is not supported",
                            f"torch broadcasts the value to the selection's shape {[*lead, 'count', *trail]} "
                            f"(count: the positions the mask selects), which this one does not fit",
                            f"give the value shape {[*lead, 'count', *trail]}, or one broadcast over the selection "
                            f"(shape {[*lead, 1, *trail]})")
        count = padded[len(lead)]
        if count != 1:                            # one entry per selected position: as many as it selects
            selected = ctx.emit(ops.sum, mask, dims=())
            ctx.check(ctx.emit(ops.eq, selected, ctx.tensor(count, like=selected)),
                      f"x[mask] = value: the value's {count} entries must be as many as the positions the mask "
                      f"selects", "give the value one entry per selected position (or one for all of them)")
        if count == 0:                            # nothing to write
            return input
        if count > 1:
            rows = _assigned(ctx, ctx.reshape(value, padded), sig.elem, (*lead, count, *trail))
            rows = _in_mask_order(ctx, ctx.reshape(mask, (math.prod(m),)), rows, len(lead))
            rows = ctx.reshape(rows, (*lead, *m, *trail))
            full = ctx.emit(ops.expand, ctx.reshape(mask, (1,) * at + tuple(m) + (1,) * len(trail)), shape=sig.shape)
            return ctx.emit(ops.where, full, rows, input)
        value = ctx.reshape(value, padded[:len(lead)] + (1,) * len(m) + padded[len(lead) + 1:])
    mask = ctx.reshape(mask, (1,) * at + tuple(m) + (1,) * (sig.rank - at - len(m)))
    mask = ctx.emit(ops.expand, mask, shape=sig.shape)
    return ctx.emit(ops.where, mask, _assigned(ctx, value, sig.elem, sig.shape), input)


def _set_index(ctx, input, at: int, index, value):
    """``x[..., index, ...] = value`` on dim ``at``; ``index`` is an integer tensor with its negative entries
    already resolved (:func:`fxla.lowering.emit.tensor_index`, or a linear index of merged dims)."""
    sig = ctx.sig(input)
    if ctx.sig(index).rank > 1:
        raise ctx.error("x[index] = value with a multi-dimensional index tensor is not supported",
                        "fxla lowers a 0-d or 1-D integer index", "flatten the index (and the value) first")
    zero_d = ctx.sig(index).rank == 0             # x[:, i] = v with a 0-d i: v lacks that dim
    n = 1 if zero_d else ctx.sig(index).shape[0]
    index = ctx.reshape(index, (n,))
    indexed = tuple(sig.shape[:at]) + (n,) + tuple(sig.shape[at + 1:])
    torch_shape = indexed[:at] + indexed[at + 1:] if zero_d else indexed
    v = ctx.reshape(_assigned(ctx, value, sig.elem, torch_shape), indexed)
    return ctx.emit(ops.scatter, input, _slice_index(ctx, index, v, at), v, dim=at)


def _set_box(ctx, input, key, value):
    """Ints, slices (any step) and None: the value padded into place (spread out by the steps), selected by a
    mask padded the same way."""
    sig = ctx.sig(input)
    low, high, region, steps, indexed, d = [], [], [], [], [], 0
    for k in key:
        if k is None:
            indexed.append(1)
            continue
        size = sig.shape[d]
        if isinstance(k, int):
            lo, n, step = (k + size if k < 0 else k), 1, 1
        else:
            lo, hi, step = k.indices(size)
            n = len(range(lo, hi, step))
            indexed.append(n)
        span = (n - 1) * step + 1 if n else 0
        low.append(lo), high.append(size - lo - span), region.append(n), steps.append(step)
        d += 1
    if 0 in region:
        return input
    v = ctx.reshape(_assigned(ctx, value, sig.elem, tuple(indexed)), tuple(region))
    if tuple(region) == tuple(sig.shape):
        return v
    mask = spread(ctx, ctx.emit(ops.expand, ctx.tensor(True), shape=tuple(region)), steps)
    v = spread(ctx, v, steps)
    return ctx.emit(ops.where, ctx.emit(ops.pad, mask, low=low, high=high), ctx.emit(ops.pad, v, low=low, high=high),
                    input)


@register(torch.masked_scatter, torch.Tensor.masked_scatter)
def _masked_scatter(ctx, input, mask, source):
    """``input`` with its positions where ``mask`` (broadcast to its shape) is true taken from ``source``'s
    elements in order (row-major), as torch does; ``source`` must hold at least as many elements as the mask
    selects (a value check of the program, :mod:`fxla.lowering.value_checks`, as torch checks it)."""
    sig = ctx.sig(input)
    if ctx.sig(source).elem != sig.elem:
        raise ctx.error("masked_scatter with a source of another dtype than the input",
                        "torch requires the same dtype", "convert the source first: source.to(input.dtype)")
    # (a mask that would broadcast the input too is refused by the expand below: masked_scatter_, which cannot,
    # lowers here as well)
    shape = sig.shape
    n = math.prod(ctx.sig(source).shape)
    full = mask if same_shape(ctx.sig(mask).shape, shape) else ctx.emit(ops.expand, mask, shape=shape)
    total = math.prod(shape)
    if total == 0:
        return input
    selected = ctx.emit(ops.sum, full, dims=())                  # (how many positions the mask selects: i64)
    ctx.check(ctx.emit(ops.le, selected, ctx.tensor(n, like=selected)),
              "masked_scatter: the source must hold at least as many elements as the mask selects",
              "give masked_scatter a source with one element per selected position at least")
    if n == 0:
        return input
    rows = _in_mask_order(ctx, ctx.reshape(full, (total,)), ctx.reshape(source, (n,)), 0)
    return ctx.emit(ops.where, full, ctx.reshape(rows, shape), input)


def _masked_scatter_meta(input, mask, source):
    """``masked_scatter``'s meta result by size arithmetic: torch's own expands the mask with symbolic sizes,
    which fails on fake tensors; its argument checks run at the traced sizes."""
    if not has_symbolic_sizes((input, mask, source)):
        return torch.masked_scatter(input, mask, source)
    torch.masked_scatter(*at_traced_sizes((input, mask, source)))
    return input.new_empty(broadcast_shapes(input.shape, mask.shape))


register_meta_function(torch.masked_scatter, _masked_scatter_meta)
register_meta_function(torch.Tensor.masked_scatter, _masked_scatter_meta)


def _is_mask(ctx, k) -> bool:
    return isinstance(k, ir.Value) and ctx.sig(k).elem == "i1"


def _set_indices(ctx, input, at: int, indices, value):
    """``x[..., i, j, ...] = v`` with integer index tensors on adjacent dims ``at, at + 1, ...``: those dims are
    merged and indexed by the linear index ``i * size_j + j`` (as ``x[i, j]`` reads them), then written with one
    tensor index (:func:`_set_index`)."""
    shape = ctx.sig(input).shape
    flat, _, linear, _ = merge_tensor_indices(ctx, input, list(shape), [(at + d, k) for d, k in enumerate(indices)])
    return ctx.reshape(_set_index(ctx, flat, at, linear, value), shape)


def _set_indices_apart(ctx, input, places, indices, value):
    """``x[i, :, j] = v``: tensor indices on dims that are not adjacent.  torch lays the indexed values out with
    the indices' dims first (as ``x[i, :, j]`` reads them), so the indexed dims are moved to the front, written
    there (:func:`_set_indices`) and moved back."""
    rank = ctx.sig(input).rank
    order = list(places) + [p for p in range(rank) if p not in places]
    front = _set_indices(ctx, ctx.emit(ops.permute, input, dims=tuple(order)), 0, indices, value)
    return ctx.emit(ops.permute, front, dims=tuple(order.index(p) for p in range(rank)))


@register(functional_setitem)
def _setitem(ctx, input, idx, value):
    """``x[idx] = value`` as a new tensor: ints, slices, None and ``...``; a bool mask (a value broadcast over the
    selection); or integer index tensors/lists with full slices on the other dims."""
    sig = ctx.sig(input)
    key = expand_key(ctx, idx, sig.rank)
    for k in key:
        if isinstance(k, bool) or not isinstance(k, (int, slice, ir.Value, list, type(None))):
            raise ctx.error(f"x[...] = value with a {type(k).__name__} index is not supported",
                            "fxla lowers ints, slices, None, '...', a bool mask or one integer index tensor",
                            "rewrite the index with those")
    tensors = [(p, k) for p, k in enumerate(k for k in key if k is not None) if isinstance(k, (ir.Value, list))]
    if not tensors:
        return _set_box(ctx, input, key, value)
    (at, index), rest = tensors[0], [k for k in key if k is not None]
    places = [p for p, _ in tensors]
    adjacent = places == list(range(at, at + len(places)))
    others_full = all(k == slice(None) for p, k in enumerate(rest) if p not in places)
    several_ok = len(tensors) == 1 or not (any(k is None for k in key) or any(_is_mask(ctx, k) for _, k in tensors))
    if not (others_full and several_ok):
        raise ctx.error("x[...] = value mixing tensor indices with other indices is not supported yet",
                        "fxla lowers integer index tensors with ':' on every other dim (or one bool mask)",
                        "index in two steps, or use index_copy / scatter / torch.where")
    if len(tensors) > 1:
        if not adjacent:
            return _set_indices_apart(ctx, input, places, [k for _, k in tensors], value)
        return _set_indices(ctx, input, at, [k for _, k in tensors], value)
    if _is_mask(ctx, index):
        return _set_mask(ctx, input, at, index, value)
    return _set_index(ctx, input, at, tensor_index(ctx, index, sig.shape[at]), value)
