// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// Full conversion: no fxla op or attribute is left anywhere in the output.
// NOFXLA-NOT: fxla

// Scans (cumprod, cummax/cummin, logcumsumexp) are reduce_windows spanning the scanned dim, padded by
// size - 1 in front; scatter's reduce modes pick the scatter body.

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

// scatter reduce = "amax" / "amin" / "multiply": the scatter body is maximum / minimum / multiply.
// CHECK-LABEL: func.func @scatter_amax
// CHECK:         "stablehlo.scatter"(%arg0
// CHECK:           stablehlo.maximum
// CHECK-NOT:     fxla.
func.func @scatter_amax(%x: tensor<4x3xf32>, %i: tensor<2x3xi64>, %s: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = "fxla.scatter"(%x, %i, %s) {dim = 0 : i64, reduce = "amax"} : (tensor<4x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func.func @scatter_amin
// CHECK:         "stablehlo.scatter"(%arg0
// CHECK:           stablehlo.minimum {{.+}} : tensor<i64>
// CHECK-NOT:     fxla.
func.func @scatter_amin(%x: tensor<4x3xi64>, %i: tensor<4x2xi64>, %s: tensor<4x3xi64>) -> tensor<4x3xi64> {
  %0 = "fxla.scatter"(%x, %i, %s) {dim = 1 : i64, reduce = "amin"} : (tensor<4x3xi64>, tensor<4x2xi64>, tensor<4x3xi64>) -> tensor<4x3xi64>
  return %0 : tensor<4x3xi64>
}

// -----

// CHECK-LABEL: func.func @scatter_multiply
// CHECK:         "stablehlo.scatter"(%arg0
// CHECK:           stablehlo.multiply {{.+}} : tensor<f32>
// CHECK-NOT:     fxla.
func.func @scatter_multiply(%x: tensor<5xf32>, %i: tensor<3xi64>, %s: tensor<3xf32>) -> tensor<5xf32> {
  %0 = "fxla.scatter"(%x, %i, %s) {dim = 0 : i64, reduce = "multiply"} : (tensor<5xf32>, tensor<3xi64>, tensor<3xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// On bool, multiply is a logical and.
// CHECK-LABEL: func.func @scatter_multiply_bool
// CHECK:         "stablehlo.scatter"(%arg0
// CHECK:           stablehlo.and {{.+}} : tensor<i1>
// CHECK-NOT:     fxla.
func.func @scatter_multiply_bool(%x: tensor<5xi1>, %i: tensor<3xi64>, %s: tensor<3xi1>) -> tensor<5xi1> {
  %0 = "fxla.scatter"(%x, %i, %s) {dim = 0 : i64, reduce = "multiply"} : (tensor<5xi1>, tensor<3xi64>, tensor<3xi1>) -> tensor<5xi1>
  return %0 : tensor<5xi1>
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
