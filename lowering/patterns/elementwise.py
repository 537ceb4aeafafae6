"""Patterns for elementwise fxla ops: promotion and broadcasting made explicit, then one StableHLO op."""
from __future__ import annotations

import math
from functools import partial

from fxla.dialects.fxla import ops, result_elem
from fxla.dialects.fxla.types import INT_TYPES, UNSIGNED_TYPES, is_float
from fxla.dialects.mlir import chlo, hlo

from .builder import Builder, pattern


def _operands_as(b: Builder, values, elem: str):
    return [b.broadcast(b.convert(v, elem), b.result.shape) for v in values]


def _arith(b: Builder, lhs, rhs, *, op):
    lhs, rhs = _operands_as(b, (lhs, rhs), b.result.elem)
    return op(lhs, rhs).result


@pattern(ops.add)
def _add(b: Builder, lhs, rhs):
    # bool + bool is logical or in torch (and in the StableHLO spec), but XLA's CPU backend adds i1 modulo 2.
    return _arith(b, lhs, rhs, op=hlo.OrOp if b.result.elem == "i1" else hlo.AddOp)


@pattern(ops.mul)
def _mul(b: Builder, lhs, rhs):
    # XLA rewrites x * convert(bool) as select(bool, x, 0), which gives 0 where torch gives nan (nan * 0,
    # inf * 0) or -0.0 (-2 * 0): written as select(bool, x, x * 0) instead, which keeps IEEE's answers.
    if is_float(b.result.elem) and "i1" in (b.sig(lhs).elem, b.sig(rhs).elem) and \
            (b.sig(lhs).elem, b.sig(rhs).elem) != ("i1", "i1"):
        mask, x = (lhs, rhs) if b.sig(lhs).elem == "i1" else (rhs, lhs)
        (x,) = _operands_as(b, (x,), b.result.elem)
        mask = b.broadcast(mask, b.result.shape)
        zero = hlo.MulOp(x, b.splat(0.0, b.result.elem, b.result.shape)).result
        return hlo.SelectOp(mask, x, zero).result
    return _arith(b, lhs, rhs, op=hlo.MulOp)


for _opdef, _op in ((ops.sub, hlo.SubtractOp),
                    (ops.div, hlo.DivOp), (ops.maximum, hlo.MaxOp), (ops.minimum, hlo.MinOp),
                    (ops.pow, hlo.PowOp)):
    pattern(_opdef)(partial(_arith, op=_op))


def _compare(b: Builder, lhs, rhs, *, direction):
    elem = result_elem([b.sig(lhs), b.sig(rhs)])
    lhs, rhs = _operands_as(b, (lhs, rhs), elem)
    kind = "FLOAT" if is_float(elem) else ("SIGNED" if elem in INT_TYPES and elem not in UNSIGNED_TYPES
                                           else "UNSIGNED")
    return hlo.CompareOp(lhs, rhs, hlo.ComparisonDirectionAttr.get(direction),
                         compare_type=hlo.ComparisonTypeAttr.get(kind)).result


for _opdef, _dir in ((ops.eq, "EQ"), (ops.ne, "NE"), (ops.lt, "LT"), (ops.le, "LE"), (ops.gt, "GT"),
                     (ops.ge, "GE")):
    pattern(_opdef)(partial(_compare, direction=_dir))


def _unary(b: Builder, x, *, op):
    return op(b.convert(x, b.result.elem)).result


@pattern(ops.abs)
def _abs(b: Builder, x):
    return x if b.result.elem in UNSIGNED_TYPES else hlo.AbsOp(x).result


for _opdef, _op in ((ops.neg, hlo.NegOp), (ops.exp, hlo.ExpOp), (ops.log, hlo.LogOp),
                    (ops.sqrt, hlo.SqrtOp), (ops.rsqrt, hlo.RsqrtOp), (ops.tanh, hlo.TanhOp),
                    (ops.sigmoid, hlo.LogisticOp)):
    pattern(_opdef)(partial(_unary, op=_op))


@pattern(ops.relu)
def _relu(b: Builder, x):
    if b.result.elem == "i1":
        return x
    return hlo.MaxOp(x, b.splat(0, b.result.elem, b.result.shape)).result


def compute_type(elem: str) -> str:
    """Half-precision math is done in f32 and rounded once, as torch's CPU kernels do."""
    return "f32" if elem in ("f16", "bf16") else elem


@pattern(ops.gelu)
def _gelu(b: Builder, x, *, approximate):
    elem, shape = compute_type(b.result.elem), b.result.shape
    x = b.convert(x, elem)
    half = hlo.MulOp(x, b.splat(0.5, elem, shape)).result
    if approximate == "tanh":
        cube = hlo.MulOp(hlo.MulOp(x, x).result, x).result
        inner = hlo.AddOp(x, hlo.MulOp(cube, b.splat(0.044715, elem, shape)).result).result
        inner = hlo.MulOp(inner, b.splat(math.sqrt(2.0 / math.pi), elem, shape)).result
        gate = hlo.TanhOp(inner).result
    else:
        gate = chlo.ErfOp(hlo.MulOp(x, b.splat(1.0 / math.sqrt(2.0), elem, shape)).result).result
    y = hlo.MulOp(half, hlo.AddOp(gate, b.splat(1.0, elem, shape)).result).result
    return b.convert(y, b.result.elem)


@pattern(ops.constant)
def _constant(b: Builder, *, value):
    return hlo.ConstantOp(value).result


@pattern(ops.convert)
def _convert(b: Builder, x):
    return hlo.ConvertOp(b.result_type, x).result

