// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// Full conversion: no fxla op or attribute is left anywhere in the output (each case below also ends
// with a CHECK-NOT, which only covers the lines after its last match).
// NOFXLA-NOT: fxla

// The linalg family (dialects/fxla/ops_linalg.py, lowering/patterns/linalg.py) -> StableHLO: contractions
// as one stablehlo.dot_general.

// linear: x @ w^T contracts x's last dim with w's dim 1; the bias broadcasts along the last dim.
// CHECK-LABEL: func.func @linear_bias
// CHECK-SAME:    (%[[X:.+]]: tensor<8x64xf32>, %[[W:.+]]: tensor<16x64xf32>, %[[B:.+]]: tensor<16xf32>)
// CHECK:         [[D:%.+]] = stablehlo.dot_general %[[X]], %[[W]], contracting_dims = [1] x [1] : (tensor<8x64xf32>, tensor<16x64xf32>) -> tensor<8x16xf32>
// CHECK:         [[BB:%.+]] = stablehlo.broadcast_in_dim %[[B]], dims = [1] : (tensor<16xf32>) -> tensor<8x16xf32>
// CHECK:         stablehlo.add [[D]], [[BB]] : tensor<8x16xf32>
// CHECK-NOT:     fxla.
func.func @linear_bias(%x: tensor<8x64xf32>, %w: tensor<16x64xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %0 = "fxla.linear"(%x, %w, %b) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// Without a bias (operandSegmentSizes = [1, 1, 0]) there is no add; leading dims stay batch-free.
// CHECK-LABEL: func.func @linear_no_bias
// CHECK:         [[D:%.+]] = stablehlo.dot_general %arg0, %arg1, contracting_dims = [2] x [1] : (tensor<2x5x64xf32>, tensor<16x64xf32>) -> tensor<2x5x16xf32>
// CHECK-NOT:     stablehlo.add
// CHECK:         return [[D]] : tensor<2x5x16xf32>
// CHECK-NOT:     fxla.
func.func @linear_no_bias(%x: tensor<2x5x64xf32>, %w: tensor<16x64xf32>) -> tensor<2x5x16xf32> {
  %0 = "fxla.linear"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x5x64xf32>, tensor<16x64xf32>) -> tensor<2x5x16xf32>
  return %0 : tensor<2x5x16xf32>
}

// -----

// Parameter annotations (fxla.param) are dropped: StableHLO must not mention fxla.
// CHECK-LABEL: func.func @linear_params
// CHECK-SAME:    (%arg0: tensor<2x4xf32>, %arg1: tensor<3x4xf32>) -> tensor<2x3xf32> {
// CHECK:         stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [1]
// CHECK-NOT:     fxla.
func.func @linear_params(%x: tensor<2x4xf32>, %w: tensor<3x4xf32> {fxla.param = "fc.weight"}) -> tensor<2x3xf32> {
  %0 = "fxla.linear"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_2d
// CHECK:         [[D:%.+]] = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
// CHECK:         return [[D]]
// CHECK-NOT:     fxla.
func.func @matmul_2d(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  %0 = "fxla.matmul"(%a, %b) : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// Batch dims broadcast ([2, 1] with [6] -> [2, 6]) before a batched dot_general.
// CHECK-LABEL: func.func @matmul_batched_broadcast
// CHECK:         [[L:%.+]] = stablehlo.broadcast_in_dim %arg0, dims = [0, 1, 2, 3] : (tensor<2x1x3x4xf32>) -> tensor<2x6x3x4xf32>
// CHECK:         [[R:%.+]] = stablehlo.broadcast_in_dim %arg1, dims = [1, 2, 3] : (tensor<6x4x5xf32>) -> tensor<2x6x4x5xf32>
// CHECK:         stablehlo.dot_general [[L]], [[R]], batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<2x6x3x4xf32>, tensor<2x6x4x5xf32>) -> tensor<2x6x3x5xf32>
// CHECK-NOT:     fxla.
func.func @matmul_batched_broadcast(%a: tensor<2x1x3x4xf32>, %b: tensor<6x4x5xf32>) -> tensor<2x6x3x5xf32> {
  %0 = "fxla.matmul"(%a, %b) : (tensor<2x1x3x4xf32>, tensor<6x4x5xf32>) -> tensor<2x6x3x5xf32>
  return %0 : tensor<2x6x3x5xf32>
}

// -----

// 1-D operands are reshaped to a row (lhs) or column (rhs) matrix and the unit dim reshaped away.
// CHECK-LABEL: func.func @matmul_vector_matrix
// CHECK:         [[ROW:%.+]] = stablehlo.reshape %arg0 : (tensor<4xf32>) -> tensor<1x4xf32>
// CHECK:         [[D:%.+]] = stablehlo.dot_general [[ROW]], %arg1, contracting_dims = [1] x [0] : (tensor<1x4xf32>, tensor<4x5xf32>) -> tensor<1x5xf32>
// CHECK:         stablehlo.reshape [[D]] : (tensor<1x5xf32>) -> tensor<5xf32>
// CHECK-NOT:     fxla.
func.func @matmul_vector_matrix(%a: tensor<4xf32>, %b: tensor<4x5xf32>) -> tensor<5xf32> {
  %0 = "fxla.matmul"(%a, %b) : (tensor<4xf32>, tensor<4x5xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_dot
// CHECK:         [[COL:%.+]] = stablehlo.reshape %arg1 : (tensor<5xf32>) -> tensor<5x1xf32>
// CHECK:         [[D:%.+]] = stablehlo.dot_general %{{.+}}, [[COL]], contracting_dims = [1] x [0] : (tensor<1x5xf32>, tensor<5x1xf32>) -> tensor<1x1xf32>
// CHECK:         stablehlo.reshape [[D]] : (tensor<1x1xf32>) -> tensor<f32>
// CHECK-NOT:     fxla.
func.func @matmul_dot(%a: tensor<5xf32>, %b: tensor<5xf32>) -> tensor<f32> {
  %0 = "fxla.matmul"(%a, %b) : (tensor<5xf32>, tensor<5xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @matmul_batched_vector
// CHECK:         [[COL:%.+]] = stablehlo.reshape %arg1 : (tensor<4xf32>) -> tensor<4x1xf32>
// CHECK:         [[B:%.+]] = stablehlo.broadcast_in_dim [[COL]], dims = [1, 2] : (tensor<4x1xf32>) -> tensor<2x4x1xf32>
// CHECK:         [[D:%.+]] = stablehlo.dot_general %arg0, [[B]], batching_dims = [0] x [0], contracting_dims = [2] x [1]
// CHECK:         stablehlo.reshape [[D]] : (tensor<2x3x1xf32>) -> tensor<2x3xf32>
// CHECK-NOT:     fxla.
func.func @matmul_batched_vector(%a: tensor<2x3x4xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  %0 = "fxla.matmul"(%a, %b) : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
