// RUN: fxla-opt %s --split-input-file --verify-fxla | FileCheck %s
// RUN: fxla-opt %s --split-input-file | fxla-opt --split-input-file > %t.once
// RUN: fxla-opt %t.once --split-input-file > %t.twice
// RUN: diff %t.once %t.twice
// RUN: fxla-opt %s --split-input-file --mlir-print-debuginfo | fxla-opt --split-input-file --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// The fxla dialect's own syntax (dialects/fxla/syntax.py): fxla-opt reads it (and the generic form, see
// roundtrip.mlir), verifies it against the op table and prints it back the same; printing the parse of the
// printed text gives the same text (the diff above), source locations included.

// Optional operands are written, named, only when present; operandSegmentSizes never shows.
// CHECK-LABEL: func.func @optional_operands
// CHECK-SAME:    (%[[X:.+]]: tensor<2x8xf32>, %[[W:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<4xf32>)
// CHECK:         %[[L:.+]] = fxla.linear %[[X]], %[[W]], bias %[[B]] : tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<2x4xf32>
// CHECK:         fxla.linear %[[X]], %[[W]] : tensor<2x8xf32>, tensor<4x8xf32> -> tensor<2x4xf32>
// CHECK:         fxla.clamp %[[L]], max %[[B]] : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
// CHECK:         fxla.layer_norm %[[L]], bias %[[B]] {normalized_rank = 1, eps = 1.000000e-05} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
// CHECK-NOT:     operandSegmentSizes
// LOC-LABEL:     func.func @optional_operands
// LOC:           fxla.linear %arg0, %arg1, bias %arg2 : tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<2x4xf32> loc(#loc
func.func @optional_operands(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %0 = fxla.linear %x, %w, bias %b : tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %1 = fxla.linear %x, %w : tensor<2x8xf32>, tensor<4x8xf32> -> tensor<2x4xf32>
  %2 = fxla.clamp %0, max %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  // f64 values may be written as 1e-5 (or 0, inf); they print as MLIR prints floats
  %3 = fxla.layer_norm %0, bias %b {normalized_rank = 1, eps = 1e-5} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %0, %1, %2, %3 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Attributes in the op table's order, without MLIR's type suffixes; arrays as [..]; several results.
// CHECK-LABEL: func.func @attributes
// CHECK:         %[[C:.+]] = fxla.conv %{{.+}}, %{{.+}} {stride = [1, 1], padding = [1, 1], dilation = [1, 1], groups = 1} : tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32> -> tensor<2x8x16x16xf32>
// CHECK:         %[[P:.+]]:2 = fxla.max_pool_with_indices %[[C]] {kernel_size = [2, 2], stride = [2, 2], padding = [0, 0], dilation = [1, 1], ceil_mode = false} : tensor<2x8x16x16xf32> -> (tensor<2x8x8x8xf32>, tensor<2x8x8x8xi64>)
// CHECK:         %[[S:.+]] = fxla.sum %[[P]]#0 {dims = [], keepdim = false} : tensor<2x8x8x8xf32> -> tensor<f32>
// CHECK:         fxla.gelu %[[P]]#0 {approximate = "tanh"} : tensor<2x8x8x8xf32> -> tensor<2x8x8x8xf32>
func.func @attributes(%x: tensor<2x3x16x16xf32>, %w: tensor<8x3x3x3xf32>) -> (tensor<f32>, tensor<2x8x8x8xf32>) {
  %0 = fxla.conv %x, %w {stride = [1, 1], padding = [1, 1], dilation = [1, 1], groups = 1} : tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32> -> tensor<2x8x16x16xf32>
  %1:2 = fxla.max_pool_with_indices %0 {kernel_size = [2, 2], stride = [2, 2], padding = [0, 0], dilation = [1, 1], ceil_mode = false} : tensor<2x8x16x16xf32> -> (tensor<2x8x8x8xf32>, tensor<2x8x8x8xi64>)
  %2 = fxla.sum %1#0 {dims = [], keepdim = false} : tensor<2x8x8x8xf32> -> tensor<f32>
  %3 = fxla.gelu %1#0 {approximate = "tanh"} : tensor<2x8x8x8xf32> -> tensor<2x8x8x8xf32>
  return %2, %3 : tensor<f32>, tensor<2x8x8x8xf32>
}

// -----

// No operands: the signature says (); variadic operands; pretty and generic ops mixed in one function.
// CHECK-LABEL: func.func @mixed
// CHECK:         %[[K:.+]] = fxla.constant {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
// CHECK:         %[[A:.+]] = fxla.arange {start = 0.000000e+00, step = 1.000000e+00, length = 2} : () -> tensor<2xi64>
// CHECK:         %[[S:.+]] = fxla.add %[[K]], %[[A]] : tensor<2xi64>, tensor<2xi64> -> tensor<2xi64>
// CHECK:         fxla.concat %[[K]], %[[A]], %[[S]] {dim = 0} : tensor<2xi64>, tensor<2xi64>, tensor<2xi64> -> tensor<6xi64>
func.func @mixed() -> tensor<6xi64> {
  %0 = fxla.constant {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %1 = fxla.arange {start = 0, step = 1, length = 2} : () -> tensor<2xi64>
  %2 = "fxla.add"(%0, %1) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %3 = fxla.concat %0, %1, %2 {dim = 0} : tensor<2xi64>, tensor<2xi64>, tensor<2xi64> -> tensor<6xi64>
  return %3 : tensor<6xi64>
}
