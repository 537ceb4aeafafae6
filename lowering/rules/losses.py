"""Loss functions and their modules: regression (MSE, L1, smooth L1, Huber), classification (NLL, cross-entropy
with class indices or probabilities, label smoothing, class weights, ignore_index; multi-class margin), binary
cross-entropy (on probabilities and on logits, with pos_weight), KL divergence, Poisson and Gaussian NLL, and the
margin and embedding losses (margin ranking, hinge embedding, soft margin, multi-label soft margin and margin,
cosine embedding, triplet margin, also with a pairwise distance function).  CTC is in :mod:`.ctc`.

Each is its torch formula (the ``torch.nn`` loss docs; aten's kernels where they differ in detail, e.g. label
smoothing, the cosine of cosine_embedding_loss) composed of fxla ops, then reduced: ``'none'`` keeps the
per-element loss, ``'sum'`` sums it, ``'mean'`` averages it — over the weights of the counted targets for NLL /
cross-entropy with class indices, as torch does — and ``'batchmean'`` (kl_div) divides the sum by the batch
size.  The deprecated ``size_average`` / ``reduce`` arguments map to a reduction as torch maps them.  Module
forms read their options from the module and their ``weight`` / ``pos_weight`` buffers as parameters.
"""
from __future__ import annotations

import math
from functools import partial

import torch
import torch.nn.functional as F
from torch.nn import _reduction

from fxla.dialects.fxla import Sig, ops, type_of
from fxla.frontend.shape_prop import register_meta_function, register_meta_module

from ..emit import double_ratio, reduce_loss
from ..index_bounds import indexes_input
from ..registry import register, register_module
from ..value_checks import check_indices


def _reduction_of(size_average, reduce, reduction: str) -> str:
    """The reduction a call asks for (the deprecated size_average/reduce pair wins, as in torch).  Invalid
    options never reach a rule: shape propagation runs torch's own function first, which rejects them at the
    user's line."""
    if size_average is not None or reduce is not None:
        return _reduction.legacy_get_string(size_average, reduce, emit_warning=False)
    return reduction


def _mean_over(ctx, loss, scale):
    """sum(loss) / sum(scale): a weighted mean (class-index losses average over the weights of the counted
    targets, 0/0 = nan when every target is ignored, as in torch; MSE/L1 over their element weights)."""
    return ctx.emit(ops.div, reduce_loss(ctx, loss, "sum"), reduce_loss(ctx, scale, "sum"))


def _mean_over_counted(ctx, loss, scale):
    """:func:`_mean_over` for class-index losses: nan when every target is ignored, as torch's value, with
    torch's zero gradient then (not the nan of 0/0's derivative).  The gradient goes through sum / max-like
    ``where(count == 0, 1, count)``; ``detach(sum / count - that)`` is exactly 0 otherwise (the same division) and
    nan then, so the value is torch's at every count and the derivative is exact at every order."""
    total, count = reduce_loss(ctx, loss, "sum"), reduce_loss(ctx, scale, "sum")
    zero = ctx.emit(ops.eq, count, ctx.tensor(0.0, like=count))
    safe = ctx.emit(ops.div, total, ctx.emit(ops.where, zero, ctx.tensor(1.0, like=count), count))
    return ctx.emit(ops.add, safe, ctx.emit(ops.detach, ctx.emit(ops.sub, ctx.emit(ops.div, total, count), safe)))


def _weighted(ctx, loss, weight):
    return loss if weight is None else ctx.emit(ops.mul, loss, weight)


# -- regression ----------------------------------------------------------------------------------------------
def _difference(ctx, input, target):
    return ctx.emit(ops.sub, input, target)


def _squared(ctx, d):
    return ctx.emit(ops.mul, d, d)


def _absolute(ctx, d):
    return ctx.emit(ops.abs, d)


def _pointwise_loss(ctx, input, target, size_average=None, reduce=None, reduction="mean", weight=None, *,
                    formula):
    """MSE / L1; with ``weight`` (the input's shape), 'mean' is sum(weight * loss) / sum(weight), as torch."""
    reduction = _reduction_of(size_average, reduce, reduction)
    loss = _weighted(ctx, formula(ctx, _difference(ctx, input, target)), weight)
    if weight is None or reduction != "mean":
        return reduce_loss(ctx, loss, reduction)
    return _mean_over(ctx, loss, weight)


register(F.mse_loss)(partial(_pointwise_loss, formula=_squared))
register(F.l1_loss)(partial(_pointwise_loss, formula=_absolute))


def _smooth(ctx, d, *, threshold: float, quadratic: float, linear_scale: float, offset: float):
    """|d| < threshold ? quadratic * d² : linear_scale * (|d| - offset) (smooth L1 and Huber)."""
    a = ctx.emit(ops.abs, d)
    # (d * d, not |d| * |d|: the same value, and its second derivative at 0 is not lost to sign(0) = 0)
    small = ctx.emit(ops.mul, ctx.tensor(quadratic, like=a), ctx.emit(ops.mul, d, d))
    large = ctx.emit(ops.mul, ctx.tensor(linear_scale, like=a), ctx.emit(ops.sub, a, ctx.tensor(offset, like=a)))
    return ctx.emit(ops.where, ctx.emit(ops.lt, a, ctx.tensor(threshold, like=a)), small, large)


@register(F.smooth_l1_loss)
def _smooth_l1_loss(ctx, input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = _reduction_of(size_average, reduce, reduction)
    if beta < 0:                          # (torch's CPU kernel checks this; its meta function does not)
        raise ctx.error(f"smooth_l1_loss with beta={beta}", "smooth_l1_loss does not support negative values "
                        "for beta (torch raises the same)", "pass beta >= 0")
    d = _difference(ctx, input, target)
    loss = _absolute(ctx, d) if beta == 0 else _smooth(ctx, d, threshold=beta, quadratic=0.5 / beta,
                                                          linear_scale=1.0, offset=0.5 * beta)
    return reduce_loss(ctx, loss, reduction)


@register(F.huber_loss)
def _huber_loss(ctx, input, target, reduction="mean", delta=1.0, weight=None):
    loss = _smooth(ctx, _difference(ctx, input, target), threshold=delta, quadratic=0.5, linear_scale=delta,
                   offset=0.5 * delta)
    return reduce_loss(ctx, _weighted(ctx, loss, weight), reduction)


# -- classification with class indices ---------------------------------------------------------------------------
def _class_dim(ctx, input) -> int:
    return 0 if ctx.sig(input).rank == 1 else 1


def _per_class(ctx, weight, input):
    """The [C] class weights shaped to broadcast against ``input`` along its class dim."""
    rank, dim = ctx.sig(input).rank, _class_dim(ctx, input)
    return ctx.reshape(weight, [ctx.sig(weight).shape[0] if d == dim else 1 for d in range(rank)])


def _picked(ctx, logp, target, weight, ignore_index: int):
    """-logp[target] * weight[target] per target element (0 where target == ignore_index), the weight each
    target element counts with in a mean (weight[target], or 1; 0 where ignored), and the mask of the counted
    target elements."""
    dim = _class_dim(ctx, logp)
    counted = ctx.emit(ops.ne, target, ctx.tensor(ignore_index, like=target))
    if not indexes_input(target, ctx.n_inputs, ignore_index):     # (an input's are checked before the call)
        classes = ctx.sig(logp).shape[dim] if ctx.sig(logp).rank > 1 else ctx.sig(logp).shape[0]
        valid = ctx.emit(ops.logical_and, ctx.emit(ops.ge, target, ctx.tensor(0, like=target)),
                         ctx.emit(ops.lt, target, ctx.tensor(classes, like=target)))
        ctx.check(ctx.emit(ops.logical_or, ctx.emit(ops.logical_not, counted), valid),
                  f"the loss's class indices must lie in [0, {classes}) (or be ignore_index, {ignore_index})",
                  "compute targets that are class numbers below the number of classes", kind="index")
    safe = ctx.emit(ops.where, counted, target, ctx.tensor(0, like=target))       # ignored: any valid class
    index = ctx.reshape(safe, [1 if d == dim else s for d, s in enumerate(ctx.sig(logp).shape)]) \
        if ctx.sig(logp).rank > 1 else ctx.reshape(safe, [1])
    picked = ctx.reshape(ctx.emit(ops.gather, logp, index, dim=dim), ctx.sig(target).shape)
    if weight is None:
        scale = ctx.emit(ops.convert, counted, result_type=type_of(Sig(ctx.sig(target).shape, ctx.sig(logp).elem)))
    else:
        flat = ctx.reshape(safe, [max(1, math.prod(ctx.sig(safe).shape))])
        scale = ctx.reshape(ctx.emit(ops.index_select, weight, flat, dim=0), ctx.sig(target).shape)
        scale = ctx.emit(ops.where, counted, scale, ctx.tensor(0.0, like=logp))
    return ctx.emit(ops.neg, ctx.emit(ops.mul, picked, scale)), scale, counted




def _nll(ctx, logp, target, weight, ignore_index: int, reduction: str):
    """The reduced NLL loss, each target element's weight in a mean and the counted mask (see _picked)."""
    loss, scale, counted = _picked(ctx, logp, target, weight, ignore_index)
    return (_mean_over_counted(ctx, loss, scale) if reduction == "mean" else reduce_loss(ctx, loss, reduction)), \
        scale, counted


@register(F.nll_loss)
def _nll_loss(ctx, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
              reduction="mean"):
    reduction = _reduction_of(size_average, reduce, reduction)
    return _nll(ctx, input, target, weight, ignore_index, reduction)[0]


@register(F.cross_entropy)
def _cross_entropy(ctx, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                   reduction="mean", label_smoothing=0.0):
    reduction = _reduction_of(size_average, reduce, reduction)
    dim = _class_dim(ctx, input)
    classes = ctx.sig(input).shape[dim]
    logp = ctx.emit(ops.log_softmax, input, dim=dim)
    if ctx.sig(target).shape == ctx.sig(input).shape and ctx.sig(target).elem == ctx.sig(input).elem:
        return _soft_cross_entropy(ctx, logp, target, weight, reduction, label_smoothing, classes)
    nll, scale, counted = _nll(ctx, logp, target, weight, ignore_index, reduction)
    if label_smoothing == 0.0:
        return nll
    # aten's cross_entropy_loss_label_smoothing: (1 - eps) * nll + eps / C * smooth, where smooth is
    # -sum_c(w_c * logp_c) per target element (0 where ignored), reduced like the nll part.
    scaled = logp if weight is None else ctx.emit(ops.mul, logp, _per_class(ctx, weight, logp))
    smooth = ctx.emit(ops.neg, ctx.emit(ops.sum, scaled, dims=(dim,), keepdim=False))
    smooth = ctx.emit(ops.where, counted, smooth, ctx.tensor(0.0, like=smooth))
    smooth = _mean_over_counted(ctx, smooth, scale) if reduction == "mean" else reduce_loss(ctx, smooth, reduction)
    return ctx.emit(ops.add, ctx.emit(ops.mul, ctx.tensor(1.0 - label_smoothing, like=nll), nll),
                    ctx.emit(ops.mul, double_ratio(ctx, label_smoothing, classes, smooth), smooth))


def _soft_cross_entropy(ctx, logp, target, weight, reduction: str, label_smoothing: float, classes: int):
    """Class probabilities: -sum_c(w_c * target_c * logp_c), the target smoothed towards uniform first; 'mean'
    averages over the input's elements without the class dim."""
    dim = _class_dim(ctx, logp)
    if label_smoothing > 0.0:
        target = ctx.emit(ops.add, ctx.emit(ops.mul, target, ctx.tensor(1.0 - label_smoothing, like=target)),
                          double_ratio(ctx, label_smoothing, classes, target))
    terms = ctx.emit(ops.mul, logp, target)
    if weight is not None:
        terms = ctx.emit(ops.mul, terms, _per_class(ctx, weight, logp))
    loss = ctx.emit(ops.neg, ctx.emit(ops.sum, terms, dims=(dim,), keepdim=False))
    return reduce_loss(ctx, loss, reduction)


# -- binary cross-entropy and KL divergence ---------------------------------------------------------------------
@register(F.binary_cross_entropy)
def _binary_cross_entropy(ctx, input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t * log(x) + (1 - t) * log(1 - x)), each log clamped at -100 as torch clamps it."""
    reduction = _reduction_of(size_average, reduce, reduction)
    for value, name in ((input, "input"), (target, "target")):
        ctx.check(ctx.emit(ops.logical_and, ctx.emit(ops.ge, value, ctx.tensor(0.0, like=value)),
                           ctx.emit(ops.le, value, ctx.tensor(1.0, like=value))),
                  f"binary_cross_entropy: all elements of {name} should be between 0 and 1",
                  "pass probabilities (torch.sigmoid of the logits), or use binary_cross_entropy_with_logits")
    floor = ctx.tensor(-100.0, like=input)
    # the value from the clamped logs of the input (detached: the target's gradient flows through them, as
    # torch's); the input's gradient is torch's (x - t) / max((1 - x) x, 1e-12), added as (x - x.detach()) * g:
    # exact at the first order only, so the detach says so (fxla.lowering.autodiff: no second derivative here)
    x = ctx.emit(ops.detach, input, first_order="binary_cross_entropy")
    one = ctx.tensor(1.0, like=input)
    log_x = ctx.emit(ops.maximum, ctx.emit(ops.log, x), floor)
    log_1mx = ctx.emit(ops.maximum, ctx.emit(ops.log, ctx.emit(ops.sub, one, x)), floor)
    one_minus_t = ctx.emit(ops.sub, ctx.tensor(1.0, like=target), target)
    loss = ctx.emit(ops.neg, ctx.emit(ops.add, ctx.emit(ops.mul, target, log_x), ctx.emit(ops.mul, one_minus_t,
                                                                                          log_1mx)))
    grad = ctx.emit(ops.div, ctx.emit(ops.sub, x, ctx.emit(ops.detach, target)),
                    ctx.emit(ops.maximum, ctx.emit(ops.mul, ctx.emit(ops.sub, one, x), x), ctx.tensor(1e-12, like=x)))
    loss = ctx.emit(ops.add, loss, ctx.emit(ops.mul, ctx.emit(ops.sub, input, x), grad))
    return reduce_loss(ctx, _weighted(ctx, loss, weight), reduction)


@register(F.binary_cross_entropy_with_logits)
def _bce_with_logits(ctx, input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                     pos_weight=None):
    """(1 - t) * x - lw * logsigmoid(x), lw = 1 + (pos_weight - 1) * t (torch's formula)."""
    reduction = _reduction_of(size_average, reduce, reduction)
    one_minus_t = ctx.emit(ops.sub, ctx.tensor(1.0, like=target), target)
    log_sigmoid = ctx.emit(ops.logsigmoid, input)
    if pos_weight is not None:
        log_weight = ctx.emit(ops.add, ctx.emit(ops.mul, ctx.emit(ops.sub, pos_weight, ctx.tensor(1.0, like=pos_weight)),
                                                target), ctx.tensor(1.0, like=target))
        log_sigmoid = ctx.emit(ops.mul, log_weight, log_sigmoid)
    loss = ctx.emit(ops.sub, ctx.emit(ops.mul, one_minus_t, input), log_sigmoid)
    return reduce_loss(ctx, _weighted(ctx, loss, weight), reduction)


@register(F.kl_div)
def _kl_div(ctx, input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log(target) - input) with 0·log 0 = 0 (log_target: exp(target) * (target - input))."""
    reduction = _reduction_of(size_average, reduce, reduction)
    if log_target:
        loss = ctx.emit(ops.mul, ctx.emit(ops.exp, target), ctx.emit(ops.sub, target, input))
    else:
        zero = ctx.tensor(0.0, like=target)
        positive = ctx.emit(ops.gt, target, zero)
        safe = ctx.emit(ops.where, positive, target, ctx.tensor(1.0, like=target))
        xlogx = ctx.emit(ops.where, positive, ctx.emit(ops.mul, target, ctx.emit(ops.log, safe)),
                         ctx.emit(ops.mul, target, zero))               # target < 0: 0 * x keeps torch's nan
        loss = ctx.emit(ops.sub, xlogx, ctx.emit(ops.mul, target, input))
    if reduction != "batchmean":
        return reduce_loss(ctx, loss, reduction)
    total = reduce_loss(ctx, loss, "sum")
    batch = ctx.sig(input).shape[0] if ctx.sig(input).rank else 1
    return ctx.emit(ops.div, total, ctx.tensor(batch, like=total))


# -- margin, embedding and Poisson losses -------------------------------------------------------------------------
def _clamp_min0(ctx, x):
    """max(x, 0) as aten's ``clamp_min(x, 0)`` (margin ranking, hinge, cosine embedding and triplet losses): its
    gradient passes where x >= 0, the whole of it at x == 0 (``maximum`` would give half there)."""
    return ctx.emit(ops.clamp, x, ctx.tensor(0.0, like=x), None)


def _positive_part(ctx, x):
    """max(x, 0) as aten's multi-margin kernels compute it (``if (z > 0)``): no gradient at x == 0."""
    return ctx.emit(ops.relu, x)


def _where_target(ctx, target, value: int, x):
    """x where target == value, else 0."""
    return ctx.emit(ops.where, ctx.emit(ops.eq, target, ctx.tensor(value, like=target)), x,
                    ctx.tensor(0.0, like=x))


@register(F.margin_ranking_loss)
def _margin_ranking_loss(ctx, input1, input2, target, margin=0.0, size_average=None, reduce=None,
                         reduction="mean"):
    """max(0, -y (x1 - x2) + margin)."""
    reduction = _reduction_of(size_average, reduce, reduction)
    d = ctx.emit(ops.mul, ctx.emit(ops.neg, target), ctx.emit(ops.sub, input1, input2))
    return reduce_loss(ctx, _clamp_min0(ctx, ctx.emit(ops.add, d, ctx.tensor(float(margin), like=d))), reduction)


@register(F.hinge_embedding_loss)
def _hinge_embedding_loss(ctx, input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """x where y != -1, plus max(0, margin - x) where y != 1 (aten's formula; y is expected to be ±1)."""
    reduction = _reduction_of(size_average, reduce, reduction)
    zero = ctx.tensor(0.0, like=input)
    clamp = _clamp_min0(ctx, ctx.emit(ops.sub, ctx.tensor(float(margin), like=input), input))
    not_pos = ctx.emit(ops.ne, target, ctx.tensor(1, like=target))
    not_neg = ctx.emit(ops.ne, target, ctx.tensor(-1, like=target))
    loss = ctx.emit(ops.add, ctx.emit(ops.where, not_pos, clamp, zero), ctx.emit(ops.where, not_neg, input, zero))
    return reduce_loss(ctx, loss, reduction)


@register(F.soft_margin_loss)
def _soft_margin_loss(ctx, input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-y x)), as aten computes it (log1p of exp)."""
    reduction = _reduction_of(size_average, reduce, reduction)
    z = ctx.emit(ops.neg, ctx.emit(ops.mul, input, target))
    return reduce_loss(ctx, ctx.emit(ops.log1p, ctx.emit(ops.exp, z)), reduction)


@register(F.multilabel_soft_margin_loss)
def _multilabel_soft_margin_loss(ctx, input, target, weight=None, size_average=None, reduce=None,
                                 reduction="mean"):
    """-(y logsigmoid(x) + (1 - y) logsigmoid(-x)), weighted, averaged over the classes (the last dim)."""
    reduction = _reduction_of(size_average, reduce, reduction)
    one_minus_t = ctx.emit(ops.sub, ctx.tensor(1.0, like=target), target)
    terms = ctx.emit(ops.add, ctx.emit(ops.mul, target, ctx.emit(ops.logsigmoid, input)),
                     ctx.emit(ops.mul, one_minus_t, ctx.emit(ops.logsigmoid, ctx.emit(ops.neg, input))))
    loss = _weighted(ctx, ctx.emit(ops.neg, terms), weight)
    class_dim = ctx.sig(input).rank - 1
    classes = ctx.sig(input).shape[class_dim]
    loss = ctx.emit(ops.div, ctx.emit(ops.sum, loss, dims=(class_dim,), keepdim=False),
                    ctx.tensor(classes, like=loss))
    return reduce_loss(ctx, loss, reduction)


@register(F.cosine_embedding_loss)
def _cosine_embedding_loss(ctx, input1, input2, target, margin=0.0, size_average=None, reduce=None,
                           reduction="mean"):
    """1 - cos where y == 1, max(0, cos - margin) where y == -1; cos as aten computes it (squared norms + 1e-12)."""
    reduction = _reduction_of(size_average, reduce, reduction)
    dim = ctx.sig(input1).rank - 1

    def total(a, b):
        return ctx.emit(ops.sum, ctx.emit(ops.mul, a, b), dims=(dim,), keepdim=False)
    eps = 1e-12
    mag1 = ctx.emit(ops.add, total(input1, input1), ctx.tensor(eps, like=input1))
    mag2 = ctx.emit(ops.add, total(input2, input2), ctx.tensor(eps, like=input2))
    cos = ctx.emit(ops.div, total(input1, input2), ctx.emit(ops.sqrt, ctx.emit(ops.mul, mag1, mag2)))
    positive = ctx.emit(ops.sub, ctx.tensor(1.0, like=cos), cos)
    negative = _clamp_min0(ctx, ctx.emit(ops.sub, cos, ctx.tensor(float(margin), like=cos)))
    loss = ctx.emit(ops.add, _where_target(ctx, target, 1, positive), _where_target(ctx, target, -1, negative))
    return reduce_loss(ctx, loss, reduction)


@register(F.triplet_margin_loss)
def _triplet_margin_loss(ctx, anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                         size_average=None, reduce=None, reduction="mean"):
    """max(0, margin + d(a, p) - d(a, n)) with d the pairwise p-norm distance (swap: d(a, n) is the smaller of
    it and d(p, n))."""
    reduction = _reduction_of(size_average, reduce, reduction)
    d_pos = ctx.lower(F.pairwise_distance, anchor, positive, p, eps)
    d_neg = ctx.lower(F.pairwise_distance, anchor, negative, p, eps)
    if swap:
        d_neg = ctx.emit(ops.minimum, d_neg, ctx.lower(F.pairwise_distance, positive, negative, p, eps))
    gap = ctx.emit(ops.sub, ctx.emit(ops.add, d_pos, ctx.tensor(float(margin), like=d_pos)), d_neg)
    return reduce_loss(ctx, _clamp_min0(ctx, gap), reduction)


@register(F.poisson_nll_loss)
def _poisson_nll_loss(ctx, input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                      reduction="mean"):
    """exp(x) - t x (log_input), or x - t log(x + eps); full adds Stirling's t log t - t + log(2 pi t) / 2
    where t > 1."""
    reduction = _reduction_of(size_average, reduce, reduction)
    if log_input:
        loss = ctx.emit(ops.sub, ctx.emit(ops.exp, input), ctx.emit(ops.mul, target, input))
    else:
        log_x = ctx.emit(ops.log, ctx.emit(ops.add, input, ctx.tensor(float(eps), like=input)))
        loss = ctx.emit(ops.sub, input, ctx.emit(ops.mul, target, log_x))
    if full:
        one = ctx.tensor(1.0, like=target)
        safe = ctx.emit(ops.where, ctx.emit(ops.gt, target, one), target, one)     # log of t > 1 only
        log_t = ctx.emit(ops.log, safe)
        stirling = ctx.emit(ops.add, ctx.emit(ops.sub, ctx.emit(ops.mul, safe, log_t), safe),
                            ctx.emit(ops.mul, ctx.tensor(0.5, like=safe),
                                     ctx.emit(ops.log, ctx.emit(ops.mul, ctx.tensor(2 * math.pi, like=safe), safe))))
        stirling = ctx.emit(ops.where, ctx.emit(ops.gt, target, one), stirling, ctx.tensor(0.0, like=stirling))
        loss = ctx.emit(ops.add, loss, stirling)
    return reduce_loss(ctx, loss, reduction)


@register(F.multi_margin_loss)
def _multi_margin_loss(ctx, input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                       reduction="mean"):
    """sum over j != y of max(0, margin - x[y] + x[j])^p (times weight[y]) / C, per sample."""
    reduction = _reduction_of(size_average, reduce, reduction)
    rank = ctx.sig(input).rank
    dim = rank - 1
    classes = ctx.sig(input).shape[dim]
    check_indices(ctx, target, classes, "multi_margin_loss")
    index = ctx.reshape(target, [*ctx.sig(target).shape, 1]) if rank > 1 else ctx.reshape(target, [1])
    picked = ctx.emit(ops.gather, input, index, dim=dim)                       # x[y], keeping the class dim
    z = _positive_part(ctx, ctx.emit(ops.add, ctx.emit(ops.sub, ctx.tensor(float(margin), like=input), picked), input))
    if p == 2:
        z = ctx.emit(ops.mul, z, z)
    if weight is not None:                                                     # weight[y] per sample
        flat = ctx.reshape(target, [max(1, math.prod(ctx.sig(target).shape))])
        z = ctx.emit(ops.mul, z, ctx.reshape(ctx.emit(ops.index_select, weight, flat, dim=0), ctx.sig(index).shape))
    classes_iota = ctx.emit(ops.arange, start=0.0, step=1.0, length=classes,
                            result_type=type_of(Sig((classes,), ctx.sig(index).elem)))
    is_target = ctx.emit(ops.eq, classes_iota, index)
    z = ctx.emit(ops.where, is_target, ctx.tensor(0.0, like=z), z)             # j == y does not count
    loss = ctx.emit(ops.div, ctx.emit(ops.sum, z, dims=(dim,), keepdim=False), ctx.tensor(classes, like=z))
    return reduce_loss(ctx, loss, reduction)


@register(F.multilabel_margin_loss)
def _multilabel_margin_loss(ctx, input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over target classes j and non-target classes i of max(0, 1 - (x[j] - x[i])) / C per sample; a
    sample's target classes are the entries of its target row before the first -1."""
    reduction = _reduction_of(size_average, reduce, reduction)
    unbatched = ctx.sig(input).rank == 1
    if unbatched:
        input, target = ctx.reshape(input, [1, *ctx.sig(input).shape]), ctx.reshape(target, [1, *ctx.sig(target).shape])
    n, classes = ctx.sig(input).shape
    i64 = ctx.sig(target).elem
    listed = ctx.emit(ops.ne, target, ctx.tensor(-1, like=target))
    valid = ctx.emit(ops.ne, ctx.emit(ops.cumprod, listed, dim=1), ctx.tensor(0, like=target))      # before the -1
    safe = ctx.emit(ops.where, valid, target, ctx.tensor(0, like=target))
    iota = ctx.emit(ops.arange, start=0.0, step=1.0, length=classes, result_type=type_of(Sig((classes,), i64)))
    hits = ctx.emit(ops.logical_and, ctx.emit(ops.eq, ctx.reshape(safe, [n, classes, 1]), iota),
                    ctx.reshape(valid, [n, classes, 1]))                        # [n, j, class]
    is_target = ctx.emit(ops.any, hits, dims=(1,), keepdim=False)              # [n, class]
    x_j = ctx.reshape(ctx.emit(ops.gather, input, safe, dim=1), [n, classes, 1])
    z = _positive_part(ctx, ctx.emit(ops.sub, ctx.tensor(1.0, like=input),
                               ctx.emit(ops.sub, x_j, ctx.reshape(input, [n, 1, classes]))))   # [n, j, i]
    counted = ctx.emit(ops.logical_and, ctx.reshape(valid, [n, classes, 1]),
                       ctx.emit(ops.logical_not, ctx.reshape(is_target, [n, 1, classes])))
    z = ctx.emit(ops.where, counted, z, ctx.tensor(0.0, like=z))
    loss = ctx.emit(ops.div, ctx.emit(ops.sum, z, dims=(1, 2), keepdim=False), ctx.tensor(classes, like=z))
    if unbatched:
        loss = ctx.reshape(loss, [])
    return reduce_loss(ctx, loss, reduction)


@register(F.triplet_margin_with_distance_loss)
def _triplet_margin_with_distance_loss(ctx, anchor, positive, negative, *, distance_function=None, margin=1.0,
                                       swap=False, reduction="mean"):
    """triplet_margin_loss with pairwise distances: the default (``F.pairwise_distance``) or an
    ``nn.PairwiseDistance`` (its p and eps); another distance function is Python inside this one graph node,
    which fxla cannot lower."""
    if distance_function is None or distance_function is F.pairwise_distance:
        p, eps = 2.0, 1e-6
    elif isinstance(distance_function, torch.nn.PairwiseDistance):
        if distance_function.keepdim:
            raise ctx.error("triplet_margin_with_distance_loss with nn.PairwiseDistance(keepdim=True)",
                            "the distances would broadcast to a [N, N] loss in torch as well", "drop keepdim=True")
        p, eps = distance_function.norm, distance_function.eps
    else:
        raise ctx.error(f"triplet_margin_with_distance_loss with distance_function={distance_function!r}",
                        "the call is one graph node; fxla lowers pairwise distances (the default, "
                        "nn.PairwiseDistance) only",
                        "compute the distances in your forward and use "
                        "F.relu(margin + d(anchor, positive) - d(anchor, negative)).mean()")
    return _triplet_margin_loss(ctx, anchor, positive, negative, margin, p, eps, swap, reduction=reduction)


@register(F.gaussian_nll_loss)
def _gaussian_nll_loss(ctx, input, target, var, full=False, eps=1e-6, reduction="mean"):
    """(log(max(var, eps)) + (x - t)² / max(var, eps)) / 2, plus log(2 pi) / 2 with full; a var one dim short of
    the input gets that dim back (one variance per sample), a float var is a constant.  torch's check that var
    has no negative entry is a value check of the program (:mod:`fxla.lowering.value_checks`)."""
    if isinstance(var, (int, float)) and var < 0:
        raise ctx.error("gaussian_nll_loss: var has negative entry/entries", "torch raises ValueError for it",
                        "pass a variance that is >= 0")
    if not isinstance(var, (int, float)):
        ctx.check(ctx.emit(ops.logical_not, ctx.emit(ops.lt, var, ctx.tensor(0.0, like=var))),
                  "gaussian_nll_loss: var has negative entry/entries", "pass a variance that is >= 0 everywhere",
                  kind="argument")
    if isinstance(var, (int, float)):
        var = ctx.tensor(float(var), like=input)
    elif ctx.sig(var).shape != ctx.sig(input).shape and ctx.sig(input).shape[:-1] == ctx.sig(var).shape:
        var = ctx.reshape(var, [*ctx.sig(var).shape, 1])
    # torch clamps var under no_grad: the value max(var, eps), the gradient var's own (1) everywhere
    floor = ctx.tensor(float(eps), like=var)
    clamped = ctx.emit(ops.add, ctx.emit(ops.detach, ctx.emit(ops.maximum, var, floor)),
                       ctx.emit(ops.sub, var, ctx.emit(ops.detach, var)))
    var = ctx.emit(ops.where, ctx.emit(ops.lt, var, floor), clamped, var)
    d = ctx.emit(ops.sub, input, target)
    loss = ctx.emit(ops.mul, ctx.tensor(0.5, like=input),
                    ctx.emit(ops.add, ctx.emit(ops.log, var), ctx.emit(ops.div, ctx.emit(ops.mul, d, d), var)))
    if full:
        loss = ctx.emit(ops.add, loss, ctx.tensor(0.5 * math.log(2 * math.pi), like=loss))
    return reduce_loss(ctx, loss, reduction)


# -- modules: the functional rule with the module's options (and its ``weight`` / ``pos_weight`` buffers) -------
_R = ("reduction",)
for _module, _fn, _params, _attrs in (
    (torch.nn.MSELoss, F.mse_loss, (), _R), (torch.nn.L1Loss, F.l1_loss, (), _R),
    (torch.nn.SmoothL1Loss, F.smooth_l1_loss, (), _R + ("beta",)),
    (torch.nn.HuberLoss, F.huber_loss, (), _R + ("delta",)),
    (torch.nn.NLLLoss, F.nll_loss, ("weight",), _R + ("ignore_index",)),
    (torch.nn.CrossEntropyLoss, F.cross_entropy, ("weight",), _R + ("ignore_index", "label_smoothing")),
    (torch.nn.BCELoss, F.binary_cross_entropy, ("weight",), _R),
    (torch.nn.BCEWithLogitsLoss, F.binary_cross_entropy_with_logits, ("weight", "pos_weight"), _R),
    (torch.nn.KLDivLoss, F.kl_div, (), _R + ("log_target",)),
    (torch.nn.MarginRankingLoss, F.margin_ranking_loss, (), _R + ("margin",)),
    (torch.nn.HingeEmbeddingLoss, F.hinge_embedding_loss, (), _R + ("margin",)),
    (torch.nn.SoftMarginLoss, F.soft_margin_loss, (), _R),
    (torch.nn.MultiLabelSoftMarginLoss, F.multilabel_soft_margin_loss, ("weight",), _R),
    (torch.nn.CosineEmbeddingLoss, F.cosine_embedding_loss, (), _R + ("margin",)),
    (torch.nn.TripletMarginLoss, F.triplet_margin_loss, (), _R + ("margin", "p", "eps", "swap")),
    (torch.nn.PoissonNLLLoss, F.poisson_nll_loss, (), _R + ("log_input", "full", "eps")),
    (torch.nn.MultiMarginLoss, F.multi_margin_loss, ("weight",), _R + ("p", "margin")),
    (torch.nn.MultiLabelMarginLoss, F.multilabel_margin_loss, (), _R),
    (torch.nn.TripletMarginWithDistanceLoss, F.triplet_margin_with_distance_loss, (),
     _R + ("distance_function", "margin", "swap")),
    (torch.nn.GaussianNLLLoss, F.gaussian_nll_loss, (), _R + ("full", "eps")),
):
    register_module(_module, _fn, params=_params, attrs=_attrs)


def _gaussian_nll_loss_meta(input, target, var, full=False, eps=1e-6, reduction="mean") -> torch.Tensor:
    """F.gaussian_nll_loss's meta result (its Python checks ``var``'s values, which meta tensors do not have):
    the broadcast shape of input, target and var (var one dim short of input gets it back), or 0-d when
    reduced."""
    if isinstance(var, torch.Tensor) and var.shape != input.shape and tuple(input.shape[:-1]) == tuple(var.shape):
        var = var.unsqueeze(-1)
    shape = torch.broadcast_shapes(input.shape, target.shape, var.shape if isinstance(var, torch.Tensor) else ())
    return input.new_empty(shape if reduction == "none" else ())


register_meta_function(F.gaussian_nll_loss, _gaussian_nll_loss_meta)
register_meta_module(torch.nn.GaussianNLLLoss, lambda mod, input, target, var: _gaussian_nll_loss_meta(
    input, target, var, mod.full, mod.eps, mod.reduction))
