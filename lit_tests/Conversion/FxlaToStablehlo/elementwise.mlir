// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// Full conversion: no fxla op or attribute is left anywhere in the output (each case below also ends
// with a CHECK-NOT, which only covers the lines after its last match).
// NOFXLA-NOT: fxla

// Elementwise fxla ops -> StableHLO: torch-style promotion and broadcasting become explicit
// stablehlo.convert / stablehlo.broadcast_in_dim ops in front of one StableHLO op.

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

// CHECK-LABEL: func.func @constant
// CHECK:         [[C:%.+]] = stablehlo.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK:         return [[C]] : tensor<2x2xf32>
// CHECK-NOT:     fxla.
func.func @constant() -> tensor<2x2xf32> {
  %0 = "fxla.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
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
