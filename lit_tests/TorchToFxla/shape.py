# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `shape` (lowering/rules/shape.py): the reshape family (view/reshape/flatten/unflatten/
# squeeze/unsqueeze, -1 and negative dims resolved to static shapes), permutes/transposes, pixel/channel shuffles,
# the ops that lower to nothing (contiguous, clone, detach), cat/stack, split/chunk/tensor_split/unbind (several
# results), expand/broadcast/repeat/tile, flip/roll/rot90 and kron; ravel/swapdims/adjoint/movedim, diagonal (slices),
# unfold (constant positions, index_select), +x and the conjugation ops (nothing: real elements),
# hsplit/vsplit/dsplit, atleast_Nd and broadcast_tensors -- one case per op object of
# fxla.lowering.RULES; the checks show the dim attributes, the promoted dtype of mixed-dtype cat and the result
# types.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

from fxla.frontend.custom_functions import custom_function_output
from fxla.frontend import wrap
from fxla.frontend.passes.grad_mode import keep_history, unknown_history
from fxla.testing import case, t

BF16, I32, I64 = torch.bfloat16, torch.int32, torch.int64


# CHECK-LABEL: case Tensor.view:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [6, 4]} : tensor<2x3x4xf32> -> tensor<6x4xf32>
@case(torch.Tensor.view, t(2, 3, 4))
def view_infer(x):
    return x.view(-1, 4)


# CHECK-LABEL: case Tensor.reshape:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [4, 6]} : tensor<2x3x4xf32> -> tensor<4x6xf32>
@case(torch.Tensor.reshape, t(2, 3, 4))
def tensor_reshape_tuple(x):
    return x.reshape((4, -1))


# CHECK-LABEL: case torch.reshape:
# CHECK:         func.func @main(%[[X:.+]]: tensor<6xi64>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 1, 3]} : tensor<6xi64> -> tensor<2x1x3xi64>
@case(torch.reshape, t(6, dtype=I64))
def reshape(x):
    return torch.reshape(x, (2, 1, 3))


# CHECK-LABEL: case torch.flatten:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x5xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 12, 5]} : tensor<2x3x4x5xf32> -> tensor<2x12x5xf32>
@case(torch.flatten, t(2, 3, 4, 5))
def flatten_range(x):
    return torch.flatten(x, 1, -2)


# CHECK-LABEL: case Tensor.flatten:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [24]} : tensor<2x3x4xf32> -> tensor<24xf32>
@case(torch.Tensor.flatten, t(2, 3, 4))
def tensor_flatten_all(x):
    return x.flatten()


# CHECK-LABEL: case Tensor.unflatten:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x12xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 3, 4]} : tensor<2x12xf32> -> tensor<2x3x4xf32>
@case(torch.Tensor.unflatten, t(2, 12))
def tensor_unflatten(x):
    return x.unflatten(-1, (3, -1))


# CHECK-LABEL: case torch.unflatten:
# CHECK:         func.func @main(%[[X:.+]]: tensor<6x5xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 3, 5]} : tensor<6x5xf32> -> tensor<2x3x5xf32>
@case(torch.unflatten, t(6, 5))
def unflatten(x):
    return torch.unflatten(x, 0, (2, 3))


# CHECK-LABEL: case torch.nn.Flatten:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x5xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 60]} : tensor<2x3x4x5xf32> -> tensor<2x60xf32>
@case(nn.Flatten, t(2, 3, 4, 5))
def flatten_module():
    return nn.Flatten()


# CHECK-LABEL: case torch.nn.Unflatten:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x12xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 2, 6]} : tensor<2x12xf32> -> tensor<2x2x6xf32>
@case(nn.Unflatten, t(2, 12))
def unflatten_module():
    return nn.Unflatten(1, (2, 6))


# CHECK-LABEL: case torch.squeeze:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x1x3x1xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 3]} : tensor<2x1x3x1xf32> -> tensor<2x3xf32>
@case(torch.squeeze, t(2, 1, 3, 1))
def squeeze_all(x):
    return torch.squeeze(x)


# CHECK-LABEL: case Tensor.squeeze:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x1x3x1xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 1, 3]} : tensor<2x1x3x1xf32> -> tensor<2x1x3xf32>
@case(torch.Tensor.squeeze, t(2, 1, 3, 1))
def tensor_squeeze_negative_dim(x):
    return x.squeeze(-1)


# CHECK-LABEL: case torch.unsqueeze:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 3, 1]} : tensor<2x3xf32> -> tensor<2x3x1xf32>
@case(torch.unsqueeze, t(2, 3))
def unsqueeze_negative_dim(x):
    return torch.unsqueeze(x, -1)


# CHECK-LABEL: case Tensor.unsqueeze:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 1, 3]} : tensor<2x3xf32> -> tensor<2x1x3xf32>
@case(torch.Tensor.unsqueeze, t(2, 3))
def tensor_unsqueeze(x):
    return x.unsqueeze(1)


# CHECK-LABEL: case Tensor.view_as:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x6xf32>, %[[Y:.+]]: tensor<3x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [3, 4]} : tensor<2x6xf32> -> tensor<3x4xf32>
@case(torch.Tensor.view_as, t(2, 6), t(3, 4))
def view_as(x, y):
    return x.view_as(y)


# CHECK-LABEL: case Tensor.reshape_as:
# CHECK:         func.func @main(%[[X:.+]]: tensor<12xf32>, %[[Y:.+]]: tensor<2x2x3xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 2, 3]} : tensor<12xf32> -> tensor<2x2x3xf32>
@case(torch.Tensor.reshape_as, t(12), t(2, 2, 3))
def reshape_as(x, y):
    return x.reshape_as(y)


# CHECK-LABEL: case Tensor.permute:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [-1, 0, 1]} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
@case(torch.Tensor.permute, t(2, 3, 4))
def tensor_permute_negative(x):
    return x.permute(-1, 0, 1)


# CHECK-LABEL: case torch.permute:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x5xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [0, 2, 3, 1]} : tensor<2x3x4x5xf32> -> tensor<2x4x5x3xf32>
@case(torch.permute, t(2, 3, 4, 5))
def permute(x):
    return torch.permute(x, (0, 2, 3, 1))


# CHECK-LABEL: case Tensor.transpose:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [0, 2, 1]} : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
@case(torch.Tensor.transpose, t(2, 3, 4))
def tensor_transpose_negative(x):
    return x.transpose(-1, -2)


# CHECK-LABEL: case torch.transpose:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [2, 1, 0]} : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
@case(torch.transpose, t(2, 3, 4))
def transpose(x):
    return torch.transpose(x, 0, 2)


# CHECK-LABEL: case torch.swapaxes:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [1, 0, 2]} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
@case(torch.swapaxes, t(2, 3, 4))
def swapaxes(x):
    return torch.swapaxes(x, 0, 1)


# CHECK-LABEL: case Tensor.swapaxes:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [0, 2, 1]} : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
@case(torch.Tensor.swapaxes, t(2, 3, 4))
def tensor_swapaxes(x):
    return x.swapaxes(1, -1)


# CHECK-LABEL: case Tensor.t:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [1, 0]} : tensor<3x4xf32> -> tensor<4x3xf32>
@case(torch.Tensor.t, t(3, 4))
def tensor_t(x):
    return x.t()


# CHECK-LABEL: case torch.t:
# CHECK:         func.func @main(%[[X:.+]]: tensor<5xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<5xf32>
@case(torch.t, t(5))
def t_1d_is_identity(x):
    return torch.t(x)


# CHECK-LABEL: case Tensor.contiguous:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(torch.Tensor.contiguous, t(3, 4))
def contiguous(x):
    return x.contiguous()


# CHECK-LABEL: case Tensor.clone:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(torch.Tensor.clone, t(3, 4))
def tensor_clone(x):
    return x.clone()


# CHECK-LABEL: case torch.clone:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<3x4xi64>
@case(torch.clone, t(3, 4, dtype=I64))
def clone(x):
    return torch.clone(x)


# detach is fxla.detach: its input, through which no gradient flows
# CHECK-LABEL: case Tensor.detach:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[D:.+]] = fxla.detach %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
# CHECK:         return %[[D]] : tensor<3x4xf32>
@case(torch.Tensor.detach, t(3, 4))
def tensor_detach(x):
    return x.detach()


# detach is fxla.detach: its input, through which no gradient flows
# CHECK-LABEL: case torch.detach:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[D:.+]] = fxla.detach %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
# CHECK:         return %[[D]] : tensor<3x4xf32>
@case(torch.detach, t(3, 4))
def detach(x):
    return torch.detach(x)


# pixel_shuffle: [N, C r^2, H, W] -> [N, C, H r, W r] as reshape (split C), permute (interleave), reshape.
# CHECK-LABEL: case torch.pixel_shuffle:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x8x3x5xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [1, 2, 2, 2, 3, 5]} : tensor<1x8x3x5xf32> -> tensor<1x2x2x2x3x5xf32>
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[RESHAPE]] {dims = [0, 1, 4, 2, 5, 3]} : tensor<1x2x2x2x3x5xf32> -> tensor<1x2x3x2x5x2xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[PERMUTE]] {shape = [1, 2, 6, 10]} : tensor<1x2x3x2x5x2xf32> -> tensor<1x2x6x10xf32>
@case(torch.pixel_shuffle, t(1, 8, 3, 5))
def pixel_shuffle(x):
    return F.pixel_shuffle(x, 2)


# CHECK-LABEL: case torch.pixel_unshuffle:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x4x6xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [1, 2, 2, 2, 3, 2]} : tensor<1x2x4x6xf32> -> tensor<1x2x2x2x3x2xf32>
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[RESHAPE]] {dims = [0, 1, 3, 5, 2, 4]} : tensor<1x2x2x2x3x2xf32> -> tensor<1x2x2x2x2x3xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[PERMUTE]] {shape = [1, 8, 2, 3]} : tensor<1x2x2x2x2x3xf32> -> tensor<1x8x2x3xf32>
@case(torch.pixel_unshuffle, t(1, 2, 4, 6))
def pixel_unshuffle(x):
    return torch.pixel_unshuffle(x, 2)


# CHECK-LABEL: case torch.channel_shuffle:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x6x5xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 3, 2, 5]} : tensor<2x6x5xf32> -> tensor<2x3x2x5xf32>
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[RESHAPE]] {dims = [0, 2, 1, 3]} : tensor<2x3x2x5xf32> -> tensor<2x2x3x5xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[PERMUTE]] {shape = [2, 6, 5]} : tensor<2x2x3x5xf32> -> tensor<2x6x5xf32>
@case(torch.channel_shuffle, t(2, 6, 5))
def channel_shuffle(x):
    return F.channel_shuffle(x, 3)


# CHECK-LABEL: case torch.nn.PixelShuffle:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x18x2x2xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [1, 2, 3, 3, 2, 2]} : tensor<1x18x2x2xf32> -> tensor<1x2x3x3x2x2xf32>
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[RESHAPE]] {dims = [0, 1, 4, 2, 5, 3]} : tensor<1x2x3x3x2x2xf32> -> tensor<1x2x2x3x2x3xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[PERMUTE]] {shape = [1, 2, 6, 6]} : tensor<1x2x2x3x2x3xf32> -> tensor<1x2x6x6xf32>
@case(nn.PixelShuffle, t(1, 18, 2, 2))
def pixel_shuffle_module():
    return nn.PixelShuffle(3)


# CHECK-LABEL: case torch.nn.PixelUnshuffle:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x3x4x2xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [1, 3, 2, 2, 1, 2]} : tensor<1x3x4x2xf32> -> tensor<1x3x2x2x1x2xf32>
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[RESHAPE]] {dims = [0, 1, 3, 5, 2, 4]} : tensor<1x3x2x2x1x2xf32> -> tensor<1x3x2x2x2x1xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[PERMUTE]] {shape = [1, 12, 2, 1]} : tensor<1x3x2x2x2x1xf32> -> tensor<1x12x2x1xf32>
@case(nn.PixelUnshuffle, t(1, 3, 4, 2))
def pixel_unshuffle_module():
    return nn.PixelUnshuffle(2)


# CHECK-LABEL: case torch.nn.ChannelShuffle:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x6x5xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 3, 2, 5]} : tensor<2x6x5xf32> -> tensor<2x3x2x5xf32>
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[RESHAPE]] {dims = [0, 2, 1, 3]} : tensor<2x3x2x5xf32> -> tensor<2x2x3x5xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[PERMUTE]] {shape = [2, 6, 5]} : tensor<2x2x3x5xf32> -> tensor<2x6x5xf32>
@case(nn.ChannelShuffle, t(2, 6, 5))
def channel_shuffle_module():
    return nn.ChannelShuffle(3)


# CHECK-LABEL: case torch.cat:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[Y:.+]]: tensor<2x5xf32>)
# CHECK:         %[[CONCAT:.+]] = fxla.concat %[[X]], %[[Y]] {dim = -1} : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
@case(torch.cat, t(2, 3), t(2, 5))
def cat_negative_dim(x, y):
    return torch.cat([x, y], dim=-1)


# torch's legacy rule: 1-D empty inputs (torch.tensor([]), a Hugging Face DynamicCache's start) are skipped,
# whatever the others' rank; they still take part in type promotion (bf16 with an f32 empty: f32).
# CHECK-LABEL: case torch.cat (1-D empty skipped):
# CHECK:         func.func @main(%[[E:.+]]: tensor<0xf32>, %[[X:.+]]: tensor<2x3xbf16>)
# CHECK:         %[[CONCAT:.+]] = fxla.concat %[[X]] {dim = -2} : tensor<2x3xbf16> -> tensor<2x3xbf16>
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[CONCAT]] : tensor<2x3xbf16> -> tensor<2x3xf32>
# CHECK:         return %[[CONVERT]] : tensor<2x3xf32>
@case(torch.cat, t(0), t(2, 3, dtype=torch.bfloat16), variant="1-D empty skipped")
def cat_skips_empty(e, x):
    return torch.cat((e, x), dim=-2)


# CHECK-LABEL: case torch.concat:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xi32>, %[[Y:.+]]: tensor<1x3xf32>)
# CHECK:         %[[CONCAT:.+]] = fxla.concat %[[X]], %[[Y]] {dim = 0} : tensor<2x3xi32>, tensor<1x3xf32> -> tensor<3x3xf32>
@case(torch.concat, t(2, 3, dtype=I32), t(1, 3))
def concat_promotes(x, y):
    return torch.concat((x, y))


# CHECK-LABEL: case torch.concatenate:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[Y:.+]]: tensor<2x3xf32>)
# CHECK:         %[[CONCAT:.+]] = fxla.concat %[[X]], %[[Y]] {dim = 1} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
@case(torch.concatenate, t(2, 3), t(2, 3))
def concatenate(x, y):
    return torch.concatenate([x, y], axis=1)


# CHECK-LABEL: case torch.stack:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[Y:.+]]: tensor<2x3xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 3, 1]} : tensor<2x3xf32> -> tensor<2x3x1xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[Y]] {shape = [2, 3, 1]} : tensor<2x3xf32> -> tensor<2x3x1xf32>
# CHECK:         %[[CONCAT:.+]] = fxla.concat %[[RESHAPE]], %[[RESHAPE_2]] {dim = 2} : tensor<2x3x1xf32>, tensor<2x3x1xf32> -> tensor<2x3x2xf32>
@case(torch.stack, t(2, 3), t(2, 3))
def stack(x, y):
    return torch.stack([x, y], dim=-1)


# CHECK-LABEL: case torch.split:
# CHECK:         func.func @main(%[[X:.+]]: tensor<5x4xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0], limit = [2, 4], stride = [1, 1]} : tensor<5x4xf32> -> tensor<2x4xf32>
# CHECK:         %[[SLICE_2:.+]] = fxla.slice %[[X]] {start = [2, 0], limit = [4, 4], stride = [1, 1]} : tensor<5x4xf32> -> tensor<2x4xf32>
# CHECK:         %[[SLICE_3:.+]] = fxla.slice %[[X]] {start = [4, 0], limit = [5, 4], stride = [1, 1]} : tensor<5x4xf32> -> tensor<1x4xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]], %[[SLICE_3]] : tensor<2x4xf32>, tensor<2x4xf32>, tensor<1x4xf32>
@case(torch.split, t(5, 4))
def split_size(x):
    return torch.split(x, 2)


# CHECK-LABEL: case Tensor.split:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x6xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0], limit = [4, 1], stride = [1, 1]} : tensor<4x6xf32> -> tensor<4x1xf32>
# CHECK:         %[[SLICE_2:.+]] = fxla.slice %[[X]] {start = [0, 1], limit = [4, 6], stride = [1, 1]} : tensor<4x6xf32> -> tensor<4x5xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]] : tensor<4x1xf32>, tensor<4x5xf32>
@case(torch.Tensor.split, t(4, 6))
def tensor_split_sizes(x):
    return x.split([1, 5], dim=-1)


# CHECK-LABEL: case Tensor.split_with_sizes:
# CHECK:         func.func @main(%[[X:.+]]: tensor<6x2xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0], limit = [2, 2], stride = [1, 1]} : tensor<6x2xf32> -> tensor<2x2xf32>
# CHECK:         %[[SLICE_2:.+]] = fxla.slice %[[X]] {start = [2, 0], limit = [6, 2], stride = [1, 1]} : tensor<6x2xf32> -> tensor<4x2xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]] : tensor<2x2xf32>, tensor<4x2xf32>
@case(torch.Tensor.split_with_sizes, t(6, 2))
def tensor_split_with_sizes(x):
    return x.split_with_sizes([2, 4])


# CHECK-LABEL: case torch.split_with_sizes:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x5xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0], limit = [3, 3], stride = [1, 1]} : tensor<3x5xf32> -> tensor<3x3xf32>
# CHECK:         %[[SLICE_2:.+]] = fxla.slice %[[X]] {start = [0, 3], limit = [3, 5], stride = [1, 1]} : tensor<3x5xf32> -> tensor<3x2xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]] : tensor<3x3xf32>, tensor<3x2xf32>
@case(torch.split_with_sizes, t(3, 5))
def split_with_sizes(x):
    return torch.split_with_sizes(x, [3, 2], 1)


# CHECK-LABEL: case torch.chunk:
# CHECK:         func.func @main(%[[X:.+]]: tensor<5x4xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0], limit = [2, 4], stride = [1, 1]} : tensor<5x4xf32> -> tensor<2x4xf32>
# CHECK:         %[[SLICE_2:.+]] = fxla.slice %[[X]] {start = [2, 0], limit = [4, 4], stride = [1, 1]} : tensor<5x4xf32> -> tensor<2x4xf32>
# CHECK:         %[[SLICE_3:.+]] = fxla.slice %[[X]] {start = [4, 0], limit = [5, 4], stride = [1, 1]} : tensor<5x4xf32> -> tensor<1x4xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]], %[[SLICE_3]] : tensor<2x4xf32>, tensor<2x4xf32>, tensor<1x4xf32>
@case(torch.chunk, t(5, 4))
def chunk_uneven(x):
    return torch.chunk(x, 3)


# CHECK-LABEL: case Tensor.chunk:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x6xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0], limit = [2, 3], stride = [1, 1]} : tensor<2x6xf32> -> tensor<2x3xf32>
# CHECK:         %[[SLICE_2:.+]] = fxla.slice %[[X]] {start = [0, 3], limit = [2, 6], stride = [1, 1]} : tensor<2x6xf32> -> tensor<2x3xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]] : tensor<2x3xf32>, tensor<2x3xf32>
@case(torch.Tensor.chunk, t(2, 6))
def tensor_chunk(x):
    return x.chunk(2, dim=-1)


# CHECK-LABEL: case torch.tensor_split:
# CHECK:         func.func @main(%[[X:.+]]: tensor<7x2xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0], limit = [3, 2], stride = [1, 1]} : tensor<7x2xf32> -> tensor<3x2xf32>
# CHECK:         %[[SLICE_2:.+]] = fxla.slice %[[X]] {start = [3, 0], limit = [5, 2], stride = [1, 1]} : tensor<7x2xf32> -> tensor<2x2xf32>
# CHECK:         %[[SLICE_3:.+]] = fxla.slice %[[X]] {start = [5, 0], limit = [7, 2], stride = [1, 1]} : tensor<7x2xf32> -> tensor<2x2xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]], %[[SLICE_3]] : tensor<3x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
@case(torch.tensor_split, t(7, 2))
def tensor_split_sections(x):
    return torch.tensor_split(x, 3)


# CHECK-LABEL: case Tensor.tensor_split:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x8xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0], limit = [2, 1], stride = [1, 1]} : tensor<2x8xf32> -> tensor<2x1xf32>
# CHECK:         %[[SLICE_2:.+]] = fxla.slice %[[X]] {start = [0, 1], limit = [2, 5], stride = [1, 1]} : tensor<2x8xf32> -> tensor<2x4xf32>
# CHECK:         %[[SLICE_3:.+]] = fxla.slice %[[X]] {start = [0, 5], limit = [2, 8], stride = [1, 1]} : tensor<2x8xf32> -> tensor<2x3xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]], %[[SLICE_3]] : tensor<2x1xf32>, tensor<2x4xf32>, tensor<2x3xf32>
@case(torch.Tensor.tensor_split, t(2, 8))
def tensor_tensor_split_indices(x):
    return x.tensor_split([1, 5], dim=1)


# CHECK-LABEL: case torch.unbind:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x2xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0], limit = [1, 2], stride = [1, 1]} : tensor<3x2xf32> -> tensor<1x2xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[SLICE]] {shape = [2]} : tensor<1x2xf32> -> tensor<2xf32>
# CHECK:         return %[[RESHAPE]], %{{.+}}, %{{.+}} : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
@case(torch.unbind, t(3, 2))
def unbind(x):
    return torch.unbind(x)


# CHECK-LABEL: case Tensor.unbind:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xi64>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0], limit = [2, 1], stride = [1, 1]} : tensor<2x3xi64> -> tensor<2x1xi64>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[SLICE]] {shape = [2]} : tensor<2x1xi64> -> tensor<2xi64>
# CHECK:         return %[[RESHAPE]], %{{.+}}, %{{.+}} : tensor<2xi64>, tensor<2xi64>, tensor<2xi64>
@case(torch.Tensor.unbind, t(2, 3, dtype=I64))
def tensor_unbind(x):
    return x.unbind(-1)


# CHECK-LABEL: case Tensor.expand:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x1xf32>)
# CHECK:         %[[EXPAND:.+]] = fxla.expand %[[X]] {shape = [2, 3, 4]} : tensor<3x1xf32> -> tensor<2x3x4xf32>
@case(torch.Tensor.expand, t(3, 1))
def expand(x):
    return x.expand(2, -1, 4)


# CHECK-LABEL: case torch.broadcast_to:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x4xf32>)
# CHECK:         %[[EXPAND:.+]] = fxla.expand %[[X]] {shape = [3, 4]} : tensor<1x4xf32> -> tensor<3x4xf32>
@case(torch.broadcast_to, t(1, 4))
def broadcast_to(x):
    return torch.broadcast_to(x, (3, 4))


# CHECK-LABEL: case Tensor.broadcast_to:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4xf32>)
# CHECK:         %[[EXPAND:.+]] = fxla.expand %[[X]] {shape = [2, 4]} : tensor<4xf32> -> tensor<2x4xf32>
@case(torch.Tensor.broadcast_to, t(4))
def tensor_broadcast_to(x):
    return x.broadcast_to(2, 4)


# CHECK-LABEL: case Tensor.expand_as:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x1xf32>, %[[Y:.+]]: tensor<2x3x5xf32>)
# CHECK:         %[[EXPAND:.+]] = fxla.expand %[[X]] {shape = [2, 3, 5]} : tensor<3x1xf32> -> tensor<2x3x5xf32>
@case(torch.Tensor.expand_as, t(3, 1), t(2, 3, 5))
def expand_as(x, y):
    return x.expand_as(y)


# CHECK-LABEL: case Tensor.repeat:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [1, 1, 1, 2, 1, 3]} : tensor<2x3xf32> -> tensor<1x1x1x2x1x3xf32>
# CHECK:         %[[EXPAND:.+]] = fxla.expand %[[RESHAPE]] {shape = [2, 1, 1, 2, 3, 3]} : tensor<1x1x1x2x1x3xf32> -> tensor<2x1x1x2x3x3xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[EXPAND]] {shape = [2, 2, 9]} : tensor<2x1x1x2x3x3xf32> -> tensor<2x2x9xf32>
@case(torch.Tensor.repeat, t(2, 3))
def repeat_adds_dim(x):
    return x.repeat(2, 1, 3)


# CHECK-LABEL: case torch.tile:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [1, 2, 1, 3]} : tensor<2x3xf32> -> tensor<1x2x1x3xf32>
# CHECK:         %[[EXPAND:.+]] = fxla.expand %[[RESHAPE]] {shape = [1, 2, 2, 3]} : tensor<1x2x1x3xf32> -> tensor<1x2x2x3xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[EXPAND]] {shape = [2, 6]} : tensor<1x2x2x3xf32> -> tensor<2x6xf32>
@case(torch.tile, t(2, 3))
def tile_fewer_dims(x):
    return torch.tile(x, (2,))


# CHECK-LABEL: case Tensor.tile:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xbf16>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [1, 2, 1, 3]} : tensor<2x3xbf16> -> tensor<1x2x1x3xbf16>
# CHECK:         %[[EXPAND:.+]] = fxla.expand %[[RESHAPE]] {shape = [2, 2, 2, 3]} : tensor<1x2x1x3xbf16> -> tensor<2x2x2x3xbf16>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[EXPAND]] {shape = [4, 6]} : tensor<2x2x2x3xbf16> -> tensor<4x6xbf16>
@case(torch.Tensor.tile, t(2, 3, dtype=BF16))
def tensor_tile(x):
    return x.tile(2, 2)


class _Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


# A custom autograd Function: its forward traced, its outputs marked as having no gradient fxla can compute.
# CHECK-LABEL: case fxla.frontend.custom_functions.custom_function_output:
# CHECK:         %[[Y:.+]] = fxla.mul %{{.+}}, %{{.+}} : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
# CHECK:         %[[NG:.+]] = fxla.no_gradient %[[Y]] {op = "{{.*}}_Twice.apply"
# CHECK:         return %[[NG]] : tensor<2x3xf32>
@case(custom_function_output, t(2, 3))
def custom_function(x):
    return _Twice.apply(x)


# A tensor changed in place under torch.no_grad() (fxla.frontend.passes.grad_mode): its new value, with the
# history of the tensor before the change.
# CHECK-LABEL: case fxla.frontend.passes.grad_mode.keep_history:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[Y:.+]]: tensor<2x3xf32>)
# CHECK:         %[[NEW:.+]] = fxla.mul %[[X]], %{{.+}}
# CHECK:         %[[KEPT:.+]] = fxla.keep_history %[[NEW]], %[[Y]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
# CHECK:         return %[[KEPT]] : tensor<2x3xf32>
@case(keep_history, t(2, 3), t(2, 3))
def keep_history_case(x, y):
    return wrap(keep_history)(x * 2, y)


# x.contiguous() under torch.no_grad(): its value, through which a gradient is refused.
# CHECK-LABEL: case fxla.frontend.passes.grad_mode.unknown_history:
# CHECK:         %[[NG:.+]] = fxla.no_gradient %[[X:.+]] {op = "Tensor.contiguous() under torch.no_grad()"
# CHECK:         return %[[NG]] : tensor<2x3xf32>
@case(unknown_history, t(2, 3))
def unknown_history_case(x):
    return wrap(unknown_history)(x)


# Each element twice in a row along dim 1 (rotary embeddings' sin/cos in GPT-J): a new unit dim expanded.
# CHECK-LABEL: case torch.repeat_interleave:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[UNIT:.+]] = fxla.reshape %[[X]] {shape = [2, 3, 1]} : tensor<2x3xf32> -> tensor<2x3x1xf32>
# CHECK:         %[[SPREAD:.+]] = fxla.expand %[[UNIT]] {shape = [2, 3, 2]} : tensor<2x3x1xf32> -> tensor<2x3x2xf32>
# CHECK:         fxla.reshape %[[SPREAD]] {shape = [2, 6]} : tensor<2x3x2xf32> -> tensor<2x6xf32>
@case(torch.repeat_interleave, t(2, 3))
def repeat_interleave(x):
    return torch.repeat_interleave(x, 2, dim=1)


# The flattened tensor without a dim.
# CHECK-LABEL: case Tensor.repeat_interleave:
# CHECK:         %[[FLAT:.+]] = fxla.reshape %{{.+}} {shape = [6]} : tensor<2x3xi64> -> tensor<6xi64>
# CHECK:         fxla.expand %{{.+}} {shape = [6, 3]} : tensor<6x1xi64> -> tensor<6x3xi64>
@case(torch.Tensor.repeat_interleave, t(2, 3, dtype=I64))
def tensor_repeat_interleave(x):
    return x.repeat_interleave(3)


# CHECK-LABEL: case torch.flip:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[FLIP:.+]] = fxla.flip %[[X]] {dims = [0, -1]} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
@case(torch.flip, t(2, 3, 4))
def flip(x):
    return torch.flip(x, (0, -1))


# CHECK-LABEL: case Tensor.flip:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[FLIP:.+]] = fxla.flip %[[X]] {dims = [1]} : tensor<2x3xf32> -> tensor<2x3xf32>
@case(torch.Tensor.flip, t(2, 3))
def tensor_flip(x):
    return x.flip(1)


# CHECK-LABEL: case torch.fliplr:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[FLIP:.+]] = fxla.flip %[[X]] {dims = [1]} : tensor<2x3xf32> -> tensor<2x3xf32>
@case(torch.fliplr, t(2, 3))
def fliplr(x):
    return torch.fliplr(x)


# CHECK-LABEL: case torch.flipud:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[FLIP:.+]] = fxla.flip %[[X]] {dims = [0]} : tensor<2x3xf32> -> tensor<2x3xf32>
@case(torch.flipud, t(2, 3))
def flipud(x):
    return torch.flipud(x)


# CHECK-LABEL: case torch.roll:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [12]} : tensor<3x4xf32> -> tensor<12xf32>
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[RESHAPE]] {start = [9], limit = [12], stride = [1]} : tensor<12xf32> -> tensor<3xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %{{.+}} {shape = [3, 4]} : tensor<12xf32> -> tensor<3x4xf32>
# CHECK:         return %[[RESHAPE_2]] : tensor<3x4xf32>
@case(torch.roll, t(3, 4))
def roll_flattened(x):
    return torch.roll(x, 3)


# CHECK-LABEL: case Tensor.roll:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [2, 0], limit = [3, 4], stride = [1, 1]} : tensor<3x4xf32> -> tensor<1x4xf32>
# CHECK:         %[[SLICE_2:.+]] = fxla.slice %[[X]] {start = [0, 0], limit = [2, 4], stride = [1, 1]} : tensor<3x4xf32> -> tensor<2x4xf32>
# CHECK:         %[[CONCAT:.+]] = fxla.concat %{{.+}}, %{{.+}} {dim = 1} : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x4xf32>
# CHECK:         return %[[CONCAT]] : tensor<3x4xf32>
@case(torch.Tensor.roll, t(3, 4))
def tensor_roll_dims(x):
    return x.roll((1, -2), (0, 1))


# CHECK-LABEL: case torch.rot90:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[FLIP:.+]] = fxla.flip %[[X]] {dims = [2]} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[FLIP]] {dims = [0, 2, 1]} : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
@case(torch.rot90, t(2, 3, 4))
def rot90(x):
    return torch.rot90(x, 1, (1, 2))


# CHECK-LABEL: case Tensor.rot90:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xi64>)
# CHECK:         %[[FLIP:.+]] = fxla.flip %[[X]] {dims = [0]} : tensor<2x3xi64> -> tensor<2x3xi64>
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[FLIP]] {dims = [1, 0]} : tensor<2x3xi64> -> tensor<3x2xi64>
@case(torch.Tensor.rot90, t(2, 3, dtype=I64))
def tensor_rot90_k3(x):
    return x.rot90(-1)


# CHECK-LABEL: case torch.kron:
# CHECK:         func.func @main(%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<4x2x2xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[A]] {shape = [1, 1, 2, 1, 3, 1]} : tensor<2x3xf32> -> tensor<1x1x2x1x3x1xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[B]] {shape = [1, 4, 1, 2, 1, 2]} : tensor<4x2x2xf32> -> tensor<1x4x1x2x1x2xf32>
# CHECK:         %[[MUL:.+]] = fxla.mul %[[RESHAPE]], %[[RESHAPE_2]] : tensor<1x1x2x1x3x1xf32>, tensor<1x4x1x2x1x2xf32> -> tensor<1x4x2x2x3x2xf32>
# CHECK:         %[[RESHAPE_3:.+]] = fxla.reshape %[[MUL]] {shape = [4, 4, 6]} : tensor<1x4x2x2x3x2xf32> -> tensor<4x4x6xf32>
@case(torch.kron, t(2, 3), t(4, 2, 2))
def kron(a, b):
    return torch.kron(a, b)


# -- views: ravel, swapdims, adjoint, movedim/moveaxis, diagonal, unfold -------------------------------------
# CHECK-LABEL: case torch.ravel:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [24]} : tensor<2x3x4xf32> -> tensor<24xf32>
@case(torch.ravel, t(2, 3, 4))
def ravel(x):
    return torch.ravel(x)


# a transposed tensor raveled: its elements in the transposed order
# CHECK-LABEL: case Tensor.ravel:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [1, 0]} : tensor<3x4xf32> -> tensor<4x3xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[PERMUTE]] {shape = [12]} : tensor<4x3xf32> -> tensor<12xf32>
@case(torch.Tensor.ravel, t(3, 4))
def tensor_ravel_transposed(x):
    return x.t().ravel()


# CHECK-LABEL: case torch.swapdims:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [2, 1, 0]} : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
@case(torch.swapdims, t(2, 3, 4))
def swapdims(x):
    return torch.swapdims(x, 0, 2)


# CHECK-LABEL: case Tensor.swapdims:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xi64>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [0, 2, 1]} : tensor<2x3x4xi64> -> tensor<2x4x3xi64>
@case(torch.Tensor.swapdims, t(2, 3, 4, dtype=I64))
def tensor_swapdims_negative(x):
    return x.swapdims(-1, 1)


# adjoint: the last two dims swapped (the conjugate of real elements is themselves)
# CHECK-LABEL: case torch.adjoint:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [0, 2, 1]} : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
@case(torch.adjoint, t(2, 3, 4))
def adjoint(x):
    return torch.adjoint(x)


# CHECK-LABEL: case Tensor.adjoint:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x5xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [1, 0]} : tensor<3x5xf32> -> tensor<5x3xf32>
@case(torch.Tensor.adjoint, t(3, 5))
def tensor_adjoint(x):
    return x.adjoint()


# dims 0 and 1 to places 2 and 0: the permutation [1, 2, 0]
# CHECK-LABEL: case torch.movedim:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [1, 2, 0]} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
@case(torch.movedim, t(2, 3, 4))
def movedim_several(x):
    return torch.movedim(x, (0, 1), (-1, 0))


# CHECK-LABEL: case Tensor.movedim:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [1, 2, 0]} : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
@case(torch.Tensor.movedim, t(2, 3, 4))
def tensor_movedim(x):
    return x.movedim(0, 2)


# CHECK-LABEL: case torch.moveaxis:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [2, 0, 1]} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
@case(torch.moveaxis, t(2, 3, 4))
def moveaxis_last_first(x):
    return torch.moveaxis(x, -1, 0)


# CHECK-LABEL: case Tensor.moveaxis:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xi64>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [2, 0, 1]} : tensor<2x3x4xi64> -> tensor<4x2x3xi64>
@case(torch.Tensor.moveaxis, t(2, 3, 4, dtype=I64))
def tensor_moveaxis_lists(x):
    return x.moveaxis([2, 0], [0, 1])


# the diagonal of dims (1, 2) above the main one: dims 1 and 2 last, the 4 x 4 block from column 1 flattened,
# every 5th element
# CHECK-LABEL: case torch.diagonal:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x6xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0, 1], limit = [2, 4, 5], stride = [1, 1, 1]} : tensor<2x4x6xf32> -> tensor<2x4x4xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[SLICE]] {shape = [2, 16]} : tensor<2x4x4xf32> -> tensor<2x16xf32>
# CHECK:         %[[SLICE_2:.+]] = fxla.slice %[[RESHAPE]] {start = [0, 0], limit = [2, 16], stride = [1, 5]} : tensor<2x16xf32> -> tensor<2x4xf32>
# CHECK:         return %[[SLICE_2]] : tensor<2x4xf32>
@case(torch.diagonal, t(2, 4, 6))
def diagonal_offset(x):
    return torch.diagonal(x, 1, 1, 2)


# dims (-1, 1) below the main diagonal: the dims permuted to (0, 2, 1) first
# CHECK-LABEL: case Tensor.diagonal:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x6xf32>)
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X]] {dims = [0, 2, 1]} : tensor<2x4x6xf32> -> tensor<2x6x4xf32>
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[PERMUTE]] {start = [0, 2, 0], limit = [2, 6, 4], stride = [1, 1, 1]} : tensor<2x6x4xf32> -> tensor<2x4x4xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[SLICE]] {shape = [2, 16]} : tensor<2x4x4xf32> -> tensor<2x16xf32>
# CHECK:         %[[SLICE_2:.+]] = fxla.slice %[[RESHAPE]] {start = [0, 0], limit = [2, 16], stride = [1, 5]} : tensor<2x16xf32> -> tensor<2x4xf32>
# CHECK:         return %[[SLICE_2]] : tensor<2x4xf32>
@case(torch.Tensor.diagonal, t(2, 4, 6))
def tensor_diagonal_below(x):
    return x.diagonal(-2, -1, 1)


# overlapping windows of 3 every 1 along dim 1: their positions gathered, the window dim moved last
# CHECK-LABEL: case Tensor.unfold:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x5x4xf32>)
# CHECK:         %[[INDEX:.+]] = fxla.constant {value = dense<[0, 1, 2, 1, 2, 3, 2, 3, 4]> : tensor<9xi64>}
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %[[INDEX]] {dim = 1} : tensor<2x5x4xf32>, tensor<9xi64> -> tensor<2x9x4xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[INDEX_SELECT]] {shape = [2, 3, 3, 4]} : tensor<2x9x4xf32> -> tensor<2x3x3x4xf32>
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[RESHAPE]] {dims = [0, 1, 3, 2]} : tensor<2x3x3x4xf32> -> tensor<2x3x4x3xf32>
# CHECK:         return %[[PERMUTE]] : tensor<2x3x4x3xf32>
@case(torch.Tensor.unfold, t(2, 5, 4))
def tensor_unfold_overlapping(x):
    return x.unfold(1, 3, 1)


# -- +x and the conjugation ops: fxla's element types are real, so each is its input -----------------------
# CHECK-LABEL: case torch.positive:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(torch.positive, t(3, 4))
def positive(x):
    return torch.positive(x)


# CHECK-LABEL: case Tensor.positive:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<3x4xi64>
@case(torch.Tensor.positive, t(3, 4, dtype=I64))
def tensor_positive(x):
    return x.positive()


# CHECK-LABEL: case operator.pos:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(operator.pos, t(3, 4))
def unary_plus(x):
    return +x


# CHECK-LABEL: case torch.conj:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(torch.conj, t(3, 4))
def conj(x):
    return torch.conj(x)


# CHECK-LABEL: case Tensor.conj:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(torch.Tensor.conj, t(3, 4))
def tensor_conj(x):
    return x.conj()


# CHECK-LABEL: case torch.resolve_conj:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(torch.resolve_conj, t(3, 4))
def resolve_conj(x):
    return torch.resolve_conj(x)


# CHECK-LABEL: case Tensor.resolve_conj:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(torch.Tensor.resolve_conj, t(3, 4))
def tensor_resolve_conj(x):
    return x.resolve_conj()


# CHECK-LABEL: case torch.resolve_neg:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(torch.resolve_neg, t(3, 4))
def resolve_neg(x):
    return torch.resolve_neg(x)


# CHECK-LABEL: case Tensor.resolve_neg:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(torch.Tensor.resolve_neg, t(3, 4))
def tensor_resolve_neg(x):
    return x.resolve_neg()


# -- hsplit / vsplit / dsplit: tensor_split along dim 1 (0 for a 1-D tensor), 0 and 2 ----------------------
# CHECK-LABEL: case torch.hsplit:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x6xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0, 0], limit = [2, 2, 6], stride = [1, 1, 1]} : tensor<2x4x6xf32> -> tensor<2x2x6xf32>
# CHECK:         %[[SLICE_2:.+]] = fxla.slice %[[X]] {start = [0, 2, 0], limit = [2, 4, 6], stride = [1, 1, 1]} : tensor<2x4x6xf32> -> tensor<2x2x6xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]] : tensor<2x2x6xf32>, tensor<2x2x6xf32>
@case(torch.hsplit, t(2, 4, 6))
def hsplit_sections(x):
    return torch.hsplit(x, 2)


# a 1-D tensor is split along dim 0
# CHECK-LABEL: case Tensor.hsplit:
# CHECK:         func.func @main(%[[X:.+]]: tensor<6xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0], limit = [2], stride = [1]} : tensor<6xf32> -> tensor<2xf32>
# CHECK:         %[[SLICE_2:.+]] = fxla.slice %[[X]] {start = [2], limit = [5], stride = [1]} : tensor<6xf32> -> tensor<3xf32>
# CHECK:         %[[SLICE_3:.+]] = fxla.slice %[[X]] {start = [5], limit = [6], stride = [1]} : tensor<6xf32> -> tensor<1xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]], %[[SLICE_3]] : tensor<2xf32>, tensor<3xf32>, tensor<1xf32>
@case(torch.Tensor.hsplit, t(6))
def tensor_hsplit_1d_indices(x):
    return x.hsplit([2, 5])


# CHECK-LABEL: case torch.vsplit:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0], limit = [1, 4], stride = [1, 1]} : tensor<3x4xf32> -> tensor<1x4xf32>
# CHECK:         %[[SLICE_2:.+]] = fxla.slice %[[X]] {start = [1, 0], limit = [3, 4], stride = [1, 1]} : tensor<3x4xf32> -> tensor<2x4xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]] : tensor<1x4xf32>, tensor<2x4xf32>
@case(torch.vsplit, t(3, 4))
def vsplit_indices(x):
    return torch.vsplit(x, [1])


# CHECK-LABEL: case Tensor.vsplit:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x2xi64>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0], limit = [2, 2], stride = [1, 1]} : tensor<4x2xi64> -> tensor<2x2xi64>
# CHECK:         %[[SLICE_2:.+]] = fxla.slice %[[X]] {start = [2, 0], limit = [4, 2], stride = [1, 1]} : tensor<4x2xi64> -> tensor<2x2xi64>
# CHECK:         return %[[SLICE]], %[[SLICE_2]] : tensor<2x2xi64>, tensor<2x2xi64>
@case(torch.Tensor.vsplit, t(4, 2, dtype=I64))
def tensor_vsplit_sections(x):
    return x.vsplit(2)


# CHECK-LABEL: case torch.dsplit:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x6xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0, 0], limit = [2, 3, 2], stride = [1, 1, 1]} : tensor<2x3x6xf32> -> tensor<2x3x2xf32>
# CHECK:         %[[SLICE_2:.+]] = fxla.slice %[[X]] {start = [0, 0, 2], limit = [2, 3, 4], stride = [1, 1, 1]} : tensor<2x3x6xf32> -> tensor<2x3x2xf32>
# CHECK:         %[[SLICE_3:.+]] = fxla.slice %[[X]] {start = [0, 0, 4], limit = [2, 3, 6], stride = [1, 1, 1]} : tensor<2x3x6xf32> -> tensor<2x3x2xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]], %[[SLICE_3]] : tensor<2x3x2xf32>, tensor<2x3x2xf32>, tensor<2x3x2xf32>
@case(torch.dsplit, t(2, 3, 6))
def dsplit_sections(x):
    return torch.dsplit(x, 3)


# CHECK-LABEL: case Tensor.dsplit:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x6xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 0, 0], limit = [2, 3, 2], stride = [1, 1, 1]} : tensor<2x3x6xf32> -> tensor<2x3x2xf32>
# CHECK:         %[[SLICE_2:.+]] = fxla.slice %[[X]] {start = [0, 0, 2], limit = [2, 3, 5], stride = [1, 1, 1]} : tensor<2x3x6xf32> -> tensor<2x3x3xf32>
# CHECK:         %[[SLICE_3:.+]] = fxla.slice %[[X]] {start = [0, 0, 5], limit = [2, 3, 6], stride = [1, 1, 1]} : tensor<2x3x6xf32> -> tensor<2x3x1xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]], %[[SLICE_3]] : tensor<2x3x2xf32>, tensor<2x3x3xf32>, tensor<2x3x1xf32>
@case(torch.Tensor.dsplit, t(2, 3, 6))
def tensor_dsplit_indices(x):
    return x.dsplit([2, 5])


# -- atleast_1d/2d/3d (one tensor, several, or a list: torch._VF's), broadcast_tensors -----------------------
# CHECK-LABEL: case torch.atleast_1d:
# CHECK:         func.func @main(%[[S:.+]]: tensor<f32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[S]] {shape = [1]} : tensor<f32> -> tensor<1xf32>
@case(torch.atleast_1d, t())
def atleast_1d(s):
    return torch.atleast_1d(s)


# CHECK-LABEL: case torch.atleast_2d:
# CHECK:         func.func @main(%[[V:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[V]] {shape = [1, 4]} : tensor<4xf32> -> tensor<1x4xf32>
# CHECK:         return %[[RESHAPE]], %[[X]] : tensor<1x4xf32>, tensor<2x3xf32>
@case(torch.atleast_2d, t(4), t(2, 3))
def atleast_2d_several(v, x):
    return torch.atleast_2d(v, x)


# a 1-D tensor becomes [1, n, 1]
# CHECK-LABEL: case torch.atleast_3d:
# CHECK:         func.func @main(%[[V:.+]]: tensor<4xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[V]] {shape = [1, 4, 1]} : tensor<4xf32> -> tensor<1x4x1xf32>
@case(torch.atleast_3d, t(4))
def atleast_3d(v):
    return torch.atleast_3d(v)


# CHECK-LABEL: case torch._VariableFunctionsClass.atleast_1d:
# CHECK:         func.func @main(%[[S:.+]]: tensor<f32>, %[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[S]] {shape = [1]} : tensor<f32> -> tensor<1xf32>
# CHECK:         return %[[RESHAPE]], %[[X]] : tensor<1xf32>, tensor<2x3xf32>
@case(torch._VF.atleast_1d, t(), t(2, 3))
def atleast_1d_list(s, x):
    return torch.atleast_1d([s, x])


# CHECK-LABEL: case torch._VariableFunctionsClass.atleast_2d:
# CHECK:         func.func @main(%[[V:.+]]: tensor<4xf32>, %[[S:.+]]: tensor<f32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[V]] {shape = [1, 4]} : tensor<4xf32> -> tensor<1x4xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[S]] {shape = [1, 1]} : tensor<f32> -> tensor<1x1xf32>
# CHECK:         return %[[RESHAPE]], %[[RESHAPE_2]] : tensor<1x4xf32>, tensor<1x1xf32>
@case(torch._VF.atleast_2d, t(4), t())
def atleast_2d_tuple(v, s):
    return torch.atleast_2d((v, s))


# CHECK-LABEL: case torch._VariableFunctionsClass.atleast_3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[V:.+]]: tensor<4xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 3, 1]} : tensor<2x3xf32> -> tensor<2x3x1xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[V]] {shape = [1, 4, 1]} : tensor<4xf32> -> tensor<1x4x1xf32>
# CHECK:         return %[[RESHAPE]], %[[RESHAPE_2]] : tensor<2x3x1xf32>, tensor<1x4x1xf32>
@case(torch._VF.atleast_3d, t(2, 3), t(4))
def atleast_3d_list(x, v):
    return torch.atleast_3d([x, v])


# CHECK-LABEL: case torch.broadcast_tensors:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x1xf32>, %[[Y:.+]]: tensor<3x1x5xf32>)
# CHECK:         %[[EXPAND:.+]] = fxla.expand %[[X]] {shape = [3, 4, 5]} : tensor<4x1xf32> -> tensor<3x4x5xf32>
# CHECK:         %[[EXPAND_2:.+]] = fxla.expand %[[Y]] {shape = [3, 4, 5]} : tensor<3x1x5xf32> -> tensor<3x4x5xf32>
# CHECK:         return %[[EXPAND]], %[[EXPAND_2]] : tensor<3x4x5xf32>, tensor<3x4x5xf32>
@case(torch.broadcast_tensors, t(4, 1), t(3, 1, 5))
def broadcast_tensors(x, y):
    return torch.broadcast_tensors(x, y)
