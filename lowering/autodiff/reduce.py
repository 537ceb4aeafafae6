"""VJP rules of the ``reduce`` family: a reduction's cotangent is broadcast back over the reduced dims.

Each rule follows torch's derivative (tools/autograd/derivatives.yaml, FunctionsManual.cpp) where torch picks a
convention:

* ``amax``/``amin`` divide the gradient evenly among the elements equal to the result (a NaN result: NaN);
* ``prod`` is ``grad * result / x`` unless ``x`` has a zero, then the product of the other elements (exclusive
  prefix and suffix products, as torch's ``prod_safe_zeros_backward``); a full reduction of an input with
  several zeros has a zero gradient;
* ``var`` is ``2 / (N - correction) * grad * (x - mean)``; a full reduction with ``N <= correction`` gives
  ``grad * (x == mean ? NaN : inf)`` as torch does;
* ``sort``/``topk`` send each value's gradient to the index the forward returned (ties: through that index).

Integer and bool inputs never reach a rule (they carry no gradient); ``argmax``/``argmin``/``any``/``all`` have
non-float results and need none.
"""
from __future__ import annotations

import math

import torch

from fxla.dialects.fxla import ops

from ..emit import double_ratio
from .registry import vjp_rule

_HALF = ("f16", "bf16")


def _reduced(rank, dims):
    """The dims a reduction over ``dims`` reduces (non-negative, sorted; empty ``dims``: all of them)."""
    if rank == 0:
        return []
    return sorted({d % rank for d in dims}) if dims else list(range(rank))


def _kept(ctx, v, x, dims):
    """``v`` (a reduction of ``x`` over ``dims``, keepdim or not) reshaped to broadcast against ``x``."""
    shape = ctx.sig(x).shape
    reduced = _reduced(len(shape), dims)
    return ctx.reshape(v, tuple(1 if i in reduced else n for i, n in enumerate(shape)))


def _scalar_op(ctx, opdef, v, scalar):
    """``v <op> scalar`` for a Python float, as torch computes a tensor op with a Python scalar: at float32 for
    half-precision ``v`` (the scalar not rounded to half first), one rounding back."""
    w = ctx.convert(v, "f32") if ctx.sig(v).elem in _HALF else v
    if isinstance(scalar, torch.SymInt):     # (a symbolic size: computed by the program, a float would fix it)
        return ctx.like(ctx.emit(opdef, w, ctx.tensor(scalar, like=w)), v)
    return ctx.like(ctx.emit(opdef, w, ctx.tensor(float(scalar), like=w)), v)


def _zero(ctx, like):
    return ctx.tensor(0.0, like=like)


@vjp_rule(ops.sum)
def _sum(ctx, ct, x, *, result, dims, keepdim):
    return (ctx.like(ctx.expand(_kept(ctx, ct, x, dims), ctx.sig(x).shape), x),)


@vjp_rule(ops.mean)
def _mean(ctx, ct, x, *, result, dims, keepdim):
    # torch's mean_backward: sum_backward(grad) / N
    shape = ctx.sig(x).shape
    count = math.prod(shape[d] for d in _reduced(len(shape), dims))
    scaled = _scalar_op(ctx, ops.div, ct, count)
    return (ctx.like(ctx.expand(_kept(ctx, scaled, x, dims), shape), x),)


@vjp_rule(ops.amax, ops.amin)
def _extreme(ctx, ct, x, *, result, dims, keepdim, nan_ties=None):
    # torch's scale_grad_by_count: (grad / mask.sum(dims, keepdim=True)) * mask, mask = (x == result); torch.max(x)
    # (nan_ties): evenly_distribute_backward, whose mask is isnan(x) where the result is NaN
    mask = ctx.emit(ops.eq, x, _kept(ctx, result, x, dims))
    if nan_ties:
        mask = ctx.emit(ops.where, ctx.emit(ops.ne, result, result), ctx.emit(ops.ne, x, x), mask)
    count = ctx.emit(ops.sum, mask, dims=_reduced(ctx.sig(x).rank, dims), keepdim=True)
    share = ctx.emit(ops.div, _kept(ctx, ct, x, dims), count)
    return (ctx.like(ctx.emit(ops.mul, share, mask), x),)


def _exclusive_products(ctx, x, reduced):
    """For each element of ``x``, the product of the other elements of its reduced slice: exclusive prefix
    products times exclusive suffix products along the reduced dims flattened into one (row-major), the way
    torch's ``prod_safe_zeros_backward`` computes them along its one dim."""
    shape, elem = ctx.sig(x).shape, ctx.sig(x).elem
    kept = [d for d in range(len(shape)) if d not in reduced]
    perm = kept + list(reduced)
    moved = ctx.emit(ops.permute, x, dims=perm) if perm != list(range(len(shape))) else x
    n = math.prod(shape[d] for d in reduced)
    outer = tuple(shape[d] for d in kept)
    last = len(outer)
    if n == 1:
        return ctx.full(1, shape, elem)
    flat = ctx.reshape(moved, outer + (n,))
    ones = ctx.full(1, outer + (1,), elem)
    before = ctx.emit(ops.concat, [ones, ctx.slice_dim(flat, last, 0, n - 1)], dim=last)
    after = ctx.emit(ops.concat, [ones, ctx.emit(ops.flip, ctx.slice_dim(flat, last, 1, n), dims=[last])], dim=last)
    prefix = ctx.emit(ops.cumprod, before, dim=last)
    suffix = ctx.emit(ops.flip, ctx.emit(ops.cumprod, after, dim=last), dims=[last])
    others = ctx.reshape(ctx.emit(ops.mul, prefix, suffix), ctx.sig(moved).shape)
    if moved is x:
        return others
    inverse = [0] * len(perm)
    for i, d in enumerate(perm):
        inverse[d] = i
    return ctx.emit(ops.permute, others, dims=inverse)


@vjp_rule(ops.prod)
def _prod(ctx, ct, x, *, result, dims, keepdim):
    # torch's prod_backward: no zero in x -> grad * (result / x); else grad * (product of the others); a full
    # reduction with more than one zero -> zeros
    sig = ctx.sig(x)
    if sig.rank == 0:
        return (ctx.like(ct, x),)
    if math.prod(sig.shape) == 0:
        return (ctx.zeros_like(x),)
    reduced = _reduced(sig.rank, dims)
    grad = _kept(ctx, ct, x, dims)
    is_zero = ctx.emit(ops.eq, x, _zero(ctx, x))
    # (result / x where no x is 0; divided by 1 at a zero, where `safe` is taken, so that differentiating this
    # again sends no 0 * inf = NaN through the branch `where` drops)
    nonzero = ctx.emit(ops.where, is_zero, ctx.tensor(1.0, like=x), x)
    plain = ctx.emit(ops.mul, grad, ctx.emit(ops.div, _kept(ctx, result, x, dims), nonzero))
    safe = ctx.emit(ops.mul, grad, _exclusive_products(ctx, x, reduced))
    out = ctx.emit(ops.where, ctx.emit(ops.any, is_zero, dims=(), keepdim=False), safe, plain)
    if not dims:                # (torch: zeros, its shortcut outside grad mode; differentiated, the safe form's)
        zeros = ctx.emit(ops.sum, is_zero, dims=(), keepdim=False)
        several = ctx.emit(ops.gt, zeros, ctx.tensor(1, like=zeros))
        out = ctx.emit(ops.keep_history, ctx.emit(ops.where, several, _zero(ctx, out), out), out)
    return (ctx.like(ctx.expand(out, sig.shape), x),)


@vjp_rule(ops.var)
def _var(ctx, ct, x, *, result, dims, keepdim, correction):
    # torch's var_backward: (2 / (N - correction)) * grad * (x - mean(x)); over everything with N <= correction:
    # grad * where(x == mean, NaN, inf)
    sig = ctx.sig(x)
    reduced = _reduced(sig.rank, dims)
    dof = math.prod(sig.shape[d] for d in reduced) - correction
    grad = _kept(ctx, ct, x, dims)
    mean = ctx.emit(ops.mean, x, dims=reduced, keepdim=True)
    full = not dims or sig.rank == 0
    if full and dof <= 0:
        nan_inf = ctx.emit(ops.where, ctx.emit(ops.eq, x, mean), ctx.tensor(math.nan, like=x),
                           ctx.tensor(math.inf, like=x))
        return (ctx.like(ctx.emit(ops.mul, grad, nan_inf), x),)
    if isinstance(dof, torch.SymInt):        # (2 / dof in double, as ops: a float of the size would fix it)
        w = ctx.convert(grad, "f32") if ctx.sig(grad).elem in _HALF else grad
        scaled = ctx.like(ctx.emit(ops.mul, w, double_ratio(ctx, 2.0, dof, like=w)), grad)
    else:
        scaled = _scalar_op(ctx, ops.mul, grad, 2.0 / dof if dof else math.inf)
    out = ctx.emit(ops.mul, scaled, ctx.emit(ops.sub, x, mean))
    return (ctx.like(ctx.expand(out, sig.shape), x),)


@vjp_rule(ops.logsumexp)
def _logsumexp(ctx, ct, x, *, result, dims, keepdim):
    # torch's logsumexp_backward: grad * exp(x - result)
    weights = ctx.emit(ops.exp, ctx.emit(ops.sub, x, _kept(ctx, result, x, dims)))
    return (ctx.like(ctx.emit(ops.mul, _kept(ctx, ct, x, dims), weights), x),)


def scatter_back(ctx, grad, indices, x, dim, reduce):
    """torch's value_selecting_reduction_backward (sort, topk) and cummax's backward: a zero tensor like ``x``
    with ``grad`` scattered along ``dim`` to ``indices`` (``reduce``: ``'none'`` overwrites, ``'add'``
    accumulates)."""
    sig = ctx.sig(x)
    if math.prod(ctx.sig(grad).shape) == 0 or math.prod(sig.shape) == 0:
        return ctx.zeros_like(x)
    if sig.rank == 0:
        return ctx.like(grad, x)
    zeros = ctx.full(0, sig.shape, ctx.sig(grad).elem)
    return ctx.like(ctx.emit(ops.scatter, zeros, indices, grad, dim=dim % sig.rank, reduce=reduce), x)


@vjp_rule(ops.sort)
def _sort(ctx, ct, x, *, result, dim, descending):
    values_ct = ct[0]
    if values_ct is None:
        return (None,)
    return (scatter_back(ctx, values_ct, result[1], x, dim, "none"),)


@vjp_rule(ops.topk)
def _topk(ctx, ct, x, *, result, k, dim, largest):
    values_ct = ct[0]
    if values_ct is None:
        return (None,)
    if k == 0:
        return (ctx.zeros_like(x),)
    return (scatter_back(ctx, values_ct, result[1], x, dim, "none"),)
