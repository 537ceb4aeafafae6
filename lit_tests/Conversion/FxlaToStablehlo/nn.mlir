// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// Full conversion: no fxla op or attribute is left anywhere in the output (each case below also ends
// with a CHECK-NOT, which only covers the lines after its last match).
// NOFXLA-NOT: fxla

// Structured fxla ops -> StableHLO: contractions, convolution, pooling, normalisation, reductions, layout.

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

// -----

// NCHW x OIHW -> NCHW; stride/padding/dilation/groups map onto the window and feature_group_count;
// the bias broadcasts along the feature dim (1).
// CHECK-LABEL: func.func @conv2d
// CHECK:         [[C:%.+]] = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]
// CHECK-SAME:      window = {stride = [2, 2], pad = {{\[\[}}1, 1], [1, 1]], rhs_dilate = [2, 2]}
// CHECK-SAME:      {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<2x4x16x16xf32>, tensor<8x2x3x3xf32>) -> tensor<2x8x7x7xf32>
// CHECK:         [[B:%.+]] = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<8xf32>) -> tensor<2x8x7x7xf32>
// CHECK:         stablehlo.add [[C]], [[B]] : tensor<2x8x7x7xf32>
// CHECK-NOT:     fxla.
func.func @conv2d(%x: tensor<2x4x16x16xf32>, %w: tensor<8x2x3x3xf32>, %b: tensor<8xf32>) -> tensor<2x8x7x7xf32> {
  %0 = "fxla.conv"(%x, %w, %b) {operandSegmentSizes = array<i32: 1, 1, 1>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 2, 2>, groups = 2 : i64} : (tensor<2x4x16x16xf32>, tensor<8x2x3x3xf32>, tensor<8xf32>) -> tensor<2x8x7x7xf32>
  return %0 : tensor<2x8x7x7xf32>
}

// -----

// CHECK-LABEL: func.func @conv2d_no_bias
// CHECK:         [[C:%.+]] = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = {{\[\[}}0, 0], [0, 0]], rhs_dilate = [1, 1]}
// CHECK-SAME:      feature_group_count = 1 : i64
// CHECK-NEXT:    return [[C]] : tensor<1x4x6x6xf32>
// CHECK-NOT:     fxla.
func.func @conv2d_no_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = "fxla.conv"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>, stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// max_pool2d is a reduce_window with a maximum body and a -inf init; N and C get unit windows.
// CHECK-LABEL: func.func @max_pool2d
// CHECK:         [[INIT:%.+]] = stablehlo.constant dense<0xFF800000> : tensor<f32>
// CHECK:         "stablehlo.reduce_window"(%arg0, [[INIT]]) <{padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>}>
// CHECK:         ^bb0([[L:%.+]]: tensor<f32>, [[R:%.+]]: tensor<f32>):
// CHECK-NEXT:      [[M:%.+]] = stablehlo.maximum [[L]], [[R]] : tensor<f32>
// CHECK-NEXT:      stablehlo.return [[M]] : tensor<f32>
// CHECK:         (tensor<2x3x8x8xf32>, tensor<f32>) -> tensor<2x3x4x4xf32>
// CHECK-NOT:     fxla.
func.func @max_pool2d(%x: tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32> {
  %0 = "fxla.max_pool2d"(%x) {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = false} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
  return %0 : tensor<2x3x4x4xf32>
}

// -----

// Unbatched CHW input with padding and ceil_mode; padding covers the extra (ceil) window.
// CHECK-LABEL: func.func @max_pool2d_ceil_chw
// CHECK:         "stablehlo.reduce_window"(%arg0, %{{.+}}) <{padding = dense<{{\[\[}}0, 0], [1, 1], [1, 1]]> : tensor<3x2xi64>
// CHECK-SAME:      window_dimensions = array<i64: 1, 3, 3>, window_strides = array<i64: 1, 2, 2>
// CHECK:         stablehlo.maximum
// CHECK:         (tensor<3x7x7xf32>, tensor<f32>) -> tensor<3x4x4xf32>
// CHECK-NOT:     fxla.
func.func @max_pool2d_ceil_chw(%x: tensor<3x7x7xf32>) -> tensor<3x4x4xf32> {
  %0 = "fxla.max_pool2d"(%x) {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = true} : (tensor<3x7x7xf32>) -> tensor<3x4x4xf32>
  return %0 : tensor<3x4x4xf32>
}

// -----

// Stable softmax: subtract the row max, exponentiate, divide by the row sum.
// CHECK-LABEL: func.func @softmax
// CHECK:         [[MAX:%.+]] = stablehlo.reduce(%arg0 init: %{{.+}}) applies stablehlo.maximum across dimensions = [1] : (tensor<2x10xf32>, tensor<f32>) -> tensor<2xf32>
// CHECK:         [[MAXB:%.+]] = stablehlo.broadcast_in_dim [[MAX]], dims = [0] : (tensor<2xf32>) -> tensor<2x10xf32>
// CHECK:         [[SH:%.+]] = stablehlo.subtract %arg0, [[MAXB]] : tensor<2x10xf32>
// CHECK:         [[E:%.+]] = stablehlo.exponential [[SH]] : tensor<2x10xf32>
// CHECK:         [[SUM:%.+]] = stablehlo.reduce([[E]] init: %{{.+}}) applies stablehlo.add across dimensions = [1]
// CHECK:         [[SUMB:%.+]] = stablehlo.broadcast_in_dim [[SUM]], dims = [0] : (tensor<2xf32>) -> tensor<2x10xf32>
// CHECK:         stablehlo.divide [[E]], [[SUMB]] : tensor<2x10xf32>
// CHECK-NOT:     fxla.
func.func @softmax(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  %0 = "fxla.softmax"(%x) {dim = -1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  return %0 : tensor<2x10xf32>
}

// -----

// log_softmax along dim 0: shifted - log(sum(exp(shifted))).
// CHECK-LABEL: func.func @log_softmax
// CHECK:         stablehlo.reduce(%arg0 init: %{{.+}}) applies stablehlo.maximum across dimensions = [0] : (tensor<2x10xf32>, tensor<f32>) -> tensor<10xf32>
// CHECK:         [[SH:%.+]] = stablehlo.subtract %arg0, %{{.+}} : tensor<2x10xf32>
// CHECK:         [[SUMB:%.+]] = stablehlo.broadcast_in_dim %{{.+}}, dims = [1] : (tensor<10xf32>) -> tensor<2x10xf32>
// CHECK:         [[LOG:%.+]] = stablehlo.log [[SUMB]] : tensor<2x10xf32>
// CHECK:         stablehlo.subtract [[SH]], [[LOG]] : tensor<2x10xf32>
// CHECK-NOT:     fxla.
func.func @log_softmax(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  %0 = "fxla.log_softmax"(%x) {dim = 0 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  return %0 : tensor<2x10xf32>
}

// -----

// Half-precision softmax computes in f32 and converts back once.
// CHECK-LABEL: func.func @softmax_f16
// CHECK:         [[X:%.+]] = stablehlo.convert %arg0 : (tensor<2x3xf16>) -> tensor<2x3xf32>
// CHECK:         stablehlo.reduce([[X]] init: %{{.+}}) applies stablehlo.maximum
// CHECK:         [[D:%.+]] = stablehlo.divide %{{.+}}, %{{.+}} : tensor<2x3xf32>
// CHECK:         stablehlo.convert [[D]] : (tensor<2x3xf32>) -> tensor<2x3xf16>
// CHECK-NOT:     fxla.
func.func @softmax_f16(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %0 = "fxla.softmax"(%x) {dim = 1 : i64} : (tensor<2x3xf16>) -> tensor<2x3xf16>
  return %0 : tensor<2x3xf16>
}

// -----

// layer_norm over the last dim: mean, centred variance, rsqrt(var + eps), then weight and bias.
// CHECK-LABEL: func.func @layer_norm
// CHECK:         [[S:%.+]] = stablehlo.reduce(%arg0 init: %{{.+}}) applies stablehlo.add across dimensions = [2] : (tensor<2x5x8xf32>, tensor<f32>) -> tensor<2x5xf32>
// CHECK:         [[N:%.+]] = stablehlo.constant dense<8.000000e+00> : tensor<2x5xf32>
// CHECK:         stablehlo.divide [[S]], [[N]] : tensor<2x5xf32>
// CHECK:         [[CEN:%.+]] = stablehlo.subtract %arg0, %{{.+}} : tensor<2x5x8xf32>
// CHECK:         [[EPS:%.+]] = stablehlo.constant dense<9.99999974E-6> : tensor<2x5x8xf32>
// CHECK:         [[VE:%.+]] = stablehlo.add %{{.+}}, [[EPS]] : tensor<2x5x8xf32>
// CHECK:         [[RS:%.+]] = stablehlo.rsqrt [[VE]] : tensor<2x5x8xf32>
// CHECK:         [[NORM:%.+]] = stablehlo.multiply [[CEN]], [[RS]] : tensor<2x5x8xf32>
// CHECK:         [[W:%.+]] = stablehlo.broadcast_in_dim %arg1, dims = [2] : (tensor<8xf32>) -> tensor<2x5x8xf32>
// CHECK:         [[Y:%.+]] = stablehlo.multiply [[NORM]], [[W]] : tensor<2x5x8xf32>
// CHECK:         [[B:%.+]] = stablehlo.broadcast_in_dim %arg2, dims = [2] : (tensor<8xf32>) -> tensor<2x5x8xf32>
// CHECK:         stablehlo.add [[Y]], [[B]] : tensor<2x5x8xf32>
// CHECK-NOT:     fxla.
func.func @layer_norm(%x: tensor<2x5x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x5x8xf32> {
  %0 = "fxla.layer_norm"(%x, %w, %b) {operandSegmentSizes = array<i32: 1, 1, 1>, normalized_rank = 1 : i64, eps = 1.0e-05 : f64} : (tensor<2x5x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  return %0 : tensor<2x5x8xf32>
}

// -----

// Without weight/bias, over the last two dims, in bf16 (computed in f32).
// CHECK-LABEL: func.func @layer_norm_no_affine
// CHECK:         [[X:%.+]] = stablehlo.convert %arg0 : (tensor<2x4x4xbf16>) -> tensor<2x4x4xf32>
// CHECK:         stablehlo.reduce([[X]] init: %{{.+}}) applies stablehlo.add across dimensions = [1, 2] : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2xf32>
// CHECK:         [[RS:%.+]] = stablehlo.rsqrt %{{.+}} : tensor<2x4x4xf32>
// CHECK-NEXT:    [[NORM:%.+]] = stablehlo.multiply %{{.+}}, [[RS]] : tensor<2x4x4xf32>
// CHECK-NEXT:    [[R:%.+]] = stablehlo.convert [[NORM]] : (tensor<2x4x4xf32>) -> tensor<2x4x4xbf16>
// CHECK-NEXT:    return [[R]]
// CHECK-NOT:     fxla.
func.func @layer_norm_no_affine(%x: tensor<2x4x4xbf16>) -> tensor<2x4x4xbf16> {
  %0 = "fxla.layer_norm"(%x) {operandSegmentSizes = array<i32: 1, 0, 0>, normalized_rank = 2 : i64, eps = 1.0e-05 : f64} : (tensor<2x4x4xbf16>) -> tensor<2x4x4xbf16>
  return %0 : tensor<2x4x4xbf16>
}

// -----

// keepdim reduces then reshapes the unit dim back in.
// CHECK-LABEL: func.func @sum_keepdim
// CHECK:         [[S:%.+]] = stablehlo.reduce(%arg0 init: %{{.+}}) applies stablehlo.add across dimensions = [1] : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x4xf32>
// CHECK:         [[R:%.+]] = stablehlo.reshape [[S]] : (tensor<2x4xf32>) -> tensor<2x1x4xf32>
// CHECK:         return [[R]]
// CHECK-NOT:     fxla.
func.func @sum_keepdim(%x: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
  %0 = "fxla.sum"(%x) {dims = array<i64: 1>, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  return %0 : tensor<2x1x4xf32>
}

// -----

// Empty dims reduce everything; integer sums accumulate in i64 (torch.sum).
// CHECK-LABEL: func.func @sum_all_int
// CHECK:         [[X:%.+]] = stablehlo.convert %arg0 : (tensor<2x3xi32>) -> tensor<2x3xi64>
// CHECK:         [[Z:%.+]] = stablehlo.constant dense<0> : tensor<i64>
// CHECK:         stablehlo.reduce([[X]] init: [[Z]]) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x3xi64>, tensor<i64>) -> tensor<i64>
// CHECK-NOT:     fxla.
func.func @sum_all_int(%x: tensor<2x3xi32>) -> tensor<i64> {
  %0 = "fxla.sum"(%x) {dims = array<i64>, keepdim = false} : (tensor<2x3xi32>) -> tensor<i64>
  return %0 : tensor<i64>
}

// -----

// Negative dims are normalised and sorted; the mean divides by the reduced element count (3 * 4).
// CHECK-LABEL: func.func @mean
// CHECK:         [[S:%.+]] = stablehlo.reduce(%arg0 init: %{{.+}}) applies stablehlo.add across dimensions = [1, 2] : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2xf32>
// CHECK:         [[N:%.+]] = stablehlo.constant dense<1.200000e+01> : tensor<2xf32>
// CHECK:         [[M:%.+]] = stablehlo.divide [[S]], [[N]] : tensor<2xf32>
// CHECK:         return [[M]] : tensor<2xf32>
// CHECK-NOT:     fxla.
func.func @mean(%x: tensor<2x3x4xf32>) -> tensor<2xf32> {
  %0 = "fxla.mean"(%x) {dims = array<i64: -1, 1>, keepdim = false} : (tensor<2x3x4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @mean_keepdim
// CHECK:         [[M:%.+]] = stablehlo.divide %{{.+}}, %{{.+}} : tensor<2x3xf32>
// CHECK:         [[R:%.+]] = stablehlo.reshape [[M]] : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
// CHECK:         return [[R]]
// CHECK-NOT:     fxla.
func.func @mean_keepdim(%x: tensor<2x3x4xf32>) -> tensor<2x3x1xf32> {
  %0 = "fxla.mean"(%x) {dims = array<i64: -1>, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  return %0 : tensor<2x3x1xf32>
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

// fxla.conv is rank-generic: a 1-D convolution has one spatial dim in the dimension numbers.
// CHECK-LABEL: func.func @conv1d
// CHECK:         stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {stride = [2], pad = {{\[\[}}1, 1]], rhs_dilate = [1]}
// CHECK-SAME:      (tensor<2x4x9xf32>, tensor<6x4x3xf32>) -> tensor<2x6x5xf32>
// CHECK-NOT:     fxla.
func.func @conv1d(%x: tensor<2x4x9xf32>, %w: tensor<6x4x3xf32>) -> tensor<2x6x5xf32> {
  %0 = "fxla.conv"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>, stride = array<i64: 2>, padding = array<i64: 1>, dilation = array<i64: 1>, groups = 1 : i64} : (tensor<2x4x9xf32>, tensor<6x4x3xf32>) -> tensor<2x6x5xf32>
  return %0 : tensor<2x6x5xf32>
}

// -----

// CHECK-LABEL: func.func @conv3d
// CHECK:         stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, f, 0, 1, 2]x[o, i, 0, 1, 2]->[b, f, 0, 1, 2]
// CHECK-SAME:      (tensor<1x2x4x5x6xf32>, tensor<4x2x3x3x3xf32>) -> tensor<1x4x4x5x6xf32>
// CHECK-NOT:     fxla.
func.func @conv3d(%x: tensor<1x2x4x5x6xf32>, %w: tensor<4x2x3x3x3xf32>) -> tensor<1x4x4x5x6xf32> {
  %0 = "fxla.conv"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>, stride = array<i64: 1, 1, 1>, padding = array<i64: 1, 1, 1>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x2x4x5x6xf32>, tensor<4x2x3x3x3xf32>) -> tensor<1x4x4x5x6xf32>
  return %0 : tensor<1x4x4x5x6xf32>
}

// -----

// A transposed convolution: the kernel is flipped spatially, its [C, O/g] dims swapped per group, and the
// input dilated by the stride (lhs_dilate), padded by d*(k-1)-p low and that + output_padding high.
// CHECK-LABEL: func.func @conv_transpose2d
// CHECK:         [[R:%.+]] = stablehlo.reverse %arg1, dims = [2, 3] : tensor<4x3x3x3xf32>
// CHECK:         [[T:%.+]] = stablehlo.transpose
// CHECK:         stablehlo.convolution(%arg0, {{%.+}}) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = {{\[\[}}1, 2], [1, 2]], lhs_dilate = [2, 2], rhs_dilate = [1, 1]}
// CHECK-SAME:      (tensor<2x4x5x6xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x10x12xf32>
// CHECK-NOT:     fxla.
func.func @conv_transpose2d(%x: tensor<2x4x5x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x6x10x12xf32> {
  %0 = "fxla.conv"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 2 : i64, transposed = true, output_padding = array<i64: 1, 1>} : (tensor<2x4x5x6xf32>, tensor<4x3x3x3xf32>) -> tensor<2x6x10x12xf32>
  return %0 : tensor<2x6x10x12xf32>
}

// -----

// avg_pool: a summing reduce_window, divided by torch's per-window counts (a constant; with
// count_include_pad=false the border windows count only real elements).
// CHECK-LABEL: func.func @avg_pool2d
// CHECK:         [[S:%.+]] = "stablehlo.reduce_window"(%arg0, %{{.+}}) <{padding = dense<{{\[\[}}0, 0], [0, 0], [1, 1], [1, 1]]>
// CHECK:           stablehlo.add
// CHECK:         [[C:%.+]] = stablehlo.constant dense<{{\[\[}}4.000000e+00, 6.000000e+00, 4.000000e+00]
// CHECK:         [[B:%.+]] = stablehlo.broadcast_in_dim [[C]], dims = [2, 3]
// CHECK:         stablehlo.divide [[S]], [[B]] : tensor<1x2x3x3xf32>
// CHECK-NOT:     fxla.
func.func @avg_pool2d(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %0 = "fxla.avg_pool"(%x) {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false, divisor_override = 0 : i64} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// Half-precision average pooling sums in f32 and rounds once.
// CHECK-LABEL: func.func @avg_pool1d_bf16
// CHECK:         stablehlo.convert %arg0 : (tensor<2x8xbf16>) -> tensor<2x8xf32>
// CHECK:         "stablehlo.reduce_window"
// CHECK:         stablehlo.divide
// CHECK:         stablehlo.convert %{{.+}} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// CHECK-NOT:     fxla.
func.func @avg_pool1d_bf16(%x: tensor<2x8xbf16>) -> tensor<2x4xbf16> {
  %0 = "fxla.avg_pool"(%x) {kernel_size = array<i64: 2>, stride = array<i64: 2>, padding = array<i64: 0>} : (tensor<2x8xbf16>) -> tensor<2x4xbf16>
  return %0 : tensor<2x4xbf16>
}
