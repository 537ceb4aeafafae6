"""Connectionist temporal classification loss: ``F.ctc_loss`` and ``nn.CTCLoss``: the extended targets built here,
the forward (alpha) recursion one loop over the steps (``fxla.ctc_loss``, dialects/fxla/ops_recurrent.py), whose
gradient is torch's analytic ``ctc_loss`` backward (the beta recursion, ``fxla.ctc_beta``).

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


def _check_lengths(ctx, given, lengths, what: str, most: "int | None") -> None:
    """Lengths given as a tensor must lie in [0, ``most``] (no upper bound: None), as torch checks their values:
    a value check of the program (:mod:`fxla.lowering.value_checks`)."""
    if not isinstance(given, ir.Value):
        return                                       # (static lengths: as torch's own checks see them)
    ok = ctx.emit(ops.ge, lengths, ctx.tensor(0, like=lengths))
    if most is not None:
        ok = ctx.emit(ops.logical_and, ok, ctx.emit(ops.le, lengths, ctx.tensor(most, like=lengths)))
    ctx.check(ok, f"ctc_loss: {what} must lie in [0, {most}]" if most is not None else
              f"ctc_loss: {what} must not be negative",
              f"pass {what} no longer than the padded sizes (the log-probabilities' steps, the targets' width)")


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


@register(F.ctc_loss)
def _ctc_loss(ctx, log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
              zero_infinity=False):
    unbatched = ctx.sig(log_probs).rank == 2
    if unbatched:
        log_probs = ctx.reshape(log_probs, [ctx.sig(log_probs).shape[0], 1, ctx.sig(log_probs).shape[1]])
    n = ctx.sig(log_probs).shape[1]
    labels = _padded_targets(ctx, targets, target_lengths, n, unbatched)      # [n, S]
    width = 2 * ctx.sig(labels).shape[1] + 1
    t_len, s_len = _lengths(ctx, input_lengths, n, "input_lengths"), _lengths(ctx, target_lengths, n, "target_lengths")
    concatenated = ctx.sig(targets).rank == 1           # (an unbatched call's targets too: torch's rule)
    _check_lengths(ctx, input_lengths, t_len, "input_lengths", ctx.sig(log_probs).shape[0])
    _check_lengths(ctx, target_lengths, s_len, "target_lengths", None if concatenated else ctx.sig(labels).shape[1])
    if concatenated and isinstance(target_lengths, ir.Value):
        total = ctx.emit(ops.sum, s_len, dims=())
        ctx.check(ctx.emit(ops.eq, total, ctx.tensor(ctx.sig(targets).shape[0], like=total)),
                  f"ctc_loss: the target_lengths must add up to the {ctx.sig(targets).shape[0]} concatenated targets",
                  "pass target_lengths that sum to the length of the concatenated targets")
    f = ctx.sig(log_probs).elem
    # the extended targets l' [n, 2S + 1]: blank, l1, blank, l2, ..., blank
    size = ctx.sig(labels).shape[1]
    blanks = ctx.emit(ops.expand, ctx.tensor(int(blank), like=labels), shape=(n, size, 1))
    pairs = ctx.reshape(ctx.emit(ops.concat, [blanks, ctx.reshape(labels, [n, size, 1])], dim=2), [n, width - 1])
    ext = ctx.emit(ops.concat, [pairs, ctx.emit(ops.expand, ctx.tensor(int(blank), like=labels), shape=(n, 1))], dim=1)
    # the alpha recursion, one loop over the steps (fxla.ctc_loss; its gradient is torch's ctc_loss backward)
    loss, _ = ctx.emit(ops.ctc_loss, log_probs, ext, t_len, s_len, zero_infinity=bool(zero_infinity))
    if zero_infinity:
        loss = ctx.emit(ops.where, ctx.emit(ops.eq, loss, ctx.tensor(math.inf, like=loss)),
                        ctx.tensor(0.0, like=loss), loss)
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
