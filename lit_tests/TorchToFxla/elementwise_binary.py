# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla: binary arithmetic, division modes, logical and bitwise ops -- one case per op object of
# fxla.lowering.RULES; the checks show broadcasting, dtype promotion and scalar operands as torch defines them.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import operator

import torch
from fxla.testing import case, t

I64, I32, F16, BOOL = torch.int64, torch.int32, torch.float16, torch.bool


# CHECK-LABEL: case operator.add:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x1x4xf32>, %[[Y:.+]]: tensor<3x1xf32>)
# CHECK:         %[[ADD:.+]] = "fxla.add"(%[[X]], %[[Y]]) : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
@case(operator.add, t(2, 1, 4), t(3, 1))
def add_broadcast(x, y):
    return x + y


# CHECK-LABEL: case operator.iadd:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<4xf32>)
# CHECK:         %[[ADD:.+]] = "fxla.add"(%[[X]], %[[Y]]) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
@case(operator.iadd, t(3, 4), t(4))
def iadd(x, y):
    x += y
    return x


# CHECK-LABEL: case torch.add:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>, %[[Y:.+]]: tensor<4xi64>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%[[Y]], %[[CONSTANT]]) : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
# CHECK:         %[[ADD:.+]] = "fxla.add"(%[[X]], %[[MUL]]) : (tensor<3x4xi64>, tensor<4xi64>) -> tensor<3x4xi64>
@case(torch.add, t(3, 4, dtype=I64), t(4, dtype=I64))
def torch_add_alpha(x, y):
    return torch.add(x, y, alpha=2)


# CHECK-LABEL: case Tensor.add:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi64>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<1.500000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[ADD:.+]] = "fxla.add"(%[[X]], %[[CONSTANT]]) : (tensor<3xi64>, tensor<f32>) -> tensor<3xf32>
@case(torch.Tensor.add, t(3, dtype=I64))
def tensor_add_float_scalar(x):
    return x.add(1.5)


# CHECK-LABEL: case operator.sub:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[SUB:.+]] = "fxla.sub"(%[[CONSTANT]], %[[X]]) : (tensor<f32>, tensor<3x4xf32>) -> tensor<3x4xf32>
@case(operator.sub, t(3, 4))
def scalar_minus_tensor(x):
    return 2 - x


# CHECK-LABEL: case operator.isub:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SUB:.+]] = "fxla.sub"(%[[X]], %[[Y]]) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
@case(operator.isub, t(3, 4), t(3, 4))
def isub(x, y):
    x -= y
    return x


# CHECK-LABEL: case torch.sub:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<4xf32>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<3.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%[[Y]], %[[CONSTANT]]) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
# CHECK:         %[[SUB:.+]] = "fxla.sub"(%[[X]], %[[MUL]]) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
@case(torch.sub, t(3, 4), t(4))
def torch_sub_alpha(x, y):
    return torch.sub(x, y, alpha=3)


# alpha scales the operand promoted to the result dtype (uint8 -> int32 first: -1 * 5 is -5, not 251), and
# half-precision operands are scaled and added in f32 and rounded once, as torch's CPU kernel does
# CHECK-LABEL: case torch.add (alpha promotes first):
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi32>, %[[Y:.+]]: tensor<3xui8>)
# CHECK:         %[[CONVERT:.+]] = "fxla.convert"(%[[Y]]) : (tensor<3xui8>) -> tensor<3xi32>
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<-1> : tensor<i32>} : () -> tensor<i32>
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%[[CONVERT]], %[[CONSTANT]]) : (tensor<3xi32>, tensor<i32>) -> tensor<3xi32>
# CHECK:         %[[ADD:.+]] = "fxla.add"(%[[X]], %[[MUL]]) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
@case(torch.add, t(3, dtype=I32), t(3, dtype=torch.uint8), variant="alpha promotes first")
def torch_add_alpha_promotes_first(x, y):
    return torch.add(x, y, alpha=-1)


# CHECK-LABEL: case torch.sub (alpha half):
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xf16>, %[[Y:.+]]: tensor<3xf16>)
# CHECK:         %[[CONVERT:.+]] = "fxla.convert"(%[[X]]) : (tensor<3xf16>) -> tensor<3xf32>
# CHECK:         %[[CONVERT_0:.+]] = "fxla.convert"(%[[Y]]) : (tensor<3xf16>) -> tensor<3xf32>
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<3.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%[[CONVERT_0]], %[[CONSTANT]]) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
# CHECK:         %[[SUB:.+]] = "fxla.sub"(%[[CONVERT]], %[[MUL]]) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
# CHECK:         %[[CONVERT_1:.+]] = "fxla.convert"(%[[SUB]]) : (tensor<3xf32>) -> tensor<3xf16>
@case(torch.sub, t(3, dtype=F16), t(3, dtype=F16), variant="alpha half")
def torch_sub_alpha_half(x, y):
    return torch.sub(x, y, alpha=3)


# CHECK-LABEL: case Tensor.sub:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi32>, %[[Y:.+]]: tensor<3xi64>)
# CHECK:         %[[SUB:.+]] = "fxla.sub"(%[[X]], %[[Y]]) : (tensor<3xi32>, tensor<3xi64>) -> tensor<3xi64>
@case(torch.Tensor.sub, t(3, dtype=I32), t(3, dtype=I64))
def tensor_sub_promotes(x, y):
    return x.sub(y)


# CHECK-LABEL: case torch.rsub:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[SUB:.+]] = "fxla.sub"(%[[CONSTANT]], %[[X]]) : (tensor<f32>, tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.rsub, t(3, 4))
def rsub_scalar(x):
    return torch.rsub(x, 2)


# CHECK-LABEL: case operator.mul:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi32>, %[[Y:.+]]: tensor<3xf16>)
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%[[X]], %[[Y]]) : (tensor<3xi32>, tensor<3xf16>) -> tensor<3xf16>
@case(operator.mul, t(3, dtype=I32), t(3, dtype=F16))
def mul_int_half(x, y):
    return x * y


# CHECK-LABEL: case operator.imul:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[Y:.+]]: tensor<3xf32>)
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%[[X]], %[[Y]]) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
@case(operator.imul, t(2, 3), t(3))
def imul(x, y):
    x *= y
    return x


# CHECK-LABEL: case torch.mul:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[Y:.+]]: tensor<2x1xf32>)
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%[[X]], %[[Y]]) : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
@case(torch.mul, t(2, 3), t(2, 1))
def torch_mul(x, y):
    return torch.mul(x, y)


# CHECK-LABEL: case Tensor.mul:
# CHECK:         func.func @main(%[[X:.+]]: tensor<6xi1>, %[[Y:.+]]: tensor<6xi1>)
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%[[X]], %[[Y]]) : (tensor<6xi1>, tensor<6xi1>) -> tensor<6xi1>
@case(torch.Tensor.mul, t(6, dtype=BOOL), t(6, dtype=BOOL))
def tensor_mul_bool(x, y):
    return x.mul(y)


# CHECK-LABEL: case operator.truediv:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>, %[[Y:.+]]: tensor<3x4xi64>)
# CHECK:         %[[DIV:.+]] = "fxla.div"(%[[X]], %[[Y]]) : (tensor<3x4xi64>, tensor<3x4xi64>) -> tensor<3x4xf32>
@case(operator.truediv, t(3, 4, dtype=I64), t(3, 4, dtype=I64))
def int_div_int(x, y):
    return x / y


# CHECK-LABEL: case operator.itruediv:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<4xf32>)
# CHECK:         %[[DIV:.+]] = "fxla.div"(%[[X]], %[[Y]]) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
@case(operator.itruediv, t(3, 4), t(4))
def itruediv(x, y):
    x /= y
    return x


# CHECK-LABEL: case torch.div:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4x5xf32>)
# CHECK:         %[[FLOOR_DIVIDE:.+]] = "fxla.floor_divide"(%[[X]], %[[Y]]) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
@case(torch.div, t(4, 5), t(4, 5))
def div_floor(x, y):
    return torch.div(x, y, rounding_mode="floor")


# CHECK-LABEL: case torch.true_divide:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi64>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<3> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[DIV:.+]] = "fxla.div"(%[[X]], %[[CONSTANT]]) : (tensor<3xi64>, tensor<i64>) -> tensor<3xf32>
@case(torch.true_divide, t(3, dtype=I64))
def true_divide_scalar(x):
    return torch.true_divide(x, 3)


# CHECK-LABEL: case Tensor.div:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<3> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[FMOD:.+]] = "fxla.fmod"(%[[X]], %[[CONSTANT]]) : (tensor<4x5xi64>, tensor<i64>) -> tensor<4x5xi64>
# CHECK:         %[[FLOOR_DIVIDE:.+]] = "fxla.floor_divide"(%{{.+}}, %[[CONSTANT]]) : (tensor<4x5xi64>, tensor<i64>) -> tensor<4x5xi64>
# CHECK:         return %[[FLOOR_DIVIDE]] : tensor<4x5xi64>
@case(torch.Tensor.div, t(4, 5, dtype=I64))
def tensor_div_trunc(x):
    return x.div(3, rounding_mode="trunc")


# CHECK-LABEL: case Tensor.true_divide:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<4xf32>)
# CHECK:         %[[DIV:.+]] = "fxla.div"(%[[X]], %[[Y]]) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
@case(torch.Tensor.true_divide, t(3, 4), t(4))
def tensor_true_divide(x, y):
    return x.true_divide(y)


# CHECK-LABEL: case torch.maximum:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi64>, %[[Y:.+]]: tensor<3xf32>)
# CHECK:         %[[MAXIMUM:.+]] = "fxla.maximum"(%[[X]], %[[Y]]) : (tensor<3xi64>, tensor<3xf32>) -> tensor<3xf32>
@case(torch.maximum, t(3, dtype=I64), t(3))
def maximum_int_float(x, y):
    return torch.maximum(x, y)


# CHECK-LABEL: case Tensor.maximum:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<4xf32>)
# CHECK:         %[[MAXIMUM:.+]] = "fxla.maximum"(%[[X]], %[[Y]]) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
@case(torch.Tensor.maximum, t(3, 4), t(4))
def tensor_maximum(x, y):
    return x.maximum(y)


# CHECK-LABEL: case torch.minimum:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x1xf32>)
# CHECK:         %[[MINIMUM:.+]] = "fxla.minimum"(%[[X]], %[[Y]]) : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
@case(torch.minimum, t(3, 4), t(3, 1))
def minimum(x, y):
    return torch.minimum(x, y)


# CHECK-LABEL: case Tensor.minimum:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xf32>)
# CHECK:         %[[MINIMUM:.+]] = "fxla.minimum"(%[[X]], %[[Y]]) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.Tensor.minimum, t(3, 4), t(3, 4))
def tensor_minimum(x, y):
    return x.minimum(y)


# CHECK-LABEL: case operator.pow:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[POW:.+]] = "fxla.pow"(%[[X]], %[[CONSTANT]]) : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
@case(operator.pow, t(3, 4))
def pow_int_scalar(x):
    return x ** 2


# CHECK-LABEL: case torch.pow:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<4xf32>)
# CHECK:         %[[POW:.+]] = "fxla.pow"(%[[X]], %[[Y]]) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
@case(torch.pow, t(3, 4), t(4))
def torch_pow_tensor(x, y):
    return torch.pow(x, y)


# CHECK-LABEL: case Tensor.pow:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[POW:.+]] = "fxla.pow"(%[[X]], %[[CONSTANT]]) : (tensor<3x4xi64>, tensor<f32>) -> tensor<3x4xf32>
@case(torch.Tensor.pow, t(3, 4, dtype=I64))
def tensor_pow_float_scalar(x):
    return x.pow(0.5)


# CHECK-LABEL: case torch.floor_divide:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>, %[[Y:.+]]: tensor<5xi64>)
# CHECK:         %[[FLOOR_DIVIDE:.+]] = "fxla.floor_divide"(%[[X]], %[[Y]]) : (tensor<4x5xi64>, tensor<5xi64>) -> tensor<4x5xi64>
@case(torch.floor_divide, t(4, 5, dtype=I64), t(5, dtype=I64))
def floor_divide(x, y):
    return torch.floor_divide(x, y)


# CHECK-LABEL: case Tensor.floor_divide:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[FLOOR_DIVIDE:.+]] = "fxla.floor_divide"(%[[X]], %[[CONSTANT]]) : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xf32>
@case(torch.Tensor.floor_divide, t(4, 5))
def tensor_floor_divide(x):
    return x.floor_divide(2)


# CHECK-LABEL: case operator.floordiv:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4x5xf32>)
# CHECK:         %[[FLOOR_DIVIDE:.+]] = "fxla.floor_divide"(%[[X]], %[[Y]]) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
@case(operator.floordiv, t(4, 5), t(4, 5))
def floordiv(x, y):
    return x // y


# CHECK-LABEL: case torch.remainder:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>, %[[Y:.+]]: tensor<4x5xi64>)
# CHECK:         %[[REMAINDER:.+]] = "fxla.remainder"(%[[X]], %[[Y]]) : (tensor<4x5xi64>, tensor<4x5xi64>) -> tensor<4x5xi64>
@case(torch.remainder, t(4, 5, dtype=I64), t(4, 5, dtype=I64))
def remainder(x, y):
    return torch.remainder(x, y)


# CHECK-LABEL: case Tensor.remainder:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<1.500000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[REMAINDER:.+]] = "fxla.remainder"(%[[X]], %[[CONSTANT]]) : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xf32>
@case(torch.Tensor.remainder, t(4, 5))
def tensor_remainder(x):
    return x.remainder(1.5)


# CHECK-LABEL: case operator.mod:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<5xf32>)
# CHECK:         %[[REMAINDER:.+]] = "fxla.remainder"(%[[X]], %[[Y]]) : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
@case(operator.mod, t(4, 5), t(5))
def mod(x, y):
    return x % y


# CHECK-LABEL: case torch.fmod:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4x5xf32>)
# CHECK:         %[[FMOD:.+]] = "fxla.fmod"(%[[X]], %[[Y]]) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
@case(torch.fmod, t(4, 5), t(4, 5))
def fmod(x, y):
    return torch.fmod(x, y)


# CHECK-LABEL: case Tensor.fmod:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<3> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[FMOD:.+]] = "fxla.fmod"(%[[X]], %[[CONSTANT]]) : (tensor<4x5xi64>, tensor<i64>) -> tensor<4x5xi64>
@case(torch.Tensor.fmod, t(4, 5, dtype=I64))
def tensor_fmod(x):
    return x.fmod(3)


# CHECK-LABEL: case torch.logical_and:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<4xi1>)
# CHECK:         %[[LOGICAL_AND:.+]] = "fxla.logical_and"(%[[X]], %[[Y]]) : (tensor<3x4xf32>, tensor<4xi1>) -> tensor<3x4xi1>
@case(torch.logical_and, t(3, 4), t(4, dtype=BOOL))
def logical_and(x, y):
    return torch.logical_and(x, y)


# CHECK-LABEL: case Tensor.logical_and:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi64>, %[[Y:.+]]: tensor<3xi64>)
# CHECK:         %[[LOGICAL_AND:.+]] = "fxla.logical_and"(%[[X]], %[[Y]]) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
@case(torch.Tensor.logical_and, t(3, dtype=I64), t(3, dtype=I64))
def tensor_logical_and(x, y):
    return x.logical_and(y)


# CHECK-LABEL: case torch.logical_or:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi1>, %[[Y:.+]]: tensor<3x4xi1>)
# CHECK:         %[[LOGICAL_OR:.+]] = "fxla.logical_or"(%[[X]], %[[Y]]) : (tensor<3x4xi1>, tensor<3x4xi1>) -> tensor<3x4xi1>
@case(torch.logical_or, t(3, 4, dtype=BOOL), t(3, 4, dtype=BOOL))
def logical_or(x, y):
    return torch.logical_or(x, y)


# CHECK-LABEL: case Tensor.logical_or:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LOGICAL_OR:.+]] = "fxla.logical_or"(%[[X]], %[[Y]]) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xi1>
@case(torch.Tensor.logical_or, t(3, 4), t(3, 4))
def tensor_logical_or(x, y):
    return x.logical_or(y)


# CHECK-LABEL: case torch.logical_xor:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xi64>)
# CHECK:         %[[LOGICAL_XOR:.+]] = "fxla.logical_xor"(%[[X]], %[[Y]]) : (tensor<3x4xf32>, tensor<3x4xi64>) -> tensor<3x4xi1>
@case(torch.logical_xor, t(3, 4), t(3, 4, dtype=I64))
def logical_xor(x, y):
    return torch.logical_xor(x, y)


# CHECK-LABEL: case Tensor.logical_xor:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi1>, %[[Y:.+]]: tensor<3xi1>)
# CHECK:         %[[LOGICAL_XOR:.+]] = "fxla.logical_xor"(%[[X]], %[[Y]]) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
@case(torch.Tensor.logical_xor, t(3, dtype=BOOL), t(3, dtype=BOOL))
def tensor_logical_xor(x, y):
    return x.logical_xor(y)


# CHECK-LABEL: case torch.bitwise_and:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>, %[[Y:.+]]: tensor<4xi64>)
# CHECK:         %[[BITWISE_AND:.+]] = "fxla.bitwise_and"(%[[X]], %[[Y]]) : (tensor<3x4xi64>, tensor<4xi64>) -> tensor<3x4xi64>
@case(torch.bitwise_and, t(3, 4, dtype=I64), t(4, dtype=I64))
def bitwise_and(x, y):
    return torch.bitwise_and(x, y)


# CHECK-LABEL: case Tensor.bitwise_and:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi1>, %[[Y:.+]]: tensor<3xi1>)
# CHECK:         %[[BITWISE_AND:.+]] = "fxla.bitwise_and"(%[[X]], %[[Y]]) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
@case(torch.Tensor.bitwise_and, t(3, dtype=BOOL), t(3, dtype=BOOL))
def tensor_bitwise_and(x, y):
    return x.bitwise_and(y)


# CHECK-LABEL: case operator.and_:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi32>, %[[Y:.+]]: tensor<3xi64>)
# CHECK:         %[[BITWISE_AND:.+]] = "fxla.bitwise_and"(%[[X]], %[[Y]]) : (tensor<3xi32>, tensor<3xi64>) -> tensor<3xi64>
@case(operator.and_, t(3, dtype=I32), t(3, dtype=I64))
def and_(x, y):
    return x & y


# CHECK-LABEL: case torch.bitwise_or:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi32>, %[[Y:.+]]: tensor<3x4xi32>)
# CHECK:         %[[BITWISE_OR:.+]] = "fxla.bitwise_or"(%[[X]], %[[Y]]) : (tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<3x4xi32>
@case(torch.bitwise_or, t(3, 4, dtype=I32), t(3, 4, dtype=I32))
def bitwise_or(x, y):
    return torch.bitwise_or(x, y)


# CHECK-LABEL: case Tensor.bitwise_or:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi64>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<6> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[BITWISE_OR:.+]] = "fxla.bitwise_or"(%[[X]], %[[CONSTANT]]) : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
@case(torch.Tensor.bitwise_or, t(3, dtype=I64))
def tensor_bitwise_or_scalar(x):
    return x.bitwise_or(6)


# CHECK-LABEL: case operator.or_:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi1>, %[[Y:.+]]: tensor<3xi1>)
# CHECK:         %[[BITWISE_OR:.+]] = "fxla.bitwise_or"(%[[X]], %[[Y]]) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
@case(operator.or_, t(3, dtype=BOOL), t(3, dtype=BOOL))
def or_(x, y):
    return x | y


# CHECK-LABEL: case torch.bitwise_xor:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>, %[[Y:.+]]: tensor<3x4xi64>)
# CHECK:         %[[BITWISE_XOR:.+]] = "fxla.bitwise_xor"(%[[X]], %[[Y]]) : (tensor<3x4xi64>, tensor<3x4xi64>) -> tensor<3x4xi64>
@case(torch.bitwise_xor, t(3, 4, dtype=I64), t(3, 4, dtype=I64))
def bitwise_xor(x, y):
    return torch.bitwise_xor(x, y)


# CHECK-LABEL: case Tensor.bitwise_xor:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi1>, %[[Y:.+]]: tensor<3xi1>)
# CHECK:         %[[BITWISE_XOR:.+]] = "fxla.bitwise_xor"(%[[X]], %[[Y]]) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
@case(torch.Tensor.bitwise_xor, t(3, dtype=BOOL), t(3, dtype=BOOL))
def tensor_bitwise_xor(x, y):
    return x.bitwise_xor(y)


# CHECK-LABEL: case operator.xor:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xi64>, %[[Y:.+]]: tensor<3xi64>)
# CHECK:         %[[BITWISE_XOR:.+]] = "fxla.bitwise_xor"(%[[X]], %[[Y]]) : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
@case(operator.xor, t(2, 3, dtype=I64), t(3, dtype=I64))
def xor(x, y):
    return x ^ y
