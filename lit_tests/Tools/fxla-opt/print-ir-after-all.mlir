// RUN: fxla-opt %s --pass-pipeline=verify-fxla,fxla-fold-constants,fxla-dce,convert-fxla-to-stablehlo,canonicalize --print-ir-after-all -o %t.out 2> %t.dump
// RUN: FileCheck %s --input-file %t.dump
// RUN: FileCheck %s --input-file %t.dump --check-prefix=PRETTY
// RUN: fxla-opt %s --fxla-dce --print-ir-after-all -o %t.dce 2> %t.dce.dump
// RUN: fxla-opt %t.dce.dump | FileCheck %s --check-prefix=READ

// --print-ir-after-all prints the whole module after each pass, under MLIR's banner naming the pass as written
// on the command line, with fxla ops in the dialect's own syntax (never the generic form and its
// operandSegmentSizes), so a dump is fxla-opt input again.

// PRETTY-NOT:  operandSegmentSizes
// PRETTY-NOT:  "fxla.
// PRETTY-NOT:  Traceback

// CHECK-LABEL: // -----// IR Dump After verify-fxla //----- //
// CHECK-NEXT:  module {
// CHECK:         %[[C:.+]] = fxla.constant {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
// CHECK-NEXT:    fxla.mul %[[C]], %[[C]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK:         %[[L:.+]] = fxla.linear %arg0, %arg1, bias %arg2 : tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.+}} = fxla.linear %[[L]], %arg3 : tensor<2x3xf32>, tensor<3x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.+}} = fxla.softmax %{{.+}} {dim = 1} : tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-LABEL: // -----// IR Dump After fxla-fold-constants //----- //
// CHECK-NOT:     fxla.mul
// CHECK:         fxla.constant {value = dense<4.000000e+00> : tensor<f32>} : () -> tensor<f32>
// CHECK-LABEL: // -----// IR Dump After fxla-dce //----- //
// CHECK-NOT:     fxla.constant
// CHECK:         fxla.linear %arg0, %arg1, bias %arg2 :
// CHECK-LABEL: // -----// IR Dump After convert-fxla-to-stablehlo //----- //
// CHECK-NOT:     fxla.linear
// CHECK:         stablehlo.dot_general
// CHECK-LABEL: // -----// IR Dump After canonicalize //----- //
// CHECK:         stablehlo.dot_general
// CHECK-NOT:   IR Dump After

// READ:      fxla.linear %arg0, %arg1, bias %arg2 : tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32> -> tensor<2x3xf32>
// READ-NEXT: fxla.linear %{{.+}}, %arg3 : tensor<2x3xf32>, tensor<3x3xf32> -> tensor<2x3xf32>
// READ-NOT:  operandSegmentSizes

func.func @main(%x: tensor<2x4xf32>, %w: tensor<3x4xf32> {fxla.param = "fc.weight"}, %b: tensor<3xf32> {fxla.param = "fc.bias"},
                %v: tensor<3x3xf32> {fxla.param = "out.weight"}) -> tensor<2x3xf32> {
  %c = "fxla.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %unused = "fxla.mul"(%c, %c) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %0 = "fxla.linear"(%x, %w, %b) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = "fxla.linear"(%0, %v) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
  %2 = "fxla.softmax"(%1) {dim = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}
