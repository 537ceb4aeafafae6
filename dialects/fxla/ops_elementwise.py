"""fxla elementwise math: rounding, trigonometry, logic and bitwise ops, integer division, clamp, and the
activation functions of torch.nn (part of the op table; see :mod:`.ops`).

Float-only activations take float operands (torch rejects integers there too); half-precision math is done in
f32 and rounded once, like torch's CPU kernels.
"""
from __future__ import annotations

from functools import partial

from . import infer
from .opdef import F64, I64, Attr, FloatOperand, OpDef, Operand
from .types import BOOL_TYPES, INT_TYPES

_X = (Operand("input"),)
_F = (FloatOperand("input"),)
_XY = (Operand("lhs"), Operand("rhs"))
_INTEGRAL = INT_TYPES + BOOL_TYPES


def _same(mnemonic, torch_name, summary, operands=_X, attrs=()):
    return OpDef(mnemonic, summary, operands, attrs, infer=infer.same_as_first, torch=torch_name)


def _to_float(mnemonic, torch_name, summary):
    return OpDef(mnemonic, summary, _X, infer=partial(infer.elementwise, float_result=True), torch=torch_name)


def _binary(mnemonic, torch_name, summary, operands=_XY, **kw):
    return OpDef(mnemonic, summary, operands, infer=partial(infer.elementwise, **kw), torch=torch_name)


floor = _same("floor", "torch.floor", "Round down; integers are unchanged.")
ceil = _same("ceil", "torch.ceil", "Round up; integers are unchanged.")
trunc = _same("trunc", "torch.trunc", "Round toward zero; integers are unchanged.")
round = _same("round", "torch.round", "Round half to even at `decimals` decimal places; integers are unchanged.",  # noqa: A001
              attrs=(Attr("decimals", I64, "decimal places (negative: tens, hundreds, …)", default=0),))
sign = _same("sign", "torch.sign", "-1, 0 or 1 in the input's type (bool: unchanged).")
reciprocal = _to_float("reciprocal", "torch.reciprocal", "1/x; integer input gives float32.")
sin = _to_float("sin", "torch.sin", "Sine; integer input gives float32.")
cos = _to_float("cos", "torch.cos", "Cosine; integer input gives float32.")
tan = _to_float("tan", "torch.tan", "Tangent; integer input gives float32.")
erf = _to_float("erf", "torch.erf", "Gauss error function; integer input gives float32.")
log1p = _to_float("log1p", "torch.log1p", "log(1 + x), accurate near 0; integer input gives float32.")
expm1 = _to_float("expm1", "torch.expm1", "exp(x) - 1, accurate near 0; integer input gives float32.")

logical_not = OpDef("logical_not", "x == 0 as i1.", _X, infer=partial(infer.elementwise, result="i1"),
                    torch="torch.logical_not")
logical_and = _binary("logical_and", "torch.logical_and", "(x != 0) and (y != 0) as i1, broadcasting.", result="i1")
logical_or = _binary("logical_or", "torch.logical_or", "(x != 0) or (y != 0) as i1, broadcasting.", result="i1")
logical_xor = _binary("logical_xor", "torch.logical_xor", "(x != 0) xor (y != 0) as i1, broadcasting.", result="i1")

_INT_XY = (Operand("lhs", elems=_INTEGRAL), Operand("rhs", elems=_INTEGRAL))
bitwise_not = _same("bitwise_not", "torch.bitwise_not", "~x on integers, logical not on bool.",
                    operands=(Operand("input", elems=_INTEGRAL),))
bitwise_and = _binary("bitwise_and", "torch.bitwise_and", "x & y on integers/bool, with promotion.", _INT_XY)
bitwise_or = _binary("bitwise_or", "torch.bitwise_or", "x | y on integers/bool, with promotion.", _INT_XY)
bitwise_xor = _binary("bitwise_xor", "torch.bitwise_xor", "x ^ y on integers/bool, with promotion.", _INT_XY)

floor_divide = _binary("floor_divide", "torch.floor_divide", "floor(x / y) in the promoted type (Python's //).")
remainder = _binary("remainder", "torch.remainder", "x - floor(x / y) * y: the sign of y (Python's %).")
fmod = _binary("fmod", "torch.fmod", "C fmod: x - trunc(x / y) * y, the sign of x.")

clamp = OpDef("clamp", "min(max(x, min), max) with absent bounds ignored; operands promote like torch.clamp.",
              (Operand("input"), Operand("min", "lower bound (broadcasts)", optional=True),
               Operand("max", "upper bound (broadcasts)", optional=True)),
              infer=infer.elementwise, torch="torch.clamp")

silu = _same("silu", "torch.nn.functional.silu", "x * sigmoid(x).", _F)
mish = _same("mish", "torch.nn.functional.mish", "x * tanh(softplus(x)).", _F)
hardswish = _same("hardswish", "torch.nn.functional.hardswish", "x * relu6(x + 3) / 6.", _F)
hardsigmoid = _same("hardsigmoid", "torch.nn.functional.hardsigmoid", "relu6(x + 3) / 6.", _F)
logsigmoid = _same("logsigmoid", "torch.nn.functional.logsigmoid", "log(sigmoid(x)), computed stably.", _F)
leaky_relu = _same("leaky_relu", "torch.nn.functional.leaky_relu", "x if x > 0 else negative_slope * x.", _F,
                   (Attr("negative_slope", F64, "slope for x <= 0", default=0.01),))
elu = _same("elu", "torch.nn.functional.elu", "x if x > 0 else alpha * (exp(x) - 1).", _F,
            (Attr("alpha", F64, "scale of the negative part", default=1.0),))
softplus = _same("softplus", "torch.nn.functional.softplus", "log(1 + exp(beta * x)) / beta; x where beta * x > "
                 "threshold.", _F, (Attr("beta", F64, "sharpness", default=1.0),
                                    Attr("threshold", F64, "linear above this", default=20.0)))

MATH_OPS = (floor, ceil, trunc, round, sign, reciprocal, sin, cos, tan, erf, log1p, expm1,
            logical_not, logical_and, logical_or, logical_xor, bitwise_not, bitwise_and, bitwise_or, bitwise_xor,
            floor_divide, remainder, fmod, clamp, silu, mish, hardswish, hardsigmoid, logsigmoid, leaky_relu, elu,
            softplus)
