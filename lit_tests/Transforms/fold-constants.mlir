// RUN: fxla-opt %s --split-input-file --fxla-fold-constants --fxla-dce | FileCheck %s

// fxla-fold-constants evaluates fxla ops whose operands are all fxla.constant (torch's promotion and
// broadcasting), fxla-dce then drops the constants they consumed.

// A Python scalar times a scalar: the product is one splat constant (f32 wins over i64).
// CHECK-LABEL: func.func @scalar_arith
// CHECK:         %[[C:.+]] = fxla.constant {value = dense<7.500000e+00> : tensor<f32>} : () -> tensor<f32>
// CHECK-NEXT:    %[[R:.+]] = fxla.mul %arg0, %[[C]]
// CHECK-NOT:     fxla.add
// CHECK-NOT:     fxla.constant
// CHECK:         return %[[R]]
func.func @scalar_arith(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = "fxla.constant"() {value = dense<2.5> : tensor<f32>} : () -> tensor<f32>
  %b = "fxla.constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
  %c = "fxla.add"(%a, %b) : (tensor<f32>, tensor<i64>) -> tensor<f32>
  %0 = "fxla.mul"(%x, %c) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Chains fold: reshape, permute and an elementwise op on a literal, then a comparison (i1 result).
// CHECK-LABEL: func.func @chain
// CHECK:         fxla.constant {value = dense<{{\[\[}}0, 2, 4], [1, 3, 5]]> : tensor<2x3xi64>}
// CHECK:         fxla.constant {value = dense<{{\[\[}}false, false, true], [false, true, true]]> : tensor<2x3xi1>}
// CHECK-NOT:     fxla.reshape
// CHECK-NOT:     fxla.permute
// CHECK-NOT:     fxla.gt
// CHECK:         return
func.func @chain() -> (tensor<2x3xi64>, tensor<2x3xi1>) {
  %a = "fxla.constant"() {value = dense<[0, 1, 2, 3, 4, 5]> : tensor<6xi64>} : () -> tensor<6xi64>
  %r = "fxla.reshape"(%a) {shape = array<i64: 3, 2>} : (tensor<6xi64>) -> tensor<3x2xi64>
  %p = "fxla.permute"(%r) {dims = array<i64: 1, 0>} : (tensor<3x2xi64>) -> tensor<2x3xi64>
  %t = "fxla.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
  %g = "fxla.gt"(%p, %t) : (tensor<2x3xi64>, tensor<i64>) -> tensor<2x3xi1>
  return %p, %g : tensor<2x3xi64>, tensor<2x3xi1>
}

// -----

// convert (float -> int truncates toward zero) and true division of integers (an f32 result).
// CHECK-LABEL: func.func @convert_div
// CHECK-DAG:     fxla.constant {value = dense<[1, -2]> : tensor<2xi32>}
// CHECK-DAG:     fxla.constant {value = dense<[5.000000e-01, -1.500000e+00]> : tensor<2xf32>}
// CHECK-NOT:     fxla.convert
// CHECK-NOT:     fxla.div
func.func @convert_div() -> (tensor<2xi32>, tensor<2xf32>) {
  %f = "fxla.constant"() {value = dense<[1.7, -2.9]> : tensor<2xf32>} : () -> tensor<2xf32>
  %i = "fxla.convert"(%f) : (tensor<2xf32>) -> tensor<2xi32>
  %a = "fxla.constant"() {value = dense<[1, -3]> : tensor<2xi64>} : () -> tensor<2xi64>
  %b = "fxla.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
  %d = "fxla.div"(%a, %b) : (tensor<2xi64>, tensor<i64>) -> tensor<2xf32>
  return %i, %d : tensor<2xi32>, tensor<2xf32>
}

// -----

// Not folded: an operand that is no constant, a non-exact op (exp), half precision, and a result over the
// size limit (an expand of a splat to 100x100 would materialise 10000 elements).
// CHECK-LABEL: func.func @not_folded
// CHECK:         fxla.add
// CHECK:         fxla.exp
// CHECK:         fxla.mul
// CHECK:         fxla.expand
func.func @not_folded(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<bf16>, tensor<100x100xf32>) {
  %c = "fxla.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "fxla.add"(%x, %c) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %1 = "fxla.exp"(%c) : (tensor<f32>) -> tensor<f32>
  %h = "fxla.constant"() {value = dense<1.5> : tensor<bf16>} : () -> tensor<bf16>
  %2 = "fxla.mul"(%h, %h) : (tensor<bf16>, tensor<bf16>) -> tensor<bf16>
  %3 = "fxla.expand"(%c) {shape = array<i64: 100, 100>} : (tensor<f32>) -> tensor<100x100xf32>
  return %0, %1, %2, %3 : tensor<f32>, tensor<f32>, tensor<bf16>, tensor<100x100xf32>
}

// -----

// Bool (i1) constants as operands, splat and dense: comparisons of bools and a where on a folded bool mask.
// CHECK-LABEL: func.func @bool_operands
// CHECK-DAG:     fxla.constant {value = dense<[true, false, true]> : tensor<3xi1>}
// CHECK-DAG:     fxla.constant {value = dense<true> : tensor<3xi1>}
// CHECK-DAG:     fxla.constant {value = dense<[1.000000e+00, -2.000000e+00, 3.000000e+00]> : tensor<3xf32>}
// CHECK-NOT:     fxla.eq
// CHECK-NOT:     fxla.ne
// CHECK-NOT:     fxla.where
// CHECK:         return
func.func @bool_operands() -> (tensor<3xi1>, tensor<3xi1>, tensor<3xf32>) {
  %t = "fxla.constant"() {value = dense<true> : tensor<3xi1>} : () -> tensor<3xi1>
  %m = "fxla.constant"() {value = dense<[true, false, true]> : tensor<3xi1>} : () -> tensor<3xi1>
  %eq = "fxla.eq"(%t, %m) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  %f = "fxla.constant"() {value = dense<false> : tensor<i1>} : () -> tensor<i1>
  %ne = "fxla.ne"(%t, %f) : (tensor<3xi1>, tensor<i1>) -> tensor<3xi1>
  %a = "fxla.constant"() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %n = "fxla.neg"(%a) : (tensor<3xf32>) -> tensor<3xf32>
  %w = "fxla.where"(%eq, %a, %n) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %eq, %ne, %w : tensor<3xi1>, tensor<3xi1>, tensor<3xf32>
}
