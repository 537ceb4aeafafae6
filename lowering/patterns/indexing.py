"""Patterns for the ``indexing`` family: slice, gather, scatter, select and triangular masks."""
from __future__ import annotations

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.symbolic import DYNAMIC
from fxla.dialects.mlir import hlo, ir

from .builder import Builder, pattern


@pattern(ops.slice)
def _slice(b: Builder, x, *, start, limit, stride):
    if DYNAMIC not in start and DYNAMIC not in limit and DYNAMIC not in stride:
        return hlo.SliceOp(x, list(start), list(limit), list(stride)).result
    # (a ? stride: an einsum diagonal's n + 1 over the merged n * n elements)
    return hlo.RealDynamicSliceOp(b.result_type, x, *(b.shape_value(b.sizes(name, values)) for name, values in
                                                      (("start", start), ("limit", limit), ("stride", stride)))).result


@pattern(ops.gather)
def _gather(b: Builder, x, index, *, dim):
    rank = b.sig(x).rank
    if rank == 0:                        # a 0-d input: its one element (an index other than 0 is out of range)
        return b.broadcast(x, b.result.shape)
    return b.take_along(x, index, dim % rank)


@pattern(ops.index_select)
def _index_select(b: Builder, x, index, *, dim):
    xs = b.sig(x)
    if xs.rank == 0:
        return x
    d = dim % xs.rank
    starts = b.reshape(b.convert(index, "i64"), [b.dim_of(index, 0), 1])
    dn = hlo.GatherDimensionNumbers.get(offset_dims=[i for i in range(xs.rank) if i != d], collapsed_slice_dims=[d],
                                        operand_batching_dims=[], start_indices_batching_dims=[],
                                        start_index_map=[d], index_vector_dim=1)
    sizes = [1 if i == d else s for i, s in enumerate(b.dims_of(x))]
    if any(isinstance(s, ir.Value) for s in sizes):          # (a ? dim of x taken whole: its size as an operand)
        return hlo.DynamicGatherOp(x, starts, b.shape_value(sizes), dn, results=[b.result_type]).result
    return hlo.GatherOp(x, starts, dn, sizes).result


def _binary_region(op, elem: str, body):
    scalar = ir.RankedTensorType.get([], ir.Type.parse(elem))
    block = op.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        hlo.ReturnOp([body(block.arguments[0], block.arguments[1])])


@pattern(ops.scatter)
def _scatter(b: Builder, x, index, src, *, dim, reduce):
    xs, ix = b.sig(x), b.sig(index)
    rank = xs.rank
    combine = (_BOOL_COMBINE if xs.elem == "i1" else _COMBINE).get(reduce)
    if rank == 0:                        # a 0-d input: its one element is src's (combined with it), as in torch
        src = b.reshape(src, ())
        return src if combine is None else combine(x, src).result
    if DYNAMIC in ix.shape or DYNAMIC in b.sig(src).shape:      # (src may be larger than index: cut to it)
        src = hlo.RealDynamicSliceOp(b.type(ix.shape, b.sig(src).elem), src, b.shape_value([0] * rank),
                                     b.shape_value(b.dims_of(index)), b.shape_value([1] * rank)).result
    elif b.sig(src).shape != ix.shape:
        src = hlo.SliceOp(src, [0] * rank, list(ix.shape), [1] * rank).result
    dn = hlo.ScatterDimensionNumbers.get(update_window_dims=[], inserted_window_dims=list(range(rank)),
                                         input_batching_dims=[], scatter_indices_batching_dims=[],
                                         scattered_dims_to_operand_dims=list(range(rank)), index_vector_dim=rank)
    op = hlo.ScatterOp([b.result_type], [x], b.coordinates(index, dim % rank), [src], dn)
    _binary_region(op, xs.elem, (lambda old, new: new) if combine is None else
                   (lambda old, new: combine(old, new).result))
    return op.results[0]


#: scatter's `reduce` -> the StableHLO op combining the value already there with a scattered one (bool: logic)
_COMBINE = {"add": hlo.AddOp, "multiply": hlo.MulOp, "amax": hlo.MaxOp, "amin": hlo.MinOp}
_BOOL_COMBINE = {"add": hlo.OrOp, "multiply": hlo.AndOp, "amax": hlo.OrOp, "amin": hlo.AndOp}


@pattern(ops.where)
def _where(b: Builder, cond, x, y):
    shape, elem = b.result.shape, b.result.elem
    x, y = (b.broadcast(b.convert(v, elem), shape) for v in (x, y))
    return hlo.SelectOp(b.broadcast(cond, shape), x, y).result


def _triangle(b: Builder, x, *, diagonal, keep_lower: bool):
    shape, rank = b.dims(), b.result.rank
    rows = b.iota(shape, rank - 2, "i64")
    cols = b.iota(shape, rank - 1, "i64")
    offset = hlo.SubtractOp(cols, rows).result                       # j - i
    direction = "LE" if keep_lower else "GE"
    keep = hlo.CompareOp(offset, b.splat(diagonal, "i64", shape), hlo.ComparisonDirectionAttr.get(direction),
                         compare_type=hlo.ComparisonTypeAttr.get("SIGNED")).result
    return hlo.SelectOp(keep, x, b.splat(0, b.result.elem, shape)).result


@pattern(ops.tril)
def _tril(b: Builder, x, *, diagonal):
    return _triangle(b, x, diagonal=diagonal, keep_lower=True)


@pattern(ops.triu)
def _triu(b: Builder, x, *, diagonal):
    return _triangle(b, x, diagonal=diagonal, keep_lower=False)
