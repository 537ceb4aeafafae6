"""Patterns for the ``linalg`` family: contractions as one ``stablehlo.dot_general``."""
from __future__ import annotations

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.types import broadcast_shapes
from fxla.dialects.mlir import hlo

from .builder import Builder, pattern


def _dot(b: Builder, lhs, rhs, out_shape, *, lhs_batch=(), rhs_batch=(), lhs_contract, rhs_contract):
    dn = hlo.DotDimensionNumbers.get(lhs_batching_dimensions=list(lhs_batch),
                                     rhs_batching_dimensions=list(rhs_batch),
                                     lhs_contracting_dimensions=list(lhs_contract),
                                     rhs_contracting_dimensions=list(rhs_contract))
    return hlo.DotGeneralOp(b.type(out_shape, b.sig(lhs).elem), lhs, rhs, dn).result


@pattern(ops.linear)
def _linear(b: Builder, x, w, bias):
    xs = b.sig(x)
    y = _dot(b, x, w, b.result.shape, lhs_contract=[xs.rank - 1], rhs_contract=[1])
    if bias is not None:
        y = hlo.AddOp(y, b.broadcast(bias, b.result.shape)).result
    return y


@pattern(ops.matmul)
def _matmul(b: Builder, lhs, rhs):
    ls, rs = b.sig(lhs), b.sig(rhs)
    if ls.rank == 1:
        lhs = b.reshape(lhs, (1, ls.shape[0]))
        ls = b.sig(lhs)
    if rs.rank == 1:
        rhs = b.reshape(rhs, (rs.shape[0], 1))
        rs = b.sig(rhs)
    batch = broadcast_shapes(ls.shape[:-2], rs.shape[:-2])
    nb = len(batch)
    lhs = b.broadcast(lhs, batch + ls.shape[-2:])
    rhs = b.broadcast(rhs, batch + rs.shape[-2:])
    out = batch + (ls.shape[-2], rs.shape[-1])
    y = _dot(b, lhs, rhs, out, lhs_batch=range(nb), rhs_batch=range(nb), lhs_contract=[nb + 1],
             rhs_contract=[nb])
    return b.reshape(y, b.result.shape)
