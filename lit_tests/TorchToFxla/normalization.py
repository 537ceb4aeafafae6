# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla: layer/group/batch/RMS normalisation, F.normalize, dropout and Identity (eval mode: no ops) --
# one case per op object of fxla.lowering.RULES; the checks show normalized_shape, eps and the parameters that
# become function arguments.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
import torch.nn as nn
import torch.nn.functional as F
from fxla.testing import case, t

BF16, F16 = torch.bfloat16, torch.float16


# CHECK-LABEL: case torch.nn.functional.layer_norm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x8xf32>, %[[W:.+]]: tensor<8xf32>, %[[B:.+]]: tensor<8xf32>)
# CHECK:         %[[LAYER_NORM:.+]] = "fxla.layer_norm"(%[[X]], %[[W]], %[[B]]) {eps = 1.000000e-03 : f64, normalized_rank = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
@case(F.layer_norm, t(2, 3, 8), t(8), t(8))
def layer_norm(x, w, b):
    return F.layer_norm(x, (8,), w, b, eps=1e-3)


# CHECK-LABEL: case torch.nn.LayerNorm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x8xf32>)
# CHECK:         %[[LAYER_NORM:.+]] = "fxla.layer_norm"(%[[X]]) {eps = 1.000000e-05 : f64, normalized_rank = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
@case(nn.LayerNorm, t(2, 3, 8))
def layer_norm_module_2d_shape():
    return nn.LayerNorm((3, 8), elementwise_affine=False)


# CHECK-LABEL: case torch.nn.functional.group_norm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x6x4xf32>, %[[W:.+]]: tensor<6xf32>, %[[B:.+]]: tensor<6xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 2, 3, 8>} : (tensor<2x6x4xf32>) -> tensor<2x3x8xf32>
# CHECK:         %[[LAYER_NORM:.+]] = "fxla.layer_norm"(%[[RESHAPE]]) {eps = 1.000000e-05 : f64, normalized_rank = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
# CHECK:         %[[ADD:.+]] = "fxla.add"(%{{.+}}, %{{.+}}) : (tensor<2x6x4xf32>, tensor<6x1xf32>) -> tensor<2x6x4xf32>
# CHECK:         return %[[ADD]] : tensor<2x6x4xf32>
@case(F.group_norm, t(2, 6, 4), t(6), t(6))
def group_norm(x, w, b):
    return F.group_norm(x, 3, w, b)


# CHECK-LABEL: case torch.group_norm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x3x3xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 2, 2, 18>} : (tensor<2x4x3x3xf32>) -> tensor<2x2x18xf32>
# CHECK:         %[[LAYER_NORM:.+]] = "fxla.layer_norm"(%[[RESHAPE]]) {eps = 1.000000e-03 : f64, normalized_rank = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x2x18xf32>) -> tensor<2x2x18xf32>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%[[LAYER_NORM]]) {shape = array<i64: 2, 4, 3, 3>} : (tensor<2x2x18xf32>) -> tensor<2x4x3x3xf32>
@case(torch.group_norm, t(2, 4, 3, 3))
def torch_group_norm_eps(x):
    return torch.group_norm(x, 2, None, None, 1e-3)


# CHECK-LABEL: case torch.nn.GroupNorm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x6x5xbf16>, %[[WEIGHT:.+]]: tensor<6xbf16> {fxla.param = "mod.weight"}, %[[BIAS:.+]]: tensor<6xbf16> {fxla.param = "mod.bias"})
# CHECK:         %[[CONVERT:.+]] = "fxla.convert"(%[[X]]) : (tensor<2x6x5xbf16>) -> tensor<2x6x5xf32>
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[CONVERT]]) {shape = array<i64: 2, 2, 15>} : (tensor<2x6x5xf32>) -> tensor<2x2x15xf32>
# CHECK:         %[[CONVERT_2:.+]] = "fxla.convert"(%{{.+}}) : (tensor<2x6x5xf32>) -> tensor<2x6x5xbf16>
# CHECK:         return %[[CONVERT_2]] : tensor<2x6x5xbf16>
@case(nn.GroupNorm, t(2, 6, 5, dtype=BF16))
def group_norm_module():
    return nn.GroupNorm(2, 6).to(BF16)


# CHECK-LABEL: case torch.nn.functional.batch_norm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x5xf32>, %[[MEAN:.+]]: tensor<3xf32>, %[[VAR:.+]]: tensor<3xf32>, %[[W:.+]]: tensor<3xf32>, %[[B:.+]]: tensor<3xf32>)
# CHECK:         %[[EPS:.+]] = "fxla.constant"() {value = dense<1.000000e-03> : tensor<f32>}
# CHECK:         %[[INV_STD:.+]] = "fxla.rsqrt"(%{{.+}}) : (tensor<3x1x1xf32>) -> tensor<3x1x1xf32>
# CHECK:         %[[M:.+]] = "fxla.reshape"(%[[MEAN]]) {shape = array<i64: 3, 1, 1>} : (tensor<3xf32>) -> tensor<3x1x1xf32>
# CHECK:         "fxla.sub"(%[[X]], %[[M]]) : (tensor<2x3x4x5xf32>, tensor<3x1x1xf32>) -> tensor<2x3x4x5xf32>
# CHECK:         "fxla.add"(%{{.+}}, %{{.+}}) : (tensor<2x3x4x5xf32>, tensor<3x1x1xf32>) -> tensor<2x3x4x5xf32>
@case(F.batch_norm, t(2, 3, 4, 5), t(3), t(3), t(3), t(3))
def batch_norm(x, mean, var, w, b):
    return F.batch_norm(x, mean, var, w, b, eps=1e-3)


# CHECK-LABEL: case torch.nn.BatchNorm1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[WEIGHT:.+]]: tensor<4xf32> {fxla.param = "mod.weight"}, %[[BIAS:.+]]: tensor<4xf32> {fxla.param = "mod.bias"}, %[[RUNNING_MEAN:.+]]: tensor<4xf32> {fxla.param = "mod.running_mean"}, %[[RUNNING_VAR:.+]]: tensor<4xf32> {fxla.param = "mod.running_var"})
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<9.99999974E-6> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[ADD:.+]] = "fxla.add"(%[[RUNNING_VAR]], %[[CONSTANT]]) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
# CHECK:         %[[ADD_2:.+]] = "fxla.add"(%{{.+}}, %[[BIAS]]) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
# CHECK:         return %[[ADD_2]] : tensor<3x4xf32>
@case(nn.BatchNorm1d, t(3, 4))
def batch_norm1d_module_2d_input():
    return nn.BatchNorm1d(4)


# CHECK-LABEL: case torch.nn.BatchNorm2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x4xf16>, %[[WEIGHT:.+]]: tensor<3xf16> {fxla.param = "mod.weight"}, %[[BIAS:.+]]: tensor<3xf16> {fxla.param = "mod.bias"}, %[[RUNNING_MEAN:.+]]: tensor<3xf16> {fxla.param = "mod.running_mean"}, %[[RUNNING_VAR:.+]]: tensor<3xf16> {fxla.param = "mod.running_var"})
# CHECK:         %[[CONVERT:.+]] = "fxla.convert"(%[[X]]) : (tensor<2x3x4x4xf16>) -> tensor<2x3x4x4xf32>
# CHECK:         %[[CONVERT_2:.+]] = "fxla.convert"(%[[RUNNING_VAR]]) : (tensor<3xf16>) -> tensor<3xf32>
# CHECK:         %[[CONVERT_3:.+]] = "fxla.convert"(%{{.+}}) : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf16>
# CHECK:         return %[[CONVERT_3]] : tensor<2x3x4x4xf16>
@case(nn.BatchNorm2d, t(2, 3, 4, 4, dtype=F16))
def batch_norm2d_module():
    return nn.BatchNorm2d(3).to(F16)


# CHECK-LABEL: case torch.nn.BatchNorm3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x3x2xf32>, %[[RUNNING_MEAN:.+]]: tensor<2xf32> {fxla.param = "mod.running_mean"}, %[[RUNNING_VAR:.+]]: tensor<2xf32> {fxla.param = "mod.running_var"})
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[RUNNING_VAR]]) {shape = array<i64: 2, 1, 1, 1>} : (tensor<2xf32>) -> tensor<2x1x1x1xf32>
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<9.99999974E-6> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%{{.+}}, %{{.+}}) : (tensor<1x2x3x3x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3x2xf32>
# CHECK:         return %[[MUL]] : tensor<1x2x3x3x2xf32>
@case(nn.BatchNorm3d, t(1, 2, 3, 3, 2))
def batch_norm3d_module_no_affine():
    return nn.BatchNorm3d(2, affine=False)


# CHECK-LABEL: case torch.nn.functional.rms_norm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x8xf32>, %[[W:.+]]: tensor<8xf32>)
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%[[X]], %[[X]]) : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
# CHECK:         %[[MEAN:.+]] = "fxla.mean"(%[[MUL]]) {dims = array<i64: 2>, keepdim = true} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
# CHECK:         %[[MUL_2:.+]] = "fxla.mul"(%{{.+}}, %[[W]]) : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
# CHECK:         return %[[MUL_2]] : tensor<2x3x8xf32>
@case(F.rms_norm, t(2, 3, 8), t(8))
def rms_norm(x, w):
    return F.rms_norm(x, (8,), w)


# CHECK-LABEL: case torch.nn.RMSNorm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x8xf32>, %[[WEIGHT:.+]]: tensor<3x8xf32> {fxla.param = "mod.weight"})
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%[[X]], %[[X]]) : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
# CHECK:         %[[MEAN:.+]] = "fxla.mean"(%[[MUL]]) {dims = array<i64: 1, 2>, keepdim = true} : (tensor<2x3x8xf32>) -> tensor<2x1x1xf32>
# CHECK:         %[[MUL_2:.+]] = "fxla.mul"(%{{.+}}, %[[WEIGHT]]) : (tensor<2x3x8xf32>, tensor<3x8xf32>) -> tensor<2x3x8xf32>
# CHECK:         return %[[MUL_2]] : tensor<2x3x8xf32>
@case(nn.RMSNorm, t(2, 3, 8))
def rms_norm_module_eps():
    return nn.RMSNorm([3, 8], eps=1e-5)


# CHECK-LABEL: case torch.nn.functional.normalize:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ABS:.+]] = "fxla.abs"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf32>
# CHECK:         %[[SUM:.+]] = "fxla.sum"(%[[ABS]]) {dims = array<i64: 0>, keepdim = true} : (tensor<3x4xf32>) -> tensor<1x4xf32>
# CHECK:         %[[DIV:.+]] = "fxla.div"(%[[X]], %{{.+}}) : (tensor<3x4xf32>, tensor<1x4xf32>) -> tensor<3x4xf32>
# CHECK:         return %[[DIV]] : tensor<3x4xf32>
@case(F.normalize, t(3, 4))
def normalize_p1(x):
    return F.normalize(x, p=1.0, dim=0)


# CHECK-LABEL: case torch.nn.functional.dropout:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     "fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(F.dropout, t(3, 4))
def dropout_eval(x):
    return F.dropout(x, 0.5, training=False)


# CHECK-LABEL: case torch.nn.Dropout:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     "fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(nn.Dropout, t(3, 4))
def dropout_module():
    return nn.Dropout(0.1)


# CHECK-LABEL: case torch.nn.Identity:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     "fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(nn.Identity, t(3, 4))
def identity_module():
    return nn.Identity()
