# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla: scatter_reduce (every reduce, include_self both ways), scatter(reduce='multiply'), index_add and
# index_copy -- one case per op object of fxla.lowering.RULES; the checks show the fxla.scatter reduce mode,
# include_self=False resetting the touched positions to the identity, mean's count scatter and the whole-slice
# index of index_add / index_copy.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
from fxla.testing import case, t

I64 = torch.int64


def idx(*shape, high):
    return torch.randint(0, high, shape)


# CHECK-LABEL: case torch.scatter_reduce:
# CHECK:         func.func @main(%[[X:.+]]: tensor<5x3xf32>, %[[I:.+]]: tensor<4x3xi64>, %[[S:.+]]: tensor<4x3xf32>)
# CHECK:         %[[SCATTER:.+]] = "fxla.scatter"(%[[X]], %[[I]], %[[S]]) {dim = 0 : i64, reduce = "amax"} : (tensor<5x3xf32>, tensor<4x3xi64>, tensor<4x3xf32>) -> tensor<5x3xf32>
@case(torch.scatter_reduce, t(5, 3), idx(4, 3, high=5), t(4, 3))
def scatter_reduce_amax(x, i, s):
    return torch.scatter_reduce(x, 0, i, s, "amax")


# CHECK-LABEL: case torch.scatter_reduce (prod, include_self=False):
# CHECK:         func.func @main(%[[X:.+]]: tensor<5x3xf32>, %[[I:.+]]: tensor<4x3xi64>, %[[S:.+]]: tensor<4x3xf32>)
# CHECK:         %[[NONE:.+]] = "fxla.expand"(%{{.+}}) {shape = array<i64: 5, 3>} : (tensor<i1>) -> tensor<5x3xi1>
# CHECK:         %[[MARKS:.+]] = "fxla.expand"(%{{.+}}) {shape = array<i64: 4, 3>} : (tensor<i1>) -> tensor<4x3xi1>
# CHECK:         %[[TOUCHED:.+]] = "fxla.scatter"(%[[NONE]], %[[I]], %[[MARKS]]) {dim = 0 : i64, reduce = "none"} : (tensor<5x3xi1>, tensor<4x3xi64>, tensor<4x3xi1>) -> tensor<5x3xi1>
# CHECK:         %[[ONE:.+]] = "fxla.convert"(%{{.+}}) : (tensor<i64>) -> tensor<f32>
# CHECK:         %[[START:.+]] = "fxla.where"(%[[TOUCHED]], %[[ONE]], %[[X]]) : (tensor<5x3xi1>, tensor<f32>, tensor<5x3xf32>) -> tensor<5x3xf32>
# CHECK:         %[[SCATTER:.+]] = "fxla.scatter"(%[[START]], %[[I]], %[[S]]) {dim = 0 : i64, reduce = "multiply"} : (tensor<5x3xf32>, tensor<4x3xi64>, tensor<4x3xf32>) -> tensor<5x3xf32>
# CHECK:         return %[[SCATTER]] : tensor<5x3xf32>
@case(torch.scatter_reduce, t(5, 3), idx(4, 3, high=5), t(4, 3), variant="prod, include_self=False")
def scatter_reduce_prod_exclude_self(x, i, s):
    return torch.scatter_reduce(x, 0, i, s, "prod", include_self=False)


# CHECK-LABEL: case Tensor.scatter_reduce:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x5xi64>, %[[I:.+]]: tensor<3x2xi64>, %[[S:.+]]: tensor<3x2xi64>)
# CHECK:         %[[SCATTER:.+]] = "fxla.scatter"(%[[X]], %[[I]], %[[S]]) {dim = -1 : i64, reduce = "add"} : (tensor<3x5xi64>, tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x5xi64>
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[EXPAND:.+]] = "fxla.expand"(%[[CONSTANT]]) {shape = array<i64: 3, 2>} : (tensor<i64>) -> tensor<3x2xi64>
# CHECK:         %[[CONSTANT_2:.+]] = "fxla.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[EXPAND_2:.+]] = "fxla.expand"(%[[CONSTANT_2]]) {shape = array<i64: 3, 5>} : (tensor<i64>) -> tensor<3x5xi64>
# CHECK:         %[[SCATTER_2:.+]] = "fxla.scatter"(%[[EXPAND_2]], %[[I]], %[[EXPAND]]) {dim = -1 : i64, reduce = "add"} : (tensor<3x5xi64>, tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x5xi64>
# CHECK:         %[[FLOOR_DIVIDE:.+]] = "fxla.floor_divide"(%[[SCATTER]], %[[SCATTER_2]]) : (tensor<3x5xi64>, tensor<3x5xi64>) -> tensor<3x5xi64>
@case(torch.Tensor.scatter_reduce, t(3, 5, dtype=I64), idx(3, 2, high=5), t(3, 2, dtype=I64))
def tensor_scatter_reduce_mean(x, i, s):
    return x.scatter_reduce(-1, i, s, "mean")


# CHECK-LABEL: case torch.scatter (multiply):
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x3xf32>, %[[I:.+]]: tensor<2x3xi64>, %[[S:.+]]: tensor<2x3xf32>)
# CHECK:         %[[SCATTER:.+]] = "fxla.scatter"(%[[X]], %[[I]], %[[S]]) {dim = 0 : i64, reduce = "multiply"} : (tensor<4x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
@case(torch.scatter, t(4, 3), idx(2, 3, high=4), t(2, 3), variant="multiply")
def scatter_multiply(x, i, s):
    return torch.scatter(x, 0, i, s, reduce="multiply")


# CHECK-LABEL: case torch.index_add:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[I:.+]]: tensor<3xi64>, %[[S:.+]]: tensor<3x5xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[I]]) {shape = array<i64: 3, 1>} : (tensor<3xi64>) -> tensor<3x1xi64>
# CHECK:         %[[EXPAND:.+]] = "fxla.expand"(%[[RESHAPE]]) {shape = array<i64: 3, 5>} : (tensor<3x1xi64>) -> tensor<3x5xi64>
# CHECK:         %[[SCATTER:.+]] = "fxla.scatter"(%[[X]], %[[EXPAND]], %[[S]]) {dim = 0 : i64, reduce = "add"} : (tensor<4x5xf32>, tensor<3x5xi64>, tensor<3x5xf32>) -> tensor<4x5xf32>
@case(torch.index_add, t(4, 5), idx(3, high=4), t(3, 5))
def index_add(x, i, s):
    return torch.index_add(x, 0, i, s)


# CHECK-LABEL: case Tensor.index_add:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[I:.+]]: tensor<2xi64>, %[[S:.+]]: tensor<4x2xf32>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[MUL:.+]] = "fxla.mul"(%[[S]], %[[CONSTANT]]) : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[I]]) {shape = array<i64: 1, 2>} : (tensor<2xi64>) -> tensor<1x2xi64>
# CHECK:         %[[EXPAND:.+]] = "fxla.expand"(%[[RESHAPE]]) {shape = array<i64: 4, 2>} : (tensor<1x2xi64>) -> tensor<4x2xi64>
# CHECK:         %[[SCATTER:.+]] = "fxla.scatter"(%[[X]], %[[EXPAND]], %[[MUL]]) {dim = -1 : i64, reduce = "add"} : (tensor<4x5xf32>, tensor<4x2xi64>, tensor<4x2xf32>) -> tensor<4x5xf32>
@case(torch.Tensor.index_add, t(4, 5), idx(2, high=5), t(4, 2))
def tensor_index_add_alpha(x, i, s):
    return x.index_add(-1, i, s, alpha=2.0)


# CHECK-LABEL: case torch.index_copy:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[I:.+]]: tensor<2xi64>, %[[S:.+]]: tensor<2x5xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[I]]) {shape = array<i64: 2, 1>} : (tensor<2xi64>) -> tensor<2x1xi64>
# CHECK:         %[[EXPAND:.+]] = "fxla.expand"(%[[RESHAPE]]) {shape = array<i64: 2, 5>} : (tensor<2x1xi64>) -> tensor<2x5xi64>
# CHECK:         %[[SCATTER:.+]] = "fxla.scatter"(%[[X]], %[[EXPAND]], %[[S]]) {dim = 0 : i64, reduce = "none"} : (tensor<4x5xf32>, tensor<2x5xi64>, tensor<2x5xf32>) -> tensor<4x5xf32>
@case(torch.index_copy, t(4, 5), idx(2, high=4), t(2, 5))
def index_copy(x, i, s):
    return torch.index_copy(x, 0, i, s)


# CHECK-LABEL: case Tensor.index_copy:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>, %[[I:.+]]: tensor<3xi64>, %[[S:.+]]: tensor<4x3xi64>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[I]]) {shape = array<i64: 1, 3>} : (tensor<3xi64>) -> tensor<1x3xi64>
# CHECK:         %[[EXPAND:.+]] = "fxla.expand"(%[[RESHAPE]]) {shape = array<i64: 4, 3>} : (tensor<1x3xi64>) -> tensor<4x3xi64>
# CHECK:         %[[SCATTER:.+]] = "fxla.scatter"(%[[X]], %[[EXPAND]], %[[S]]) {dim = 1 : i64, reduce = "none"} : (tensor<4x5xi64>, tensor<4x3xi64>, tensor<4x3xi64>) -> tensor<4x5xi64>
@case(torch.Tensor.index_copy, t(4, 5, dtype=I64), idx(3, high=5), t(4, 3, dtype=I64))
def tensor_index_copy(x, i, s):
    return x.index_copy(1, i, s)
