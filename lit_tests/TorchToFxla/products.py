# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla: rot90 (flip + permute), kron (interleaved broadcast product) and bilinear (F.bilinear, which
# is torch.bilinear, and nn.Bilinear: x1 @ W as [in1, out * in2], times x2, summed) -- one case per op object of
# fxla.lowering.RULES.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
import torch.nn as nn
import torch.nn.functional as F
from fxla.testing import case, t

I64 = torch.int64


# CHECK-LABEL: case torch.rot90:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[FLIP:.+]] = "fxla.flip"(%[[X]]) {dims = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
# CHECK:         %[[PERMUTE:.+]] = "fxla.permute"(%[[FLIP]]) {dims = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
@case(torch.rot90, t(2, 3, 4))
def rot90(x):
    return torch.rot90(x, 1, (1, 2))


# CHECK-LABEL: case Tensor.rot90:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xi64>)
# CHECK:         %[[FLIP:.+]] = "fxla.flip"(%[[X]]) {dims = array<i64: 0>} : (tensor<2x3xi64>) -> tensor<2x3xi64>
# CHECK:         %[[PERMUTE:.+]] = "fxla.permute"(%[[FLIP]]) {dims = array<i64: 1, 0>} : (tensor<2x3xi64>) -> tensor<3x2xi64>
@case(torch.Tensor.rot90, t(2, 3, dtype=I64))
def tensor_rot90_k3(x):
    return x.rot90(-1)


# CHECK-LABEL: case torch.kron:
# CHECK:         func.func @main(%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<4x2x2xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[A]]) {shape = array<i64: 1, 1, 2, 1, 3, 1>} : (tensor<2x3xf32>) -> tensor<1x1x2x1x3x1xf32>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%[[B]]) {shape = array<i64: 1, 4, 1, 2, 1, 2>} : (tensor<4x2x2xf32>) -> tensor<1x4x1x2x1x2xf32>
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%[[RESHAPE]], %[[RESHAPE_2]]) : (tensor<1x1x2x1x3x1xf32>, tensor<1x4x1x2x1x2xf32>) -> tensor<1x4x2x2x3x2xf32>
# CHECK:         %[[RESHAPE_3:.+]] = "fxla.reshape"(%[[MUL]]) {shape = array<i64: 4, 4, 6>} : (tensor<1x4x2x2x3x2xf32>) -> tensor<4x4x6xf32>
@case(torch.kron, t(2, 3), t(4, 2, 2))
def kron(a, b):
    return torch.kron(a, b)


# CHECK-LABEL: case torch.bilinear:
# CHECK:         func.func @main(%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<2x4xf32>, %[[W:.+]]: tensor<5x3x4xf32>, %[[BIAS:.+]]: tensor<5xf32>)
# CHECK:         %[[PERMUTE:.+]] = "fxla.permute"(%[[W]]) {dims = array<i64: 1, 0, 2>} : (tensor<5x3x4xf32>) -> tensor<3x5x4xf32>
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[PERMUTE]]) {shape = array<i64: 3, 20>} : (tensor<3x5x4xf32>) -> tensor<3x20xf32>
# CHECK:         %[[MATMUL:.+]] = "fxla.matmul"(%[[A]], %[[RESHAPE]]) : (tensor<2x3xf32>, tensor<3x20xf32>) -> tensor<2x20xf32>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%[[MATMUL]]) {shape = array<i64: 2, 5, 4>} : (tensor<2x20xf32>) -> tensor<2x5x4xf32>
# CHECK:         %[[RESHAPE_3:.+]] = "fxla.reshape"(%[[B]]) {shape = array<i64: 2, 1, 4>} : (tensor<2x4xf32>) -> tensor<2x1x4xf32>
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%[[RESHAPE_2]], %[[RESHAPE_3]]) : (tensor<2x5x4xf32>, tensor<2x1x4xf32>) -> tensor<2x5x4xf32>
# CHECK:         %[[SUM:.+]] = "fxla.sum"(%[[MUL]]) {dims = array<i64: -1>, keepdim = false} : (tensor<2x5x4xf32>) -> tensor<2x5xf32>
# CHECK:         %[[ADD:.+]] = "fxla.add"(%[[SUM]], %[[BIAS]]) : (tensor<2x5xf32>, tensor<5xf32>) -> tensor<2x5xf32>
@case(F.bilinear, t(2, 3), t(2, 4), t(5, 3, 4), t(5))
def bilinear(a, b, w, bias):
    return F.bilinear(a, b, w, bias)


# CHECK-LABEL: case torch.nn.Bilinear:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[Y:.+]]: tensor<2x4xf32>, %[[BIAS:.+]]: tensor<5xf32> {fxla.param = "mod.bias"}, %[[WEIGHT:.+]]: tensor<5x3x4xf32> {fxla.param = "mod.weight"})
# CHECK:         %[[PERMUTE:.+]] = "fxla.permute"(%[[WEIGHT]]) {dims = array<i64: 1, 0, 2>} : (tensor<5x3x4xf32>) -> tensor<3x5x4xf32>
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[PERMUTE]]) {shape = array<i64: 3, 20>} : (tensor<3x5x4xf32>) -> tensor<3x20xf32>
# CHECK:         %[[MATMUL:.+]] = "fxla.matmul"(%[[X]], %[[RESHAPE]]) : (tensor<2x3xf32>, tensor<3x20xf32>) -> tensor<2x20xf32>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%[[MATMUL]]) {shape = array<i64: 2, 5, 4>} : (tensor<2x20xf32>) -> tensor<2x5x4xf32>
# CHECK:         %[[RESHAPE_3:.+]] = "fxla.reshape"(%[[Y]]) {shape = array<i64: 2, 1, 4>} : (tensor<2x4xf32>) -> tensor<2x1x4xf32>
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%[[RESHAPE_2]], %[[RESHAPE_3]]) : (tensor<2x5x4xf32>, tensor<2x1x4xf32>) -> tensor<2x5x4xf32>
# CHECK:         %[[SUM:.+]] = "fxla.sum"(%[[MUL]]) {dims = array<i64: -1>, keepdim = false} : (tensor<2x5x4xf32>) -> tensor<2x5xf32>
# CHECK:         %[[ADD:.+]] = "fxla.add"(%[[SUM]], %[[BIAS]]) : (tensor<2x5xf32>, tensor<5xf32>) -> tensor<2x5xf32>
@case(nn.Bilinear, t(2, 3), t(2, 4))
def bilinear_module():
    return nn.Bilinear(3, 4, 5)
