# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla: the newer forms of ops lowered elsewhere -- F.interpolate bicubic (a constant [out, in] weight
# matrix per spatial dim, computed in f32) and area (adaptive average pooling), F.embedding_bag with 1-D input
# and traced offsets (bag ids from the data, a segment sum by fxla.scatter into a trash-padded table),
# torch.einsum with a repeated subscript (a diagonal: the two dims merged and sliced with stride n + 1), and
# nn.Conv2d with padding_mode="reflect" (F.pad in that mode, then an unpadded convolution).
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
import torch.nn.functional as F
from fxla.testing import case, t

BF16 = torch.bfloat16


# CHECK-LABEL: case torch.nn.functional.interpolate (bicubic):
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x4xbf16>)
# CHECK:         %[[CONVERT:.+]] = "fxla.convert"(%[[X]]) : (tensor<1x2x3x4xbf16>) -> tensor<1x2x3x4xf32>
# CHECK:         %[[M:.+]] = "fxla.constant"() {value = dense<{{.+}}> : tensor<4x6xf32>}
# CHECK:         %[[MATMUL:.+]] = "fxla.matmul"(%[[CONVERT]], %[[M]]) : (tensor<1x2x3x4xf32>, tensor<4x6xf32>) -> tensor<1x2x3x6xf32>
# CHECK:         %[[CONVERT_2:.+]] = "fxla.convert"(%[[MATMUL]]) : (tensor<1x2x3x6xf32>) -> tensor<1x2x3x6xbf16>
# CHECK:         return %[[CONVERT_2]] : tensor<1x2x3x6xbf16>
@case(F.interpolate, t(1, 2, 3, 4, dtype=BF16), variant="bicubic")
def interpolate_bicubic(x):
    return F.interpolate(x, size=(3, 6), mode="bicubic", align_corners=True)


# CHECK-LABEL: case torch.nn.functional.interpolate (area):
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x6x4xf32>)
# CHECK:         %[[AVG_POOL:.+]] = "fxla.avg_pool"(%[[X]]) {ceil_mode = false, count_include_pad = true, divisor_override = 0 : i64, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x2x6x4xf32>) -> tensor<1x2x3x2xf32>
@case(F.interpolate, t(1, 2, 6, 4), variant="area")
def interpolate_area(x):
    return F.interpolate(x, scale_factor=0.5, mode="area")


# CHECK-LABEL: case torch.nn.functional.embedding_bag (offsets):
# CHECK:         func.func @main(%[[I:.+]]: tensor<5xi64>, %[[W:.+]]: tensor<8x3xf32>, %[[O:.+]]: tensor<3xi64>)
# CHECK:         %[[J:.+]] = "fxla.arange"() {length = 5 : i64, start = 0.000000e+00 : f64, step = 1.000000e+00 : f64} : () -> tensor<5xi64>
# Binary search for count(offsets <= j): steps of 2, then 1 (3 offsets), each probing offsets[pos + step - 1].
# CHECK:         %[[CAND:.+]] = "fxla.add"(%[[POS0:.+]], %{{.+}}) : (tensor<5xi64>, tensor<i64>) -> tensor<5xi64>
# CHECK:         %[[PROBE:.+]] = "fxla.index_select"(%[[O]], %{{.+}}) {dim = 0 : i64} : (tensor<3xi64>, tensor<5xi64>) -> tensor<5xi64>
# CHECK:         %[[BELOW:.+]] = "fxla.le"(%[[PROBE]], %[[J]]) : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi1>
# CHECK:         %[[TAKE:.+]] = "fxla.logical_and"(%{{.+}}, %[[BELOW]])
# CHECK:         %[[POS1:.+]] = "fxla.where"(%[[TAKE]], %[[CAND]], %[[POS0]]) : (tensor<5xi1>, tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
# CHECK:         "fxla.index_select"(%[[O]], %{{.+}}) {dim = 0 : i64} : (tensor<3xi64>, tensor<5xi64>) -> tensor<5xi64>
# CHECK:         %[[POS2:.+]] = "fxla.where"(%{{.+}}, %{{.+}}, %[[POS1]]) : (tensor<5xi1>, tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
# CHECK-NOT:     "fxla.index_select"(%[[O]]
# CHECK:         %[[BAG:.+]] = "fxla.sub"(%[[POS2]], %{{.+}}) : (tensor<5xi64>, tensor<i64>) -> tensor<5xi64>
# CHECK:         %[[OUTSIDE:.+]] = "fxla.logical_or"
# CHECK:         %[[TRASH:.+]] = "fxla.constant"() {value = dense<3> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[IDS:.+]] = "fxla.where"(%[[OUTSIDE]], %[[TRASH]], %[[BAG]]) : (tensor<5xi1>, tensor<i64>, tensor<5xi64>) -> tensor<5xi64>
# CHECK:         %[[ROWS:.+]] = "fxla.index_select"(%[[W]], %[[I]]) {dim = 0 : i64} : (tensor<8x3xf32>, tensor<5xi64>) -> tensor<5x3xf32>
# CHECK:         %[[IDCOL:.+]] = "fxla.reshape"(%[[IDS]]) {shape = array<i64: 5, 1>} : (tensor<5xi64>) -> tensor<5x1xi64>
# CHECK:         %[[INDEX:.+]] = "fxla.expand"(%[[IDCOL]]) {shape = array<i64: 5, 3>} : (tensor<5x1xi64>) -> tensor<5x3xi64>
# CHECK:         %[[ZEROS:.+]] = "fxla.expand"(%{{.+}}) {shape = array<i64: 4, 3>} : (tensor<f32>) -> tensor<4x3xf32>
# CHECK:         %[[SUMS:.+]] = "fxla.scatter"(%[[ZEROS]], %[[INDEX]], %[[ROWS]]) {dim = 0 : i64, reduce = "add"} : (tensor<4x3xf32>, tensor<5x3xi64>, tensor<5x3xf32>) -> tensor<4x3xf32>
# CHECK:         %[[BAGS:.+]] = "fxla.slice"(%[[SUMS]]) {limit = array<i64: 3, 3>, start = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<4x3xf32>) -> tensor<3x3xf32>
# CHECK:         return %[[BAGS]] : tensor<3x3xf32>
@case(F.embedding_bag, torch.tensor([1, 4, 2, 7, 0]), t(8, 3), torch.tensor([0, 2, 2]), variant="offsets")
def embedding_bag_offsets(i, w, o):
    return F.embedding_bag(i, w, o, mode="sum")


# CHECK-LABEL: case torch.einsum (diagonal):
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x4xf32>)
# CHECK:         %[[RESHAPE:.+]] = "fxla.reshape"(%[[X]]) {shape = array<i64: 2, 16>} : (tensor<2x4x4xf32>) -> tensor<2x16xf32>
# CHECK:         %[[SLICE:.+]] = "fxla.slice"(%[[RESHAPE]]) {limit = array<i64: 2, 16>, start = array<i64: 0, 0>, stride = array<i64: 1, 5>} : (tensor<2x16xf32>) -> tensor<2x4xf32>
@case(torch.einsum, t(2, 4, 4), variant="diagonal")
def einsum_diagonal(x):
    return torch.einsum("bii->bi", x)


# CHECK-LABEL: case torch.nn.Conv2d (padding_mode=reflect):
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x4x4xf32>, %[[WEIGHT:.+]]: tensor<3x2x3x3xf32> {fxla.param = "mod.weight"})
# CHECK:         %[[IDX:.+]] = "fxla.constant"() {value = dense<[1, 0, 1, 2, 3, 2]> : tensor<6xi64>}
# CHECK:         %[[INDEX_SELECT:.+]] = "fxla.index_select"(%[[X]], %[[IDX]]) {dim = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<6xi64>) -> tensor<1x2x4x6xf32>
# CHECK:         %[[IDX_2:.+]] = "fxla.constant"() {value = dense<[1, 0, 1, 2, 3, 2]> : tensor<6xi64>}
# CHECK:         %[[INDEX_SELECT_2:.+]] = "fxla.index_select"(%[[INDEX_SELECT]], %[[IDX_2]]) {dim = 2 : i64} : (tensor<1x2x4x6xf32>, tensor<6xi64>) -> tensor<1x2x6x6xf32>
# CHECK:         %[[CONV:.+]] = "fxla.conv"(%[[INDEX_SELECT_2]], %[[WEIGHT]]) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x2x6x6xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
# CHECK:         return %[[CONV]] : tensor<1x3x4x4xf32>
@case(torch.nn.Conv2d, t(1, 2, 4, 4), variant="padding_mode=reflect")
def conv2d_reflect():
    return torch.nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect", bias=False)
