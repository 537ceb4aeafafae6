# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla: cat/stack, split/chunk/tensor_split/unbind (several results), expand/broadcast/repeat/tile,
# flip and roll -- one case per op object of fxla.lowering.RULES; the checks show the dim attributes, the
# promoted dtype of mixed-dtype cat and the result types.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
from fxla.testing import case, t

I64, I32, BF16 = torch.int64, torch.int32, torch.bfloat16


# CHECK-LABEL: case torch.cat:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[Y:.+]]: tensor<2x5xf32>)
# CHECK:         %[[CONCAT:.+]] = "fxla.concat"(%[[X]], %[[Y]]) {dim = -1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
@case(torch.cat, t(2, 3), t(2, 5))
def cat_negative_dim(x, y):
    return torch.cat([x, y], dim=-1)


# torch's legacy rule: 1-D empty inputs (torch.tensor([]), a Hugging Face DynamicCache's start) are skipped,
# whatever the others' rank; they still take part in type promotion (bf16 with an f32 empty: f32).
# CHECK-LABEL: case torch.cat (1-D empty skipped):
# CHECK:         func.func @main(%[[E:.+]]: tensor<0xf32>, %[[X:.+]]: tensor<2x3xbf16>)
# CHECK:         %[[CONCAT:.+]] = "fxla.concat"(%[[X]]) {dim = -2 : i64} : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
# CHECK:         %[[CONVERT:.+]] = "fxla.convert"(%[[CONCAT]]) : (tensor<2x3xbf16>) -> tensor<2x3xf32>
# CHECK:         return %[[CONVERT]] : tensor<2x3xf32>
@case(torch.cat, t(0), t(2, 3, dtype=torch.bfloat16), variant="1-D empty skipped")
def cat_skips_empty(e, x):
    return torch.cat((e, x), dim=-2)


# CHECK-LABEL: case torch.concat:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xi32>, %[[Y:.+]]: tensor<1x3xf32>)
# CHECK:         %[[CONCAT:.+]] = "fxla.concat"(%[[X]], %[[Y]]) {dim = 0 : i64} : (tensor<2x3xi32>, tensor<1x3xf32>) -> tensor<3x3xf32>
@case(torch.concat, t(2, 3, dtype=I32), t(1, 3))
def concat_promotes(x, y):
    return torch.concat((x, y))


# CHECK-LABEL: case torch.concatenate:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[Y:.+]]: tensor<2x3xf32>)
# CHECK:         %[[CONCAT:.+]] = "fxla.concat"(%[[X]], %[[Y]]) {dim = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
@case(torch.concatenate, t(2, 3), t(2, 3))
def concatenate(x, y):
    return torch.concatenate([x, y], axis=1)


# CHECK-LABEL: case torch.stack:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[Y:.+]]: tensor<2x3xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 2, 3, 1>} : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%[[Y]]) {shape = array<i64: 2, 3, 1>} : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
# CHECK:         %[[CONCAT:.+]] = "fxla.concat"(%[[RESHAPE]], %[[RESHAPE_2]]) {dim = 2 : i64} : (tensor<2x3x1xf32>, tensor<2x3x1xf32>) -> tensor<2x3x2xf32>
@case(torch.stack, t(2, 3), t(2, 3))
def stack(x, y):
    return torch.stack([x, y], dim=-1)


# CHECK-LABEL: case torch.split:
# CHECK:         func.func @main(%[[X:.+]]: tensor<5x4xf32>)
# CHECK:         %[[SLICE:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 2, 4>, start = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<5x4xf32>) -> tensor<2x4xf32>
# CHECK:         %[[SLICE_2:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 4, 4>, start = array<i64: 2, 0>, stride = array<i64: 1, 1>} : (tensor<5x4xf32>) -> tensor<2x4xf32>
# CHECK:         %[[SLICE_3:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 5, 4>, start = array<i64: 4, 0>, stride = array<i64: 1, 1>} : (tensor<5x4xf32>) -> tensor<1x4xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]], %[[SLICE_3]] : tensor<2x4xf32>, tensor<2x4xf32>, tensor<1x4xf32>
@case(torch.split, t(5, 4))
def split_size(x):
    return torch.split(x, 2)


# CHECK-LABEL: case Tensor.split:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x6xf32>)
# CHECK:         %[[SLICE:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 4, 1>, start = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<4x6xf32>) -> tensor<4x1xf32>
# CHECK:         %[[SLICE_2:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 4, 6>, start = array<i64: 0, 1>, stride = array<i64: 1, 1>} : (tensor<4x6xf32>) -> tensor<4x5xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]] : tensor<4x1xf32>, tensor<4x5xf32>
@case(torch.Tensor.split, t(4, 6))
def tensor_split_sizes(x):
    return x.split([1, 5], dim=-1)


# CHECK-LABEL: case Tensor.split_with_sizes:
# CHECK:         func.func @main(%[[X:.+]]: tensor<6x2xf32>)
# CHECK:         %[[SLICE:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 2, 2>, start = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<6x2xf32>) -> tensor<2x2xf32>
# CHECK:         %[[SLICE_2:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 6, 2>, start = array<i64: 2, 0>, stride = array<i64: 1, 1>} : (tensor<6x2xf32>) -> tensor<4x2xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]] : tensor<2x2xf32>, tensor<4x2xf32>
@case(torch.Tensor.split_with_sizes, t(6, 2))
def tensor_split_with_sizes(x):
    return x.split_with_sizes([2, 4])


# CHECK-LABEL: case torch.split_with_sizes:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x5xf32>)
# CHECK:         %[[SLICE:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 3, 3>, start = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<3x5xf32>) -> tensor<3x3xf32>
# CHECK:         %[[SLICE_2:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 3, 5>, start = array<i64: 0, 3>, stride = array<i64: 1, 1>} : (tensor<3x5xf32>) -> tensor<3x2xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]] : tensor<3x3xf32>, tensor<3x2xf32>
@case(torch.split_with_sizes, t(3, 5))
def split_with_sizes(x):
    return torch.split_with_sizes(x, [3, 2], 1)


# CHECK-LABEL: case torch.chunk:
# CHECK:         func.func @main(%[[X:.+]]: tensor<5x4xf32>)
# CHECK:         %[[SLICE:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 2, 4>, start = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<5x4xf32>) -> tensor<2x4xf32>
# CHECK:         %[[SLICE_2:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 4, 4>, start = array<i64: 2, 0>, stride = array<i64: 1, 1>} : (tensor<5x4xf32>) -> tensor<2x4xf32>
# CHECK:         %[[SLICE_3:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 5, 4>, start = array<i64: 4, 0>, stride = array<i64: 1, 1>} : (tensor<5x4xf32>) -> tensor<1x4xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]], %[[SLICE_3]] : tensor<2x4xf32>, tensor<2x4xf32>, tensor<1x4xf32>
@case(torch.chunk, t(5, 4))
def chunk_uneven(x):
    return torch.chunk(x, 3)


# CHECK-LABEL: case Tensor.chunk:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x6xf32>)
# CHECK:         %[[SLICE:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 2, 3>, start = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x6xf32>) -> tensor<2x3xf32>
# CHECK:         %[[SLICE_2:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 2, 6>, start = array<i64: 0, 3>, stride = array<i64: 1, 1>} : (tensor<2x6xf32>) -> tensor<2x3xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]] : tensor<2x3xf32>, tensor<2x3xf32>
@case(torch.Tensor.chunk, t(2, 6))
def tensor_chunk(x):
    return x.chunk(2, dim=-1)


# CHECK-LABEL: case torch.tensor_split:
# CHECK:         func.func @main(%[[X:.+]]: tensor<7x2xf32>)
# CHECK:         %[[SLICE:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 3, 2>, start = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<7x2xf32>) -> tensor<3x2xf32>
# CHECK:         %[[SLICE_2:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 5, 2>, start = array<i64: 3, 0>, stride = array<i64: 1, 1>} : (tensor<7x2xf32>) -> tensor<2x2xf32>
# CHECK:         %[[SLICE_3:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 7, 2>, start = array<i64: 5, 0>, stride = array<i64: 1, 1>} : (tensor<7x2xf32>) -> tensor<2x2xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]], %[[SLICE_3]] : tensor<3x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
@case(torch.tensor_split, t(7, 2))
def tensor_split_sections(x):
    return torch.tensor_split(x, 3)


# CHECK-LABEL: case Tensor.tensor_split:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x8xf32>)
# CHECK:         %[[SLICE:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 2, 1>, start = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
# CHECK:         %[[SLICE_2:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 2, 5>, start = array<i64: 0, 1>, stride = array<i64: 1, 1>} : (tensor<2x8xf32>) -> tensor<2x4xf32>
# CHECK:         %[[SLICE_3:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 2, 8>, start = array<i64: 0, 5>, stride = array<i64: 1, 1>} : (tensor<2x8xf32>) -> tensor<2x3xf32>
# CHECK:         return %[[SLICE]], %[[SLICE_2]], %[[SLICE_3]] : tensor<2x1xf32>, tensor<2x4xf32>, tensor<2x3xf32>
@case(torch.Tensor.tensor_split, t(2, 8))
def tensor_tensor_split_indices(x):
    return x.tensor_split([1, 5], dim=1)


# CHECK-LABEL: case torch.unbind:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x2xf32>)
# CHECK:         %[[SLICE:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 1, 2>, start = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<3x2xf32>) -> tensor<1x2xf32>
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[SLICE]]) {shape = array<i64: 2>} : (tensor<1x2xf32>) -> tensor<2xf32>
# CHECK:         return %[[RESHAPE]], %{{.+}}, %{{.+}} : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
@case(torch.unbind, t(3, 2))
def unbind(x):
    return torch.unbind(x)


# CHECK-LABEL: case Tensor.unbind:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xi64>)
# CHECK:         %[[SLICE:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 2, 1>, start = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x3xi64>) -> tensor<2x1xi64>
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[SLICE]]) {shape = array<i64: 2>} : (tensor<2x1xi64>) -> tensor<2xi64>
# CHECK:         return %[[RESHAPE]], %{{.+}}, %{{.+}} : tensor<2xi64>, tensor<2xi64>, tensor<2xi64>
@case(torch.Tensor.unbind, t(2, 3, dtype=I64))
def tensor_unbind(x):
    return x.unbind(-1)


# CHECK-LABEL: case Tensor.expand:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x1xf32>)
# CHECK:         %[[EXPAND:.+]] = "fxla.expand"(%[[X]]) {shape = array<i64: 2, 3, 4>} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
@case(torch.Tensor.expand, t(3, 1))
def expand(x):
    return x.expand(2, -1, 4)


# CHECK-LABEL: case torch.broadcast_to:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x4xf32>)
# CHECK:         %[[EXPAND:.+]] = "fxla.expand"(%[[X]]) {shape = array<i64: 3, 4>} : (tensor<1x4xf32>) -> tensor<3x4xf32>
@case(torch.broadcast_to, t(1, 4))
def broadcast_to(x):
    return torch.broadcast_to(x, (3, 4))


# CHECK-LABEL: case Tensor.broadcast_to:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4xf32>)
# CHECK:         %[[EXPAND:.+]] = "fxla.expand"(%[[X]]) {shape = array<i64: 2, 4>} : (tensor<4xf32>) -> tensor<2x4xf32>
@case(torch.Tensor.broadcast_to, t(4))
def tensor_broadcast_to(x):
    return x.broadcast_to(2, 4)


# CHECK-LABEL: case Tensor.expand_as:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x1xf32>, %[[Y:.+]]: tensor<2x3x5xf32>)
# CHECK:         %[[EXPAND:.+]] = "fxla.expand"(%[[X]]) {shape = array<i64: 2, 3, 5>} : (tensor<3x1xf32>) -> tensor<2x3x5xf32>
@case(torch.Tensor.expand_as, t(3, 1), t(2, 3, 5))
def expand_as(x, y):
    return x.expand_as(y)


# CHECK-LABEL: case Tensor.repeat:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 1, 1, 1, 2, 1, 3>} : (tensor<2x3xf32>) -> tensor<1x1x1x2x1x3xf32>
# CHECK:         %[[EXPAND:.+]] = "fxla.expand"(%[[RESHAPE]]) {shape = array<i64: 2, 1, 1, 2, 3, 3>} : (tensor<1x1x1x2x1x3xf32>) -> tensor<2x1x1x2x3x3xf32>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%[[EXPAND]]) {shape = array<i64: 2, 2, 9>} : (tensor<2x1x1x2x3x3xf32>) -> tensor<2x2x9xf32>
@case(torch.Tensor.repeat, t(2, 3))
def repeat_adds_dim(x):
    return x.repeat(2, 1, 3)


# CHECK-LABEL: case torch.tile:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 1, 2, 1, 3>} : (tensor<2x3xf32>) -> tensor<1x2x1x3xf32>
# CHECK:         %[[EXPAND:.+]] = "fxla.expand"(%[[RESHAPE]]) {shape = array<i64: 1, 2, 2, 3>} : (tensor<1x2x1x3xf32>) -> tensor<1x2x2x3xf32>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%[[EXPAND]]) {shape = array<i64: 2, 6>} : (tensor<1x2x2x3xf32>) -> tensor<2x6xf32>
@case(torch.tile, t(2, 3))
def tile_fewer_dims(x):
    return torch.tile(x, (2,))


# CHECK-LABEL: case Tensor.tile:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xbf16>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 1, 2, 1, 3>} : (tensor<2x3xbf16>) -> tensor<1x2x1x3xbf16>
# CHECK:         %[[EXPAND:.+]] = "fxla.expand"(%[[RESHAPE]]) {shape = array<i64: 2, 2, 2, 3>} : (tensor<1x2x1x3xbf16>) -> tensor<2x2x2x3xbf16>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%[[EXPAND]]) {shape = array<i64: 4, 6>} : (tensor<2x2x2x3xbf16>) -> tensor<4x6xbf16>
@case(torch.Tensor.tile, t(2, 3, dtype=BF16))
def tensor_tile(x):
    return x.tile(2, 2)


# CHECK-LABEL: case torch.flip:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[FLIP:.+]] = "fxla.flip"(%[[X]]) {dims = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
@case(torch.flip, t(2, 3, 4))
def flip(x):
    return torch.flip(x, (0, -1))


# CHECK-LABEL: case Tensor.flip:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[FLIP:.+]] = "fxla.flip"(%[[X]]) {dims = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
@case(torch.Tensor.flip, t(2, 3))
def tensor_flip(x):
    return x.flip(1)


# CHECK-LABEL: case torch.fliplr:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[FLIP:.+]] = "fxla.flip"(%[[X]]) {dims = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
@case(torch.fliplr, t(2, 3))
def fliplr(x):
    return torch.fliplr(x)


# CHECK-LABEL: case torch.flipud:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[FLIP:.+]] = "fxla.flip"(%[[X]]) {dims = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
@case(torch.flipud, t(2, 3))
def flipud(x):
    return torch.flipud(x)


# CHECK-LABEL: case torch.roll:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 12>} : (tensor<3x4xf32>) -> tensor<12xf32>
# CHECK:         %[[SLICE:.+]] = "fxla.slice"(%[[RESHAPE]]) {limit = array<i64: 12>, start = array<i64: 9>, stride = array<i64: 1>} : (tensor<12xf32>) -> tensor<3xf32>
# CHECK:         %[[RESHAPE_2:.+]] = "fxla.reshape"(%{{.+}}) {shape = array<i64: 3, 4>} : (tensor<12xf32>) -> tensor<3x4xf32>
# CHECK:         return %[[RESHAPE_2]] : tensor<3x4xf32>
@case(torch.roll, t(3, 4))
def roll_flattened(x):
    return torch.roll(x, 3)


# CHECK-LABEL: case Tensor.roll:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SLICE:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 3, 4>, start = array<i64: 2, 0>, stride = array<i64: 1, 1>} : (tensor<3x4xf32>) -> tensor<1x4xf32>
# CHECK:         %[[SLICE_2:.+]] = "fxla.slice"(%[[X]]) {limit = array<i64: 2, 4>, start = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<3x4xf32>) -> tensor<2x4xf32>
# CHECK:         %[[CONCAT:.+]] = "fxla.concat"(%{{.+}}, %{{.+}}) {dim = 1 : i64} : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x4xf32>
# CHECK:         return %[[CONCAT]] : tensor<3x4xf32>
@case(torch.Tensor.roll, t(3, 4))
def tensor_roll_dims(x):
    return x.roll((1, -2), (0, 1))
