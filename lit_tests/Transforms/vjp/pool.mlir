// RUN: fxla-opt %s --split-input-file --fxla-vjp | FileCheck %s

// VJP rules of the pool family (lowering/autodiff/pool.py): max pooling routes each window's cotangent to the
// element torch's forward picks, average pooling spreads it over the window.

// max_pool: the element torch picks found from the input and the forward's result (saved): a strided slice of
// the padded input per window element compared with the result, a chain of selects keeping the first one's
// offset; the cotangent scatter-added at the window's position plus that offset, as one i32 position in the
// flattened input (plane by plane: 147 per batch element, 49 per channel).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[Y:.+]]: tensor<2x3x4x4xf32>, %[[CT:.+]]: tensor<2x3x4x4xf32>, %[[X:.+]]: tensor<2x3x7x7xf32>)
// CHECK:         %[[XP:.+]] = fxla.pad %[[X]] {low = [0, 0, 1, 1], high = [0, 0, 1, 1], value = 0.000000e+00}
// CHECK:         %[[T0:.+]] = fxla.slice %[[XP]] {start = [0, 0, 0, 0], limit = [2, 3, 7, 7], stride = [1, 1, 2, 2]}
// CHECK-NEXT:    fxla.eq %[[T0]], %[[Y]]
// CHECK-NOT:     fxla.max_pool_with_indices
// CHECK:         fxla.arange {start = 0.000000e+00, step = 1.470000e+02, length = 2} : () -> tensor<2xi32>
// CHECK:         %[[G:.+]] = fxla.reshape %[[CT]] {shape = [96]}
// CHECK:         %[[S:.+]] = fxla.scatter %{{.+}}, %{{.+}}, %[[G]] {dim = 0, reduce = "add"} : tensor<294xf32>, tensor<96xi32>, tensor<96xf32> -> tensor<294xf32>
// CHECK:         %[[DX:.+]] = fxla.reshape %[[S]] {shape = [2, 3, 7, 7]}
// CHECK:         return %[[DX]]
func.func @main(%x: tensor<2x3x7x7xf32>) -> tensor<2x3x4x4xf32> {
  %0 = "fxla.max_pool"(%x) {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = false} : (tensor<2x3x7x7xf32>) -> tensor<2x3x4x4xf32>
  return %0 : tensor<2x3x4x4xf32>
}

// -----

// max_pool_with_indices (unbatched bf16): through the indices the forward returned (saved), accumulated in f32.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[I:.+]]: tensor<3x4xi64>, %[[CT:.+]]: tensor<3x4xbf16>) -> tensor<3x8xbf16>
// CHECK:         %[[C32:.+]] = fxla.convert %[[CT]] : tensor<3x4xbf16> -> tensor<3x4xf32>
// CHECK:         %[[S:.+]] = fxla.scatter %{{.+}}, %[[I]], %[[C32]] {dim = 1, reduce = "add"}
// CHECK:         %[[DX:.+]] = fxla.convert %[[S]] : tensor<3x8xf32> -> tensor<3x8xbf16>
// CHECK:         return %[[DX]]
func.func @main(%x: tensor<3x8xbf16>) -> (tensor<3x4xbf16>, tensor<3x4xi64>) {
  %0:2 = "fxla.max_pool_with_indices"(%x) {kernel_size = array<i64: 2>, stride = array<i64: 2>, padding = array<i64: 0>, dilation = array<i64: 1>, ceil_mode = false} : (tensor<3x8xbf16>) -> (tensor<3x4xbf16>, tensor<3x4xi64>)
  return %0#0, %0#1 : tensor<3x4xbf16>, tensor<3x4xi64>
}

// -----

// The legacy fxla.max_pool2d differentiates like fxla.max_pool.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[Y:.+]]: tensor<1x2x3x3xf32>, %[[CT:.+]]: tensor<1x2x3x3xf32>, %[[X:.+]]: tensor<1x2x6x6xf32>)
// CHECK:         %[[T:.+]] = fxla.slice %[[X]] {start = [0, 0, 1, 1], limit = [1, 2, 6, 6], stride = [1, 1, 2, 2]}
// CHECK-NEXT:    fxla.eq %[[T]], %[[Y]]
// CHECK:         fxla.scatter %{{.+}}, %{{.+}}, %{{.+}} {dim = 0, reduce = "add"} : tensor<72xf32>, tensor<18xi32>, tensor<18xf32>
func.func @main(%x: tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32> {
  %0 = "fxla.max_pool2d"(%x) {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// avg_pool (ceil_mode, count_include_pad = false): the cotangent divided by torch's per-window counts, spread
// over each window by a transposed convolution with a ones kernel, the padding cut off both ends.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<1x2x3xf32>) -> tensor<1x2x5xf32>
// CHECK:         %[[N:.+]] = fxla.constant {value = dense<[2.000000e+00, 3.000000e+00, 2.000000e+00]> : tensor<3xf32>}
// CHECK:         %[[D:.+]] = fxla.div %[[CT]], %[[N]]
// CHECK:         %[[T:.+]] = fxla.conv %{{.+}}, %{{.+}} {stride = [2], {{.*}}transposed = true{{.*}}} : tensor<2x1x3xf32>, tensor<1x1x3xf32> -> tensor<2x1x7xf32>
// CHECK:         fxla.pad %[[T]] {low = [0, 0, -1], high = [0, 0, -1]{{.*}}} : tensor<2x1x7xf32> -> tensor<2x1x5xf32>
func.func @main(%x: tensor<1x2x5xf32>) -> tensor<1x2x3xf32> {
  %0 = "fxla.avg_pool"(%x) {kernel_size = array<i64: 3>, stride = array<i64: 2>, padding = array<i64: 1>, ceil_mode = true, count_include_pad = false} : (tensor<1x2x5xf32>) -> tensor<1x2x3xf32>
  return %0 : tensor<1x2x3xf32>
}

// -----

// avg_pool with divisor_override: one divisor for every window; nothing to cut off.
// CHECK-LABEL: func.func @backward
// CHECK:         %[[N:.+]] = fxla.constant {value = dense<3.000000e+00> : tensor<f32>}
// CHECK:         fxla.div %{{.+}}, %[[N]] : tensor<2x3x3xf32>, tensor<f32> -> tensor<2x3x3xf32>
// CHECK:         %[[T:.+]] = fxla.conv %{{.+}}, %{{.+}} {{.*}}transposed = true{{.*}}} : tensor<2x1x3x3xf32>, tensor<1x1x2x2xf32> -> tensor<2x1x6x6xf32>
// CHECK-NOT:     fxla.pad
// CHECK:         %[[DX:.+]] = fxla.reshape %[[T]] {shape = [2, 6, 6]}
// CHECK:         return %[[DX]]
func.func @main(%x: tensor<2x6x6xf32>) -> tensor<2x3x3xf32> {
  %0 = "fxla.avg_pool"(%x) {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, divisor_override = 3 : i64} : (tensor<2x6x6xf32>) -> tensor<2x3x3xf32>
  return %0 : tensor<2x3x3xf32>
}
