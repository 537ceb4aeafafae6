// RUN: fxla-opt %s --split-input-file --fxla-vjp | FileCheck %s

// VJP rules of the shape family (lowering/autodiff/shape.py): each moves the cotangent back the way its op
// moved the elements.

// concat: each float input gets its part of the cotangent (an f16 input's converted back: concat promotes);
// the integer input gets none (the backward returns gradients of the float arguments only).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<2x6xf32>) -> (tensor<2x3xf32>, tensor<2x1xf16>)
// CHECK:         %[[A:.+]] = fxla.slice %[[CT]] {start = [0, 0], limit = [2, 3], stride = [1, 1]}
// CHECK:         %[[B:.+]] = fxla.slice %[[CT]] {start = [0, 3], limit = [2, 4], stride = [1, 1]}
// CHECK:         %[[B16:.+]] = fxla.convert %[[B]] : tensor<2x1xf32> -> tensor<2x1xf16>
// CHECK:         return %[[A]], %[[B16]]
func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x1xf16>, %k: tensor<2x2xi64>) -> tensor<2x6xf32> {
  %0 = "fxla.concat"(%a, %b, %k) {dim = -1 : i64} : (tensor<2x3xf32>, tensor<2x1xf16>, tensor<2x2xi64>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// flip: the cotangent flipped along the same (negative) dims.
// CHECK-LABEL: func.func @backward
// CHECK:         %[[G:.+]] = fxla.flip %arg0 {dims = [-1, 0]}
// CHECK:         return %[[G]]
func.func @main(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = "fxla.flip"(%x) {dims = array<i64: -1, 0>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// pad: the cotangent padded by the negated amounts, with zeros: the padding is cut off, what the negative
// padding cropped gets zero; the fill value 1.5 gets no gradient.
// CHECK-LABEL: func.func @backward
// CHECK:         %[[G:.+]] = fxla.pad %arg0 {low = [-1, 1], high = [0, 1], value = 0.000000e+00} : tensor<5x4xf32> -> tensor<4x6xf32>
// CHECK:         return %[[G]]
func.func @main(%x: tensor<4x6xf32>) -> tensor<5x4xf32> {
  %0 = "fxla.pad"(%x) {low = array<i64: 1, -1>, high = array<i64: 0, -1>, value = 1.5 : f64} : (tensor<4x6xf32>) -> tensor<5x4xf32>
  return %0 : tensor<5x4xf32>
}

// -----

// expand: summed over the new leading dim and the broadcast size-1 dim, reshaped back.
// CHECK-LABEL: func.func @backward
// CHECK:         %[[S:.+]] = fxla.sum %arg0 {dims = [0, 2], keepdim = false} : tensor<2x3x4xf32> -> tensor<3xf32>
// CHECK:         %[[G:.+]] = fxla.reshape %[[S]] {shape = [3, 1]}
// CHECK:         return %[[G]]
func.func @main(%x: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %0 = "fxla.expand"(%x) {shape = array<i64: 2, 3, 4>} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// permute with negative dims: the inverse permutation.
// CHECK-LABEL: func.func @backward
// CHECK:         %[[G:.+]] = fxla.permute %arg0 {dims = [1, 2, 0]} : tensor<4x2x3xf32> -> tensor<2x3x4xf32>
// CHECK:         return %[[G]]
func.func @main(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = "fxla.permute"(%x) {dims = array<i64: -1, 0, -2>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// reshape: reshaped back.
// CHECK-LABEL: func.func @backward
// CHECK:         %[[G:.+]] = fxla.reshape %arg0 {shape = [2, 3]} : tensor<6xf32> -> tensor<2x3xf32>
// CHECK:         return %[[G]]
func.func @main(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %0 = "fxla.reshape"(%x) {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

// keep_history (a tensor changed in place under torch.no_grad()): the whole cotangent goes to the history, the
// new value gets zeros.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[SAVED:.+]]: tensor<3xf32>, %[[CT:.+]]: tensor<3xf32>)
// CHECK:         %[[G:.+]] = fxla.add
// CHECK:         %[[ZERO:.+]] = fxla.expand
// CHECK:         return %[[ZERO]], %[[G]]
func.func @main(%new: tensor<3xf32>, %old: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "fxla.keep_history"(%new, %old) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = "fxla.mul"(%0, %0) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}
