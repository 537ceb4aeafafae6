# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `im2col` (lowering/rules/im2col.py): F.unfold / nn.Unfold (one slice per kernel offset,
# stacked) and F.fold / nn.Fold (their inverse sum) -- one case per op object of fxla.lowering.RULES.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch.nn as nn
import torch.nn.functional as F

from fxla.testing import case, t


# unfold (im2col): one strided slice of the input per kernel offset, stacked as [N, C, kh * kw, L].
# CHECK-LABEL: case torch.nn.functional.unfold:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x3xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0, 0, 0], limit = [1, 2, 2, 2], stride = [1, 1, 1, 1]} : tensor<1x2x3x3xf32> -> tensor<1x2x2x2xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[SLICE]] {shape = [1, 2, 1, 4]} : tensor<1x2x2x2xf32> -> tensor<1x2x1x4xf32>
# CHECK:         %[[COLS:.+]] = fxla.concat %[[RESHAPE]], %{{.+}}, %{{.+}}, %{{.+}} {dim = 2} : tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32> -> tensor<1x2x4x4xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[COLS]] {shape = [1, 8, 4]} : tensor<1x2x4x4xf32> -> tensor<1x8x4xf32>
# CHECK:         return %[[RESHAPE_2]] : tensor<1x8x4xf32>
@case(F.unfold, t(1, 2, 3, 3))
def unfold(x):
    return F.unfold(x, 2)


# fold (col2im): each offset's block padded into place and summed.
# CHECK-LABEL: case torch.nn.functional.fold:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x8x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [1, 2, 4, 2, 2]} : tensor<1x8x4xf32> -> tensor<1x2x4x2x2xf32>
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[RESHAPE]] {start = [0, 0, 0, 0, 0], limit = [1, 2, 1, 2, 2], stride = [1, 1, 1, 1, 1]} : tensor<1x2x4x2x2xf32> -> tensor<1x2x1x2x2xf32>
# CHECK:         fxla.pad %{{.+}} {low = [0, 0, 0, 0], high = [0, 0, 1, 1], value = 0.000000e+00} : tensor<1x2x2x2xf32> -> tensor<1x2x3x3xf32>
# CHECK:         %[[SUM:.+]] = fxla.add %{{.+}}, %{{.+}} : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
# CHECK:         return %{{.+}} : tensor<1x2x3x3xf32>
@case(F.fold, t(1, 8, 4))
def fold(x):
    return F.fold(x, (3, 3), 2)


# CHECK-LABEL: case torch.nn.Unfold:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x1x4x4xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0, 0, 0], limit = [1, 1, 3, 3], stride = [1, 1, 2, 2]} : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[SLICE]] {shape = [1, 1, 1, 4]} : tensor<1x1x2x2xf32> -> tensor<1x1x1x4xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %{{.+}} {shape = [1, 4, 4]} : tensor<1x1x4x4xf32> -> tensor<1x4x4xf32>
# CHECK:         return %[[RESHAPE_2]] : tensor<1x4x4xf32>
@case(nn.Unfold, t(1, 1, 4, 4))
def unfold_module():
    return nn.Unfold(2, stride=2)


# CHECK-LABEL: case torch.nn.Fold:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x4x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [1, 1, 4, 2, 2]} : tensor<1x4x4xf32> -> tensor<1x1x4x2x2xf32>
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[RESHAPE]] {start = [0, 0, 0, 0, 0], limit = [1, 1, 1, 2, 2], stride = [1, 1, 1, 1, 1]} : tensor<1x1x4x2x2xf32> -> tensor<1x1x1x2x2xf32>
# CHECK:         return %{{.+}} : tensor<1x1x4x4xf32>
@case(nn.Fold, t(1, 4, 4))
def fold_module():
    return nn.Fold((4, 4), 2, stride=2)
