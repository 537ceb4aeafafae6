// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// Full conversion: no fxla op or attribute is left anywhere in the output (each case below also ends
// with a CHECK-NOT, which only covers the lines after its last match).
// NOFXLA-NOT: fxla

// The creation family (dialects/fxla/ops_creation.py, lowering/patterns/creation.py) -> StableHLO:
// literals, iotas and random numbers.

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

// -----

// rng (uniform): the stream's THREE_FRY state is the seed with its key xor (stream + 1) * 0x9E3779B97F4A7C15,
// bitcast to ui64; each value is k / 2^24 for the top 24 bits k of a random 32-bit word (exact in f32, < 1).
// CHECK-LABEL: func.func @rng_uniform
// CHECK-SAME:    (%[[SEED:.+]]: tensor<2xi64>)
// CHECK:   %[[KEY:.+]] = stablehlo.constant dense<[-7046029254386353131, 0]> : tensor<2xi64>
// CHECK:   %[[MIXED:.+]] = stablehlo.xor %[[SEED]], %[[KEY]] : tensor<2xi64>
// CHECK:   %[[STATE:.+]] = stablehlo.bitcast_convert %[[MIXED]] : (tensor<2xi64>) -> tensor<2xui64>
// CHECK:   %{{.+}}, %[[BITS:.+]] = stablehlo.rng_bit_generator %[[STATE]], algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x3xui32>)
// CHECK:   %[[EIGHT:.+]] = stablehlo.constant dense<8> : tensor<2x3xui32>
// CHECK:   %[[TOP:.+]] = stablehlo.shift_right_logical %[[BITS]], %[[EIGHT]] : tensor<2x3xui32>
// CHECK:   %[[K:.+]] = stablehlo.convert %[[TOP]] : (tensor<2x3xui32>) -> tensor<2x3xf32>
// CHECK:   %[[SCALE:.+]] = stablehlo.constant dense<5.96046448E-8> : tensor<2x3xf32>
// CHECK:   %[[U:.+]] = stablehlo.multiply %[[K]], %[[SCALE]] : tensor<2x3xf32>
// CHECK:   return %[[U]] : tensor<2x3xf32>
// CHECK-NOT: fxla.
func.func @rng_uniform(%seed: tensor<2xi64>) -> tensor<2x3xf32> {
  %0 = "fxla.rng"(%seed) {shape = array<i64: 2, 3>, distribution = "uniform", stream = 0 : i64} : (tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// rng (normal, f64): Box-Muller on two uniform halves of one draw (53-bit uniforms from 64-bit words),
// sqrt(-2 log(1 - u1)) * cos(2 pi u2); another stream, another key.
// CHECK-LABEL: func.func @rng_normal
// CHECK:   stablehlo.constant dense<[-2691343689449507777, 0]> : tensor<2xi64>
// CHECK:   %{{.+}}, %[[BITS:.+]] = stablehlo.rng_bit_generator %{{.+}}, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x4xui64>)
// CHECK:   %[[ELEVEN:.+]] = stablehlo.constant dense<11> : tensor<2x4xui64>
// CHECK:   stablehlo.shift_right_logical %[[BITS]], %[[ELEVEN]] : tensor<2x4xui64>
// CHECK:   %[[U1:.+]] = stablehlo.reshape %{{.+}} : (tensor<1x4xf64>) -> tensor<4xf64>
// CHECK:   %[[U2:.+]] = stablehlo.reshape %{{.+}} : (tensor<1x4xf64>) -> tensor<4xf64>
// CHECK:   %[[ONE_MINUS:.+]] = stablehlo.subtract %{{.+}}, %[[U1]] : tensor<4xf64>
// CHECK:   %[[LOG:.+]] = stablehlo.log %[[ONE_MINUS]] : tensor<4xf64>
// CHECK:   %[[R:.+]] = stablehlo.sqrt %{{.+}} : tensor<4xf64>
// CHECK:   %[[ANGLE:.+]] = stablehlo.multiply %{{.+}}, %[[U2]] : tensor<4xf64>
// CHECK:   %[[COS:.+]] = stablehlo.cosine %[[ANGLE]] : tensor<4xf64>
// CHECK:   %[[Z:.+]] = stablehlo.multiply %[[R]], %[[COS]] : tensor<4xf64>
// CHECK:   return %[[Z]] : tensor<4xf64>
// CHECK-NOT: fxla.
func.func @rng_normal(%seed: tensor<2xi64>) -> tensor<4xf64> {
  %0 = "fxla.rng"(%seed) {shape = array<i64: 4>, distribution = "normal", stream = 2 : i64} : (tensor<2xi64>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}
