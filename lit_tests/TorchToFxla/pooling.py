# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `pooling` (lowering/rules/pooling.py): max, average, power-average (lp) and adaptive
# pooling, 1-3-D (functions, *_with_indices forms and modules) and max unpooling -- one case per op object of
# fxla.lowering.RULES; the checks show kernel/stride/padding/dilation/ceil_mode and the output sizes torch
# computes.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
import torch.nn as nn
import torch.nn.functional as F

from fxla.testing import case, t

F16, I64 = torch.float16, torch.int64


# CHECK-LABEL: case torch.nn.functional.max_pool1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x9xf32>)
# CHECK:         %[[MAX_POOL:.+]] = fxla.max_pool %[[X]] {kernel_size = [3], stride = [2], padding = [1], dilation = [1], ceil_mode = true} : tensor<2x4x9xf32> -> tensor<2x4x5xf32>
@case(F.max_pool1d, t(2, 4, 9))
def max_pool1d_ceil(x):
    return F.max_pool1d(x, 3, 2, 1, ceil_mode=True)


# CHECK-LABEL: case torch.max_pool1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x9xf32>)
# CHECK:         %[[MAX_POOL:.+]] = fxla.max_pool %[[X]] {kernel_size = [3], stride = [2], padding = [1], dilation = [1], ceil_mode = true} : tensor<2x4x9xf32> -> tensor<2x4x5xf32>
@case(torch.max_pool1d, t(2, 4, 9))
def torch_max_pool1d(x):
    return torch.max_pool1d(x, 3, 2, 1, 1, True)


# CHECK-LABEL: case torch.nn.functional.max_pool1d_with_indices:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x9xf32>)
# CHECK:         %[[MAX_POOL_WITH_INDICES:.+]]:2 = fxla.max_pool_with_indices %[[X]] {kernel_size = [3], stride = [2], padding = [1], dilation = [1], ceil_mode = false} : tensor<2x4x9xf32> -> (tensor<2x4x5xf32>, tensor<2x4x5xi64>)
# CHECK:         return %[[MAX_POOL_WITH_INDICES]]#0, %[[MAX_POOL_WITH_INDICES]]#1 : tensor<2x4x5xf32>, tensor<2x4x5xi64>
@case(F.max_pool1d_with_indices, t(2, 4, 9))
def max_pool1d_with_indices(x):
    return F.max_pool1d_with_indices(x, 3, 2, 1)


# CHECK-LABEL: case torch.max_pool1d_with_indices:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x8xf32>)
# CHECK:         %[[MAX_POOL_WITH_INDICES:.+]]:2 = fxla.max_pool_with_indices %[[X]] {kernel_size = [2], stride = [2], padding = [0], dilation = [1], ceil_mode = false} : tensor<2x4x8xf32> -> (tensor<2x4x4xf32>, tensor<2x4x4xi64>)
# CHECK:         return %[[MAX_POOL_WITH_INDICES]]#0, %[[MAX_POOL_WITH_INDICES]]#1 : tensor<2x4x4xf32>, tensor<2x4x4xi64>
@case(torch.max_pool1d_with_indices, t(2, 4, 8))
def torch_max_pool1d_with_indices(x):
    return torch.max_pool1d_with_indices(x, 2)


# CHECK-LABEL: case torch.nn.MaxPool1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x9xf32>)
# CHECK:         %[[MAX_POOL:.+]] = fxla.max_pool %[[X]] {kernel_size = [3], stride = [2], padding = [1], dilation = [1], ceil_mode = false} : tensor<2x4x9xf32> -> tensor<2x4x5xf32>
@case(nn.MaxPool1d, t(2, 4, 9))
def max_pool1d_module():
    return nn.MaxPool1d(3, stride=2, padding=1)


# CHECK-LABEL: case torch.nn.functional.max_pool2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x7x8xf32>)
# CHECK:         %[[MAX_POOL:.+]] = fxla.max_pool %[[X]] {kernel_size = [3, 2], stride = [1, 2], padding = [1, 1], dilation = [2, 1], ceil_mode = false} : tensor<1x2x7x8xf32> -> tensor<1x2x5x5xf32>
@case(F.max_pool2d, t(1, 2, 7, 8))
def max_pool2d_pad_dilation(x):
    return F.max_pool2d(x, (3, 2), (1, 2), (1, 1), dilation=(2, 1))


# CHECK-LABEL: case torch.max_pool2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x5x7xi64>)
# CHECK:         %[[MAX_POOL:.+]] = fxla.max_pool %[[X]] {kernel_size = [2, 2], stride = [2, 2], padding = [0, 0], dilation = [1, 1], ceil_mode = true} : tensor<1x2x5x7xi64> -> tensor<1x2x3x4xi64>
@case(torch.max_pool2d, t(1, 2, 5, 7, dtype=I64))
def torch_max_pool2d_ceil(x):
    return torch.max_pool2d(x, 2, 2, 0, 1, True)


# CHECK-LABEL: case torch.nn.functional.max_pool2d_with_indices:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x4x4xf32>)
# CHECK:         %[[MAX_POOL_WITH_INDICES:.+]]:2 = fxla.max_pool_with_indices %[[X]] {kernel_size = [2, 2], stride = [1, 1], padding = [0, 0], dilation = [1, 1], ceil_mode = false} : tensor<1x2x4x4xf32> -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xi64>)
# CHECK:         return %[[MAX_POOL_WITH_INDICES]]#0, %[[MAX_POOL_WITH_INDICES]]#1 : tensor<1x2x3x3xf32>, tensor<1x2x3x3xi64>
@case(F.max_pool2d_with_indices, t(1, 2, 4, 4))
def max_pool2d_with_indices(x):
    return F.max_pool2d_with_indices(x, 2, 1)


# CHECK-LABEL: case torch.nn.MaxPool2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x8x8xf32>)
# CHECK:         %[[MAX_POOL:.+]] = fxla.max_pool %[[X]] {kernel_size = [3, 3], stride = [2, 2], padding = [1, 1], dilation = [1, 1], ceil_mode = false} : tensor<2x3x8x8xf32> -> tensor<2x3x4x4xf32>
@case(nn.MaxPool2d, t(2, 3, 8, 8))
def max_pool2d_module():
    return nn.MaxPool2d(3, stride=2, padding=1)


# CHECK-LABEL: case torch.nn.functional.max_pool3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x4x6x6xf32>)
# CHECK:         %[[MAX_POOL:.+]] = fxla.max_pool %[[X]] {kernel_size = [1, 3, 2], stride = [1, 2, 1], padding = [0, 1, 1], dilation = [1, 1, 1], ceil_mode = false} : tensor<1x2x4x6x6xf32> -> tensor<1x2x4x3x7xf32>
@case(F.max_pool3d, t(1, 2, 4, 6, 6))
def max_pool3d(x):
    return F.max_pool3d(x, (1, 3, 2), (1, 2, 1), (0, 1, 1))


# CHECK-LABEL: case torch.max_pool3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x4x4x4xf32>)
# CHECK:         %[[MAX_POOL:.+]] = fxla.max_pool %[[X]] {kernel_size = [2, 2, 2], stride = [2, 2, 2], padding = [0, 0, 0], dilation = [1, 1, 1], ceil_mode = false} : tensor<1x2x4x4x4xf32> -> tensor<1x2x2x2x2xf32>
@case(torch.max_pool3d, t(1, 2, 4, 4, 4))
def torch_max_pool3d(x):
    return torch.max_pool3d(x, 2, 2, 0, 1, False)


# CHECK-LABEL: case torch.nn.functional.max_pool3d_with_indices:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x5x5xf32>)
# CHECK:         %[[MAX_POOL_WITH_INDICES:.+]]:2 = fxla.max_pool_with_indices %[[X]] {kernel_size = [2, 2, 2], stride = [2, 2, 2], padding = [0, 0, 0], dilation = [1, 1, 1], ceil_mode = true} : tensor<1x2x3x5x5xf32> -> (tensor<1x2x2x3x3xf32>, tensor<1x2x2x3x3xi64>)
# CHECK:         return %[[MAX_POOL_WITH_INDICES]]#0, %[[MAX_POOL_WITH_INDICES]]#1 : tensor<1x2x2x3x3xf32>, tensor<1x2x2x3x3xi64>
@case(F.max_pool3d_with_indices, t(1, 2, 3, 5, 5))
def max_pool3d_with_indices(x):
    return F.max_pool3d_with_indices(x, 2, ceil_mode=True)


# CHECK-LABEL: case torch.nn.MaxPool3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x5x5xf32>)
# CHECK:         %[[MAX_POOL:.+]] = fxla.max_pool %[[X]] {kernel_size = [2, 2, 2], stride = [2, 2, 2], padding = [0, 0, 0], dilation = [1, 1, 1], ceil_mode = true} : tensor<1x2x3x5x5xf32> -> tensor<1x2x2x3x3xf32>
@case(nn.MaxPool3d, t(1, 2, 3, 5, 5))
def max_pool3d_module_ceil():
    return nn.MaxPool3d(2, ceil_mode=True)


# CHECK-LABEL: case torch.avg_pool1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x9xf32>)
# CHECK:         %[[AVG_POOL:.+]] = fxla.avg_pool %[[X]] {kernel_size = [3], stride = [2], padding = [1], ceil_mode = false, count_include_pad = false, divisor_override = 0} : tensor<2x3x9xf32> -> tensor<2x3x5xf32>
@case(torch.avg_pool1d, t(2, 3, 9))
def avg_pool1d(x):
    return torch.avg_pool1d(x, 3, 2, 1, count_include_pad=False)


# CHECK-LABEL: case torch.nn.AvgPool1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x8xf32>)
# CHECK:         %[[AVG_POOL:.+]] = fxla.avg_pool %[[X]] {kernel_size = [2], stride = [2], padding = [0], ceil_mode = false, count_include_pad = true, divisor_override = 0} : tensor<2x3x8xf32> -> tensor<2x3x4xf32>
@case(nn.AvgPool1d, t(2, 3, 8))
def avg_pool1d_module():
    return nn.AvgPool1d(2)


# CHECK-LABEL: case torch.nn.functional.avg_pool2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x7x7xf32>)
# CHECK:         %[[AVG_POOL:.+]] = fxla.avg_pool %[[X]] {kernel_size = [3, 3], stride = [2, 2], padding = [1, 1], ceil_mode = true, count_include_pad = true, divisor_override = 4} : tensor<1x2x7x7xf32> -> tensor<1x2x4x4xf32>
@case(F.avg_pool2d, t(1, 2, 7, 7))
def avg_pool2d_ceil_divisor(x):
    return F.avg_pool2d(x, 3, 2, padding=1, ceil_mode=True, divisor_override=4)


# CHECK-LABEL: case torch.nn.AvgPool2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x8x8xf16>)
# CHECK:         %[[AVG_POOL:.+]] = fxla.avg_pool %[[X]] {kernel_size = [2, 4], stride = [2, 2], padding = [0, 0], ceil_mode = false, count_include_pad = true, divisor_override = 0} : tensor<2x3x8x8xf16> -> tensor<2x3x4x3xf16>
@case(nn.AvgPool2d, t(2, 3, 8, 8, dtype=F16))
def avg_pool2d_module():
    return nn.AvgPool2d((2, 4), stride=(2, 2))


# CHECK-LABEL: case torch.nn.functional.avg_pool3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x4x4x4xf32>)
# CHECK:         %[[AVG_POOL:.+]] = fxla.avg_pool %[[X]] {kernel_size = [2, 2, 2], stride = [2, 2, 2], padding = [0, 0, 0], ceil_mode = false, count_include_pad = true, divisor_override = 0} : tensor<1x2x4x4x4xf32> -> tensor<1x2x2x2x2xf32>
@case(F.avg_pool3d, t(1, 2, 4, 4, 4))
def avg_pool3d(x):
    return F.avg_pool3d(x, 2)


# CHECK-LABEL: case torch.nn.AvgPool3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x4x5x6xf32>)
# CHECK:         %[[AVG_POOL:.+]] = fxla.avg_pool %[[X]] {kernel_size = [3, 3, 3], stride = [1, 1, 1], padding = [1, 1, 1], ceil_mode = false, count_include_pad = false, divisor_override = 0} : tensor<1x2x4x5x6xf32> -> tensor<1x2x4x5x6xf32>
@case(nn.AvgPool3d, t(1, 2, 4, 5, 6))
def avg_pool3d_module():
    return nn.AvgPool3d(3, stride=1, padding=1, count_include_pad=False)


# CHECK-LABEL: case torch.adaptive_avg_pool1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x10xf32>)
# CHECK:         %[[POS:.+]] = fxla.constant {value = dense<{{\[}}[0, 1, 2], [2, 3, 4], [5, 6, 7], [7, 8, 9]]> : tensor<4x3xi64>}
# CHECK:         %[[LEN:.+]] = fxla.constant {value = dense<3> : tensor<4x1xi64>}
# CHECK:         %[[WIN:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 2} : tensor<2x3x10xf32>, tensor<12xi64> -> tensor<2x3x12xf32>
# CHECK:         %[[KEPT:.+]] = fxla.where %{{.+}}, %{{.+}}, %{{.+}} : tensor<1x1x4x3xi1>, tensor<2x3x4x3xf32>, tensor<f32> -> tensor<2x3x4x3xf32>
# CHECK:         %[[SUM:.+]] = fxla.sum %[[KEPT]] {dims = [3], keepdim = false} : tensor<2x3x4x3xf32> -> tensor<2x3x4xf32>
# CHECK:         %[[MEAN:.+]] = fxla.div %[[SUM]], %{{.+}} : tensor<2x3x4xf32>, tensor<1x1x4xf32> -> tensor<2x3x4xf32>
# CHECK:         return %[[MEAN]] : tensor<2x3x4xf32>
@case(torch.adaptive_avg_pool1d, t(2, 3, 10))
def adaptive_avg_pool1d(x):
    return torch.adaptive_avg_pool1d(x, 4)


# CHECK-LABEL: case torch.nn.AdaptiveAvgPool1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x9xf32>)
# CHECK:         %[[AVG_POOL:.+]] = fxla.avg_pool %[[X]] {kernel_size = [3], stride = [3], padding = [0], ceil_mode = false, count_include_pad = true, divisor_override = 0} : tensor<2x3x9xf32> -> tensor<2x3x3xf32>
@case(nn.AdaptiveAvgPool1d, t(2, 3, 9))
def adaptive_avg_pool1d_module():
    return nn.AdaptiveAvgPool1d(3)


# CHECK-LABEL: case torch.nn.functional.adaptive_avg_pool2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x7x5xf32>)
# CHECK:         %[[WIN:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 2} : tensor<2x3x7x5xf32>, tensor<9xi64> -> tensor<2x3x9x5xf32>
# CHECK:         %[[SUM:.+]] = fxla.sum %{{.+}} {dims = [3], keepdim = false} : tensor<2x3x3x3x5xf32> -> tensor<2x3x3x5xf32>
# CHECK:         %[[MEAN:.+]] = fxla.div %[[SUM]], %{{.+}} : tensor<2x3x3x5xf32>, tensor<1x1x3x1xf32> -> tensor<2x3x3x5xf32>
# CHECK:         return %[[MEAN]] : tensor<2x3x3x5xf32>
@case(F.adaptive_avg_pool2d, t(2, 3, 7, 5))
def adaptive_avg_pool2d(x):
    return F.adaptive_avg_pool2d(x, (3, None))


# CHECK-LABEL: case torch.nn.AdaptiveAvgPool2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x8x8xf32>)
# CHECK:         %[[AVG_POOL:.+]] = fxla.avg_pool %[[X]] {kernel_size = [8, 8], stride = [8, 8], padding = [0, 0], ceil_mode = false, count_include_pad = true, divisor_override = 0} : tensor<2x3x8x8xf32> -> tensor<2x3x1x1xf32>
@case(nn.AdaptiveAvgPool2d, t(2, 3, 8, 8))
def adaptive_avg_pool2d_module_global():
    return nn.AdaptiveAvgPool2d(1)


# CHECK-LABEL: case torch.nn.functional.adaptive_avg_pool3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x4x5xf32>)
# CHECK:         %[[D:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 2} : tensor<1x2x3x4x5xf32>, tensor<4xi64> -> tensor<1x2x4x4x5xf32>
# CHECK:         %[[H:.+]] = fxla.index_select %{{.+}}, %{{.+}} {dim = 3} : tensor<1x2x2x4x5xf32>, tensor<6xi64> -> tensor<1x2x2x6x5xf32>
# CHECK:         %[[SUM:.+]] = fxla.sum %{{.+}} {dims = [5], keepdim = false} : tensor<1x2x2x3x2x3xf32> -> tensor<1x2x2x3x2xf32>
# CHECK:         %[[MEAN:.+]] = fxla.div %[[SUM]], %{{.+}} : tensor<1x2x2x3x2xf32>, tensor<1x1x1x1x2xf32> -> tensor<1x2x2x3x2xf32>
# CHECK:         return %[[MEAN]] : tensor<1x2x2x3x2xf32>
@case(F.adaptive_avg_pool3d, t(1, 2, 3, 4, 5))
def adaptive_avg_pool3d(x):
    return F.adaptive_avg_pool3d(x, (2, 3, 2))


# CHECK-LABEL: case torch.nn.AdaptiveAvgPool3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x4x5xf32>)
# CHECK:         %[[D:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 2} : tensor<1x2x3x4x5xf32>, tensor<3xi64> -> tensor<1x2x3x4x5xf32>
# CHECK:         %[[SUM:.+]] = fxla.sum %{{.+}} {dims = [3], keepdim = false} : tensor<1x2x1x3x4x5xf32> -> tensor<1x2x1x4x5xf32>
# CHECK:         %[[MEAN:.+]] = fxla.div %{{.+}}, %{{.+}} : tensor<1x2x1x2x3xf32>, tensor<1x1x1x1x3xf32> -> tensor<1x2x1x2x3xf32>
# CHECK:         return %[[MEAN]] : tensor<1x2x1x2x3xf32>
@case(nn.AdaptiveAvgPool3d, t(1, 2, 3, 4, 5))
def adaptive_avg_pool3d_module():
    return nn.AdaptiveAvgPool3d((1, 2, 3))


# CHECK-LABEL: case torch.nn.functional.adaptive_max_pool1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x7xf32>)
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 2} : tensor<2x4x7xf32>, tensor<9xi64> -> tensor<2x4x9xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[INDEX_SELECT]] {shape = [2, 4, 3, 3]} : tensor<2x4x9xf32> -> tensor<2x4x3x3xf32>
# CHECK:         %[[AMAX:.+]] = fxla.reshape %{{.+}} {{.*}} -> tensor<2x4x3xf32>
# CHECK:         return %[[AMAX]] : tensor<2x4x3xf32>
@case(F.adaptive_max_pool1d, t(2, 4, 7))
def adaptive_max_pool1d(x):
    return F.adaptive_max_pool1d(x, 3)


# CHECK-LABEL: case torch.adaptive_max_pool1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x7xf32>)
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 2} : tensor<2x4x7xf32>, tensor<12xi64> -> tensor<2x4x12xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[INDEX_SELECT]] {shape = [2, 4, 4, 3]} : tensor<2x4x12xf32> -> tensor<2x4x4x3xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %{{.+}} {shape = [2, 4, 4]} : tensor<2x4x4x1xi64> -> tensor<2x4x4xi64>
# CHECK:         return %{{.+}}, %[[RESHAPE_2]] : tensor<2x4x4xf32>, tensor<2x4x4xi64>
@case(torch.adaptive_max_pool1d, t(2, 4, 7))
def torch_adaptive_max_pool1d(x):
    return torch.adaptive_max_pool1d(x, 4)


# CHECK-LABEL: case torch.nn.functional.adaptive_max_pool1d_with_indices:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x7xf32>)
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 2} : tensor<2x4x7xf32>, tensor<9xi64> -> tensor<2x4x9xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[INDEX_SELECT]] {shape = [2, 4, 3, 3]} : tensor<2x4x9xf32> -> tensor<2x4x3x3xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %{{.+}} {shape = [2, 4, 3]} : tensor<2x4x3x1xi64> -> tensor<2x4x3xi64>
# CHECK:         return %{{.+}}, %[[RESHAPE_2]] : tensor<2x4x3xf32>, tensor<2x4x3xi64>
@case(F.adaptive_max_pool1d_with_indices, t(2, 4, 7))
def adaptive_max_pool1d_with_indices(x):
    return F.adaptive_max_pool1d_with_indices(x, 3)


# CHECK-LABEL: case torch.nn.AdaptiveMaxPool1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x7xf32>)
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 2} : tensor<2x4x7xf32>, tensor<9xi64> -> tensor<2x4x9xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[INDEX_SELECT]] {shape = [2, 4, 3, 3]} : tensor<2x4x9xf32> -> tensor<2x4x3x3xf32>
# CHECK:         %[[AMAX:.+]] = fxla.reshape %{{.+}} {{.*}} -> tensor<2x4x3xf32>
# CHECK:         return %[[AMAX]] : tensor<2x4x3xf32>
@case(nn.AdaptiveMaxPool1d, t(2, 4, 7))
def adaptive_max_pool1d_module():
    return nn.AdaptiveMaxPool1d(3)


# CHECK-LABEL: case torch.nn.functional.adaptive_max_pool2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x7x5xf32>)
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 2} : tensor<2x3x7x5xf32>, tensor<9xi64> -> tensor<2x3x9x5xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[INDEX_SELECT]] {shape = [2, 3, 3, 3, 5]} : tensor<2x3x9x5xf32> -> tensor<2x3x3x3x5xf32>
# CHECK:         %[[AMAX:.+]] = fxla.reshape %{{.+}} {{.*}} -> tensor<2x3x3x2xf32>
# CHECK:         return %[[AMAX]] : tensor<2x3x3x2xf32>
@case(F.adaptive_max_pool2d, t(2, 3, 7, 5))
def adaptive_max_pool2d(x):
    return F.adaptive_max_pool2d(x, (3, 2))


# CHECK-LABEL: case torch.nn.functional.adaptive_max_pool2d_with_indices:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x6x6xf32>)
# CHECK:         %[[MAX_POOL_WITH_INDICES:.+]]:2 = fxla.max_pool_with_indices %[[X]] {kernel_size = [3, 2], stride = [3, 2], padding = [0, 0], dilation = [1, 1], ceil_mode = false} : tensor<2x3x6x6xf32> -> (tensor<2x3x2x3xf32>, tensor<2x3x2x3xi64>)
# CHECK:         return %[[MAX_POOL_WITH_INDICES]]#0, %[[MAX_POOL_WITH_INDICES]]#1 : tensor<2x3x2x3xf32>, tensor<2x3x2x3xi64>
@case(F.adaptive_max_pool2d_with_indices, t(2, 3, 6, 6))
def adaptive_max_pool2d_with_indices(x):
    return F.adaptive_max_pool2d_with_indices(x, (2, 3))


# CHECK-LABEL: case torch.nn.AdaptiveMaxPool2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x5x7xf32>)
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 2} : tensor<2x4x5x7xf32>, tensor<6xi64> -> tensor<2x4x6x7xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[INDEX_SELECT]] {shape = [2, 4, 2, 3, 7]} : tensor<2x4x6x7xf32> -> tensor<2x4x2x3x7xf32>
# CHECK:         %[[AMAX:.+]] = fxla.reshape %{{.+}} {{.*}} -> tensor<2x4x2x3xf32>
# CHECK:         return %[[AMAX]] : tensor<2x4x2x3xf32>
@case(nn.AdaptiveMaxPool2d, t(2, 4, 5, 7))
def adaptive_max_pool2d_module():
    return nn.AdaptiveMaxPool2d((2, 3))


# CHECK-LABEL: case torch.nn.functional.adaptive_max_pool3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x4x5xf32>)
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 2} : tensor<1x2x3x4x5xf32>, tensor<4xi64> -> tensor<1x2x4x4x5xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[INDEX_SELECT]] {shape = [1, 2, 2, 2, 4, 5]} : tensor<1x2x4x4x5xf32> -> tensor<1x2x2x2x4x5xf32>
# CHECK:         %[[AMAX:.+]] = fxla.reshape %{{.+}} {{.*}} -> tensor<1x2x2x2x2xf32>
# CHECK:         return %[[AMAX]] : tensor<1x2x2x2x2xf32>
@case(F.adaptive_max_pool3d, t(1, 2, 3, 4, 5))
def adaptive_max_pool3d(x):
    return F.adaptive_max_pool3d(x, 2)


# CHECK-LABEL: case torch.nn.functional.adaptive_max_pool3d_with_indices:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x4x5xf32>)
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 2} : tensor<1x2x3x4x5xf32>, tensor<4xi64> -> tensor<1x2x4x4x5xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[INDEX_SELECT]] {shape = [1, 2, 2, 2, 4, 5]} : tensor<1x2x4x4x5xf32> -> tensor<1x2x2x2x4x5xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %{{.+}} {shape = [1, 2, 2, 3, 2]} : tensor<1x2x2x3x2x1xi64> -> tensor<1x2x2x3x2xi64>
# CHECK:         return %{{.+}}, %[[RESHAPE_2]] : tensor<1x2x2x3x2xf32>, tensor<1x2x2x3x2xi64>
@case(F.adaptive_max_pool3d_with_indices, t(1, 2, 3, 4, 5))
def adaptive_max_pool3d_with_indices(x):
    return F.adaptive_max_pool3d_with_indices(x, (2, 3, 2))


# CHECK-LABEL: case torch.nn.AdaptiveMaxPool3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x4x5xf32>)
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 2} : tensor<1x2x3x4x5xf32>, tensor<3xi64> -> tensor<1x2x3x4x5xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[INDEX_SELECT]] {shape = [1, 2, 1, 3, 4, 5]} : tensor<1x2x3x4x5xf32> -> tensor<1x2x1x3x4x5xf32>
# CHECK:         %[[AMAX:.+]] = fxla.reshape %{{.+}} {{.*}} -> tensor<1x2x1x2x3xf32>
# CHECK:         return %[[AMAX]] : tensor<1x2x1x2x3xf32>
@case(nn.AdaptiveMaxPool3d, t(1, 2, 3, 4, 5))
def adaptive_max_pool3d_module():
    return nn.AdaptiveMaxPool3d((1, 2, 3))


# lp_pool: (avg_pool(x^p) * window size)^(1/p), with torch's sign(out) * relu(|out|) in between.
# CHECK-LABEL: case torch.nn.functional.lp_pool1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x6xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[POW:.+]] = fxla.pow %[[X]], %[[CONSTANT]] : tensor<2x3x6xf32>, tensor<f32> -> tensor<2x3x6xf32>
# CHECK:         %[[POW_2:.+]] = fxla.pow %{{.+}}, %{{.+}} : tensor<2x3x3xf32>, tensor<f32> -> tensor<2x3x3xf32>
# CHECK:         return %[[POW_2]] : tensor<2x3x3xf32>
@case(F.lp_pool1d, t(2, 3, 6))
def lp_pool1d(x):
    return F.lp_pool1d(x, 2, 2)


# CHECK-LABEL: case torch.nn.functional.lp_pool2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x4x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<3.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[POW:.+]] = fxla.pow %[[X]], %[[CONSTANT]] : tensor<1x2x4x4xf32>, tensor<f32> -> tensor<1x2x4x4xf32>
# CHECK:         fxla.avg_pool %[[POW]] {kernel_size = [2, 2], stride = [1, 1]
# CHECK:         %[[POW_2:.+]] = fxla.pow %{{.+}}, %{{.+}} : tensor<1x2x3x3xf32>, tensor<f32> -> tensor<1x2x3x3xf32>
# CHECK:         return %[[POW_2]] : tensor<1x2x3x3xf32>
@case(F.lp_pool2d, t(1, 2, 4, 4))
def lp_pool2d(x):
    return F.lp_pool2d(x, 3, 2, stride=1)


# CHECK-LABEL: case torch.nn.functional.lp_pool3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x4x4x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[POW:.+]] = fxla.pow %[[X]], %[[CONSTANT]] : tensor<1x2x4x4x4xf32>, tensor<f32> -> tensor<1x2x4x4x4xf32>
# CHECK:         %[[POW_2:.+]] = fxla.pow %{{.+}}, %{{.+}} : tensor<1x2x2x2x2xf32>, tensor<f32> -> tensor<1x2x2x2x2xf32>
# CHECK:         return %[[POW_2]] : tensor<1x2x2x2x2xf32>
@case(F.lp_pool3d, t(1, 2, 4, 4, 4))
def lp_pool3d(x):
    return F.lp_pool3d(x, 2, 2)


# CHECK-LABEL: case torch.nn.LPPool1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x6xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<1.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[POW:.+]] = fxla.pow %[[X]], %[[CONSTANT]] : tensor<2x3x6xf32>, tensor<f32> -> tensor<2x3x6xf32>
# CHECK:         %[[POW_2:.+]] = fxla.pow %{{.+}}, %{{.+}} : tensor<2x3x2xf32>, tensor<f32> -> tensor<2x3x2xf32>
# CHECK:         return %[[POW_2]] : tensor<2x3x2xf32>
@case(nn.LPPool1d, t(2, 3, 6))
def lp_pool1d_module():
    return nn.LPPool1d(1, 3)


# CHECK-LABEL: case torch.nn.LPPool2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x4x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[POW:.+]] = fxla.pow %[[X]], %[[CONSTANT]] : tensor<1x2x4x4xf32>, tensor<f32> -> tensor<1x2x4x4xf32>
# CHECK:         fxla.avg_pool %[[POW]] {kernel_size = [2, 2], stride = [2, 2]
# CHECK:         %[[POW_2:.+]] = fxla.pow %{{.+}}, %{{.+}} : tensor<1x2x2x2xf32>, tensor<f32> -> tensor<1x2x2x2xf32>
# CHECK:         return %[[POW_2]] : tensor<1x2x2x2xf32>
@case(nn.LPPool2d, t(1, 2, 4, 4))
def lp_pool2d_module():
    return nn.LPPool2d(2, 2)


# CHECK-LABEL: case torch.nn.LPPool3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x4x4x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[POW:.+]] = fxla.pow %[[X]], %[[CONSTANT]] : tensor<1x2x4x4x4xf32>, tensor<f32> -> tensor<1x2x4x4x4xf32>
# CHECK:         %[[POW_2:.+]] = fxla.pow %{{.+}}, %{{.+}} : tensor<1x2x2x2x2xf32>, tensor<f32> -> tensor<1x2x2x2x2xf32>
# CHECK:         return %[[POW_2]] : tensor<1x2x2x2x2xf32>
@case(nn.LPPool3d, t(1, 2, 4, 4, 4))
def lp_pool3d_module():
    return nn.LPPool3d(2, 2)


# max_unpool2d: zeros of the unpooled size, each value scattered to its index within its (batch, channel) plane.
# CHECK-LABEL: case torch.nn.functional.max_unpool2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x2x2xf32>, %[[IDX:.+]]: tensor<2x3x2x2xi64>) -> tensor<2x3x4x4xf32>
# CHECK:         %[[VALUES:.+]] = fxla.reshape %[[X]] {shape = [2, 3, 4]}
# CHECK:         %[[FLAT:.+]] = fxla.reshape %[[IDX]] {shape = [2, 3, 4]}
# CHECK:         %[[ZEROS:.+]] = fxla.expand %{{.+}} {shape = [2, 3, 16]}
# CHECK:         %[[OUT:.+]] = fxla.scatter %[[ZEROS]], %[[FLAT]], %[[VALUES]] {dim = 2, reduce = "none"}
# CHECK:         fxla.reshape %[[OUT]] {shape = [2, 3, 4, 4]}
@case(F.max_unpool2d, t(2, 3, 2, 2), t(2, 3, 2, 2, dtype=torch.int64))
def max_unpool2d(x, idx):
    return F.max_unpool2d(x, idx, 2)


# max_unpool1d with stride and padding: the unpooled length is (3 - 1) * 2 - 2 * 1 + 3 = 5.
# CHECK-LABEL: case torch.nn.functional.max_unpool1d:
# CHECK:         %[[ZEROS:.+]] = fxla.expand %{{.+}} {shape = [2, 4, 5]}
# CHECK:         fxla.scatter %[[ZEROS]], %{{.+}}, %{{.+}} {dim = 2, reduce = "none"} : tensor<2x4x5xf32>, tensor<2x4x3xi64>, tensor<2x4x3xf32> -> tensor<2x4x5xf32>
@case(F.max_unpool1d, t(2, 4, 3), t(2, 4, 3, dtype=torch.int64))
def max_unpool1d(x, idx):
    return F.max_unpool1d(x, idx, 3, stride=2, padding=1)


# max_unpool3d, unbatched, with an explicit output_size: the planes are the channels.
# CHECK-LABEL: case torch.nn.functional.max_unpool3d:
# CHECK:         fxla.scatter %{{.+}}, %{{.+}}, %{{.+}} {dim = 1, reduce = "none"} : tensor<2x75xf32>, tensor<2x8xi64>, tensor<2x8xf32> -> tensor<2x75xf32>
# CHECK:         fxla.reshape %{{.+}} {shape = [2, 5, 5, 3]}
@case(F.max_unpool3d, t(2, 2, 2, 2), t(2, 2, 2, 2, dtype=torch.int64))
def max_unpool3d(x, idx):
    return F.max_unpool3d(x, idx, 2, output_size=(5, 5, 3))


# The modules take their kernel/stride/padding from the module and output_size per call.
# CHECK-LABEL: case torch.nn.MaxUnpool1d:
# CHECK:         fxla.scatter {{.+}} {dim = 2, reduce = "none"} : tensor<1x2x8xf32>, tensor<1x2x4xi64>, tensor<1x2x4xf32> -> tensor<1x2x8xf32>
@case(nn.MaxUnpool1d, t(1, 2, 4), t(1, 2, 4, dtype=torch.int64))
def max_unpool1d_module():
    return nn.MaxUnpool1d(2)


# CHECK-LABEL: case torch.nn.MaxUnpool2d:
# CHECK:         fxla.scatter {{.+}} {dim = 2, reduce = "none"} : tensor<1x2x36xf32>, tensor<1x2x4xi64>, tensor<1x2x4xf32> -> tensor<1x2x36xf32>
# CHECK:         fxla.reshape %{{.+}} {shape = [1, 2, 6, 6]}
@case(nn.MaxUnpool2d, t(1, 2, 2, 2), t(1, 2, 2, 2, dtype=torch.int64))
def max_unpool2d_module():
    return nn.MaxUnpool2d(3)


# CHECK-LABEL: case torch.nn.MaxUnpool3d:
# CHECK:         fxla.scatter {{.+}} {dim = 2, reduce = "none"} : tensor<1x1x64xf32>, tensor<1x1x8xi64>, tensor<1x1x8xf32> -> tensor<1x1x64xf32>
@case(nn.MaxUnpool3d, t(1, 1, 2, 2, 2), t(1, 1, 2, 2, 2, dtype=torch.int64))
def max_unpool3d_module():
    return nn.MaxUnpool3d(2)


def idx(*shape, high):
    return torch.randint(0, high, shape)
