"""Patterns for the ``elementwise`` family: promotion and broadcasting made explicit, then StableHLO's
elementwise ops: arithmetic, comparisons, unary math, rounding, logic and bitwise ops, integer-style division, clamp,
activations (computed in f32 for f16/bf16) and element type conversion."""
from __future__ import annotations

import math
from functools import partial

from fxla.dialects.fxla import ops, result_elem
from fxla.dialects.fxla.types import UNSIGNED_TYPES, is_float
from fxla.dialects.mlir import chlo, hlo

from .builder import Builder, compare, compute_type, pattern


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
    return compare(lhs, rhs, direction, elem)


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


@pattern(ops.convert)
def _convert(b: Builder, x):
    return hlo.ConvertOp(b.result_type, x).result


def _cmp(b: Builder, lhs, rhs, direction: str):
    return compare(lhs, rhs, direction, b.sig(lhs).elem)


def _zero_like(b: Builder, v):
    s = b.sig(v)
    return b.splat(0, s.elem, b.dims_of(v))


def _nonzero(b: Builder, v):
    return v if b.sig(v).elem == "i1" else _cmp(b, v, _zero_like(b, v), "NE")


def _operands(b: Builder, values, elem=None):
    elem = elem or b.result.elem
    return [b.broadcast(b.convert(v, elem), b.result.shape) for v in values]


# -- rounding: identity on integers ------------------------------------------------------------------------------
def _rounding(b: Builder, x, *, op):
    return op(x).result if is_float(b.result.elem) else x


for _opdef, _op in ((ops.floor, hlo.FloorOp), (ops.ceil, hlo.CeilOp)):
    pattern(_opdef)(partial(_rounding, op=_op))


@pattern(ops.trunc)
def _trunc(b: Builder, x):
    if not is_float(b.result.elem):
        return x
    return hlo.SelectOp(_cmp(b, x, _zero_like(b, x), "LT"), hlo.CeilOp(x).result, hlo.FloorOp(x).result).result


@pattern(ops.round)
def _round(b: Builder, x, *, decimals):
    if not is_float(b.result.elem):
        return x
    if decimals == 0:
        return hlo.RoundNearestEvenOp(x).result
    elem, shape = compute_type(b.result.elem), b.result.shape
    y = b.convert(x, elem)
    scale = b.splat(10.0 ** abs(decimals), elem, shape)
    scaled = (hlo.MulOp if decimals > 0 else hlo.DivOp)(y, scale).result
    back = (hlo.DivOp if decimals > 0 else hlo.MulOp)(hlo.RoundNearestEvenOp(scaled).result, scale).result
    return b.convert(back, b.result.elem)


@pattern(ops.sign)
def _sign(b: Builder, x):
    elem = b.result.elem
    if elem == "i1":
        return x
    if elem in UNSIGNED_TYPES:
        return b.convert(_nonzero(b, x), elem)
    if is_float(elem):                   # torch.sign(nan) is 0 (stablehlo.sign keeps nan)
        return hlo.SelectOp(_cmp(b, x, x, "NE"), _zero_like(b, x), hlo.SignOp(x).result).result
    return hlo.SignOp(x).result


# -- float-valued unary math (in the compute type) ---------------------------------------------------------------
def _float_unary(b: Builder, x, *, fn):
    elem = compute_type(b.result.elem)
    return b.convert(fn(b, b.convert(x, elem)), b.result.elem)


def _reciprocal(b, x):
    return hlo.DivOp(b.splat(1.0, b.sig(x).elem, b.dims_of(x)), x).result


for _opdef, _fn in ((ops.reciprocal, _reciprocal), (ops.sin, lambda b, x: hlo.SineOp(x).result),
                    (ops.cos, lambda b, x: hlo.CosineOp(x).result), (ops.tan, lambda b, x: chlo.TanOp(x).result),
                    (ops.erf, lambda b, x: chlo.ErfOp(x).result), (ops.log1p, lambda b, x: hlo.Log1pOp(x).result),
                    (ops.expm1, lambda b, x: hlo.Expm1Op(x).result)):
    pattern(_opdef)(partial(_float_unary, fn=_fn))


# -- logic and bitwise -------------------------------------------------------------------------------------------
@pattern(ops.logical_not)
def _logical_not(b: Builder, x):
    return hlo.NotOp(_nonzero(b, x)).result


def _logical(b: Builder, lhs, rhs, *, op):
    lhs, rhs = (b.broadcast(_nonzero(b, v), b.result.shape) for v in (lhs, rhs))
    return op(lhs, rhs).result


for _opdef, _op in ((ops.logical_and, hlo.AndOp), (ops.logical_or, hlo.OrOp), (ops.logical_xor, hlo.XorOp)):
    pattern(_opdef)(partial(_logical, op=_op))


@pattern(ops.bitwise_not)
def _bitwise_not(b: Builder, x):
    return hlo.NotOp(x).result


def _bitwise(b: Builder, lhs, rhs, *, op):
    return op(*_operands(b, (lhs, rhs))).result


for _opdef, _op in ((ops.bitwise_and, hlo.AndOp), (ops.bitwise_or, hlo.OrOp), (ops.bitwise_xor, hlo.XorOp)):
    pattern(_opdef)(partial(_bitwise, op=_op))


# -- integer-style division --------------------------------------------------------------------------------------
def _signs_differ(b: Builder, a, c):
    # (compare NE of the two i1 signs, not xor: StableHLO's shape refinement folds compare on size arithmetic,
    # not xor, and a polymorphic program's `seq // 4` is this pattern)
    zero = _zero_like(b, a)
    return compare(_cmp(b, a, zero, "LT"), _cmp(b, c, zero, "LT"), "NE", "i1")


@pattern(ops.fmod)
def _fmod(b: Builder, lhs, rhs):
    elem = compute_type(b.result.elem)
    x, y = _operands(b, (lhs, rhs), elem)
    return b.convert(hlo.RemOp(x, y).result, b.result.elem)


@pattern(ops.remainder)
def _remainder(b: Builder, lhs, rhs):
    elem = compute_type(b.result.elem)
    x, y = _operands(b, (lhs, rhs), elem)
    r = hlo.RemOp(x, y).result
    fix = hlo.AndOp(_nonzero(b, r), _signs_differ(b, r, y)).result       # r and y of opposite signs: r += y
    return b.convert(hlo.SelectOp(fix, hlo.AddOp(r, y).result, r).result, b.result.elem)


def _floor_divide_float(b: Builder, x, y, elem: str):
    """torch's div_floor_floating (ATen, CPU and CUDA alike), step for step: y == 0 gives the IEEE x / y (+-inf,
    nan); otherwise q = (x - fmod(x, y)) / y, one less where the remainder and y differ in sign, then floored and
    rounded up where q lies more than 0.5 above its floor (q is integral up to rounding error); a zero quotient
    takes the sign of x / y (-0.0 // 2 is -0.0, 3 // -inf is 0.0)."""
    k = partial(b.splat, elem=elem, shape=b.result.shape)
    quotient = hlo.DivOp(x, y).result
    r = hlo.RemOp(x, y).result
    q = hlo.DivOp(hlo.SubtractOp(x, r).result, y).result
    fix = hlo.AndOp(_nonzero(b, r), _signs_differ(b, r, y)).result
    q = hlo.SelectOp(fix, hlo.SubtractOp(q, k(1.0)).result, q).result
    floor = hlo.FloorOp(q).result
    up = _cmp(b, hlo.SubtractOp(q, floor).result, k(0.5), "GT")
    floor = hlo.SelectOp(up, hlo.AddOp(floor, k(1.0)).result, floor).result
    # q == 0 means |x| < |y| (or x == 0), so x / y is finite there and 0 * (x / y) is copysign(0, x / y)
    signed_zero = hlo.MulOp(k(0.0), quotient).result
    q = hlo.SelectOp(_cmp(b, q, k(0.0), "NE"), floor, signed_zero).result
    return hlo.SelectOp(_cmp(b, y, k(0.0), "EQ"), quotient, q).result


@pattern(ops.floor_divide)
def _floor_divide(b: Builder, lhs, rhs):
    # f16/bf16 included: torch rounds each step of div_floor_floating to the operands' dtype
    elem = b.result.elem
    x, y = _operands(b, (lhs, rhs), elem)
    if is_float(elem):
        q = _floor_divide_float(b, x, y, elem)
    else:
        q = hlo.DivOp(x, y).result                   # truncates
        r = hlo.RemOp(x, y).result
        fix = hlo.AndOp(_nonzero(b, r), _signs_differ(b, r, y)).result
        q = hlo.SelectOp(fix, hlo.SubtractOp(q, b.splat(1, elem, b.result.shape)).result, q).result
    return b.convert(q, b.result.elem)


@pattern(ops.clamp)
def _clamp(b: Builder, x, lo, hi):
    (y,) = _operands(b, (x,))
    if lo is not None:
        (lo,) = _operands(b, (lo,))
        y = hlo.MaxOp(y, lo).result
    if hi is not None:
        (hi,) = _operands(b, (hi,))
        y = hlo.MinOp(y, hi).result
    return y


# -- activations (float operands; computed in f32 for f16/bf16) --------------------------------------------------
def _activation(b: Builder, x, *, fn, **attrs):
    elem = compute_type(b.result.elem)
    k = partial(b.splat, elem=elem, shape=b.result.shape)
    return b.convert(fn(b.convert(x, elem), k, **attrs), b.result.elem)


def _relu6_shifted(x, k):
    return hlo.ClampOp(k(0.0), hlo.AddOp(x, k(3.0)).result, k(6.0)).result


def _softplus_of(x, k, beta=1.0, threshold=20.0):
    bx = hlo.MulOp(x, k(beta)).result
    soft = hlo.DivOp(hlo.Log1pOp(hlo.ExpOp(bx).result).result, k(beta)).result
    return hlo.SelectOp(hlo.CompareOp(bx, k(threshold), hlo.ComparisonDirectionAttr.get("GT")).result, x, soft).result


def _positive(x, k):
    return hlo.CompareOp(x, k(0.0), hlo.ComparisonDirectionAttr.get("GT")).result


_ACTIVATIONS = {
    ops.silu: lambda x, k: hlo.MulOp(x, hlo.LogisticOp(x).result).result,
    ops.mish: lambda x, k: hlo.MulOp(x, hlo.TanhOp(_softplus_of(x, k)).result).result,
    ops.hardsigmoid: lambda x, k: hlo.DivOp(_relu6_shifted(x, k), k(6.0)).result,
    ops.hardswish: lambda x, k: hlo.DivOp(hlo.MulOp(x, _relu6_shifted(x, k)).result, k(6.0)).result,
    # log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))
    ops.logsigmoid: lambda x, k: hlo.SubtractOp(hlo.MinOp(x, k(0.0)).result, hlo.Log1pOp(
        hlo.ExpOp(hlo.NegOp(hlo.AbsOp(x).result).result).result).result).result,
    ops.leaky_relu: lambda x, k, negative_slope: hlo.SelectOp(
        _positive(x, k), x, hlo.MulOp(x, k(negative_slope)).result).result,
    ops.elu: lambda x, k, alpha: hlo.SelectOp(
        _positive(x, k), x, hlo.MulOp(hlo.Expm1Op(x).result, k(alpha)).result).result,
    ops.softplus: _softplus_of,
}
for _opdef, _fn in _ACTIVATIONS.items():
    pattern(_opdef)(partial(_activation, fn=_fn))
