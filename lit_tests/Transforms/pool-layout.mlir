// RUN: fxla-opt %s --split-input-file --fxla-pool-layout | FileCheck %s

// fxla-pool-layout writes a pool of a convolution's [N, C, H, W] result channels-last, between two
// transposes, so XLA CPU keeps the convolution's NHWC layout (no activation copies around the pool).

// A max pool of ReLU(conv): the window, strides and padding move with the channels.
// CHECK-LABEL: func.func @pool_of_conv
// CHECK:         %[[R:.+]] = stablehlo.maximum
// CHECK:         %[[T:.+]] = stablehlo.transpose %[[R]], dims = [0, 2, 3, 1] : (tensor<2x4x6x6xf32>) -> tensor<2x6x6x4xf32>
// CHECK:         %[[P:.+]] = "stablehlo.reduce_window"(%[[T]], %{{.+}}) <{padding = dense<{{\[\[}}0, 0], [1, 0], [1, 0], [0, 0]]> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>}>
// CHECK:         stablehlo.transpose %[[P]], dims = [0, 3, 1, 2] : (tensor<2x3x3x4xf32>) -> tensor<2x4x3x3xf32>
func.func @pool_of_conv(%x: tensor<2x3x8x8xf32>, %k: tensor<4x3x3x3xf32>) -> tensor<2x4x3x3xf32> {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  %z = stablehlo.constant dense<0.0> : tensor<2x4x6x6xf32>
  %r = stablehlo.maximum %0, %z : tensor<2x4x6x6xf32>
  %init = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %p = "stablehlo.reduce_window"(%r, %init) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) {window_dimensions = array<i64: 1, 1, 3, 3>, window_strides = array<i64: 1, 1, 2, 2>, padding = dense<[[0, 0], [0, 0], [1, 0], [1, 0]]> : tensor<4x2xi64>} : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x3x3xf32>
  return %p : tensor<2x4x3x3xf32>
}

// -----

// Two pools in a row: the second takes the first's channels-last result (no transpose pair between them).
// CHECK-LABEL: func.func @two_pools
// CHECK:         stablehlo.transpose %{{.+}}, dims = [0, 2, 3, 1]
// CHECK:         %[[P1:.+]] = "stablehlo.reduce_window"
// CHECK-NOT:     stablehlo.transpose
// CHECK:         %[[P2:.+]] = "stablehlo.reduce_window"(%[[P1]], %{{.+}}) <{window_dimensions = array<i64: 1, 2, 2, 1>
// CHECK:         stablehlo.transpose %[[P2]], dims = [0, 3, 1, 2]
func.func @two_pools(%x: tensor<2x3x8x8xf32>, %k: tensor<4x3x3x3xf32>) -> tensor<2x4x3x3xf32> {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  %init = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %p = "stablehlo.reduce_window"(%0, %init) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) {window_dimensions = array<i64: 1, 1, 1, 1>} : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x6x6xf32>
  %q = "stablehlo.reduce_window"(%p, %init) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) {window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>} : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x3x3xf32>
  return %q : tensor<2x4x3x3xf32>
}

// -----

// A pool of a function argument (row-major NCHW as given) and a global pool are left alone.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT:     stablehlo.transpose
// CHECK:         window_dimensions = array<i64: 1, 1, 2, 2>
// CHECK:         window_dimensions = array<i64: 1, 1, 6, 6>
func.func @left_alone(%y: tensor<2x4x6x6xf32>, %x: tensor<2x3x8x8xf32>, %k: tensor<4x3x3x3xf32>) -> (tensor<2x4x3x3xf32>, tensor<2x4x1x1xf32>) {
  %init = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %p = "stablehlo.reduce_window"(%y, %init) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) {window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>} : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x3x3xf32>
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  %g = "stablehlo.reduce_window"(%0, %init) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) {window_dimensions = array<i64: 1, 1, 6, 6>} : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x1x1xf32>
  return %p, %g : tensor<2x4x3x3xf32>, tensor<2x4x1x1xf32>
}
