"""VJP rules of the ``scan`` family, torch's derivatives (FunctionsManual.cpp) written in fxla ops:

* ``cumsum``: the reversed cumulative sum of the gradient (``flip(cumsum(flip(grad)))``);
* ``cumprod``: torch's O(n) ``cumprod_backward`` (``reversed_cumsum(result * grad) / x`` up to each slice's first
  zero, its zero-aware form at that zero, zero after it) as the value, ``keep_history``'d to an exact form for its
  own derivative: ``exclusive_cumprod(x) * A`` with ``A_k = grad_k + x_{k+1} A_{k+1}`` solved by a suffix scan of
  log2(n) steps, without division, so exact where ``x`` has zeros (torch's create_graph formula is O(n^2) for
  that).  Along a dim of symbolic size torch's formula alone, whose derivative fxla refuses;
* ``cummax``/``cummin``: the gradient of each running extreme goes to the index the forward returned (ties:
  the later index, as torch's forward picks), accumulated there;
* ``logcumsumexp``: torch's split of the gradient into positive and negative parts, each carried by a reversed
  ``logcumsumexp`` in log space.

A scan along a dim of size 1 (or of a 0-d / one-element tensor) is the identity: its gradient is the
cotangent itself, as torch returns it.
"""
from __future__ import annotations

import math

import torch

from fxla.dialects.fxla import ops

from ..dtypes import ELEM_TO_TORCH
from .reduce import scatter_back
from .registry import vjp_rule


def _identity(ctx, x, dim):
    """Whether a scan of ``x`` along ``dim`` is the identity (nothing is combined)."""
    shape = ctx.sig(x).shape
    return not shape or math.prod(shape) <= 1 or shape[dim % len(shape)] == 1


def _reversed(ctx, opdef, v, dim):
    """The scan ``opdef`` of ``v`` from the end of ``dim`` backwards."""
    return ctx.emit(ops.flip, ctx.emit(opdef, ctx.emit(ops.flip, v, dims=[dim]), dim=dim), dims=[dim])


@vjp_rule(ops.cumsum)
def _cumsum(ctx, ct, x, *, result, dim):
    if _identity(ctx, x, dim):
        return (ctx.like(ct, x),)
    return (ctx.like(_reversed(ctx, ops.cumsum, ct, dim % ctx.sig(x).rank), x),)


def _shifted(ctx, v, d: int, n: int, by: int, fill: float):
    """``v`` moved ``by`` places towards the start of ``d`` (size ``n``), ``fill`` after its end (``by`` < 0:
    towards the end, ``fill`` before its start)."""
    shape = list(ctx.sig(v).shape)
    shape[d] = abs(by)
    pad = ctx.full(fill, shape, ctx.sig(v).elem)
    if by > 0:
        return ctx.emit(ops.concat, [ctx.slice_dim(v, d, by, n), pad], dim=d)
    return ctx.emit(ops.concat, [pad, ctx.slice_dim(v, d, 0, n + by)], dim=d)


@vjp_rule(ops.cumprod)
def _cumprod(ctx, ct, x, *, result, dim):
    if _identity(ctx, x, dim):
        return (ctx.like(ct, x),)
    d = dim % ctx.sig(x).rank
    n = ctx.sig(x).shape[d]
    value = _cumprod_first_order(ctx, ct, x, result, d)
    if type(n) is not int:
        return (ctx.like(ctx.emit(ops.detach, value, first_order="cumprod along a dim of symbolic size"), x),)
    # torch's values (its O(n) formula: after a slice's first zero the gradient is 0, also where an inf would make
    # the product NaN), with the gradient of an exact polynomial form: E_k * A_k, E_k = prod_{i < k} x_i (an
    # exclusive cumprod) and A_k = ct_k + x_{k+1} A_{k+1}, a linear recurrence solved by a suffix scan of log2(n)
    # steps ((a, b) pairs: b_k += a_k b_{k+s}, a_k *= a_{k+s}).  It has no division, so it is exact where x has
    # zeros, and so is its own derivative (torch's create_graph formula is O(n^2) for the same reason).  The
    # forward of keep_history computes only the values: the scan is there for a derivative of this backward.
    ct = ctx.convert(ct, ctx.sig(x).elem) if ctx.sig(ct).elem != ctx.sig(x).elem else ct
    exclusive = ctx.emit(ops.cumprod, _shifted(ctx, x, d, n, -1, 1.0), dim=d)
    a, b = _shifted(ctx, x, d, n, 1, 1.0), ct
    step = 1
    while step < n:
        b = ctx.emit(ops.add, b, ctx.emit(ops.mul, a, _shifted(ctx, b, d, n, step, 0.0)))
        if step * 2 < n:
            a = ctx.emit(ops.mul, a, _shifted(ctx, a, d, n, step, 1.0))
        step *= 2
    exact = ctx.emit(ops.mul, exclusive, b)
    return (ctx.like(ctx.emit(ops.keep_history, ctx.convert(value, ctx.sig(x).elem), exact), x),)


def _cumprod_first_order(ctx, ct, x, result, d: int):
    """cumprod's gradient as torch's O(n) ``cumprod_backward`` computes it: ``reversed_cumsum(result * grad) / x``
    up to the first zero of each slice, torch's zero-aware form at that first zero, zero after it.  Exact at the
    first order; its own derivative at a zero of ``x`` is not (see :func:`_cumprod`)."""
    zero, one = ctx.tensor(0.0, like=x), ctx.tensor(1.0, like=x)
    w = ctx.emit(ops.mul, result, ct)
    is_zero = ctx.emit(ops.eq, x, zero)
    zeros_so_far = ctx.emit(ops.cumsum, is_zero, dim=d)                      # i64
    n_zeros = ctx.tensor(0, like=zeros_so_far)
    before = ctx.emit(ops.eq, zeros_so_far, n_zeros)                        # [0, first zero)
    upto_second = ctx.emit(ops.eq, zeros_so_far, ctx.tensor(1, like=zeros_so_far))   # [first zero, second zero)
    # before the first zero: reversed_cumsum(w masked to that range) / x
    head = ctx.emit(ops.div, _reversed(ctx, ops.cumsum, ctx.emit(ops.where, before, w, zero), d),
                    ctx.emit(ops.where, before, x, one))
    out = ctx.emit(ops.where, before, head, zero)
    # at the first zero z1: sum_j grad_j * prod(x[z1+1 .. j]) over j in [z1, z2), times result[z1 - 1] (1 at 0)
    first = ctx.emit(ops.logical_and, is_zero, upto_second)
    between = ctx.emit(ops.logical_and, upto_second, ctx.emit(ops.logical_not, is_zero))
    products = ctx.emit(ops.cumprod, ctx.emit(ops.where, between, x, one), dim=d)
    weighted = ctx.emit(ops.mul, products, ctx.emit(ops.where, upto_second, ct, zero))
    at_first = ctx.emit(ops.sum, weighted, dims=[d], keepdim=True)
    z1 = ctx.emit(ops.sum, before, dims=[d], keepdim=True)                   # the first zero's index (i64)
    prev = ctx.emit(ops.maximum, ctx.emit(ops.sub, z1, ctx.tensor(1, like=z1)), n_zeros)
    prefix = ctx.emit(ops.gather, result, prev, dim=d)
    prefix = ctx.emit(ops.where, ctx.emit(ops.eq, z1, n_zeros), one, prefix)
    return ctx.emit(ops.where, first, ctx.emit(ops.mul, at_first, prefix), out)


@vjp_rule(ops.cummax, ops.cummin)
def _cum_extreme(ctx, ct, x, *, result, dim):
    # torch's cummaxmin_backward: zeros.scatter_add(dim, indices, grad)
    values_ct = ct[0]
    if values_ct is None:
        return (None,)
    return (scatter_back(ctx, values_ct, result[1], x, dim, "add"),)


@vjp_rule(ops.logcumsumexp)
def _logcumsumexp(ctx, ct, x, *, result, dim):
    # torch's logcumsumexp_backward: with log|g| where g > 0 (g < 0), else the lowest finite value,
    # exp(reversed_logcumsumexp(log_g - result) + x) for each sign, positive minus negative
    sig = ctx.sig(x)
    if sig.rank == 0 or math.prod(sig.shape) == 0:
        return (ctx.like(ct, x),)
    d = dim % sig.rank
    lowest = ctx.tensor(float(torch.finfo(ELEM_TO_TORCH[ctx.sig(ct).elem]).min), like=ct)
    zero = ctx.tensor(0.0, like=ct)
    log_abs = ctx.emit(ops.log, ctx.emit(ops.abs, ct))

    def part(mask_op):
        log_g = ctx.emit(ops.where, ctx.emit(mask_op, ct, zero), log_abs, lowest)
        summed = _reversed(ctx, ops.logcumsumexp, ctx.emit(ops.sub, log_g, result), d)
        return ctx.emit(ops.exp, ctx.emit(ops.add, summed, x))

    return (ctx.like(ctx.emit(ops.sub, part(ops.gt), part(ops.lt)), x),)
