# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla: comparisons (bool results, promoted operands), dtype conversions and clamping -- one case per
# op object of fxla.lowering.RULES.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import operator

import torch
from fxla.testing import case, t

I64, I32, BF16, F16, F64, BOOL = torch.int64, torch.int32, torch.bfloat16, torch.float16, torch.float64, torch.bool


# CHECK-LABEL: case operator.eq:
# CHECK:         func.func @main(%[[X:.+]]: tensor<6xi64>, %[[Y:.+]]: tensor<6xf32>)
# CHECK:         %[[EQ:.+]] = "fxla.eq"(%[[X]], %[[Y]]) : (tensor<6xi64>, tensor<6xf32>) -> tensor<6xi1>
@case(operator.eq, t(6, dtype=I64), t(6))
def eq_int_float(x, y):
    return x == y


# CHECK-LABEL: case torch.eq:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<5xf32>)
# CHECK:         %[[EQ:.+]] = "fxla.eq"(%[[X]], %[[Y]]) : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xi1>
@case(torch.eq, t(4, 5), t(5))
def torch_eq(x, y):
    return torch.eq(x, y)


# CHECK-LABEL: case Tensor.eq:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[EQ:.+]] = "fxla.eq"(%[[X]], %[[CONSTANT]]) : (tensor<4x5xi64>, tensor<i64>) -> tensor<4x5xi1>
@case(torch.Tensor.eq, t(4, 5, dtype=I64))
def tensor_eq_scalar(x):
    return x.eq(1)


# CHECK-LABEL: case operator.ne:
# CHECK:         func.func @main(%[[X:.+]]: tensor<6xi1>, %[[Y:.+]]: tensor<6xi1>)
# CHECK:         %[[NE:.+]] = "fxla.ne"(%[[X]], %[[Y]]) : (tensor<6xi1>, tensor<6xi1>) -> tensor<6xi1>
@case(operator.ne, t(6, dtype=BOOL), t(6, dtype=BOOL))
def ne_bool(x, y):
    return x != y


# CHECK-LABEL: case torch.ne:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi32>, %[[Y:.+]]: tensor<4x5xi64>)
# CHECK:         %[[NE:.+]] = "fxla.ne"(%[[X]], %[[Y]]) : (tensor<4x5xi32>, tensor<4x5xi64>) -> tensor<4x5xi1>
@case(torch.ne, t(4, 5, dtype=I32), t(4, 5, dtype=I64))
def torch_ne(x, y):
    return torch.ne(x, y)


# CHECK-LABEL: case Tensor.ne:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4x1xf32>)
# CHECK:         %[[NE:.+]] = "fxla.ne"(%[[X]], %[[Y]]) : (tensor<4x5xf32>, tensor<4x1xf32>) -> tensor<4x5xi1>
@case(torch.Tensor.ne, t(4, 5), t(4, 1))
def tensor_ne(x, y):
    return x.ne(y)


# CHECK-LABEL: case operator.lt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<6xi64>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[LT:.+]] = "fxla.lt"(%[[X]], %[[CONSTANT]]) : (tensor<6xi64>, tensor<f32>) -> tensor<6xi1>
@case(operator.lt, t(6, dtype=I64))
def int_lt_float_scalar(x):
    return x < 0.5


# CHECK-LABEL: case torch.lt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4x5xf32>)
# CHECK:         %[[LT:.+]] = "fxla.lt"(%[[X]], %[[Y]]) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xi1>
@case(torch.lt, t(4, 5), t(4, 5))
def torch_lt(x, y):
    return torch.lt(x, y)


# CHECK-LABEL: case Tensor.lt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xbf16>, %[[Y:.+]]: tensor<4x5xf32>)
# CHECK:         %[[LT:.+]] = "fxla.lt"(%[[X]], %[[Y]]) : (tensor<4x5xbf16>, tensor<4x5xf32>) -> tensor<4x5xi1>
@case(torch.Tensor.lt, t(4, 5, dtype=BF16), t(4, 5))
def tensor_lt_promotes(x, y):
    return x.lt(y)


# CHECK-LABEL: case operator.le:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<5xf32>)
# CHECK:         %[[LE:.+]] = "fxla.le"(%[[X]], %[[Y]]) : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xi1>
@case(operator.le, t(4, 5), t(5))
def le(x, y):
    return x <= y


# CHECK-LABEL: case torch.le:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[LE:.+]] = "fxla.le"(%[[X]], %[[CONSTANT]]) : (tensor<4x5xi64>, tensor<i64>) -> tensor<4x5xi1>
@case(torch.le, t(4, 5, dtype=I64))
def torch_le_scalar(x):
    return torch.le(x, 2)


# CHECK-LABEL: case Tensor.le:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4x5xf32>)
# CHECK:         %[[LE:.+]] = "fxla.le"(%[[X]], %[[Y]]) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xi1>
@case(torch.Tensor.le, t(4, 5), t(4, 5))
def tensor_le(x, y):
    return x.le(y)


# CHECK-LABEL: case operator.gt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<1.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[GT:.+]] = "fxla.gt"(%[[X]], %[[CONSTANT]]) : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xi1>
@case(operator.gt, t(4, 5))
def gt_scalar(x):
    return x > 1


# CHECK-LABEL: case torch.gt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>, %[[Y:.+]]: tensor<5xi64>)
# CHECK:         %[[GT:.+]] = "fxla.gt"(%[[X]], %[[Y]]) : (tensor<4x5xi64>, tensor<5xi64>) -> tensor<4x5xi1>
@case(torch.gt, t(4, 5, dtype=I64), t(5, dtype=I64))
def torch_gt(x, y):
    return torch.gt(x, y)


# CHECK-LABEL: case Tensor.gt:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<4x5xf32>)
# CHECK:         %[[GT:.+]] = "fxla.gt"(%[[X]], %[[Y]]) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xi1>
@case(torch.Tensor.gt, t(4, 5), t(4, 5))
def tensor_gt(x, y):
    return x.gt(y)


# CHECK-LABEL: case operator.ge:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf16>, %[[Y:.+]]: tensor<4x5xf16>)
# CHECK:         %[[GE:.+]] = "fxla.ge"(%[[X]], %[[Y]]) : (tensor<4x5xf16>, tensor<4x5xf16>) -> tensor<4x5xi1>
@case(operator.ge, t(4, 5, dtype=F16), t(4, 5, dtype=F16))
def ge(x, y):
    return x >= y


# CHECK-LABEL: case torch.ge:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<1x5xf32>)
# CHECK:         %[[GE:.+]] = "fxla.ge"(%[[X]], %[[Y]]) : (tensor<4x5xf32>, tensor<1x5xf32>) -> tensor<4x5xi1>
@case(torch.ge, t(4, 5), t(1, 5))
def torch_ge(x, y):
    return torch.ge(x, y)


# CHECK-LABEL: case Tensor.ge:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[GE:.+]] = "fxla.ge"(%[[X]], %[[CONSTANT]]) : (tensor<4x5xi64>, tensor<f32>) -> tensor<4x5xi1>
@case(torch.Tensor.ge, t(4, 5, dtype=I64))
def tensor_ge_float_scalar(x):
    return x.ge(0.5)


# CHECK-LABEL: case Tensor.float:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[CONVERT:.+]] = "fxla.convert"(%[[X]]) : (tensor<3x4xi64>) -> tensor<3x4xf32>
@case(torch.Tensor.float, t(3, 4, dtype=I64))
def to_float(x):
    return x.float()


# CHECK-LABEL: case Tensor.half:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONVERT:.+]] = "fxla.convert"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf16>
@case(torch.Tensor.half, t(3, 4))
def to_half(x):
    return x.half()


# CHECK-LABEL: case Tensor.bfloat16:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi1>)
# CHECK:         %[[CONVERT:.+]] = "fxla.convert"(%[[X]]) : (tensor<3x4xi1>) -> tensor<3x4xbf16>
@case(torch.Tensor.bfloat16, t(3, 4, dtype=BOOL))
def to_bfloat16(x):
    return x.bfloat16()


# CHECK-LABEL: case Tensor.double:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONVERT:.+]] = "fxla.convert"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf64>
@case(torch.Tensor.double, t(3, 4))
def to_double(x):
    return x.double()


# CHECK-LABEL: case Tensor.long:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONVERT:.+]] = "fxla.convert"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xi64>
@case(torch.Tensor.long, t(3, 4))
def to_long(x):
    return x.long()


# CHECK-LABEL: case Tensor.int:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xbf16>)
# CHECK:         %[[CONVERT:.+]] = "fxla.convert"(%[[X]]) : (tensor<3x4xbf16>) -> tensor<3x4xi32>
@case(torch.Tensor.int, t(3, 4, dtype=BF16))
def to_int(x):
    return x.int()


# CHECK-LABEL: case Tensor.bool:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONVERT:.+]] = "fxla.convert"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xi1>
@case(torch.Tensor.bool, t(3, 4))
def to_bool(x):
    return x.bool()


# CHECK-LABEL: case Tensor.to:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONVERT:.+]] = "fxla.convert"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xf16>
@case(torch.Tensor.to, t(3, 4))
def to_dtype(x):
    return x.to(torch.float16)


# CHECK-LABEL: case Tensor.type:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONVERT:.+]] = "fxla.convert"(%[[X]]) : (tensor<3x4xf32>) -> tensor<3x4xi32>
@case(torch.Tensor.type, t(3, 4))
def type_int32(x):
    return x.type(torch.int32)


# CHECK-LABEL: case Tensor.type_as:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>, %[[Y:.+]]: tensor<2xbf16>)
# CHECK:         %[[CONVERT:.+]] = "fxla.convert"(%[[X]]) : (tensor<3x4xi64>) -> tensor<3x4xbf16>
@case(torch.Tensor.type_as, t(3, 4, dtype=I64), t(2, dtype=BF16))
def type_as(x, y):
    return x.type_as(y)


# CHECK-LABEL: case torch.clamp:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<-5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CONSTANT_2:.+]] = "fxla.constant"() {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CLAMP:.+]] = "fxla.clamp"(%[[X]], %[[CONSTANT]], %[[CONSTANT_2]]) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<3x4xf32>, tensor<f32>, tensor<f32>) -> tensor<3x4xf32>
@case(torch.clamp, t(3, 4))
def clamp(x):
    return torch.clamp(x, -0.5, 0.5)


# CHECK-LABEL: case Tensor.clamp:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CLAMP:.+]] = "fxla.clamp"(%[[X]], %[[CONSTANT]]) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<3x4xi64>, tensor<f32>) -> tensor<3x4xf32>
@case(torch.Tensor.clamp, t(3, 4, dtype=I64))
def tensor_clamp_float_bound(x):
    return x.clamp(min=0.5)


# CHECK-LABEL: case torch.clip:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[LO:.+]]: tensor<4xf32>, %[[HI:.+]]: tensor<3x1xf32>)
# CHECK:         %[[CLAMP:.+]] = "fxla.clamp"(%[[X]], %[[LO]], %[[HI]]) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<3x4xf32>, tensor<4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
@case(torch.clip, t(3, 4), t(4), t(3, 1))
def clip_tensor_bounds(x, lo, hi):
    return torch.clip(x, lo, hi)


# CHECK-LABEL: case Tensor.clip:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi64>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
# CHECK:         %[[CLAMP:.+]] = "fxla.clamp"(%[[X]], %[[CONSTANT]]) {operandSegmentSizes = array<i32: 1, 0, 1>} : (tensor<3x4xi64>, tensor<i64>) -> tensor<3x4xi64>
@case(torch.Tensor.clip, t(3, 4, dtype=I64))
def tensor_clip(x):
    return x.clip(max=2)


# CHECK-LABEL: case torch.clamp_min:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CLAMP:.+]] = "fxla.clamp"(%[[X]], %[[CONSTANT]]) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
@case(torch.clamp_min, t(3, 4))
def clamp_min(x):
    return torch.clamp_min(x, 0.0)


# CHECK-LABEL: case Tensor.clamp_min:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xi32>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>
# CHECK:         %[[CLAMP:.+]] = "fxla.clamp"(%[[X]], %[[CONSTANT]]) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<3x4xi32>, tensor<i32>) -> tensor<3x4xi32>
@case(torch.Tensor.clamp_min, t(3, 4, dtype=I32))
def tensor_clamp_min(x):
    return x.clamp_min(1)


# CHECK-LABEL: case torch.clamp_max:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf16>)
# CHECK:         %[[CONSTANT:.+]] = "fxla.constant"() {value = dense<6.000000e+00> : tensor<f16>} : () -> tensor<f16>
# CHECK:         %[[CLAMP:.+]] = "fxla.clamp"(%[[X]], %[[CONSTANT]]) {operandSegmentSizes = array<i32: 1, 0, 1>} : (tensor<3x4xf16>, tensor<f16>) -> tensor<3x4xf16>
@case(torch.clamp_max, t(3, 4, dtype=F16))
def clamp_max(x):
    return torch.clamp_max(x, 6.0)


# CHECK-LABEL: case Tensor.clamp_max:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[HI:.+]]: tensor<4xf32>)
# CHECK:         %[[CLAMP:.+]] = "fxla.clamp"(%[[X]], %[[HI]]) {operandSegmentSizes = array<i32: 1, 0, 1>} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
@case(torch.Tensor.clamp_max, t(3, 4), t(4))
def tensor_clamp_max_tensor(x, hi):
    return x.clamp_max(hi)
