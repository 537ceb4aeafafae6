// RUN: fxla-opt %s --split-input-file --fxla-block-diagonal-conv | FileCheck %s

// fxla-block-diagonal-conv writes a grouped convolution with several channels per group as one dense convolution
// whose kernel holds the groups' kernels on its diagonal (XLA CPU's dense convolution is ~15x faster per
// multiply-add than its grouped one), behind a test that the input is finite: a zero weight times inf or NaN is
// NaN, which would reach every group.

// Two groups of 8 channels, stride 2: the test reduces is_finite with `and`; the true branch selects the weights
// into an HWIO [3, 3, 16, 16] kernel (group of the input == group of the output) and convolves with one group;
// the false branch is the grouped convolution itself.
// CHECK-LABEL: func.func @two_groups_of_eight
// CHECK:         %[[FINITE:.+]] = stablehlo.is_finite %arg0
// CHECK:         %[[OK:.+]] = stablehlo.reduce(%[[FINITE]] init: %{{.+}}) applies stablehlo.and across dimensions = [0, 1, 2, 3]
// CHECK:         "stablehlo.if"(%[[OK]])
// CHECK:           %[[DIAG:.+]] = stablehlo.compare EQ, %{{.+}}, %{{.+}} : (tensor<3x3x2x8x2x8xi32>, tensor<3x3x2x8x2x8xi32>)
// CHECK:           %[[K:.+]] = stablehlo.select %[[DIAG]], %{{.+}}, %{{.+}} : tensor<3x3x2x8x2x8xi1>, tensor<3x3x2x8x2x8xf32>
// CHECK:           stablehlo.convolution(%arg0, %{{.+}}) dim_numbers = [b, f, 0, 1]x[0, 1, i, o]->[b, f, 0, 1]
// CHECK-SAME:        feature_group_count = 1 : i64
// CHECK:           stablehlo.convolution(%arg0, %arg1)
// CHECK-SAME:        feature_group_count = 2 : i64
func.func @two_groups_of_eight(%x: tensor<2x16x8x8xf32>, %k: tensor<16x8x3x3xf32>) -> tensor<2x16x4x4xf32> {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 2], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<2x16x8x8xf32>, tensor<16x8x3x3xf32>) -> tensor<2x16x4x4xf32>
  return %0 : tensor<2x16x4x4xf32>
}

// -----

// Depthwise (one channel per group) is the per-tap form's (fxla-grouped-conv), and a dense convolution has no
// groups: both are left alone.
// CHECK-LABEL: func.func @depthwise_and_dense_untouched
// CHECK-NOT:     stablehlo.if
// CHECK:         stablehlo.convolution(%arg0, %arg1) {{.+}} feature_group_count = 4 : i64
// CHECK:         stablehlo.convolution(%arg0, %arg2) {{.+}} feature_group_count = 1 : i64
func.func @depthwise_and_dense_untouched(%x: tensor<2x4x8x8xf32>, %k: tensor<4x1x3x3xf32>, %d: tensor<4x4x3x3xf32>) -> (tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>) {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 4 : i64} : (tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x6x6xf32>
  %1 = stablehlo.convolution(%x, %d) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x6x6xf32>
  return %0, %1 : tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>
}
