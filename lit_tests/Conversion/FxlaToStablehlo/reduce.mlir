// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// NOFXLA-NOT: fxla

// Reductions, scans, sort and top-k fxla ops -> StableHLO.

// amax reduces with maximum from the type's lowest value; keepdim reshapes the result.
// CHECK-LABEL: func.func @amax_keepdim
// CHECK:   %[[V0:.+]] = stablehlo.constant dense<-2147483648> : tensor<i32>
// CHECK:   %[[V1:.+]] = stablehlo.reduce(%arg0 init: %[[V0]]) applies stablehlo.maximum across dimensions = [1] : (tensor<3x4xi32>, tensor<i32>) -> tensor<3xi32>
// CHECK:   %[[V2:.+]] = stablehlo.reshape %[[V1]] : (tensor<3xi32>) -> tensor<3x1xi32>
// CHECK:   return %[[V2]] : tensor<3x1xi32>
// CHECK-NOT: fxla.
func.func @amax_keepdim(%x: tensor<3x4xi32>) -> tensor<3x1xi32> {
  %0 = "fxla.amax"(%x) {dims = array<i64: -1>, keepdim = true} : (tensor<3x4xi32>) -> tensor<3x1xi32>
  return %0 : tensor<3x1xi32>
}

// -----

// argmax is a two-operand reduce over (value, iota): the larger value wins, ties keep the first index.
// CHECK-LABEL: func.func @argmax
// CHECK:   %[[V0:.+]] = stablehlo.iota dim = 1 : tensor<3x4xi64>
// CHECK:   %[[V1:.+]] = stablehlo.constant dense<-9223372036854775808> : tensor<i64>
// CHECK:   %[[V2:.+]] = stablehlo.constant dense<0> : tensor<i64>
// CHECK:   %[[V3:.+]]:2 = stablehlo.reduce(%arg0 init: %[[V1]]), (%[[V0]] init: %[[V2]]) across dimensions = [1] : (tensor<3x4xi64>, tensor<3x4xi64>, tensor<i64>, tensor<i64>) -> (tensor<3xi64>, tensor<3xi64>)
// CHECK:   reducer(%arg1: tensor<i64>, %arg3: tensor<i64>) (%arg2: tensor<i64>, %arg4: tensor<i64>)  {
// CHECK:   %[[V4:.+]] = stablehlo.compare GT, %arg1, %arg3, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
// CHECK:   %[[V5:.+]] = stablehlo.compare EQ, %arg1, %arg3, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
// CHECK:   %[[V6:.+]] = stablehlo.compare LT, %arg2, %arg4 : (tensor<i64>, tensor<i64>) -> tensor<i1>
// CHECK:   %[[V7:.+]] = stablehlo.and %[[V5]], %[[V6]] : tensor<i1>
// CHECK:   %[[V8:.+]] = stablehlo.or %[[V4]], %[[V7]] : tensor<i1>
// CHECK:   %[[V9:.+]] = stablehlo.select %[[V8]], %arg1, %arg3 : tensor<i1>, tensor<i64>
// CHECK:   %[[V10:.+]] = stablehlo.select %[[V8]], %arg2, %arg4 : tensor<i1>, tensor<i64>
// CHECK:   stablehlo.return %[[V9]], %[[V10]] : tensor<i64>, tensor<i64>
// CHECK:   return %[[V3]]#1 : tensor<3xi64>
// CHECK-NOT: fxla.
func.func @argmax(%x: tensor<3x4xi64>) -> tensor<3xi64> {
  %0 = "fxla.argmax"(%x) {dim = 1 : i64, keepdim = false} : (tensor<3x4xi64>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

// var in bf16 computes in f32: mean, centred squares, divided by N - correction.
// CHECK-LABEL: func.func @var_bf16
// CHECK:   %[[V0:.+]] = stablehlo.convert %arg0 : (tensor<2x5xbf16>) -> tensor<2x5xf32>
// CHECK:   %[[V1:.+]] = stablehlo.constant dense<0.000000e+00> : tensor<f32>
// CHECK:   %[[V2:.+]] = stablehlo.reduce(%[[V0]] init: %[[V1]]) applies stablehlo.add across dimensions = [1] : (tensor<2x5xf32>, tensor<f32>) -> tensor<2xf32>
// CHECK:   %[[V3:.+]] = stablehlo.constant dense<5.000000e+00> : tensor<2xf32>
// CHECK:   %[[V4:.+]] = stablehlo.divide %[[V2]], %[[V3]] : tensor<2xf32>
// CHECK:   %[[V5:.+]] = stablehlo.broadcast_in_dim %[[V4]], dims = [0] : (tensor<2xf32>) -> tensor<2x5xf32>
// CHECK:   %[[V6:.+]] = stablehlo.subtract %[[V0]], %[[V5]] : tensor<2x5xf32>
// CHECK:   %[[V7:.+]] = stablehlo.multiply %[[V6]], %[[V6]] : tensor<2x5xf32>
// CHECK:   %[[V8:.+]] = stablehlo.constant dense<0.000000e+00> : tensor<f32>
// CHECK:   %[[V9:.+]] = stablehlo.reduce(%[[V7]] init: %[[V8]]) applies stablehlo.add across dimensions = [1] : (tensor<2x5xf32>, tensor<f32>) -> tensor<2xf32>
// CHECK:   %[[V10:.+]] = stablehlo.constant dense<4.000000e+00> : tensor<2xf32>
// CHECK:   %[[V11:.+]] = stablehlo.divide %[[V9]], %[[V10]] : tensor<2xf32>
// CHECK:   %[[V12:.+]] = stablehlo.convert %[[V11]] : (tensor<2xf32>) -> tensor<2xbf16>
// CHECK:   return %[[V12]] : tensor<2xbf16>
// CHECK-NOT: fxla.
func.func @var_bf16(%x: tensor<2x5xbf16>) -> tensor<2xbf16> {
  %0 = "fxla.var"(%x) {dims = array<i64: 1>, keepdim = false, correction = 1 : i64} : (tensor<2x5xbf16>) -> tensor<2xbf16>
  return %0 : tensor<2xbf16>
}

// -----

// cumsum is a reduce_window over the whole dim with N-1 leading padding; bool sums in i64.
// CHECK-LABEL: func.func @cumsum_bool
// CHECK:   %[[V0:.+]] = stablehlo.convert %arg0 : (tensor<2x4xi1>) -> tensor<2x4xi64>
// CHECK:   %[[V1:.+]] = stablehlo.constant dense<0> : tensor<i64>
// CHECK:   %[[V2:.+]] = "stablehlo.reduce_window"(%[[V0]], %[[V1]]) <{padding = dense<{{\[\[}}0, 0], [3, 0{{\]\]}}> : tensor<2x2xi64>, window_dimensions = array<i64: 1, 4>, window_strides = array<i64: 1, 1>}> ({
// CHECK:   ^bb0(%{{.+}}: tensor<i64>, %{{.+}}: tensor<i64>):
// CHECK:   %[[V3:.+]] = stablehlo.add %arg1, %arg2 : tensor<i64>
// CHECK:   stablehlo.return %[[V3]] : tensor<i64>
// CHECK:   }) : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi64>
// CHECK:   return %[[V2]] : tensor<2x4xi64>
// CHECK-NOT: fxla.
func.func @cumsum_bool(%x: tensor<2x4xi1>) -> tensor<2x4xi64> {
  %0 = "fxla.cumsum"(%x) {dim = -1 : i64} : (tensor<2x4xi1>) -> tensor<2x4xi64>
  return %0 : tensor<2x4xi64>
}

// -----

// topk is a stable sort of (value, iota) in total order (descending), then slices of the first k; -0.0 compares
// as +0.0 and every NaN as +NaN (torch: NaN is the largest, whatever its sign bit).
// CHECK-LABEL: func.func @topk
// CHECK:   %[[V0:.+]] = stablehlo.iota dim = 1 : tensor<3x5xi64>
// CHECK:   %[[V1:.+]]:2 = "stablehlo.sort"(%arg0, %[[V0]]) <{dimension = 1 : i64, is_stable = true}> ({
// CHECK:   ^bb0(%{{.+}}: tensor<f32>, %{{.+}}: tensor<f32>, %{{.+}}: tensor<i64>, %{{.+}}: tensor<i64>):
// CHECK:   %[[ZERO:.+]] = stablehlo.constant dense<0.000000e+00> : tensor<f32>
// CHECK:   %[[NAN:.+]] = stablehlo.constant dense<0x7FC00000> : tensor<f32>
// CHECK:   %[[ISNAN:.+]] = stablehlo.compare NE, %arg1, %arg1
// CHECK:   %[[V3A:.+]] = stablehlo.add %arg1, %[[ZERO]] : tensor<f32>
// CHECK:   %[[V3:.+]] = stablehlo.select %[[ISNAN]], %[[NAN]], %[[V3A]]
// CHECK:   %[[V4:.+]] = stablehlo.select %{{.+}}, %[[NAN]], %{{.+}}
// CHECK:   %[[V5:.+]] = stablehlo.compare GT, %[[V3]], %[[V4]], TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK:   stablehlo.return %[[V5]] : tensor<i1>
// CHECK:   }) : (tensor<3x5xf32>, tensor<3x5xi64>) -> (tensor<3x5xf32>, tensor<3x5xi64>)
// CHECK:   %[[V6:.+]] = stablehlo.slice %[[V1]]#0 [0:3, 0:2] : (tensor<3x5xf32>) -> tensor<3x2xf32>
// CHECK:   %[[V7:.+]] = stablehlo.slice %[[V1]]#1 [0:3, 0:2] : (tensor<3x5xi64>) -> tensor<3x2xi64>
// CHECK:   return %[[V6]], %[[V7]] : tensor<3x2xf32>, tensor<3x2xi64>
// CHECK-NOT: fxla.
func.func @topk(%x: tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>) {
  %0:2 = "fxla.topk"(%x) {k = 2 : i64, dim = -1 : i64, largest = true} : (tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  return %0#0, %0#1 : tensor<3x2xf32>, tensor<3x2xi64>
}
