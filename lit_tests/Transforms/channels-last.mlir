// RUN: fxla-opt %s --split-input-file --fxla-channels-last | FileCheck %s

// fxla-channels-last makes XLA CPU's channels-last layout explicit: convolutions write channels-last, and the
// transposes between the two orders move to where they cost nothing (into convolutions, pools, broadcasts).

// A squeeze-and-excitation tail: scale and shift (broadcasts), SiLU, a global pool, the scale's multiply and the
// convolutions that read them, all channels-last; one transpose back for the function's result.
// CHECK-LABEL: func.func @excitation
// CHECK-NOT:     stablehlo.transpose
// CHECK:         stablehlo.broadcast_in_dim %{{.+}}, dims = [3] : (tensor<4xf32>) -> tensor<2x6x6x4xf32>
// CHECK:         "stablehlo.reduce_window"(%{{.+}}, %{{.+}}) <{window_dimensions = array<i64: 1, 6, 6, 1>}>
// CHECK:         %[[E:.+]] = stablehlo.convolution(%{{.+}}, %{{.+}}) dim_numbers = [b, 0, 1, f]x[o, i, 0, 1]->[b, 0, 1, f]
// CHECK-NEXT:    stablehlo.reshape %[[E]] : (tensor<2x1x1x4xf32>) -> tensor<2x4xf32>
// CHECK:         %[[O:.+]] = stablehlo.convolution(%{{.+}}, %{{.+}}) dim_numbers = [b, 0, 1, f]x[o, i, 0, 1]->[b, 0, 1, f]
// CHECK-NEXT:    stablehlo.transpose %[[O]], dims = [0, 3, 1, 2]
func.func @excitation(%s: tensor<2x6x6x4xf32>, %v: tensor<4xf32>, %k: tensor<4x4x1x1xf32>, %k2: tensor<3x4x1x1xf32>) -> tensor<2x3x6x6xf32> {
  %t = stablehlo.transpose %s, dims = [0, 3, 1, 2] : (tensor<2x6x6x4xf32>) -> tensor<2x4x6x6xf32>
  %b = stablehlo.broadcast_in_dim %v, dims = [1] : (tensor<4xf32>) -> tensor<2x4x6x6xf32>
  %x = stablehlo.multiply %t, %b : tensor<2x4x6x6xf32>
  %g = stablehlo.logistic %x : tensor<2x4x6x6xf32>
  %y = stablehlo.multiply %x, %g : tensor<2x4x6x6xf32>
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %p = "stablehlo.reduce_window"(%y, %init) ({
  ^bb0(%a: tensor<f32>, %c: tensor<f32>):
    %m = stablehlo.add %a, %c : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) {window_dimensions = array<i64: 1, 1, 6, 6>} : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x1x1xf32>
  %e = stablehlo.convolution(%p, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x4x1x1xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x1x1xf32>
  %r = stablehlo.reshape %e : (tensor<2x4x1x1xf32>) -> tensor<2x4xf32>
  %eb = stablehlo.broadcast_in_dim %r, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<2x4x6x6xf32>
  %z = stablehlo.multiply %y, %eb : tensor<2x4x6x6xf32>
  %o = stablehlo.convolution(%z, %k2) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x4x6x6xf32>, tensor<3x4x1x1xf32>) -> tensor<2x3x6x6xf32>
  return %o : tensor<2x3x6x6xf32>
}

// -----

// A residual add with a convolution's result (written channels-last), a mean over the spatial dims (its [N, C]
// result unchanged), and a use that must see channels-first data (the function's result), which keeps one
// transpose.
// CHECK-LABEL: func.func @residual_and_mean
// CHECK:         %[[C:.+]] = stablehlo.convolution{{.+}}->[b, 0, 1, f]
// CHECK:         %[[A:.+]] = stablehlo.add %{{.+}}, %[[C]] : tensor<2x6x6x4xf32>
// CHECK:         stablehlo.transpose %[[A]], dims = [0, 3, 1, 2]
// CHECK:         stablehlo.reduce(%[[A]] init: %{{.+}}) applies stablehlo.add across dimensions = [1, 2]
func.func @residual_and_mean(%s: tensor<2x6x6x4xf32>, %x: tensor<2x4x6x6xf32>, %k: tensor<4x4x1x1xf32>) -> (tensor<2x4xf32>, tensor<2x4x6x6xf32>) {
  %t = stablehlo.transpose %s, dims = [0, 3, 1, 2] : (tensor<2x6x6x4xf32>) -> tensor<2x4x6x6xf32>
  %c = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x6x6xf32>
  %a = stablehlo.add %t, %c : tensor<2x4x6x6xf32>
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.reduce(%a init: %init) applies stablehlo.add across dimensions = [2, 3] : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4xf32>
  return %m, %a : tensor<2x4xf32>, tensor<2x4x6x6xf32>
}

// -----

// Left alone: an add with a function argument (row-major channels-first: transposing it would be a copy), and a
// reshape that reorders elements.
// CHECK-LABEL: func.func @left_alone
// CHECK:         %[[T:.+]] = stablehlo.transpose %{{.+}}, dims = [0, 3, 1, 2]
// CHECK:         stablehlo.add %[[T]], %{{.+}} : tensor<2x4x6x6xf32>
// CHECK:         stablehlo.reshape %[[T]]
func.func @left_alone(%s: tensor<2x6x6x4xf32>, %y: tensor<2x4x6x6xf32>) -> (tensor<2x4x6x6xf32>, tensor<2x144xf32>) {
  %t = stablehlo.transpose %s, dims = [0, 3, 1, 2] : (tensor<2x6x6x4xf32>) -> tensor<2x4x6x6xf32>
  %a = stablehlo.add %t, %y : tensor<2x4x6x6xf32>
  %r = stablehlo.reshape %t : (tensor<2x4x6x6xf32>) -> tensor<2x144xf32>
  return %a, %r : tensor<2x4x6x6xf32>, tensor<2x144xf32>
}

// -----

// A transpose to channels-last (a depthwise convolution's input) moves up the other way: through SiLU and a
// BatchNorm scale into the convolution that computes its operand, which then writes channels-last itself.
// CHECK-LABEL: func.func @into_the_convolution
// CHECK-NOT:     stablehlo.transpose
// CHECK:         %[[C:.+]] = stablehlo.convolution(%{{.+}}, %{{.+}}) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, 0, 1, f]
// CHECK:         stablehlo.broadcast_in_dim %{{.+}}, dims = [3] : (tensor<4xf32>) -> tensor<2x6x6x4xf32>
// CHECK:         stablehlo.pad %{{.+}}, %{{.+}}, low = [0, 1, 1, 0], high = [0, 1, 1, 0]
// CHECK-NOT:     stablehlo.transpose
func.func @into_the_convolution(%x: tensor<2x3x6x6xf32>, %k: tensor<4x3x1x1xf32>, %v: tensor<4xf32>) -> tensor<2x8x8x4xf32> {
  %c = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x3x6x6xf32>, tensor<4x3x1x1xf32>) -> tensor<2x4x6x6xf32>
  %b = stablehlo.broadcast_in_dim %v, dims = [1] : (tensor<4xf32>) -> tensor<2x4x6x6xf32>
  %h = stablehlo.multiply %c, %b : tensor<2x4x6x6xf32>
  %g = stablehlo.logistic %h : tensor<2x4x6x6xf32>
  %y = stablehlo.multiply %h, %g : tensor<2x4x6x6xf32>
  %t = stablehlo.transpose %y, dims = [0, 2, 3, 1] : (tensor<2x4x6x6xf32>) -> tensor<2x6x6x4xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %p = stablehlo.pad %t, %zero, low = [0, 1, 1, 0], high = [0, 1, 1, 0], interior = [0, 0, 0, 0] : (tensor<2x6x6x4xf32>, tensor<f32>) -> tensor<2x8x8x4xf32>
  return %p : tensor<2x8x8x4xf32>
}

// -----

// Not moved up: the value is also used channels-first (returned), so both layouts would be computed.
// CHECK-LABEL: func.func @used_both_ways
// CHECK:         %[[Y:.+]] = stablehlo.logistic
// CHECK:         stablehlo.transpose %[[Y]], dims = [0, 2, 3, 1]
func.func @used_both_ways(%x: tensor<2x4x6x6xf32>) -> (tensor<2x6x6x4xf32>, tensor<2x4x6x6xf32>) {
  %y = stablehlo.logistic %x : tensor<2x4x6x6xf32>
  %t = stablehlo.transpose %y, dims = [0, 2, 3, 1] : (tensor<2x4x6x6xf32>) -> tensor<2x6x6x4xf32>
  return %t, %y : tensor<2x6x6x4xf32>, tensor<2x4x6x6xf32>
}
