// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// Full conversion: no fxla op or attribute is left anywhere in the output.
// NOFXLA-NOT: fxla

// fxla.max_pool (any spatial rank) and fxla.max_pool_with_indices -> StableHLO reduce_window.

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
