"""Patterns for the ``reduce`` family: reductions (accumulated in f32 for f16/bf16 where torch does, the variance
of f32 in f64),
arg-reductions, sort and top-k."""
from __future__ import annotations

from functools import partial

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.types import INT_TYPES, UNSIGNED_TYPES, is_float
from fxla.dialects.mlir import hlo, ir

from .builder import Builder, compare, compute_type, normalized_dims, pattern


def _keep(b: Builder, x, dims):
    """Dims to reduce (all when empty) normalised."""
    rank = b.sig(x).rank
    return sorted(set(normalized_dims(dims, rank))) if dims else list(range(rank))


@pattern(ops.sum)
def _sum(b: Builder, x, *, dims, keepdim):
    # f16/bf16: accumulated in f32 and rounded once, as torch's CPU kernel does
    x = b.convert(x, compute_type(b.result.elem))
    total = b.reduce(x, _keep(b, x, dims), 0, hlo.AddOp)
    return b.reshape(b.convert(total, b.result.elem), b.result.shape)


@pattern(ops.mean)
def _mean(b: Builder, x, *, dims, keepdim):
    elem = compute_type(b.result.elem)
    reduced = _keep(b, x, dims)
    shape = b.dims_of(x)
    x = b.convert(x, elem)
    total = b.reduce(x, reduced, 0, hlo.AddOp)
    count = b.count([shape[d] for d in reduced])
    mean = hlo.DivOp(total, b.fill(count, elem, b.dims_of(total))).result
    return b.reshape(b.convert(mean, b.result.elem), b.result.shape)


def _reduce_to_result(b: Builder, x, dims, init, body):
    return b.reshape(b.reduce(x, _keep(b, x, dims), init, body), b.result.shape)


@pattern(ops.amax)
def _amax(b: Builder, x, *, dims, keepdim, nan_ties=None):
    return _reduce_to_result(b, x, dims, b.lowest(b.result.elem), hlo.MaxOp)


@pattern(ops.amin)
def _amin(b: Builder, x, *, dims, keepdim, nan_ties=None):
    return _reduce_to_result(b, x, dims, b.highest(b.result.elem), hlo.MinOp)


@pattern(ops.prod)
def _prod(b: Builder, x, *, dims, keepdim):
    x = b.convert(x, b.result.elem)
    return _reduce_to_result(b, x, dims, 1, hlo.AndOp if b.result.elem == "i1" else hlo.MulOp)


def _truth(b: Builder, x, *, dims, keepdim, combine, init):
    s = b.sig(x)
    if s.elem != "i1":
        x = compare(x, b.splat(0, s.elem, b.dims_of(x)), "NE", s.elem)
    y = b.reshape(b.reduce(x, _keep(b, x, dims), init, combine), b.result.shape)
    return b.convert(y, b.result.elem)


pattern(ops.any)(partial(_truth, combine=hlo.OrOp, init=0))
pattern(ops.all)(partial(_truth, combine=hlo.AndOp, init=1))


@pattern(ops.var)
def _var(b: Builder, x, *, dims, keepdim, correction):
    # accumulated in f64 for f32 (f32 for f16/bf16), as torch's CPU kernel does (its acc_type): a batch norm's
    # 100k-value channel summed in f32 loses digits that training then amplifies
    xs = b.sig(x)
    elem = "f64" if xs.elem == "f32" else compute_type(xs.elem)
    reduced = _keep(b, x, dims)
    kept = [i for i in range(xs.rank) if i not in reduced]
    shape = b.dims_of(x)
    count = b.count([shape[d] for d in reduced])
    x = b.convert(x, elem)
    total = b.reduce(x, reduced, 0, hlo.AddOp)
    mean = hlo.DivOp(total, b.fill(count, elem, b.dims_of(total))).result
    centered = hlo.SubtractOp(x, b.broadcast_dims(mean, shape, kept)).result
    squares = b.reduce(hlo.MulOp(centered, centered).result, reduced, 0, hlo.AddOp)
    # torch divides by max(0, N - correction): no more values than the correction give nan (or inf), never a
    # negative divisor's -0.0
    if isinstance(count, ir.Value):
        divisor = hlo.MaxOp(hlo.SubtractOp(count, b.splat(int(correction), "i64")).result, b.splat(0, "i64")).result
    else:
        divisor = max(count - correction, 0)
    var = hlo.DivOp(squares, b.fill(divisor, elem, b.dims_of(squares))).result
    return b.reshape(b.convert(var, b.result.elem), b.result.shape)


@pattern(ops.logsumexp)
def _logsumexp(b: Builder, x, *, dims, keepdim):
    elem = compute_type(b.result.elem)
    xs = b.sig(x)
    reduced = _keep(b, x, dims)
    kept = [i for i in range(xs.rank) if i not in reduced]
    x = b.convert(x, elem)
    peak = b.reduce(x, reduced, float("-inf"), hlo.MaxOp)
    ps = b.dims_of(peak)
    # an infinite maximum (all -inf, or +inf present) is not subtracted, as in torch
    finite = hlo.CompareOp(hlo.AbsOp(peak).result, b.splat(float("inf"), elem, ps),
                           hlo.ComparisonDirectionAttr.get("NE")).result
    shift = hlo.SelectOp(finite, peak, b.splat(0.0, elem, ps)).result
    exps = hlo.ExpOp(hlo.SubtractOp(x, b.broadcast_dims(shift, b.dims_of(x), kept)).result).result
    y = hlo.AddOp(hlo.LogOp(b.reduce(exps, reduced, 0, hlo.AddOp)).result, shift).result
    return b.reshape(b.convert(y, b.result.elem), b.result.shape)


def _arg(b: Builder, x, *, dim, keepdim, direction):
    xs = b.sig(x)
    if dim is None or xs.rank == 0:
        x = b.reshape(x, [b.count(b.dims_of(x))])
        xs, d = b.sig(x), 0
    else:
        d = dim % xs.rank
    out_shape = [s for i, s in enumerate(xs.shape) if i != d]
    iota = b.iota(b.dims_of(x), d, "i64")
    init = b.lowest(xs.elem) if direction == "GT" else b.highest(xs.elem)
    red = hlo.ReduceOp([b.type(out_shape, xs.elem), b.type(out_shape, "i64")], [x, iota],
                       [b.splat(init, xs.elem), b.splat(0, "i64")], [d])
    sv, si = b.type((), xs.elem), b.type((), "i64")
    block = red.regions[0].blocks.append(sv, si, sv, si)
    with ir.InsertionPoint(block):
        av, ai, cv, ci = block.arguments
        better = compare(av, cv, direction, xs.elem)
        tie = compare(av, cv, "EQ", xs.elem)
        if is_float(xs.elem):                   # NaN wins (torch treats it as the extreme), the first one
            a_nan, c_nan = (compare(v, v, "NE", xs.elem) for v in (av, cv))
            better = hlo.OrOp(hlo.AndOp(a_nan, hlo.NotOp(c_nan).result).result,
                              hlo.AndOp(better, hlo.NotOp(c_nan).result).result).result
            tie = hlo.OrOp(tie, hlo.AndOp(a_nan, c_nan).result).result
        first = hlo.CompareOp(ai, ci, hlo.ComparisonDirectionAttr.get("LT")).result
        pick = hlo.OrOp(better, hlo.AndOp(tie, first).result).result
        hlo.ReturnOp([hlo.SelectOp(pick, av, cv).result, hlo.SelectOp(pick, ai, ci).result])
    return b.reshape(red.results[1], b.result.shape)


pattern(ops.argmax)(partial(_arg, direction="GT"))
pattern(ops.argmin)(partial(_arg, direction="LT"))


def _sorted(b: Builder, x, dim: int, descending: bool):
    """(values, indices) of a stable sort along ``dim``; floats compare in total order (NaN largest)."""
    xs = b.sig(x)
    iota = b.iota(b.dims_of(x), dim, "i64")
    op = hlo.SortOp([x.type, iota.type], [x, iota], dimension=dim, is_stable=True)
    sv, si = b.type((), xs.elem), b.type((), "i64")
    block = op.regions[0].blocks.append(sv, sv, si, si)
    with ir.InsertionPoint(block):
        lhs, rhs = block.arguments[0], block.arguments[1]
        direction = "GT" if descending else "LT"
        kind = "TOTALORDER" if is_float(xs.elem) else \
            ("SIGNED" if xs.elem in INT_TYPES and xs.elem not in UNSIGNED_TYPES else "UNSIGNED")
        if is_float(xs.elem):                    # +0.0 and -0.0 are equal in torch: compare +0.0 for both
            zero, nan = b.splat(0.0, xs.elem), b.splat(float("nan"), xs.elem)
            ne, eq = hlo.ComparisonDirectionAttr.get("NE"), hlo.ComparisonDirectionAttr.get("EQ")
            # (a select, not x + 0.0: XLA folds that add away); every NaN is the largest value in torch, whatever
            # its sign bit (in total order -nan is smallest)
            lhs, rhs = (hlo.SelectOp(hlo.CompareOp(v, v, ne).result, nan,
                                     hlo.SelectOp(hlo.CompareOp(v, zero, eq).result, zero, v).result).result
                        for v in (lhs, rhs))
        hlo.ReturnOp([hlo.CompareOp(lhs, rhs, hlo.ComparisonDirectionAttr.get(direction),
                                    compare_type=hlo.ComparisonTypeAttr.get(kind)).result])
    return op.results[0], op.results[1]


@pattern(ops.sort)
def _sort(b: Builder, x, *, dim, descending):
    rank = b.sig(x).rank
    if rank == 0:
        return x, b.splat(0, "i64")
    return _sorted(b, x, dim % rank, descending)


@pattern(ops.topk)
def _topk(b: Builder, x, *, k, dim, largest):
    xs = b.sig(x)
    if xs.rank == 0:
        return x, b.splat(0, "i64")
    d = dim % xs.rank
    values, indices = _sorted(b, x, d, largest)
    limit = [b.size("k", k) if i == d else s for i, s in enumerate(b.dims_of(x))]
    if all(isinstance(n, int) for n in limit):
        cut = partial(hlo.SliceOp, start_indices=[0] * xs.rank, limit_indices=limit, strides=[1] * xs.rank)
        return cut(values).result, cut(indices).result
    starts, limits, strides = (b.shape_value(v) for v in ([0] * xs.rank, limit, [1] * xs.rank))
    return tuple(hlo.RealDynamicSliceOp(t, v, starts, limits, strides).result
                 for t, v in zip((b.type(b.results[0].shape, xs.elem), b.type(b.results[1].shape, "i64")),
                                 (values, indices)))
