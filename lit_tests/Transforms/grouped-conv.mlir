// RUN: fxla-opt %s --split-input-file --fxla-grouped-conv | FileCheck %s

// fxla-grouped-conv writes a grouped or depthwise convolution as a sum over its kernel taps of strided slices of
// the padded input times the tap's weights (XLA CPU's grouped convolution is 20-40x slower than this form).

// Depthwise 3x3, stride 2, padding 1, on a function argument (row-major [N, C, H, W]): a pad, then per tap a
// strided slice times that tap's per-channel weights, in the argument's own order (no transpose of the input).
// The kernel is transposed once to tap-major [3, 3, 1, C] (fxla-param-layout stores a weight so), so each tap's
// C weights are one contiguous slice.
// CHECK-LABEL: func.func @depthwise
// CHECK-NOT:     stablehlo.transpose %arg0
// CHECK:         %[[P:.+]] = stablehlo.pad %arg0, %{{.+}}, low = [0, 0, 1, 1], high = [0, 0, 1, 1]
// CHECK:         %[[K:.+]] = stablehlo.transpose %arg1, dims = [2, 3, 1, 0] : (tensor<4x1x3x3xf32>) -> tensor<3x3x1x4xf32>
// CHECK:         %[[K0:.+]] = stablehlo.slice %[[K]] [0:1, 0:1, 0:1, 0:4]
// CHECK:         %[[S:.+]] = stablehlo.slice %[[P]] [0:2, 0:4, 0:7:2, 0:7:2]
// CHECK:         %[[R:.+]] = stablehlo.reshape %[[K0]] : (tensor<1x1x1x4xf32>) -> tensor<4xf32>
// CHECK:         %[[W:.+]] = stablehlo.broadcast_in_dim %[[R]], dims = [1] : (tensor<4xf32>) -> tensor<2x4x4x4xf32>
// CHECK:         stablehlo.multiply %[[S]], %[[W]] : tensor<2x4x4x4xf32>
// CHECK:         stablehlo.slice %[[P]] [0:2, 0:4, 2:9:2, 2:9:2]
// CHECK-NOT:     stablehlo.transpose %arg0
// CHECK-NOT:     stablehlo.convolution
func.func @depthwise(%x: tensor<2x4x8x8xf32>, %k: tensor<4x1x3x3xf32>) -> tensor<2x4x4x4xf32> {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 2], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 4 : i64} : (tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x4x4xf32>
  return %0 : tensor<2x4x4x4xf32>
}

// -----

// A depthwise convolution's bias add (ConvNeXt's 7x7) becomes the first term of the sum over the taps, so the sum
// ends with a tap (XLA CPU then computes the taps once instead of again in each consumer: a layer norm has three).
// CHECK-LABEL: func.func @depthwise_bias
// CHECK:         %[[B:.+]] = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<4xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NEXT:    %[[S1:.+]] = stablehlo.add %[[B]], %{{.+}} : tensor<1x4x6x6xf32>
// CHECK-NEXT:    stablehlo.add %[[S1]], %{{.+}} : tensor<1x4x6x6xf32>
// CHECK-NOT:     stablehlo.broadcast_in_dim %arg2
// CHECK:         return
func.func @depthwise_bias(%x: tensor<1x4x6x6xf32>, %k: tensor<4x1x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 4 : i64} : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %2 = stablehlo.add %1, %0 : tensor<1x4x6x6xf32>
  return %2 : tensor<1x4x6x6xf32>
}

// -----

// A convolution result used besides its bias add keeps the add after the sum.
// CHECK-LABEL: func.func @depthwise_bias_shared
// CHECK:         %[[B:.+]] = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<4xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NEXT:    %[[Y:.+]] = stablehlo.add %[[SUM:.+]], %[[B]] : tensor<1x4x6x6xf32>
// CHECK:         return %[[SUM]], %[[Y]]
func.func @depthwise_bias_shared(%x: tensor<1x4x6x6xf32>, %k: tensor<4x1x3x3xf32>, %b: tensor<4xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 4 : i64} : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %2 = stablehlo.add %0, %1 : tensor<1x4x6x6xf32>
  return %0, %2 : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}

// -----

// After a convolution (MobileNet's expand 1x1, then ReLU), channels-last: a transpose to [N, H, W, C] (a bitcast
// of XLA CPU's convolution layout), each tap's slice broadcast to [N, H, W, G, Mo] and reshaped so input channel
// c feeds outputs 2c and 2c+1 (a channel multiplier of 2; dilation 2, no padding); transposed back at the end.
// CHECK-LABEL: func.func @after_conv
// CHECK:         %[[C:.+]] = stablehlo.convolution
// CHECK:         %[[T:.+]] = stablehlo.transpose %{{.+}}, dims = [0, 2, 3, 1] : (tensor<1x4x9x9xf32>) -> tensor<1x9x9x4xf32>
// CHECK:         %[[S:.+]] = stablehlo.slice %[[T]] [0:1, 0:5, 0:5, 0:4]
// CHECK:         %[[B:.+]] = stablehlo.broadcast_in_dim %[[S]], dims = [0, 1, 2, 3] : (tensor<1x5x5x4xf32>) -> tensor<1x5x5x4x2xf32>
// CHECK:         stablehlo.reshape %[[B]] : (tensor<1x5x5x4x2xf32>) -> tensor<1x5x5x8xf32>
// CHECK:         stablehlo.slice %[[T]] [0:1, 4:9, 4:9, 0:4]
// CHECK:         stablehlo.transpose %{{.+}}, dims = [0, 3, 1, 2] : (tensor<1x5x5x8xf32>) -> tensor<1x8x5x5xf32>
func.func @after_conv(%x: tensor<1x4x9x9xf32>, %e: tensor<4x4x1x1xf32>, %k: tensor<8x1x3x3xf32>) -> tensor<1x8x5x5xf32> {
  %0 = stablehlo.convolution(%x, %e) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x9x9xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x9x9xf32>
  %z = stablehlo.constant dense<0.0> : tensor<1x4x9x9xf32>
  %r = stablehlo.maximum %0, %z : tensor<1x4x9x9xf32>
  %1 = stablehlo.convolution(%r, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 4 : i64} : (tensor<1x4x9x9xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x5x5xf32>
  return %1 : tensor<1x8x5x5xf32>
}

// -----

// Small groups (8 channels in 4 groups of 2, 1-D): per tap a dot_general batched over the groups, contracting the
// group width; the [G, Mo, N, P] sum is put back in [N, O, W] order once.
// CHECK-LABEL: func.func @small_groups
// CHECK:         %[[L:.+]] = stablehlo.reshape %{{.+}} : (tensor<8x2x1xf32>) -> tensor<4x2x2xf32>
// CHECK:         %[[R:.+]] = stablehlo.reshape %{{.+}} : (tensor<2x8x6xf32>) -> tensor<2x4x2x6xf32>
// CHECK:         stablehlo.dot_general %[[L]], %[[R]], batching_dims = [0] x [1], contracting_dims = [2] x [2] : (tensor<4x2x2xf32>, tensor<2x4x2x6xf32>) -> tensor<4x2x2x6xf32>
// CHECK:         %[[T:.+]] = stablehlo.transpose %{{.+}}, dims = [2, 0, 1, 3]
// CHECK:         stablehlo.reshape %[[T]] : (tensor<2x4x2x6xf32>) -> tensor<2x8x6xf32>
func.func @small_groups(%x: tensor<2x8x8xf32>, %k: tensor<8x2x3xf32>) -> tensor<2x8x6xf32> {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {stride = [1], pad = [[0, 0]], rhs_dilate = [1]} {batch_group_count = 1 : i64, feature_group_count = 4 : i64} : (tensor<2x8x8xf32>, tensor<8x2x3xf32>) -> tensor<2x8x6xf32>
  return %0 : tensor<2x8x6xf32>
}

// -----

// Left alone: a dense convolution (one group) with more than 64 output positions, a transposed one (lhs_dilation),
// a bfloat16 one.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-3: stablehlo.convolution
// CHECK-NOT:     stablehlo.slice
func.func @left_alone(%x: tensor<1x4x8x8xf32>, %k: tensor<4x4x3x3xf32>, %xl: tensor<1x4x12x12xf32>, %d: tensor<4x1x3x3xf32>, %h: tensor<1x4x8x8xbf16>, %hk: tensor<4x1x3x3xbf16>) -> (tensor<1x4x10x10xf32>, tensor<1x4x17x17xf32>, tensor<1x4x6x6xbf16>) {
  %0 = stablehlo.convolution(%xl, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x12x12xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x10x10xf32>
  %1 = stablehlo.convolution(%x, %d) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[2, 2], [2, 2]], lhs_dilate = [2, 2], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 4 : i64} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x17x17xf32>
  %2 = stablehlo.convolution(%h, %hk) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 4 : i64} : (tensor<1x4x8x8xbf16>, tensor<4x1x3x3xbf16>) -> tensor<1x4x6x6xbf16>
  return %0, %1, %2 : tensor<1x4x10x10xf32>, tensor<1x4x17x17xf32>, tensor<1x4x6x6xbf16>
}

// -----

// A dense convolution whose 3x3 kernel overhangs its 2x2 input (the end of a ResNet fed small images): im2col,
// channels-last -- the input transposed to [N, H, W, Ci] and padded, the nine [N, P, Ci] windows concatenated to
// [N, P, 9 Ci] and one dot with the kernel as [9 Ci, O] (transposed tap-major, then reshaped); the [N, H, W, O]
// result transposed back to [N, O, H, W].
// CHECK-LABEL: func.func @dense_overhanging
// CHECK:         %[[X:.+]] = stablehlo.transpose %arg0, dims = [0, 2, 3, 1] : (tensor<2x4x2x2xf32>) -> tensor<2x2x2x4xf32>
// CHECK:         %[[P:.+]] = stablehlo.pad %[[X]], %{{.+}}, low = [0, 1, 1, 0], high = [0, 1, 1, 0]
// CHECK:         %[[C:.+]] = stablehlo.concatenate {{.+}}, dim = 2 : ({{.+}}) -> tensor<2x4x36xf32>
// CHECK:         %[[K:.+]] = stablehlo.transpose %arg1, dims = [2, 3, 1, 0] : (tensor<8x4x3x3xf32>) -> tensor<3x3x4x8xf32>
// CHECK:         %[[M:.+]] = stablehlo.reshape %[[K]] : (tensor<3x3x4x8xf32>) -> tensor<36x8xf32>
// CHECK:         %[[D:.+]] = stablehlo.dot_general %[[C]], %[[M]], contracting_dims = [2] x [0] : (tensor<2x4x36xf32>, tensor<36x8xf32>) -> tensor<2x4x8xf32>
// CHECK:         %[[R:.+]] = stablehlo.reshape %[[D]] : (tensor<2x4x8xf32>) -> tensor<2x2x2x8xf32>
// CHECK:         stablehlo.transpose %[[R]], dims = [0, 3, 1, 2] : (tensor<2x2x2x8xf32>) -> tensor<2x8x2x2xf32>
// CHECK-NOT:     stablehlo.convolution
func.func @dense_overhanging(%x: tensor<2x4x2x2xf32>, %k: tensor<8x4x3x3xf32>) -> tensor<2x8x2x2xf32> {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x4x2x2xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x2x2xf32>
  return %0 : tensor<2x8x2x2xf32>
}
