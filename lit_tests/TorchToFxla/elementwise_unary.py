# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla: unary elementwise math, rounding and logical/bitwise negation -- one case per op object of
# fxla.lowering.RULES; integer inputs of float functions show the promotion to float32.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import operator

import torch
from fxla.testing import case, t

I64, I32, BF16, F16, BOOL, U8 = torch.int64, torch.int32, torch.bfloat16, torch.float16, torch.bool, torch.uint8


# CHECK-LABEL: case operator.neg:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[NEG:.+]] = "fxla.neg"(%[[X]]) : (tensor<3x4xi64>) -> tensor<3x4xi64>
@case(operator.neg, t(3, 4, dtype=I64))
def neg_operator(x):
    return -x


# CHECK-LABEL: case torch.neg:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[NEG:.+]] = "fxla.neg"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.neg, t(3, 4))
def neg(x):
    return torch.neg(x)


# CHECK-LABEL: case Tensor.neg:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xbf16>)
# CHECK:         %[[NEG:.+]] = "fxla.neg"(%[[X]]) : (tensor<3xbf16>) -> tensor<3xbf16>
@case(torch.Tensor.neg, t(3, dtype=BF16))
def tensor_neg(x):
    return x.neg()


# CHECK-LABEL: case operator.abs:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi32>)
# CHECK:         %[[ABS:.+]] = "fxla.abs"(%[[X]]) : (tensor<3x4xi32>) -> tensor<3x4xi32>
@case(operator.abs, t(3, 4, dtype=I32))
def abs_builtin(x):
    return abs(x)


# CHECK-LABEL: case torch.abs:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ABS:.+]] = "fxla.abs"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.abs, t(3, 4))
def torch_abs(x):
    return torch.abs(x)


# CHECK-LABEL: case Tensor.abs:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xf16>)
# CHECK:         %[[ABS:.+]] = "fxla.abs"(%[[X]]) : (tensor<3xf16>) -> tensor<3xf16>
@case(torch.Tensor.abs, t(3, dtype=F16))
def tensor_abs(x):
    return x.abs()


# CHECK-LABEL: case torch.exp:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[EXP:.+]] = "fxla.exp"(%[[X]]) : (tensor<3x4xi64>) -> tensor<3x4xf32>
@case(torch.exp, t(3, 4, dtype=I64))
def exp_int(x):
    return torch.exp(x)


# CHECK-LABEL: case Tensor.exp:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xbf16>)
# CHECK:         %[[EXP:.+]] = "fxla.exp"(%[[X]]) : (tensor<3x4xbf16>) -> tensor<3x4xbf16>
@case(torch.Tensor.exp, t(3, 4, dtype=BF16))
def tensor_exp(x):
    return x.exp()


# CHECK-LABEL: case torch.log:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LOG:.+]] = "fxla.log"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.log, t(3, 4))
def log(x):
    return torch.log(x)


# CHECK-LABEL: case Tensor.log:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi32>)
# CHECK:         %[[LOG:.+]] = "fxla.log"(%[[X]]) : (tensor<3xi32>) -> tensor<3xf32>
@case(torch.Tensor.log, t(3, dtype=I32))
def tensor_log_int(x):
    return x.log()


# CHECK-LABEL: case torch.sqrt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[SQRT:.+]] = "fxla.sqrt"(%[[X]]) : (tensor<3x4xi64>) -> tensor<3x4xf32>
@case(torch.sqrt, t(3, 4, dtype=I64))
def sqrt_int(x):
    return torch.sqrt(x)


# CHECK-LABEL: case Tensor.sqrt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SQRT:.+]] = "fxla.sqrt"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.Tensor.sqrt, t(3, 4))
def tensor_sqrt(x):
    return x.sqrt()


# CHECK-LABEL: case torch.rsqrt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf16>)
# CHECK:         %[[RSQRT:.+]] = "fxla.rsqrt"(%[[X]]) : (tensor<3x4xf16>) -> tensor<3x4xf16>
@case(torch.rsqrt, t(3, 4, dtype=F16))
def rsqrt(x):
    return torch.rsqrt(x)


# CHECK-LABEL: case Tensor.rsqrt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[RSQRT:.+]] = "fxla.rsqrt"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.Tensor.rsqrt, t(3, 4))
def tensor_rsqrt(x):
    return x.rsqrt()


# CHECK-LABEL: case torch.floor:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[FLOOR:.+]] = "fxla.floor"(%[[X]]) : (tensor<4x5xf32>) -> tensor<4x5xf32>
@case(torch.floor, t(4, 5))
def floor(x):
    return torch.floor(x)


# CHECK-LABEL: case Tensor.floor:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>)
# CHECK:         %[[FLOOR:.+]] = "fxla.floor"(%[[X]]) : (tensor<4x5xi64>) -> tensor<4x5xi64>
@case(torch.Tensor.floor, t(4, 5, dtype=I64))
def tensor_floor_int(x):
    return x.floor()


# CHECK-LABEL: case torch.ceil:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[CEIL:.+]] = "fxla.ceil"(%[[X]]) : (tensor<4x5xf32>) -> tensor<4x5xf32>
@case(torch.ceil, t(4, 5))
def ceil(x):
    return torch.ceil(x)


# CHECK-LABEL: case Tensor.ceil:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xbf16>)
# CHECK:         %[[CEIL:.+]] = "fxla.ceil"(%[[X]]) : (tensor<4x5xbf16>) -> tensor<4x5xbf16>
@case(torch.Tensor.ceil, t(4, 5, dtype=BF16))
def tensor_ceil(x):
    return x.ceil()


# CHECK-LABEL: case torch.trunc:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[TRUNC:.+]] = "fxla.trunc"(%[[X]]) : (tensor<4x5xf32>) -> tensor<4x5xf32>
@case(torch.trunc, t(4, 5))
def trunc(x):
    return torch.trunc(x)


# CHECK-LABEL: case Tensor.trunc:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf16>)
# CHECK:         %[[TRUNC:.+]] = "fxla.trunc"(%[[X]]) : (tensor<4x5xf16>) -> tensor<4x5xf16>
@case(torch.Tensor.trunc, t(4, 5, dtype=F16))
def tensor_trunc(x):
    return x.trunc()


# CHECK-LABEL: case torch.fix:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[TRUNC:.+]] = "fxla.trunc"(%[[X]]) : (tensor<4x5xf32>) -> tensor<4x5xf32>
@case(torch.fix, t(4, 5))
def fix(x):
    return torch.fix(x)


# CHECK-LABEL: case Tensor.fix:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>)
# CHECK:         %[[TRUNC:.+]] = "fxla.trunc"(%[[X]]) : (tensor<4x5xi64>) -> tensor<4x5xi64>
@case(torch.Tensor.fix, t(4, 5, dtype=I64))
def tensor_fix_int(x):
    return x.fix()


# CHECK-LABEL: case torch.round:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[ROUND:.+]] = "fxla.round"(%[[X]]) {decimals = 0 : i64} : (tensor<4x5xf32>) -> tensor<4x5xf32>
@case(torch.round, t(4, 5))
def round_half_even(x):
    return torch.round(x)


# CHECK-LABEL: case Tensor.round:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[ROUND:.+]] = "fxla.round"(%[[X]]) {decimals = 1 : i64} : (tensor<4x5xf32>) -> tensor<4x5xf32>
@case(torch.Tensor.round, t(4, 5))
def tensor_round_decimals(x):
    return x.round(decimals=1)


# CHECK-LABEL: case torch.sign:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SIGN:.+]] = "fxla.sign"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.sign, t(3, 4))
def sign(x):
    return torch.sign(x)


# CHECK-LABEL: case Tensor.sign:
# CHECK:         func.func @main(%[[X:.+]]: tensor<6xi1>)
# CHECK:         %[[SIGN:.+]] = "fxla.sign"(%[[X]]) : (tensor<6xi1>) -> tensor<6xi1>
@case(torch.Tensor.sign, t(6, dtype=BOOL))
def tensor_sign_bool(x):
    return x.sign()


# CHECK-LABEL: case torch.reciprocal:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[RECIPROCAL:.+]] = "fxla.reciprocal"(%[[X]]) : (tensor<3x4xi64>) -> tensor<3x4xf32>
@case(torch.reciprocal, t(3, 4, dtype=I64))
def reciprocal_int(x):
    return torch.reciprocal(x)


# CHECK-LABEL: case Tensor.reciprocal:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[RECIPROCAL:.+]] = "fxla.reciprocal"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.Tensor.reciprocal, t(3, 4))
def tensor_reciprocal(x):
    return x.reciprocal()


# CHECK-LABEL: case torch.sin:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SIN:.+]] = "fxla.sin"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.sin, t(3, 4))
def sin(x):
    return torch.sin(x)


# CHECK-LABEL: case Tensor.sin:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi32>)
# CHECK:         %[[SIN:.+]] = "fxla.sin"(%[[X]]) : (tensor<3x4xi32>) -> tensor<3x4xf32>
@case(torch.Tensor.sin, t(3, 4, dtype=I32))
def tensor_sin_int(x):
    return x.sin()


# CHECK-LABEL: case torch.cos:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[COS:.+]] = "fxla.cos"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.cos, t(3, 4))
def cos(x):
    return torch.cos(x)


# CHECK-LABEL: case Tensor.cos:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xbf16>)
# CHECK:         %[[COS:.+]] = "fxla.cos"(%[[X]]) : (tensor<3x4xbf16>) -> tensor<3x4xbf16>
@case(torch.Tensor.cos, t(3, 4, dtype=BF16))
def tensor_cos(x):
    return x.cos()


# CHECK-LABEL: case torch.tan:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[TAN:.+]] = "fxla.tan"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.tan, t(3, 4))
def tan(x):
    return torch.tan(x)


# CHECK-LABEL: case Tensor.tan:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[TAN:.+]] = "fxla.tan"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.Tensor.tan, t(3, 4))
def tensor_tan(x):
    return x.tan()


# CHECK-LABEL: case torch.erf:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ERF:.+]] = "fxla.erf"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.erf, t(3, 4))
def erf(x):
    return torch.erf(x)


# CHECK-LABEL: case Tensor.erf:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[ERF:.+]] = "fxla.erf"(%[[X]]) : (tensor<3x4xi64>) -> tensor<3x4xf32>
@case(torch.Tensor.erf, t(3, 4, dtype=I64))
def tensor_erf_int(x):
    return x.erf()


# CHECK-LABEL: case torch.special.erf:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf16>)
# CHECK:         %[[ERF:.+]] = "fxla.erf"(%[[X]]) : (tensor<3x4xf16>) -> tensor<3x4xf16>
@case(torch.special.erf, t(3, 4, dtype=F16))
def special_erf(x):
    return torch.special.erf(x)


# CHECK-LABEL: case torch.log1p:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LOG1P:.+]] = "fxla.log1p"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.log1p, t(3, 4))
def log1p(x):
    return torch.log1p(x)


# CHECK-LABEL: case Tensor.log1p:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LOG1P:.+]] = "fxla.log1p"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.Tensor.log1p, t(3, 4))
def tensor_log1p(x):
    return x.log1p()


# CHECK-LABEL: case torch.expm1:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[EXPM1:.+]] = "fxla.expm1"(%[[X]]) : (tensor<3x4xi64>) -> tensor<3x4xf32>
@case(torch.expm1, t(3, 4, dtype=I64))
def expm1_int(x):
    return torch.expm1(x)


# CHECK-LABEL: case Tensor.expm1:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[EXPM1:.+]] = "fxla.expm1"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.Tensor.expm1, t(3, 4))
def tensor_expm1(x):
    return x.expm1()


# CHECK-LABEL: case torch.square:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[POW:.+]] = "fxla.pow"(%[[X]], %[[CONSTANT]]) : (tensor<3x4xi64>, tensor<i64>) -> tensor<3x4xi64>
@case(torch.square, t(3, 4, dtype=I64))
def square_int(x):
    return torch.square(x)


# CHECK-LABEL: case Tensor.square:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[POW:.+]] = "fxla.pow"(%[[X]], %[[CONSTANT]]) : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
@case(torch.Tensor.square, t(3, 4))
def tensor_square(x):
    return x.square()


# CHECK-LABEL: case torch.logical_not:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LOGICAL_NOT:.+]] = "fxla.logical_not"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xi1>
@case(torch.logical_not, t(3, 4))
def logical_not(x):
    return torch.logical_not(x)


# CHECK-LABEL: case Tensor.logical_not:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi64>)
# CHECK:         %[[LOGICAL_NOT:.+]] = "fxla.logical_not"(%[[X]]) : (tensor<3xi64>) -> tensor<3xi1>
@case(torch.Tensor.logical_not, t(3, dtype=I64))
def tensor_logical_not(x):
    return x.logical_not()


# CHECK-LABEL: case torch.bitwise_not:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[BITWISE_NOT:.+]] = "fxla.bitwise_not"(%[[X]]) : (tensor<3x4xi64>) -> tensor<3x4xi64>
@case(torch.bitwise_not, t(3, 4, dtype=I64))
def bitwise_not(x):
    return torch.bitwise_not(x)


# CHECK-LABEL: case Tensor.bitwise_not:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xui8>)
# CHECK:         %[[BITWISE_NOT:.+]] = "fxla.bitwise_not"(%[[X]]) : (tensor<3xui8>) -> tensor<3xui8>
@case(torch.Tensor.bitwise_not, t(3, dtype=U8))
def tensor_bitwise_not_u8(x):
    return x.bitwise_not()


# CHECK-LABEL: case operator.invert:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi1>)
# CHECK:         %[[BITWISE_NOT:.+]] = "fxla.bitwise_not"(%[[X]]) : (tensor<3xi1>) -> tensor<3xi1>
@case(operator.invert, t(3, dtype=BOOL))
def invert_bool(x):
    return ~x
