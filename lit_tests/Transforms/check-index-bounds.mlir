// RUN: fxla-opt %s --split-input-file --fxla-check-index-bounds | FileCheck %s
// RUN: not fxla-opt %S/Inputs/index-out-of-range.mlir --fxla-check-index-bounds 2>&1 | FileCheck %s --check-prefix=ERR

// fxla-check-index-bounds (lowering/index_bounds.py) leaves programs whose indices stay in range as they are:
// positions from an arange (shifted by a constant) within the table, a constant index list within the dim.
// (fxla.compile runs the same check before every conversion to StableHLO.)

// CHECK-LABEL: func.func @positions_in_range
// CHECK:         %[[P:.+]] = fxla.arange {start = 3.000000e+00, step = 1.000000e+00, length = 7}
// CHECK:         fxla.index_select %arg0, %[[P]] {dim = 0}
func.func @positions_in_range(%table: tensor<10x4xf32>) -> tensor<7x4xf32> {
  %0 = "fxla.arange"() {start = 3.0 : f64, step = 1.0 : f64, length = 7 : i64} : () -> tensor<7xi64>
  %1 = "fxla.index_select"(%table, %0) {dim = 0 : i64} : (tensor<10x4xf32>, tensor<7xi64>) -> tensor<7x4xf32>
  return %1 : tensor<7x4xf32>
}

// -----

// CHECK-LABEL: func.func @constant_indices
// CHECK:         %[[I:.+]] = fxla.constant {value = dense<[0, 2, 3]> : tensor<3xi64>}
// CHECK:         fxla.index_select %arg0, %[[I]] {dim = 1}
func.func @constant_indices(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %0 = "fxla.constant"() {value = dense<[0, 2, 3]> : tensor<3xi64>} : () -> tensor<3xi64>
  %1 = "fxla.index_select"(%x, %0) {dim = 1 : i64} : (tensor<2x4xf32>, tensor<3xi64>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// Positions past the table (a sequence longer than max_position_embeddings) are an error with eager's reason,
// not XLA's silent clamp (Inputs/index-out-of-range.mlir):
// ERR:      error: index out of range: fxla.index_select reads index 11 of a dim of size 10 (its indices span [0, 11])
// ERR:      why: eager PyTorch raises IndexError here; XLA would clamp the index and silently read another element
// ERR-NEXT: fix: keep the indices within the dim
