"""The ``elementwise`` family: binary arithmetic, comparisons, unary math, rounding, logic and bitwise ops, integer
division, clamp, the pointwise activations of torch.nn and element type conversion (part of the op table; see
:mod:`.ops`).

Operands broadcast like torch and promote like ``torch.result_type``; float-only activations take float operands
(torch rejects integers there too); half-precision math is done in f32 and rounded once, like torch's CPU kernels.
"""
from __future__ import annotations

from functools import partial

from . import infer
from .opdef import F64, I64, STR, Attr, FloatOperand, OpDef, Operand
from .types import BOOL_TYPES, FLOAT_TYPES, INT_TYPES

_X = (Operand("input"),)
_F = (FloatOperand("input"),)
_XY = (Operand("lhs"), Operand("rhs"))
_INTEGRAL = INT_TYPES + BOOL_TYPES


def _same(mnemonic, torch_name, summary, operands=_X, attrs=()):
    return OpDef(mnemonic, summary, operands, attrs, infer=infer.same_as_first, torch=torch_name)


def _unary(mnemonic, torch_name, summary, **kw):
    return OpDef(mnemonic, summary, _X, infer=partial(infer.elementwise, **kw), torch=torch_name)


def _to_float(mnemonic, torch_name, summary):
    return _unary(mnemonic, torch_name, summary, float_result=True)


def _binary(mnemonic, torch_name, summary, operands=_XY, **kw):
    return OpDef(mnemonic, summary, operands, infer=partial(infer.elementwise, **kw), torch=torch_name)


# -- binary arithmetic and comparisons ------------------------------------------------------------------------------
add = _binary("add", "torch.add", "Elementwise sum with broadcasting and type promotion.")
sub = _binary("sub", "torch.sub", "Elementwise difference.")
mul = _binary("mul", "torch.mul", "Elementwise product.")
div = _binary("div", "torch.div", "True division; integer operands give a float result.", float_result=True)
maximum = _binary("maximum", "torch.maximum", "Elementwise maximum.")
minimum = _binary("minimum", "torch.minimum", "Elementwise minimum.")
pow = _binary("pow", "torch.pow", "Elementwise power.")  # noqa: A001  (mirrors torch.pow)
eq = _binary("eq", "torch.eq", "Elementwise ==, an i1 result.", result="i1")
ne = _binary("ne", "torch.ne", "Elementwise !=, an i1 result.", result="i1")
lt = _binary("lt", "torch.lt", "Elementwise <, an i1 result.", result="i1")
le = _binary("le", "torch.le", "Elementwise <=, an i1 result.", result="i1")
gt = _binary("gt", "torch.gt", "Elementwise >, an i1 result.", result="i1")
ge = _binary("ge", "torch.ge", "Elementwise >=, an i1 result.", result="i1")

# -- unary math and rounding ----------------------------------------------------------------------------------------
_NUMBERS = (Operand("input", elems=INT_TYPES + FLOAT_TYPES),)   # torch rejects neg/abs on bool
neg = OpDef("neg", "Elementwise negation (unsigned integers wrap).", _NUMBERS, infer=infer.same_as_first,
            torch="torch.neg")
abs = OpDef("abs", "Elementwise absolute value (identity on unsigned integers).", _NUMBERS,  # noqa: A001
            infer=infer.same_as_first, torch="torch.abs")
relu = _unary("relu", "torch.relu", "max(x, 0).")
exp = _to_float("exp", "torch.exp", "Elementwise e**x; integer input gives float32.")
log = _to_float("log", "torch.log", "Natural logarithm; integer input gives float32.")
sqrt = _to_float("sqrt", "torch.sqrt", "Square root; integer input gives float32.")
rsqrt = _to_float("rsqrt", "torch.rsqrt", "1/sqrt(x); integer input gives float32.")
tanh = _to_float("tanh", "torch.tanh", "Hyperbolic tangent; integer input gives float32.")
sigmoid = _to_float("sigmoid", "torch.sigmoid", "1/(1+e**-x); integer input gives float32.")
gelu = OpDef("gelu", "Gaussian error linear unit.", _F,
             (Attr("approximate", STR, "'none' (erf) or 'tanh'", default="none", choices=("none", "tanh")),),
             infer=infer.same_as_first, torch="torch.nn.functional.gelu")

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

# -- logic and bitwise ----------------------------------------------------------------------------------------------
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

# -- integer-style division and clamp -------------------------------------------------------------------------------
floor_divide = _binary("floor_divide", "torch.floor_divide", "floor(x / y) in the promoted type (Python's //).")
remainder = _binary("remainder", "torch.remainder", "x - floor(x / y) * y: the sign of y (Python's %).")
fmod = _binary("fmod", "torch.fmod", "C fmod: x - trunc(x / y) * y, the sign of x.")

clamp = OpDef("clamp", "min(max(x, min), max) with absent bounds ignored; operands promote like torch.clamp.",
              (Operand("input"), Operand("min", "lower bound (broadcasts)", optional=True),
               Operand("max", "upper bound (broadcasts)", optional=True)),
              infer=infer.elementwise, torch="torch.clamp")

# -- pointwise activations (float operands) -------------------------------------------------------------------------
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

# -- element type conversion ----------------------------------------------------------------------------------------
convert = OpDef("convert", "Element type conversion (Tensor.to(dtype)); the result type names the target.", _X,
                infer=infer.convert, torch="torch.Tensor.to")

ELEMENTWISE_OPS = (add, sub, mul, div, maximum, minimum, pow, eq, ne, lt, le, gt, ge,
                   neg, abs, relu, exp, log, sqrt, rsqrt, tanh, sigmoid, gelu,
                   floor, ceil, trunc, round, sign, reciprocal, sin, cos, tan, erf, log1p, expm1,
                   logical_not, logical_and, logical_or, logical_xor,
                   bitwise_not, bitwise_and, bitwise_or, bitwise_xor, floor_divide, remainder, fmod, clamp,
                   silu, mish, hardswish, hardsigmoid, logsigmoid, leaky_relu, elu, softplus, convert)
