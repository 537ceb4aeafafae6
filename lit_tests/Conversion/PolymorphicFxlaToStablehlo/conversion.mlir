// RUN: fxla-opt %s --split-input-file --convert-polymorphic-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// A polymorphic program (? dims, sizes as fxla.dim_size arithmetic, size operands named by fxla.sym) keeps its ?
// dims: the reshape's symbolic shape becomes dynamic_reshape's shape operand, arange a dynamic_iota, the add's
// broadcast a dynamic_broadcast_in_dim -- each from the size operand of the ? result dim.
// CHECK-LABEL: func.func @reshape_arange
// CHECK:         %[[S:.+]] = stablehlo.get_dimension_size %arg0, dim = 1 : (tensor<2x?x16xf32>) -> tensor<i32>
// CHECK:         %[[R:.+]] = stablehlo.dynamic_reshape %arg0, %{{.+}} : (tensor<2x?x16xf32>, tensor<4xi64>) -> tensor<2x?x4x4xf32>
// CHECK:         %[[I:.+]] = stablehlo.dynamic_iota %{{.+}}, dim = 0 : (tensor<1xi64>) -> tensor<?xi64>
// CHECK:         stablehlo.dynamic_broadcast_in_dim %{{.+}}, dims = [1, 2] : (tensor<?x1xf32>, tensor<3xi64>) -> tensor<2x?x16xf32>
// NOFXLA-NOT:  fxla.
func.func @reshape_arange(%x: tensor<2x?x16xf32>) -> (tensor<2x?x4x4xf32>, tensor<2x?x16xf32>) {
  %s = fxla.dim_size %x {dim = 1} : tensor<2x?x16xf32> -> tensor<i64>
  %r = "fxla.reshape"(%x, %s, %s) {fxla.sym = ["shape.1", "result0.1"], shape = array<i64: 2, -9223372036854775808, 4, 4>} : (tensor<2x?x16xf32>, tensor<i64>, tensor<i64>) -> tensor<2x?x4x4xf32>
  %a = "fxla.arange"(%s, %s) {fxla.sym = ["length", "result0.0"], length = -9223372036854775808 : i64, start = 0.000000e+00 : f64, step = 1.000000e+00 : f64} : (tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %f = "fxla.convert"(%a, %s) {fxla.sym = ["result0.0"]} : (tensor<?xi64>, tensor<i64>) -> tensor<?xf32>
  %c = "fxla.reshape"(%f, %s, %s) {fxla.sym = ["shape.0", "result0.0"], shape = array<i64: -9223372036854775808, 1>} : (tensor<?xf32>, tensor<i64>, tensor<i64>) -> tensor<?x1xf32>
  %y = "fxla.add"(%x, %c, %s) {fxla.sym = ["result0.1"]} : (tensor<2x?x16xf32>, tensor<?x1xf32>, tensor<i64>) -> tensor<2x?x16xf32>
  return %r, %y : tensor<2x?x4x4xf32>, tensor<2x?x16xf32>
}

// -----

// A slice whose bounds are sizes: real_dynamic_slice with the bounds as operands.
// CHECK-LABEL: func.func @last_row
// CHECK:         %[[L:.+]] = stablehlo.real_dynamic_slice %arg0, %{{.+}}, %{{.+}}, %{{.+}} : (tensor<2x?x16xf32>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>) -> tensor<2x1x16xf32>
// CHECK:         return %[[L]]
func.func @last_row(%x: tensor<2x?x16xf32>) -> tensor<2x1x16xf32> {
  %s = fxla.dim_size %x {dim = 1} : tensor<2x?x16xf32> -> tensor<i64>
  %m = fxla.constant {value = dense<-1> : tensor<i64>} : () -> tensor<i64>
  %t = fxla.add %m, %s : tensor<i64>, tensor<i64> -> tensor<i64>
  %l = "fxla.slice"(%x, %t, %s) {fxla.sym = ["start.1", "limit.1"], limit = array<i64: 2, -9223372036854775808, 16>, start = array<i64: 0, -9223372036854775808, 0>, stride = array<i64: 1, 1, 1>} : (tensor<2x?x16xf32>, tensor<i64>, tensor<i64>) -> tensor<2x1x16xf32>
  return %l : tensor<2x1x16xf32>
}

// -----

// A mean over the ? dim divides by its size as a value (the element count is a size, not a number).
// CHECK-LABEL: func.func @mean_over_symbolic_dim
// CHECK:         %[[N:.+]] = stablehlo.get_dimension_size %arg0, dim = 1
// CHECK:         %[[SUM:.+]] = stablehlo.reduce(%arg0 init: %{{.+}}) applies stablehlo.add across dimensions = [1] : (tensor<2x?xf32>, tensor<f32>) -> tensor<2xf32>
// CHECK:         %[[COUNT:.+]] = stablehlo.convert %{{.+}} : (tensor<i64>) -> tensor<f32>
// CHECK:         stablehlo.divide %[[SUM]], %{{.+}} : tensor<2xf32>
func.func @mean_over_symbolic_dim(%x: tensor<2x?xf32>) -> tensor<2xf32> {
  %m = fxla.mean %x {dims = [1], keepdim = false} : tensor<2x?xf32> -> tensor<2xf32>
  return %m : tensor<2xf32>
}

// -----

// index_select of rows of a table whose other dim is ?: dynamic_gather, the slice sizes as an operand.
// CHECK-LABEL: func.func @select_rows
// CHECK:         %[[G:.+]] = "stablehlo.dynamic_gather"(%arg0, %{{[0-9]+}}, %{{[0-9]+}})
// CHECK-SAME:      : (tensor<5x?xf32>, tensor<3x1xi64>, tensor<2xi64>) -> tensor<3x?xf32>
func.func @select_rows(%x: tensor<5x?xf32>, %i: tensor<3xi64>) -> tensor<3x?xf32> {
  %s = fxla.dim_size %x {dim = 1} : tensor<5x?xf32> -> tensor<i64>
  %y = "fxla.index_select"(%x, %i, %s) {dim = 0 : i64, fxla.sym = ["result0.1"]} : (tensor<5x?xf32>, tensor<3xi64>, tensor<i64>) -> tensor<3x?xf32>
  return %y : tensor<3x?xf32>
}

// -----

// A cumulative sum along the ? dim: its window and front padding are the size, so it is StableHLO's
// stablehlo.dynamic_reduce_window custom call (the sizes as operands, the body a private function), which
// StableHLO's shape refinement turns into a reduce_window.
// CHECK-LABEL: func.func @cumsum_over_symbolic_dim
// CHECK:         %[[C:.+]] = stablehlo.custom_call @stablehlo.dynamic_reduce_window(%arg0, %{{.+}}) {called_computations = [@[[BODY:.+]]]}
// CHECK-SAME:      -> tensor<2x?xf32>
// CHECK:       func.func private @[[BODY]](%{{.+}}: tensor<f32>, %{{.+}}: tensor<f32>) -> tensor<f32>
// CHECK:         stablehlo.add
func.func @cumsum_over_symbolic_dim(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %s = fxla.dim_size %x {dim = 1} : tensor<2x?xf32> -> tensor<i64>
  %c = "fxla.cumsum"(%x, %s) {dim = 1 : i64, fxla.sym = ["result0.1"]} : (tensor<2x?xf32>, tensor<i64>) -> tensor<2x?xf32>
  return %c : tensor<2x?xf32>
}

// -----

// A ceil-mode max pool over a ? dim: the last window may overhang the input, so the high padding is
// max(out * s + d * (k - 1) + 1 - s - (size + p), 0) of the sizes, a dynamic_reduce_window operand.
// CHECK-LABEL: func.func @max_pool_ceil_over_symbolic_dim
// CHECK:         %[[HIGH:.+]] = stablehlo.maximum
// CHECK:         stablehlo.custom_call @stablehlo.dynamic_reduce_window(%arg0, %{{.+}}) {called_computations = [@[[BODY:.+]]]}
// CHECK-SAME:      -> tensor<2x3x?x4xf32>
// CHECK:       func.func private @[[BODY]](%{{.+}}: tensor<f32>, %{{.+}}: tensor<f32>) -> tensor<f32>
// CHECK:         stablehlo.maximum
func.func @max_pool_ceil_over_symbolic_dim(%x: tensor<2x3x?x8xf32>, %out: tensor<i64>) -> tensor<2x3x?x4xf32> {
  %y = "fxla.max_pool2d"(%x, %out) {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = true, fxla.sym = ["result0.2"]} : (tensor<2x3x?x8xf32>, tensor<i64>) -> tensor<2x3x?x4xf32>
  return %y : tensor<2x3x?x4xf32>
}

// -----

// Random numbers of a ? shape: StableHLO's dynamic_rng_bit_generator custom call with the shape as an operand
// (the refinement makes it the static path's rng_bit_generator: the same numbers at every size). A normal draw
// takes two rows of uniforms, each a real_dynamic_slice.
// CHECK-LABEL: func.func @normal_of_symbolic_shape
// CHECK:         %[[SHAPE:.+]] = stablehlo.concatenate
// CHECK:         %{{.+}}:2 = stablehlo.custom_call @stablehlo.dynamic_rng_bit_generator(%{{.+}}, %[[SHAPE]]) {rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>} : (tensor<2xui64>, tensor<3xi64>) -> (tensor<2xui64>, tensor<2x2x?xui32>)
// CHECK-COUNT-2: stablehlo.real_dynamic_slice %{{.+}} : (tensor<2x2x?xf32>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>) -> tensor<1x2x?xf32>
func.func @normal_of_symbolic_shape(%x: tensor<2x?xf32>, %seed: tensor<2xi64>) -> tensor<2x?xf32> {
  %s = fxla.dim_size %x {dim = 1} : tensor<2x?xf32> -> tensor<i64>
  %r = "fxla.rng"(%seed, %s, %s) {distribution = "normal", fxla.sym = ["shape.1", "result0.1"], shape = array<i64: 2, -9223372036854775808>, stream = 0 : i64} : (tensor<2xi64>, tensor<i64>, tensor<i64>) -> tensor<2x?xf32>
  return %r : tensor<2x?xf32>
}

// -----

// A ? stride (an einsum diagonal: n + 1 over the merged n * n elements) is real_dynamic_slice's strides operand.
// CHECK-LABEL: func.func @diagonal_stride
// CHECK:         %[[STEP:.+]] = stablehlo.add %{{.+}}, %arg1 : tensor<i64>
// CHECK:         %[[S:.+]] = stablehlo.reshape %[[STEP]] : (tensor<i64>) -> tensor<1xi64>
// CHECK:         %[[STRIDES:.+]] = stablehlo.concatenate %{{.+}}, %[[S]], dim = 0 : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
// CHECK:         %[[D:.+]] = stablehlo.real_dynamic_slice %{{.+}}, %{{.+}}, %{{.+}}, %[[STRIDES]] : (tensor<2x?xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x?xf32>
// CHECK:         return %[[D]]
func.func @diagonal_stride(%x: tensor<2x?xf32>, %n: tensor<i64>) -> tensor<2x?xf32> {
  %m = fxla.dim_size %x {dim = 1} : tensor<2x?xf32> -> tensor<i64>
  %one = fxla.constant {value = dense<1> : tensor<i64>} : () -> tensor<i64>
  %step = fxla.add %one, %n : tensor<i64>, tensor<i64> -> tensor<i64>
  %d = "fxla.slice"(%x, %m, %step, %n) {fxla.sym = ["limit.1", "stride.1", "result0.1"], limit = array<i64: 2, -9223372036854775808>, start = array<i64: 0, 0>, stride = array<i64: 1, -9223372036854775808>} : (tensor<2x?xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<2x?xf32>
  return %d : tensor<2x?xf32>
}

// -----

// A recurrent layer over ? steps and a ? batch: the loop's trip count is the steps' size, its carried values keep
// their ? dims, and each step's row is a real_dynamic_slice of start + sizes (refined to a dynamic_slice).
// CHECK-LABEL: func.func @lstm_over_symbolic_steps_and_batch
// CHECK:         %[[ZEROS:.+]] = stablehlo.dynamic_broadcast_in_dim %{{.+}}, %{{.+}}, dims = [] : (tensor<f32>, tensor<3xi64>) -> tensor<?x?x4xf32>
// CHECK:         %[[T:.+]] = stablehlo.convert %{{.+}} : (tensor<i32>) -> tensor<i64>
// CHECK:         stablehlo.while(%{{.+}} = %{{.+}}, %{{.+}} = %[[T]], {{.+}}) : tensor<i64>, tensor<i64>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x16xf32>, tensor<16x4xf32>
// CHECK:         %[[START:.+]] = stablehlo.concatenate
// CHECK:         %[[LIMIT:.+]] = stablehlo.add %[[START]], %{{.+}} : tensor<3xi64>
// CHECK:         stablehlo.real_dynamic_slice %{{.+}}, %[[START]], %[[LIMIT]], %{{.+}} : (tensor<?x?x16xf32>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>) -> tensor<1x?x16xf32>
// NOFXLA-NOT:  fxla.
func.func @lstm_over_symbolic_steps_and_batch(%x: tensor<?x?x16xf32>, %h: tensor<?x4xf32>, %c: tensor<?x4xf32>, %w: tensor<16x4xf32>) -> tensor<?x?x4xf32> {
  %t = fxla.dim_size %x {dim = 0} : tensor<?x?x16xf32> -> tensor<i64>
  %n = fxla.dim_size %x {dim = 1} : tensor<?x?x16xf32> -> tensor<i64>
  %0:2 = "fxla.lstm"(%x, %h, %c, %w, %t, %n, %t, %n) {fxla.sym = ["result0.0", "result0.1", "result1.0", "result1.1"], operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>} : (tensor<?x?x16xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<16x4xf32>, tensor<i64>, tensor<i64>, tensor<i64>, tensor<i64>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>)
  return %0#0 : tensor<?x?x4xf32>
}

// -----

// A size the program fixed (the last dim: 4) on a value whose StableHLO op infers ? there (a transpose of a
// tensor<?x?x?xf32> argument): the value is dynamic_reshape'd to the fxla op's type, so every use -- func.return
// of a forward's residuals included -- keeps the type the fxla program states.
// CHECK-LABEL: func.func @fixed_dim_kept
// CHECK:         %[[T:.+]] = stablehlo.transpose %arg0, dims = [1, 0, 2] : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
// CHECK:         %[[R:.+]] = stablehlo.dynamic_reshape %[[T]], %{{.+}} : (tensor<?x?x?xf32>, tensor<3xi64>) -> tensor<?x?x4xf32>
// CHECK:         return %[[R]] : tensor<?x?x4xf32>
func.func @fixed_dim_kept(%x: tensor<?x?x?xf32>) -> tensor<?x?x4xf32> {
  %a = fxla.dim_size %x {dim = 0} : tensor<?x?x?xf32> -> tensor<i64>
  %b = fxla.dim_size %x {dim = 1} : tensor<?x?x?xf32> -> tensor<i64>
  %0 = "fxla.permute"(%x, %b, %a) {dims = array<i64: 1, 0, 2>, fxla.sym = ["result0.0", "result0.1"]} : (tensor<?x?x?xf32>, tensor<i64>, tensor<i64>) -> tensor<?x?x4xf32>
  return %0 : tensor<?x?x4xf32>
}
