// RUN: not fxla-opt %s --split-input-file --fxla-vjp 2>&1 | FileCheck %s

// A gradient asked through an op fxla does not differentiate fails the pass with the op, its location, why
// and the fix; never a Python traceback.
// CHECK-NOT: Traceback

// fxla.no_gradient marks the result of a torch op that torch cannot differentiate either.
// CHECK: errors.mlir: error: cannot differentiate aten::scatter.reduce: torch has no derivative for it either
// CHECK-NEXT: at loc({{.*}}:{{[0-9]+}}:8)
// CHECK-NEXT: why: eager PyTorch raises 'derivative for aten::scatter.reduce is not implemented'
// CHECK-NEXT: fix: compute this part under torch.no_grad()
func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "fxla.no_gradient"(%a) {op = "aten::scatter.reduce"} : (tensor<3xf32>) -> tensor<3xf32>
  %1 = "fxla.mul"(%0, %0) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}

// -----

// floor_divide is declared non-differentiable, with the reason.
// CHECK: errors.mlir: error: cannot differentiate fxla.floor_divide: fxla has no gradient for it
// CHECK-NEXT: at loc({{.*}}:{{[0-9]+}}:8)
// CHECK-NEXT: why: a gradient was asked through this op, and torch has no derivative for floor_divide either
func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %c = "fxla.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "fxla.floor_divide"(%a, %c) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// A recurrent layer's backward is not differentiated again (no second-order gradients through it).
// CHECK: errors.mlir: error: cannot differentiate fxla.rnn_backward: fxla has no gradient for it
// CHECK-NEXT: at loc({{.*}}:{{[0-9]+}}:10)
// CHECK-NEXT: why: a gradient was asked through this op, and it is the backward of a recurrent layer, which fxla differentiates once (no second-order gradients through recurrent layers)
func.func @main(%x: tensor<3x2x12xf32>, %h: tensor<2x4xf32>, %w: tensor<12x4xf32>) -> tensor<2x4xf32> {
  %0 = "fxla.rnn"(%x, %h, %w) {cell = "gru", operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<3x2x12xf32>, tensor<2x4xf32>, tensor<12x4xf32>) -> tensor<3x2x4xf32>
  %1:3 = "fxla.rnn_backward"(%x, %h, %w, %0, %0) {cell = "gru", operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>} : (tensor<3x2x12xf32>, tensor<2x4xf32>, tensor<12x4xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>) -> (tensor<3x2x12xf32>, tensor<3x2x12xf32>, tensor<2x4xf32>)
  return %1#2 : tensor<2x4xf32>
}
