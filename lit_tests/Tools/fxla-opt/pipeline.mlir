// RUN: fxla-opt %s --convert-fxla-to-stablehlo --canonicalize | FileCheck %s
// RUN: fxla-opt %s --pass-pipeline=convert-fxla-to-stablehlo,canonicalize,cse --print-ir-after-all -o %t 2>&1 | FileCheck %s --check-prefix=DUMP
// RUN: FileCheck %s --input-file %t

// An MLP-like function (linear -> relu -> linear -> relu) through conversion and MLIR's canonicalizer:
// splat constants are hoisted to the top, the fxla.param annotations are dropped and no fxla op is left.

// CHECK-LABEL: func.func @mlp
// CHECK-SAME:    (%[[X:.+]]: tensor<8x64xf32>, %[[W1:.+]]: tensor<128x64xf32>, %[[B1:.+]]: tensor<128xf32>, %[[W2:.+]]: tensor<10x128xf32>, %[[B2:.+]]: tensor<10xf32>) -> tensor<8x10xf32> {
// CHECK-DAG:     %[[Z10:.+]] = stablehlo.constant dense<0.000000e+00> : tensor<8x10xf32>
// CHECK-DAG:     %[[Z128:.+]] = stablehlo.constant dense<0.000000e+00> : tensor<8x128xf32>
// CHECK:         %[[D1:.+]] = stablehlo.dot_general %[[X]], %[[W1]], contracting_dims = [1] x [1] : (tensor<8x64xf32>, tensor<128x64xf32>) -> tensor<8x128xf32>
// CHECK-NEXT:    %[[BB1:.+]] = stablehlo.broadcast_in_dim %[[B1]], dims = [1] : (tensor<128xf32>) -> tensor<8x128xf32>
// CHECK-NEXT:    %[[H1:.+]] = stablehlo.add %[[D1]], %[[BB1]] : tensor<8x128xf32>
// CHECK-NEXT:    %[[R1:.+]] = stablehlo.maximum %[[H1]], %[[Z128]] : tensor<8x128xf32>
// CHECK-NEXT:    %[[D2:.+]] = stablehlo.dot_general %[[R1]], %[[W2]], contracting_dims = [1] x [1] : (tensor<8x128xf32>, tensor<10x128xf32>) -> tensor<8x10xf32>
// CHECK-NEXT:    %[[BB2:.+]] = stablehlo.broadcast_in_dim %[[B2]], dims = [1] : (tensor<10xf32>) -> tensor<8x10xf32>
// CHECK-NEXT:    %[[H2:.+]] = stablehlo.add %[[D2]], %[[BB2]] : tensor<8x10xf32>
// CHECK-NEXT:    %[[R2:.+]] = stablehlo.maximum %[[H2]], %[[Z10]] : tensor<8x10xf32>
// CHECK-NEXT:    return %[[R2]] : tensor<8x10xf32>
// CHECK-NOT:     fxla

// --print-ir-after-all dumps the IR after each pass, in command-line order, on stderr.
// DUMP:      IR Dump After convert-fxla-to-stablehlo
// DUMP:        stablehlo.dot_general
// DUMP-NOT:    fxla.linear
// DUMP:      IR Dump After canonicalize //
// DUMP:      IR Dump After cse //
// DUMP-NOT:  Traceback
func.func @mlp(%x: tensor<8x64xf32>, %w1: tensor<128x64xf32> {fxla.param = "fc1.weight"}, %b1: tensor<128xf32> {fxla.param = "fc1.bias"},
               %w2: tensor<10x128xf32> {fxla.param = "fc2.weight"}, %b2: tensor<10xf32> {fxla.param = "fc2.bias"}) -> tensor<8x10xf32> {
  %0 = "fxla.linear"(%x, %w1, %b1) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<8x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<8x128xf32>
  %1 = "fxla.relu"(%0) : (tensor<8x128xf32>) -> tensor<8x128xf32>
  %2 = "fxla.linear"(%1, %w2, %b2) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<8x128xf32>, tensor<10x128xf32>, tensor<10xf32>) -> tensor<8x10xf32>
  %3 = "fxla.relu"(%2) : (tensor<8x10xf32>) -> tensor<8x10xf32>
  return %3 : tensor<8x10xf32>
}
