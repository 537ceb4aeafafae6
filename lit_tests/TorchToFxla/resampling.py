# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `resampling` (lowering/rules/resampling.py): F.interpolate and the upsampling modules --
# nearest, bilinear with both align_corners, bicubic (per resized dim, the last first: its taps gathered with
# fxla.index_select at constant positions, weighted by constant weights computed in f32 and summed) and area
# (adaptive average pooling) -- one case per op object of fxla.lowering.RULES (and per mode); the checks show the
# output sizes torch computes from size= / scale_factor=.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
import torch.nn as nn
import torch.nn.functional as F

from fxla.testing import case, t

BF16 = torch.bfloat16


# CHECK-LABEL: case torch.nn.functional.interpolate:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x4x5xf32>)
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 3} : tensor<1x2x4x5xf32>, tensor<10xi64> -> tensor<1x2x4x10xf32>
# CHECK:         %[[INDEX_SELECT_2:.+]] = fxla.index_select %[[INDEX_SELECT]], %{{.+}} {dim = 2} : tensor<1x2x4x10xf32>, tensor<8xi64> -> tensor<1x2x8x10xf32>
# CHECK:         return %[[INDEX_SELECT_2]] : tensor<1x2x8x10xf32>
@case(F.interpolate, t(1, 2, 4, 5))
def interpolate_nearest_scale(x):
    return F.interpolate(x, scale_factor=2)


# CHECK-LABEL: case torch.nn.functional.interpolate (bilinear, align_corners):
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x4x5xf32>)
# CHECK:         %[[I0:.+]] = fxla.constant {value = dense<[0, 2, 4]> : tensor<3xi64>}
# CHECK:         %[[W:.+]] = fxla.index_select %[[X]], %[[I0]] {dim = 3} : tensor<1x2x4x5xf32>, tensor<3xi64> -> tensor<1x2x4x3xf32>
# CHECK:         %[[H:.+]] = fxla.index_select %{{.+}}, %{{.+}} {dim = 2} : tensor<1x2x4x3xf32>, tensor<6xi64> -> tensor<1x2x6x3xf32>
# CHECK:         %[[OUT:.+]] = fxla.add %{{.+}}, %{{.+}} : tensor<1x2x6x3xf32>, tensor<1x2x6x3xf32> -> tensor<1x2x6x3xf32>
# CHECK:         return %[[OUT]] : tensor<1x2x6x3xf32>
@case(F.interpolate, t(1, 2, 4, 5), variant="bilinear, align_corners")
def interpolate_bilinear_size(x):
    return F.interpolate(x, size=(6, 3), mode="bilinear", align_corners=True)


# CHECK-LABEL: case torch.nn.Upsample:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x5xf32>)
# CHECK:         %[[I0:.+]] = fxla.constant {value = dense<[0, 0, 1, 1, 2, 3, 3]> : tensor<7xi64>}
# CHECK:         %[[T0:.+]] = fxla.index_select %[[X]], %[[I0]] {dim = 2} : tensor<2x3x5xf32>, tensor<7xi64> -> tensor<2x3x7xf32>
# CHECK:         %[[OUT:.+]] = fxla.add %{{.+}}, %{{.+}} : tensor<2x3x7xf32>, tensor<2x3x7xf32> -> tensor<2x3x7xf32>
# CHECK:         return %[[OUT]] : tensor<2x3x7xf32>
@case(nn.Upsample, t(2, 3, 5))
def upsample_linear_1d():
    return nn.Upsample(scale_factor=1.5, mode="linear")


# CHECK-LABEL: case torch.nn.UpsamplingNearest2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x3xf32>)
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 3} : tensor<1x2x3x3xf32>, tensor<4xi64> -> tensor<1x2x3x4xf32>
# CHECK:         %[[INDEX_SELECT_2:.+]] = fxla.index_select %[[INDEX_SELECT]], %{{.+}} {dim = 2} : tensor<1x2x3x4xf32>, tensor<5xi64> -> tensor<1x2x5x4xf32>
# CHECK:         return %[[INDEX_SELECT_2]] : tensor<1x2x5x4xf32>
@case(nn.UpsamplingNearest2d, t(1, 2, 3, 3))
def upsampling_nearest2d():
    return nn.UpsamplingNearest2d(size=(5, 4))


# CHECK-LABEL: case torch.nn.UpsamplingBilinear2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x4xf32>)
# CHECK:         %[[W:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 3} : tensor<1x2x3x4xf32>, tensor<8xi64> -> tensor<1x2x3x8xf32>
# CHECK:         %[[H:.+]] = fxla.index_select %{{.+}}, %{{.+}} {dim = 2} : tensor<1x2x3x8xf32>, tensor<6xi64> -> tensor<1x2x6x8xf32>
# CHECK:         %[[OUT:.+]] = fxla.add %{{.+}}, %{{.+}} : tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32> -> tensor<1x2x6x8xf32>
# CHECK:         return %[[OUT]] : tensor<1x2x6x8xf32>
@case(nn.UpsamplingBilinear2d, t(1, 2, 3, 4))
def upsampling_bilinear2d():
    return nn.UpsamplingBilinear2d(scale_factor=2)


# CHECK-LABEL: case torch.nn.functional.interpolate (bicubic):
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x4xbf16>)
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[X]] : tensor<1x2x3x4xbf16> -> tensor<1x2x3x4xf32>
# CHECK:         %[[T0:.+]] = fxla.index_select %[[CONVERT]], %{{.+}} {dim = 3} : tensor<1x2x3x4xf32>, tensor<6xi64> -> tensor<1x2x3x6xf32>
# CHECK-NOT:     {dim = 2}
# CHECK:         %[[CONVERT_2:.+]] = fxla.convert %{{.+}} : tensor<1x2x3x6xf32> -> tensor<1x2x3x6xbf16>
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
