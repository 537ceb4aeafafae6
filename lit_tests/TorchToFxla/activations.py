# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `activations` (lowering/rules/activations.py): elementwise math beyond arithmetic --
# rounding, trigonometry, logical and bitwise ops, integer division modes, clamp -- and the nn activations
# (functions, Tensor methods and nn modules) -- one case per op object of fxla.lowering.RULES; the checks show
# broadcasting, dtype promotion (integer inputs of float functions become float32), scalar operands as torch
# defines them and each module's constructor arguments as attributes.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

from fxla.testing import case, t

BF16, BOOL, F16, I32, I64, U8 = torch.bfloat16, torch.bool, torch.float16, torch.int32, torch.int64, torch.uint8


# CHECK-LABEL: case torch.nn.functional.silu:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SILU:.+]] = fxla.silu %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(F.silu, t(3, 4))
def silu(x):
    return F.silu(x)


# CHECK-LABEL: case torch.nn.SiLU:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xbf16>)
# CHECK:         %[[SILU:.+]] = fxla.silu %[[X]] : tensor<3x4xbf16> -> tensor<3x4xbf16>
@case(nn.SiLU, t(3, 4, dtype=BF16))
def silu_module():
    return nn.SiLU()


# CHECK-LABEL: case torch.nn.functional.mish:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[MISH:.+]] = fxla.mish %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(F.mish, t(3, 4))
def mish(x):
    return F.mish(x)


# CHECK-LABEL: case torch.nn.Mish:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[MISH:.+]] = fxla.mish %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(nn.Mish, t(3, 4))
def mish_module():
    return nn.Mish()


# CHECK-LABEL: case torch.nn.functional.hardswish:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[HARDSWISH:.+]] = fxla.hardswish %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(F.hardswish, t(3, 4))
def hardswish(x):
    return F.hardswish(x)


# CHECK-LABEL: case torch.nn.Hardswish:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[HARDSWISH:.+]] = fxla.hardswish %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(nn.Hardswish, t(3, 4))
def hardswish_module():
    return nn.Hardswish()


# CHECK-LABEL: case torch.nn.functional.hardsigmoid:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[HARDSIGMOID:.+]] = fxla.hardsigmoid %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(F.hardsigmoid, t(3, 4))
def hardsigmoid(x):
    return F.hardsigmoid(x)


# CHECK-LABEL: case torch.nn.Hardsigmoid:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[HARDSIGMOID:.+]] = fxla.hardsigmoid %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(nn.Hardsigmoid, t(3, 4))
def hardsigmoid_module():
    return nn.Hardsigmoid()


# CHECK-LABEL: case torch.nn.functional.logsigmoid:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LOGSIGMOID:.+]] = fxla.logsigmoid %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(F.logsigmoid, t(3, 4))
def logsigmoid(x):
    return F.logsigmoid(x)


# CHECK-LABEL: case torch.nn.LogSigmoid:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LOGSIGMOID:.+]] = fxla.logsigmoid %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(nn.LogSigmoid, t(3, 4))
def logsigmoid_module():
    return nn.LogSigmoid()


# CHECK-LABEL: case torch.nn.functional.relu6:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CONSTANT_2:.+]] = fxla.constant {value = dense<6.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CLAMP:.+]] = fxla.clamp %[[X]], min %[[CONSTANT]], max %[[CONSTANT_2]] : tensor<3x4xf32>, tensor<f32>, tensor<f32> -> tensor<3x4xf32>
@case(F.relu6, t(3, 4))
def relu6(x):
    return F.relu6(x)


# CHECK-LABEL: case torch.nn.ReLU6:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CONSTANT_2:.+]] = fxla.constant {value = dense<6.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CLAMP:.+]] = fxla.clamp %[[X]], min %[[CONSTANT]], max %[[CONSTANT_2]] : tensor<3x4xf32>, tensor<f32>, tensor<f32> -> tensor<3x4xf32>
@case(nn.ReLU6, t(3, 4))
def relu6_module():
    return nn.ReLU6()


# CHECK-LABEL: case torch.nn.functional.hardtanh:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<-2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CONSTANT_2:.+]] = fxla.constant {value = dense<3.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CLAMP:.+]] = fxla.clamp %[[X]], min %[[CONSTANT]], max %[[CONSTANT_2]] : tensor<3x4xf32>, tensor<f32>, tensor<f32> -> tensor<3x4xf32>
@case(F.hardtanh, t(3, 4))
def hardtanh(x):
    return F.hardtanh(x, -2.0, 3.0)


# CHECK-LABEL: case torch.nn.Hardtanh:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<-5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CONSTANT_2:.+]] = fxla.constant {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CLAMP:.+]] = fxla.clamp %[[X]], min %[[CONSTANT]], max %[[CONSTANT_2]] : tensor<3x4xf32>, tensor<f32>, tensor<f32> -> tensor<3x4xf32>
@case(nn.Hardtanh, t(3, 4))
def hardtanh_module():
    return nn.Hardtanh(-0.5, 0.5)


# CHECK-LABEL: case torch.nn.functional.leaky_relu:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LEAKY_RELU:.+]] = fxla.leaky_relu %[[X]] {negative_slope = 2.000000e-01} : tensor<3x4xf32> -> tensor<3x4xf32>
@case(F.leaky_relu, t(3, 4))
def leaky_relu(x):
    return F.leaky_relu(x, 0.2)


# CHECK-LABEL: case torch.nn.LeakyReLU:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LEAKY_RELU:.+]] = fxla.leaky_relu %[[X]] {negative_slope = 1.000000e-01} : tensor<3x4xf32> -> tensor<3x4xf32>
@case(nn.LeakyReLU, t(3, 4))
def leaky_relu_module():
    return nn.LeakyReLU(0.1)


# CHECK-LABEL: case torch.nn.functional.elu:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ELU:.+]] = fxla.elu %[[X]] {alpha = 5.000000e-01} : tensor<3x4xf32> -> tensor<3x4xf32>
@case(F.elu, t(3, 4))
def elu(x):
    return F.elu(x, alpha=0.5)


# CHECK-LABEL: case torch.nn.ELU:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ELU:.+]] = fxla.elu %[[X]] {alpha = 2.000000e+00} : tensor<3x4xf32> -> tensor<3x4xf32>
@case(nn.ELU, t(3, 4))
def elu_module():
    return nn.ELU(alpha=2.0)


# CHECK-LABEL: case torch.nn.functional.softplus:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SOFTPLUS:.+]] = fxla.softplus %[[X]] {beta = 2.000000e+00, threshold = 1.000000e+01} : tensor<3x4xf32> -> tensor<3x4xf32>
@case(F.softplus, t(3, 4))
def softplus(x):
    return F.softplus(x, beta=2.0, threshold=10.0)


# CHECK-LABEL: case torch.nn.Softplus:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SOFTPLUS:.+]] = fxla.softplus %[[X]] {beta = 5.000000e-01, threshold = 2.000000e+01} : tensor<3x4xf32> -> tensor<3x4xf32>
@case(nn.Softplus, t(3, 4))
def softplus_module():
    return nn.Softplus(beta=0.5)


# CHECK-LABEL: case torch.clamp:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<-5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CONSTANT_2:.+]] = fxla.constant {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CLAMP:.+]] = fxla.clamp %[[X]], min %[[CONSTANT]], max %[[CONSTANT_2]] : tensor<3x4xf32>, tensor<f32>, tensor<f32> -> tensor<3x4xf32>
@case(torch.clamp, t(3, 4))
def clamp(x):
    return torch.clamp(x, -0.5, 0.5)


# CHECK-LABEL: case Tensor.clamp:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CLAMP:.+]] = fxla.clamp %[[X]], min %[[CONSTANT]] : tensor<3x4xi64>, tensor<f32> -> tensor<3x4xf32>
@case(torch.Tensor.clamp, t(3, 4, dtype=I64))
def tensor_clamp_float_bound(x):
    return x.clamp(min=0.5)


# CHECK-LABEL: case torch.clip:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[LO:.+]]: tensor<4xf32>, %[[HI:.+]]: tensor<3x1xf32>)
# CHECK:         %[[CLAMP:.+]] = fxla.clamp %[[X]], min %[[LO]], max %[[HI]] : tensor<3x4xf32>, tensor<4xf32>, tensor<3x1xf32> -> tensor<3x4xf32>
@case(torch.clip, t(3, 4), t(4), t(3, 1))
def clip_tensor_bounds(x, lo, hi):
    return torch.clip(x, lo, hi)


# CHECK-LABEL: case Tensor.clip:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<2> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[CLAMP:.+]] = fxla.clamp %[[X]], max %[[CONSTANT]] : tensor<3x4xi64>, tensor<i64> -> tensor<3x4xi64>
@case(torch.Tensor.clip, t(3, 4, dtype=I64))
def tensor_clip(x):
    return x.clip(max=2)


# CHECK-LABEL: case torch.clamp_min:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CLAMP:.+]] = fxla.clamp %[[X]], min %[[CONSTANT]] : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xf32>
@case(torch.clamp_min, t(3, 4))
def clamp_min(x):
    return torch.clamp_min(x, 0.0)


# CHECK-LABEL: case Tensor.clamp_min:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<1> : tensor<i32>} : () -> tensor<i32>
# CHECK:         %[[CLAMP:.+]] = fxla.clamp %[[X]], min %[[CONSTANT]] : tensor<3x4xi32>, tensor<i32> -> tensor<3x4xi32>
@case(torch.Tensor.clamp_min, t(3, 4, dtype=I32))
def tensor_clamp_min(x):
    return x.clamp_min(1)


# CHECK-LABEL: case torch.clamp_max:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf16>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<6.000000e+00> : tensor<f16>} : () -> tensor<f16>
# CHECK:         %[[CLAMP:.+]] = fxla.clamp %[[X]], max %[[CONSTANT]] : tensor<3x4xf16>, tensor<f16> -> tensor<3x4xf16>
@case(torch.clamp_max, t(3, 4, dtype=F16))
def clamp_max(x):
    return torch.clamp_max(x, 6.0)


# CHECK-LABEL: case Tensor.clamp_max:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[HI:.+]]: tensor<4xf32>)
# CHECK:         %[[CLAMP:.+]] = fxla.clamp %[[X]], max %[[HI]] : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
@case(torch.Tensor.clamp_max, t(3, 4), t(4))
def tensor_clamp_max_tensor(x, hi):
    return x.clamp_max(hi)


# CHECK-LABEL: case torch.floor_divide:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>, %[[Y:.+]]: tensor<5xi64>)
# CHECK:         %[[FLOOR_DIVIDE:.+]] = fxla.floor_divide %[[X]], %[[Y]] : tensor<4x5xi64>, tensor<5xi64> -> tensor<4x5xi64>
@case(torch.floor_divide, t(4, 5, dtype=I64), t(5, dtype=I64))
def floor_divide(x, y):
    return torch.floor_divide(x, y)


# CHECK-LABEL: case Tensor.floor_divide:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[FLOOR_DIVIDE:.+]] = fxla.floor_divide %[[X]], %[[CONSTANT]] : tensor<4x5xf32>, tensor<f32> -> tensor<4x5xf32>
@case(torch.Tensor.floor_divide, t(4, 5))
def tensor_floor_divide(x):
    return x.floor_divide(2)


# CHECK-LABEL: case operator.floordiv:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4x5xf32>)
# CHECK:         %[[FLOOR_DIVIDE:.+]] = fxla.floor_divide %[[X]], %[[Y]] : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
@case(operator.floordiv, t(4, 5), t(4, 5))
def floordiv(x, y):
    return x // y


# CHECK-LABEL: case torch.remainder:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>, %[[Y:.+]]: tensor<4x5xi64>)
# CHECK:         %[[REMAINDER:.+]] = fxla.remainder %[[X]], %[[Y]] : tensor<4x5xi64>, tensor<4x5xi64> -> tensor<4x5xi64>
@case(torch.remainder, t(4, 5, dtype=I64), t(4, 5, dtype=I64))
def remainder(x, y):
    return torch.remainder(x, y)


# CHECK-LABEL: case Tensor.remainder:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<1.500000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[REMAINDER:.+]] = fxla.remainder %[[X]], %[[CONSTANT]] : tensor<4x5xf32>, tensor<f32> -> tensor<4x5xf32>
@case(torch.Tensor.remainder, t(4, 5))
def tensor_remainder(x):
    return x.remainder(1.5)


# CHECK-LABEL: case operator.mod:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<5xf32>)
# CHECK:         %[[REMAINDER:.+]] = fxla.remainder %[[X]], %[[Y]] : tensor<4x5xf32>, tensor<5xf32> -> tensor<4x5xf32>
@case(operator.mod, t(4, 5), t(5))
def mod(x, y):
    return x % y


# CHECK-LABEL: case torch.fmod:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4x5xf32>)
# CHECK:         %[[FMOD:.+]] = fxla.fmod %[[X]], %[[Y]] : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
@case(torch.fmod, t(4, 5), t(4, 5))
def fmod(x, y):
    return torch.fmod(x, y)


# CHECK-LABEL: case Tensor.fmod:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<3> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[FMOD:.+]] = fxla.fmod %[[X]], %[[CONSTANT]] : tensor<4x5xi64>, tensor<i64> -> tensor<4x5xi64>
@case(torch.Tensor.fmod, t(4, 5, dtype=I64))
def tensor_fmod(x):
    return x.fmod(3)


# CHECK-LABEL: case torch.logical_and:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<4xi1>)
# CHECK:         %[[LOGICAL_AND:.+]] = fxla.logical_and %[[X]], %[[Y]] : tensor<3x4xf32>, tensor<4xi1> -> tensor<3x4xi1>
@case(torch.logical_and, t(3, 4), t(4, dtype=BOOL))
def logical_and(x, y):
    return torch.logical_and(x, y)


# CHECK-LABEL: case Tensor.logical_and:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi64>, %[[Y:.+]]: tensor<3xi64>)
# CHECK:         %[[LOGICAL_AND:.+]] = fxla.logical_and %[[X]], %[[Y]] : tensor<3xi64>, tensor<3xi64> -> tensor<3xi1>
@case(torch.Tensor.logical_and, t(3, dtype=I64), t(3, dtype=I64))
def tensor_logical_and(x, y):
    return x.logical_and(y)


# CHECK-LABEL: case torch.logical_or:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi1>, %[[Y:.+]]: tensor<3x4xi1>)
# CHECK:         %[[LOGICAL_OR:.+]] = fxla.logical_or %[[X]], %[[Y]] : tensor<3x4xi1>, tensor<3x4xi1> -> tensor<3x4xi1>
@case(torch.logical_or, t(3, 4, dtype=BOOL), t(3, 4, dtype=BOOL))
def logical_or(x, y):
    return torch.logical_or(x, y)


# CHECK-LABEL: case Tensor.logical_or:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LOGICAL_OR:.+]] = fxla.logical_or %[[X]], %[[Y]] : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xi1>
@case(torch.Tensor.logical_or, t(3, 4), t(3, 4))
def tensor_logical_or(x, y):
    return x.logical_or(y)


# CHECK-LABEL: case torch.logical_xor:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xi64>)
# CHECK:         %[[LOGICAL_XOR:.+]] = fxla.logical_xor %[[X]], %[[Y]] : tensor<3x4xf32>, tensor<3x4xi64> -> tensor<3x4xi1>
@case(torch.logical_xor, t(3, 4), t(3, 4, dtype=I64))
def logical_xor(x, y):
    return torch.logical_xor(x, y)


# CHECK-LABEL: case Tensor.logical_xor:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi1>, %[[Y:.+]]: tensor<3xi1>)
# CHECK:         %[[LOGICAL_XOR:.+]] = fxla.logical_xor %[[X]], %[[Y]] : tensor<3xi1>, tensor<3xi1> -> tensor<3xi1>
@case(torch.Tensor.logical_xor, t(3, dtype=BOOL), t(3, dtype=BOOL))
def tensor_logical_xor(x, y):
    return x.logical_xor(y)


# A real tensor left of `&`, `|`, `^` calls its dunder method with the traced one (Hugging Face's masking_utils).
# CHECK-LABEL: case Tensor.__and__:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi1>, %[[C:.+]]: tensor<3xi1> {fxla.param = "_tensor_constant0"})
# CHECK:         fxla.bitwise_and %[[C]], %[[X]] : tensor<3xi1>, tensor<3xi1> -> tensor<3xi1>
@case(torch.Tensor.__and__, t(3, dtype=BOOL))
def dunder_and(x):
    return torch.tensor([True, False, True]) & x


# CHECK-LABEL: case Tensor.__or__:
# CHECK:         fxla.bitwise_or %{{.+}}, %{{.+}} : tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
@case(torch.Tensor.__or__, t(3, dtype=I64))
def dunder_or(x):
    return torch.tensor([1, 0, 3]) | x


# CHECK-LABEL: case Tensor.__xor__:
# CHECK:         fxla.bitwise_xor %{{.+}}, %{{.+}} : tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
@case(torch.Tensor.__xor__, t(3, dtype=I64))
def dunder_xor(x):
    return torch.tensor([5, 6, 7]) ^ x


# CHECK-LABEL: case torch.bitwise_and:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>, %[[Y:.+]]: tensor<4xi64>)
# CHECK:         %[[BITWISE_AND:.+]] = fxla.bitwise_and %[[X]], %[[Y]] : tensor<3x4xi64>, tensor<4xi64> -> tensor<3x4xi64>
@case(torch.bitwise_and, t(3, 4, dtype=I64), t(4, dtype=I64))
def bitwise_and(x, y):
    return torch.bitwise_and(x, y)


# CHECK-LABEL: case Tensor.bitwise_and:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi1>, %[[Y:.+]]: tensor<3xi1>)
# CHECK:         %[[BITWISE_AND:.+]] = fxla.bitwise_and %[[X]], %[[Y]] : tensor<3xi1>, tensor<3xi1> -> tensor<3xi1>
@case(torch.Tensor.bitwise_and, t(3, dtype=BOOL), t(3, dtype=BOOL))
def tensor_bitwise_and(x, y):
    return x.bitwise_and(y)


# CHECK-LABEL: case operator.and_:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi32>, %[[Y:.+]]: tensor<3xi64>)
# CHECK:         %[[BITWISE_AND:.+]] = fxla.bitwise_and %[[X]], %[[Y]] : tensor<3xi32>, tensor<3xi64> -> tensor<3xi64>
@case(operator.and_, t(3, dtype=I32), t(3, dtype=I64))
def and_(x, y):
    return x & y


# CHECK-LABEL: case torch.bitwise_or:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi32>, %[[Y:.+]]: tensor<3x4xi32>)
# CHECK:         %[[BITWISE_OR:.+]] = fxla.bitwise_or %[[X]], %[[Y]] : tensor<3x4xi32>, tensor<3x4xi32> -> tensor<3x4xi32>
@case(torch.bitwise_or, t(3, 4, dtype=I32), t(3, 4, dtype=I32))
def bitwise_or(x, y):
    return torch.bitwise_or(x, y)


# CHECK-LABEL: case Tensor.bitwise_or:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<6> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[BITWISE_OR:.+]] = fxla.bitwise_or %[[X]], %[[CONSTANT]] : tensor<3xi64>, tensor<i64> -> tensor<3xi64>
@case(torch.Tensor.bitwise_or, t(3, dtype=I64))
def tensor_bitwise_or_scalar(x):
    return x.bitwise_or(6)


# CHECK-LABEL: case operator.or_:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi1>, %[[Y:.+]]: tensor<3xi1>)
# CHECK:         %[[BITWISE_OR:.+]] = fxla.bitwise_or %[[X]], %[[Y]] : tensor<3xi1>, tensor<3xi1> -> tensor<3xi1>
@case(operator.or_, t(3, dtype=BOOL), t(3, dtype=BOOL))
def or_(x, y):
    return x | y


# CHECK-LABEL: case torch.bitwise_xor:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>, %[[Y:.+]]: tensor<3x4xi64>)
# CHECK:         %[[BITWISE_XOR:.+]] = fxla.bitwise_xor %[[X]], %[[Y]] : tensor<3x4xi64>, tensor<3x4xi64> -> tensor<3x4xi64>
@case(torch.bitwise_xor, t(3, 4, dtype=I64), t(3, 4, dtype=I64))
def bitwise_xor(x, y):
    return torch.bitwise_xor(x, y)


# CHECK-LABEL: case Tensor.bitwise_xor:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi1>, %[[Y:.+]]: tensor<3xi1>)
# CHECK:         %[[BITWISE_XOR:.+]] = fxla.bitwise_xor %[[X]], %[[Y]] : tensor<3xi1>, tensor<3xi1> -> tensor<3xi1>
@case(torch.Tensor.bitwise_xor, t(3, dtype=BOOL), t(3, dtype=BOOL))
def tensor_bitwise_xor(x, y):
    return x.bitwise_xor(y)


# CHECK-LABEL: case operator.xor:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xi64>, %[[Y:.+]]: tensor<3xi64>)
# CHECK:         %[[BITWISE_XOR:.+]] = fxla.bitwise_xor %[[X]], %[[Y]] : tensor<2x3xi64>, tensor<3xi64> -> tensor<2x3xi64>
@case(operator.xor, t(2, 3, dtype=I64), t(3, dtype=I64))
def xor(x, y):
    return x ^ y


# CHECK-LABEL: case torch.floor:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[FLOOR:.+]] = fxla.floor %[[X]] : tensor<4x5xf32> -> tensor<4x5xf32>
@case(torch.floor, t(4, 5))
def floor(x):
    return torch.floor(x)


# CHECK-LABEL: case Tensor.floor:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>)
# CHECK:         %[[FLOOR:.+]] = fxla.floor %[[X]] : tensor<4x5xi64> -> tensor<4x5xi64>
@case(torch.Tensor.floor, t(4, 5, dtype=I64))
def tensor_floor_int(x):
    return x.floor()


# CHECK-LABEL: case torch.ceil:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[CEIL:.+]] = fxla.ceil %[[X]] : tensor<4x5xf32> -> tensor<4x5xf32>
@case(torch.ceil, t(4, 5))
def ceil(x):
    return torch.ceil(x)


# CHECK-LABEL: case Tensor.ceil:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xbf16>)
# CHECK:         %[[CEIL:.+]] = fxla.ceil %[[X]] : tensor<4x5xbf16> -> tensor<4x5xbf16>
@case(torch.Tensor.ceil, t(4, 5, dtype=BF16))
def tensor_ceil(x):
    return x.ceil()


# CHECK-LABEL: case torch.trunc:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[TRUNC:.+]] = fxla.trunc %[[X]] : tensor<4x5xf32> -> tensor<4x5xf32>
@case(torch.trunc, t(4, 5))
def trunc(x):
    return torch.trunc(x)


# CHECK-LABEL: case Tensor.trunc:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf16>)
# CHECK:         %[[TRUNC:.+]] = fxla.trunc %[[X]] : tensor<4x5xf16> -> tensor<4x5xf16>
@case(torch.Tensor.trunc, t(4, 5, dtype=F16))
def tensor_trunc(x):
    return x.trunc()


# CHECK-LABEL: case torch.fix:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[TRUNC:.+]] = fxla.trunc %[[X]] : tensor<4x5xf32> -> tensor<4x5xf32>
@case(torch.fix, t(4, 5))
def fix(x):
    return torch.fix(x)


# CHECK-LABEL: case Tensor.fix:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>)
# CHECK:         %[[TRUNC:.+]] = fxla.trunc %[[X]] : tensor<4x5xi64> -> tensor<4x5xi64>
@case(torch.Tensor.fix, t(4, 5, dtype=I64))
def tensor_fix_int(x):
    return x.fix()


# CHECK-LABEL: case torch.round:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[ROUND:.+]] = fxla.round %[[X]] {decimals = 0} : tensor<4x5xf32> -> tensor<4x5xf32>
@case(torch.round, t(4, 5))
def round_half_even(x):
    return torch.round(x)


# CHECK-LABEL: case Tensor.round:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[ROUND:.+]] = fxla.round %[[X]] {decimals = 1} : tensor<4x5xf32> -> tensor<4x5xf32>
@case(torch.Tensor.round, t(4, 5))
def tensor_round_decimals(x):
    return x.round(decimals=1)


# CHECK-LABEL: case torch.sign:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SIGN:.+]] = fxla.sign %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.sign, t(3, 4))
def sign(x):
    return torch.sign(x)


# CHECK-LABEL: case Tensor.sign:
# CHECK:         func.func @main(%[[X:.+]]: tensor<6xi1>)
# CHECK:         %[[SIGN:.+]] = fxla.sign %[[X]] : tensor<6xi1> -> tensor<6xi1>
@case(torch.Tensor.sign, t(6, dtype=BOOL))
def tensor_sign_bool(x):
    return x.sign()


# CHECK-LABEL: case torch.reciprocal:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[RECIPROCAL:.+]] = fxla.reciprocal %[[X]] : tensor<3x4xi64> -> tensor<3x4xf32>
@case(torch.reciprocal, t(3, 4, dtype=I64))
def reciprocal_int(x):
    return torch.reciprocal(x)


# CHECK-LABEL: case Tensor.reciprocal:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[RECIPROCAL:.+]] = fxla.reciprocal %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.Tensor.reciprocal, t(3, 4))
def tensor_reciprocal(x):
    return x.reciprocal()


# CHECK-LABEL: case torch.sin:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SIN:.+]] = fxla.sin %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.sin, t(3, 4))
def sin(x):
    return torch.sin(x)


# CHECK-LABEL: case Tensor.sin:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi32>)
# CHECK:         %[[SIN:.+]] = fxla.sin %[[X]] : tensor<3x4xi32> -> tensor<3x4xf32>
@case(torch.Tensor.sin, t(3, 4, dtype=I32))
def tensor_sin_int(x):
    return x.sin()


# CHECK-LABEL: case torch.cos:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[COS:.+]] = fxla.cos %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.cos, t(3, 4))
def cos(x):
    return torch.cos(x)


# CHECK-LABEL: case Tensor.cos:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xbf16>)
# CHECK:         %[[COS:.+]] = fxla.cos %[[X]] : tensor<3x4xbf16> -> tensor<3x4xbf16>
@case(torch.Tensor.cos, t(3, 4, dtype=BF16))
def tensor_cos(x):
    return x.cos()


# CHECK-LABEL: case torch.tan:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[TAN:.+]] = fxla.tan %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.tan, t(3, 4))
def tan(x):
    return torch.tan(x)


# CHECK-LABEL: case Tensor.tan:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[TAN:.+]] = fxla.tan %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.Tensor.tan, t(3, 4))
def tensor_tan(x):
    return x.tan()


# CHECK-LABEL: case torch.erf:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ERF:.+]] = fxla.erf %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.erf, t(3, 4))
def erf(x):
    return torch.erf(x)


# CHECK-LABEL: case Tensor.erf:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[ERF:.+]] = fxla.erf %[[X]] : tensor<3x4xi64> -> tensor<3x4xf32>
@case(torch.Tensor.erf, t(3, 4, dtype=I64))
def tensor_erf_int(x):
    return x.erf()


# CHECK-LABEL: case torch.special.erf:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf16>)
# CHECK:         %[[ERF:.+]] = fxla.erf %[[X]] : tensor<3x4xf16> -> tensor<3x4xf16>
@case(torch.special.erf, t(3, 4, dtype=F16))
def special_erf(x):
    return torch.special.erf(x)


# CHECK-LABEL: case torch.log1p:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LOG1P:.+]] = fxla.log1p %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.log1p, t(3, 4))
def log1p(x):
    return torch.log1p(x)


# CHECK-LABEL: case Tensor.log1p:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LOG1P:.+]] = fxla.log1p %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.Tensor.log1p, t(3, 4))
def tensor_log1p(x):
    return x.log1p()


# CHECK-LABEL: case torch.expm1:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[EXPM1:.+]] = fxla.expm1 %[[X]] : tensor<3x4xi64> -> tensor<3x4xf32>
@case(torch.expm1, t(3, 4, dtype=I64))
def expm1_int(x):
    return torch.expm1(x)


# CHECK-LABEL: case Tensor.expm1:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[EXPM1:.+]] = fxla.expm1 %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.Tensor.expm1, t(3, 4))
def tensor_expm1(x):
    return x.expm1()


# CHECK-LABEL: case torch.square:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<2> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[POW:.+]] = fxla.pow %[[X]], %[[CONSTANT]] : tensor<3x4xi64>, tensor<i64> -> tensor<3x4xi64>
@case(torch.square, t(3, 4, dtype=I64))
def square_int(x):
    return torch.square(x)


# CHECK-LABEL: case Tensor.square:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[POW:.+]] = fxla.pow %[[X]], %[[CONSTANT]] : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xf32>
@case(torch.Tensor.square, t(3, 4))
def tensor_square(x):
    return x.square()


# CHECK-LABEL: case torch.logical_not:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LOGICAL_NOT:.+]] = fxla.logical_not %[[X]] : tensor<3x4xf32> -> tensor<3x4xi1>
@case(torch.logical_not, t(3, 4))
def logical_not(x):
    return torch.logical_not(x)


# CHECK-LABEL: case Tensor.logical_not:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi64>)
# CHECK:         %[[LOGICAL_NOT:.+]] = fxla.logical_not %[[X]] : tensor<3xi64> -> tensor<3xi1>
@case(torch.Tensor.logical_not, t(3, dtype=I64))
def tensor_logical_not(x):
    return x.logical_not()


# CHECK-LABEL: case torch.bitwise_not:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[BITWISE_NOT:.+]] = fxla.bitwise_not %[[X]] : tensor<3x4xi64> -> tensor<3x4xi64>
@case(torch.bitwise_not, t(3, 4, dtype=I64))
def bitwise_not(x):
    return torch.bitwise_not(x)


# CHECK-LABEL: case Tensor.bitwise_not:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xui8>)
# CHECK:         %[[BITWISE_NOT:.+]] = fxla.bitwise_not %[[X]] : tensor<3xui8> -> tensor<3xui8>
@case(torch.Tensor.bitwise_not, t(3, dtype=U8))
def tensor_bitwise_not_u8(x):
    return x.bitwise_not()


# CHECK-LABEL: case operator.invert:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi1>)
# CHECK:         %[[BITWISE_NOT:.+]] = fxla.bitwise_not %[[X]] : tensor<3xi1> -> tensor<3xi1>
@case(operator.invert, t(3, dtype=BOOL))
def invert_bool(x):
    return ~x
