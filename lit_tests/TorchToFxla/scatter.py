# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `scatter` (lowering/rules/scatter.py): scatter_reduce (every reduce, include_self both
# ways), index_add, index_copy, masked_scatter and x[idx] = value -- one case per op object of
# fxla.lowering.RULES; the checks show the fxla.scatter reduce mode, include_self=False resetting the touched
# positions to the identity, mean's count scatter and the whole-slice index of index_add / index_copy.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch

from fxla.frontend.passes.functionalize import setitem as functional_setitem
from fxla.testing import case, t

BOOL, I64 = torch.bool, torch.int64


# x[i] = v is functionalized first (fxla.frontend.passes.functionalize): a box of ints and slices is the
# value padded into place and selected by a padded mask; the mutated tensor's later uses read the result.
# CHECK-LABEL: case fxla.frontend.passes.functionalize.setitem:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[V:.+]]: tensor<2x3xf32>)
# CHECK:         %[[MASK:.+]] = fxla.pad %{{.+}} {low = [1, 2], high = [1, 0], value = 0.000000e+00} : tensor<2x3xi1> -> tensor<4x5xi1>
# CHECK:         %[[PADDED:.+]] = fxla.pad %[[V]] {low = [1, 2], high = [1, 0], value = 0.000000e+00} : tensor<2x3xf32> -> tensor<4x5xf32>
# CHECK:         %[[WHERE:.+]] = fxla.where %[[MASK]], %[[PADDED]], %[[X]] : tensor<4x5xi1>, tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
# CHECK:         return %[[WHERE]] : tensor<4x5xf32>
@case(functional_setitem, t(4, 5), t(2, 3))
def setitem_box(x, v):
    y = x.clone()
    y[1:3, 2:] = v
    return y


# One integer index tensor: a scatter of whole rows.
# CHECK-LABEL: case fxla.frontend.passes.functionalize.setitem (index tensor):
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[I:.+]]: tensor<2xi64>)
# CHECK:         %[[LT:.+]] = fxla.lt %[[I]], %{{.+}} : tensor<2xi64>, tensor<i64> -> tensor<2xi1>
# CHECK:         %[[VALUE:.+]] = fxla.expand %{{.+}} {shape = [2, 5]} : tensor<f32> -> tensor<2x5xf32>
# CHECK:         %[[SCATTER:.+]] = fxla.scatter %[[X]], %{{.+}}, %[[VALUE]] {dim = 0, reduce = "none"} : tensor<4x5xf32>, tensor<2x5xi64>, tensor<2x5xf32> -> tensor<4x5xf32>
# CHECK:         return %[[SCATTER]] : tensor<4x5xf32>
@case(functional_setitem, t(4, 5), t(2, dtype=I64), variant="index tensor")
def setitem_index(x, i):
    y = x.clone()
    y[i] = 0.5
    return y


# A bool mask with a scalar value: a select.
# CHECK-LABEL: case fxla.frontend.passes.functionalize.setitem (mask):
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[MUL:.+]] = fxla.mul %[[X]], %{{.+}} : tensor<4x5xf32>, tensor<f32> -> tensor<4x5xf32>
# CHECK:         %[[GT:.+]] = fxla.gt %[[X]], %{{.+}} : tensor<4x5xf32>, tensor<f32> -> tensor<4x5xi1>
# CHECK:         %[[WHERE:.+]] = fxla.where %{{.+}}, %{{.+}}, %[[MUL]] : tensor<4x5xi1>, tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
# CHECK:         fxla.add %[[WHERE]], %[[WHERE]] : tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
@case(functional_setitem, t(4, 5), variant="mask")
def setitem_mask(x):
    y = x * 2
    y[x > 0] = 0
    return y + y


# A bool mask with one value per selected position (LLaVA's embeds[image_mask] = features): the k-th selected
# position takes row k of the value, k = cumsum(mask) - 1 clamped into range, gathered with index_select and
# selected by the mask.
# CHECK-LABEL: case fxla.frontend.passes.functionalize.setitem (mask, one value per position):
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>, %[[M:.+]]: tensor<2x3xi1>, %[[V:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ORDER:.+]] = fxla.cumsum %{{.+}} {dim = 0} : tensor<6xi64> -> tensor<6xi64>
# CHECK:         %[[ROW:.+]] = fxla.clamp %{{.+}}, min %{{.+}}, max %{{.+}} : tensor<6xi64>, tensor<i64>, tensor<i64> -> tensor<6xi64>
# CHECK:         %[[ROWS:.+]] = fxla.index_select %[[V]], %[[ROW]] {dim = 0} : tensor<3x4xf32>, tensor<6xi64> -> tensor<6x4xf32>
# CHECK:         %[[WHERE:.+]] = fxla.where %{{.+}}, %{{.+}}, %[[X]] : tensor<2x3x4xi1>, tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
@case(functional_setitem, t(2, 3, 4), t(2, 3, dtype=BOOL), t(3, 4), variant="mask, one value per position")
def setitem_mask_rows(x, m, v):
    y = x.clone()
    y[m] = v
    return y


# masked_scatter: the source's elements in order over the (broadcast) mask.  That the source holds enough of
# them is a value check (fxla.lowering.value_checks): the selected count <= 7, and the program's last result
# is the check code, 0 while it holds and 1 (its first check) where it does not.
# CHECK-LABEL: case torch.masked_scatter:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[M:.+]]: tensor<3xi1>, %[[S:.+]]: tensor<7xf32>) -> (tensor<2x3xf32>, tensor<i32>)
# CHECK:         %[[EXPAND:.+]] = fxla.expand %[[M]] {shape = [2, 3]} : tensor<3xi1> -> tensor<2x3xi1>
# CHECK:         %[[COUNT:.+]] = fxla.sum %[[EXPAND]] {dims = [], keepdim = false} : tensor<2x3xi1> -> tensor<i64>
# CHECK:         %[[SEVEN:.+]] = fxla.constant {value = dense<7> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[OK:.+]] = fxla.le %[[COUNT]], %[[SEVEN]] : tensor<i64>, tensor<i64> -> tensor<i1>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[EXPAND]] {shape = [6]} : tensor<2x3xi1> -> tensor<6xi1>
# CHECK:         %[[WHERE:.+]] = fxla.where %[[EXPAND]], %{{.+}}, %[[X]] : tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
# CHECK:         %[[HELD:.+]] = fxla.constant {value = dense<0> : tensor<i32>} : () -> tensor<i32>
# CHECK:         %[[FIRST:.+]] = fxla.constant {value = dense<1> : tensor<i32>} : () -> tensor<i32>
# CHECK:         %[[CODE:.+]] = fxla.where %[[OK]], %[[HELD]], %[[FIRST]] : tensor<i1>, tensor<i32>, tensor<i32> -> tensor<i32>
# CHECK:         return %[[WHERE]], %[[CODE]] : tensor<2x3xf32>, tensor<i32>
@case(torch.masked_scatter, t(2, 3), t(3, dtype=BOOL), t(7))
def masked_scatter_broadcast(x, m, s):
    return torch.masked_scatter(x, m, s)


# CHECK-LABEL: case Tensor.masked_scatter:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4xi64>, %[[M:.+]]: tensor<4xi1>, %[[S:.+]]: tensor<2x2xi64>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[S]] {shape = [4]} : tensor<2x2xi64> -> tensor<4xi64>
# CHECK:         %[[PICKED:.+]] = fxla.index_select %[[RESHAPE]], %{{.+}} {dim = 0} : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
# CHECK:         %[[WHERE:.+]] = fxla.where %[[M]], %{{.+}}, %[[X]] : tensor<4xi1>, tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
# CHECK:         %[[CODE:.+]] = fxla.where %{{.+}}, %{{.+}}, %{{.+}} : tensor<i1>, tensor<i32>, tensor<i32> -> tensor<i32>
# CHECK:         return %[[WHERE]], %[[CODE]] : tensor<4xi64>, tensor<i32>
@case(torch.Tensor.masked_scatter, t(4, dtype=I64), t(4, dtype=BOOL), t(2, 2, dtype=I64))
def tensor_masked_scatter(x, m, s):
    return x.masked_scatter(m, s)


# A strided slice: the value and the mask are spread out first (reshape, pad the new dim, reshape, crop), then
# padded into place.
# CHECK-LABEL: case fxla.frontend.passes.functionalize.setitem (strided):
# CHECK:         func.func @main(%[[X:.+]]: tensor<7xf32>, %[[V:.+]]: tensor<2xf32>)
# CHECK:         %[[COL:.+]] = fxla.reshape %[[V]] {shape = [2, 1]} : tensor<2xf32> -> tensor<2x1xf32>
# CHECK:         %[[ROWS:.+]] = fxla.pad %[[COL]] {low = [0, 0], high = [0, 2], value = 0.000000e+00} : tensor<2x1xf32> -> tensor<2x3xf32>
# CHECK:         %[[SPREAD:.+]] = fxla.pad %{{.+}} {low = [0], high = [-2], value = 0.000000e+00} : tensor<6xf32> -> tensor<4xf32>
# CHECK:         fxla.pad %[[SPREAD]] {low = [1], high = [2], value = 0.000000e+00} : tensor<4xf32> -> tensor<7xf32>
@case(functional_setitem, t(7), t(2), variant="strided")
def setitem_strided(x, v):
    y = x.clone()
    y[1::3] = v
    return y


# Index tensors on adjacent dims: the dims are flattened and indexed by the linear index i * 5 + j (a scatter).
# CHECK-LABEL: case fxla.frontend.passes.functionalize.setitem (index tensors):
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x5xf32>, %[[I:.+]]: tensor<3xi64>, %[[J:.+]]: tensor<3xi64>)
# CHECK:         %[[ROW:.+]] = fxla.mul %{{.+}}, %{{.+}} : tensor<3xi64>, tensor<i64> -> tensor<3xi64>
# CHECK:         %[[LINEAR:.+]] = fxla.add %[[ROW]], %{{.+}} : tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
# CHECK:         %[[FLAT:.+]] = fxla.reshape %[[X]] {shape = [2, 20]} : tensor<2x4x5xf32> -> tensor<2x20xf32>
# CHECK-NOT:     fxla.lt %[[LINEAR]]
# CHECK:         %[[SCATTER:.+]] = fxla.scatter %[[FLAT]], %{{.+}}, %{{.+}} {dim = 1, reduce = "none"} : tensor<2x20xf32>, tensor<2x3xi64>, tensor<2x3xf32> -> tensor<2x20xf32>
# CHECK:         fxla.reshape %[[SCATTER]] {shape = [2, 4, 5]} : tensor<2x20xf32> -> tensor<2x4x5xf32>
@case(functional_setitem, t(2, 4, 5), t(3, dtype=I64), t(3, dtype=I64), variant="index tensors")
def setitem_index_tensors(x, i, j):
    y = x.clone()
    y[:, i, j] = 1.0
    return y


# Written on dims apart: the same front layout (the value is [3, 5]), then the dims moved back.
# CHECK-LABEL: case fxla.frontend.passes.functionalize.setitem (index tensors apart):
# CHECK:         %[[FRONT:.+]] = fxla.permute %{{.+}} {dims = [0, 2, 1]} : tensor<4x5x6xf32> -> tensor<4x6x5xf32>
# CHECK:         %[[FLAT:.+]] = fxla.reshape %[[FRONT]] {shape = [24, 5]}
# CHECK:         %[[SCATTER:.+]] = fxla.scatter %[[FLAT]], %{{.+}}, %{{.+}} {dim = 0, reduce = "none"} : tensor<24x5xf32>, tensor<3x5xi64>, tensor<3x5xf32> -> tensor<24x5xf32>
# CHECK:         %[[BACK:.+]] = fxla.reshape %[[SCATTER]] {shape = [4, 6, 5]}
# CHECK:         %[[OUT:.+]] = fxla.permute %[[BACK]] {dims = [0, 2, 1]} : tensor<4x6x5xf32> -> tensor<4x5x6xf32>
# CHECK:         return %[[OUT]]
@case(functional_setitem, t(4, 5, 6), t(3, dtype=I64), t(3, dtype=I64), variant="index tensors apart")
def setitem_index_tensors_apart(x, i, j):
    y = x.clone()
    y[i, :, j] = 1.0
    return y


# A bool mask over the rows with a row as the value: the value is the same at every selected position, so the
# write is a where over the mask broadcast along the row.
# CHECK-LABEL: case fxla.frontend.passes.functionalize.setitem (mask, row value):
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[ROW:.+]]: tensor<5xf32>)
# CHECK:         %[[MASK:.+]] = fxla.gt %{{.+}}, %{{.+}} : tensor<4xf32>, tensor<f32> -> tensor<4xi1>
# CHECK:         %[[R:.+]] = fxla.reshape %[[ROW]] {shape = [1, 5]}
# CHECK:         %[[M:.+]] = fxla.reshape %[[MASK]] {shape = [4, 1]}
# CHECK:         %[[MS:.+]] = fxla.expand %[[M]] {shape = [4, 5]}
# CHECK:         %[[RS:.+]] = fxla.expand %[[R]] {shape = [4, 5]}
# CHECK:         fxla.where %[[MS]], %[[RS]], %[[X]] : tensor<4x5xi1>, tensor<4x5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
@case(functional_setitem, t(4, 5), t(5), variant="mask, row value")
def setitem_mask_row(x, row):
    y = x.clone()
    y[x[:, 0] > 0] = row
    return y


def idx(*shape, high):
    return torch.randint(0, high, shape)


# CHECK-LABEL: case torch.scatter_reduce:
# CHECK:         func.func @main(%[[X:.+]]: tensor<5x3xf32>, %[[I:.+]]: tensor<4x3xi64>, %[[S:.+]]: tensor<4x3xf32>)
# CHECK:         %[[SCATTER:.+]] = fxla.scatter %[[X]], %[[I]], %[[S]] {dim = 0, reduce = "amax"} : tensor<5x3xf32>, tensor<4x3xi64>, tensor<4x3xf32> -> tensor<5x3xf32>
@case(torch.scatter_reduce, t(5, 3), idx(4, 3, high=5), t(4, 3))
def scatter_reduce_amax(x, i, s):
    return torch.scatter_reduce(x, 0, i, s, "amax")


# CHECK-LABEL: case torch.scatter_reduce (prod, include_self=False):
# CHECK:         func.func @main(%[[X:.+]]: tensor<5x3xf32>, %[[I:.+]]: tensor<4x3xi64>, %[[S:.+]]: tensor<4x3xf32>)
# CHECK:         %[[NONE:.+]] = fxla.expand %{{.+}} {shape = [5, 3]} : tensor<i1> -> tensor<5x3xi1>
# CHECK:         %[[MARKS:.+]] = fxla.expand %{{.+}} {shape = [4, 3]} : tensor<i1> -> tensor<4x3xi1>
# CHECK:         %[[TOUCHED:.+]] = fxla.scatter %[[NONE]], %[[I]], %[[MARKS]] {dim = 0, reduce = "none"} : tensor<5x3xi1>, tensor<4x3xi64>, tensor<4x3xi1> -> tensor<5x3xi1>
# CHECK:         %[[ONE:.+]] = fxla.convert %{{.+}} : tensor<i64> -> tensor<f32>
# CHECK:         %[[START:.+]] = fxla.where %[[TOUCHED]], %[[ONE]], %[[X]] : tensor<5x3xi1>, tensor<f32>, tensor<5x3xf32> -> tensor<5x3xf32>
# CHECK:         %[[SCATTER:.+]] = fxla.scatter %[[START]], %[[I]], %[[S]] {dim = 0, reduce = "multiply"} : tensor<5x3xf32>, tensor<4x3xi64>, tensor<4x3xf32> -> tensor<5x3xf32>
# CHECK:         return %[[SCATTER]] : tensor<5x3xf32>
@case(torch.scatter_reduce, t(5, 3), idx(4, 3, high=5), t(4, 3), variant="prod, include_self=False")
def scatter_reduce_prod_exclude_self(x, i, s):
    return torch.scatter_reduce(x, 0, i, s, "prod", include_self=False)


# CHECK-LABEL: case Tensor.scatter_reduce:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x5xi64>, %[[I:.+]]: tensor<3x2xi64>, %[[S:.+]]: tensor<3x2xi64>)
# CHECK:         %[[SCATTER:.+]] = fxla.scatter %[[X]], %[[I]], %[[S]] {dim = -1, reduce = "add"} : tensor<3x5xi64>, tensor<3x2xi64>, tensor<3x2xi64> -> tensor<3x5xi64>
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<1> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[EXPAND:.+]] = fxla.expand %[[CONSTANT]] {shape = [3, 2]} : tensor<i64> -> tensor<3x2xi64>
# CHECK:         %[[CONSTANT_2:.+]] = fxla.constant {value = dense<1> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[EXPAND_2:.+]] = fxla.expand %[[CONSTANT_2]] {shape = [3, 5]} : tensor<i64> -> tensor<3x5xi64>
# CHECK:         %[[SCATTER_2:.+]] = fxla.scatter %[[EXPAND_2]], %[[I]], %[[EXPAND]] {dim = -1, reduce = "add"} : tensor<3x5xi64>, tensor<3x2xi64>, tensor<3x2xi64> -> tensor<3x5xi64>
# CHECK:         %[[FLOOR_DIVIDE:.+]] = fxla.floor_divide %[[SCATTER]], %[[SCATTER_2]] : tensor<3x5xi64>, tensor<3x5xi64> -> tensor<3x5xi64>
@case(torch.Tensor.scatter_reduce, t(3, 5, dtype=I64), idx(3, 2, high=5), t(3, 2, dtype=I64))
def tensor_scatter_reduce_mean(x, i, s):
    return x.scatter_reduce(-1, i, s, "mean")


# CHECK-LABEL: case torch.index_add:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[I:.+]]: tensor<3xi64>, %[[S:.+]]: tensor<3x5xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[I]] {shape = [3, 1]} : tensor<3xi64> -> tensor<3x1xi64>
# CHECK:         %[[EXPAND:.+]] = fxla.expand %[[RESHAPE]] {shape = [3, 5]} : tensor<3x1xi64> -> tensor<3x5xi64>
# CHECK:         %[[SCATTER:.+]] = fxla.scatter %[[X]], %[[EXPAND]], %[[S]] {dim = 0, reduce = "add"} : tensor<4x5xf32>, tensor<3x5xi64>, tensor<3x5xf32> -> tensor<4x5xf32>
@case(torch.index_add, t(4, 5), idx(3, high=4), t(3, 5))
def index_add(x, i, s):
    return torch.index_add(x, 0, i, s)


# CHECK-LABEL: case Tensor.index_add:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[I:.+]]: tensor<2xi64>, %[[S:.+]]: tensor<4x2xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[MUL:.+]] = fxla.mul %[[S]], %[[CONSTANT]] : tensor<4x2xf32>, tensor<f32> -> tensor<4x2xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[I]] {shape = [1, 2]} : tensor<2xi64> -> tensor<1x2xi64>
# CHECK:         %[[EXPAND:.+]] = fxla.expand %[[RESHAPE]] {shape = [4, 2]} : tensor<1x2xi64> -> tensor<4x2xi64>
# CHECK:         %[[SCATTER:.+]] = fxla.scatter %[[X]], %[[EXPAND]], %[[MUL]] {dim = -1, reduce = "add"} : tensor<4x5xf32>, tensor<4x2xi64>, tensor<4x2xf32> -> tensor<4x5xf32>
@case(torch.Tensor.index_add, t(4, 5), idx(2, high=5), t(4, 2))
def tensor_index_add_alpha(x, i, s):
    return x.index_add(-1, i, s, alpha=2.0)


# CHECK-LABEL: case torch.index_copy:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[I:.+]]: tensor<2xi64>, %[[S:.+]]: tensor<2x5xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[I]] {shape = [2, 1]} : tensor<2xi64> -> tensor<2x1xi64>
# CHECK:         %[[EXPAND:.+]] = fxla.expand %[[RESHAPE]] {shape = [2, 5]} : tensor<2x1xi64> -> tensor<2x5xi64>
# CHECK:         %[[SCATTER:.+]] = fxla.scatter %[[X]], %[[EXPAND]], %[[S]] {dim = 0, reduce = "none"} : tensor<4x5xf32>, tensor<2x5xi64>, tensor<2x5xf32> -> tensor<4x5xf32>
@case(torch.index_copy, t(4, 5), idx(2, high=4), t(2, 5))
def index_copy(x, i, s):
    return torch.index_copy(x, 0, i, s)


# CHECK-LABEL: case Tensor.index_copy:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>, %[[I:.+]]: tensor<3xi64>, %[[S:.+]]: tensor<4x3xi64>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[I]] {shape = [1, 3]} : tensor<3xi64> -> tensor<1x3xi64>
# CHECK:         %[[EXPAND:.+]] = fxla.expand %[[RESHAPE]] {shape = [4, 3]} : tensor<1x3xi64> -> tensor<4x3xi64>
# CHECK:         %[[SCATTER:.+]] = fxla.scatter %[[X]], %[[EXPAND]], %[[S]] {dim = 1, reduce = "none"} : tensor<4x5xi64>, tensor<4x3xi64>, tensor<4x3xi64> -> tensor<4x5xi64>
@case(torch.Tensor.index_copy, t(4, 5, dtype=I64), idx(3, high=5), t(4, 3, dtype=I64))
def tensor_index_copy(x, i, s):
    return x.index_copy(1, i, s)
