# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `indexing` (lowering/rules/indexing.py): x[...] indexing, named-tuple fields and tensor
# attributes, index_select/gather/scatter, masked_fill/where, embedding, narrow/select -- one case per op object
# of fxla.lowering.RULES; the checks show negative indices and dims resolved, index dtypes kept, and where's
# promoted result.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import builtins
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

from fxla.testing import case, t

BF16, BOOL, I32, I64 = torch.bfloat16, torch.bool, torch.int32, torch.int64


# CHECK-LABEL: case operator.getitem:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5x6xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [1, 4, 0], limit = [4, 5, 6], stride = [1, 1, 2]} : tensor<4x5x6xf32> -> tensor<3x1x3xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[SLICE]] {shape = [1, 3, 3]} : tensor<3x1x3xf32> -> tensor<1x3x3xf32>
@case(operator.getitem, t(4, 5, 6))
def getitem_slices_none_negative(x):
    return x[None, 1:, -1, ::2]


# CHECK-LABEL: case operator.getitem (tensor index):
# CHECK:         func.func @main(%[[X:.+]]: tensor<5x6xf32>, %[[I:.+]]: tensor<4xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<0> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[LT:.+]] = fxla.lt %[[I]], %[[CONSTANT]] : tensor<4xi64>, tensor<i64> -> tensor<4xi1>
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %{{.+}} {dim = 1} : tensor<5x6xf32>, tensor<4xi64> -> tensor<5x4xf32>
# CHECK:         return %[[INDEX_SELECT]] : tensor<5x4xf32>
@case(operator.getitem, t(5, 6), t(4, dtype=I64), variant="tensor index")
def getitem_tensor_index(x, i):
    return x[:, i]


# CHECK-LABEL: case builtins.getattr:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ARGMAX:.+]] = fxla.argmax %[[X]] {dim = 1, keepdim = false} : tensor<3x4xf32> -> tensor<3xi64>
# CHECK:         return %[[ARGMAX]] : tensor<3xi64>
@case(builtins.getattr, t(3, 4))
def namedtuple_field(x):
    return torch.max(x, 1).indices


# CHECK-LABEL: case torch.index_select:
# CHECK:         func.func @main(%[[X:.+]]: tensor<5x3xf32>, %[[I:.+]]: tensor<4xi32>)
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %[[I]] {dim = 0} : tensor<5x3xf32>, tensor<4xi32> -> tensor<4x3xf32>
@case(torch.index_select, t(5, 3), t(4, dtype=I32))
def index_select_i32(x, i):
    return torch.index_select(x, 0, i)


# CHECK-LABEL: case Tensor.index_select:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x5xf32>, %[[I:.+]]: tensor<3xi64>)
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %[[I]] {dim = -1} : tensor<2x5xf32>, tensor<3xi64> -> tensor<2x3xf32>
@case(torch.Tensor.index_select, t(2, 5), t(3, dtype=I64))
def tensor_index_select_negative_dim(x, i):
    return x.index_select(-1, i)


# CHECK-LABEL: case torch.gather:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[I:.+]]: tensor<3x2xi64>)
# CHECK:         %[[GATHER:.+]] = fxla.gather %[[X]], %[[I]] {dim = 1} : tensor<3x4xf32>, tensor<3x2xi64> -> tensor<3x2xf32>
@case(torch.gather, t(3, 4), t(3, 2, dtype=I64))
def gather(x, i):
    return torch.gather(x, 1, i)


# CHECK-LABEL: case Tensor.gather:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[I:.+]]: tensor<2x4xi64>)
# CHECK:         %[[GATHER:.+]] = fxla.gather %[[X]], %[[I]] {dim = 0} : tensor<3x4xf32>, tensor<2x4xi64> -> tensor<2x4xf32>
@case(torch.Tensor.gather, t(3, 4), t(2, 4, dtype=I64))
def tensor_gather(x, i):
    return x.gather(0, i)


# CHECK-LABEL: case torch.scatter:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x5xf32>, %[[I:.+]]: tensor<3x2xi64>, %[[SRC:.+]]: tensor<3x2xf32>)
# CHECK:         %[[SCATTER:.+]] = fxla.scatter %[[X]], %[[I]], %[[SRC]] {dim = 1, reduce = "none"} : tensor<3x5xf32>, tensor<3x2xi64>, tensor<3x2xf32> -> tensor<3x5xf32>
@case(torch.scatter, t(3, 5), t(3, 2, dtype=I64), t(3, 2))
def scatter(x, i, src):
    return torch.scatter(x, 1, i, src)


# CHECK-LABEL: case Tensor.scatter:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x5xf32>, %[[I:.+]]: tensor<2x5xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<1.500000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[CONSTANT]] : tensor<f32> -> tensor<f32>
# CHECK:         %[[SCATTER:.+]] = fxla.scatter %[[X]], %[[I]], %{{.+}} {dim = 0, reduce = "none"} : tensor<3x5xf32>, tensor<2x5xi64>, tensor<2x5xf32> -> tensor<3x5xf32>
# CHECK:         return %[[SCATTER]] : tensor<3x5xf32>
@case(torch.Tensor.scatter, t(3, 5), t(2, 5, dtype=I64))
def tensor_scatter_value(x, i):
    return x.scatter(0, i, 1.5)


# CHECK-LABEL: case torch.scatter_add:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x5xf32>, %[[I:.+]]: tensor<3x2xi64>, %[[SRC:.+]]: tensor<3x2xf32>)
# CHECK:         %[[SCATTER:.+]] = fxla.scatter %[[X]], %[[I]], %[[SRC]] {dim = -1, reduce = "add"} : tensor<3x5xf32>, tensor<3x2xi64>, tensor<3x2xf32> -> tensor<3x5xf32>
@case(torch.scatter_add, t(3, 5), t(3, 2, dtype=I64), t(3, 2))
def scatter_add(x, i, src):
    return torch.scatter_add(x, -1, i, src)


# CHECK-LABEL: case Tensor.scatter_add:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x2xf32>, %[[I:.+]]: tensor<3x2xi64>, %[[SRC:.+]]: tensor<3x2xf32>)
# CHECK:         %[[SCATTER:.+]] = fxla.scatter %[[X]], %[[I]], %[[SRC]] {dim = 0, reduce = "add"} : tensor<4x2xf32>, tensor<3x2xi64>, tensor<3x2xf32> -> tensor<4x2xf32>
@case(torch.Tensor.scatter_add, t(4, 2), t(3, 2, dtype=I64), t(3, 2))
def tensor_scatter_add(x, i, src):
    return x.scatter_add(0, i, src)


# CHECK-LABEL: case torch.masked_fill:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[M:.+]]: tensor<4xi1>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<-1.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[WHERE:.+]] = fxla.where %[[M]], %[[CONSTANT]], %[[X]] : tensor<4xi1>, tensor<f32>, tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.masked_fill, t(3, 4), t(4, dtype=BOOL))
def masked_fill_broadcast(x, m):
    return torch.masked_fill(x, m, -1.0)


# CHECK-LABEL: case Tensor.masked_fill:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>, %[[M:.+]]: tensor<3x4xi1>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<7> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[WHERE:.+]] = fxla.where %[[M]], %[[CONSTANT]], %[[X]] : tensor<3x4xi1>, tensor<i64>, tensor<3x4xi64> -> tensor<3x4xi64>
@case(torch.Tensor.masked_fill, t(3, 4, dtype=I64), t(3, 4, dtype=BOOL))
def tensor_masked_fill_int(x, m):
    return x.masked_fill(m, 7)


# CHECK-LABEL: case torch.where:
# CHECK:         func.func @main(%[[C:.+]]: tensor<4xi1>, %[[X:.+]]: tensor<4xi64>, %[[Y:.+]]: tensor<4xf32>)
# CHECK:         %[[WHERE:.+]] = fxla.where %[[C]], %[[X]], %[[Y]] : tensor<4xi1>, tensor<4xi64>, tensor<4xf32> -> tensor<4xf32>
@case(torch.where, t(4, dtype=BOOL), t(4, dtype=I64), t(4))
def where_promotes(c, x, y):
    return torch.where(c, x, y)


# CHECK-LABEL: case Tensor.where:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[C:.+]]: tensor<3x4xi1>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[WHERE:.+]] = fxla.where %[[C]], %[[X]], %[[CONSTANT]] : tensor<3x4xi1>, tensor<3x4xf32>, tensor<f32> -> tensor<3x4xf32>
@case(torch.Tensor.where, t(3, 4), t(3, 4, dtype=BOOL))
def tensor_where_scalar(x, c):
    return x.where(c, 0.0)


# CHECK-LABEL: case torch.nn.functional.embedding:
# CHECK:         func.func @main(%[[I:.+]]: tensor<2x3xi64>, %[[W:.+]]: tensor<10x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[I]] {shape = [6]} : tensor<2x3xi64> -> tensor<6xi64>
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[W]], %[[RESHAPE]] {dim = 0} : tensor<10x4xf32>, tensor<6xi64> -> tensor<6x4xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[INDEX_SELECT]] {shape = [2, 3, 4]} : tensor<6x4xf32> -> tensor<2x3x4xf32>
@case(F.embedding, t(2, 3, dtype=I64), t(10, 4))
def embedding(i, w):
    return F.embedding(i, w)


# CHECK-LABEL: case torch.embedding:
# CHECK:         func.func @main(%[[W:.+]]: tensor<10x4xbf16>, %[[I:.+]]: tensor<5xi32>)
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[W]], %[[I]] {dim = 0} : tensor<10x4xbf16>, tensor<5xi32> -> tensor<5x4xbf16>
@case(torch.embedding, t(10, 4, dtype=BF16), t(5, dtype=I32))
def torch_embedding(w, i):
    return torch.embedding(w, i)


# CHECK-LABEL: case torch.nn.Embedding:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xi64>, %[[WEIGHT:.+]]: tensor<10x4xf32> {fxla.param = "mod.weight"})
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [6]} : tensor<2x3xi64> -> tensor<6xi64>
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[WEIGHT]], %[[RESHAPE]] {dim = 0} : tensor<10x4xf32>, tensor<6xi64> -> tensor<6x4xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[INDEX_SELECT]] {shape = [2, 3, 4]} : tensor<6x4xf32> -> tensor<2x3x4xf32>
@case(nn.Embedding, t(2, 3, dtype=I64))
def embedding_module():
    return nn.Embedding(10, 4)


# diff: the later slice minus the earlier one along dim, once per order
# CHECK-LABEL: case torch.diff:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x5xf32>)
# CHECK:         %[[LATER:.+]] = fxla.slice %[[X]] {start = [0, 1], limit = [3, 5], stride = [1, 1]}
# CHECK:         %[[EARLIER:.+]] = fxla.slice %[[X]] {start = [0, 0], limit = [3, 4], stride = [1, 1]}
# CHECK:         fxla.sub %[[LATER]], %[[EARLIER]] : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.diff, t(3, 5))
def diff(x):
    return torch.diff(x)


# CHECK-LABEL: case Tensor.diff:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4xi1>)
# CHECK:         fxla.logical_xor {{.+}} : tensor<3xi1>, tensor<3xi1> -> tensor<3xi1>
@case(torch.Tensor.diff, t(4, dtype=BOOL))
def tensor_diff(x):
    return x.diff()


# CHECK-LABEL: case torch.narrow:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x6xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 1], limit = [4, 4], stride = [1, 1]} : tensor<4x6xf32> -> tensor<4x3xf32>
@case(torch.narrow, t(4, 6))
def narrow(x):
    return torch.narrow(x, -1, 1, 3)


# CHECK-LABEL: case Tensor.narrow:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x6xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [2, 0], limit = [4, 6], stride = [1, 1]} : tensor<4x6xf32> -> tensor<2x6xf32>
@case(torch.Tensor.narrow, t(4, 6))
def tensor_narrow(x):
    return x.narrow(0, 2, 2)


# CHECK-LABEL: case torch.select:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4x5xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [0, 3, 0], limit = [3, 4, 5], stride = [1, 1, 1]} : tensor<3x4x5xf32> -> tensor<3x1x5xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[SLICE]] {shape = [3, 5]} : tensor<3x1x5xf32> -> tensor<3x5xf32>
@case(torch.select, t(3, 4, 5))
def select_negative_index(x):
    return torch.select(x, 1, -1)


# CHECK-LABEL: case Tensor.select:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SLICE:.+]] = fxla.slice %[[X]] {start = [1, 0], limit = [2, 4], stride = [1, 1]} : tensor<3x4xf32> -> tensor<1x4xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[SLICE]] {shape = [4]} : tensor<1x4xf32> -> tensor<4xf32>
@case(torch.Tensor.select, t(3, 4))
def tensor_select(x):
    return x.select(0, 1)


# Index tensors on dims apart (x[i, :, j]): torch puts the indexed dims first, so they are moved to the front
# (a permute), merged and read at the linear index i * 6 + j.  The merged index is no input's values, so each
# index is a value check of the program (i in [-4, 4), j in [-6, 6)): the last result is their check code.
# CHECK-LABEL: case operator.getitem (tensor indices apart):
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5x6xf32>, %[[I:.+]]: tensor<3xi64>, %[[J:.+]]: tensor<3xi64>) -> (tensor<3x5xf32>, tensor<i32>)
# CHECK:         %[[FRONT:.+]] = fxla.permute %[[X]] {dims = [0, 2, 1]} : tensor<4x5x6xf32> -> tensor<4x6x5xf32>
# CHECK:         %[[I_OK:.+]] = fxla.all %{{.+}} {dims = [], keepdim = false} : tensor<3xi1> -> tensor<i1>
# CHECK:         %[[J_OK:.+]] = fxla.all %{{.+}} {dims = [], keepdim = false} : tensor<3xi1> -> tensor<i1>
# CHECK:         %[[LINEAR:.+]] = fxla.add %{{.+}}, %{{.+}} : tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
# CHECK:         %[[FLAT:.+]] = fxla.reshape %[[FRONT]] {shape = [24, 5]}
# CHECK:         %[[PICKED:.+]] = fxla.index_select %[[FLAT]], %[[LINEAR]] {dim = 0} : tensor<24x5xf32>, tensor<3xi64> -> tensor<3x5xf32>
# CHECK:         %[[J_CODE:.+]] = fxla.where %[[J_OK]], %{{.+}}, %{{.+}} : tensor<i1>, tensor<i32>, tensor<i32> -> tensor<i32>
# CHECK:         %[[CODE:.+]] = fxla.where %[[I_OK]], %[[J_CODE]], %{{.+}} : tensor<i1>, tensor<i32>, tensor<i32> -> tensor<i32>
# CHECK:         return %[[PICKED]], %[[CODE]] : tensor<3x5xf32>, tensor<i32>
@case(operator.getitem, t(4, 5, 6), t(3, dtype=I64), t(3, dtype=I64), variant="tensor indices apart")
def getitem_tensor_indices_apart(x, i, j):
    return x[i, :, j]


def idx(*shape, high):
    return torch.randint(0, high, shape)


# CHECK-LABEL: case torch.scatter (multiply):
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x3xf32>, %[[I:.+]]: tensor<2x3xi64>, %[[S:.+]]: tensor<2x3xf32>)
# CHECK:         %[[SCATTER:.+]] = fxla.scatter %[[X]], %[[I]], %[[S]] {dim = 0, reduce = "multiply"} : tensor<4x3xf32>, tensor<2x3xi64>, tensor<2x3xf32> -> tensor<4x3xf32>
@case(torch.scatter, t(4, 3), idx(2, 3, high=4), t(2, 3), variant="multiply")
def scatter_multiply(x, i, s):
    return torch.scatter(x, 0, i, s, reduce="multiply")
