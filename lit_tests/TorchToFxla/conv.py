# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla: 1-3-D convolutions and transposed convolutions (functions and modules) -- one case per op object
# of fxla.lowering.RULES; the checks show stride/padding/dilation/groups (and output_padding) as attributes and
# the bias as an optional operand.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
import torch.nn as nn
from fxla.testing import case, t

BF16 = torch.bfloat16


# CHECK-LABEL: case torch.conv1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x9xf32>, %[[W:.+]]: tensor<6x2x3xf32>, %[[B:.+]]: tensor<6xf32>)
# CHECK:         %[[CONV:.+]] = "fxla.conv"(%[[X]], %[[W]], %[[B]]) {dilation = array<i64: 1>, groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64>, padding = array<i64: 1>, stride = array<i64: 2>, transposed = false} : (tensor<2x4x9xf32>, tensor<6x2x3xf32>, tensor<6xf32>) -> tensor<2x6x5xf32>
@case(torch.conv1d, t(2, 4, 9), t(6, 2, 3), t(6))
def conv1d_groups(x, w, b):
    return torch.conv1d(x, w, b, stride=2, padding=1, groups=2)


# CHECK-LABEL: case torch.nn.Conv1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x10xf32>, %[[WEIGHT:.+]]: tensor<4x3x3xf32> {fxla.param = "mod.weight"})
# CHECK:         %[[CONV:.+]] = "fxla.conv"(%[[X]], %[[WEIGHT]]) {dilation = array<i64: 2>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64>, padding = array<i64: 2>, stride = array<i64: 1>, transposed = false} : (tensor<2x3x10xf32>, tensor<4x3x3xf32>) -> tensor<2x4x10xf32>
@case(nn.Conv1d, t(2, 3, 10))
def conv1d_module_same():
    return nn.Conv1d(3, 4, 3, padding="same", dilation=2, bias=False)


# CHECK-LABEL: case torch.conv2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x3x9x8xf32>, %[[W:.+]]: tensor<2x3x3x3xf32>)
# CHECK:         %[[CONV:.+]] = "fxla.conv"(%[[X]], %[[W]]) {dilation = array<i64: 2, 2>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64>, padding = array<i64: 1, 2>, stride = array<i64: 2, 1>, transposed = false} : (tensor<1x3x9x8xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x4x8xf32>
@case(torch.conv2d, t(1, 3, 9, 8), t(2, 3, 3, 3))
def conv2d_stride_pad_dilation(x, w):
    return torch.conv2d(x, w, stride=(2, 1), padding=(1, 2), dilation=2)


# CHECK-LABEL: case torch.nn.Conv2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x8x8xbf16>, %[[WEIGHT:.+]]: tensor<4x3x3x3xbf16> {fxla.param = "mod.weight"}, %[[BIAS:.+]]: tensor<4xbf16> {fxla.param = "mod.bias"})
# CHECK:         %[[CONV:.+]] = "fxla.conv"(%[[X]], %[[WEIGHT]], %[[BIAS]]) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64>, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, transposed = false} : (tensor<2x3x8x8xbf16>, tensor<4x3x3x3xbf16>, tensor<4xbf16>) -> tensor<2x4x4x4xbf16>
@case(nn.Conv2d, t(2, 3, 8, 8, dtype=BF16))
def conv2d_module():
    return nn.Conv2d(3, 4, 3, stride=2, padding=1).to(BF16)


# CHECK-LABEL: case torch.conv3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x5x6x7xf32>, %[[W:.+]]: tensor<4x2x3x3x3xf32>, %[[B:.+]]: tensor<4xf32>)
# CHECK:         %[[CONV:.+]] = "fxla.conv"(%[[X]], %[[W]], %[[B]]) {dilation = array<i64: 1, 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64>, padding = array<i64: 0, 1, 1>, stride = array<i64: 1, 1, 1>, transposed = false} : (tensor<1x2x5x6x7xf32>, tensor<4x2x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x6x7xf32>
@case(torch.conv3d, t(1, 2, 5, 6, 7), t(4, 2, 3, 3, 3), t(4))
def conv3d(x, w, b):
    return torch.conv3d(x, w, b, padding=(0, 1, 1))


# CHECK-LABEL: case torch.nn.Conv3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x4x6x6x6xf32>, %[[WEIGHT:.+]]: tensor<4x1x2x2x2xf32> {fxla.param = "mod.weight"}, %[[BIAS:.+]]: tensor<4xf32> {fxla.param = "mod.bias"})
# CHECK:         %[[CONV:.+]] = "fxla.conv"(%[[X]], %[[WEIGHT]], %[[BIAS]]) {dilation = array<i64: 1, 1, 1>, groups = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64>, padding = array<i64: 0, 0, 0>, stride = array<i64: 2, 2, 2>, transposed = false} : (tensor<1x4x6x6x6xf32>, tensor<4x1x2x2x2xf32>, tensor<4xf32>) -> tensor<1x4x3x3x3xf32>
@case(nn.Conv3d, t(1, 4, 6, 6, 6))
def conv3d_module_depthwise():
    return nn.Conv3d(4, 4, 2, stride=2, groups=4)


# CHECK-LABEL: case torch.conv_transpose1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x5xf32>, %[[W:.+]]: tensor<4x3x3xf32>, %[[B:.+]]: tensor<3xf32>)
# CHECK:         %[[CONV:.+]] = "fxla.conv"(%[[X]], %[[W]], %[[B]]) {dilation = array<i64: 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 1>, padding = array<i64: 1>, stride = array<i64: 2>, transposed = true} : (tensor<2x4x5xf32>, tensor<4x3x3xf32>, tensor<3xf32>) -> tensor<2x3x10xf32>
@case(torch.conv_transpose1d, t(2, 4, 5), t(4, 3, 3), t(3))
def conv_transpose1d(x, w, b):
    return torch.conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1)


# CHECK-LABEL: case torch.nn.ConvTranspose1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x6xf32>, %[[WEIGHT:.+]]: tensor<2x4x3xf32> {fxla.param = "mod.weight"})
# CHECK:         %[[CONV:.+]] = "fxla.conv"(%[[X]], %[[WEIGHT]]) {dilation = array<i64: 2>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0>, padding = array<i64: 0>, stride = array<i64: 1>, transposed = true} : (tensor<1x2x6xf32>, tensor<2x4x3xf32>) -> tensor<1x4x10xf32>
@case(nn.ConvTranspose1d, t(1, 2, 6))
def conv_transpose1d_module():
    return nn.ConvTranspose1d(2, 4, 3, dilation=2, bias=False)


# CHECK-LABEL: case torch.conv_transpose2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x4x5x5xf32>, %[[W:.+]]: tensor<4x2x3x3xf32>)
# CHECK:         %[[CONV:.+]] = "fxla.conv"(%[[X]], %[[W]]) {dilation = array<i64: 1, 1>, groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 2, 2>, transposed = true} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x11x11xf32>
@case(torch.conv_transpose2d, t(1, 4, 5, 5), t(4, 2, 3, 3))
def conv_transpose2d_groups(x, w):
    return torch.conv_transpose2d(x, w, stride=2, groups=2)


# CHECK-LABEL: case torch.nn.ConvTranspose2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x4xf32>, %[[WEIGHT:.+]]: tensor<3x2x3x2xf32> {fxla.param = "mod.weight"}, %[[BIAS:.+]]: tensor<2xf32> {fxla.param = "mod.bias"})
# CHECK:         %[[CONV:.+]] = "fxla.conv"(%[[X]], %[[WEIGHT]], %[[BIAS]]) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 1, 0>, padding = array<i64: 1, 0>, stride = array<i64: 2, 1>, transposed = true} : (tensor<2x3x4x4xf32>, tensor<3x2x3x2xf32>, tensor<2xf32>) -> tensor<2x2x8x5xf32>
@case(nn.ConvTranspose2d, t(2, 3, 4, 4))
def conv_transpose2d_module():
    return nn.ConvTranspose2d(3, 2, (3, 2), stride=(2, 1), padding=(1, 0), output_padding=(1, 0))


# CHECK-LABEL: case torch.conv_transpose3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x3x3xf32>, %[[W:.+]]: tensor<2x3x2x2x2xf32>, %[[B:.+]]: tensor<3xf32>)
# CHECK:         %[[CONV:.+]] = "fxla.conv"(%[[X]], %[[W]], %[[B]]) {dilation = array<i64: 1, 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0, 0>, padding = array<i64: 0, 0, 0>, stride = array<i64: 2, 2, 2>, transposed = true} : (tensor<1x2x3x3x3xf32>, tensor<2x3x2x2x2xf32>, tensor<3xf32>) -> tensor<1x3x6x6x6xf32>
@case(torch.conv_transpose3d, t(1, 2, 3, 3, 3), t(2, 3, 2, 2, 2), t(3))
def conv_transpose3d(x, w, b):
    return torch.conv_transpose3d(x, w, b, stride=2)


# CHECK-LABEL: case torch.nn.ConvTranspose3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x4x4xf32>, %[[WEIGHT:.+]]: tensor<2x2x3x3x3xf32> {fxla.param = "mod.weight"}, %[[BIAS:.+]]: tensor<2xf32> {fxla.param = "mod.bias"})
# CHECK:         %[[CONV:.+]] = "fxla.conv"(%[[X]], %[[WEIGHT]], %[[BIAS]]) {dilation = array<i64: 1, 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0, 0>, padding = array<i64: 1, 1, 1>, stride = array<i64: 1, 1, 1>, transposed = true} : (tensor<1x2x3x4x4xf32>, tensor<2x2x3x3x3xf32>, tensor<2xf32>) -> tensor<1x2x3x4x4xf32>
@case(nn.ConvTranspose3d, t(1, 2, 3, 4, 4))
def conv_transpose3d_module():
    return nn.ConvTranspose3d(2, 2, 3, padding=1)
