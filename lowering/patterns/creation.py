"""Patterns for the ``creation`` family: literals and iotas."""
from __future__ import annotations

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.types import is_float
from fxla.dialects.mlir import hlo

from .builder import Builder, pattern


@pattern(ops.constant)
def _constant(b: Builder, *, value):
    return hlo.ConstantOp(value).result


@pattern(ops.arange)
def _arange(b: Builder, *, start, step, length):
    elem = b.result.elem
    work = "f64" if is_float(elem) else "i64"
    i = b.convert(hlo.IotaOp(b.type((length,), "i64"), 0).result, work)
    cast = float if work == "f64" else int
    y = hlo.AddOp(hlo.MulOp(i, b.splat(cast(step), work, (length,))).result,
                  b.splat(cast(start), work, (length,))).result
    return b.convert(y, elem)
