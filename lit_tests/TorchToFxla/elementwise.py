# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `elementwise` (lowering/rules/elementwise.py): arithmetic (+ - * / **, abs, neg, exp, log,
# sqrt/rsqrt), comparisons (bool results, promoted operands), dtype conversions and the basic activations (relu,
# sigmoid, tanh, gelu) -- one case per op object of fxla.lowering.RULES; the checks show broadcasting, dtype
# promotion and scalar operands as torch defines them.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

from fxla import wrap
from fxla.frontend.autocast import autocast_cast
from fxla.testing import case, t

BF16, BOOL, F16, I32, I64 = torch.bfloat16, torch.bool, torch.float16, torch.int32, torch.int64


# CHECK-LABEL: case torch.relu:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[RELU:.+]] = fxla.relu %[[X]] : tensor<3x4xi64> -> tensor<3x4xi64>
@case(torch.relu, t(3, 4, dtype=I64))
def relu_int(x):
    return torch.relu(x)


# CHECK-LABEL: case torch.nn.functional.relu:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[RELU:.+]] = fxla.relu %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(F.relu, t(3, 4))
def f_relu(x):
    return F.relu(x)


# CHECK-LABEL: case Tensor.relu:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xbf16>)
# CHECK:         %[[RELU:.+]] = fxla.relu %[[X]] : tensor<3x4xbf16> -> tensor<3x4xbf16>
@case(torch.Tensor.relu, t(3, 4, dtype=BF16))
def tensor_relu(x):
    return x.relu()


# CHECK-LABEL: case torch.nn.ReLU:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[RELU:.+]] = fxla.relu %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(nn.ReLU, t(3, 4))
def relu_module():
    return nn.ReLU()


# CHECK-LABEL: case torch.nn.functional.gelu:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[GELU:.+]] = fxla.gelu %[[X]] {approximate = "tanh"} : tensor<3x4xf32> -> tensor<3x4xf32>
@case(F.gelu, t(3, 4))
def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


# CHECK-LABEL: case torch.nn.GELU:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[GELU:.+]] = fxla.gelu %[[X]] {approximate = "none"} : tensor<3x4xf32> -> tensor<3x4xf32>
@case(nn.GELU, t(3, 4))
def gelu_module():
    return nn.GELU()


# CHECK-LABEL: case torch.tanh:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[TANH:.+]] = fxla.tanh %[[X]] : tensor<3x4xi64> -> tensor<3x4xf32>
@case(torch.tanh, t(3, 4, dtype=I64))
def tanh_int(x):
    return torch.tanh(x)


# CHECK-LABEL: case torch.nn.functional.tanh:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[TANH:.+]] = fxla.tanh %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(F.tanh, t(3, 4))
def f_tanh(x):
    return wrap(F.tanh)(x)    # F.tanh has no torch-function hook: wrap records it as a leaf


# CHECK-LABEL: case Tensor.tanh:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf16>)
# CHECK:         %[[TANH:.+]] = fxla.tanh %[[X]] : tensor<3x4xf16> -> tensor<3x4xf16>
@case(torch.Tensor.tanh, t(3, 4, dtype=F16))
def tensor_tanh(x):
    return x.tanh()


# CHECK-LABEL: case torch.nn.Tanh:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[TANH:.+]] = fxla.tanh %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(nn.Tanh, t(3, 4))
def tanh_module():
    return nn.Tanh()


# CHECK-LABEL: case torch.sigmoid:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SIGMOID:.+]] = fxla.sigmoid %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.sigmoid, t(3, 4))
def sigmoid(x):
    return torch.sigmoid(x)


# CHECK-LABEL: case torch.nn.functional.sigmoid:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SIGMOID:.+]] = fxla.sigmoid %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(F.sigmoid, t(3, 4))
def f_sigmoid(x):
    return wrap(F.sigmoid)(x)


# CHECK-LABEL: case Tensor.sigmoid:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[SIGMOID:.+]] = fxla.sigmoid %[[X]] : tensor<3x4xi64> -> tensor<3x4xf32>
@case(torch.Tensor.sigmoid, t(3, 4, dtype=I64))
def tensor_sigmoid_int(x):
    return x.sigmoid()


# CHECK-LABEL: case torch.nn.Sigmoid:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SIGMOID:.+]] = fxla.sigmoid %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(nn.Sigmoid, t(3, 4))
def sigmoid_module():
    return nn.Sigmoid()


# CHECK-LABEL: case operator.eq:
# CHECK:         func.func @main(%[[X:.+]]: tensor<6xi64>, %[[Y:.+]]: tensor<6xf32>)
# CHECK:         %[[EQ:.+]] = fxla.eq %[[X]], %[[Y]] : tensor<6xi64>, tensor<6xf32> -> tensor<6xi1>
@case(operator.eq, t(6, dtype=I64), t(6))
def eq_int_float(x, y):
    return x == y


# CHECK-LABEL: case torch.eq:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<5xf32>)
# CHECK:         %[[EQ:.+]] = fxla.eq %[[X]], %[[Y]] : tensor<4x5xf32>, tensor<5xf32> -> tensor<4x5xi1>
@case(torch.eq, t(4, 5), t(5))
def torch_eq(x, y):
    return torch.eq(x, y)


# CHECK-LABEL: case Tensor.eq:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<1> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[EQ:.+]] = fxla.eq %[[X]], %[[CONSTANT]] : tensor<4x5xi64>, tensor<i64> -> tensor<4x5xi1>
@case(torch.Tensor.eq, t(4, 5, dtype=I64))
def tensor_eq_scalar(x):
    return x.eq(1)


# CHECK-LABEL: case operator.ne:
# CHECK:         func.func @main(%[[X:.+]]: tensor<6xi1>, %[[Y:.+]]: tensor<6xi1>)
# CHECK:         %[[NE:.+]] = fxla.ne %[[X]], %[[Y]] : tensor<6xi1>, tensor<6xi1> -> tensor<6xi1>
@case(operator.ne, t(6, dtype=BOOL), t(6, dtype=BOOL))
def ne_bool(x, y):
    return x != y


# CHECK-LABEL: case torch.ne:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi32>, %[[Y:.+]]: tensor<4x5xi64>)
# CHECK:         %[[NE:.+]] = fxla.ne %[[X]], %[[Y]] : tensor<4x5xi32>, tensor<4x5xi64> -> tensor<4x5xi1>
@case(torch.ne, t(4, 5, dtype=I32), t(4, 5, dtype=I64))
def torch_ne(x, y):
    return torch.ne(x, y)


# CHECK-LABEL: case Tensor.ne:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4x1xf32>)
# CHECK:         %[[NE:.+]] = fxla.ne %[[X]], %[[Y]] : tensor<4x5xf32>, tensor<4x1xf32> -> tensor<4x5xi1>
@case(torch.Tensor.ne, t(4, 5), t(4, 1))
def tensor_ne(x, y):
    return x.ne(y)


# CHECK-LABEL: case operator.lt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<6xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[LT:.+]] = fxla.lt %[[X]], %[[CONSTANT]] : tensor<6xi64>, tensor<f32> -> tensor<6xi1>
@case(operator.lt, t(6, dtype=I64))
def int_lt_float_scalar(x):
    return x < 0.5


# CHECK-LABEL: case torch.lt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4x5xf32>)
# CHECK:         %[[LT:.+]] = fxla.lt %[[X]], %[[Y]] : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xi1>
@case(torch.lt, t(4, 5), t(4, 5))
def torch_lt(x, y):
    return torch.lt(x, y)


# CHECK-LABEL: case Tensor.lt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xbf16>, %[[Y:.+]]: tensor<4x5xf32>)
# CHECK:         %[[LT:.+]] = fxla.lt %[[X]], %[[Y]] : tensor<4x5xbf16>, tensor<4x5xf32> -> tensor<4x5xi1>
@case(torch.Tensor.lt, t(4, 5, dtype=BF16), t(4, 5))
def tensor_lt_promotes(x, y):
    return x.lt(y)


# CHECK-LABEL: case operator.le:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<5xf32>)
# CHECK:         %[[LE:.+]] = fxla.le %[[X]], %[[Y]] : tensor<4x5xf32>, tensor<5xf32> -> tensor<4x5xi1>
@case(operator.le, t(4, 5), t(5))
def le(x, y):
    return x <= y


# CHECK-LABEL: case torch.le:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<2> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[LE:.+]] = fxla.le %[[X]], %[[CONSTANT]] : tensor<4x5xi64>, tensor<i64> -> tensor<4x5xi1>
@case(torch.le, t(4, 5, dtype=I64))
def torch_le_scalar(x):
    return torch.le(x, 2)


# CHECK-LABEL: case Tensor.le:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4x5xf32>)
# CHECK:         %[[LE:.+]] = fxla.le %[[X]], %[[Y]] : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xi1>
@case(torch.Tensor.le, t(4, 5), t(4, 5))
def tensor_le(x, y):
    return x.le(y)


# CHECK-LABEL: case operator.gt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<1.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[GT:.+]] = fxla.gt %[[X]], %[[CONSTANT]] : tensor<4x5xf32>, tensor<f32> -> tensor<4x5xi1>
@case(operator.gt, t(4, 5))
def gt_scalar(x):
    return x > 1


# CHECK-LABEL: case torch.gt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>, %[[Y:.+]]: tensor<5xi64>)
# CHECK:         %[[GT:.+]] = fxla.gt %[[X]], %[[Y]] : tensor<4x5xi64>, tensor<5xi64> -> tensor<4x5xi1>
@case(torch.gt, t(4, 5, dtype=I64), t(5, dtype=I64))
def torch_gt(x, y):
    return torch.gt(x, y)


# CHECK-LABEL: case Tensor.gt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4x5xf32>)
# CHECK:         %[[GT:.+]] = fxla.gt %[[X]], %[[Y]] : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xi1>
@case(torch.Tensor.gt, t(4, 5), t(4, 5))
def tensor_gt(x, y):
    return x.gt(y)


# CHECK-LABEL: case operator.ge:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf16>, %[[Y:.+]]: tensor<4x5xf16>)
# CHECK:         %[[GE:.+]] = fxla.ge %[[X]], %[[Y]] : tensor<4x5xf16>, tensor<4x5xf16> -> tensor<4x5xi1>
@case(operator.ge, t(4, 5, dtype=F16), t(4, 5, dtype=F16))
def ge(x, y):
    return x >= y


# CHECK-LABEL: case torch.ge:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<1x5xf32>)
# CHECK:         %[[GE:.+]] = fxla.ge %[[X]], %[[Y]] : tensor<4x5xf32>, tensor<1x5xf32> -> tensor<4x5xi1>
@case(torch.ge, t(4, 5), t(1, 5))
def torch_ge(x, y):
    return torch.ge(x, y)


# CHECK-LABEL: case Tensor.ge:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[GE:.+]] = fxla.ge %[[X]], %[[CONSTANT]] : tensor<4x5xi64>, tensor<f32> -> tensor<4x5xi1>
@case(torch.Tensor.ge, t(4, 5, dtype=I64))
def tensor_ge_float_scalar(x):
    return x.ge(0.5)


# CHECK-LABEL: case Tensor.float:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[X]] : tensor<3x4xi64> -> tensor<3x4xf32>
@case(torch.Tensor.float, t(3, 4, dtype=I64))
def to_float(x):
    return x.float()


# CHECK-LABEL: case Tensor.half:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[X]] : tensor<3x4xf32> -> tensor<3x4xf16>
@case(torch.Tensor.half, t(3, 4))
def to_half(x):
    return x.half()


# CHECK-LABEL: case Tensor.bfloat16:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi1>)
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[X]] : tensor<3x4xi1> -> tensor<3x4xbf16>
@case(torch.Tensor.bfloat16, t(3, 4, dtype=BOOL))
def to_bfloat16(x):
    return x.bfloat16()


# CHECK-LABEL: case Tensor.double:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[X]] : tensor<3x4xf32> -> tensor<3x4xf64>
@case(torch.Tensor.double, t(3, 4))
def to_double(x):
    return x.double()


# CHECK-LABEL: case Tensor.long:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[X]] : tensor<3x4xf32> -> tensor<3x4xi64>
@case(torch.Tensor.long, t(3, 4))
def to_long(x):
    return x.long()


# CHECK-LABEL: case Tensor.int:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xbf16>)
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[X]] : tensor<3x4xbf16> -> tensor<3x4xi32>
@case(torch.Tensor.int, t(3, 4, dtype=BF16))
def to_int(x):
    return x.int()


# CHECK-LABEL: case Tensor.bool:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[X]] : tensor<3x4xf32> -> tensor<3x4xi1>
@case(torch.Tensor.bool, t(3, 4))
def to_bool(x):
    return x.bool()


# CHECK-LABEL: case Tensor.to:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[X]] : tensor<3x4xf32> -> tensor<3x4xf16>
@case(torch.Tensor.to, t(3, 4))
def to_dtype(x):
    return x.to(torch.float16)


# CHECK-LABEL: case Tensor.type:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[X]] : tensor<3x4xf32> -> tensor<3x4xi32>
@case(torch.Tensor.type, t(3, 4))
def type_int32(x):
    return x.type(torch.int32)


# CHECK-LABEL: case Tensor.type_as:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>, %[[Y:.+]]: tensor<2xbf16>)
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[X]] : tensor<3x4xi64> -> tensor<3x4xbf16>
@case(torch.Tensor.type_as, t(3, 4, dtype=I64), t(2, dtype=BF16))
def type_as(x, y):
    return x.type_as(y)


# CHECK-LABEL: case operator.add:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x1x4xf32>, %[[Y:.+]]: tensor<3x1xf32>)
# CHECK:         %[[ADD:.+]] = fxla.add %[[X]], %[[Y]] : tensor<2x1x4xf32>, tensor<3x1xf32> -> tensor<2x3x4xf32>
@case(operator.add, t(2, 1, 4), t(3, 1))
def add_broadcast(x, y):
    return x + y


# CHECK-LABEL: case operator.iadd:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<4xf32>)
# CHECK:         %[[ADD:.+]] = fxla.add %[[X]], %[[Y]] : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
@case(operator.iadd, t(3, 4), t(4))
def iadd(x, y):
    x += y
    return x


# CHECK-LABEL: case torch.add:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>, %[[Y:.+]]: tensor<4xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<2> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[MUL:.+]] = fxla.mul %[[Y]], %[[CONSTANT]] : tensor<4xi64>, tensor<i64> -> tensor<4xi64>
# CHECK:         %[[ADD:.+]] = fxla.add %[[X]], %[[MUL]] : tensor<3x4xi64>, tensor<4xi64> -> tensor<3x4xi64>
@case(torch.add, t(3, 4, dtype=I64), t(4, dtype=I64))
def torch_add_alpha(x, y):
    return torch.add(x, y, alpha=2)


# CHECK-LABEL: case Tensor.add:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<1.500000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[ADD:.+]] = fxla.add %[[X]], %[[CONSTANT]] : tensor<3xi64>, tensor<f32> -> tensor<3xf32>
@case(torch.Tensor.add, t(3, dtype=I64))
def tensor_add_float_scalar(x):
    return x.add(1.5)


# CHECK-LABEL: case operator.sub:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[SUB:.+]] = fxla.sub %[[CONSTANT]], %[[X]] : tensor<f32>, tensor<3x4xf32> -> tensor<3x4xf32>
@case(operator.sub, t(3, 4))
def scalar_minus_tensor(x):
    return 2 - x


# CHECK-LABEL: case operator.isub:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SUB:.+]] = fxla.sub %[[X]], %[[Y]] : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
@case(operator.isub, t(3, 4), t(3, 4))
def isub(x, y):
    x -= y
    return x


# CHECK-LABEL: case torch.sub:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<4xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<3.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[MUL:.+]] = fxla.mul %[[Y]], %[[CONSTANT]] : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
# CHECK:         %[[SUB:.+]] = fxla.sub %[[X]], %[[MUL]] : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
@case(torch.sub, t(3, 4), t(4))
def torch_sub_alpha(x, y):
    return torch.sub(x, y, alpha=3)


# alpha scales the operand promoted to the result dtype (uint8 -> int32 first: -1 * 5 is -5, not 251), and
# half-precision operands are scaled and added in f32 and rounded once, as torch's CPU kernel does
# CHECK-LABEL: case torch.add (alpha promotes first):
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi32>, %[[Y:.+]]: tensor<3xui8>)
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[Y]] : tensor<3xui8> -> tensor<3xi32>
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<-1> : tensor<i32>} : () -> tensor<i32>
# CHECK:         %[[MUL:.+]] = fxla.mul %[[CONVERT]], %[[CONSTANT]] : tensor<3xi32>, tensor<i32> -> tensor<3xi32>
# CHECK:         %[[ADD:.+]] = fxla.add %[[X]], %[[MUL]] : tensor<3xi32>, tensor<3xi32> -> tensor<3xi32>
@case(torch.add, t(3, dtype=I32), t(3, dtype=torch.uint8), variant="alpha promotes first")
def torch_add_alpha_promotes_first(x, y):
    return torch.add(x, y, alpha=-1)


# CHECK-LABEL: case torch.sub (alpha half):
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xf16>, %[[Y:.+]]: tensor<3xf16>)
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[X]] : tensor<3xf16> -> tensor<3xf32>
# CHECK:         %[[CONVERT_0:.+]] = fxla.convert %[[Y]] : tensor<3xf16> -> tensor<3xf32>
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<3.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[MUL:.+]] = fxla.mul %[[CONVERT_0]], %[[CONSTANT]] : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
# CHECK:         %[[SUB:.+]] = fxla.sub %[[CONVERT]], %[[MUL]] : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
# CHECK:         %[[CONVERT_1:.+]] = fxla.convert %[[SUB]] : tensor<3xf32> -> tensor<3xf16>
@case(torch.sub, t(3, dtype=F16), t(3, dtype=F16), variant="alpha half")
def torch_sub_alpha_half(x, y):
    return torch.sub(x, y, alpha=3)


# CHECK-LABEL: case Tensor.sub:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi32>, %[[Y:.+]]: tensor<3xi64>)
# CHECK:         %[[SUB:.+]] = fxla.sub %[[X]], %[[Y]] : tensor<3xi32>, tensor<3xi64> -> tensor<3xi64>
@case(torch.Tensor.sub, t(3, dtype=I32), t(3, dtype=I64))
def tensor_sub_promotes(x, y):
    return x.sub(y)


# CHECK-LABEL: case torch.rsub:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[SUB:.+]] = fxla.sub %[[CONSTANT]], %[[X]] : tensor<f32>, tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.rsub, t(3, 4))
def rsub_scalar(x):
    return torch.rsub(x, 2)


# CHECK-LABEL: case operator.mul:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi32>, %[[Y:.+]]: tensor<3xf16>)
# CHECK:         %[[MUL:.+]] = fxla.mul %[[X]], %[[Y]] : tensor<3xi32>, tensor<3xf16> -> tensor<3xf16>
@case(operator.mul, t(3, dtype=I32), t(3, dtype=F16))
def mul_int_half(x, y):
    return x * y


# CHECK-LABEL: case operator.imul:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[Y:.+]]: tensor<3xf32>)
# CHECK:         %[[MUL:.+]] = fxla.mul %[[X]], %[[Y]] : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
@case(operator.imul, t(2, 3), t(3))
def imul(x, y):
    x *= y
    return x


# CHECK-LABEL: case torch.mul:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[Y:.+]]: tensor<2x1xf32>)
# CHECK:         %[[MUL:.+]] = fxla.mul %[[X]], %[[Y]] : tensor<2x3xf32>, tensor<2x1xf32> -> tensor<2x3xf32>
@case(torch.mul, t(2, 3), t(2, 1))
def torch_mul(x, y):
    return torch.mul(x, y)


# CHECK-LABEL: case Tensor.mul:
# CHECK:         func.func @main(%[[X:.+]]: tensor<6xi1>, %[[Y:.+]]: tensor<6xi1>)
# CHECK:         %[[MUL:.+]] = fxla.mul %[[X]], %[[Y]] : tensor<6xi1>, tensor<6xi1> -> tensor<6xi1>
@case(torch.Tensor.mul, t(6, dtype=BOOL), t(6, dtype=BOOL))
def tensor_mul_bool(x, y):
    return x.mul(y)


# CHECK-LABEL: case operator.truediv:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>, %[[Y:.+]]: tensor<3x4xi64>)
# CHECK:         %[[DIV:.+]] = fxla.div %[[X]], %[[Y]] : tensor<3x4xi64>, tensor<3x4xi64> -> tensor<3x4xf32>
@case(operator.truediv, t(3, 4, dtype=I64), t(3, 4, dtype=I64))
def int_div_int(x, y):
    return x / y


# CHECK-LABEL: case operator.itruediv:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<4xf32>)
# CHECK:         %[[DIV:.+]] = fxla.div %[[X]], %[[Y]] : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
@case(operator.itruediv, t(3, 4), t(4))
def itruediv(x, y):
    x /= y
    return x


# CHECK-LABEL: case torch.div:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4x5xf32>)
# CHECK:         %[[FLOOR_DIVIDE:.+]] = fxla.floor_divide %[[X]], %[[Y]] : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
@case(torch.div, t(4, 5), t(4, 5))
def div_floor(x, y):
    return torch.div(x, y, rounding_mode="floor")


# CHECK-LABEL: case torch.true_divide:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<3> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[DIV:.+]] = fxla.div %[[X]], %[[CONSTANT]] : tensor<3xi64>, tensor<i64> -> tensor<3xf32>
@case(torch.true_divide, t(3, dtype=I64))
def true_divide_scalar(x):
    return torch.true_divide(x, 3)


# CHECK-LABEL: case Tensor.div:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<3> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[FMOD:.+]] = fxla.fmod %[[X]], %[[CONSTANT]] : tensor<4x5xi64>, tensor<i64> -> tensor<4x5xi64>
# CHECK:         %[[FLOOR_DIVIDE:.+]] = fxla.floor_divide %{{.+}}, %[[CONSTANT]] : tensor<4x5xi64>, tensor<i64> -> tensor<4x5xi64>
# CHECK:         return %[[FLOOR_DIVIDE]] : tensor<4x5xi64>
@case(torch.Tensor.div, t(4, 5, dtype=I64))
def tensor_div_trunc(x):
    return x.div(3, rounding_mode="trunc")


# CHECK-LABEL: case Tensor.true_divide:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<4xf32>)
# CHECK:         %[[DIV:.+]] = fxla.div %[[X]], %[[Y]] : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
@case(torch.Tensor.true_divide, t(3, 4), t(4))
def tensor_true_divide(x, y):
    return x.true_divide(y)


# CHECK-LABEL: case torch.maximum:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi64>, %[[Y:.+]]: tensor<3xf32>)
# CHECK:         %[[MAXIMUM:.+]] = fxla.maximum %[[X]], %[[Y]] : tensor<3xi64>, tensor<3xf32> -> tensor<3xf32>
@case(torch.maximum, t(3, dtype=I64), t(3))
def maximum_int_float(x, y):
    return torch.maximum(x, y)


# CHECK-LABEL: case Tensor.maximum:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<4xf32>)
# CHECK:         %[[MAXIMUM:.+]] = fxla.maximum %[[X]], %[[Y]] : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
@case(torch.Tensor.maximum, t(3, 4), t(4))
def tensor_maximum(x, y):
    return x.maximum(y)


# CHECK-LABEL: case torch.minimum:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x1xf32>)
# CHECK:         %[[MINIMUM:.+]] = fxla.minimum %[[X]], %[[Y]] : tensor<3x4xf32>, tensor<3x1xf32> -> tensor<3x4xf32>
@case(torch.minimum, t(3, 4), t(3, 1))
def minimum(x, y):
    return torch.minimum(x, y)


# CHECK-LABEL: case Tensor.minimum:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xf32>)
# CHECK:         %[[MINIMUM:.+]] = fxla.minimum %[[X]], %[[Y]] : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.Tensor.minimum, t(3, 4), t(3, 4))
def tensor_minimum(x, y):
    return x.minimum(y)


# CHECK-LABEL: case operator.pow:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[POW:.+]] = fxla.pow %[[X]], %[[CONSTANT]] : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xf32>
@case(operator.pow, t(3, 4))
def pow_int_scalar(x):
    return x ** 2


# CHECK-LABEL: case torch.pow:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<4xf32>)
# CHECK:         %[[POW:.+]] = fxla.pow %[[X]], %[[Y]] : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
@case(torch.pow, t(3, 4), t(4))
def torch_pow_tensor(x, y):
    return torch.pow(x, y)


# CHECK-LABEL: case Tensor.pow:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[POW:.+]] = fxla.pow %[[X]], %[[CONSTANT]] : tensor<3x4xi64>, tensor<f32> -> tensor<3x4xf32>
@case(torch.Tensor.pow, t(3, 4, dtype=I64))
def tensor_pow_float_scalar(x):
    return x.pow(0.5)


# CHECK-LABEL: case operator.neg:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[NEG:.+]] = fxla.neg %[[X]] : tensor<3x4xi64> -> tensor<3x4xi64>
@case(operator.neg, t(3, 4, dtype=I64))
def neg_operator(x):
    return -x


# CHECK-LABEL: case torch.neg:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[NEG:.+]] = fxla.neg %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.neg, t(3, 4))
def neg(x):
    return torch.neg(x)


# CHECK-LABEL: case Tensor.neg:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xbf16>)
# CHECK:         %[[NEG:.+]] = fxla.neg %[[X]] : tensor<3xbf16> -> tensor<3xbf16>
@case(torch.Tensor.neg, t(3, dtype=BF16))
def tensor_neg(x):
    return x.neg()


# CHECK-LABEL: case operator.abs:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi32>)
# CHECK:         %[[ABS:.+]] = fxla.abs %[[X]] : tensor<3x4xi32> -> tensor<3x4xi32>
@case(operator.abs, t(3, 4, dtype=I32))
def abs_builtin(x):
    return abs(x)


# CHECK-LABEL: case torch.abs:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ABS:.+]] = fxla.abs %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.abs, t(3, 4))
def torch_abs(x):
    return torch.abs(x)


# CHECK-LABEL: case Tensor.abs:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xf16>)
# CHECK:         %[[ABS:.+]] = fxla.abs %[[X]] : tensor<3xf16> -> tensor<3xf16>
@case(torch.Tensor.abs, t(3, dtype=F16))
def tensor_abs(x):
    return x.abs()


# CHECK-LABEL: case torch.exp:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[EXP:.+]] = fxla.exp %[[X]] : tensor<3x4xi64> -> tensor<3x4xf32>
@case(torch.exp, t(3, 4, dtype=I64))
def exp_int(x):
    return torch.exp(x)


# CHECK-LABEL: case Tensor.exp:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xbf16>)
# CHECK:         %[[EXP:.+]] = fxla.exp %[[X]] : tensor<3x4xbf16> -> tensor<3x4xbf16>
@case(torch.Tensor.exp, t(3, 4, dtype=BF16))
def tensor_exp(x):
    return x.exp()


# CHECK-LABEL: case torch.log:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LOG:.+]] = fxla.log %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.log, t(3, 4))
def log(x):
    return torch.log(x)


# CHECK-LABEL: case Tensor.log:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi32>)
# CHECK:         %[[LOG:.+]] = fxla.log %[[X]] : tensor<3xi32> -> tensor<3xf32>
@case(torch.Tensor.log, t(3, dtype=I32))
def tensor_log_int(x):
    return x.log()


# CHECK-LABEL: case torch.sqrt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[SQRT:.+]] = fxla.sqrt %[[X]] : tensor<3x4xi64> -> tensor<3x4xf32>
@case(torch.sqrt, t(3, 4, dtype=I64))
def sqrt_int(x):
    return torch.sqrt(x)


# CHECK-LABEL: case Tensor.sqrt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SQRT:.+]] = fxla.sqrt %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.Tensor.sqrt, t(3, 4))
def tensor_sqrt(x):
    return x.sqrt()


# CHECK-LABEL: case torch.rsqrt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf16>)
# CHECK:         %[[RSQRT:.+]] = fxla.rsqrt %[[X]] : tensor<3x4xf16> -> tensor<3x4xf16>
@case(torch.rsqrt, t(3, 4, dtype=F16))
def rsqrt(x):
    return torch.rsqrt(x)


# CHECK-LABEL: case Tensor.rsqrt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[RSQRT:.+]] = fxla.rsqrt %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.Tensor.rsqrt, t(3, 4))
def tensor_rsqrt(x):
    return x.rsqrt()


# a CPU autocast region the forward enters: the matmul's float operands are cast to bfloat16 first
# CHECK-LABEL: case fxla.frontend.autocast.autocast_cast:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[W:.+]]: tensor<4x5xf32>)
# CHECK:         %[[XB:.+]] = fxla.convert %[[X]] : tensor<3x4xf32> -> tensor<3x4xbf16>
# CHECK:         %[[WB:.+]] = fxla.convert %[[W]] : tensor<4x5xf32> -> tensor<4x5xbf16>
# CHECK:         fxla.matmul %[[XB]], %[[WB]] : tensor<3x4xbf16>, tensor<4x5xbf16> -> tensor<3x5xbf16>
@case(autocast_cast.__wrapped__, t(3, 4), t(4, 5))
def autocast_region(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return x @ w
