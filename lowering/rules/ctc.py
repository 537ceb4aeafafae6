"""Connectionist temporal classification loss: ``F.ctc_loss`` and ``nn.CTCLoss``, the forward (alpha) recursion
unrolled over the static number of time steps.

For a sample with target ``l`` of length S, the extended target ``l'`` of length 2S + 1 puts the blank before,
between and after the labels.  alpha[0] holds ``log_probs[0, blank]`` and ``log_probs[0, l'[1]]`` (if S > 0);
then ``alpha[t][s] = logsumexp(alpha[t-1][s], alpha[t-1][s-1], alpha[t-1][s-2] if l'[s] is a label other than
l'[s-2]) + log_probs[t, l'[s]]``, and a sample's alpha stops changing once t reaches its input length.  The loss
is ``-logsumexp(alpha[T_n - 1][2 S_n], alpha[T_n - 1][2 S_n - 1])`` (Graves et al., 2006; torch's
``ctc_loss`` documentation).  All samples run at once over the padded width, their lengths as masks, so
``input_lengths`` / ``target_lengths`` may be tensors as well as tuples.  Targets are ``[N, S]`` (padded) or
1-D concatenated; an alignment that cannot exist gives an infinite loss, as in
torch (``zero_infinity=True``: 0).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import torch
import torch.nn.functional as F

from fxla.dialects.fxla import Sig, ops, type_of
from fxla.dialects.mlir import ir
from fxla.frontend.shape_prop import register_meta_function, register_meta_module

from ..emit import reduce_loss
from ..registry import register, register_module


def _lengths(ctx, lengths, n: int, what: str):
    """The [n] i64 lengths tensor of a tuple/list of ints or a tensor."""
    if isinstance(lengths, ir.Value):
        if ctx.sig(lengths).shape != (n,) and not (n == 1 and ctx.sig(lengths).rank == 0):
            raise ctx.error(f"ctc_loss: {what} of shape {list(ctx.sig(lengths).shape)} for a batch of {n}",
                            f"{what} holds one length per sample", f"pass {what} of shape [{n}]")
        lengths = ctx.reshape(lengths, [n])
        return lengths if ctx.sig(lengths).elem == "i64" else \
            ctx.emit(ops.convert, lengths, result_type=type_of(Sig((n,), "i64")))
    values = [int(v) for v in (lengths if isinstance(lengths, (tuple, list)) else [lengths])]
    return ctx.int_constant(values)


def _padded_targets(ctx, targets, target_lengths, n: int, unbatched: bool):
    """[n, S] i64 targets: padded ones (and an unbatched call's [S]) as they are; 1-D concatenated ones split by
    their lengths (static: exactly; tensors: gathered at run time into the total width)."""
    if ctx.sig(targets).rank == 2 or unbatched:
        padded = ctx.reshape(targets, [n, ctx.sig(targets).shape[-1]])
    elif isinstance(target_lengths, ir.Value):
        # concatenated targets, lengths known at run time: sample k's labels start at the sum of the lengths
        # before it; the padded width is the total (no target is longer), positions past a length repeat its
        # last label (the recursion never reads them into the loss)
        total = ctx.sig(targets).shape[0]
        lengths = _lengths(ctx, target_lengths, n, "target_lengths")
        if total == 0:
            return ctx.emit(ops.constant, value=ir.DenseElementsAttr.get(np.zeros((n, 0), np.int64)))
        starts = ctx.reshape(ctx.emit(ops.sub, ctx.emit(ops.cumsum, lengths, dim=0), lengths), [n, 1])
        last = ctx.reshape(ctx.emit(ops.maximum, ctx.emit(ops.sub, lengths, ctx.tensor(1, like=lengths)),
                                     ctx.tensor(0, like=lengths)), [n, 1])
        j = ctx.emit(ops.arange, start=0.0, step=1.0, length=total, result_type=type_of(Sig((total,), "i64")))
        index = ctx.emit(ops.minimum, ctx.emit(ops.add, starts, ctx.emit(ops.minimum, j, last)),
                         ctx.tensor(total - 1, like=starts))
        padded = ctx.reshape(ctx.emit(ops.index_select, ctx.reshape(targets, [total]),
                                       ctx.reshape(index, [n * total]), dim=0), [n, total])
    else:
        sizes = [int(v) for v in target_lengths]
        width = max(sizes + [0])
        starts = list(itertools.accumulate([0] + sizes[:-1]))
        index = [[start + min(j, max(size - 1, 0)) for j in range(width)] for start, size in zip(starts, sizes)]
        flat = ctx.reshape(targets, [ctx.sig(targets).shape[0]])
        gathered = ctx.emit(ops.index_select, flat, ctx.int_constant([i for row in index for i in row]), dim=0) \
            if width and ctx.sig(targets).shape[0] else ctx.emit(ops.constant, value=ir.DenseElementsAttr.get(
                np.zeros((n * width,), np.int64)))
        padded = ctx.reshape(gathered, [n, width])
    if ctx.sig(padded).elem != "i64":
        padded = ctx.emit(ops.convert, padded, result_type=type_of(Sig(ctx.sig(padded).shape, "i64")))
    return padded


def _shift(ctx, alpha, by: int, neg_inf):
    """alpha[:, s - by] (-inf for s < by) along the extended-target dim."""
    n, width = ctx.sig(alpha).shape
    if by >= width:
        return ctx.emit(ops.expand, neg_inf, shape=(n, width))
    front = ctx.emit(ops.expand, neg_inf, shape=(n, by))
    return ctx.emit(ops.concat, [front, ctx.slice_dim(alpha, 1, 0, width - by)], dim=1)


@register(F.ctc_loss)
def _ctc_loss(ctx, log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
              zero_infinity=False):
    unbatched = ctx.sig(log_probs).rank == 2
    if unbatched:
        log_probs = ctx.reshape(log_probs, [ctx.sig(log_probs).shape[0], 1, ctx.sig(log_probs).shape[1]])
    steps, n, classes = ctx.sig(log_probs).shape
    labels = _padded_targets(ctx, targets, target_lengths, n, unbatched)      # [n, S]
    width = 2 * ctx.sig(labels).shape[1] + 1
    t_len, s_len = _lengths(ctx, input_lengths, n, "input_lengths"), _lengths(ctx, target_lengths, n, "target_lengths")
    f = ctx.sig(log_probs).elem
    neg_inf = ctx.tensor(-math.inf, like=log_probs)
    # the extended targets l' [n, 2S + 1]: blank, l1, blank, l2, ..., blank
    size = ctx.sig(labels).shape[1]
    blanks = ctx.emit(ops.expand, ctx.tensor(int(blank), like=labels), shape=(n, size, 1))
    pairs = ctx.reshape(ctx.emit(ops.concat, [blanks, ctx.reshape(labels, [n, size, 1])], dim=2), [n, width - 1])
    ext = ctx.emit(ops.concat, [pairs, ctx.emit(ops.expand, ctx.tensor(int(blank), like=labels), shape=(n, 1))], dim=1)
    # log_probs at the extended targets, every step: [T, n, 2S + 1]
    lp = ctx.emit(ops.gather, log_probs, ctx.emit(ops.expand, ctx.reshape(ext, [1, n, width]),
                                                   shape=(steps, n, width)), dim=2)
    # where alpha[s - 2] may skip to s: a label (odd s) that differs from the previous label
    previous = _shift(ctx, ext, 2, ctx.tensor(int(blank), like=ext))
    odd = ctx.emit(ops.constant, value=ir.DenseElementsAttr.get(
        np.array([s % 2 == 1 and s >= 2 for s in range(width)], dtype=np.bool_).reshape(1, width),
        type=ir.IntegerType.get_signless(1)))
    skip = ctx.emit(ops.logical_and, odd, ctx.emit(ops.ne, ext, previous))
    # alpha[0]: the blank, and the first label where the target is not empty
    positions = ctx.emit(ops.arange, start=0.0, step=1.0, length=width, result_type=type_of(Sig((width,), "i64")))
    first = ctx.emit(ops.lt, positions, ctx.tensor(2, like=positions))
    nonempty = ctx.emit(ops.gt, ctx.reshape(s_len, [n, 1]), ctx.tensor(0, like=s_len))
    start = ctx.emit(ops.logical_and, first, ctx.emit(ops.logical_or, ctx.emit(ops.eq, positions, ctx.tensor(
        0, like=positions)), nonempty))
    alpha = ctx.emit(ops.where, start, ctx.reshape(ctx.slice_dim(lp, 0, 0, 1), [n, width]), neg_inf)
    running = ctx.reshape(t_len, [n, 1])
    for t in range(1, steps):
        stacked = ctx.emit(ops.concat, [ctx.reshape(a, [n, width, 1]) for a in (
            alpha, _shift(ctx, alpha, 1, neg_inf),
            ctx.emit(ops.where, skip, _shift(ctx, alpha, 2, neg_inf), neg_inf))], dim=2)
        new = ctx.emit(ops.add, ctx.emit(ops.logsumexp, stacked, dims=(2,), keepdim=False),
                       ctx.reshape(ctx.slice_dim(lp, 0, t, t + 1), [n, width]))
        alpha = ctx.emit(ops.where, ctx.emit(ops.gt, running, ctx.tensor(t, like=running)), new, alpha)
    # -logsumexp(alpha[2 S], alpha[2 S - 1]) (the second only for S > 0)
    last = ctx.reshape(ctx.emit(ops.mul, s_len, ctx.tensor(2, like=s_len)), [n, 1])
    end = ctx.emit(ops.gather, alpha, last, dim=1)
    before = ctx.emit(ops.gather, alpha, ctx.emit(ops.maximum, ctx.emit(ops.sub, last, ctx.tensor(1, like=last)),
                                                  ctx.tensor(0, like=last)), dim=1)
    before = ctx.emit(ops.where, nonempty, before, neg_inf)
    loss = ctx.emit(ops.neg, ctx.emit(ops.logsumexp, ctx.emit(ops.concat, [end, before], dim=1), dims=(1,),
                                      keepdim=False))                                          # [n]
    if zero_infinity:
        loss = ctx.emit(ops.where, ctx.emit(ops.eq, loss, ctx.tensor(math.inf, like=loss)),
                        ctx.tensor(0.0, like=loss), loss)
    # the forward recursion's own gradient is NaN where an alignment is impossible (a logsumexp of -inf
    # rows), where torch's analytic ctc_loss backward is finite: refused rather than different
    loss = ctx.emit(ops.no_gradient, loss, op="ctc_loss", reason=(
        "fxla computes ctc_loss by its forward recursion, whose derivative differs from torch's analytic "
        "ctc_loss backward (NaN for impossible alignments)"))
    if reduction == "mean":                # each loss over its target length (at least 1), then the mean
        loss = ctx.emit(ops.div, loss, ctx.emit(ops.convert, ctx.emit(ops.maximum, s_len, ctx.tensor(
            1, like=s_len)), result_type=type_of(Sig((n,), f))))
    elif reduction == "none" and unbatched:
        return ctx.reshape(loss, [])
    return reduce_loss(ctx, loss, reduction)


register_module(torch.nn.CTCLoss, F.ctc_loss, attrs=("blank", "reduction", "zero_infinity"))


def _ctc_loss_meta(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
                   zero_infinity=False) -> torch.Tensor:
    """F.ctc_loss's meta result (torch has no meta kernel for tensor lengths): one loss per sample with
    reduction='none' (0-d for an unbatched [T, C] input), else their 0-d reduction."""
    per_sample = () if log_probs.dim() == 2 else (log_probs.shape[1],)
    return log_probs.new_empty(per_sample if reduction == "none" else ())


register_meta_function(F.ctc_loss, _ctc_loss_meta)
register_meta_module(torch.nn.CTCLoss, lambda mod, log_probs, targets, input_lengths, target_lengths: _ctc_loss_meta(
    log_probs, targets, input_lengths, target_lengths, mod.blank, mod.reduction))
