// RUN: fxla-opt %s --split-input-file --fxla-full-precision | FileCheck %s

// fxla-full-precision asks for full float32 dots and convolutions (accelerators use TF32 or bfloat16 passes
// otherwise, where torch computes float32 in float32); fxla.compile runs it for every device but the CPU.

// CHECK-LABEL: func.func @f32_dot_and_conv
// CHECK:         stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST]
// CHECK:         stablehlo.convolution(%arg2, %arg3)
// CHECK-SAME:    precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]
func.func @f32_dot_and_conv(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %x: tensor<1x2x5x5xf32>, %k: tensor<2x2x3x3xf32>) -> (tensor<2x4xf32>, tensor<1x2x3x3xf32>) {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x2x5x5xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %0, %1 : tensor<2x4xf32>, tensor<1x2x3x3xf32>
}

// -----

// Half precision and integers are left as they are, and so is a precision someone already chose.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT:     HIGHEST
// CHECK:         precision = [DEFAULT, DEFAULT]
// CHECK-NOT:     HIGHEST
func.func @left_alone(%a: tensor<2x3xbf16>, %b: tensor<3x4xbf16>, %i: tensor<2x3xi32>, %j: tensor<3x4xi32>, %f: tensor<2x3xf32>, %g: tensor<3x4xf32>) -> (tensor<2x4xbf16>, tensor<2x4xi32>, tensor<2x4xf32>) {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xbf16>
  %1 = stablehlo.dot_general %i, %j, contracting_dims = [1] x [0] : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
  %2 = stablehlo.dot_general %f, %g, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0, %1, %2 : tensor<2x4xbf16>, tensor<2x4xi32>, tensor<2x4xf32>
}
