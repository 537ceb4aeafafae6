// RUN: fxla-opt %s --split-input-file --fxla-dce | FileCheck %s

// fxla-dce erases fxla ops whose results are unused (fxla ops have no side effects), transitively.

// CHECK-LABEL: func.func @unused_chain
// CHECK-NOT:     fxla.exp
// CHECK-NOT:     fxla.sum
// CHECK:         %[[R:.+]] = fxla.relu %arg0
// CHECK-NEXT:    return %[[R]]
func.func @unused_chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "fxla.sum"(%0) {dims = array<i64>, keepdim = false} : (tensor<4xf32>) -> tensor<f32>
  %2 = "fxla.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// Dead constants go; a multi-result op stays while any of its results is used.
// CHECK-LABEL: func.func @multi_result
// CHECK-NOT:     fxla.constant
// CHECK:         %{{.+}}:2 = fxla.sort %arg0
// CHECK:         return %{{.+}}#1
func.func @multi_result(%x: tensor<4xf32>) -> tensor<4xi64> {
  %c = "fxla.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %v, %i = "fxla.sort"(%x) {dim = -1 : i64, descending = false} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi64>)
  return %i : tensor<4xi64>
}

// -----

// Nothing to remove: the IR is unchanged.
// CHECK-LABEL: func.func @all_used
// CHECK:         fxla.add %arg0, %arg0
// CHECK-NEXT:    return
func.func @all_used(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.add"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
