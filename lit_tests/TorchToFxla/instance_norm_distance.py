# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla: instance norm (each sample and channel over its spatial dims; running statistics when tracked),
# Softmax2d, cosine similarity and pairwise distance -- one case per op object of fxla.lowering.RULES.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
import torch.nn as nn
import torch.nn.functional as F
from fxla.testing import case, t


# CHECK-LABEL: case torch.nn.functional.instance_norm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x5xf32>)
# CHECK:         %[[MEAN:.+]] = "fxla.mean"(%[[X]]) {dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>
# CHECK:         %[[VAR:.+]] = "fxla.var"(%[[X]]) {correction = 0 : i64, dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%{{.+}}, %{{.+}}) : (tensor<2x3x4x5xf32>, tensor<2x3x1x1xf32>) -> tensor<2x3x4x5xf32>
# CHECK:         return %[[MUL]] : tensor<2x3x4x5xf32>
@case(F.instance_norm, t(2, 3, 4, 5))
def instance_norm(x):
    return F.instance_norm(x, eps=1e-3)


# CHECK-LABEL: case torch.nn.InstanceNorm1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x6xf32>, %[[WEIGHT:.+]]: tensor<3xf32> {fxla.param = "mod.weight"}, %[[BIAS:.+]]: tensor<3xf32> {fxla.param = "mod.bias"})
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 1, 3, 6>} : (tensor<3x6xf32>) -> tensor<1x3x6xf32>
# CHECK:         %[[MEAN:.+]] = "fxla.mean"(%[[RESHAPE]]) {dims = array<i64: 2>, keepdim = true} : (tensor<1x3x6xf32>) -> tensor<1x3x1xf32>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%{{.+}}) {shape = array<i64: 3, 6>} : (tensor<1x3x6xf32>) -> tensor<3x6xf32>
# CHECK:         return %[[RESHAPE_2]] : tensor<3x6xf32>
@case(nn.InstanceNorm1d, t(3, 6))
def instance_norm_1d_unbatched():
    return nn.InstanceNorm1d(3, affine=True)


# CHECK-LABEL: case torch.nn.InstanceNorm2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x5xf32>)
# CHECK:         %[[MEAN:.+]] = "fxla.mean"(%[[X]]) {dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>
# CHECK:         %[[VAR:.+]] = "fxla.var"(%[[X]]) {correction = 0 : i64, dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x3x4x5xf32>) -> tensor<2x3x1x1xf32>
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%{{.+}}, %{{.+}}) : (tensor<2x3x4x5xf32>, tensor<2x3x1x1xf32>) -> tensor<2x3x4x5xf32>
# CHECK:         return %[[MUL]] : tensor<2x3x4x5xf32>
@case(nn.InstanceNorm2d, t(2, 3, 4, 5))
def instance_norm_2d():
    return nn.InstanceNorm2d(3)


# With track_running_stats (eval mode): the running statistics, as batch norm.
# CHECK-LABEL: case torch.nn.InstanceNorm3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x3x2xf32>, %[[RUNNING_MEAN:.+]]: tensor<2xf32> {fxla.param = "mod.running_mean"}, %[[RUNNING_VAR:.+]]: tensor<2xf32> {fxla.param = "mod.running_var"})
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[RUNNING_VAR]]) {shape = array<i64: 2, 1, 1, 1>} : (tensor<2xf32>) -> tensor<2x1x1x1xf32>
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<9.99999974E-6> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%{{.+}}, %{{.+}}) : (tensor<1x2x3x3x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3x2xf32>
# CHECK:         return %[[MUL]] : tensor<1x2x3x3x2xf32>
@case(nn.InstanceNorm3d, t(1, 2, 3, 3, 2))
def instance_norm_3d_running_stats():
    return nn.InstanceNorm3d(2, track_running_stats=True)


# CHECK-LABEL: case torch.nn.Softmax2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x5xf32>)
# CHECK:         %[[SOFTMAX:.+]] = "fxla.softmax"(%[[X]]) {dim = -3 : i64} : (tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>
@case(nn.Softmax2d, t(2, 3, 4, 5))
def softmax2d():
    return nn.Softmax2d()


# CHECK-LABEL: case torch.cosine_similarity:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>, %[[Y:.+]]: tensor<1x3x4xf32>)
# CHECK:         %[[EXPAND:.+]] = "fxla.expand"(%[[Y]]) {shape = array<i64: 2, 3, 4>} : (tensor<1x3x4xf32>) -> tensor<2x3x4xf32>
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%[[X]], %[[X]]) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
# CHECK:         %[[SUM:.+]] = "fxla.sum"(%{{.+}}) {dims = array<i64: 1>, keepdim = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
# CHECK:         return %[[SUM]] : tensor<2x4xf32>
@case(F.cosine_similarity, t(2, 3, 4), t(1, 3, 4))
def cosine_similarity(x, y):
    return F.cosine_similarity(x, y)


# CHECK-LABEL: case torch.pairwise_distance:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SUB:.+]] = "fxla.sub"(%[[X]], %[[Y]]) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<9.99999997E-7> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[SQRT:.+]] = "fxla.sqrt"(%{{.+}}) : (tensor<3xf32>) -> tensor<3xf32>
# CHECK:         return %[[SQRT]] : tensor<3xf32>
@case(F.pairwise_distance, t(3, 4), t(3, 4))
def pairwise_distance(x, y):
    return F.pairwise_distance(x, y)


# CHECK-LABEL: case torch.nn.CosineSimilarity:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xf32>)
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%[[X]], %[[X]]) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
# CHECK:         %[[SUM:.+]] = "fxla.sum"(%[[MUL]]) {dims = array<i64: 1>, keepdim = true} : (tensor<3x4xf32>) -> tensor<3x1xf32>
# CHECK:         %[[SUM_2:.+]] = "fxla.sum"(%{{.+}}) {dims = array<i64: 1>, keepdim = false} : (tensor<3x4xf32>) -> tensor<3xf32>
# CHECK:         return %[[SUM_2]] : tensor<3xf32>
@case(nn.CosineSimilarity, t(3, 4), t(3, 4))
def cosine_similarity_module():
    return nn.CosineSimilarity(dim=-1)


# CHECK-LABEL: case torch.nn.PairwiseDistance:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SUB:.+]] = "fxla.sub"(%[[X]], %[[Y]]) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<9.99999997E-7> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[POW:.+]] = "fxla.pow"(%{{.+}}, %{{.+}}) : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
# CHECK:         return %[[POW]] : tensor<3x1xf32>
@case(nn.PairwiseDistance, t(3, 4), t(3, 4))
def pairwise_distance_module():
    return nn.PairwiseDistance(p=1.0, keepdim=True)
