// RUN: not fxla-opt %s --split-input-file --convert-fxla-to-stablehlo 2>&1 | FileCheck %s

// Attributes of a kind the op does not take are diagnostics (issue #16 item 15), also where the MLIR Python
// bindings cannot represent the attribute at all (dense arrays of bf16, f16, f8 elements), and also on ops with
// optional operands (whose operands are read from operandSegmentSizes before the attributes are checked).
// CHECK-NOT: Traceback

func.func @bf16_dims(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // CHECK: bad-attributes.mlir:[[# @LINE + 1]]:8: error: 'fxla.permute' op attribute 'dims' must be array<i64>, got a dense array of another element type
  %0 = "fxla.permute"(%a) {dims = array<bf16: 1.0, 0.0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @f16_dims(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // CHECK: bad-attributes.mlir:[[# @LINE + 1]]:8: error: 'fxla.permute' op attribute 'dims' must be array<i64>, got a dense array of another element type
  %0 = "fxla.permute"(%a) {dims = array<f16>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @f8_dims(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // CHECK: bad-attributes.mlir:[[# @LINE + 1]]:8: error: 'fxla.permute' op attribute 'dims' must be array<i64>, got a dense array of another element type
  %0 = "fxla.permute"(%a) {dims = array<f8E4M3FN: 1.0, 0.0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @i8_stride(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  // CHECK: bad-attributes.mlir:[[# @LINE + 1]]:8: error: 'fxla.conv' op attribute 'stride' must be array<i64>, got array<i8: 1, 1>
  %0 = "fxla.conv"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>, stride = array<i8: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

func.func @i64_segments(%x: tensor<2x4xf32>, %w: tensor<3x4xf32>) -> tensor<2x3xf32> {
  // CHECK: bad-attributes.mlir:[[# @LINE + 1]]:8: error: 'fxla.linear' op attribute 'operandSegmentSizes' must be array<i32>, got array<i64: 1, 1, 0>
  %0 = "fxla.linear"(%x, %w) {operandSegmentSizes = array<i64: 1, 1, 0>} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @region(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: bad-attributes.mlir:[[# @LINE + 1]]:8: error: 'fxla.neg' op expects no regions, but has 1
  %0 = "fxla.neg"(%a) ({
  }) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
