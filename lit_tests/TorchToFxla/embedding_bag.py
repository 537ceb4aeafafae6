# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `embedding_bag` (lowering/rules/embedding_bag.py): F.embedding_bag and nn.EmbeddingBag --
# a 2-D input is a lookup and one reduction; 1-D input with traced offsets computes bag ids from the data (a
# binary search over the offsets) and a segment sum by fxla.scatter into a trash-padded table.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
import torch.nn as nn
import torch.nn.functional as F

from fxla.testing import case, t

I64 = torch.int64


# CHECK-LABEL: case torch.nn.functional.embedding_bag:
# CHECK:         func.func @main(%[[I:.+]]: tensor<3x5xi64>, %[[W:.+]]: tensor<10x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[I]] {shape = [15]} : tensor<3x5xi64> -> tensor<15xi64>
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[W]], %[[RESHAPE]] {dim = 0} : tensor<10x4xf32>, tensor<15xi64> -> tensor<15x4xf32>
# CHECK:         %[[AMAX:.+]] = fxla.amax %{{.+}} {dims = [1], keepdim = false} : tensor<3x5x4xf32> -> tensor<3x4xf32>
# CHECK:         return %[[AMAX]] : tensor<3x4xf32>
@case(F.embedding_bag, t(3, 5, dtype=I64), t(10, 4))
def embedding_bag_2d_max(i, w):
    return F.embedding_bag(i, w, mode="max")


# CHECK-LABEL: case torch.nn.EmbeddingBag:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x5xi64>, %[[WEIGHT:.+]]: tensor<10x4xf32> {fxla.param = "mod.weight"})
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [15]} : tensor<3x5xi64> -> tensor<15xi64>
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[WEIGHT]], %[[RESHAPE]] {dim = 0} : tensor<10x4xf32>, tensor<15xi64> -> tensor<15x4xf32>
# CHECK:         %[[MEAN:.+]] = fxla.mean %{{.+}} {dims = [1], keepdim = false} : tensor<3x5x4xf32> -> tensor<3x4xf32>
# CHECK:         return %[[MEAN]] : tensor<3x4xf32>
@case(nn.EmbeddingBag, t(3, 5, dtype=I64))
def embedding_bag_module_mean():
    return nn.EmbeddingBag(10, 4)


# CHECK-LABEL: case torch.nn.functional.embedding_bag (offsets):
# CHECK:         func.func @main(%[[I:.+]]: tensor<5xi64>, %[[W:.+]]: tensor<8x3xf32>, %[[O:.+]]: tensor<3xi64>)
# CHECK:         %[[J:.+]] = fxla.arange {start = 0.000000e+00, step = 1.000000e+00, length = 5} : () -> tensor<5xi64>
# Binary search for count(offsets <= j): steps of 2, then 1 (3 offsets), each probing offsets[pos + step - 1].
# CHECK:         %[[CAND:.+]] = fxla.add %[[POS0:.+]], %{{.+}} : tensor<5xi64>, tensor<i64> -> tensor<5xi64>
# CHECK:         %[[PROBE:.+]] = fxla.index_select %[[O]], %{{.+}} {dim = 0} : tensor<3xi64>, tensor<5xi64> -> tensor<5xi64>
# CHECK:         %[[BELOW:.+]] = fxla.le %[[PROBE]], %[[J]] : tensor<5xi64>, tensor<5xi64> -> tensor<5xi1>
# CHECK:         %[[TAKE:.+]] = fxla.logical_and %{{.+}}, %[[BELOW]]
# CHECK:         %[[POS1:.+]] = fxla.where %[[TAKE]], %[[CAND]], %[[POS0]] : tensor<5xi1>, tensor<5xi64>, tensor<5xi64> -> tensor<5xi64>
# CHECK:         fxla.index_select %[[O]], %{{.+}} {dim = 0} : tensor<3xi64>, tensor<5xi64> -> tensor<5xi64>
# CHECK:         %[[POS2:.+]] = fxla.where %{{.+}}, %{{.+}}, %[[POS1]] : tensor<5xi1>, tensor<5xi64>, tensor<5xi64> -> tensor<5xi64>
# CHECK-NOT:     fxla.index_select %[[O]]
# CHECK:         %[[BAG:.+]] = fxla.sub %[[POS2]], %{{.+}} : tensor<5xi64>, tensor<i64> -> tensor<5xi64>
# CHECK:         %[[OUTSIDE:.+]] = fxla.logical_or
# CHECK:         %[[TRASH:.+]] = fxla.constant {value = dense<3> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[IDS:.+]] = fxla.where %[[OUTSIDE]], %[[TRASH]], %[[BAG]] : tensor<5xi1>, tensor<i64>, tensor<5xi64> -> tensor<5xi64>
# CHECK:         %[[ROWS:.+]] = fxla.index_select %[[W]], %[[I]] {dim = 0} : tensor<8x3xf32>, tensor<5xi64> -> tensor<5x3xf32>
# CHECK:         %[[IDCOL:.+]] = fxla.reshape %[[IDS]] {shape = [5, 1]} : tensor<5xi64> -> tensor<5x1xi64>
# CHECK:         %[[INDEX:.+]] = fxla.expand %[[IDCOL]] {shape = [5, 3]} : tensor<5x1xi64> -> tensor<5x3xi64>
# CHECK:         %[[ZEROS:.+]] = fxla.expand %{{.+}} {shape = [4, 3]} : tensor<f32> -> tensor<4x3xf32>
# CHECK:         %[[SUMS:.+]] = fxla.scatter %[[ZEROS]], %[[INDEX]], %[[ROWS]] {dim = 0, reduce = "add"} : tensor<4x3xf32>, tensor<5x3xi64>, tensor<5x3xf32> -> tensor<4x3xf32>
# CHECK:         %[[BAGS:.+]] = fxla.slice %[[SUMS]] {start = [0, 0], limit = [3, 3], stride = [1, 1]} : tensor<4x3xf32> -> tensor<3x3xf32>
# CHECK:         return %[[BAGS]] : tensor<3x3xf32>
@case(F.embedding_bag, torch.tensor([1, 4, 2, 7, 0]), t(8, 3), torch.tensor([0, 2, 2]), variant="offsets")
def embedding_bag_offsets(i, w, o):
    return F.embedding_bag(i, w, o, mode="sum")
