// RUN: fxla-opt %s --split-input-file --fxla-vjp | FileCheck %s

// VJP rules of the nn family (lowering/autodiff/nn.py): convolution, softmax, log_softmax, layer_norm.

// conv: the input's cotangent is the transposed convolution (output_padding restores the input column the strided
// windows never reached); the weight's is a convolution of the input (channels as batch, batch as features)
// with the cotangent as kernel (dilated by the stride), its extra tap cut off; the bias's is the cotangent
// summed over all dims but the channels.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<2x6x5x4xf32>, %[[X:.+]]: tensor<2x4x9x8xf32>, %[[W:.+]]: tensor<6x4x3x3xf32>)
// CHECK:         %[[DX:.+]] = fxla.conv %[[CT]], %[[W]] {stride = [2, 2], padding = [1, 1], dilation = [1, 1], groups = 1, transposed = true, output_padding = [0, 1]}
// CHECK:         %[[K:.+]] = fxla.permute %[[CT]] {dims = [1, 0, 2, 3]} : tensor<2x6x5x4xf32> -> tensor<6x2x5x4xf32>
// CHECK:         %[[C:.+]] = fxla.conv %{{.+}}, %[[K]] {stride = [1, 1], padding = [1, 1], dilation = [2, 2], groups = 1, transposed = false{{.*}}} : tensor<4x2x9x8xf32>, tensor<6x2x5x4xf32> -> tensor<4x6x3x4xf32>
// CHECK:         %[[CUT:.+]] = fxla.slice %[[C]] {start = [0, 0, 0, 0], limit = [4, 6, 3, 3]
// CHECK:         %[[DW:.+]] = fxla.permute %[[CUT]] {dims = [1, 0, 2, 3]} : tensor<4x6x3x3xf32> -> tensor<6x4x3x3xf32>
// CHECK:         %[[DB:.+]] = fxla.sum %[[CT]] {dims = [0, 2, 3], keepdim = false}
// CHECK:         return %[[DX]], %[[DW]], %[[DB]]
func.func @main(%x: tensor<2x4x9x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>) -> tensor<2x6x5x4xf32> {
  %0 = "fxla.conv"(%x, %w, %b) {operandSegmentSizes = array<i32: 1, 1, 1>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x4x9x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32>) -> tensor<2x6x5x4xf32>
  return %0 : tensor<2x6x5x4xf32>
}

// -----

// A depthwise conv (1-D, channel multiplier 2): the weight's cotangent is a sum over the 2 kernel taps, each
// the strided window of the padded input (start: tap * dilation) times the cotangent, summed over batch and
// positions; the taps are joined along the kernel dim.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<2x6x3xf32>, %[[X:.+]]: tensor<2x3x6xf32>, %[[W:.+]]: tensor<6x1x2xf32>)
// CHECK:         %[[DX:.+]] = fxla.conv %[[CT]], %[[W]] {stride = [2], padding = [1], dilation = [2], groups = 3, transposed = true, output_padding = [1]}
// CHECK:         %[[XP:.+]] = fxla.pad %[[X]] {low = [0, 0, 1], high = [0, 0, 1]
// CHECK:         %[[G:.+]] = fxla.reshape %[[CT]] {shape = [2, 3, 2, 3]}
// CHECK:         fxla.slice %[[XP]] {start = [0, 0, 0], limit = [2, 3, 5], stride = [1, 1, 2]}
// CHECK:         %[[P0:.+]] = fxla.mul %{{.+}}, %[[G]] : tensor<2x3x1x3xf32>, tensor<2x3x2x3xf32> -> tensor<2x3x2x3xf32>
// CHECK:         fxla.sum %[[P0]] {dims = [0, 3], keepdim = false} : tensor<2x3x2x3xf32> -> tensor<3x2xf32>
// CHECK:         fxla.slice %[[XP]] {start = [0, 0, 2], limit = [2, 3, 7], stride = [1, 1, 2]}
// CHECK:         %[[DW:.+]] = fxla.concat %{{.+}}, %{{.+}} {dim = 2} : tensor<6x1x1xf32>, tensor<6x1x1xf32> -> tensor<6x1x2xf32>
// CHECK:         return %[[DX]], %[[DW]]
func.func @main(%x: tensor<2x3x6xf32>, %w: tensor<6x1x2xf32>) -> tensor<2x6x3xf32> {
  %0 = "fxla.conv"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>, stride = array<i64: 2>, padding = array<i64: 1>, dilation = array<i64: 2>, groups = 3 : i64} : (tensor<2x3x6xf32>, tensor<6x1x2xf32>) -> tensor<2x6x3xf32>
  return %0 : tensor<2x6x3xf32>
}

// -----

// A grouped transposed conv: the input's cotangent is the plain convolution with the same weight; the weight's
// is the plain convolution's weight gradient with the cotangent as its input and the input as its cotangent:
// per tap, a matmul batched over the 2 groups ([g, Cout/g, N*P] x [g, N*P, Cin/g]).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<1x6x10x9xf32>, %[[X:.+]]: tensor<1x4x5x4xf32>, %[[W:.+]]: tensor<4x3x3x2xf32>)
// CHECK:         %[[DX:.+]] = fxla.conv %[[CT]], %[[W]] {stride = [2, 2], padding = [1, 0], dilation = [1, 1], groups = 2, transposed = false{{.*}}} : tensor<1x6x10x9xf32>, tensor<4x3x3x2xf32> -> tensor<1x4x5x4xf32>
// CHECK:         %[[CP:.+]] = fxla.pad %[[CT]] {low = [0, 0, 1, 0], high = [0, 0, 1, 0]
// CHECK:         fxla.slice %[[CP]] {start = [0, 0, 0, 0], limit = [1, 6, 9, 7], stride = [1, 1, 2, 2]}
// CHECK:         fxla.matmul %{{.+}}, %{{.+}} : tensor<2x2x20xf32>, tensor<2x20x3xf32> -> tensor<2x2x3xf32>
// CHECK:         %[[J:.+]] = fxla.concat {{.*}} {dim = 2} : {{.*}} -> tensor<4x3x6xf32>
// CHECK:         %[[DW:.+]] = fxla.reshape %[[J]] {shape = [4, 3, 3, 2]}
// CHECK:         return %[[DX]], %[[DW]] : tensor<1x4x5x4xf32>, tensor<4x3x3x2xf32>
func.func @main(%x: tensor<1x4x5x4xf32>, %w: tensor<4x3x3x2xf32>) -> tensor<1x6x10x9xf32> {
  %0 = "fxla.conv"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>, stride = array<i64: 2, 2>, padding = array<i64: 1, 0>, dilation = array<i64: 1, 1>, groups = 2 : i64, transposed = true, output_padding = array<i64: 1, 1>} : (tensor<1x4x5x4xf32>, tensor<4x3x3x2xf32>) -> tensor<1x6x10x9xf32>
  return %0 : tensor<1x6x10x9xf32>
}

// -----

// softmax: y * (g - sum(g * y)) along the softmax dim, from the saved result y.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[Y:.+]]: tensor<2x5xf32>, %[[G:.+]]: tensor<2x5xf32>)
// CHECK:         %[[GY:.+]] = fxla.mul %[[G]], %[[Y]]
// CHECK:         %[[S:.+]] = fxla.sum %[[GY]] {dims = [-1], keepdim = true} : tensor<2x5xf32> -> tensor<2x1xf32>
// CHECK:         %[[D:.+]] = fxla.sub %[[G]], %[[S]]
// CHECK:         %[[DX:.+]] = fxla.mul %[[Y]], %[[D]]
// CHECK:         return %[[DX]]
func.func @main(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = "fxla.softmax"(%x) {dim = -1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// log_softmax of f16: g - exp(y) * sum(g), computed in f32 and rounded once.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[Y:.+]]: tensor<3x4xf16>, %[[G:.+]]: tensor<3x4xf16>) -> tensor<3x4xf16>
// CHECK:         %[[Y32:.+]] = fxla.convert %[[Y]] : tensor<3x4xf16> -> tensor<3x4xf32>
// CHECK:         %[[S:.+]] = fxla.sum %{{.+}} {dims = [0], keepdim = true} : tensor<3x4xf32> -> tensor<1x4xf32>
// CHECK:         %[[E:.+]] = fxla.exp %[[Y32]]
// CHECK:         fxla.mul %[[E]], %[[S]]
// CHECK:         %[[DX:.+]] = fxla.convert %{{.+}} : tensor<3x4xf32> -> tensor<3x4xf16>
// CHECK:         return %[[DX]]
func.func @main(%x: tensor<3x4xf16>) -> tensor<3x4xf16> {
  %0 = "fxla.log_softmax"(%x) {dim = 0 : i64} : (tensor<3x4xf16>) -> tensor<3x4xf16>
  return %0 : tensor<3x4xf16>
}

// -----

// layer_norm: the statistics recomputed from the input; the weight's and the bias's cotangents are summed over
// the leading (unnormalised) dims.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[G:.+]]: tensor<2x3x4xf32>, %[[X:.+]]: tensor<2x3x4xf32>, %[[W:.+]]: tensor<4xf32>)
// CHECK:         %[[R:.+]] = fxla.rsqrt
// CHECK:         %[[GW:.+]] = fxla.mul %[[G]], %[[W]]
// CHECK:         %[[DX:.+]] = fxla.mul %[[R]], %{{.+}} : tensor<2x3x1xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
// CHECK:         %[[DW:.+]] = fxla.sum %{{.+}} {dims = [0, 1], keepdim = false} : tensor<2x3x4xf32> -> tensor<4xf32>
// CHECK:         %[[DB:.+]] = fxla.sum %[[G]] {dims = [0, 1], keepdim = false}
// CHECK:         return %[[DX]], %[[DW]], %[[DB]]
func.func @main(%x: tensor<2x3x4xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x3x4xf32> {
  %0 = "fxla.layer_norm"(%x, %w, %b) {operandSegmentSizes = array<i32: 1, 1, 1>, normalized_rank = 1 : i64, eps = 1.0e-05 : f64} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}
