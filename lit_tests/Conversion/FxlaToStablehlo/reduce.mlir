// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// Full conversion: no fxla op or attribute is left anywhere in the output (each case below also ends
// with a CHECK-NOT, which only covers the lines after its last match).
// NOFXLA-NOT: fxla

// The reduce family (dialects/fxla/ops_reduce.py, lowering/patterns/reduce.py) -> StableHLO: reductions,
// arg-reductions, sort and top-k.

// keepdim reduces then reshapes the unit dim back in.
// CHECK-LABEL: func.func @sum_keepdim
// CHECK:         [[S:%.+]] = stablehlo.reduce(%arg0 init: %{{.+}}) applies stablehlo.add across dimensions = [1] : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x4xf32>
// CHECK:         [[R:%.+]] = stablehlo.reshape [[S]] : (tensor<2x4xf32>) -> tensor<2x1x4xf32>
// CHECK:         return [[R]]
// CHECK-NOT:     fxla.
func.func @sum_keepdim(%x: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
  %0 = "fxla.sum"(%x) {dims = array<i64: 1>, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  return %0 : tensor<2x1x4xf32>
}

// -----

// Empty dims reduce everything; integer sums accumulate in i64 (torch.sum).
// CHECK-LABEL: func.func @sum_all_int
// CHECK:         [[X:%.+]] = stablehlo.convert %arg0 : (tensor<2x3xi32>) -> tensor<2x3xi64>
// CHECK:         [[Z:%.+]] = stablehlo.constant dense<0> : tensor<i64>
// CHECK:         stablehlo.reduce([[X]] init: [[Z]]) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x3xi64>, tensor<i64>) -> tensor<i64>
// CHECK-NOT:     fxla.
func.func @sum_all_int(%x: tensor<2x3xi32>) -> tensor<i64> {
  %0 = "fxla.sum"(%x) {dims = array<i64>, keepdim = false} : (tensor<2x3xi32>) -> tensor<i64>
  return %0 : tensor<i64>
}

// -----

// Negative dims are normalised and sorted; the mean divides by the reduced element count (3 * 4).
// CHECK-LABEL: func.func @mean
// CHECK:         [[S:%.+]] = stablehlo.reduce(%arg0 init: %{{.+}}) applies stablehlo.add across dimensions = [1, 2] : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2xf32>
// CHECK:         [[N:%.+]] = stablehlo.constant dense<1.200000e+01> : tensor<2xf32>
// CHECK:         [[M:%.+]] = stablehlo.divide [[S]], [[N]] : tensor<2xf32>
// CHECK:         return [[M]] : tensor<2xf32>
// CHECK-NOT:     fxla.
func.func @mean(%x: tensor<2x3x4xf32>) -> tensor<2xf32> {
  %0 = "fxla.mean"(%x) {dims = array<i64: -1, 1>, keepdim = false} : (tensor<2x3x4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @mean_keepdim
// CHECK:         [[M:%.+]] = stablehlo.divide %{{.+}}, %{{.+}} : tensor<2x3xf32>
// CHECK:         [[R:%.+]] = stablehlo.reshape [[M]] : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
// CHECK:         return [[R]]
// CHECK-NOT:     fxla.
func.func @mean_keepdim(%x: tensor<2x3x4xf32>) -> tensor<2x3x1xf32> {
  %0 = "fxla.mean"(%x) {dims = array<i64: -1>, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  return %0 : tensor<2x3x1xf32>
}

// -----

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

// var in f32 accumulates in f64, as torch's CPU kernel does.
// CHECK-LABEL: func.func @var_f32
// CHECK:   %[[X:.+]] = stablehlo.convert %arg0 : (tensor<2x5xf32>) -> tensor<2x5xf64>
// CHECK:   stablehlo.reduce(%{{.+}} init: %{{.+}}) applies stablehlo.add across dimensions = [1] : (tensor<2x5xf64>, tensor<f64>) -> tensor<2xf64>
// CHECK:   %[[V:.+]] = stablehlo.convert %{{.+}} : (tensor<2xf64>) -> tensor<2xf32>
// CHECK:   return %[[V]] : tensor<2xf32>
func.func @var_f32(%x: tensor<2x5xf32>) -> tensor<2xf32> {
  %0 = "fxla.var"(%x) {dims = array<i64: 1>, keepdim = false, correction = 0 : i64} : (tensor<2x5xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// topk is a stable sort of (value, iota) in total order (descending), then slices of the first k; -0.0 compares
// as +0.0 (a select: x + 0.0 would be folded away) and every NaN as +NaN (torch: NaN is the largest, whatever its sign bit).
// CHECK-LABEL: func.func @topk
// CHECK:   %[[V0:.+]] = stablehlo.iota dim = 1 : tensor<3x5xi64>
// CHECK:   %[[V1:.+]]:2 = "stablehlo.sort"(%arg0, %[[V0]]) <{dimension = 1 : i64, is_stable = true}> ({
// CHECK:   ^bb0(%{{.+}}: tensor<f32>, %{{.+}}: tensor<f32>, %{{.+}}: tensor<i64>, %{{.+}}: tensor<i64>):
// CHECK:   %[[ZERO:.+]] = stablehlo.constant dense<0.000000e+00> : tensor<f32>
// CHECK:   %[[NAN:.+]] = stablehlo.constant dense<0x7FC00000> : tensor<f32>
// CHECK:   %[[ISNAN:.+]] = stablehlo.compare NE, %arg1, %arg1
// CHECK:   %[[ISZERO:.+]] = stablehlo.compare EQ, %arg1, %[[ZERO]]
// CHECK:   %[[V3A:.+]] = stablehlo.select %[[ISZERO]], %[[ZERO]], %arg1 : tensor<i1>, tensor<f32>
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

// -----

// amin reduces with minimum from the type's highest value.
// CHECK-LABEL: func.func @amin_int
// CHECK:         %[[C:[a-z0-9_]+]] = stablehlo.constant dense<2147483647> : tensor<i32>
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.reduce(%arg0 init: %[[C]]) applies stablehlo.minimum across dimensions = [0] : (tensor<2x3xi32>, tensor<i32>) -> tensor<3xi32>
// CHECK:         return %[[V0]] : tensor<3xi32>
// CHECK-NOT:     fxla.
func.func @amin_int(%x: tensor<2x3xi32>) -> tensor<3xi32> {
  %0 = "fxla.amin"(%x) {dims = array<i64: 0>, keepdim = false} : (tensor<2x3xi32>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

// argmin: a (value, index) reduce like argmax with the LT direction; NaN wins, the first one.
// CHECK-LABEL: func.func @argmin
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.iota dim = 1 : tensor<2x5xi64>
// CHECK:         %[[CST:[a-z0-9_]+]] = stablehlo.constant dense<0x7F800000> : tensor<f32>
// CHECK:         %[[C:[a-z0-9_]+]] = stablehlo.constant dense<0> : tensor<i64>
// CHECK:         %[[V1:[a-z0-9_]+]]:2 = stablehlo.reduce(%arg0 init: %[[CST]]), (%[[V0]] init: %[[C]]) across dimensions = [1] : (tensor<2x5xf32>, tensor<2x5xi64>, tensor<f32>, tensor<i64>) -> (tensor<2xf32>, tensor<2xi64>)
// CHECK:         reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i64>, %arg4: tensor<i64>)  {
// CHECK:         %[[V3:[a-z0-9_]+]] = stablehlo.compare LT, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK:         %[[V4:[a-z0-9_]+]] = stablehlo.compare EQ, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK:         %[[V5:[a-z0-9_]+]] = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK:         %[[V6:[a-z0-9_]+]] = stablehlo.compare NE, %arg3, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK:         %[[V7:[a-z0-9_]+]] = stablehlo.not %[[V6]] : tensor<i1>
// CHECK:         %[[V8:[a-z0-9_]+]] = stablehlo.and %[[V5]], %[[V7]] : tensor<i1>
// CHECK:         %[[V9:[a-z0-9_]+]] = stablehlo.not %[[V6]] : tensor<i1>
// CHECK:         %[[V10:[a-z0-9_]+]] = stablehlo.and %[[V3]], %[[V9]] : tensor<i1>
// CHECK:         %[[V11:[a-z0-9_]+]] = stablehlo.or %[[V8]], %[[V10]] : tensor<i1>
// CHECK:         %[[V12:[a-z0-9_]+]] = stablehlo.and %[[V5]], %[[V6]] : tensor<i1>
// CHECK:         %[[V13:[a-z0-9_]+]] = stablehlo.or %[[V4]], %[[V12]] : tensor<i1>
// CHECK:         %[[V14:[a-z0-9_]+]] = stablehlo.compare LT, %arg2, %arg4 : (tensor<i64>, tensor<i64>) -> tensor<i1>
// CHECK:         %[[V15:[a-z0-9_]+]] = stablehlo.and %[[V13]], %[[V14]] : tensor<i1>
// CHECK:         %[[V16:[a-z0-9_]+]] = stablehlo.or %[[V11]], %[[V15]] : tensor<i1>
// CHECK:         %[[V17:[a-z0-9_]+]] = stablehlo.select %[[V16]], %arg1, %arg3 : tensor<i1>, tensor<f32>
// CHECK:         %[[V18:[a-z0-9_]+]] = stablehlo.select %[[V16]], %arg2, %arg4 : tensor<i1>, tensor<i64>
// CHECK:         stablehlo.return %[[V17]], %[[V18]] : tensor<f32>, tensor<i64>
// CHECK:         }
// CHECK:         %[[V2:[a-z0-9_]+]] = stablehlo.reshape %[[V1]]#1 : (tensor<2xi64>) -> tensor<2x1xi64>
// CHECK:         return %[[V2]] : tensor<2x1xi64>
// CHECK-NOT:     fxla.
func.func @argmin(%x: tensor<2x5xf32>) -> tensor<2x1xi64> {
  %0 = "fxla.argmin"(%x) {dim = 1 : i64, keepdim = true} : (tensor<2x5xf32>) -> tensor<2x1xi64>
  return %0 : tensor<2x1xi64>
}

// -----

// prod widens integers to i64 first (torch's result type); the init is 1.
// CHECK-LABEL: func.func @prod_int
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.convert %arg0 : (tensor<2x3xi32>) -> tensor<2x3xi64>
// CHECK:         %[[C:[a-z0-9_]+]] = stablehlo.constant dense<1> : tensor<i64>
// CHECK:         %[[V1:[a-z0-9_]+]] = stablehlo.reduce(%[[V0]] init: %[[C]]) applies stablehlo.multiply across dimensions = [0, 1] : (tensor<2x3xi64>, tensor<i64>) -> tensor<i64>
// CHECK:         return %[[V1]] : tensor<i64>
// CHECK-NOT:     fxla.
func.func @prod_int(%x: tensor<2x3xi32>) -> tensor<i64> {
  %0 = "fxla.prod"(%x) {dims = array<i64>, keepdim = false} : (tensor<2x3xi32>) -> tensor<i64>
  return %0 : tensor<i64>
}

// -----

// any/all compare with zero, then reduce with or (init false) / and (init true).
// CHECK-LABEL: func.func @any_all
// CHECK:         %[[CST:[a-z0-9_]+]] = stablehlo.constant dense<0.000000e+00> : tensor<2x3xf32>
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.compare NE, %arg0, %[[CST]], FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK:         %[[C:[a-z0-9_]+]] = stablehlo.constant dense<false> : tensor<i1>
// CHECK:         %[[V1:[a-z0-9_]+]] = stablehlo.reduce(%[[V0]] init: %[[C]]) applies stablehlo.or across dimensions = [1] : (tensor<2x3xi1>, tensor<i1>) -> tensor<2xi1>
// CHECK:         %[[CST_0:[a-z0-9_]+]] = stablehlo.constant dense<0.000000e+00> : tensor<2x3xf32>
// CHECK:         %[[V2:[a-z0-9_]+]] = stablehlo.compare NE, %arg0, %[[CST_0]], FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK:         %[[C_1:[a-z0-9_]+]] = stablehlo.constant dense<true> : tensor<i1>
// CHECK:         %[[V3:[a-z0-9_]+]] = stablehlo.reduce(%[[V2]] init: %[[C_1]]) applies stablehlo.and across dimensions = [1] : (tensor<2x3xi1>, tensor<i1>) -> tensor<2xi1>
// CHECK:         return %[[V1]], %[[V3]] : tensor<2xi1>, tensor<2xi1>
// CHECK-NOT:     fxla.
func.func @any_all(%x: tensor<2x3xf32>) -> (tensor<2xi1>, tensor<2xi1>) {
  %0 = "fxla.any"(%x) {dims = array<i64: 1>, keepdim = false} : (tensor<2x3xf32>) -> tensor<2xi1>
  %1 = "fxla.all"(%x) {dims = array<i64: 1>, keepdim = false} : (tensor<2x3xf32>) -> tensor<2xi1>
  return %0, %1 : tensor<2xi1>, tensor<2xi1>
}

// -----

// logsumexp subtracts the maximum unless it is infinite, then adds it back after the log.
// CHECK-LABEL: func.func @logsumexp
// CHECK:         %[[CST:[a-z0-9_]+]] = stablehlo.constant dense<0xFF800000> : tensor<f32>
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.reduce(%arg0 init: %[[CST]]) applies stablehlo.maximum across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
// CHECK:         %[[V1:[a-z0-9_]+]] = stablehlo.abs %[[V0]] : tensor<2xf32>
// CHECK:         %[[CST_0:[a-z0-9_]+]] = stablehlo.constant dense<0x7F800000> : tensor<2xf32>
// CHECK:         %[[V2:[a-z0-9_]+]] = stablehlo.compare NE, %[[V1]], %[[CST_0]] : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
// CHECK:         %[[CST_1:[a-z0-9_]+]] = stablehlo.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK:         %[[V3:[a-z0-9_]+]] = stablehlo.select %[[V2]], %[[V0]], %[[CST_1]] : tensor<2xi1>, tensor<2xf32>
// CHECK:         %[[V4:[a-z0-9_]+]] = stablehlo.broadcast_in_dim %[[V3]], dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
// CHECK:         %[[V5:[a-z0-9_]+]] = stablehlo.subtract %arg0, %[[V4]] : tensor<2x3xf32>
// CHECK:         %[[V6:[a-z0-9_]+]] = stablehlo.exponential %[[V5]] : tensor<2x3xf32>
// CHECK:         %[[CST_2:[a-z0-9_]+]] = stablehlo.constant dense<0.000000e+00> : tensor<f32>
// CHECK:         %[[V7:[a-z0-9_]+]] = stablehlo.reduce(%[[V6]] init: %[[CST_2]]) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
// CHECK:         %[[V8:[a-z0-9_]+]] = stablehlo.log %[[V7]] : tensor<2xf32>
// CHECK:         %[[V9:[a-z0-9_]+]] = stablehlo.add %[[V8]], %[[V3]] : tensor<2xf32>
// CHECK:         return %[[V9]] : tensor<2xf32>
// CHECK-NOT:     fxla.
func.func @logsumexp(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "fxla.logsumexp"(%x) {dims = array<i64: 1>, keepdim = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// sort is a stable two-operand stablehlo.sort (values, iota); floats compare in total order with every NaN
// made the largest value and -0.0 equal to 0.0.
// CHECK-LABEL: func.func @sort_descending
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.iota dim = 1 : tensor<2x4xi64>
// CHECK:         %[[V1:[a-z0-9_]+]]:2 = "stablehlo.sort"(%arg0, %[[V0]]) <{dimension = 1 : i64, is_stable = true}> ({
// CHECK:         ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>, %arg3: tensor<i64>, %arg4: tensor<i64>):
// CHECK:         %[[CST:[a-z0-9_]+]] = stablehlo.constant dense<0.000000e+00> : tensor<f32>
// CHECK:         %[[CST_0:[a-z0-9_]+]] = stablehlo.constant dense<0x7FC00000> : tensor<f32>
// CHECK:         %[[V2:[a-z0-9_]+]] = stablehlo.compare NE, %arg1, %arg1 : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK:         %[[Z1:[a-z0-9_]+]] = stablehlo.compare EQ, %arg1, %[[CST]] : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK:         %[[V3:[a-z0-9_]+]] = stablehlo.select %[[Z1]], %[[CST]], %arg1 : tensor<i1>, tensor<f32>
// CHECK:         %[[V4:[a-z0-9_]+]] = stablehlo.select %[[V2]], %[[CST_0]], %[[V3]] : tensor<i1>, tensor<f32>
// CHECK:         %[[V5:[a-z0-9_]+]] = stablehlo.compare NE, %arg2, %arg2 : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK:         %[[Z2:[a-z0-9_]+]] = stablehlo.compare EQ, %arg2, %[[CST]] : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK:         %[[V6:[a-z0-9_]+]] = stablehlo.select %[[Z2]], %[[CST]], %arg2 : tensor<i1>, tensor<f32>
// CHECK:         %[[V7:[a-z0-9_]+]] = stablehlo.select %[[V5]], %[[CST_0]], %[[V6]] : tensor<i1>, tensor<f32>
// CHECK:         %[[V8:[a-z0-9_]+]] = stablehlo.compare GT, %[[V4]], %[[V7]], TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK:         stablehlo.return %[[V8]] : tensor<i1>
// CHECK:         }) : (tensor<2x4xf32>, tensor<2x4xi64>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
// CHECK:         return %[[V1]]#0, %[[V1]]#1 : tensor<2x4xf32>, tensor<2x4xi64>
// CHECK-NOT:     fxla.
func.func @sort_descending(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>) {
  %0, %1 = "fxla.sort"(%x) {dim = -1 : i64, descending = true} : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
  return %0, %1 : tensor<2x4xf32>, tensor<2x4xi64>
}
