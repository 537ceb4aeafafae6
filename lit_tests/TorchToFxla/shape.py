# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla: the reshape family (view/reshape/flatten/unflatten/squeeze/unsqueeze, -1 and negative dims
# resolved to static shapes), permutes/transposes, pixel/channel shuffles, unfold/fold, and the ops that lower
# to nothing (contiguous, clone, detach) -- one case per op object of fxla.lowering.RULES.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
import torch.nn as nn
import torch.nn.functional as F
from fxla.testing import case, t

I64 = torch.int64


# CHECK-LABEL: case Tensor.view:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
@case(torch.Tensor.view, t(2, 3, 4))
def view_infer(x):
    return x.view(-1, 4)


# CHECK-LABEL: case Tensor.reshape:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 4, 6>} : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
@case(torch.Tensor.reshape, t(2, 3, 4))
def tensor_reshape_tuple(x):
    return x.reshape((4, -1))


# CHECK-LABEL: case torch.reshape:
# CHECK:         func.func @main(%[[X:.+]]: tensor<6xi64>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 2, 1, 3>} : (tensor<6xi64>) -> tensor<2x1x3xi64>
@case(torch.reshape, t(6, dtype=I64))
def reshape(x):
    return torch.reshape(x, (2, 1, 3))


# CHECK-LABEL: case torch.flatten:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x5xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 2, 12, 5>} : (tensor<2x3x4x5xf32>) -> tensor<2x12x5xf32>
@case(torch.flatten, t(2, 3, 4, 5))
def flatten_range(x):
    return torch.flatten(x, 1, -2)


# CHECK-LABEL: case Tensor.flatten:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 24>} : (tensor<2x3x4xf32>) -> tensor<24xf32>
@case(torch.Tensor.flatten, t(2, 3, 4))
def tensor_flatten_all(x):
    return x.flatten()


# CHECK-LABEL: case Tensor.unflatten:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x12xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 2, 3, 4>} : (tensor<2x12xf32>) -> tensor<2x3x4xf32>
@case(torch.Tensor.unflatten, t(2, 12))
def tensor_unflatten(x):
    return x.unflatten(-1, (3, -1))


# CHECK-LABEL: case torch.unflatten:
# CHECK:         func.func @main(%[[X:.+]]: tensor<6x5xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 2, 3, 5>} : (tensor<6x5xf32>) -> tensor<2x3x5xf32>
@case(torch.unflatten, t(6, 5))
def unflatten(x):
    return torch.unflatten(x, 0, (2, 3))


# CHECK-LABEL: case torch.nn.Flatten:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x5xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 2, 60>} : (tensor<2x3x4x5xf32>) -> tensor<2x60xf32>
@case(nn.Flatten, t(2, 3, 4, 5))
def flatten_module():
    return nn.Flatten()


# CHECK-LABEL: case torch.nn.Unflatten:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x12xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 2, 2, 6>} : (tensor<2x12xf32>) -> tensor<2x2x6xf32>
@case(nn.Unflatten, t(2, 12))
def unflatten_module():
    return nn.Unflatten(1, (2, 6))


# CHECK-LABEL: case torch.squeeze:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x1x3x1xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 2, 3>} : (tensor<2x1x3x1xf32>) -> tensor<2x3xf32>
@case(torch.squeeze, t(2, 1, 3, 1))
def squeeze_all(x):
    return torch.squeeze(x)


# CHECK-LABEL: case Tensor.squeeze:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x1x3x1xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 2, 1, 3>} : (tensor<2x1x3x1xf32>) -> tensor<2x1x3xf32>
@case(torch.Tensor.squeeze, t(2, 1, 3, 1))
def tensor_squeeze_negative_dim(x):
    return x.squeeze(-1)


# CHECK-LABEL: case torch.unsqueeze:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 2, 3, 1>} : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
@case(torch.unsqueeze, t(2, 3))
def unsqueeze_negative_dim(x):
    return torch.unsqueeze(x, -1)


# CHECK-LABEL: case Tensor.unsqueeze:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 2, 1, 3>} : (tensor<2x3xf32>) -> tensor<2x1x3xf32>
@case(torch.Tensor.unsqueeze, t(2, 3))
def tensor_unsqueeze(x):
    return x.unsqueeze(1)


# CHECK-LABEL: case Tensor.view_as:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x6xf32>, %[[Y:.+]]: tensor<3x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 3, 4>} : (tensor<2x6xf32>) -> tensor<3x4xf32>
@case(torch.Tensor.view_as, t(2, 6), t(3, 4))
def view_as(x, y):
    return x.view_as(y)


# CHECK-LABEL: case Tensor.reshape_as:
# CHECK:         func.func @main(%[[X:.+]]: tensor<12xf32>, %[[Y:.+]]: tensor<2x2x3xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 2, 2, 3>} : (tensor<12xf32>) -> tensor<2x2x3xf32>
@case(torch.Tensor.reshape_as, t(12), t(2, 2, 3))
def reshape_as(x, y):
    return x.reshape_as(y)


# CHECK-LABEL: case Tensor.permute:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = "fxla.permute"(%[[X]]) {dims = array<i64: -1, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
@case(torch.Tensor.permute, t(2, 3, 4))
def tensor_permute_negative(x):
    return x.permute(-1, 0, 1)


# CHECK-LABEL: case torch.permute:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x5xf32>)
# CHECK:         %[[PERMUTE:.+]] = "fxla.permute"(%[[X]]) {dims = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32>
@case(torch.permute, t(2, 3, 4, 5))
def permute(x):
    return torch.permute(x, (0, 2, 3, 1))


# CHECK-LABEL: case Tensor.transpose:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = "fxla.permute"(%[[X]]) {dims = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
@case(torch.Tensor.transpose, t(2, 3, 4))
def tensor_transpose_negative(x):
    return x.transpose(-1, -2)


# CHECK-LABEL: case torch.transpose:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = "fxla.permute"(%[[X]]) {dims = array<i64: 2, 1, 0>} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
@case(torch.transpose, t(2, 3, 4))
def transpose(x):
    return torch.transpose(x, 0, 2)


# CHECK-LABEL: case torch.swapaxes:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = "fxla.permute"(%[[X]]) {dims = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
@case(torch.swapaxes, t(2, 3, 4))
def swapaxes(x):
    return torch.swapaxes(x, 0, 1)


# CHECK-LABEL: case Tensor.swapaxes:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = "fxla.permute"(%[[X]]) {dims = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
@case(torch.Tensor.swapaxes, t(2, 3, 4))
def tensor_swapaxes(x):
    return x.swapaxes(1, -1)


# CHECK-LABEL: case Tensor.t:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = "fxla.permute"(%[[X]]) {dims = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
@case(torch.Tensor.t, t(3, 4))
def tensor_t(x):
    return x.t()


# CHECK-LABEL: case torch.t:
# CHECK:         func.func @main(%[[X:.+]]: tensor<5xf32>)
# CHECK-NOT:     "fxla.
# CHECK:         return %[[X]] : tensor<5xf32>
@case(torch.t, t(5))
def t_1d_is_identity(x):
    return torch.t(x)


# CHECK-LABEL: case Tensor.contiguous:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     "fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(torch.Tensor.contiguous, t(3, 4))
def contiguous(x):
    return x.contiguous()


# CHECK-LABEL: case Tensor.clone:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     "fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(torch.Tensor.clone, t(3, 4))
def tensor_clone(x):
    return x.clone()


# CHECK-LABEL: case torch.clone:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK-NOT:     "fxla.
# CHECK:         return %[[X]] : tensor<3x4xi64>
@case(torch.clone, t(3, 4, dtype=I64))
def clone(x):
    return torch.clone(x)


# CHECK-LABEL: case Tensor.detach:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     "fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(torch.Tensor.detach, t(3, 4))
def tensor_detach(x):
    return x.detach()


# CHECK-LABEL: case torch.detach:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     "fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(torch.detach, t(3, 4))
def detach(x):
    return torch.detach(x)


# pixel_shuffle: [N, C r^2, H, W] -> [N, C, H r, W r] as reshape (split C), permute (interleave), reshape.
# CHECK-LABEL: case torch.pixel_shuffle:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x8x3x5xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 1, 2, 2, 2, 3, 5>} : (tensor<1x8x3x5xf32>) -> tensor<1x2x2x2x3x5xf32>
# CHECK:         %[[PERMUTE:.+]] = "fxla.permute"(%[[RESHAPE]]) {dims = array<i64: 0, 1, 4, 2, 5, 3>} : (tensor<1x2x2x2x3x5xf32>) -> tensor<1x2x3x2x5x2xf32>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%[[PERMUTE]]) {shape = array<i64: 1, 2, 6, 10>} : (tensor<1x2x3x2x5x2xf32>) -> tensor<1x2x6x10xf32>
@case(torch.pixel_shuffle, t(1, 8, 3, 5))
def pixel_shuffle(x):
    return F.pixel_shuffle(x, 2)


# CHECK-LABEL: case torch.pixel_unshuffle:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x4x6xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 1, 2, 2, 2, 3, 2>} : (tensor<1x2x4x6xf32>) -> tensor<1x2x2x2x3x2xf32>
# CHECK:         %[[PERMUTE:.+]] = "fxla.permute"(%[[RESHAPE]]) {dims = array<i64: 0, 1, 3, 5, 2, 4>} : (tensor<1x2x2x2x3x2xf32>) -> tensor<1x2x2x2x2x3xf32>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%[[PERMUTE]]) {shape = array<i64: 1, 8, 2, 3>} : (tensor<1x2x2x2x2x3xf32>) -> tensor<1x8x2x3xf32>
@case(torch.pixel_unshuffle, t(1, 2, 4, 6))
def pixel_unshuffle(x):
    return torch.pixel_unshuffle(x, 2)


# CHECK-LABEL: case torch.channel_shuffle:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x6x5xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 2, 3, 2, 5>} : (tensor<2x6x5xf32>) -> tensor<2x3x2x5xf32>
# CHECK:         %[[PERMUTE:.+]] = "fxla.permute"(%[[RESHAPE]]) {dims = array<i64: 0, 2, 1, 3>} : (tensor<2x3x2x5xf32>) -> tensor<2x2x3x5xf32>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%[[PERMUTE]]) {shape = array<i64: 2, 6, 5>} : (tensor<2x2x3x5xf32>) -> tensor<2x6x5xf32>
@case(torch.channel_shuffle, t(2, 6, 5))
def channel_shuffle(x):
    return F.channel_shuffle(x, 3)


# CHECK-LABEL: case torch.nn.PixelShuffle:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x18x2x2xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 1, 2, 3, 3, 2, 2>} : (tensor<1x18x2x2xf32>) -> tensor<1x2x3x3x2x2xf32>
# CHECK:         %[[PERMUTE:.+]] = "fxla.permute"(%[[RESHAPE]]) {dims = array<i64: 0, 1, 4, 2, 5, 3>} : (tensor<1x2x3x3x2x2xf32>) -> tensor<1x2x2x3x2x3xf32>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%[[PERMUTE]]) {shape = array<i64: 1, 2, 6, 6>} : (tensor<1x2x2x3x2x3xf32>) -> tensor<1x2x6x6xf32>
@case(nn.PixelShuffle, t(1, 18, 2, 2))
def pixel_shuffle_module():
    return nn.PixelShuffle(3)


# CHECK-LABEL: case torch.nn.PixelUnshuffle:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x3x4x2xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 1, 3, 2, 2, 1, 2>} : (tensor<1x3x4x2xf32>) -> tensor<1x3x2x2x1x2xf32>
# CHECK:         %[[PERMUTE:.+]] = "fxla.permute"(%[[RESHAPE]]) {dims = array<i64: 0, 1, 3, 5, 2, 4>} : (tensor<1x3x2x2x1x2xf32>) -> tensor<1x3x2x2x2x1xf32>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%[[PERMUTE]]) {shape = array<i64: 1, 12, 2, 1>} : (tensor<1x3x2x2x2x1xf32>) -> tensor<1x12x2x1xf32>
@case(nn.PixelUnshuffle, t(1, 3, 4, 2))
def pixel_unshuffle_module():
    return nn.PixelUnshuffle(2)


# CHECK-LABEL: case torch.nn.ChannelShuffle:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x6x5xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 2, 3, 2, 5>} : (tensor<2x6x5xf32>) -> tensor<2x3x2x5xf32>
# CHECK:         %[[PERMUTE:.+]] = "fxla.permute"(%[[RESHAPE]]) {dims = array<i64: 0, 2, 1, 3>} : (tensor<2x3x2x5xf32>) -> tensor<2x2x3x5xf32>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%[[PERMUTE]]) {shape = array<i64: 2, 6, 5>} : (tensor<2x2x3x5xf32>) -> tensor<2x6x5xf32>
@case(nn.ChannelShuffle, t(2, 6, 5))
def channel_shuffle_module():
    return nn.ChannelShuffle(3)


# unfold (im2col): one strided slice of the input per kernel offset, stacked as [N, C, kh * kw, L].
# CHECK-LABEL: case torch.nn.functional.unfold:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x3xf32>)
# CHECK:         %[[SLICE:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 1, 2, 2, 2>, start = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1, 1, 1>} : (tensor<1x2x3x3xf32>) -> tensor<1x2x2x2xf32>
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[SLICE]]) {shape = array<i64: 1, 2, 1, 4>} : (tensor<1x2x2x2xf32>) -> tensor<1x2x1x4xf32>
# CHECK:         %[[COLS:.+]] = "fxla.concat"(%[[RESHAPE]], %{{.+}}, %{{.+}}, %{{.+}}) {dim = 2 : i64} : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x4x4xf32>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%[[COLS]]) {shape = array<i64: 1, 8, 4>} : (tensor<1x2x4x4xf32>) -> tensor<1x8x4xf32>
# CHECK:         return %[[RESHAPE_2]] : tensor<1x8x4xf32>
@case(F.unfold, t(1, 2, 3, 3))
def unfold(x):
    return F.unfold(x, 2)


# fold (col2im): each offset's block padded into place and summed.
# CHECK-LABEL: case torch.nn.functional.fold:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x8x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 1, 2, 4, 2, 2>} : (tensor<1x8x4xf32>) -> tensor<1x2x4x2x2xf32>
# CHECK:         %[[SLICE:.+]] = "fxla.slice"(%[[RESHAPE]]) {limit = array<i64: 1, 2, 1, 2, 2>, start = array<i64: 0, 0, 0, 0, 0>, stride = array<i64: 1, 1, 1, 1, 1>} : (tensor<1x2x4x2x2xf32>) -> tensor<1x2x1x2x2xf32>
# CHECK:         "fxla.pad"(%{{.+}}) {high = array<i64: 0, 0, 1, 1>, low = array<i64: 0, 0, 0, 0>, value = 0.000000e+00 : f64} : (tensor<1x2x2x2xf32>) -> tensor<1x2x3x3xf32>
# CHECK:         %[[SUM:.+]] = "fxla.add"(%{{.+}}, %{{.+}}) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
# CHECK:         return %{{.+}} : tensor<1x2x3x3xf32>
@case(F.fold, t(1, 8, 4))
def fold(x):
    return F.fold(x, (3, 3), 2)


# CHECK-LABEL: case torch.nn.Unfold:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x1x4x4xf32>)
# CHECK:         %[[SLICE:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 1, 1, 3, 3>, start = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1, 2, 2>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[SLICE]]) {shape = array<i64: 1, 1, 1, 4>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x1x4xf32>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%{{.+}}) {shape = array<i64: 1, 4, 4>} : (tensor<1x1x4x4xf32>) -> tensor<1x4x4xf32>
# CHECK:         return %[[RESHAPE_2]] : tensor<1x4x4xf32>
@case(nn.Unfold, t(1, 1, 4, 4))
def unfold_module():
    return nn.Unfold(2, stride=2)


# CHECK-LABEL: case torch.nn.Fold:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x4x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 1, 1, 4, 2, 2>} : (tensor<1x4x4xf32>) -> tensor<1x1x4x2x2xf32>
# CHECK:         %[[SLICE:.+]] = "fxla.slice"(%[[RESHAPE]]) {limit = array<i64: 1, 1, 1, 2, 2>, start = array<i64: 0, 0, 0, 0, 0>, stride = array<i64: 1, 1, 1, 1, 1>} : (tensor<1x1x4x2x2xf32>) -> tensor<1x1x1x2x2xf32>
# CHECK:         return %{{.+}} : tensor<1x1x4x4xf32>
@case(nn.Fold, t(1, 4, 4))
def fold_module():
    return nn.Fold((4, 4), 2, stride=2)
