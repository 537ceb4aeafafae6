# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla: activations (functions, Tensor methods and nn modules), softmax and log_softmax -- one case per
# op object of fxla.lowering.RULES; the checks show each module's constructor arguments as attributes.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
import torch.nn as nn
import torch.nn.functional as F
from fxla import wrap
from fxla.testing import case, t

I64, BF16, F16 = torch.int64, torch.bfloat16, torch.float16


# CHECK-LABEL: case torch.relu:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[RELU:.+]] = "fxla.relu"(%[[X]]) : (tensor<3x4xi64>) -> tensor<3x4xi64>
@case(torch.relu, t(3, 4, dtype=I64))
def relu_int(x):
    return torch.relu(x)


# CHECK-LABEL: case torch.nn.functional.relu:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[RELU:.+]] = "fxla.relu"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(F.relu, t(3, 4))
def f_relu(x):
    return F.relu(x)


# CHECK-LABEL: case Tensor.relu:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xbf16>)
# CHECK:         %[[RELU:.+]] = "fxla.relu"(%[[X]]) : (tensor<3x4xbf16>) -> tensor<3x4xbf16>
@case(torch.Tensor.relu, t(3, 4, dtype=BF16))
def tensor_relu(x):
    return x.relu()


# CHECK-LABEL: case torch.nn.ReLU:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[RELU:.+]] = "fxla.relu"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(nn.ReLU, t(3, 4))
def relu_module():
    return nn.ReLU()


# CHECK-LABEL: case torch.nn.functional.gelu:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[GELU:.+]] = "fxla.gelu"(%[[X]]) {approximate = "tanh"} : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(F.gelu, t(3, 4))
def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


# CHECK-LABEL: case torch.nn.GELU:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[GELU:.+]] = "fxla.gelu"(%[[X]]) {approximate = "none"} : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(nn.GELU, t(3, 4))
def gelu_module():
    return nn.GELU()


# CHECK-LABEL: case torch.tanh:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[TANH:.+]] = "fxla.tanh"(%[[X]]) : (tensor<3x4xi64>) -> tensor<3x4xf32>
@case(torch.tanh, t(3, 4, dtype=I64))
def tanh_int(x):
    return torch.tanh(x)


# CHECK-LABEL: case torch.nn.functional.tanh:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[TANH:.+]] = "fxla.tanh"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(F.tanh, t(3, 4))
def f_tanh(x):
    return wrap(F.tanh)(x)    # F.tanh has no torch-function hook: wrap records it as a leaf


# CHECK-LABEL: case Tensor.tanh:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf16>)
# CHECK:         %[[TANH:.+]] = "fxla.tanh"(%[[X]]) : (tensor<3x4xf16>) -> tensor<3x4xf16>
@case(torch.Tensor.tanh, t(3, 4, dtype=F16))
def tensor_tanh(x):
    return x.tanh()


# CHECK-LABEL: case torch.nn.Tanh:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[TANH:.+]] = "fxla.tanh"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(nn.Tanh, t(3, 4))
def tanh_module():
    return nn.Tanh()


# CHECK-LABEL: case torch.sigmoid:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SIGMOID:.+]] = "fxla.sigmoid"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(torch.sigmoid, t(3, 4))
def sigmoid(x):
    return torch.sigmoid(x)


# CHECK-LABEL: case torch.nn.functional.sigmoid:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SIGMOID:.+]] = "fxla.sigmoid"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(F.sigmoid, t(3, 4))
def f_sigmoid(x):
    return wrap(F.sigmoid)(x)


# CHECK-LABEL: case Tensor.sigmoid:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[SIGMOID:.+]] = "fxla.sigmoid"(%[[X]]) : (tensor<3x4xi64>) -> tensor<3x4xf32>
@case(torch.Tensor.sigmoid, t(3, 4, dtype=I64))
def tensor_sigmoid_int(x):
    return x.sigmoid()


# CHECK-LABEL: case torch.nn.Sigmoid:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SIGMOID:.+]] = "fxla.sigmoid"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(nn.Sigmoid, t(3, 4))
def sigmoid_module():
    return nn.Sigmoid()


# CHECK-LABEL: case torch.nn.functional.silu:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SILU:.+]] = "fxla.silu"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(F.silu, t(3, 4))
def silu(x):
    return F.silu(x)


# CHECK-LABEL: case torch.nn.SiLU:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xbf16>)
# CHECK:         %[[SILU:.+]] = "fxla.silu"(%[[X]]) : (tensor<3x4xbf16>) -> tensor<3x4xbf16>
@case(nn.SiLU, t(3, 4, dtype=BF16))
def silu_module():
    return nn.SiLU()


# CHECK-LABEL: case torch.nn.functional.mish:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[MISH:.+]] = "fxla.mish"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(F.mish, t(3, 4))
def mish(x):
    return F.mish(x)


# CHECK-LABEL: case torch.nn.Mish:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[MISH:.+]] = "fxla.mish"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(nn.Mish, t(3, 4))
def mish_module():
    return nn.Mish()


# CHECK-LABEL: case torch.nn.functional.hardswish:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[HARDSWISH:.+]] = "fxla.hardswish"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(F.hardswish, t(3, 4))
def hardswish(x):
    return F.hardswish(x)


# CHECK-LABEL: case torch.nn.Hardswish:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[HARDSWISH:.+]] = "fxla.hardswish"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(nn.Hardswish, t(3, 4))
def hardswish_module():
    return nn.Hardswish()


# CHECK-LABEL: case torch.nn.functional.hardsigmoid:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[HARDSIGMOID:.+]] = "fxla.hardsigmoid"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(F.hardsigmoid, t(3, 4))
def hardsigmoid(x):
    return F.hardsigmoid(x)


# CHECK-LABEL: case torch.nn.Hardsigmoid:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[HARDSIGMOID:.+]] = "fxla.hardsigmoid"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(nn.Hardsigmoid, t(3, 4))
def hardsigmoid_module():
    return nn.Hardsigmoid()


# CHECK-LABEL: case torch.nn.functional.logsigmoid:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LOGSIGMOID:.+]] = "fxla.logsigmoid"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(F.logsigmoid, t(3, 4))
def logsigmoid(x):
    return F.logsigmoid(x)


# CHECK-LABEL: case torch.nn.LogSigmoid:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LOGSIGMOID:.+]] = "fxla.logsigmoid"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(nn.LogSigmoid, t(3, 4))
def logsigmoid_module():
    return nn.LogSigmoid()


# CHECK-LABEL: case torch.nn.functional.relu6:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CONSTANT_2:.+]] = "fxla.constant"() {value = dense<6.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CLAMP:.+]] = "fxla.clamp"(%[[X]], %[[CONSTANT]], %[[CONSTANT_2]]) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<3x4xf32>, tensor<f32>, tensor<f32>) -> tensor<3x4xf32>
@case(F.relu6, t(3, 4))
def relu6(x):
    return F.relu6(x)


# CHECK-LABEL: case torch.nn.ReLU6:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CONSTANT_2:.+]] = "fxla.constant"() {value = dense<6.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CLAMP:.+]] = "fxla.clamp"(%[[X]], %[[CONSTANT]], %[[CONSTANT_2]]) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<3x4xf32>, tensor<f32>, tensor<f32>) -> tensor<3x4xf32>
@case(nn.ReLU6, t(3, 4))
def relu6_module():
    return nn.ReLU6()


# CHECK-LABEL: case torch.nn.functional.hardtanh:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<-2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CONSTANT_2:.+]] = "fxla.constant"() {value = dense<3.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CLAMP:.+]] = "fxla.clamp"(%[[X]], %[[CONSTANT]], %[[CONSTANT_2]]) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<3x4xf32>, tensor<f32>, tensor<f32>) -> tensor<3x4xf32>
@case(F.hardtanh, t(3, 4))
def hardtanh(x):
    return F.hardtanh(x, -2.0, 3.0)


# CHECK-LABEL: case torch.nn.Hardtanh:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<-5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CONSTANT_2:.+]] = "fxla.constant"() {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CLAMP:.+]] = "fxla.clamp"(%[[X]], %[[CONSTANT]], %[[CONSTANT_2]]) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<3x4xf32>, tensor<f32>, tensor<f32>) -> tensor<3x4xf32>
@case(nn.Hardtanh, t(3, 4))
def hardtanh_module():
    return nn.Hardtanh(-0.5, 0.5)


# CHECK-LABEL: case torch.nn.functional.leaky_relu:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LEAKY_RELU:.+]] = "fxla.leaky_relu"(%[[X]]) {negative_slope = 2.000000e-01 : f64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(F.leaky_relu, t(3, 4))
def leaky_relu(x):
    return F.leaky_relu(x, 0.2)


# CHECK-LABEL: case torch.nn.LeakyReLU:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LEAKY_RELU:.+]] = "fxla.leaky_relu"(%[[X]]) {negative_slope = 1.000000e-01 : f64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(nn.LeakyReLU, t(3, 4))
def leaky_relu_module():
    return nn.LeakyReLU(0.1)


# CHECK-LABEL: case torch.nn.functional.elu:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ELU:.+]] = "fxla.elu"(%[[X]]) {alpha = 5.000000e-01 : f64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(F.elu, t(3, 4))
def elu(x):
    return F.elu(x, alpha=0.5)


# CHECK-LABEL: case torch.nn.ELU:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ELU:.+]] = "fxla.elu"(%[[X]]) {alpha = 2.000000e+00 : f64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(nn.ELU, t(3, 4))
def elu_module():
    return nn.ELU(alpha=2.0)


# CHECK-LABEL: case torch.nn.functional.softplus:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SOFTPLUS:.+]] = "fxla.softplus"(%[[X]]) {beta = 2.000000e+00 : f64, threshold = 1.000000e+01 : f64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(F.softplus, t(3, 4))
def softplus(x):
    return F.softplus(x, beta=2.0, threshold=10.0)


# CHECK-LABEL: case torch.nn.Softplus:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SOFTPLUS:.+]] = "fxla.softplus"(%[[X]]) {beta = 5.000000e-01 : f64, threshold = 2.000000e+01 : f64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
@case(nn.Softplus, t(3, 4))
def softplus_module():
    return nn.Softplus(beta=0.5)


# CHECK-LABEL: case torch.softmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[SOFTMAX:.+]] = "fxla.softmax"(%[[X]]) {dim = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
@case(torch.softmax, t(2, 3, 4))
def softmax(x):
    return torch.softmax(x, -1)


# CHECK-LABEL: case torch.nn.functional.softmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[CONVERT:.+]] = "fxla.convert"(%[[X]]) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf64>
# CHECK:         %[[SOFTMAX:.+]] = "fxla.softmax"(%[[CONVERT]]) {dim = 1 : i64} : (tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
@case(F.softmax, t(2, 3, 4))
def f_softmax_dtype(x):
    return F.softmax(x, dim=1, dtype=torch.float64)


# CHECK-LABEL: case Tensor.softmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xbf16>)
# CHECK:         %[[SOFTMAX:.+]] = "fxla.softmax"(%[[X]]) {dim = 0 : i64} : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
@case(torch.Tensor.softmax, t(2, 3, dtype=BF16))
def tensor_softmax(x):
    return x.softmax(0)


# CHECK-LABEL: case torch.nn.Softmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[SOFTMAX:.+]] = "fxla.softmax"(%[[X]]) {dim = -2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
@case(nn.Softmax, t(2, 3, 4))
def softmax_module():
    return nn.Softmax(dim=-2)


# CHECK-LABEL: case torch.log_softmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[LOG_SOFTMAX:.+]] = "fxla.log_softmax"(%[[X]]) {dim = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
@case(torch.log_softmax, t(2, 3, 4))
def log_softmax(x):
    return torch.log_softmax(x, 1)


# CHECK-LABEL: case torch.nn.functional.log_softmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[LOG_SOFTMAX:.+]] = "fxla.log_softmax"(%[[X]]) {dim = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
@case(F.log_softmax, t(2, 3, 4))
def f_log_softmax(x):
    return F.log_softmax(x, dim=-1)


# CHECK-LABEL: case Tensor.log_softmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf16>)
# CHECK:         %[[LOG_SOFTMAX:.+]] = "fxla.log_softmax"(%[[X]]) {dim = -1 : i64} : (tensor<2x3xf16>) -> tensor<2x3xf16>
@case(torch.Tensor.log_softmax, t(2, 3, dtype=F16))
def tensor_log_softmax(x):
    return x.log_softmax(-1)


# CHECK-LABEL: case torch.nn.LogSoftmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[LOG_SOFTMAX:.+]] = "fxla.log_softmax"(%[[X]]) {dim = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
@case(nn.LogSoftmax, t(2, 3, 4))
def log_softmax_module():
    return nn.LogSoftmax(dim=0)
