// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// Full conversion: no fxla op or attribute is left anywhere in the output (each case below also ends
// with a CHECK-NOT, which only covers the lines after its last match).
// NOFXLA-NOT: fxla

// The scan family (dialects/fxla/ops_scan.py, lowering/patterns/scan.py) -> StableHLO: scans are
// reduce_windows spanning the scanned dim, padded by size - 1 in front.

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

// cumprod widens integers to i64 first (torch's result type); the init is 1.
// CHECK-LABEL: func.func @cumprod_int
// CHECK:         [[X:%.+]] = stablehlo.convert %arg0 : (tensor<3x4xi32>) -> tensor<3x4xi64>
// CHECK:         [[ONE:%.+]] = stablehlo.constant dense<1> : tensor<i64>
// CHECK:         "stablehlo.reduce_window"([[X]], [[ONE]])
// CHECK-SAME:      padding = dense<{{\[\[}}0, 0], [3, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 1, 4>
// CHECK:           stablehlo.multiply
// CHECK-NOT:     fxla.
func.func @cumprod_int(%x: tensor<3x4xi32>) -> tensor<3x4xi64> {
  %0 = "fxla.cumprod"(%x) {dim = -1 : i64} : (tensor<3x4xi32>) -> tensor<3x4xi64>
  return %0 : tensor<3x4xi64>
}

// -----

// Half precision is scanned in f32 and rounded once.
// CHECK-LABEL: func.func @cumprod_bf16
// CHECK:         stablehlo.convert %arg0 : (tensor<5xbf16>) -> tensor<5xf32>
// CHECK:         "stablehlo.reduce_window"
// CHECK-SAME:      padding = dense<{{\[\[}}4, 0]]>
// CHECK:           stablehlo.multiply {{.+}} : tensor<f32>
// CHECK:         stablehlo.convert {{.+}} : (tensor<5xf32>) -> tensor<5xbf16>
// CHECK-NOT:     fxla.
func.func @cumprod_bf16(%x: tensor<5xbf16>) -> tensor<5xbf16> {
  %0 = "fxla.cumprod"(%x) {dim = 0 : i64} : (tensor<5xbf16>) -> tensor<5xbf16>
  return %0 : tensor<5xbf16>
}

// -----

// cummax: a variadic reduce_window over (values, iota along dim) from (-inf, -1); ties take the later index,
// NaN handling compares each value with itself.
// CHECK-LABEL: func.func @cummax
// CHECK:         [[IOTA:%.+]] = stablehlo.iota dim = 1 : tensor<2x5xi64>
// CHECK:         [[NEGINF:%.+]] = stablehlo.constant dense<0xFF800000> : tensor<f32>
// CHECK:         [[NONE:%.+]] = stablehlo.constant dense<-1> : tensor<i64>
// CHECK:         [[R:%.+]]:2 = "stablehlo.reduce_window"(%arg0, [[IOTA]], [[NEGINF]], [[NONE]])
// CHECK-SAME:      padding = dense<{{\[\[}}0, 0], [4, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 1, 5>
// CHECK:         ^bb0(%[[AV:.+]]: tensor<f32>, %[[AI:.+]]: tensor<i64>, %[[CV:.+]]: tensor<f32>, %[[CI:.+]]: tensor<i64>):
// CHECK:           stablehlo.compare GT, %[[CI]], %[[AI]], SIGNED
// CHECK:           stablehlo.compare GT, %[[CV]], %[[AV]], FLOAT
// CHECK:           stablehlo.compare EQ, %[[CV]], %[[AV]], FLOAT
// CHECK:           stablehlo.compare NE, %[[CV]], %[[CV]], FLOAT
// CHECK:           [[V:%.+]] = stablehlo.select [[PICK:%.+]], %[[CV]], %[[AV]] : tensor<i1>, tensor<f32>
// CHECK:           [[I:%.+]] = stablehlo.select [[PICK]], %[[CI]], %[[AI]] : tensor<i1>, tensor<i64>
// CHECK:           stablehlo.return [[V]], [[I]]
// CHECK:         return [[R]]#0, [[R]]#1
// CHECK-NOT:     fxla.
func.func @cummax(%x: tensor<2x5xf32>) -> (tensor<2x5xf32>, tensor<2x5xi64>) {
  %0:2 = "fxla.cummax"(%x) {dim = 1 : i64} : (tensor<2x5xf32>) -> (tensor<2x5xf32>, tensor<2x5xi64>)
  return %0#0, %0#1 : tensor<2x5xf32>, tensor<2x5xi64>
}

// -----

// cummin on integers: the largest integer as the init, a signed LT, no NaN checks; dim -2 scans dim 0.
// CHECK-LABEL: func.func @cummin_int
// CHECK:         stablehlo.iota dim = 0 : tensor<4x3xi64>
// CHECK:         stablehlo.constant dense<9223372036854775807> : tensor<i64>
// CHECK:         "stablehlo.reduce_window"
// CHECK-SAME:      padding = dense<{{\[\[}}3, 0], [0, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 4, 1>
// CHECK:           stablehlo.compare LT, {{.+}} SIGNED
// CHECK-NOT:       FLOAT
// CHECK:         -> (tensor<4x3xi64>, tensor<4x3xi64>)
// CHECK-NOT:     fxla.
func.func @cummin_int(%x: tensor<4x3xi64>) -> (tensor<4x3xi64>, tensor<4x3xi64>) {
  %0:2 = "fxla.cummin"(%x) {dim = -2 : i64} : (tensor<4x3xi64>) -> (tensor<4x3xi64>, tensor<4x3xi64>)
  return %0#0, %0#1 : tensor<4x3xi64>, tensor<4x3xi64>
}

// -----

// logcumsumexp: the body is a stable logaddexp, max + log1p(exp(min - max)), returning an infinite max as is.
// CHECK-LABEL: func.func @logcumsumexp
// CHECK:         stablehlo.convert %arg0 : (tensor<2x6xf16>) -> tensor<2x6xf32>
// CHECK:         stablehlo.constant dense<0xFF800000> : tensor<f32>
// CHECK:         "stablehlo.reduce_window"
// CHECK-SAME:      padding = dense<{{\[\[}}0, 0], [5, 0]]>
// CHECK:           [[HI:%.+]] = stablehlo.maximum
// CHECK:           [[LO:%.+]] = stablehlo.minimum
// CHECK:           [[D:%.+]] = stablehlo.subtract [[LO]], [[HI]]
// CHECK:           [[E:%.+]] = stablehlo.exponential [[D]]
// CHECK:           [[L:%.+]] = stablehlo.log_plus_one [[E]]
// CHECK:           [[Y:%.+]] = stablehlo.add [[HI]], [[L]]
// CHECK:           [[ABS:%.+]] = stablehlo.abs [[HI]]
// CHECK:           [[INF:%.+]] = stablehlo.compare EQ, [[ABS]]
// CHECK:           stablehlo.select [[INF]], [[HI]], [[Y]]
// CHECK:         stablehlo.convert {{.+}} : (tensor<2x6xf32>) -> tensor<2x6xf16>
// CHECK-NOT:     fxla.
func.func @logcumsumexp(%x: tensor<2x6xf16>) -> tensor<2x6xf16> {
  %0 = "fxla.logcumsumexp"(%x) {dim = 1 : i64} : (tensor<2x6xf16>) -> tensor<2x6xf16>
  return %0 : tensor<2x6xf16>
}

// -----

// An op whose results are all empty (a size-0 dim) becomes empty constants: nothing to compute, and a scan
// window or gather slice of size 0 is invalid StableHLO.
// CHECK-LABEL: func.func @cumprod_empty
// CHECK:         [[E:%.+]] = stablehlo.constant dense<0> : tensor<3x0xi64>
// CHECK-NOT:     reduce_window
// CHECK:         return [[E]] : tensor<3x0xi64>
func.func @cumprod_empty(%x: tensor<3x0xi32>) -> tensor<3x0xi64> {
  %0 = "fxla.cumprod"(%x) {dim = -1 : i64} : (tensor<3x0xi32>) -> tensor<3x0xi64>
  return %0 : tensor<3x0xi64>
}
