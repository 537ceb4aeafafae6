// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// Full conversion: no fxla op or attribute is left anywhere in the output (each case below also ends
// with a CHECK-NOT, which only covers the lines after its last match).
// NOFXLA-NOT: fxla

// The shape family (dialects/fxla/ops_shape.py, lowering/patterns/shape.py) -> StableHLO: reshape,
// transpose, broadcast, concatenate, reverse and pad.

// concat promotes like torch.cat: the i64 input is converted to f16 first; dim -1 is normalised.
// CHECK-LABEL: func.func @concat_promotes
// CHECK:   %[[V0:.+]] = stablehlo.convert %arg1 : (tensor<2x1xi64>) -> tensor<2x1xf16>
// CHECK:   %[[V1:.+]] = stablehlo.concatenate %arg0, %[[V0]], dim = 1 : (tensor<2x3xf16>, tensor<2x1xf16>) -> tensor<2x4xf16>
// CHECK:   return %[[V1]] : tensor<2x4xf16>
// CHECK-NOT: fxla.
func.func @concat_promotes(%a: tensor<2x3xf16>, %b: tensor<2x1xi64>) -> tensor<2x4xf16> {
  %0 = "fxla.concat"(%a, %b) {dim = -1 : i64} : (tensor<2x3xf16>, tensor<2x1xi64>) -> tensor<2x4xf16>
  return %0 : tensor<2x4xf16>
}

// -----

// expand is broadcast_in_dim (trailing dims aligned); flip is reverse; pad takes negative high padding (cropping).
// CHECK-LABEL: func.func @expand_flip_pad
// CHECK:   %[[V0:.+]] = stablehlo.broadcast_in_dim %arg0, dims = [1, 2] : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK:   %[[V1:.+]] = stablehlo.reverse %[[V0]], dims = [2, 0] : tensor<2x3x4xf32>
// CHECK:   %[[V2:.+]] = stablehlo.constant dense<1.500000e+00> : tensor<f32>
// CHECK:   %[[V3:.+]] = stablehlo.pad %[[V1]], %[[V2]], low = [0, 1, 1], high = [0, 1, -1], interior = [0, 0, 0] : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x5x4xf32>
// CHECK:   return %[[V3]] : tensor<2x5x4xf32>
// CHECK-NOT: fxla.
func.func @expand_flip_pad(%x: tensor<3x1xf32>) -> tensor<2x5x4xf32> {
  %0 = "fxla.expand"(%x) {shape = array<i64: 2, 3, 4>} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %1 = "fxla.flip"(%0) {dims = array<i64: -1, 0>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %2 = "fxla.pad"(%1) {low = array<i64: 0, 1, 1>, high = array<i64: 0, 1, -1>, value = 1.5 : f64} : (tensor<2x3x4xf32>) -> tensor<2x5x4xf32>
  return %2 : tensor<2x5x4xf32>
}

// -----

// CHECK-LABEL: func.func @reshape
// CHECK:         [[R:%.+]] = stablehlo.reshape %arg0 : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK:         return [[R]] : tensor<6x4xf32>
// CHECK-NOT:     fxla.
func.func @reshape(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %0 = "fxla.reshape"(%x) {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  return %0 : tensor<6x4xf32>
}

// -----

// Negative permutation entries are normalised (-1 -> 2).
// CHECK-LABEL: func.func @permute
// CHECK:         [[T:%.+]] = stablehlo.transpose %arg0, dims = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK:         return [[T]] : tensor<4x2x3xf32>
// CHECK-NOT:     fxla.
func.func @permute(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = "fxla.permute"(%x) {dims = array<i64: -1, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// detach is its input in StableHLO (it only stops gradients, which fxla computes itself).
// CHECK-LABEL: func.func @detach
// CHECK:   %[[V0:.+]] = stablehlo.add %arg0, %arg0 : tensor<3xf32>
// CHECK:   return %[[V0]] : tensor<3xf32>
// CHECK-NOT: fxla.
func.func @detach(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "fxla.detach"(%a) : (tensor<3xf32>) -> tensor<3xf32>
  %1 = "fxla.add"(%0, %0) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}

// -----

// keep_history is its first operand in StableHLO (the second is the history fxla's gradients follow).
// CHECK-LABEL: func.func @keep_history
// CHECK:   %[[V0:.+]] = stablehlo.multiply %arg0, %arg0 : tensor<3xf32>
// CHECK:   return %[[V0]] : tensor<3xf32>
// CHECK-NOT: fxla.
func.func @keep_history(%new: tensor<3xf32>, %old: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "fxla.keep_history"(%new, %old) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = "fxla.mul"(%0, %0) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}

// -----

// no_gradient is its input in StableHLO (it only makes a gradient through it an error).
// CHECK-LABEL: func.func @no_gradient
// CHECK:   return %arg0 : tensor<3xf32>
// CHECK-NOT: fxla.
func.func @no_gradient(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "fxla.no_gradient"(%a) {op = "aten::scatter.reduce"} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// dim_size (how a polymorphic program reads a symbolic size, docs/shapes.md; such a program is refined to static
// types before conversion) is get_dimension_size, widened to i64; dim -1 is normalised.
// CHECK-LABEL: func.func @dim_size
// CHECK:   %[[V0:.+]] = stablehlo.get_dimension_size %arg0, dim = 1 : (tensor<2x5xf32>) -> tensor<i32>
// CHECK:   %[[V1:.+]] = stablehlo.convert %[[V0]] : (tensor<i32>) -> tensor<i64>
// CHECK:   return %[[V1]] : tensor<i64>
// CHECK-NOT: fxla.
func.func @dim_size(%x: tensor<2x5xf32>) -> tensor<i64> {
  %0 = "fxla.dim_size"(%x) {dim = -1 : i64} : (tensor<2x5xf32>) -> tensor<i64>
  return %0 : tensor<i64>
}
