"""VJP rules of the ``indexing`` family (see :mod:`fxla.lowering.autodiff.registry`), with torch's conventions.

* ``slice``: the cotangent spread out by the strides (zeros between neighbours) and padded into place.
* ``gather`` / ``index_select``: the cotangent scatter-added into zeros of the input's shape, so an index that
  repeats accumulates every cotangent it picked (torch's ``scatter_add`` / ``index_add`` backward); half
  precision accumulates in f32 and is rounded once.
* ``scatter``: per ``reduce`` mode, as torch's ``scatter`` / ``scatter_add`` / ``scatter_reduce`` backward:
  ``none`` -- the input gets the cotangent except where an index writes, every ``src`` element the cotangent of
  the position it was written to (duplicates all get it, as in torch); ``add`` -- the input the cotangent,
  ``src`` it gathered; ``multiply`` (``scatter_reduce`` prod) -- the product of the other factors, computed
  without dividing by a zero; ``amax`` / ``amin`` -- the cotangent split evenly among the input and ``src``
  elements equal to the result.  Elements of ``src`` beyond the index's shape are unused: zero gradient.
* ``where``: the cotangent where the condition picks each operand (summed back to its broadcast shape);
  the condition gets none.
* ``tril`` / ``triu``: the cotangent masked the same way.
"""
from __future__ import annotations

import torch

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.types import is_float

from ..emit import compute_elem, may_be_nonzero
from .registry import NotDifferentiableError, vjp_rule


def _is_float(ctx, value) -> bool:
    return is_float(ctx.sig(value).elem)


def _dim(ctx, value, dim: int) -> int:
    rank = ctx.sig(value).rank
    return dim % rank if rank else 0


def _scatter_add(ctx, shape, index, values, dim: int):
    """Zeros of ``shape`` with ``values`` (``index``'s shape) added at ``index`` along ``dim`` (torch's
    ``zeros.scatter_add_(dim, index, values)``): repeated indices accumulate.  Half precision accumulates in
    f32, rounded once at the end."""
    elem = ctx.sig(values).elem
    wide = ctx.convert(values, compute_elem(elem))
    zeros = ctx.full(0, shape, compute_elem(elem))
    return ctx.convert(ctx.emit(ops.scatter, zeros, index, wide, dim=dim, reduce="add"), elem)


def _dilate(ctx, g, dim: int, stride: int):
    """``g`` with ``stride - 1`` zeros after each element along ``dim``: [n] -> [n, 1] -> pad to [n, stride] ->
    [n * stride] (the trailing zeros are cropped by the caller's final pad)."""
    shape = ctx.sig(g).shape
    rank = len(shape)
    g = ctx.reshape(g, shape[:dim + 1] + (1,) + shape[dim + 1:])
    g = ctx.emit(ops.pad, g, low=[0] * (rank + 1), high=[stride - 1 if i == dim + 1 else 0 for i in range(rank + 1)])
    return ctx.reshape(g, shape[:dim] + (shape[dim] * stride,) + shape[dim + 1:])


@vjp_rule(ops.slice)
def _slice(ctx, ct, x, *, result, start, limit, stride):
    shape = ctx.sig(x).shape
    if any(type(n) is int and n == 0 for n in ctx.sig(ct).shape):        # an empty slice: nothing flows back
        return (ctx.zeros_like(x),)
    # (symbolic sizes take the general path, which is also right for an empty or one-element slice, rather than
    # a comparison that would make a guard of the program)
    g = ct
    for d, step in enumerate(stride):
        n = ctx.sig(ct).shape[d]
        if step > 1 and (isinstance(n, torch.SymInt) or n > 1):
            g = _dilate(ctx, g, d, step)            # dim d: n * step elements, element k at k * step
    # into place: start zeros before, the rest after (negative: the zeros _dilate put after the last element)
    high = [size - lo - n for size, lo, n in zip(shape, start, ctx.sig(g).shape)]
    if may_be_nonzero(list(start) + high):
        g = ctx.emit(ops.pad, g, low=list(start), high=high)
    return (g,)


@vjp_rule(ops.gather)
def _gather(ctx, ct, x, index, *, result, dim):
    if ctx.sig(x).rank == 0:                        # a 0-d input: the one element (index 0) is the result
        return ctx.reshape(ct, ()), None
    return _scatter_add(ctx, ctx.sig(x).shape, index, ct, _dim(ctx, x, dim)), None


@vjp_rule(ops.index_select)
def _index_select(ctx, ct, x, index, *, result, dim):
    xs = ctx.sig(x)
    if xs.rank == 0:                                # a 0-d input (one index): the result is the input
        return ctx.reshape(ct, ()), None
    d = _dim(ctx, x, dim)
    shape = ctx.sig(ct).shape
    n = ctx.sig(index).shape[0]
    column = ctx.reshape(index, tuple(n if i == d else 1 for i in range(len(shape))))
    return _scatter_add(ctx, xs.shape, ctx.expand(column, shape), ct, d), None


# -- scatter -------------------------------------------------------------------------------------------------------
def _used_src(ctx, src, index):
    """The part of ``src`` the scatter reads: its leading ``index.shape`` block."""
    want, have = ctx.sig(index).shape, ctx.sig(src).shape
    if want == have:
        return src
    return ctx.emit(ops.slice, src, start=[0] * len(want), limit=list(want), stride=[1] * len(want))


def _as_src(ctx, g, src):
    """``g`` (``index``'s shape) as the cotangent of ``src``: zeros for the elements the scatter did not read."""
    want, have = ctx.sig(src).shape, ctx.sig(g).shape
    if want == have:
        return g
    return ctx.emit(ops.pad, g, low=[0] * len(want), high=[w - h for w, h in zip(want, have)])


def _gather_ct(ctx, v, index, d):
    return ctx.emit(ops.gather, v, index, dim=d)


def _scatter_none(ctx, ct, input, index, src, result, d):
    # torch: self: grad.scatter(dim, index, 0); src: grad.gather(dim, index)
    d_input = ctx.emit(ops.scatter, ct, index, ctx.full(0, ctx.sig(index).shape, ctx.sig(ct).elem), dim=d)
    return d_input, _gather_ct(ctx, ct, index, d)


def _scatter_add_vjp(ctx, ct, input, index, src, result, d):
    # torch (scatter_add, scatter_reduce sum): self: grad; src: grad.gather(dim, index)
    return ct, _gather_ct(ctx, ct, index, d)


def _scatter_multiply(ctx, ct, input, index, src, result, d):
    """torch's ``scatter_reduce_backward`` for prod: each factor's gradient is the product of the others,
    computed without dividing by a zero (a zero input or a single zero ``src`` element is replaced by 1 in a
    recomputed product; two zeros leave every other factor's product 0)."""
    elem = ctx.sig(ct).elem
    one, zero = ctx.tensor(1.0, like=ct), ctx.tensor(0.0, like=ct)
    mul = lambda a, b: ctx.emit(ops.mul, a, b)                           # noqa: E731
    self_zero = ctx.emit(ops.eq, input, zero)
    masked_self = ctx.emit(ops.where, self_zero, one, input)
    masked_self_result = ctx.emit(ops.scatter, masked_self, index, src, dim=d, reduce="multiply")
    d_input = ctx.emit(ops.div, mul(ct, masked_self_result), masked_self)
    src_zero = ctx.emit(ops.eq, src, zero)
    zeros_there = _gather_ct(ctx, ctx.emit(ops.scatter, ctx.full(0, ctx.sig(input).shape, elem), index,
                                           ctx.convert(src_zero, elem), dim=d, reduce="add"), index, d)
    single_zero = ctx.emit(ops.logical_and, src_zero, ctx.emit(ops.eq, zeros_there, one))
    masked_src = ctx.emit(ops.where, single_zero, one, src)
    masked_src_result = ctx.emit(ops.scatter, input, index, masked_src, dim=d, reduce="multiply")
    d_src = ctx.emit(ops.where, single_zero, _gather_ct(ctx, mul(ct, masked_src_result), index, d),
                     ctx.emit(ops.div, _gather_ct(ctx, mul(ct, result), index, d),
                              ctx.emit(ops.where, src_zero, one, src)))
    return d_input, d_src


def _scatter_extreme(ctx, ct, input, index, src, result, d):
    """torch's ``scatter_reduce_backward`` for amax/amin: the cotangent divided evenly among the input element
    and the ``src`` elements equal to the result there."""
    elem = ctx.sig(ct).elem
    self_is = ctx.convert(ctx.emit(ops.eq, input, result), elem)
    src_is = ctx.convert(ctx.emit(ops.eq, src, _gather_ct(ctx, result, index, d)), elem)
    count = ctx.emit(ops.scatter, self_is, index, src_is, dim=d, reduce="add")
    share = ctx.emit(ops.div, ct, count)
    return ctx.emit(ops.mul, self_is, share), ctx.emit(ops.mul, src_is, _gather_ct(ctx, share, index, d))


#: scatter's reduce mode -> its VJP: (ct, input, index, used src, result, dim) -> (d_input, d_used_src)
_SCATTER_VJP = {"none": _scatter_none, "add": _scatter_add_vjp, "multiply": _scatter_multiply,
                "amax": _scatter_extreme, "amin": _scatter_extreme}


@vjp_rule(ops.scatter)
def _scatter(ctx, ct, input, index, src, *, result, dim, reduce):
    if not _is_float(ctx, input):
        return None, None, None
    vjp = _SCATTER_VJP.get(reduce)
    if vjp is None:
        raise NotDifferentiableError(
            f"cannot differentiate fxla.scatter with reduce={reduce!r}\n  at {ctx.loc}\n"
            f"why: fxla differentiates the reduce modes {', '.join(_SCATTER_VJP)}\n"
            "fix: compute this part under torch.no_grad(), or use scatter_reduce with a differentiable mode")
    if ctx.sig(input).rank == 0:                   # 0-d: the same formulas on 1-element vectors
        ct, input, index, src, result = (ctx.reshape(v, (1,)) for v in (ct, input, index, src, result))
        d_input, d_src = vjp(ctx, ct, input, index, src, result, 0)
        return ctx.reshape(d_input, ()), None, ctx.reshape(d_src, ())
    d = _dim(ctx, input, dim)
    d_input, d_src = vjp(ctx, ct, input, index, _used_src(ctx, src, index), result, d)
    return d_input, None, _as_src(ctx, d_src, src)


# -- masks ---------------------------------------------------------------------------------------------------------
@vjp_rule(ops.where)
def _where(ctx, ct, condition, input, other, *, result):
    zero = ctx.tensor(0.0, like=ct)
    d_input = ctx.unbroadcast(ctx.emit(ops.where, condition, ct, zero), input) if _is_float(ctx, input) else None
    d_other = ctx.unbroadcast(ctx.emit(ops.where, condition, zero, ct), other) if _is_float(ctx, other) else None
    return None, d_input, d_other


@vjp_rule(ops.tril)
def _tril(ctx, ct, x, *, result, diagonal):
    return (ctx.emit(ops.tril, ct, diagonal=diagonal),)


@vjp_rule(ops.triu)
def _triu(ctx, ct, x, *, result, diagonal):
    return (ctx.emit(ops.triu, ct, diagonal=diagonal),)
