// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// Full conversion: no fxla op or attribute is left anywhere in the output (each case below also ends
// with a CHECK-NOT, which only covers the lines after its last match).
// NOFXLA-NOT: fxla

// The pool family (dialects/fxla/ops_pool.py, lowering/patterns/pool.py) -> StableHLO: max and average
// pooling of any spatial rank as reduce_windows; fxla.max_pool2d is the legacy 2-D spelling of fxla.max_pool.

// max_pool2d is a reduce_window with a maximum body and a -inf init; N and C get unit windows.
// CHECK-LABEL: func.func @max_pool2d
// CHECK:         [[INIT:%.+]] = stablehlo.constant dense<0xFF800000> : tensor<f32>
// CHECK:         "stablehlo.reduce_window"(%arg0, [[INIT]]) <{padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>}>
// CHECK:         ^bb0([[L:%.+]]: tensor<f32>, [[R:%.+]]: tensor<f32>):
// CHECK-NEXT:      [[M:%.+]] = stablehlo.maximum [[L]], [[R]] : tensor<f32>
// CHECK-NEXT:      stablehlo.return [[M]] : tensor<f32>
// CHECK:         (tensor<2x3x8x8xf32>, tensor<f32>) -> tensor<2x3x4x4xf32>
// CHECK-NOT:     fxla.
func.func @max_pool2d(%x: tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32> {
  %0 = "fxla.max_pool2d"(%x) {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = false} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
  return %0 : tensor<2x3x4x4xf32>
}

// -----

// Unbatched CHW input with padding and ceil_mode; padding covers the extra (ceil) window.
// CHECK-LABEL: func.func @max_pool2d_ceil_chw
// CHECK:         "stablehlo.reduce_window"(%arg0, %{{.+}}) <{padding = dense<{{\[\[}}0, 0], [1, 1], [1, 1]]> : tensor<3x2xi64>
// CHECK-SAME:      window_dimensions = array<i64: 1, 3, 3>, window_strides = array<i64: 1, 2, 2>
// CHECK:         stablehlo.maximum
// CHECK:         (tensor<3x7x7xf32>, tensor<f32>) -> tensor<3x4x4xf32>
// CHECK-NOT:     fxla.
func.func @max_pool2d_ceil_chw(%x: tensor<3x7x7xf32>) -> tensor<3x4x4xf32> {
  %0 = "fxla.max_pool2d"(%x) {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = true} : (tensor<3x7x7xf32>) -> tensor<3x4x4xf32>
  return %0 : tensor<3x4x4xf32>
}

// -----

// avg_pool: a summing reduce_window, divided by torch's per-window counts (a constant; with
// count_include_pad=false the border windows count only real elements).
// CHECK-LABEL: func.func @avg_pool2d
// CHECK:         [[S:%.+]] = "stablehlo.reduce_window"(%arg0, %{{.+}}) <{padding = dense<{{\[\[}}0, 0], [0, 0], [1, 1], [1, 1]]>
// CHECK:           stablehlo.add
// CHECK:         [[C:%.+]] = stablehlo.constant dense<{{\[\[}}4.000000e+00, 6.000000e+00, 4.000000e+00]
// CHECK:         [[B:%.+]] = stablehlo.broadcast_in_dim [[C]], dims = [2, 3]
// CHECK:         stablehlo.divide [[S]], [[B]] : tensor<1x2x3x3xf32>
// CHECK-NOT:     fxla.
func.func @avg_pool2d(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %0 = "fxla.avg_pool"(%x) {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false, divisor_override = 0 : i64} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// Half-precision average pooling sums in f32 and rounds once.
// CHECK-LABEL: func.func @avg_pool1d_bf16
// CHECK:         stablehlo.convert %arg0 : (tensor<2x8xbf16>) -> tensor<2x8xf32>
// CHECK:         "stablehlo.reduce_window"
// CHECK:         stablehlo.divide
// CHECK:         stablehlo.convert %{{.+}} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// CHECK-NOT:     fxla.
func.func @avg_pool1d_bf16(%x: tensor<2x8xbf16>) -> tensor<2x4xbf16> {
  %0 = "fxla.avg_pool"(%x) {kernel_size = array<i64: 2>, stride = array<i64: 2>, padding = array<i64: 0>} : (tensor<2x8xbf16>) -> tensor<2x4xbf16>
  return %0 : tensor<2x4xbf16>
}

// -----

// 1-D: the window covers the last dim only; ceil_mode adds high padding (here none is needed beyond p = 1).
// CHECK-LABEL: func.func @max_pool_1d_ceil
// CHECK:         [[INIT:%.+]] = stablehlo.constant dense<0xFF800000> : tensor<f32>
// CHECK:         "stablehlo.reduce_window"(%arg0, [[INIT]])
// CHECK-SAME:      padding = dense<{{\[\[}}0, 0], [0, 0], [1, 1]]> : tensor<3x2xi64>
// CHECK-SAME:      window_dimensions = array<i64: 1, 1, 3>, window_strides = array<i64: 1, 1, 2>
// CHECK:           stablehlo.maximum
// CHECK:         -> tensor<2x3x5xf32>
// CHECK-NOT:     fxla.
func.func @max_pool_1d_ceil(%x: tensor<2x3x9xf32>) -> tensor<2x3x5xf32> {
  %0 = "fxla.max_pool"(%x) {kernel_size = array<i64: 3>, stride = array<i64: 2>, padding = array<i64: 1>, dilation = array<i64: 1>, ceil_mode = true} : (tensor<2x3x9xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// 3-D with dilation; integer input takes the smallest integer as the init (padding never wins).
// CHECK-LABEL: func.func @max_pool_3d_int
// CHECK:         [[INIT:%.+]] = stablehlo.constant dense<-9223372036854775808> : tensor<i64>
// CHECK:         "stablehlo.reduce_window"(%arg0, [[INIT]])
// CHECK-SAME:      window_dilations = array<i64: 1, 1, 1, 2, 2>, window_dimensions = array<i64: 1, 1, 2, 2, 2>
// CHECK:           stablehlo.maximum
// CHECK:         -> tensor<1x2x3x3x2xi64>
// CHECK-NOT:     fxla.
func.func @max_pool_3d_int(%x: tensor<1x2x4x5x4xi64>) -> tensor<1x2x3x3x2xi64> {
  %0 = "fxla.max_pool"(%x) {kernel_size = array<i64: 2, 2, 2>, stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, dilation = array<i64: 1, 2, 2>, ceil_mode = false} : (tensor<1x2x4x5x4xi64>) -> tensor<1x2x3x3x2xi64>
  return %0 : tensor<1x2x3x3x2xi64>
}

// -----

// With indices: one variadic reduce_window over (values, row-major spatial positions h * W + w); padding carries
// the largest i64 as its position so that it loses every tie; the body picks greater, then first, then NaN.
// CHECK-LABEL: func.func @max_pool_with_indices_2d
// CHECK:         [[H:%.+]] = stablehlo.iota dim = 1 : tensor<3x4x4xi64>
// CHECK:         [[W4:%.+]] = stablehlo.constant dense<4> : tensor<3x4x4xi64>
// CHECK:         [[HW:%.+]] = stablehlo.multiply [[H]], [[W4]]
// CHECK:         [[W:%.+]] = stablehlo.iota dim = 2 : tensor<3x4x4xi64>
// CHECK:         [[POS:%.+]] = stablehlo.add [[HW]], [[W]]
// CHECK:         [[VINIT:%.+]] = stablehlo.constant dense<0xFF80> : tensor<bf16>
// CHECK:         [[IINIT:%.+]] = stablehlo.constant dense<9223372036854775807> : tensor<i64>
// CHECK:         [[R:%.+]]:2 = "stablehlo.reduce_window"(%arg0, [[POS]], [[VINIT]], [[IINIT]])
// CHECK-SAME:      window_dimensions = array<i64: 1, 2, 2>, window_strides = array<i64: 1, 2, 2>
// CHECK:           stablehlo.compare GT, %{{.+}}, %{{.+}}, FLOAT
// CHECK:           stablehlo.compare LT, %{{.+}}, %{{.+}}, SIGNED
// CHECK:           stablehlo.compare NE, %{{.+}}, %{{.+}}, FLOAT
// CHECK:           stablehlo.select
// CHECK:           stablehlo.select
// CHECK:         -> (tensor<3x2x2xbf16>, tensor<3x2x2xi64>)
// CHECK:         return [[R]]#0, [[R]]#1
// CHECK-NOT:     fxla.
func.func @max_pool_with_indices_2d(%x: tensor<3x4x4xbf16>) -> (tensor<3x2x2xbf16>, tensor<3x2x2xi64>) {
  %0:2 = "fxla.max_pool_with_indices"(%x) {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = false} : (tensor<3x4x4xbf16>) -> (tensor<3x2x2xbf16>, tensor<3x2x2xi64>)
  return %0#0, %0#1 : tensor<3x2x2xbf16>, tensor<3x2x2xi64>
}

// -----

// Integer input: no NaN handling in the body.
// CHECK-LABEL: func.func @max_pool_with_indices_1d_int
// CHECK:         "stablehlo.reduce_window"
// CHECK-SAME:      padding = dense<{{\[\[}}0, 0], [0, 0], [1, 1]]>
// CHECK-NOT:       FLOAT
// CHECK:         -> (tensor<2x3x4xi32>, tensor<2x3x4xi64>)
// CHECK-NOT:     fxla.
func.func @max_pool_with_indices_1d_int(%x: tensor<2x3x7xi32>) -> (tensor<2x3x4xi32>, tensor<2x3x4xi64>) {
  %0:2 = "fxla.max_pool_with_indices"(%x) {kernel_size = array<i64: 3>, stride = array<i64: 2>, padding = array<i64: 1>, dilation = array<i64: 1>, ceil_mode = false} : (tensor<2x3x7xi32>) -> (tensor<2x3x4xi32>, tensor<2x3x4xi64>)
  return %0#0, %0#1 : tensor<2x3x4xi32>, tensor<2x3x4xi64>
}
