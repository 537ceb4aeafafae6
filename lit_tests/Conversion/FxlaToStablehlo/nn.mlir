// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// Full conversion: no fxla op or attribute is left anywhere in the output (each case below also ends
// with a CHECK-NOT, which only covers the lines after its last match).
// NOFXLA-NOT: fxla

// The nn family (dialects/fxla/ops_nn.py, lowering/patterns/nn.py) -> StableHLO: convolution, softmax and
// layer normalisation.

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
