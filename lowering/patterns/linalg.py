"""Patterns for the ``linalg`` family: contractions as one ``stablehlo.dot_general``."""
from __future__ import annotations

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.types import broadcast_shapes
from fxla.dialects.mlir import hlo, ir

from .builder import Builder, pattern


@pattern(ops.linear)
def _linear(b: Builder, x, w, bias):
    """``x @ w.T + bias``: with half-precision operands and a bias, the product stays f32 for the bias add and
    is rounded once, as torch's CPU addmm rounds (rounding the product first differs in ~30 % of the values)."""
    xs = b.sig(x)
    half = bias is not None and xs.elem in ("bf16", "f16")
    y = b.dot(x, w, b.result.shape, lhs_contract=[xs.rank - 1], rhs_contract=[1], elem="f32" if half else None)
    if bias is not None:
        y = hlo.AddOp(y, b.broadcast(b.convert(bias, "f32") if half else bias, b.result.shape)).result
    return b.convert(y, xs.elem) if half else y


@pattern(ops.matmul)
def _matmul(b: Builder, lhs, rhs):
    ls, rs = b.sig(lhs), b.sig(rhs)
    if ls.rank == 1:
        lhs = b.reshape(lhs, [1, b.dim_of(lhs, 0)])
    if rs.rank == 1:
        rhs = b.reshape(rhs, [b.dim_of(rhs, 0), 1])
    ld, rd = b.dims_of(lhs), b.dims_of(rhs)
    batch = _broadcast_dims(ld[:-2], rd[:-2])
    nb = len(batch)
    lhs = b.broadcast(lhs, batch + ld[-2:])
    rhs = b.broadcast(rhs, batch + rd[-2:])
    out = b._static(batch + [ld[-2], rd[-1]])
    y = b.dot(lhs, rhs, out, lhs_batch=range(nb), rhs_batch=range(nb), lhs_contract=[nb + 1], rhs_contract=[nb])
    return b.reshape(y, b.result.shape)


def _broadcast_dims(a, c):
    """The numpy broadcast of two shapes of sizes (ints, or ``tensor<i64>`` values for ? dims, which are never 1:
    a ? dim is the broadcast's size there)."""
    n = max(len(a), len(c))
    a, c = [1] * (n - len(a)) + list(a), [1] * (n - len(c)) + list(c)
    out = []
    for x, y in zip(a, c):
        if isinstance(x, ir.Value) or isinstance(y, ir.Value):
            out.append(x if isinstance(x, ir.Value) else y)
        else:
            out.append(broadcast_shapes((x,), (y,))[0])
    return out
