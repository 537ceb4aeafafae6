// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// Full conversion: no fxla op or attribute is left anywhere in the output (each case below also ends
// with a CHECK-NOT, which only covers the lines after its last match).
// NOFXLA-NOT: fxla

// The elementwise family (dialects/fxla/ops_elementwise.py, lowering/patterns/elementwise.py) -> StableHLO:
// torch-style promotion and broadcasting become explicit stablehlo.convert / stablehlo.broadcast_in_dim ops in
// front of one StableHLO op; math, logic, integer division, clamp and activations follow torch's CPU kernels.

// A 0-d i64 constant (a Python int) only raises the category: the f32 tensor decides, so the
// constant is converted to f32 and broadcast with empty dims; the [3] operand broadcasts along dim 1.
// CHECK-LABEL: func.func @add_broadcast_promote
// CHECK-SAME:    (%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<3xf32>)
// CHECK:         %[[C:.+]] = stablehlo.constant dense<2> : tensor<i64>
// CHECK:         %[[CF:.+]] = stablehlo.convert %[[C]] : (tensor<i64>) -> tensor<f32>
// CHECK:         %[[CB:.+]] = stablehlo.broadcast_in_dim %[[CF]], dims = [] : (tensor<f32>) -> tensor<2x3xf32>
// CHECK:         %[[S:.+]] = stablehlo.add %[[A]], %[[CB]] : tensor<2x3xf32>
// CHECK:         %[[BB:.+]] = stablehlo.broadcast_in_dim %[[B]], dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
// CHECK:         stablehlo.add %[[S]], %[[BB]] : tensor<2x3xf32>
// CHECK-NOT:     fxla.
func.func @add_broadcast_promote(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %c = "fxla.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
  %0 = "fxla.add"(%a, %c) : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
  %1 = "fxla.add"(%0, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// Two dimmed integer tensors promote to the wider type.
// CHECK-LABEL: func.func @add_int_promote
// CHECK:         [[X:%.+]] = stablehlo.convert %arg0 : (tensor<4xi32>) -> tensor<4xi64>
// CHECK:         stablehlo.add [[X]], %arg1 : tensor<4xi64>
// CHECK-NOT:     fxla.
func.func @add_int_promote(%a: tensor<4xi32>, %b: tensor<4xi64>) -> tensor<4xi64> {
  %0 = "fxla.add"(%a, %b) : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// A size-1 dim broadcasts in place (dims map one to one).
// CHECK-LABEL: func.func @sub
// CHECK:         [[B:%.+]] = stablehlo.broadcast_in_dim %arg1, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK:         [[R:%.+]] = stablehlo.subtract %arg0, [[B]] : tensor<2x3xf32>
// CHECK:         return [[R]]
// CHECK-NOT:     fxla.
func.func @sub(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> tensor<2x3xf32> {
  %0 = "fxla.sub"(%a, %b) : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// int tensor * 0-d float: the float scalar raises the category, so the result is f32.
// CHECK-LABEL: func.func @mul_int_by_float_scalar
// CHECK:         [[X:%.+]] = stablehlo.convert %arg0 : (tensor<4xi32>) -> tensor<4xf32>
// CHECK:         [[C:%.+]] = stablehlo.broadcast_in_dim %{{.+}}, dims = [] : (tensor<f32>) -> tensor<4xf32>
// CHECK:         stablehlo.multiply [[X]], [[C]] : tensor<4xf32>
// CHECK-NOT:     fxla.
func.func @mul_int_by_float_scalar(%a: tensor<4xi32>) -> tensor<4xf32> {
  %c = "fxla.constant"() {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
  %0 = "fxla.mul"(%a, %c) : (tensor<4xi32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// True division: integer operands are converted to f32 first.
// CHECK-LABEL: func.func @div_int
// CHECK:         [[L:%.+]] = stablehlo.convert %arg0 : (tensor<4xi64>) -> tensor<4xf32>
// CHECK:         [[R:%.+]] = stablehlo.convert %arg1 : (tensor<4xi64>) -> tensor<4xf32>
// CHECK:         stablehlo.divide [[L]], [[R]] : tensor<4xf32>
// CHECK-NOT:     fxla.
func.func @div_int(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xf32> {
  %0 = "fxla.div"(%a, %b) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @maximum
// CHECK:         [[R:%.+]] = stablehlo.maximum %arg0, %arg1 : tensor<4xf32>
// CHECK:         return [[R]] : tensor<4xf32>
// CHECK-NOT:     fxla.
func.func @maximum(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.maximum"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @minimum
// CHECK:         [[R:%.+]] = stablehlo.minimum %arg0, %arg1 : tensor<4xi32>
// CHECK:         return [[R]] : tensor<4xi32>
// CHECK-NOT:     fxla.
func.func @minimum(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "fxla.minimum"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// A 0-d f64 exponent does not widen an f32 tensor.
// CHECK-LABEL: func.func @pow
// CHECK:         [[E:%.+]] = stablehlo.convert %{{.+}} : (tensor<f64>) -> tensor<f32>
// CHECK:         [[EB:%.+]] = stablehlo.broadcast_in_dim [[E]], dims = [] : (tensor<f32>) -> tensor<4xf32>
// CHECK:         stablehlo.power %arg0, [[EB]] : tensor<4xf32>
// CHECK-NOT:     fxla.
func.func @pow(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = "fxla.constant"() {value = dense<2.000000e+00> : tensor<f64>} : () -> tensor<f64>
  %0 = "fxla.pow"(%a, %c) : (tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Comparisons broadcast/promote their operands and pick the compare type from the promoted type.
// CHECK-LABEL: func.func @eq_float
// CHECK:         [[B:%.+]] = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
// CHECK:         stablehlo.compare EQ, %arg0, [[B]], FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NOT:     fxla.
func.func @eq_float(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xi1> {
  %0 = "fxla.eq"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @lt_signed
// CHECK:         [[L:%.+]] = stablehlo.convert %arg0 : (tensor<4xi32>) -> tensor<4xi64>
// CHECK:         stablehlo.compare LT, [[L]], %arg1, SIGNED : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
// CHECK-NOT:     fxla.
func.func @lt_signed(%a: tensor<4xi32>, %b: tensor<4xi64>) -> tensor<4xi1> {
  %0 = "fxla.lt"(%a, %b) : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @ge_unsigned
// CHECK:         [[R:%.+]] = stablehlo.compare GE, %arg0, %arg1, UNSIGNED : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
// CHECK:         return [[R]]
// CHECK-NOT:     fxla.
func.func @ge_unsigned(%a: tensor<4xui8>, %b: tensor<4xui8>) -> tensor<4xi1> {
  %0 = "fxla.ge"(%a, %b) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// One StableHLO op per unary fxla op, chained through the SSA values.
// CHECK-LABEL: func.func @unary_chain
// CHECK:         [[NEG:%.+]] = stablehlo.negate %arg0 : tensor<4xf32>
// CHECK:         [[ABS:%.+]] = stablehlo.abs [[NEG]] : tensor<4xf32>
// CHECK:         [[EXP:%.+]] = stablehlo.exponential [[ABS]] : tensor<4xf32>
// CHECK:         [[LOG:%.+]] = stablehlo.log [[EXP]] : tensor<4xf32>
// CHECK:         [[SQRT:%.+]] = stablehlo.sqrt [[LOG]] : tensor<4xf32>
// CHECK:         [[RSQRT:%.+]] = stablehlo.rsqrt [[SQRT]] : tensor<4xf32>
// CHECK:         [[TANH:%.+]] = stablehlo.tanh [[RSQRT]] : tensor<4xf32>
// CHECK:         return [[TANH]]
// CHECK-NOT:     fxla.
func.func @unary_chain(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "fxla.abs"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "fxla.exp"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "fxla.log"(%2) : (tensor<4xf32>) -> tensor<4xf32>
  %4 = "fxla.sqrt"(%3) : (tensor<4xf32>) -> tensor<4xf32>
  %5 = "fxla.rsqrt"(%4) : (tensor<4xf32>) -> tensor<4xf32>
  %6 = "fxla.tanh"(%5) : (tensor<4xf32>) -> tensor<4xf32>
  return %6 : tensor<4xf32>
}

// -----

// Float-result unary ops on integers compute in f32.
// CHECK-LABEL: func.func @exp_int
// CHECK:         [[X:%.+]] = stablehlo.convert %arg0 : (tensor<4xi64>) -> tensor<4xf32>
// CHECK:         stablehlo.exponential [[X]] : tensor<4xf32>
// CHECK-NOT:     fxla.
func.func @exp_int(%a: tensor<4xi64>) -> tensor<4xf32> {
  %0 = "fxla.exp"(%a) : (tensor<4xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @sigmoid
// CHECK:         [[R:%.+]] = stablehlo.logistic %arg0 : tensor<4xf32>
// CHECK:         return [[R]]
// CHECK-NOT:     fxla.
func.func @sigmoid(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.sigmoid"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// relu is max(x, 0) against a splat zero of the result type.
// CHECK-LABEL: func.func @relu
// CHECK:         [[Z:%.+]] = stablehlo.constant dense<0.000000e+00> : tensor<2x4xf32>
// CHECK:         [[R:%.+]] = stablehlo.maximum %arg0, [[Z]] : tensor<2x4xf32>
// CHECK:         return [[R]]
// CHECK-NOT:     fxla.
func.func @relu(%a: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = "fxla.relu"(%a) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @relu_int
// CHECK:         [[Z:%.+]] = stablehlo.constant dense<0> : tensor<4xi32>
// CHECK:         stablehlo.maximum %arg0, [[Z]] : tensor<4xi32>
// CHECK-NOT:     fxla.
func.func @relu_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "fxla.relu"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// Exact gelu: 0.5 * x * (1 + erf(x / sqrt(2))); chlo.erf is legalised to a polynomial, so only
// StableHLO remains.
// CHECK-LABEL: func.func @gelu_none
// CHECK:         [[HALF:%.+]] = stablehlo.multiply %arg0, %{{.+}} : tensor<4xf32>
// CHECK:         stablehlo.constant dense<0.707106769> : tensor<4xf32>
// CHECK:         [[Q:%.+]] = stablehlo.divide %{{.+}}, %{{.+}} : tensor<4xf32>
// CHECK:         [[ERF:%.+]] = stablehlo.clamp %{{.+}}, [[Q]], %{{.+}} : tensor<4xf32>
// CHECK:         [[ONEP:%.+]] = stablehlo.add [[ERF]], %{{.+}} : tensor<4xf32>
// CHECK:         [[R:%.+]] = stablehlo.multiply [[HALF]], [[ONEP]] : tensor<4xf32>
// CHECK:         return [[R]]
// CHECK-NOT:     chlo.
// CHECK-NOT:     fxla.
func.func @gelu_none(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.gelu"(%a) {approximate = "none"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// tanh gelu: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).
// CHECK-LABEL: func.func @gelu_tanh
// CHECK:         [[HALF:%.+]] = stablehlo.multiply %arg0, %{{.+}} : tensor<4xf32>
// CHECK:         stablehlo.constant dense<4.471500e-02> : tensor<4xf32>
// CHECK:         stablehlo.constant dense<0.797884583> : tensor<4xf32>
// CHECK:         [[T:%.+]] = stablehlo.tanh %{{.+}} : tensor<4xf32>
// CHECK:         [[ONEP:%.+]] = stablehlo.add [[T]], %{{.+}} : tensor<4xf32>
// CHECK:         stablehlo.multiply [[HALF]], [[ONEP]] : tensor<4xf32>
// CHECK-NOT:     fxla.
func.func @gelu_tanh(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.gelu"(%a) {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Half-precision gelu is computed in f32 and rounded once.
// CHECK-LABEL: func.func @gelu_bf16
// CHECK:         [[X:%.+]] = stablehlo.convert %arg0 : (tensor<4xbf16>) -> tensor<4xf32>
// CHECK:         stablehlo.multiply [[X]], %{{.+}} : tensor<4xf32>
// CHECK:         [[R:%.+]] = stablehlo.convert %{{.+}} : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK-NEXT:    return [[R]]
// CHECK-NOT:     fxla.
func.func @gelu_bf16(%a: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = "fxla.gelu"(%a) {approximate = "none"} : (tensor<4xbf16>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// CHECK-LABEL: func.func @convert
// CHECK:         [[R:%.+]] = stablehlo.convert %arg0 : (tensor<4xf32>) -> tensor<4xf16>
// CHECK:         return [[R]] : tensor<4xf16>
// CHECK-NOT:     fxla.
func.func @convert(%a: tensor<4xf32>) -> tensor<4xf16> {
  %0 = "fxla.convert"(%a) : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

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
// CHECK:   %[[V6:.+]] = stablehlo.compare NE, %[[V4]], %[[V5]], UNSIGNED : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
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

// -----

// ne/le/gt compare in the promoted type: a signed compare on integers, a float compare after converting.
// CHECK-LABEL: func.func @ne_le_gt
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.compare NE, %arg0, %arg1, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
// CHECK:         %[[V1:[a-z0-9_]+]] = stablehlo.compare LE, %arg0, %arg1, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
// CHECK:         %[[V2:[a-z0-9_]+]] = stablehlo.convert %arg0 : (tensor<4xi32>) -> tensor<4xf32>
// CHECK:         %[[V3:[a-z0-9_]+]] = stablehlo.compare GT, %arg2, %[[V2]], FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK:         return %[[V0]], %[[V1]], %[[V3]] : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
// CHECK-NOT:     fxla.
func.func @ne_le_gt(%a: tensor<4xi32>, %b: tensor<4xi32>, %x: tensor<4xf32>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %0 = "fxla.ne"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %1 = "fxla.le"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %2 = "fxla.gt"(%x, %a) : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xi1>
  return %0, %1, %2 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// ceil is stablehlo.ceil; trunc rounds toward zero: ceil below zero, floor above.
// CHECK-LABEL: func.func @ceil_trunc
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.ceil %arg0 : tensor<4xf32>
// CHECK:         %[[CST:[a-z0-9_]+]] = stablehlo.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK:         %[[V1:[a-z0-9_]+]] = stablehlo.compare LT, %arg0, %[[CST]], FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK:         %[[V2:[a-z0-9_]+]] = stablehlo.ceil %arg0 : tensor<4xf32>
// CHECK:         %[[V3:[a-z0-9_]+]] = stablehlo.floor %arg0 : tensor<4xf32>
// CHECK:         %[[V4:[a-z0-9_]+]] = stablehlo.select %[[V1]], %[[V2]], %[[V3]] : tensor<4xi1>, tensor<4xf32>
// CHECK:         return %[[V0]], %[[V4]] : tensor<4xf32>, tensor<4xf32>
// CHECK-NOT:     fxla.
func.func @ceil_trunc(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = "fxla.ceil"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "fxla.trunc"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// sign(nan) is 0 in torch (stablehlo.sign keeps nan): x != x selects zero.
// CHECK-LABEL: func.func @sign_float
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.compare NE, %arg0, %arg0, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK:         %[[CST:[a-z0-9_]+]] = stablehlo.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK:         %[[V1:[a-z0-9_]+]] = stablehlo.sign %arg0 : tensor<4xf32>
// CHECK:         %[[V2:[a-z0-9_]+]] = stablehlo.select %[[V0]], %[[CST]], %[[V1]] : tensor<4xi1>, tensor<4xf32>
// CHECK:         return %[[V2]] : tensor<4xf32>
// CHECK-NOT:     fxla.
func.func @sign_float(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.sign"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Float unary math on f16 is computed in f32 and converted back once.
// CHECK-LABEL: func.func @float_unary_f16
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.convert %arg0 : (tensor<4xf16>) -> tensor<4xf32>
// CHECK:         %[[CST:[a-z0-9_]+]] = stablehlo.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK:         %[[V1:[a-z0-9_]+]] = stablehlo.divide %[[CST]], %[[V0]] : tensor<4xf32>
// CHECK:         %[[V2:[a-z0-9_]+]] = stablehlo.convert %[[V1]] : (tensor<4xf32>) -> tensor<4xf16>
// CHECK:         %[[V3:[a-z0-9_]+]] = stablehlo.convert %arg0 : (tensor<4xf16>) -> tensor<4xf32>
// CHECK:         %[[V4:[a-z0-9_]+]] = stablehlo.cosine %[[V3]] : tensor<4xf32>
// CHECK:         %[[V5:[a-z0-9_]+]] = stablehlo.convert %[[V4]] : (tensor<4xf32>) -> tensor<4xf16>
// CHECK:         %[[V6:[a-z0-9_]+]] = stablehlo.convert %arg0 : (tensor<4xf16>) -> tensor<4xf32>
// CHECK:         %[[V7:[a-z0-9_]+]] = stablehlo.tan %[[V6]] : tensor<4xf32>
// CHECK:         %[[V8:[a-z0-9_]+]] = stablehlo.convert %[[V7]] : (tensor<4xf32>) -> tensor<4xf16>
// CHECK:         %[[V9:[a-z0-9_]+]] = stablehlo.convert %arg0 : (tensor<4xf16>) -> tensor<4xf32>
// erf is CHLO's rational approximation, legalised to StableHLO: clamp the input, evaluate, clamp to [-1, 1].
// CHECK:         stablehlo.clamp %{{.+}}, %[[V9]], %{{.+}} : tensor<4xf32>
// CHECK:         %[[V34:[a-z0-9_]+]] = stablehlo.clamp %{{.+}}, %{{.+}}, %{{.+}} : tensor<4xf32>
// CHECK:         %[[V35:[a-z0-9_]+]] = stablehlo.convert %[[V34]] : (tensor<4xf32>) -> tensor<4xf16>
// CHECK:         %[[V36:[a-z0-9_]+]] = stablehlo.convert %arg0 : (tensor<4xf16>) -> tensor<4xf32>
// CHECK:         %[[V37:[a-z0-9_]+]] = stablehlo.log_plus_one %[[V36]] : tensor<4xf32>
// CHECK:         %[[V38:[a-z0-9_]+]] = stablehlo.convert %[[V37]] : (tensor<4xf32>) -> tensor<4xf16>
// CHECK:         %[[V39:[a-z0-9_]+]] = stablehlo.convert %arg0 : (tensor<4xf16>) -> tensor<4xf32>
// CHECK:         %[[V40:[a-z0-9_]+]] = stablehlo.exponential_minus_one %[[V39]] : tensor<4xf32>
// CHECK:         %[[V41:[a-z0-9_]+]] = stablehlo.convert %[[V40]] : (tensor<4xf32>) -> tensor<4xf16>
// CHECK:         return %[[V2]], %[[V5]], %[[V8]], %[[V35]], %[[V38]], %[[V41]] : tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>
// CHECK-NOT:     fxla.
func.func @float_unary_f16(%x: tensor<4xf16>) -> (tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) {
  %0 = "fxla.reciprocal"(%x) : (tensor<4xf16>) -> tensor<4xf16>
  %1 = "fxla.cos"(%x) : (tensor<4xf16>) -> tensor<4xf16>
  %2 = "fxla.tan"(%x) : (tensor<4xf16>) -> tensor<4xf16>
  %3 = "fxla.erf"(%x) : (tensor<4xf16>) -> tensor<4xf16>
  %4 = "fxla.log1p"(%x) : (tensor<4xf16>) -> tensor<4xf16>
  %5 = "fxla.expm1"(%x) : (tensor<4xf16>) -> tensor<4xf16>
  return %0, %1, %2, %3, %4, %5 : tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>
}

// -----

// logical_not/or/xor compare non-bool operands with zero first, then combine the i1 values.
// CHECK-LABEL: func.func @logical_not_or_xor
// CHECK:         %[[C:[a-z0-9_]+]] = stablehlo.constant dense<0> : tensor<4xi32>
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.compare NE, %arg0, %[[C]], SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
// CHECK:         %[[V1:[a-z0-9_]+]] = stablehlo.not %[[V0]] : tensor<4xi1>
// CHECK:         %[[C_0:[a-z0-9_]+]] = stablehlo.constant dense<0> : tensor<4xi32>
// CHECK:         %[[V2:[a-z0-9_]+]] = stablehlo.compare NE, %arg0, %[[C_0]], SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
// CHECK:         %[[CST:[a-z0-9_]+]] = stablehlo.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK:         %[[V3:[a-z0-9_]+]] = stablehlo.compare NE, %arg1, %[[CST]], FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK:         %[[V4:[a-z0-9_]+]] = stablehlo.or %[[V2]], %[[V3]] : tensor<4xi1>
// CHECK:         %[[C_1:[a-z0-9_]+]] = stablehlo.constant dense<0> : tensor<4xi32>
// CHECK:         %[[V5:[a-z0-9_]+]] = stablehlo.compare NE, %arg0, %[[C_1]], SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
// CHECK:         %[[CST_2:[a-z0-9_]+]] = stablehlo.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK:         %[[V6:[a-z0-9_]+]] = stablehlo.compare NE, %arg1, %[[CST_2]], FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK:         %[[V7:[a-z0-9_]+]] = stablehlo.xor %[[V5]], %[[V6]] : tensor<4xi1>
// CHECK:         return %[[V1]], %[[V4]], %[[V7]] : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
// CHECK-NOT:     fxla.
func.func @logical_not_or_xor(%a: tensor<4xi32>, %b: tensor<4xf32>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %0 = "fxla.logical_not"(%a) : (tensor<4xi32>) -> tensor<4xi1>
  %1 = "fxla.logical_or"(%a, %b) : (tensor<4xi32>, tensor<4xf32>) -> tensor<4xi1>
  %2 = "fxla.logical_xor"(%a, %b) : (tensor<4xi32>, tensor<4xf32>) -> tensor<4xi1>
  return %0, %1, %2 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// Bitwise ops convert to the promoted integer type, then one StableHLO op each.
// CHECK-LABEL: func.func @bitwise
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.not %arg0 : tensor<4xi32>
// CHECK:         %[[V1:[a-z0-9_]+]] = stablehlo.convert %arg0 : (tensor<4xi32>) -> tensor<4xi64>
// CHECK:         %[[V2:[a-z0-9_]+]] = stablehlo.and %[[V1]], %arg1 : tensor<4xi64>
// CHECK:         %[[V3:[a-z0-9_]+]] = stablehlo.convert %arg0 : (tensor<4xi32>) -> tensor<4xi64>
// CHECK:         %[[V4:[a-z0-9_]+]] = stablehlo.or %[[V3]], %arg1 : tensor<4xi64>
// CHECK:         %[[V5:[a-z0-9_]+]] = stablehlo.convert %arg0 : (tensor<4xi32>) -> tensor<4xi64>
// CHECK:         %[[V6:[a-z0-9_]+]] = stablehlo.xor %[[V5]], %arg1 : tensor<4xi64>
// CHECK:         return %[[V0]], %[[V2]], %[[V4]], %[[V6]] : tensor<4xi32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>
// CHECK-NOT:     fxla.
func.func @bitwise(%a: tensor<4xi32>, %b: tensor<4xi64>) -> (tensor<4xi32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) {
  %0 = "fxla.bitwise_not"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  %1 = "fxla.bitwise_and"(%a, %b) : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi64>
  %2 = "fxla.bitwise_or"(%a, %b) : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi64>
  %3 = "fxla.bitwise_xor"(%a, %b) : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi64>
  return %0, %1, %2, %3 : tensor<4xi32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>
}

// -----

// fmod is C's remainder (the sign of x): one stablehlo.remainder.
// CHECK-LABEL: func.func @fmod
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.remainder %arg0, %arg1 : tensor<4xf32>
// CHECK:         return %[[V0]] : tensor<4xf32>
// CHECK-NOT:     fxla.
func.func @fmod(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.fmod"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// mish = x * tanh(softplus(x)), softplus linear above its threshold (20).
// CHECK-LABEL: func.func @mish
// CHECK:         %[[CST:[a-z0-9_]+]] = stablehlo.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.multiply %arg0, %[[CST]] : tensor<4xf32>
// CHECK:         %[[V1:[a-z0-9_]+]] = stablehlo.exponential %[[V0]] : tensor<4xf32>
// CHECK:         %[[V2:[a-z0-9_]+]] = stablehlo.log_plus_one %[[V1]] : tensor<4xf32>
// CHECK:         %[[CST_0:[a-z0-9_]+]] = stablehlo.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK:         %[[V3:[a-z0-9_]+]] = stablehlo.divide %[[V2]], %[[CST_0]] : tensor<4xf32>
// CHECK:         %[[CST_1:[a-z0-9_]+]] = stablehlo.constant dense<2.000000e+01> : tensor<4xf32>
// CHECK:         %[[V4:[a-z0-9_]+]] = stablehlo.compare GT, %[[V0]], %[[CST_1]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK:         %[[V5:[a-z0-9_]+]] = stablehlo.select %[[V4]], %arg0, %[[V3]] : tensor<4xi1>, tensor<4xf32>
// CHECK:         %[[V6:[a-z0-9_]+]] = stablehlo.tanh %[[V5]] : tensor<4xf32>
// CHECK:         %[[V7:[a-z0-9_]+]] = stablehlo.multiply %arg0, %[[V6]] : tensor<4xf32>
// CHECK:         return %[[V7]] : tensor<4xf32>
// CHECK-NOT:     fxla.
func.func @mish(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.mish"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// hardsigmoid = relu6(x + 3) / 6 and hardswish = x * relu6(x + 3) / 6, relu6 as a clamp.
// CHECK-LABEL: func.func @hardsigmoid_hardswish
// CHECK:         %[[CST:[a-z0-9_]+]] = stablehlo.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK:         %[[CST_0:[a-z0-9_]+]] = stablehlo.constant dense<3.000000e+00> : tensor<4xf32>
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.add %arg0, %[[CST_0]] : tensor<4xf32>
// CHECK:         %[[CST_1:[a-z0-9_]+]] = stablehlo.constant dense<6.000000e+00> : tensor<4xf32>
// CHECK:         %[[V1:[a-z0-9_]+]] = stablehlo.clamp %[[CST]], %[[V0]], %[[CST_1]] : tensor<4xf32>
// CHECK:         %[[CST_2:[a-z0-9_]+]] = stablehlo.constant dense<6.000000e+00> : tensor<4xf32>
// CHECK:         %[[V2:[a-z0-9_]+]] = stablehlo.divide %[[V1]], %[[CST_2]] : tensor<4xf32>
// CHECK:         %[[CST_3:[a-z0-9_]+]] = stablehlo.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK:         %[[CST_4:[a-z0-9_]+]] = stablehlo.constant dense<3.000000e+00> : tensor<4xf32>
// CHECK:         %[[V3:[a-z0-9_]+]] = stablehlo.add %arg0, %[[CST_4]] : tensor<4xf32>
// CHECK:         %[[CST_5:[a-z0-9_]+]] = stablehlo.constant dense<6.000000e+00> : tensor<4xf32>
// CHECK:         %[[V4:[a-z0-9_]+]] = stablehlo.clamp %[[CST_3]], %[[V3]], %[[CST_5]] : tensor<4xf32>
// CHECK:         %[[V5:[a-z0-9_]+]] = stablehlo.multiply %arg0, %[[V4]] : tensor<4xf32>
// CHECK:         %[[CST_6:[a-z0-9_]+]] = stablehlo.constant dense<6.000000e+00> : tensor<4xf32>
// CHECK:         %[[V6:[a-z0-9_]+]] = stablehlo.divide %[[V5]], %[[CST_6]] : tensor<4xf32>
// CHECK:         return %[[V2]], %[[V6]] : tensor<4xf32>, tensor<4xf32>
// CHECK-NOT:     fxla.
func.func @hardsigmoid_hardswish(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = "fxla.hardsigmoid"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "fxla.hardswish"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// logsigmoid = min(x, 0) - log1p(exp(-|x|)): stable for large |x|.
// CHECK-LABEL: func.func @logsigmoid
// CHECK:         %[[CST:[a-z0-9_]+]] = stablehlo.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.minimum %arg0, %[[CST]] : tensor<4xf32>
// CHECK:         %[[V1:[a-z0-9_]+]] = stablehlo.abs %arg0 : tensor<4xf32>
// CHECK:         %[[V2:[a-z0-9_]+]] = stablehlo.negate %[[V1]] : tensor<4xf32>
// CHECK:         %[[V3:[a-z0-9_]+]] = stablehlo.exponential %[[V2]] : tensor<4xf32>
// CHECK:         %[[V4:[a-z0-9_]+]] = stablehlo.log_plus_one %[[V3]] : tensor<4xf32>
// CHECK:         %[[V5:[a-z0-9_]+]] = stablehlo.subtract %[[V0]], %[[V4]] : tensor<4xf32>
// CHECK:         return %[[V5]] : tensor<4xf32>
// CHECK-NOT:     fxla.
func.func @logsigmoid(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.logsigmoid"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// elu = x where x > 0, else alpha * expm1(x).
// CHECK-LABEL: func.func @elu
// CHECK:         %[[CST:[a-z0-9_]+]] = stablehlo.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.compare GT, %arg0, %[[CST]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK:         %[[V1:[a-z0-9_]+]] = stablehlo.exponential_minus_one %arg0 : tensor<4xf32>
// CHECK:         %[[CST_0:[a-z0-9_]+]] = stablehlo.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK:         %[[V2:[a-z0-9_]+]] = stablehlo.multiply %[[V1]], %[[CST_0]] : tensor<4xf32>
// CHECK:         %[[V3:[a-z0-9_]+]] = stablehlo.select %[[V0]], %arg0, %[[V2]] : tensor<4xi1>, tensor<4xf32>
// CHECK:         return %[[V3]] : tensor<4xf32>
// CHECK-NOT:     fxla.
func.func @elu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.elu"(%x) {alpha = 2.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// softplus = log1p(exp(beta * x)) / beta, and x itself where beta * x > threshold.
// CHECK-LABEL: func.func @softplus
// CHECK:         %[[CST:[a-z0-9_]+]] = stablehlo.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.multiply %arg0, %[[CST]] : tensor<4xf32>
// CHECK:         %[[V1:[a-z0-9_]+]] = stablehlo.exponential %[[V0]] : tensor<4xf32>
// CHECK:         %[[V2:[a-z0-9_]+]] = stablehlo.log_plus_one %[[V1]] : tensor<4xf32>
// CHECK:         %[[CST_0:[a-z0-9_]+]] = stablehlo.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK:         %[[V3:[a-z0-9_]+]] = stablehlo.divide %[[V2]], %[[CST_0]] : tensor<4xf32>
// CHECK:         %[[CST_1:[a-z0-9_]+]] = stablehlo.constant dense<1.000000e+01> : tensor<4xf32>
// CHECK:         %[[V4:[a-z0-9_]+]] = stablehlo.compare GT, %[[V0]], %[[CST_1]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK:         %[[V5:[a-z0-9_]+]] = stablehlo.select %[[V4]], %arg0, %[[V3]] : tensor<4xi1>, tensor<4xf32>
// CHECK:         return %[[V5]] : tensor<4xf32>
// CHECK-NOT:     fxla.
func.func @softplus(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.softplus"(%x) {beta = 2.0 : f64, threshold = 10.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
