// RUN: fxla-opt %s --split-input-file --fxla-vjp | FileCheck %s

// VJP rules of the linalg family (lowering/autodiff/linalg.py), and how --fxla-vjp splits a program: the
// backward takes (residuals, cotangents, the inputs it reads, the parameters it reads) -- arguments are read,
// never saved.

// matmul with a broadcast batch: dA = ct @ B^T; dB = A^T @ ct summed over the batch B was broadcast over.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<2x3x5xf32>, %[[A:.+]]: tensor<2x3x4xf32>, %[[B:.+]]: tensor<4x5xf32>)
// CHECK:         %[[BT:.+]] = fxla.permute %[[B]] {dims = [1, 0]}
// CHECK-NEXT:    %[[DA:.+]] = fxla.matmul %[[CT]], %[[BT]]
// CHECK:         %[[P:.+]] = fxla.matmul {{.*}}, %[[CT]] : tensor<2x4x3xf32>, tensor<2x3x5xf32> -> tensor<2x4x5xf32>
// CHECK-NEXT:    %[[DB:.+]] = fxla.sum %[[P]] {dims = [0], keepdim = false}
// CHECK-NEXT:    return %[[DA]], %[[DB]]
func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = "fxla.matmul"(%a, %b) : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// linear: the leading dims are flattened; dW = ct^T @ x, db = the sum of ct; the bias is not read.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<2x3x5xf32>, %[[X:.+]]: tensor<2x3x4xf32>, %[[W:.+]]: tensor<5x4xf32> {fxla.param = "fc.weight"})
// CHECK:         %[[G:.+]] = fxla.reshape %[[CT]] {shape = [6, 5]}
// CHECK:         fxla.matmul %[[G]], %[[W]] : tensor<6x5xf32>, tensor<5x4xf32> -> tensor<6x4xf32>
// CHECK:         %[[DB:.+]] = fxla.sum %[[G]] {dims = [0], keepdim = false} : tensor<6x5xf32> -> tensor<5xf32>
func.func @main(%x: tensor<2x3x4xf32>, %w: tensor<5x4xf32> {fxla.param = "fc.weight"}, %b: tensor<5xf32> {fxla.param = "fc.bias"}) -> tensor<2x3x5xf32> {
  %0 = "fxla.linear"(%x, %w, %b) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// A value the backward reads that is not an argument is a residual: the forward returns tanh's result after
// its own, the backward takes it first; the constant 2.0 is re-emitted, not saved.
// CHECK-LABEL: func.func @forward
// CHECK:         %[[T:.+]] = fxla.tanh
// CHECK:         return %{{.+}}, %[[T]] : tensor<3xf32>, tensor<3xf32>
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[R:.+]]: tensor<3xf32>, %[[CT:.+]]: tensor<3xf32>) -> tensor<3xf32>
// CHECK:         fxla.constant {value = dense<2.000000e+00> : tensor<f32>}
// CHECK:         fxla.mul %[[R]], %[[R]]
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %t = "fxla.tanh"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  %c = "fxla.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "fxla.mul"(%t, %c) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
