# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `reduce` (lowering/rules/reduce.py): reductions, sort and top-k -- one case per op object
# of fxla.lowering.RULES; the checks show dims (negative ones kept as torch gives them), keepdim, correction and
# the result dtypes (bool for any/all, i64 indices, promoted integer sums).
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch

from fxla.testing import case, t

BF16, BOOL, F16, I32, I64 = torch.bfloat16, torch.bool, torch.float16, torch.int32, torch.int64


# CHECK-LABEL: case torch.sum:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xi32>)
# CHECK:         %[[SUM:.+]] = fxla.sum %[[X]] {dims = [0, -1], keepdim = false} : tensor<2x3x4xi32> -> tensor<3xi64>
@case(torch.sum, t(2, 3, 4, dtype=I32))
def sum_int_promotes(x):
    return torch.sum(x, dim=(0, -1))


# CHECK-LABEL: case Tensor.sum:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[SUM:.+]] = fxla.sum %[[X]] {dims = [-1], keepdim = true} : tensor<2x3x4xf32> -> tensor<2x3x1xf32>
@case(torch.Tensor.sum, t(2, 3, 4))
def tensor_sum_keepdim(x):
    return x.sum(-1, keepdim=True)


# CHECK-LABEL: case torch.mean:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[MEAN:.+]] = fxla.mean %[[X]] {dims = [], keepdim = false} : tensor<2x3x4xf32> -> tensor<f32>
@case(torch.mean, t(2, 3, 4))
def mean_all(x):
    return torch.mean(x)


# CHECK-LABEL: case Tensor.mean:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xbf16>)
# CHECK:         %[[MEAN:.+]] = fxla.mean %[[X]] {dims = [1, 2], keepdim = true} : tensor<2x3x4xbf16> -> tensor<2x1x1xbf16>
@case(torch.Tensor.mean, t(2, 3, 4, dtype=BF16))
def tensor_mean_dims(x):
    return x.mean(dim=[1, 2], keepdim=True)


# CHECK-LABEL: case torch.amax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[AMAX:.+]] = fxla.amax %[[X]] {dims = [-2], keepdim = false} : tensor<2x3x4xf32> -> tensor<2x4xf32>
@case(torch.amax, t(2, 3, 4))
def amax(x):
    return torch.amax(x, dim=-2)


# CHECK-LABEL: case Tensor.amax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xi64>)
# CHECK:         %[[AMAX:.+]] = fxla.amax %[[X]] {dims = [0, 1], keepdim = true} : tensor<2x3x4xi64> -> tensor<1x1x4xi64>
@case(torch.Tensor.amax, t(2, 3, 4, dtype=I64))
def tensor_amax(x):
    return x.amax((0, 1), keepdim=True)


# CHECK-LABEL: case torch.amin:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[AMIN:.+]] = fxla.amin %[[X]] {dims = [1], keepdim = false} : tensor<2x3x4xf32> -> tensor<2x4xf32>
@case(torch.amin, t(2, 3, 4))
def amin(x):
    return torch.amin(x, 1)


# CHECK-LABEL: case Tensor.amin:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[AMIN:.+]] = fxla.amin %[[X]] {dims = [-1], keepdim = true} : tensor<2x3x4xf32> -> tensor<2x3x1xf32>
@case(torch.Tensor.amin, t(2, 3, 4))
def tensor_amin(x):
    return x.amin(-1, True)


# max along a dim: the values are read at the indices (torch's gradient goes to that element alone)
# CHECK-LABEL: case torch.max:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ARGMAX:.+]] = fxla.argmax %[[X]] {dim = -1, keepdim = false} : tensor<3x4xf32> -> tensor<3xi64>
# CHECK:         %[[KEPT:.+]] = fxla.reshape %[[ARGMAX]] {shape = [3, 1]}
# CHECK:         %[[GATHER:.+]] = fxla.gather %[[X]], %[[KEPT]] {dim = -1} : tensor<3x4xf32>, tensor<3x1xi64> -> tensor<3x1xf32>
# CHECK:         %[[VALUES:.+]] = fxla.reshape %[[GATHER]] {shape = [3]}
# CHECK:         return %[[VALUES]], %[[ARGMAX]] : tensor<3xf32>, tensor<3xi64>
@case(torch.max, t(3, 4))
def max_dim_values_indices(x):
    return torch.max(x, -1)


# CHECK-LABEL: case Tensor.max:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[AMAX:.+]] = fxla.amax %[[X]] {dims = [], keepdim = false} : tensor<3x4xi64> -> tensor<i64>
@case(torch.Tensor.max, t(3, 4, dtype=I64))
def tensor_max_all(x):
    return x.max()


# CHECK-LABEL: case torch.min:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<4xf32>)
# CHECK:         %[[MINIMUM:.+]] = fxla.minimum %[[X]], %[[Y]] : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
@case(torch.min, t(3, 4), t(4))
def min_elementwise(x, y):
    return torch.min(x, y)


# CHECK-LABEL: case Tensor.min:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ARGMIN:.+]] = fxla.argmin %[[X]] {dim = 0, keepdim = true} : tensor<3x4xf32> -> tensor<1x4xi64>
# CHECK:         %[[VALUES:.+]] = fxla.gather %[[X]], %[[ARGMIN]] {dim = 0} : tensor<3x4xf32>, tensor<1x4xi64> -> tensor<1x4xf32>
# CHECK:         return %[[VALUES]], %[[ARGMIN]] : tensor<1x4xf32>, tensor<1x4xi64>
@case(torch.Tensor.min, t(3, 4))
def tensor_min_keepdim(x):
    return x.min(0, keepdim=True)


# CHECK-LABEL: case torch.argmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ARGMAX:.+]] = fxla.argmax %[[X]] {dim = 1, keepdim = false} : tensor<3x4xf32> -> tensor<3xi64>
@case(torch.argmax, t(3, 4))
def argmax(x):
    return torch.argmax(x, dim=1)


# CHECK-LABEL: case Tensor.argmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi32>)
# CHECK:         %[[ARGMAX:.+]] = fxla.argmax %[[X]] {keepdim = false} : tensor<3x4xi32> -> tensor<i64>
@case(torch.Tensor.argmax, t(3, 4, dtype=I32))
def tensor_argmax_flat(x):
    return x.argmax()


# CHECK-LABEL: case torch.argmin:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ARGMIN:.+]] = fxla.argmin %[[X]] {dim = -1, keepdim = true} : tensor<3x4xf32> -> tensor<3x1xi64>
@case(torch.argmin, t(3, 4))
def argmin_keepdim(x):
    return torch.argmin(x, -1, keepdim=True)


# CHECK-LABEL: case Tensor.argmin:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ARGMIN:.+]] = fxla.argmin %[[X]] {dim = 0, keepdim = false} : tensor<3x4xf32> -> tensor<4xi64>
@case(torch.Tensor.argmin, t(3, 4))
def tensor_argmin(x):
    return x.argmin(0)


# std: the root of the variance, taken of 1 where it is 0 and dropped there (torch's std_backward: no gradient
# where std is 0)
# CHECK-LABEL: case torch.std:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[VAR:.+]] = fxla.var %[[X]] {dims = [1], keepdim = false, correction = 1} : tensor<3x4xf32> -> tensor<3xf32>
# CHECK:         %[[ZERO:.+]] = fxla.eq %[[VAR]], %{{.+}} : tensor<3xf32>, tensor<f32> -> tensor<3xi1>
# CHECK:         %[[SQRT:.+]] = fxla.sqrt %{{.+}} : tensor<3xf32> -> tensor<3xf32>
# CHECK:         fxla.where %[[ZERO]], %{{.+}}, %[[SQRT]] : tensor<3xi1>, tensor<f32>, tensor<3xf32> -> tensor<3xf32>
@case(torch.std, t(3, 4))
def std(x):
    return torch.std(x, dim=1)


# CHECK-LABEL: case Tensor.std:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[VAR:.+]] = fxla.var %[[X]] {dims = [0], keepdim = true, correction = 0} : tensor<3x4xf32> -> tensor<1x4xf32>
# CHECK:         %[[SQRT:.+]] = fxla.sqrt %{{.+}} : tensor<1x4xf32> -> tensor<1x4xf32>
@case(torch.Tensor.std, t(3, 4))
def tensor_std_correction(x):
    return x.std(0, correction=0, keepdim=True)


# CHECK-LABEL: case torch.var:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[VAR:.+]] = fxla.var %[[X]] {dims = [-1], keepdim = false, correction = 0} : tensor<3x4xf32> -> tensor<3xf32>
@case(torch.var, t(3, 4))
def var_unbiased_false(x):
    return torch.var(x, -1, unbiased=False)


# CHECK-LABEL: case Tensor.var:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf16>)
# CHECK:         %[[VAR:.+]] = fxla.var %[[X]] {dims = [], keepdim = false, correction = 1} : tensor<3x4xf16> -> tensor<f16>
@case(torch.Tensor.var, t(3, 4, dtype=F16))
def tensor_var(x):
    return x.var()


# CHECK-LABEL: case torch.any:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ANY:.+]] = fxla.any %[[X]] {dims = [-1], keepdim = false} : tensor<3x4xf32> -> tensor<3xi1>
@case(torch.any, t(3, 4))
def any_dim(x):
    return torch.any(x, dim=-1)


# CHECK-LABEL: case Tensor.any:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi1>)
# CHECK:         %[[ANY:.+]] = fxla.any %[[X]] {dims = [], keepdim = false} : tensor<3x4xi1> -> tensor<i1>
@case(torch.Tensor.any, t(3, 4, dtype=BOOL))
def tensor_any(x):
    return x.any()


# CHECK-LABEL: case torch.all:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[ALL:.+]] = fxla.all %[[X]] {dims = [0], keepdim = false} : tensor<3x4xi64> -> tensor<4xi1>
@case(torch.all, t(3, 4, dtype=I64))
def all_dim(x):
    return torch.all(x, 0)


# CHECK-LABEL: case Tensor.all:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi1>)
# CHECK:         %[[ALL:.+]] = fxla.all %[[X]] {dims = [1], keepdim = true} : tensor<3x4xi1> -> tensor<3x1xi1>
@case(torch.Tensor.all, t(3, 4, dtype=BOOL))
def tensor_all_keepdim(x):
    return x.all(1, keepdim=True)


# CHECK-LABEL: case torch.prod:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi32>)
# CHECK:         %[[PROD:.+]] = fxla.prod %[[X]] {dims = [1], keepdim = false} : tensor<3x4xi32> -> tensor<3xi64>
@case(torch.prod, t(3, 4, dtype=I32))
def prod_int_promotes(x):
    return torch.prod(x, 1)


# CHECK-LABEL: case Tensor.prod:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[PROD:.+]] = fxla.prod %[[X]] {dims = [], keepdim = false} : tensor<3x4xf32> -> tensor<f32>
@case(torch.Tensor.prod, t(3, 4))
def tensor_prod(x):
    return x.prod()


# CHECK-LABEL: case torch.logsumexp:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LOGSUMEXP:.+]] = fxla.logsumexp %[[X]] {dims = [-1], keepdim = false} : tensor<3x4xf32> -> tensor<3xf32>
@case(torch.logsumexp, t(3, 4))
def logsumexp(x):
    return torch.logsumexp(x, dim=-1)


# CHECK-LABEL: case Tensor.logsumexp:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[LOGSUMEXP:.+]] = fxla.logsumexp %[[X]] {dims = [0, 1], keepdim = true} : tensor<3x4xf32> -> tensor<1x1xf32>
@case(torch.Tensor.logsumexp, t(3, 4))
def tensor_logsumexp_keepdim(x):
    return x.logsumexp((0, 1), keepdim=True)


# CHECK-LABEL: case torch.sort:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SORT:.+]]:2 = fxla.sort %[[X]] {dim = 0, descending = true} : tensor<3x4xf32> -> (tensor<3x4xf32>, tensor<3x4xi64>)
# CHECK:         return %[[SORT]]#0, %[[SORT]]#1 : tensor<3x4xf32>, tensor<3x4xi64>
@case(torch.sort, t(3, 4))
def sort(x):
    return torch.sort(x, dim=0, descending=True)


# CHECK-LABEL: case Tensor.sort:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[SORT:.+]]:2 = fxla.sort %[[X]] {dim = -1, descending = false} : tensor<3x4xi64> -> (tensor<3x4xi64>, tensor<3x4xi64>)
# CHECK:         return %[[SORT]]#0, %[[SORT]]#1 : tensor<3x4xi64>, tensor<3x4xi64>
@case(torch.Tensor.sort, t(3, 4, dtype=I64))
def tensor_sort(x):
    return x.sort()


# CHECK-LABEL: case torch.argsort:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SORT:.+]]:2 = fxla.sort %[[X]] {dim = -1, descending = true} : tensor<3x4xf32> -> (tensor<3x4xf32>, tensor<3x4xi64>)
# CHECK:         return %[[SORT]]#1 : tensor<3x4xi64>
@case(torch.argsort, t(3, 4))
def argsort(x):
    return torch.argsort(x, dim=-1, descending=True)


# CHECK-LABEL: case Tensor.argsort:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SORT:.+]]:2 = fxla.sort %[[X]] {dim = 0, descending = false} : tensor<3x4xf32> -> (tensor<3x4xf32>, tensor<3x4xi64>)
# CHECK:         return %[[SORT]]#1 : tensor<3x4xi64>
@case(torch.Tensor.argsort, t(3, 4))
def tensor_argsort(x):
    return x.argsort(0)


# CHECK-LABEL: case torch.topk:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x8xf32>)
# CHECK:         %[[TOPK:.+]]:2 = fxla.topk %[[X]] {k = 3, dim = -1, largest = true} : tensor<3x8xf32> -> (tensor<3x3xf32>, tensor<3x3xi64>)
# CHECK:         return %[[TOPK]]#0, %[[TOPK]]#1 : tensor<3x3xf32>, tensor<3x3xi64>
@case(torch.topk, t(3, 8))
def topk(x):
    return torch.topk(x, 3)


# CHECK-LABEL: case Tensor.topk:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x8xf32>)
# CHECK:         %[[TOPK:.+]]:2 = fxla.topk %[[X]] {k = 2, dim = 0, largest = false} : tensor<3x8xf32> -> (tensor<2x8xf32>, tensor<2x8xi64>)
# CHECK:         return %[[TOPK]]#0, %[[TOPK]]#1 : tensor<2x8xf32>, tensor<2x8xi64>
@case(torch.Tensor.topk, t(3, 8))
def tensor_topk_smallest(x):
    return x.topk(2, dim=0, largest=False)
