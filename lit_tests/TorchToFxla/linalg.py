# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `linalg` (lowering/rules/linalg.py): linear, matmul (1-D and batched broadcasting forms),
# mm/bmm, addmm/baddbmm, einsum (a repeated subscript is a diagonal: the two dims merged and sliced with stride
# n + 1) and bilinear (F.bilinear, which is torch.bilinear, and nn.Bilinear: x1 @ W as [in1, out * in2], times
# x2, summed) -- one case per op object of fxla.lowering.RULES.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

from fxla.testing import case, t

BF16, F16, I64 = torch.bfloat16, torch.float16, torch.int64


# CHECK-LABEL: case torch.nn.functional.linear:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x5x8xf32>, %[[W:.+]]: tensor<3x8xf32>, %[[B:.+]]: tensor<3xf32>)
# CHECK:         %[[LINEAR:.+]] = fxla.linear %[[X]], %[[W]], bias %[[B]] : tensor<2x5x8xf32>, tensor<3x8xf32>, tensor<3xf32> -> tensor<2x5x3xf32>
@case(F.linear, t(2, 5, 8), t(3, 8), t(3))
def linear(x, w, b):
    return F.linear(x, w, b)


# CHECK-LABEL: case torch.nn.Linear:
# CHECK:         func.func @main(%[[X:.+]]: tensor<5x8xf32>, %[[WEIGHT:.+]]: tensor<3x8xf32> {fxla.param = "mod.weight"})
# CHECK:         %[[LINEAR:.+]] = fxla.linear %[[X]], %[[WEIGHT]] : tensor<5x8xf32>, tensor<3x8xf32> -> tensor<5x3xf32>
@case(nn.Linear, t(5, 8))
def linear_module_no_bias():
    return nn.Linear(8, 3, bias=False)


# CHECK-LABEL: case torch.matmul:
# CHECK:         func.func @main(%[[A:.+]]: tensor<2x1x3x8xf32>, %[[B:.+]]: tensor<4x8x5xf32>)
# CHECK:         %[[MATMUL:.+]] = fxla.matmul %[[A]], %[[B]] : tensor<2x1x3x8xf32>, tensor<4x8x5xf32> -> tensor<2x4x3x5xf32>
@case(torch.matmul, t(2, 1, 3, 8), t(4, 8, 5))
def matmul_batched_broadcast(a, b):
    return torch.matmul(a, b)


# CHECK-LABEL: case Tensor.matmul:
# CHECK:         func.func @main(%[[A:.+]]: tensor<8xf32>, %[[B:.+]]: tensor<2x8x3xf32>)
# CHECK:         %[[MATMUL:.+]] = fxla.matmul %[[A]], %[[B]] : tensor<8xf32>, tensor<2x8x3xf32> -> tensor<2x3xf32>
@case(torch.Tensor.matmul, t(8), t(2, 8, 3))
def tensor_matmul_1d_3d(a, b):
    return a.matmul(b)


# CHECK-LABEL: case operator.matmul:
# CHECK:         func.func @main(%[[A:.+]]: tensor<3x8xi64>, %[[B:.+]]: tensor<8xi64>)
# CHECK:         %[[MATMUL:.+]] = fxla.matmul %[[A]], %[[B]] : tensor<3x8xi64>, tensor<8xi64> -> tensor<3xi64>
@case(operator.matmul, t(3, 8, dtype=I64), t(8, dtype=I64))
def matmul_operator_2d_1d(a, b):
    return a @ b


# CHECK-LABEL: case torch.mv:
# CHECK:         func.func @main(%[[M:.+]]: tensor<3x8xf32>, %[[V:.+]]: tensor<8xf32>)
# CHECK:         %[[MV:.+]] = fxla.matmul %[[M]], %[[V]] : tensor<3x8xf32>, tensor<8xf32> -> tensor<3xf32>
@case(torch.mv, t(3, 8), t(8))
def mv(m, v):
    return torch.mv(m, v)


# CHECK-LABEL: case Tensor.mv:
# CHECK:         %[[MV:.+]] = fxla.matmul %{{.+}}, %{{.+}} : tensor<3x8xf32>, tensor<8xf32> -> tensor<3xf32>
@case(torch.Tensor.mv, t(3, 8), t(8))
def tensor_mv(m, v):
    return m.mv(v)


# CHECK-LABEL: case torch.dot:
# CHECK:         func.func @main(%[[A:.+]]: tensor<8xf32>, %[[B:.+]]: tensor<8xf32>)
# CHECK:         %[[DOT:.+]] = fxla.matmul %[[A]], %[[B]] : tensor<8xf32>, tensor<8xf32> -> tensor<f32>
@case(torch.dot, t(8), t(8))
def dot(a, b):
    return torch.dot(a, b)


# CHECK-LABEL: case Tensor.dot:
# CHECK:         %[[DOT:.+]] = fxla.matmul %{{.+}}, %{{.+}} : tensor<8xf32>, tensor<8xf32> -> tensor<f32>
@case(torch.Tensor.dot, t(8), t(8))
def tensor_dot(a, b):
    return a.dot(b)


# CHECK-LABEL: case torch.vdot:
# CHECK:         func.func @main(%[[A:.+]]: tensor<8xf32>, %[[B:.+]]: tensor<8xf32>)
# CHECK:         %[[DOT:.+]] = fxla.matmul %[[A]], %[[B]] : tensor<8xf32>, tensor<8xf32> -> tensor<f32>
@case(torch.vdot, t(8), t(8))
def vdot(a, b):
    return torch.vdot(a, b)


# CHECK-LABEL: case Tensor.vdot:
# CHECK:         %[[DOT:.+]] = fxla.matmul %{{.+}}, %{{.+}} : tensor<8xf32>, tensor<8xf32> -> tensor<f32>
@case(torch.Tensor.vdot, t(8), t(8))
def tensor_vdot(a, b):
    return a.vdot(b)


# CHECK-LABEL: case torch.mm:
# CHECK:         func.func @main(%[[A:.+]]: tensor<3x8xbf16>, %[[B:.+]]: tensor<8x4xbf16>)
# CHECK:         %[[MATMUL:.+]] = fxla.matmul %[[A]], %[[B]] : tensor<3x8xbf16>, tensor<8x4xbf16> -> tensor<3x4xbf16>
@case(torch.mm, t(3, 8, dtype=BF16), t(8, 4, dtype=BF16))
def mm(a, b):
    return torch.mm(a, b)


# CHECK-LABEL: case Tensor.mm:
# CHECK:         func.func @main(%[[A:.+]]: tensor<3x8xf32>, %[[B:.+]]: tensor<8x4xf32>)
# CHECK:         %[[MATMUL:.+]] = fxla.matmul %[[A]], %[[B]] : tensor<3x8xf32>, tensor<8x4xf32> -> tensor<3x4xf32>
@case(torch.Tensor.mm, t(3, 8), t(8, 4))
def tensor_mm(a, b):
    return a.mm(b)


# CHECK-LABEL: case torch.bmm:
# CHECK:         func.func @main(%[[A:.+]]: tensor<2x3x8xf16>, %[[B:.+]]: tensor<2x8x4xf16>)
# CHECK:         %[[MATMUL:.+]] = fxla.matmul %[[A]], %[[B]] : tensor<2x3x8xf16>, tensor<2x8x4xf16> -> tensor<2x3x4xf16>
@case(torch.bmm, t(2, 3, 8, dtype=F16), t(2, 8, 4, dtype=F16))
def bmm(a, b):
    return torch.bmm(a, b)


# CHECK-LABEL: case Tensor.bmm:
# CHECK:         func.func @main(%[[A:.+]]: tensor<2x3x8xf32>, %[[B:.+]]: tensor<2x8x4xf32>)
# CHECK:         %[[MATMUL:.+]] = fxla.matmul %[[A]], %[[B]] : tensor<2x3x8xf32>, tensor<2x8x4xf32> -> tensor<2x3x4xf32>
@case(torch.Tensor.bmm, t(2, 3, 8), t(2, 8, 4))
def tensor_bmm(a, b):
    return a.bmm(b)


# CHECK-LABEL: case torch.addmm:
# CHECK:         func.func @main(%[[C:.+]]: tensor<4xf32>, %[[A:.+]]: tensor<3x8xf32>, %[[B:.+]]: tensor<8x4xf32>)
# CHECK:         %[[AB:.+]] = fxla.matmul %[[A]], %[[B]] : tensor<3x8xf32>, tensor<8x4xf32> -> tensor<3x4xf32>
# CHECK:         %[[ALPHA_AB:.+]] = fxla.mul %[[AB]], %{{.+}} : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xf32>
# CHECK:         %[[BETA_C:.+]] = fxla.mul %[[C]], %{{.+}} : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
# CHECK:         fxla.add %[[BETA_C]], %[[ALPHA_AB]] : tensor<4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.addmm, t(4), t(3, 8), t(8, 4))
def addmm(c, a, b):
    return torch.addmm(c, a, b, beta=0.5, alpha=2.0)


# CHECK-LABEL: case Tensor.addmm:
# CHECK:         func.func @main(%[[C:.+]]: tensor<3x4xf32>, %[[A:.+]]: tensor<3x8xf32>, %[[B:.+]]: tensor<8x4xf32>)
# CHECK:         %[[MATMUL:.+]] = fxla.matmul %[[A]], %[[B]] : tensor<3x8xf32>, tensor<8x4xf32> -> tensor<3x4xf32>
# CHECK:         %[[ADD:.+]] = fxla.add %[[C]], %[[MATMUL]] : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.Tensor.addmm, t(3, 4), t(3, 8), t(8, 4))
def tensor_addmm(c, a, b):
    return c.addmm(a, b)


# CHECK-LABEL: case torch.baddbmm:
# CHECK:         func.func @main(%[[C:.+]]: tensor<2x3x4xf32>, %[[A:.+]]: tensor<2x3x8xf32>, %[[B:.+]]: tensor<2x8x4xf32>)
# CHECK:         %[[MATMUL:.+]] = fxla.matmul %[[A]], %[[B]] : tensor<2x3x8xf32>, tensor<2x8x4xf32> -> tensor<2x3x4xf32>
# CHECK:         %[[ADD:.+]] = fxla.add %[[C]], %[[MATMUL]] : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
@case(torch.baddbmm, t(2, 3, 4), t(2, 3, 8), t(2, 8, 4))
def baddbmm(c, a, b):
    return torch.baddbmm(c, a, b)


# CHECK-LABEL: case Tensor.baddbmm:
# CHECK:         func.func @main(%[[C:.+]]: tensor<1x4xf32>, %[[A:.+]]: tensor<2x3x8xf32>, %[[B:.+]]: tensor<2x8x4xf32>)
# CHECK:         %[[MATMUL:.+]] = fxla.matmul %[[A]], %[[B]] : tensor<2x3x8xf32>, tensor<2x8x4xf32> -> tensor<2x3x4xf32>
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[MUL:.+]] = fxla.mul %[[MATMUL]], %[[CONSTANT]] : tensor<2x3x4xf32>, tensor<f32> -> tensor<2x3x4xf32>
# CHECK:         fxla.add %[[C]], %[[MUL]] : tensor<1x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
@case(torch.Tensor.baddbmm, t(1, 4), t(2, 3, 8), t(2, 8, 4))
def tensor_baddbmm_alpha(c, a, b):
    return c.baddbmm(a, b, alpha=0.5)


# weight_norm's weight: v * (g / ||v||), the norm over every dim but dim 0.
# CHECK-LABEL: case torch._VariableFunctionsClass._weight_norm:
# CHECK:         func.func @main(%[[V:.+]]: tensor<3x4xf32>, %[[G:.+]]: tensor<3x1xf32>)
# CHECK:         %[[SQ:.+]] = fxla.mul %[[V]], %[[V]] : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
# CHECK:         %[[SUM:.+]] = fxla.sum %[[SQ]] {dims = [1], keepdim = true} : tensor<3x4xf32> -> tensor<3x1xf32>
# CHECK:         %[[NORM:.+]] = fxla.sqrt %[[SUM]]
# CHECK:         %[[SCALE:.+]] = fxla.div %[[G]], %[[NORM]]
# CHECK:         fxla.mul %[[V]], %[[SCALE]] : tensor<3x4xf32>, tensor<3x1xf32> -> tensor<3x4xf32>
@case(torch._weight_norm, t(3, 4), t(3, 1))
def weight_norm(v, g):
    return torch._weight_norm(v, g, 0)


# CHECK-LABEL: case torch.einsum:
# CHECK:         func.func @main(%[[Q:.+]]: tensor<2x3x4x5xf32>, %[[K:.+]]: tensor<2x3x6x5xf32>)
# CHECK:         fxla.permute %[[K]] {dims = [0, 1, 3, 2]} : tensor<2x3x6x5xf32> -> tensor<2x3x5x6xf32>
# CHECK:         %[[QK:.+]] = fxla.matmul %{{.+}}, %{{.+}} : tensor<6x4x5xf32>, tensor<6x5x6xf32> -> tensor<6x4x6xf32>
# CHECK:         fxla.reshape %[[QK]] {shape = [2, 3, 4, 6]} : tensor<6x4x6xf32> -> tensor<2x3x4x6xf32>
@case(torch.einsum, t(2, 3, 4, 5), t(2, 3, 6, 5))
def einsum_attention_scores(q, k):
    return torch.einsum("bhqd,bhkd->bhqk", q, k)


# CHECK-LABEL: case torch.einsum (diagonal):
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 16]} : tensor<2x4x4xf32> -> tensor<2x16xf32>
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[RESHAPE]] {start = [0, 0], limit = [2, 16], stride = [1, 5]} : tensor<2x16xf32> -> tensor<2x4xf32>
@case(torch.einsum, t(2, 4, 4), variant="diagonal")
def einsum_diagonal(x):
    return torch.einsum("bii->bi", x)


# CHECK-LABEL: case torch.bilinear:
# CHECK:         func.func @main(%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<2x4xf32>, %[[W:.+]]: tensor<5x3x4xf32>, %[[BIAS:.+]]: tensor<5xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[W]] {dims = [1, 0, 2]} : tensor<5x3x4xf32> -> tensor<3x5x4xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[PERMUTE]] {shape = [3, 20]} : tensor<3x5x4xf32> -> tensor<3x20xf32>
# CHECK:         %[[MATMUL:.+]] = fxla.matmul %[[A]], %[[RESHAPE]] : tensor<2x3xf32>, tensor<3x20xf32> -> tensor<2x20xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[MATMUL]] {shape = [2, 5, 4]} : tensor<2x20xf32> -> tensor<2x5x4xf32>
# CHECK:         %[[RESHAPE_3:.+]] = fxla.reshape %[[B]] {shape = [2, 1, 4]} : tensor<2x4xf32> -> tensor<2x1x4xf32>
# CHECK:         %[[MUL:.+]] = fxla.mul %[[RESHAPE_2]], %[[RESHAPE_3]] : tensor<2x5x4xf32>, tensor<2x1x4xf32> -> tensor<2x5x4xf32>
# CHECK:         %[[SUM:.+]] = fxla.sum %[[MUL]] {dims = [-1], keepdim = false} : tensor<2x5x4xf32> -> tensor<2x5xf32>
# CHECK:         %[[ADD:.+]] = fxla.add %[[SUM]], %[[BIAS]] : tensor<2x5xf32>, tensor<5xf32> -> tensor<2x5xf32>
@case(F.bilinear, t(2, 3), t(2, 4), t(5, 3, 4), t(5))
def bilinear(a, b, w, bias):
    return F.bilinear(a, b, w, bias)


# CHECK-LABEL: case torch.nn.Bilinear:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[Y:.+]]: tensor<2x4xf32>, %[[BIAS:.+]]: tensor<5xf32> {fxla.param = "mod.bias"}, %[[WEIGHT:.+]]: tensor<5x3x4xf32> {fxla.param = "mod.weight"})
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[WEIGHT]] {dims = [1, 0, 2]} : tensor<5x3x4xf32> -> tensor<3x5x4xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[PERMUTE]] {shape = [3, 20]} : tensor<3x5x4xf32> -> tensor<3x20xf32>
# CHECK:         %[[MATMUL:.+]] = fxla.matmul %[[X]], %[[RESHAPE]] : tensor<2x3xf32>, tensor<3x20xf32> -> tensor<2x20xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[MATMUL]] {shape = [2, 5, 4]} : tensor<2x20xf32> -> tensor<2x5x4xf32>
# CHECK:         %[[RESHAPE_3:.+]] = fxla.reshape %[[Y]] {shape = [2, 1, 4]} : tensor<2x4xf32> -> tensor<2x1x4xf32>
# CHECK:         %[[MUL:.+]] = fxla.mul %[[RESHAPE_2]], %[[RESHAPE_3]] : tensor<2x5x4xf32>, tensor<2x1x4xf32> -> tensor<2x5x4xf32>
# CHECK:         %[[SUM:.+]] = fxla.sum %[[MUL]] {dims = [-1], keepdim = false} : tensor<2x5x4xf32> -> tensor<2x5xf32>
# CHECK:         %[[ADD:.+]] = fxla.add %[[SUM]], %[[BIAS]] : tensor<2x5xf32>, tensor<5xf32> -> tensor<2x5xf32>
@case(nn.Bilinear, t(2, 3), t(2, 4))
def bilinear_module():
    return nn.Bilinear(3, 4, 5)
