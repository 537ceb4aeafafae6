# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `padding` (lowering/rules/padding.py): F.pad in every mode and the nn padding modules
# (1-3-D) -- one case per op object of fxla.lowering.RULES (and per F.pad mode); constant padding is one fxla.pad
# (negative entries crop), the other modes gather each padded dim with a constant index list, visible in the
# checks.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
import torch.nn as nn
import torch.nn.functional as F

from fxla.testing import case, t

I64 = torch.int64


# CHECK-LABEL: case torch.nn.functional.pad (constant):
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PAD:.+]] = fxla.pad %[[X]] {low = [0, 2, 1], high = [0, 0, -1], value = -1.500000e+00} : tensor<2x3x4xf32> -> tensor<2x5x4xf32>
@case(F.pad, t(2, 3, 4), variant="constant")
def pad_constant(x):
    return F.pad(x, (1, -1, 2, 0), value=-1.5)


# CHECK-LABEL: case torch.nn.functional.pad (reflect):
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x5xf32>)
# CHECK:         %[[IDX:.+]] = fxla.constant {value = dense<[2, 1, 0, 1, 2, 3, 4, 3]> : tensor<8xi64>}
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %[[IDX]] {dim = 2} : tensor<2x3x5xf32>, tensor<8xi64> -> tensor<2x3x8xf32>
# CHECK:         return %[[INDEX_SELECT]] : tensor<2x3x8xf32>
@case(F.pad, t(2, 3, 5), variant="reflect")
def pad_reflect(x):
    return F.pad(x, (2, 1), mode="reflect")


# CHECK-LABEL: case torch.nn.functional.pad (replicate):
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xi64>)
# CHECK:         %[[IDX:.+]] = fxla.constant {value = dense<[0, 1, 2, 3, 3, 3]> : tensor<6xi64>}
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %[[IDX]] {dim = 2} : tensor<2x3x4xi64>, tensor<6xi64> -> tensor<2x3x6xi64>
# CHECK:         %[[IDX_2:.+]] = fxla.constant {value = dense<[0, 0, 1, 2]> : tensor<4xi64>}
# CHECK:         %[[INDEX_SELECT_2:.+]] = fxla.index_select %[[INDEX_SELECT]], %[[IDX_2]] {dim = 1} : tensor<2x3x6xi64>, tensor<4xi64> -> tensor<2x4x6xi64>
# CHECK:         return %[[INDEX_SELECT_2]] : tensor<2x4x6xi64>
@case(F.pad, t(2, 3, 4, dtype=I64), variant="replicate")
def pad_replicate(x):
    return F.pad(x, (0, 2, 1, 0), mode="replicate")


# CHECK-LABEL: case torch.nn.functional.pad (circular):
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[IDX:.+]] = fxla.constant {value = dense<[1, 2, 3, 1, 2]> : tensor<5xi64>}
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %[[IDX]] {dim = 2} : tensor<2x3x4xf32>, tensor<5xi64> -> tensor<2x3x5xf32>
# CHECK:         return %[[INDEX_SELECT]] : tensor<2x3x5xf32>
@case(F.pad, t(2, 3, 4), variant="circular")
def pad_circular(x):
    return F.pad(x, (-1, 2), mode="circular")


# CHECK-LABEL: case torch.nn.ReflectionPad1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[IDX:.+]] = fxla.constant {value = dense<[1, 0, 1, 2, 3, 2, 1]> : tensor<7xi64>}
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %[[IDX]] {dim = 2} : tensor<2x3x4xf32>, tensor<7xi64> -> tensor<2x3x7xf32>
# CHECK:         return %[[INDEX_SELECT]] : tensor<2x3x7xf32>
@case(nn.ReflectionPad1d, t(2, 3, 4))
def reflection_pad1d():
    return nn.ReflectionPad1d((1, 2))


# CHECK-LABEL: case torch.nn.ReflectionPad2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x3xf32>)
# CHECK:         %[[IDX:.+]] = fxla.constant {value = dense<[1, 0, 1, 2, 1]> : tensor<5xi64>}
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %[[IDX]] {dim = 3} : tensor<1x2x3x3xf32>, tensor<5xi64> -> tensor<1x2x3x5xf32>
# CHECK:         %[[IDX_2:.+]] = fxla.constant {value = dense<[1, 0, 1, 2, 1]> : tensor<5xi64>}
# CHECK:         %[[INDEX_SELECT_2:.+]] = fxla.index_select %[[INDEX_SELECT]], %[[IDX_2]] {dim = 2} : tensor<1x2x3x5xf32>, tensor<5xi64> -> tensor<1x2x5x5xf32>
# CHECK:         return %[[INDEX_SELECT_2]] : tensor<1x2x5x5xf32>
@case(nn.ReflectionPad2d, t(1, 2, 3, 3))
def reflection_pad2d():
    return nn.ReflectionPad2d(1)


# CHECK-LABEL: case torch.nn.ReflectionPad3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x1x2x3x3xf32>)
# CHECK:         %[[IDX:.+]] = fxla.constant {value = dense<[1, 0, 1, 2, 1]> : tensor<5xi64>}
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %[[IDX]] {dim = 3} : tensor<1x1x2x3x3xf32>, tensor<5xi64> -> tensor<1x1x2x5x3xf32>
# CHECK:         %[[IDX_2:.+]] = fxla.constant {value = dense<[1, 0, 1]> : tensor<3xi64>}
# CHECK:         %[[INDEX_SELECT_2:.+]] = fxla.index_select %[[INDEX_SELECT]], %[[IDX_2]] {dim = 2} : tensor<1x1x2x5x3xf32>, tensor<3xi64> -> tensor<1x1x3x5x3xf32>
# CHECK:         return %[[INDEX_SELECT_2]] : tensor<1x1x3x5x3xf32>
@case(nn.ReflectionPad3d, t(1, 1, 2, 3, 3))
def reflection_pad3d():
    return nn.ReflectionPad3d((0, 0, 1, 1, 1, 0))


# CHECK-LABEL: case torch.nn.ReplicationPad1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[IDX:.+]] = fxla.constant {value = dense<[0, 0, 0, 1, 2, 3]> : tensor<6xi64>}
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %[[IDX]] {dim = 2} : tensor<2x3x4xf32>, tensor<6xi64> -> tensor<2x3x6xf32>
# CHECK:         return %[[INDEX_SELECT]] : tensor<2x3x6xf32>
@case(nn.ReplicationPad1d, t(2, 3, 4))
def replication_pad1d():
    return nn.ReplicationPad1d((2, 0))


# CHECK-LABEL: case torch.nn.ReplicationPad2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x3xf32>)
# CHECK:         %[[IDX:.+]] = fxla.constant {value = dense<[0, 0, 1, 2]> : tensor<4xi64>}
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %[[IDX]] {dim = 3} : tensor<1x2x3x3xf32>, tensor<4xi64> -> tensor<1x2x3x4xf32>
# CHECK:         %[[IDX_2:.+]] = fxla.constant {value = dense<[0, 1, 2, 2]> : tensor<4xi64>}
# CHECK:         %[[INDEX_SELECT_2:.+]] = fxla.index_select %[[INDEX_SELECT]], %[[IDX_2]] {dim = 2} : tensor<1x2x3x4xf32>, tensor<4xi64> -> tensor<1x2x4x4xf32>
# CHECK:         return %[[INDEX_SELECT_2]] : tensor<1x2x4x4xf32>
@case(nn.ReplicationPad2d, t(1, 2, 3, 3))
def replication_pad2d():
    return nn.ReplicationPad2d((1, 0, 0, 1))


# CHECK-LABEL: case torch.nn.ReplicationPad3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x1x2x2x2xf32>)
# CHECK:         %[[IDX:.+]] = fxla.constant {value = dense<[0, 0, 1]> : tensor<3xi64>}
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %[[IDX]] {dim = 4} : tensor<1x1x2x2x2xf32>, tensor<3xi64> -> tensor<1x1x2x2x3xf32>
# CHECK:         return %[[INDEX_SELECT]] : tensor<1x1x2x2x3xf32>
@case(nn.ReplicationPad3d, t(1, 1, 2, 2, 2))
def replication_pad3d():
    return nn.ReplicationPad3d((1, 0, 0, 0, 0, 0))


# CHECK-LABEL: case torch.nn.CircularPad1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[IDX:.+]] = fxla.constant {value = dense<[3, 0, 1, 2, 3, 0]> : tensor<6xi64>}
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %[[IDX]] {dim = 2} : tensor<2x3x4xf32>, tensor<6xi64> -> tensor<2x3x6xf32>
# CHECK:         return %[[INDEX_SELECT]] : tensor<2x3x6xf32>
@case(nn.CircularPad1d, t(2, 3, 4))
def circular_pad1d():
    return nn.CircularPad1d(1)


# CHECK-LABEL: case torch.nn.CircularPad2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x3xf32>)
# CHECK:         %[[IDX:.+]] = fxla.constant {value = dense<[0, 1, 2, 0]> : tensor<4xi64>}
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %[[IDX]] {dim = 3} : tensor<1x2x3x3xf32>, tensor<4xi64> -> tensor<1x2x3x4xf32>
# CHECK:         %[[IDX_2:.+]] = fxla.constant {value = dense<[1, 2, 0, 1, 2]> : tensor<5xi64>}
# CHECK:         %[[INDEX_SELECT_2:.+]] = fxla.index_select %[[INDEX_SELECT]], %[[IDX_2]] {dim = 2} : tensor<1x2x3x4xf32>, tensor<5xi64> -> tensor<1x2x5x4xf32>
# CHECK:         return %[[INDEX_SELECT_2]] : tensor<1x2x5x4xf32>
@case(nn.CircularPad2d, t(1, 2, 3, 3))
def circular_pad2d():
    return nn.CircularPad2d((0, 1, 2, 0))


# CHECK-LABEL: case torch.nn.CircularPad3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x1x2x2x3xf32>)
# CHECK:         %[[IDX:.+]] = fxla.constant {value = dense<[2, 0, 1, 2, 0]> : tensor<5xi64>}
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %[[IDX]] {dim = 4} : tensor<1x1x2x2x3xf32>, tensor<5xi64> -> tensor<1x1x2x2x5xf32>
# CHECK:         return %[[INDEX_SELECT]] : tensor<1x1x2x2x5xf32>
@case(nn.CircularPad3d, t(1, 1, 2, 2, 3))
def circular_pad3d():
    return nn.CircularPad3d((1, 1, 0, 0, 0, 0))


# CHECK-LABEL: case torch.nn.ConstantPad1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PAD:.+]] = fxla.pad %[[X]] {low = [0, 0, 1], high = [0, 0, 2], value = 3.500000e+00} : tensor<2x3x4xf32> -> tensor<2x3x7xf32>
@case(nn.ConstantPad1d, t(2, 3, 4))
def constant_pad1d():
    return nn.ConstantPad1d((1, 2), 3.5)


# CHECK-LABEL: case torch.nn.ConstantPad2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x3xf32>)
# CHECK:         %[[PAD:.+]] = fxla.pad %[[X]] {low = [0, 0, 1, 1], high = [0, 0, 1, 1], value = -2.000000e+00} : tensor<1x2x3x3xf32> -> tensor<1x2x5x5xf32>
@case(nn.ConstantPad2d, t(1, 2, 3, 3))
def constant_pad2d():
    return nn.ConstantPad2d(1, -2.0)


# CHECK-LABEL: case torch.nn.ConstantPad3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x1x2x2x2xf32>)
# CHECK:         %[[PAD:.+]] = fxla.pad %[[X]] {low = [0, 0, 1, 0, 0], high = [0, 0, 0, 1, 1], value = 5.000000e-01} : tensor<1x1x2x2x2xf32> -> tensor<1x1x3x3x3xf32>
@case(nn.ConstantPad3d, t(1, 1, 2, 2, 2))
def constant_pad3d():
    return nn.ConstantPad3d((0, 1, 0, 1, 1, 0), 0.5)


# CHECK-LABEL: case torch.nn.ZeroPad1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PAD:.+]] = fxla.pad %[[X]] {low = [0, 0, 2], high = [0, 0, 0], value = 0.000000e+00} : tensor<2x3x4xf32> -> tensor<2x3x6xf32>
@case(nn.ZeroPad1d, t(2, 3, 4))
def zero_pad1d():
    return nn.ZeroPad1d((2, 0))


# CHECK-LABEL: case torch.nn.ZeroPad2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x3xf32>)
# CHECK:         %[[PAD:.+]] = fxla.pad %[[X]] {low = [0, 0, 0, 1], high = [0, 0, 2, 1], value = 0.000000e+00} : tensor<1x2x3x3xf32> -> tensor<1x2x5x5xf32>
@case(nn.ZeroPad2d, t(1, 2, 3, 3))
def zero_pad2d():
    return nn.ZeroPad2d((1, 1, 0, 2))


# CHECK-LABEL: case torch.nn.ZeroPad3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x1x2x2x2xf32>)
# CHECK:         %[[PAD:.+]] = fxla.pad %[[X]] {low = [0, 0, 1, 1, 1], high = [0, 0, 1, 1, 1], value = 0.000000e+00} : tensor<1x1x2x2x2xf32> -> tensor<1x1x4x4x4xf32>
@case(nn.ZeroPad3d, t(1, 1, 2, 2, 2))
def zero_pad3d():
    return nn.ZeroPad3d(1)
