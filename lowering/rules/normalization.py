"""Normalization: batch_norm and instance_norm (eval mode, and training mode with the running statistics updated
in place), group_norm, rms_norm, local_response_norm and F.normalize (+ their nn modules; layer_norm is one fxla
op, in nn.py), and scaled_dot_product_attention, as compositions of fxla ops (half-precision inputs are computed in
f32 and rounded once, like torch's CPU kernels)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from fxla.dialects.fxla import Sig, ops, type_of
from fxla.dialects.fxla.types import broadcast_shapes
from fxla.dialects.mlir import ir
from fxla.frontend.shape_prop import (at_traced_sizes, has_symbolic_sizes, register_meta_function,
                                      register_meta_module)

from ..emit import compute_elem, double_ratio, safe_softmax
from ..registry import register, register_module


def _per_channel(ctx, v, rank, elem):
    """A [C] vector shaped [C, 1, …] to broadcast along dim 1 of a rank-``rank`` input."""
    return ctx.reshape(ctx.convert(v, elem), (ctx.sig(v).shape[0],) + (1,) * (rank - 2))


@register(F.batch_norm)
def _batch_norm(ctx, input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
                eps=1e-5):
    """Eval mode: normalise with the running statistics.  Training mode: with the batch's mean and biased variance
    per channel (dim 1), and -- when given -- update the running statistics in place, as torch does:
    ``running = (1 - momentum) * running + momentum * batch`` with the *unbiased* variance for ``running_var``
    (``ctx.assign``: the caller writes the new values back to the module's buffers or the inputs)."""
    s = ctx.sig(input)
    elem = compute_elem(s.elem)
    x = ctx.convert(input, elem)
    if not training:
        if running_mean is None or running_var is None:
            raise ctx.error("batch_norm in evaluation mode without running_mean/running_var",
                            "eager refuses it too (they must be defined in evaluation mode)",
                            "pass the running statistics, or training=True for the batch's statistics")
        mean, var = running_mean, running_var
    else:
        mean, var = _batch_statistics(ctx, x, running_mean, running_var, momentum)
    scale = ctx.emit(ops.rsqrt, ctx.emit(ops.add, _per_channel(ctx, var, s.rank, elem), ctx.tensor(eps, like=x)))
    y = ctx.emit(ops.mul, ctx.emit(ops.sub, x, _per_channel(ctx, mean, s.rank, elem)), scale)
    if weight is not None:
        y = ctx.emit(ops.mul, y, _per_channel(ctx, weight, s.rank, elem))
    if bias is not None:
        y = ctx.emit(ops.add, y, _per_channel(ctx, bias, s.rank, elem))
    return ctx.convert(y, s.elem)


def _batch_statistics(ctx, x, running_mean, running_var, momentum):
    """The per-channel mean and biased variance of ``x`` (computed in its element type), updating the running
    statistics given (``momentum``: a float, or a 0-d value -- BatchNorm's cumulative average)."""
    s = ctx.sig(x)
    dims = (0,) + tuple(range(2, s.rank))
    count = math.prod(s.shape[d] for d in dims)
    if count == 1:
        raise ctx.error(f"batch_norm in training mode of an input of shape {list(s.shape)}", "eager refuses it too: "
                        "'Expected more than 1 value per channel when training'", "use a batch of more than one "
                        "value per channel, or model.eval()")
    mean = ctx.emit(ops.mean, x, dims=dims, keepdim=False)
    var = ctx.emit(ops.var, x, dims=dims, keepdim=False, correction=0)
    updates = ((running_mean, mean, "running_mean"),
               (running_var, ctx.emit(ops.mul, var, double_ratio(ctx, count, count - 1, var)), "running_var"))
    _update_running(ctx, updates, momentum)
    return mean, var


def _update_running(ctx, updates, momentum) -> None:
    """``running = (1 - momentum) * running + momentum * batch`` for each ``(running, batch, name)`` of
    ``updates`` whose running statistic is given, in place (``ctx.assign``).  No gradient goes from the running
    statistics to the batch (eager updates them outside autograd)."""
    for running, batch, what in updates:
        if running is None:
            continue
        work = compute_elem(ctx.sig(running).elem)
        batch = ctx.emit(ops.detach, ctx.convert(batch, work))
        m = ctx.convert(momentum, work) if isinstance(momentum, ir.Value) else ctx.tensor(float(momentum), like=batch)
        kept = ctx.emit(ops.mul, ctx.convert(running, work), ctx.emit(ops.sub, ctx.tensor(1.0, like=m), m))
        new = ctx.emit(ops.add, kept, ctx.emit(ops.mul, batch, m))
        ctx.assign(running, ctx.convert(new, ctx.sig(running).elem), what)


@register(F.instance_norm)
def _instance_norm(ctx, input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                   momentum=0.1, eps=1e-5):
    """Each (sample, channel) normalised over its spatial dims with its own mean and biased variance (or, with
    ``use_input_stats=False``, the running statistics, as batch_norm in eval mode).  Running statistics given
    with ``use_input_stats`` are updated in place as torch does: with the instances' mean and unbiased variance,
    averaged over the batch."""
    if not use_input_stats:
        return _batch_norm(ctx, input, running_mean, running_var, weight, bias, False, eps=eps)
    s = ctx.sig(input)
    elem = compute_elem(s.elem)
    x = ctx.convert(input, elem)
    dims = tuple(range(2, s.rank))
    count = math.prod(s.shape[2:])
    if count == 1:
        raise ctx.error(f"instance_norm of an input of shape {list(s.shape)}", "eager refuses it too: 'Expected "
                        "more than 1 spatial element when training'", "pass a larger input, or use the running "
                        "statistics (use_input_stats=False / model.eval() with track_running_stats=True)")
    mean = ctx.emit(ops.mean, x, dims=dims, keepdim=True)
    var = ctx.emit(ops.var, x, dims=dims, keepdim=True, correction=0)
    if running_mean is not None or running_var is not None:
        per_channel = (s.shape[1],)

        def over_batch(v):                  # [N, C, 1...] -> [C]: the mean over the batch
            return ctx.emit(ops.mean, ctx.reshape(v, s.shape[:2]), dims=(0,), keepdim=False)
        unbiased = ctx.emit(ops.mul, var, double_ratio(ctx, count, count - 1, var))
        _update_running(ctx, ((running_mean, ctx.reshape(over_batch(mean), per_channel), "running_mean"),
                              (running_var, ctx.reshape(over_batch(unbiased), per_channel), "running_var")), momentum)
    y = ctx.emit(ops.mul, ctx.emit(ops.sub, x, mean),
                 ctx.emit(ops.rsqrt, ctx.emit(ops.add, var, ctx.tensor(eps, like=var))))
    if weight is not None:
        y = ctx.emit(ops.mul, y, _per_channel(ctx, weight, s.rank, elem))
    if bias is not None:
        y = ctx.emit(ops.add, y, _per_channel(ctx, bias, s.rank, elem))
    return ctx.convert(y, s.elem)


@register(torch.nn.InstanceNorm1d, torch.nn.InstanceNorm2d, torch.nn.InstanceNorm3d)
def _instance_norm_module(ctx, input, *, mod):
    """torch's ``_InstanceNorm.forward``: instance statistics in training mode or without running statistics
    (updating the running ones in training mode), the running statistics in eval mode."""
    target = ctx.node.target
    unbatched = ctx.sig(input).rank == {torch.nn.InstanceNorm1d: 2, torch.nn.InstanceNorm2d: 3,
                                        torch.nn.InstanceNorm3d: 4}[type(mod)]
    x = ctx.reshape(input, (1,) + tuple(ctx.sig(input).shape)) if unbatched else input
    weight = ctx.param(f"{target}.weight") if mod.affine else None
    bias = ctx.param(f"{target}.bias") if mod.affine else None
    stats = (ctx.param(f"{target}.running_mean"), ctx.param(f"{target}.running_var")) \
        if mod.track_running_stats else (None, None)
    y = _instance_norm(ctx, x, *stats, weight, bias, use_input_stats=mod.training or not mod.track_running_stats,
                       momentum=0.0 if mod.momentum is None else mod.momentum, eps=mod.eps)
    return ctx.reshape(y, ctx.sig(input).shape)


@register(torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)
def _batch_norm_module(ctx, input, *, mod):
    """torch's ``_BatchNorm.forward``: in training mode with running statistics, ``num_batches_tracked += 1`` and
    the running statistics are updated with ``momentum`` (``None``: the cumulative average, ``1 /
    num_batches_tracked``); batch statistics normalise in training mode and whenever there are no running
    statistics (``track_running_stats=False``)."""
    rank = ctx.sig(input).rank
    want = {torch.nn.BatchNorm1d: (2, 3), torch.nn.BatchNorm2d: (4,), torch.nn.BatchNorm3d: (5,)}[type(mod)]
    if rank not in want:
        raise ctx.error(f"{type(mod).__name__} of a {rank}-D input", f"eager refuses it too: expected "
                        f"{' or '.join(f'{r}D' for r in want)} input", "pass an input of that rank")
    target = ctx.node.target
    weight = ctx.param(f"{target}.weight") if mod.weight is not None else None
    bias = ctx.param(f"{target}.bias") if mod.bias is not None else None
    momentum = 0.0 if mod.momentum is None else mod.momentum
    if mod.training and mod.track_running_stats and mod.num_batches_tracked is not None:
        tracked = ctx.param(f"{target}.num_batches_tracked")
        tracked_new = ctx.emit(ops.add, tracked, ctx.tensor(1, like=tracked))
        ctx.assign(tracked, tracked_new, "num_batches_tracked")
        if mod.momentum is None:              # the cumulative moving average: 1 / num_batches_tracked
            count = ctx.convert(tracked_new, "f32")
            momentum = ctx.emit(ops.div, ctx.tensor(1.0, like=count), count)
    stats = (None, None)
    if not mod.training or mod.track_running_stats:
        stats = tuple(ctx.param(f"{target}.{n}") if getattr(mod, n) is not None else None
                      for n in ("running_mean", "running_var"))
    training = mod.training or (stats[0] is None and stats[1] is None)
    return _batch_norm(ctx, input, *stats, weight, bias, training, momentum, mod.eps)


# (a BatchNorm's result is like its input; its forward reads num_batches_tracked's value with momentum=None,
# which a meta tensor has not: shape propagation does not run it)
for _module in (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d):
    register_meta_module(_module, like="input")


@register(F.rms_norm)
def _rms_norm(ctx, input, normalized_shape, weight=None, eps=None):
    s = ctx.sig(input)
    if eps is None:
        eps = torch.finfo(_torch_dtype(s.elem)).eps
    elem = compute_elem(s.elem)
    x = ctx.convert(input, elem)
    k = len(tuple(normalized_shape))
    dims = tuple(range(s.rank - k, s.rank))
    ms = ctx.emit(ops.mean, ctx.emit(ops.mul, x, x), dims=dims, keepdim=True)
    y = ctx.emit(ops.mul, x, ctx.emit(ops.rsqrt, ctx.emit(ops.add, ms, ctx.tensor(float(eps), like=ms))))
    if weight is not None:
        y = ctx.emit(ops.mul, y, ctx.convert(weight, elem))
    return ctx.convert(y, s.elem)


def _torch_dtype(elem):
    from ..dtypes import ELEM_TO_TORCH
    return ELEM_TO_TORCH[elem]


register_module(torch.nn.RMSNorm, F.rms_norm, params=("weight",), attrs=("normalized_shape", "eps"))


# -- group_norm --------------------------------------------------------------------------------------------------
@register(F.group_norm, torch.group_norm)
def _group_norm(ctx, input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    s = ctx.sig(input)
    n, c = s.shape[0], s.shape[1]
    if c % num_groups:
        raise ctx.error(f"group_norm: {c} channels are not divisible by {num_groups} groups", "torch rejects it too",
                        "choose num_groups dividing the channel count")
    elem = compute_elem(s.elem)
    x = ctx.reshape(ctx.convert(input, elem), (n, num_groups, math.prod(s.shape[1:]) // num_groups))
    y = ctx.reshape(ctx.emit(ops.layer_norm, x, None, None, normalized_rank=1, eps=float(eps)), s.shape)
    per_channel = (c,) + (1,) * (s.rank - 2)
    if weight is not None:
        y = ctx.emit(ops.mul, y, ctx.reshape(ctx.convert(weight, elem), per_channel))
    if bias is not None:
        y = ctx.emit(ops.add, y, ctx.reshape(ctx.convert(bias, elem), per_channel))
    return ctx.convert(y, s.elem)


register_module(torch.nn.GroupNorm, F.group_norm, params=("weight", "bias"), attrs=("num_groups", "eps"))


# -- local response normalisation (torch's formula, on avg_pool of the squares) ---------------------------------
@register(F.local_response_norm)
def _local_response_norm(ctx, input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels (zero padded)) ** beta."""
    s = ctx.sig(input)
    squares = ctx.emit(ops.mul, input, input)
    low, high = size // 2, (size - 1) // 2
    padded = ctx.emit(ops.pad, squares, low=[0, low] + [0] * (s.rank - 2), high=[0, high] + [0] * (s.rank - 2))
    total = None
    for offset in range(size):
        window = ctx.slice_dim(padded, 1, offset, offset + s.shape[1])
        total = window if total is None else ctx.emit(ops.add, total, window)
    div = ctx.emit(ops.mul, total, ctx.tensor(alpha / size, like=total))
    div = ctx.emit(ops.pow, ctx.emit(ops.add, div, ctx.tensor(float(k), like=div)), ctx.tensor(float(beta), like=div))
    return ctx.emit(ops.div, input, div)


register_module(torch.nn.LocalResponseNorm, F.local_response_norm, attrs=("size", "alpha", "beta", "k"))


def _local_response_norm_meta(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """F.local_response_norm's meta result (its input's shape; torch's Python implementation views the input by
    its sizes as ints, which fixed every symbolic dim)."""
    if not has_symbolic_sizes(input):
        return F.local_response_norm(input, size, alpha, beta, k)
    F.local_response_norm(at_traced_sizes(input), size, alpha, beta, k)       # (its checks, at the traced sizes)
    return input.new_empty(input.shape)


register_meta_function(F.local_response_norm, _local_response_norm_meta)
register_meta_module(torch.nn.LocalResponseNorm, lambda mod, input: _local_response_norm_meta(
    input, mod.size, mod.alpha, mod.beta, mod.k))


# -- F.normalize -------------------------------------------------------------------------------------------------
@register(F.normalize)
def _normalize(ctx, input, p=2.0, dim=1, eps=1e-12, out=None):
    s = ctx.sig(input)
    elem = compute_elem(s.elem)
    x = ctx.convert(input, elem)
    if p == 2:
        # sqrt of the sum of squares, read where it is not 0 (torch's norm gradient is 0 at a zero norm, where
        # sqrt's would be infinite): the same values, and no NaN in the gradient
        squares = ctx.emit(ops.sum, ctx.emit(ops.mul, x, x), dims=(dim,), keepdim=True)
        zero = ctx.emit(ops.eq, squares, ctx.tensor(0.0, like=squares))
        safe = ctx.emit(ops.where, zero, ctx.tensor(1.0, like=squares), squares)
        norm = ctx.emit(ops.where, zero, ctx.tensor(0.0, like=squares), ctx.emit(ops.sqrt, safe))
    elif p == 1:
        norm = ctx.emit(ops.sum, ctx.emit(ops.abs, x), dims=(dim,), keepdim=True)
    elif p == float("inf"):
        norm = ctx.emit(ops.amax, ctx.emit(ops.abs, x), dims=(dim,), keepdim=True)
    else:
        powered = ctx.emit(ops.pow, ctx.emit(ops.abs, x), ctx.tensor(float(p), like=x))
        norm = ctx.emit(ops.pow, ctx.emit(ops.sum, powered, dims=(dim,), keepdim=True),
                        ctx.tensor(1.0 / float(p), like=x))
    denom = ctx.emit(ops.maximum, norm, ctx.tensor(float(eps), like=norm))
    return ctx.convert(ctx.emit(ops.div, x, denom), s.elem)


def _attention_scale(ctx, head_dim, scale, like):
    """``scale``, or torch's default ``1 / sqrt(head_dim)`` (in double, then ``like``'s type); a symbolic head
    dim computes it as ops in f64, the same correctly rounded sqrt and division (a Python float would fix it)."""
    if scale is not None:
        return ctx.tensor(float(scale), like=like)
    if not isinstance(head_dim, torch.SymInt):
        return ctx.tensor(1.0 / math.sqrt(head_dim), like=like)
    size = ctx.convert(ctx.tensor(head_dim), "f64")
    return ctx.convert(ctx.emit(ops.div, ctx.tensor(1.0, like=size), ctx.emit(ops.sqrt, size)), ctx.sig(like).elem)


@register(F.scaled_dot_product_attention)
def _sdpa(ctx, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """torch's math form: softmax(q k^T * scale + mask) -- 0 for a query whose every key is masked (torch's
    ``_safe_softmax``, not NaN) --, dropped out with ``dropout_p`` (a random mask per call, as
    ``torch.dropout(weights, dropout_p, train=True)``), times v."""
    qs, ks = ctx.sig(query), ctx.sig(key)
    if enable_gqa and ks.rank >= 3 and ks.shape[-3] != qs.shape[-3]:
        key, value = (_repeat_heads(ctx, t, qs.shape[-3]) for t in (key, value))
        ks = ctx.sig(key)
    elem = compute_elem(qs.elem)
    q, k, v = (ctx.convert(t, elem) for t in (query, key, value))
    perm = list(range(ks.rank - 2)) + [ks.rank - 1, ks.rank - 2]
    scores = ctx.emit(ops.matmul, q, ctx.emit(ops.permute, k, dims=perm))
    scores = ctx.emit(ops.mul, scores, _attention_scale(ctx, qs.shape[-1], scale, scores))
    given = attn_mask is not None           # (a causal mask leaves no query without keys: a plain softmax)
    if is_causal:
        rows, cols = qs.shape[-2], ks.shape[-2]
        if isinstance(rows, int) and isinstance(cols, int):
            attn_mask = ctx.emit(ops.tril, ctx.emit(ops.constant, value=_bool_ones(rows, cols)))
        else:                                # symbolic sizes (docs/shapes.md): key j <= query i, from two iotas
            i, j = (ctx.emit(ops.arange, start=0.0, step=1.0, length=n, result_type=type_of(Sig((n,), "i64")))
                    for n in (rows, cols))
            attn_mask = ctx.emit(ops.le, ctx.reshape(j, (1, cols)), ctx.reshape(i, (rows, 1)))
    if attn_mask is not None:
        if ctx.sig(attn_mask).elem == "i1":
            scores = ctx.emit(ops.where, attn_mask, scores, ctx.tensor(float("-inf"), like=scores))
        else:
            scores = ctx.emit(ops.add, scores, ctx.convert(attn_mask, elem))
    weights = safe_softmax(ctx, scores) if given else ctx.emit(ops.softmax, scores, dim=-1)
    if dropout_p:
        weights = ctx.lower(F.dropout, weights, dropout_p, True)
    return ctx.convert(ctx.emit(ops.matmul, weights, v), ctx.result_sig.elem)


def _sdpa_meta(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """F.scaled_dot_product_attention's meta result by size arithmetic where sizes are symbolic: on FakeTensors
    torch decomposes it into its math form op by op, each with symbolic shape rules (most of a symbolic trace's
    time in a transformer); its argument checks run at the traced sizes."""
    args = (query, key, value, attn_mask)
    if not has_symbolic_sizes(args):
        return F.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
                                              enable_gqa=enable_gqa)
    q, k, v, mask = at_traced_sizes(args)
    F.scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
    lead = tuple(query.shape[:-2]) if enable_gqa else broadcast_shapes(query.shape[:-2], key.shape[:-2],
                                                                        value.shape[:-2])
    return query.new_empty([*lead, query.shape[-2], value.shape[-1]])


register_meta_function(F.scaled_dot_product_attention, _sdpa_meta)


def _repeat_heads(ctx, t, heads):
    """[..., Hkv, S, D] -> [..., heads, S, D], query head h reading key/value head h // (heads / Hkv)
    (torch's repeat_interleave for enable_gqa)."""
    s = ctx.sig(t)
    kv = s.shape[-3]
    lead, tail = s.shape[:-3], s.shape[-2:]
    x = ctx.reshape(t, lead + (kv, 1) + tail)
    x = ctx.emit(ops.expand, x, shape=lead + (kv, heads // kv) + tail)
    return ctx.reshape(x, lead + (heads,) + tail)


def _bool_ones(rows, cols):
    import numpy as np
    return ir.DenseElementsAttr.get(np.ones((rows, cols), dtype=np.bool_), type=ir.IntegerType.get_signless(1))
