# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `resampling` (lowering/rules/resampling.py): F.interpolate and the upsampling modules --
# nearest, bilinear with both align_corners, bicubic (a constant [out, in] weight matrix per spatial dim, computed
# in f32) and area (adaptive average pooling) -- one case per op object of fxla.lowering.RULES (and per mode); the
# checks show the output sizes torch computes from size= / scale_factor=.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
import torch.nn as nn
import torch.nn.functional as F

from fxla.testing import case, t

BF16 = torch.bfloat16


# CHECK-LABEL: case torch.nn.functional.interpolate:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x4x5xf32>)
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 2} : tensor<1x2x4x5xf32>, tensor<8xi64> -> tensor<1x2x8x5xf32>
# CHECK:         %[[INDEX_SELECT_2:.+]] = fxla.index_select %[[INDEX_SELECT]], %{{.+}} {dim = 3} : tensor<1x2x8x5xf32>, tensor<10xi64> -> tensor<1x2x8x10xf32>
# CHECK:         return %[[INDEX_SELECT_2]] : tensor<1x2x8x10xf32>
@case(F.interpolate, t(1, 2, 4, 5))
def interpolate_nearest_scale(x):
    return F.interpolate(x, scale_factor=2)


# CHECK-LABEL: case torch.nn.functional.interpolate (bilinear, align_corners):
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x4x5xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [0, 1, 3, 2]} : tensor<1x2x4x5xf32> -> tensor<1x2x5x4xf32>
# CHECK:         %[[MATMUL:.+]] = fxla.matmul %[[PERMUTE]], %{{.+}} : tensor<1x2x5x4xf32>, tensor<4x6xf32> -> tensor<1x2x5x6xf32>
# CHECK:         %[[MATMUL_2:.+]] = fxla.matmul %{{.+}}, %{{.+}} : tensor<1x2x6x5xf32>, tensor<5x3xf32> -> tensor<1x2x6x3xf32>
# CHECK:         return %[[MATMUL_2]] : tensor<1x2x6x3xf32>
@case(F.interpolate, t(1, 2, 4, 5), variant="bilinear, align_corners")
def interpolate_bilinear_size(x):
    return F.interpolate(x, size=(6, 3), mode="bilinear", align_corners=True)


# CHECK-LABEL: case torch.nn.Upsample:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x5xf32>)
# CHECK:         %[[MATMUL:.+]] = fxla.matmul %[[X]], %{{.+}} : tensor<2x3x5xf32>, tensor<5x7xf32> -> tensor<2x3x7xf32>
# CHECK:         return %[[MATMUL]] : tensor<2x3x7xf32>
@case(nn.Upsample, t(2, 3, 5))
def upsample_linear_1d():
    return nn.Upsample(scale_factor=1.5, mode="linear")


# CHECK-LABEL: case torch.nn.UpsamplingNearest2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x3xf32>)
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 2} : tensor<1x2x3x3xf32>, tensor<5xi64> -> tensor<1x2x5x3xf32>
# CHECK:         %[[INDEX_SELECT_2:.+]] = fxla.index_select %[[INDEX_SELECT]], %{{.+}} {dim = 3} : tensor<1x2x5x3xf32>, tensor<4xi64> -> tensor<1x2x5x4xf32>
# CHECK:         return %[[INDEX_SELECT_2]] : tensor<1x2x5x4xf32>
@case(nn.UpsamplingNearest2d, t(1, 2, 3, 3))
def upsampling_nearest2d():
    return nn.UpsamplingNearest2d(size=(5, 4))


# CHECK-LABEL: case torch.nn.UpsamplingBilinear2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [0, 1, 3, 2]} : tensor<1x2x3x4xf32> -> tensor<1x2x4x3xf32>
# CHECK:         %[[MATMUL:.+]] = fxla.matmul %[[PERMUTE]], %{{.+}} : tensor<1x2x4x3xf32>, tensor<3x6xf32> -> tensor<1x2x4x6xf32>
# CHECK:         %[[MATMUL_2:.+]] = fxla.matmul %{{.+}}, %{{.+}} : tensor<1x2x6x4xf32>, tensor<4x8xf32> -> tensor<1x2x6x8xf32>
# CHECK:         return %[[MATMUL_2]] : tensor<1x2x6x8xf32>
@case(nn.UpsamplingBilinear2d, t(1, 2, 3, 4))
def upsampling_bilinear2d():
    return nn.UpsamplingBilinear2d(scale_factor=2)


# CHECK-LABEL: case torch.nn.functional.interpolate (bicubic):
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x4xbf16>)
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[X]] : tensor<1x2x3x4xbf16> -> tensor<1x2x3x4xf32>
# CHECK:         %[[M:.+]] = fxla.constant {value = dense<{{.+}}> : tensor<4x6xf32>}
# CHECK:         %[[MATMUL:.+]] = fxla.matmul %[[CONVERT]], %[[M]] : tensor<1x2x3x4xf32>, tensor<4x6xf32> -> tensor<1x2x3x6xf32>
# CHECK:         %[[CONVERT_2:.+]] = fxla.convert %[[MATMUL]] : tensor<1x2x3x6xf32> -> tensor<1x2x3x6xbf16>
# CHECK:         return %[[CONVERT_2]] : tensor<1x2x3x6xbf16>
@case(F.interpolate, t(1, 2, 3, 4, dtype=BF16), variant="bicubic")
def interpolate_bicubic(x):
    return F.interpolate(x, size=(3, 6), mode="bicubic", align_corners=True)


# CHECK-LABEL: case torch.nn.functional.interpolate (area):
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x6x4xf32>)
# CHECK:         %[[AVG_POOL:.+]] = fxla.avg_pool %[[X]] {kernel_size = [2, 2], stride = [2, 2], padding = [0, 0], ceil_mode = false, count_include_pad = true, divisor_override = 0} : tensor<1x2x6x4xf32> -> tensor<1x2x3x2xf32>
@case(F.interpolate, t(1, 2, 6, 4), variant="area")
def interpolate_area(x):
    return F.interpolate(x, scale_factor=0.5, mode="area")
