"""Patterns for the ``scan`` family: cumsum, cumprod, cummax/cummin (values, indices) and logcumsumexp.

Each is a ``stablehlo.reduce_window`` whose window spans the whole scanned dim, padded by size - 1 in front:
output i reduces elements 0..i.  cummax/cummin reduce (value, index) pairs with a total order, so the reduction is
associative and commutative whatever order XLA combines in.
"""
from __future__ import annotations

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.types import is_float
from fxla.dialects.mlir import hlo, ir

from .builder import Builder, compare, compute_type, pattern


def _prefix_window(b: Builder, operands, inits, dim: int, body):
    """reduce_window over ``operands`` (same shape) computing inclusive prefixes along ``dim``; ``body(*acc, *new)``
    returns the combined values."""
    shape = b.sig(operands[0]).shape
    rank, n = len(shape), b.dim_of(operands[0], dim)
    before = hlo.SubtractOp(n, b.splat(1, "i64")).result if isinstance(n, ir.Value) else n - 1
    window = [n if i == dim else 1 for i in range(rank)]
    pads = [(before, 0) if i == dim else (0, 0) for i in range(rank)]
    elems = [b.sig(v).elem for v in operands]
    return b.window_reduce(list(operands), [b.splat(v, e) for v, e in zip(inits, elems)], window, pads,
                           [b.type(shape, e) for e in elems], body)


@pattern(ops.cumsum)
def _cumsum(b: Builder, x, *, dim):
    xs = b.sig(x)
    if xs.rank == 0:
        return b.convert(x, b.result.elem)
    elem = compute_type(b.result.elem)
    (y,) = _prefix_window(b, [b.convert(x, elem)], [0], dim % xs.rank, lambda a, c: [hlo.AddOp(a, c).result])
    return b.convert(y, b.result.elem)


@pattern(ops.cumprod)
def _cumprod(b: Builder, x, *, dim):
    xs = b.sig(x)
    if xs.rank == 0:
        return b.convert(x, b.result.elem)
    elem = compute_type(b.result.elem)
    (y,) = _prefix_window(b, [b.convert(x, elem)], [1], dim % xs.rank, lambda a, c: [hlo.MulOp(a, c).result])
    return b.convert(y, b.result.elem)


def _extreme_later(b: Builder, av, ai, cv, ci, elem: str, direction: str):
    """Whether (cv, ci) replaces (av, ai) in torch's cummax (GT) / cummin (LT): a strictly better value, on ties
    the later index; a NaN beats every number and the later of two NaNs wins."""
    later = compare(ci, ai, "GT", "i64")
    beats = hlo.OrOp(compare(cv, av, direction, elem),
                     hlo.AndOp(compare(cv, av, "EQ", elem), later).result).result
    if not is_float(elem):
        return beats
    c_nan, a_nan = compare(cv, cv, "NE", elem), compare(av, av, "NE", elem)
    nan_later = hlo.AndOp(hlo.AndOp(c_nan, a_nan).result, later).result
    c_only = hlo.AndOp(c_nan, hlo.NotOp(a_nan).result).result
    numbers = hlo.AndOp(beats, hlo.NotOp(hlo.OrOp(c_nan, a_nan).result).result).result
    return hlo.OrOp(hlo.OrOp(nan_later, c_only).result, numbers).result


def _cum_extreme(b: Builder, x, *, dim, direction):
    xs = b.sig(x)
    if xs.rank == 0:
        return x, b.splat(0, "i64")
    d = dim % xs.rank
    iota = b.iota(b.dims_of(x), d, "i64")
    init = b.lowest(xs.elem) if direction == "GT" else b.highest(xs.elem)

    def body(av, ai, cv, ci):
        pick = _extreme_later(b, av, ai, cv, ci, xs.elem, direction)
        return hlo.SelectOp(pick, cv, av).result, hlo.SelectOp(pick, ci, ai).result

    values, indices = _prefix_window(b, [x, iota], [init, -1], d, body)
    return values, indices


@pattern(ops.cummax)
def _cummax(b: Builder, x, *, dim):
    return _cum_extreme(b, x, dim=dim, direction="GT")


@pattern(ops.cummin)
def _cummin(b: Builder, x, *, dim):
    return _cum_extreme(b, x, dim=dim, direction="LT")


def _logaddexp(b: Builder, a, c, elem: str):
    """log(exp(a) + exp(c)) = max + log1p(exp(min - max)); an infinite max is the result itself (no inf - inf)."""
    hi, lo = hlo.MaxOp(a, c).result, hlo.MinOp(a, c).result
    y = hlo.AddOp(hi, hlo.Log1pOp(hlo.ExpOp(hlo.SubtractOp(lo, hi).result).result).result).result
    infinite = compare(hlo.AbsOp(hi).result, b.splat(float("inf"), elem), "EQ", elem)
    return hlo.SelectOp(infinite, hi, y).result


@pattern(ops.logcumsumexp)
def _logcumsumexp(b: Builder, x, *, dim):
    xs = b.sig(x)
    if xs.rank == 0:
        return x
    elem = compute_type(xs.elem)
    (y,) = _prefix_window(b, [b.convert(x, elem)], [float("-inf")], dim % xs.rank,
                          lambda a, c: [_logaddexp(b, a, c, elem)])
    return b.convert(y, xs.elem)
