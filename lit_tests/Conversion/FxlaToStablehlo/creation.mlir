// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// Full conversion: no fxla op or attribute is left anywhere in the output (each case below also ends
// with a CHECK-NOT, which only covers the lines after its last match).
// NOFXLA-NOT: fxla

// The creation family (dialects/fxla/ops_creation.py, lowering/patterns/creation.py) -> StableHLO:
// literals and iotas.

// CHECK-LABEL: func.func @constant
// CHECK:         [[C:%.+]] = stablehlo.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK:         return [[C]] : tensor<2x2xf32>
// CHECK-NOT:     fxla.
func.func @constant() -> tensor<2x2xf32> {
  %0 = "fxla.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// arange computes start + i * step in f64 for a float result, then converts.
// CHECK-LABEL: func.func @arange
// CHECK:   %[[V0:.+]] = stablehlo.iota dim = 0 : tensor<4xi64>
// CHECK:   %[[V1:.+]] = stablehlo.convert %[[V0]] : (tensor<4xi64>) -> tensor<4xf64>
// CHECK:   %[[V2:.+]] = stablehlo.constant dense<2.000000e+00> : tensor<4xf64>
// CHECK:   %[[V3:.+]] = stablehlo.multiply %[[V1]], %[[V2]] : tensor<4xf64>
// CHECK:   %[[V4:.+]] = stablehlo.constant dense<5.000000e-01> : tensor<4xf64>
// CHECK:   %[[V5:.+]] = stablehlo.add %[[V3]], %[[V4]] : tensor<4xf64>
// CHECK:   %[[V6:.+]] = stablehlo.convert %[[V5]] : (tensor<4xf64>) -> tensor<4xf32>
// CHECK:   return %[[V6]] : tensor<4xf32>
// CHECK-NOT: fxla.
func.func @arange() -> tensor<4xf32> {
  %0 = "fxla.arange"() {start = 0.5 : f64, step = 2.0 : f64, length = 4 : i64} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
