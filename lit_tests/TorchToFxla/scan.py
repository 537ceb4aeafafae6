# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `scan` (lowering/rules/scan.py): cumsum/cumprod (with dtype=), cummax/cummin (values and
# i64 indices, torch's named tuples) and logcumsumexp -- one case per op object of fxla.lowering.RULES; the checks
# show the dim (negative ones kept as torch gives them), the i64 result of integer scans and a dtype= conversion.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch

from fxla.testing import case, t

BF16, I32 = torch.bfloat16, torch.int32


# CHECK-LABEL: case torch.cumprod:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi32>)
# CHECK:         %[[CUMPROD:.+]] = fxla.cumprod %[[X]] {dim = -1} : tensor<3x4xi32> -> tensor<3x4xi64>
@case(torch.cumprod, t(3, 4, dtype=I32))
def cumprod_int_widens(x):
    return torch.cumprod(x, -1)


# CHECK-LABEL: case Tensor.cumprod:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[X]] : tensor<3x4xf32> -> tensor<3x4xf64>
# CHECK:         %[[CUMPROD:.+]] = fxla.cumprod %[[CONVERT]] {dim = 0} : tensor<3x4xf64> -> tensor<3x4xf64>
@case(torch.Tensor.cumprod, t(3, 4))
def tensor_cumprod_dtype(x):
    return x.cumprod(0, dtype=torch.float64)


# CHECK-LABEL: case torch.cummax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x5xf32>)
# CHECK:         %[[CUMMAX:.+]]:2 = fxla.cummax %[[X]] {dim = 1} : tensor<2x5xf32> -> (tensor<2x5xf32>, tensor<2x5xi64>)
# CHECK:         return %[[CUMMAX]]#0, %[[CUMMAX]]#1 : tensor<2x5xf32>, tensor<2x5xi64>
@case(torch.cummax, t(2, 5))
def cummax(x):
    return torch.cummax(x, 1)


# CHECK-LABEL: case Tensor.cummax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x5xbf16>)
# CHECK:         %[[CUMMAX:.+]]:2 = fxla.cummax %[[X]] {dim = -1} : tensor<2x5xbf16> -> (tensor<2x5xbf16>, tensor<2x5xi64>)
# CHECK:         return %[[CUMMAX]]#0 : tensor<2x5xbf16>
@case(torch.Tensor.cummax, t(2, 5, dtype=BF16))
def tensor_cummax_values(x):
    return x.cummax(-1).values


# CHECK-LABEL: case torch.cummin:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x3xi64>)
# CHECK:         %[[CUMMIN:.+]]:2 = fxla.cummin %[[X]] {dim = -2} : tensor<4x3xi64> -> (tensor<4x3xi64>, tensor<4x3xi64>)
# CHECK:         return %[[CUMMIN]]#0, %[[CUMMIN]]#1 : tensor<4x3xi64>, tensor<4x3xi64>
@case(torch.cummin, t(4, 3, dtype=torch.int64))
def cummin_int(x):
    return torch.cummin(x, -2)


# CHECK-LABEL: case Tensor.cummin:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x3xf32>)
# CHECK:         %[[CUMMIN:.+]]:2 = fxla.cummin %[[X]] {dim = 0} : tensor<4x3xf32> -> (tensor<4x3xf32>, tensor<4x3xi64>)
# CHECK:         return %[[CUMMIN]]#1 : tensor<4x3xi64>
@case(torch.Tensor.cummin, t(4, 3))
def tensor_cummin_indices(x):
    return x.cummin(0).indices


# CHECK-LABEL: case torch.logcumsumexp:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x6xf32>)
# CHECK:         %[[LOGCUMSUMEXP:.+]] = fxla.logcumsumexp %[[X]] {dim = -1} : tensor<2x6xf32> -> tensor<2x6xf32>
@case(torch.logcumsumexp, t(2, 6))
def logcumsumexp(x):
    return torch.logcumsumexp(x, -1)


# CHECK-LABEL: case Tensor.logcumsumexp:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x2xbf16>)
# CHECK:         %[[LOGCUMSUMEXP:.+]] = fxla.logcumsumexp %[[X]] {dim = 0} : tensor<3x2xbf16> -> tensor<3x2xbf16>
@case(torch.Tensor.logcumsumexp, t(3, 2, dtype=BF16))
def tensor_logcumsumexp(x):
    return x.logcumsumexp(0)


# CHECK-LABEL: case torch.cumsum:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CUMSUM:.+]] = fxla.cumsum %[[X]] {dim = -1} : tensor<3x4xf32> -> tensor<3x4xf32>
@case(torch.cumsum, t(3, 4))
def cumsum(x):
    return torch.cumsum(x, dim=-1)


# CHECK-LABEL: case Tensor.cumsum:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi32>)
# CHECK:         %[[CUMSUM:.+]] = fxla.cumsum %[[X]] {dim = 0} : tensor<3x4xi32> -> tensor<3x4xi64>
@case(torch.Tensor.cumsum, t(3, 4, dtype=I32))
def tensor_cumsum_int(x):
    return x.cumsum(0)
