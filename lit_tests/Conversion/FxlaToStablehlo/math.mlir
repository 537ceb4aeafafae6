// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// NOFXLA-NOT: fxla

// Elementwise math, logic, integer division, clamp and activation fxla ops -> StableHLO.

// Rounding is exact in any float type (no f32 detour); on integers it is the identity.
// CHECK-LABEL: func.func @round_int_identity
// CHECK:   %[[V0:.+]] = stablehlo.round_nearest_even %arg0 : tensor<4xf16>
// CHECK:   return %[[V0]], %arg1 : tensor<4xf16>, tensor<4xi64>
// CHECK-NOT: fxla.
func.func @round_int_identity(%x: tensor<4xf16>, %i: tensor<4xi64>) -> (tensor<4xf16>, tensor<4xi64>) {
  %0 = "fxla.round"(%x) {decimals = 0 : i64} : (tensor<4xf16>) -> tensor<4xf16>
  %1 = "fxla.floor"(%i) : (tensor<4xi64>) -> tensor<4xi64>
  return %0, %1 : tensor<4xf16>, tensor<4xi64>
}

// -----

// Float-valued math on an integer input computes in f32 (torch's result type).
// CHECK-LABEL: func.func @sin_int
// CHECK:   %[[V0:.+]] = stablehlo.convert %arg0 : (tensor<4xi64>) -> tensor<4xf32>
// CHECK:   %[[V1:.+]] = stablehlo.sine %[[V0]] : tensor<4xf32>
// CHECK:   return %[[V1]] : tensor<4xf32>
// CHECK-NOT: fxla.
func.func @sin_int(%x: tensor<4xi64>) -> tensor<4xf32> {
  %0 = "fxla.sin"(%x) : (tensor<4xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Logical ops test operands against zero, then combine i1 values.
// CHECK-LABEL: func.func @logical_and
// CHECK:   %[[V0:.+]] = stablehlo.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK:   %[[V1:.+]] = stablehlo.compare NE, %arg0, %[[V0]], FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK:   %[[V2:.+]] = stablehlo.and %[[V1]], %arg1 : tensor<4xi1>
// CHECK:   return %[[V2]] : tensor<4xi1>
// CHECK-NOT: fxla.
func.func @logical_and(%x: tensor<4xf32>, %y: tensor<4xi1>) -> tensor<4xi1> {
  %0 = "fxla.logical_and"(%x, %y) : (tensor<4xf32>, tensor<4xi1>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// remainder follows the divisor's sign: the C remainder is corrected when the signs differ.
// CHECK-LABEL: func.func @remainder_int
// CHECK:   %[[V0:.+]] = stablehlo.remainder %arg0, %arg1 : tensor<4xi64>
// CHECK:   %[[V1:.+]] = stablehlo.constant dense<0> : tensor<4xi64>
// CHECK:   %[[V2:.+]] = stablehlo.compare NE, %[[V0]], %[[V1]], SIGNED : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
// CHECK:   %[[V3:.+]] = stablehlo.constant dense<0> : tensor<4xi64>
// CHECK:   %[[V4:.+]] = stablehlo.compare LT, %[[V0]], %[[V3]], SIGNED : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
// CHECK:   %[[V5:.+]] = stablehlo.compare LT, %arg1, %[[V3]], SIGNED : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
// CHECK:   %[[V6:.+]] = stablehlo.xor %[[V4]], %[[V5]] : tensor<4xi1>
// CHECK:   %[[V7:.+]] = stablehlo.and %[[V2]], %[[V6]] : tensor<4xi1>
// CHECK:   %[[V8:.+]] = stablehlo.add %[[V0]], %arg1 : tensor<4xi64>
// CHECK:   %[[V9:.+]] = stablehlo.select %[[V7]], %[[V8]], %[[V0]] : tensor<4xi1>, tensor<4xi64>
// CHECK:   return %[[V9]] : tensor<4xi64>
// CHECK-NOT: fxla.
func.func @remainder_int(%x: tensor<4xi64>, %y: tensor<4xi64>) -> tensor<4xi64> {
  %0 = "fxla.remainder"(%x, %y) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// clamp with only a lower bound (operandSegmentSizes 1, 1, 0); the float bound promotes the int input.
// CHECK-LABEL: func.func @clamp_min_only
// CHECK:   %[[V0:.+]] = stablehlo.convert %arg0 : (tensor<2x3xi64>) -> tensor<2x3xf32>
// CHECK:   %[[V1:.+]] = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
// CHECK:   %[[V2:.+]] = stablehlo.maximum %[[V0]], %[[V1]] : tensor<2x3xf32>
// CHECK:   return %[[V2]] : tensor<2x3xf32>
// CHECK-NOT: fxla.
func.func @clamp_min_only(%x: tensor<2x3xi64>, %lo: tensor<f32>) -> tensor<2x3xf32> {
  %0 = "fxla.clamp"(%x, %lo) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x3xi64>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Activations on bf16 compute in f32 and round once.
// CHECK-LABEL: func.func @silu_bf16
// CHECK:   %[[V0:.+]] = stablehlo.convert %arg0 : (tensor<4xbf16>) -> tensor<4xf32>
// CHECK:   %[[V1:.+]] = stablehlo.logistic %[[V0]] : tensor<4xf32>
// CHECK:   %[[V2:.+]] = stablehlo.multiply %[[V0]], %[[V1]] : tensor<4xf32>
// CHECK:   %[[V3:.+]] = stablehlo.convert %[[V2]] : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK:   return %[[V3]] : tensor<4xbf16>
// CHECK-NOT: fxla.
func.func @silu_bf16(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = "fxla.silu"(%x) : (tensor<4xbf16>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// leaky_relu selects between x and negative_slope * x.
// CHECK-LABEL: func.func @leaky_relu
// CHECK:   %[[V0:.+]] = stablehlo.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK:   %[[V1:.+]] = stablehlo.compare GT, %arg0, %[[V0]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK:   %[[V2:.+]] = stablehlo.constant dense<2.000000e-01> : tensor<4xf32>
// CHECK:   %[[V3:.+]] = stablehlo.multiply %arg0, %[[V2]] : tensor<4xf32>
// CHECK:   %[[V4:.+]] = stablehlo.select %[[V1]], %arg0, %[[V3]] : tensor<4xi1>, tensor<4xf32>
// CHECK:   return %[[V4]] : tensor<4xf32>
// CHECK-NOT: fxla.
func.func @leaky_relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.leaky_relu"(%x) {negative_slope = 2.000000e-01 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Float floor division is torch's div_floor_floating step for step, in the operands' own type (f16 included:
// torch rounds every step): a zero divisor gives the IEEE quotient (1 // 0 is inf, not nan), a zero result takes
// the quotient's sign, and the floored value is rounded up where it lies more than 0.5 below the quotient.
// CHECK-LABEL: func.func @floor_divide_f16
// CHECK:   %[[Q:.+]] = stablehlo.divide %arg0, %arg1 : tensor<4xf16>
// CHECK:   %[[R:.+]] = stablehlo.remainder %arg0, %arg1 : tensor<4xf16>
// CHECK:   %[[FLOOR:.+]] = stablehlo.floor %{{.+}} : tensor<4xf16>
// CHECK:   stablehlo.compare GT, %{{.+}}, %{{.+}}, FLOAT
// CHECK:   %[[ZERO:.+]] = stablehlo.multiply %{{.+}}, %[[Q]] : tensor<4xf16>
// CHECK:   %[[BYZERO:.+]] = stablehlo.compare EQ, %arg1, %{{.+}}, FLOAT
// CHECK:   %[[OUT:.+]] = stablehlo.select %[[BYZERO]], %[[Q]], %{{.+}} : tensor<4xi1>, tensor<4xf16>
// CHECK:   return %[[OUT]] : tensor<4xf16>
func.func @floor_divide_f16(%x: tensor<4xf16>, %y: tensor<4xf16>) -> tensor<4xf16> {
  %0 = "fxla.floor_divide"(%x, %y) : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}
