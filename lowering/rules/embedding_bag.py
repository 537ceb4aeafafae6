"""F.embedding_bag / nn.EmbeddingBag: bags of embedding rows reduced by sum, mean or max.

A 2-D [bags, size] input without padding_idx is a lookup and one reduction over dim 1.  Otherwise (1-D input
with ``offsets``, or padding_idx) it is a segment reduction: every entry j gets a bag id, the rows are scattered
into [bags + 1, dim] (fxla.scatter with add / amax) and the extra trash bag is cut off.  With traced offsets
the bag id is ``count(offsets <= j) - 1``, computed from the data by a binary search over the (non-decreasing,
as torch requires) offsets; the result shape is static (len(offsets),
or len(offsets) - 1 with include_last_offset).  Entries equal to padding_idx, and with include_last_offset
those at or after the last offset, go to the trash bag (except where torch's kernel counts them into the last
bag: mean's divisor and max).  Empty bags give 0 in every mode, as in torch.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from fxla.dialects.fxla import Sig, ops, type_of
from fxla.dialects.mlir import ir

from ..emit import compute_elem, dense_only, gradient_by_frequency
from ..registry import register
from ..value_checks import check_indices


def _full(ctx, value, shape, elem):
    scalar = ctx.emit(ops.convert, ctx.tensor(value), result_type=type_of(Sig((), elem)))
    return ctx.emit(ops.expand, scalar, shape=tuple(shape))


def _count_at_most(ctx, offsets, j):
    """[n] i64: how many of the (non-decreasing) ``offsets`` are <= each ``j`` -- a branchless binary search, one
    gather per halving step (O(n log bags), not an [offsets, n] comparison)."""
    count = ctx.sig(offsets).shape[0]
    n = ctx.sig(j).shape[0]
    pos = ctx.emit(ops.expand, ctx.tensor(0, like=j), shape=(n,))
    step = 1 << (count.bit_length() - 1) if count else 0
    while step:
        cand = ctx.emit(ops.add, pos, ctx.tensor(step, like=pos))
        valid = ctx.emit(ops.le, cand, ctx.tensor(count, like=cand))
        probe_at = ctx.emit(ops.sub, ctx.emit(ops.minimum, cand, ctx.tensor(count, like=cand)),
                            ctx.tensor(1, like=cand))
        probe = ctx.emit(ops.index_select, offsets, probe_at, dim=0)
        take = ctx.emit(ops.logical_and, valid, ctx.emit(ops.le, probe, j))
        pos = ctx.emit(ops.where, take, cand, pos)
        step //= 2
    return pos


def _bag_ids(ctx, n, offsets, bags, tail):
    """[n] i64 bag of each entry: count(offsets <= j) - 1; entries outside every bag -> ``bags`` (the trash).
    ``tail``: entries at or after the last offset (include_last_offset) belong to the last bag instead."""
    j = ctx.emit(ops.arange, start=0.0, step=1.0, length=n, result_type=type_of(Sig((n,), "i64")))
    ids = ctx.emit(ops.sub, _count_at_most(ctx, offsets, j), ctx.tensor(1, like=j))
    if tail:
        ids = ctx.emit(ops.minimum, ids, ctx.tensor(bags - 1, like=ids))
    outside = ctx.emit(ops.logical_or, ctx.emit(ops.lt, ids, ctx.tensor(0, like=ids)),
                       ctx.emit(ops.ge, ids, ctx.tensor(bags, like=ids)))
    return ctx.emit(ops.where, outside, ctx.tensor(bags, like=ids), ids)


def _segments(ctx, rows, ids, count_ids, bags, mode):
    """Reduce the [n, dim] ``rows`` into [bags, dim] by bag id (``bags`` itself is the dropped trash bag);
    ``count_ids`` assign the entries counted for mean's divisor and max's emptiness."""
    n, dim = ctx.sig(rows).shape
    elem = ctx.sig(rows).elem

    def scatter(src, ids, init, reduce):
        width = ctx.sig(src).shape[1]
        index = ctx.emit(ops.expand, ctx.reshape(ids, (n, 1)), shape=(n, width))
        out = ctx.emit(ops.scatter, _full(ctx, init, (bags + 1, width), ctx.sig(src).elem), index, src, dim=0,
                       reduce=reduce)
        return ctx.emit(ops.slice, out, start=[0, 0], limit=[bags, width], stride=[1, 1])

    if mode == "sum":
        return scatter(rows, ids, 0, "add")
    counts = scatter(_full(ctx, 1, (n, 1), elem), count_ids, 0, "add")
    if mode == "mean":
        return ctx.emit(ops.div, scatter(rows, ids, 0, "add"),
                        ctx.emit(ops.maximum, counts, ctx.tensor(1.0, like=counts)))
    peak = scatter(rows, ids, float("-inf"), "amax")
    empty = ctx.emit(ops.eq, counts, ctx.tensor(0.0, like=counts))
    return ctx.emit(ops.where, empty, ctx.tensor(0.0, like=peak), peak)


@register(F.embedding_bag)
def _embedding_bag(ctx, input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                   mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    if mode not in ("sum", "mean", "max"):
        raise ctx.error(f"embedding_bag(mode={mode!r}) is unknown", "torch accepts sum, mean, max",
                        "use one of those")
    if max_norm is not None:
        raise ctx.error("embedding_bag(max_norm=...) is not supported", "it renormalises the weight in place",
                        "drop max_norm for inference")
    if per_sample_weights is not None and mode != "sum":
        raise ctx.error("per_sample_weights needs mode='sum'", "torch rejects it too", "use mode='sum'")
    if scale_grad_by_freq and mode == "max":
        raise ctx.error("embedding_bag(mode='max', scale_grad_by_freq=True)",
                        "torch's backward refuses it too ('max mode does not support scaling the gradient by the "
                        "frequency')", "use mode='sum' or 'mean', or scale_grad_by_freq=False")
    weight = dense_only(ctx, weight, sparse, "embedding_bag")
    rank = ctx.sig(input).rank
    if (rank == 2) != (offsets is None) or rank not in (1, 2):
        raise ctx.error("embedding_bag takes a 2-D [bags, size] input without offsets, or a 1-D input with "
                        "offsets", "torch rejects other combinations", "pass offsets exactly for a 1-D input")
    num, dim = ctx.sig(weight).shape
    if padding_idx is not None and padding_idx < 0:
        padding_idx += num
    w_elem = ctx.sig(weight).elem
    check_indices(ctx, input, ctx.sig(weight).shape[0], "embedding_bag")
    if rank == 2 and padding_idx is None:
        bags, size = ctx.sig(input).shape
        flat = ctx.reshape(input, (bags * size,))
        rows = ctx.emit(ops.index_select, weight, flat, dim=0)
        if scale_grad_by_freq and bags * size:
            rows = gradient_by_frequency(ctx, rows, flat, bag_kernel=True)
        rows = ctx.reshape(rows, (bags, size, dim))
        if per_sample_weights is not None:
            rows = ctx.emit(ops.mul, rows, ctx.reshape(per_sample_weights, (bags, size, 1)))
        opdef = {"sum": ops.sum, "mean": ops.mean, "max": ops.amax}[mode]
        return ctx.emit(opdef, rows, dims=(1,))
    flat = ctx.reshape(input, (math.prod(ctx.sig(input).shape),))
    n = ctx.sig(flat).shape[0]
    if rank == 2:
        bags, size = ctx.sig(input).shape
        ids = ctx.emit(ops.constant, value=ir.DenseElementsAttr.get(np.repeat(np.arange(bags, dtype=np.int64), size)))
        count_ids = ids
    else:
        bags = ctx.sig(offsets).shape[0] - (1 if include_last_offset else 0)
        ids = _bag_ids(ctx, n, offsets, bags, tail=False)
        # torch's CPU kernel with include_last_offset: the last bag's sum stops at the last offset, but mean
        # divides by the entries up to the end of the input and max reduces up to the end (matched here)
        count_ids = _bag_ids(ctx, n, offsets, bags, tail=True) if include_last_offset and mode != "sum" else ids
        if include_last_offset and mode == "max":
            ids = count_ids
    if padding_idx is not None:
        padded = ctx.emit(ops.eq, flat, ctx.tensor(int(padding_idx), like=flat))
        ids, count_ids = (ctx.emit(ops.where, padded, ctx.tensor(bags, like=v), v) for v in (ids, count_ids))
    elem = compute_elem(w_elem) if mode != "max" else w_elem
    rows = ctx.emit(ops.index_select, weight, flat, dim=0)
    if scale_grad_by_freq and n:
        rows = gradient_by_frequency(ctx, rows, flat, bag_kernel=True)
    rows = ctx.convert(rows, elem)
    if per_sample_weights is not None:
        rows = ctx.emit(ops.mul, rows, ctx.reshape(ctx.convert(per_sample_weights, elem), (n, 1)))
    return ctx.convert(_segments(ctx, rows, ids, count_ids, bags, mode), w_elem)


@register(torch.nn.EmbeddingBag)
def _embedding_bag_module(ctx, input, offsets=None, per_sample_weights=None, *, mod):
    return _embedding_bag(ctx, input, ctx.module_param("weight", mod), offsets, mod.max_norm, mod.norm_type,
                          mod.scale_grad_by_freq, mode=mod.mode, sparse=mod.sparse,
                          per_sample_weights=per_sample_weights,
                          include_last_offset=mod.include_last_offset, padding_idx=mod.padding_idx)
