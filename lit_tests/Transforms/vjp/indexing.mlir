// RUN: fxla-opt %s --split-input-file --fxla-vjp | FileCheck %s

// VJP rules of the indexing family (lowering/autodiff/indexing.py), with torch's conventions.

// A strided slice: the cotangent spread out by the strides (reshape, pad, reshape per strided dim), then padded
// into place; the final pad's negative high crops the zeros after the last element.
// CHECK-LABEL: func.func @backward
// CHECK:         %[[R0:.+]] = fxla.reshape %arg0 {shape = [2, 1, 3]}
// CHECK:         fxla.pad %[[R0]] {low = [0, 0, 0], high = [0, 1, 0], value = 0.000000e+00} : tensor<2x1x3xf32> -> tensor<2x2x3xf32>
// CHECK:         %[[W:.+]] = fxla.reshape %{{.+}} {shape = [4, 6]}
// CHECK:         %[[G:.+]] = fxla.pad %[[W]] {low = [1, 0], high = [1, -1], value = 0.000000e+00} : tensor<4x6xf32> -> tensor<6x5xf32>
// CHECK:         return %[[G]]
func.func @main(%x: tensor<6x5xf32>) -> tensor<2x3xf32> {
  %0 = "fxla.slice"(%x) {start = array<i64: 1, 0>, limit = array<i64: 5, 5>, stride = array<i64: 2, 2>} : (tensor<6x5xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// gather: the cotangent scatter-added into zeros (repeated indices accumulate); the index gets none.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<3x2xf32>, %[[I:.+]]: tensor<3x2xi64>) -> tensor<3x4xf32>
// CHECK:         %[[Z:.+]] = fxla.expand %{{.+}} {shape = [3, 4]}
// CHECK:         %[[G:.+]] = fxla.scatter %[[Z]], %[[I]], %[[CT]] {dim = 1, reduce = "add"}
// CHECK:         return %[[G]]
func.func @main(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>) -> tensor<3x2xf32> {
  %0 = "fxla.gather"(%x, %i) {dim = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// index_select (bf16, dim -1, i32 indices): the index broadcast over the cotangent's shape, a scatter-add that
// accumulates in f32, rounded to bf16 once.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<5x3xbf16>, %[[I:.+]]: tensor<3xi32>) -> tensor<5x4xbf16>
// CHECK:         %[[COL:.+]] = fxla.reshape %[[I]] {shape = [1, 3]}
// CHECK:         %[[IDX:.+]] = fxla.expand %[[COL]] {shape = [5, 3]} : tensor<1x3xi32> -> tensor<5x3xi32>
// CHECK:         %[[WIDE:.+]] = fxla.convert %[[CT]] : tensor<5x3xbf16> -> tensor<5x3xf32>
// CHECK:         %[[SUM:.+]] = fxla.scatter %{{.+}}, %[[IDX]], %[[WIDE]] {dim = 1, reduce = "add"} : tensor<5x4xf32>, tensor<5x3xi32>, tensor<5x3xf32> -> tensor<5x4xf32>
// CHECK:         %[[G:.+]] = fxla.convert %[[SUM]] : tensor<5x4xf32> -> tensor<5x4xbf16>
// CHECK:         return %[[G]]
func.func @main(%x: tensor<5x4xbf16>, %i: tensor<3xi32>) -> tensor<5x3xbf16> {
  %0 = "fxla.index_select"(%x, %i) {dim = -1 : i64} : (tensor<5x4xbf16>, tensor<3xi32>) -> tensor<5x3xbf16>
  return %0 : tensor<5x3xbf16>
}

// -----

// scatter (overwrite), src larger than the index: the input gets the cotangent with the written positions
// zeroed, src the cotangent gathered, padded with zeros over the part the scatter did not read.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4x3xf32>, %[[I:.+]]: tensor<2x3xi64>) -> (tensor<4x3xf32>, tensor<3x3xf32>)
// CHECK:         %[[DX:.+]] = fxla.scatter %[[CT]], %[[I]], %{{.+}} {dim = 0, reduce = "none"}
// CHECK:         %[[PICK:.+]] = fxla.gather %[[CT]], %[[I]] {dim = 0}
// CHECK:         %[[DS:.+]] = fxla.pad %[[PICK]] {low = [0, 0], high = [1, 0], value = 0.000000e+00} : tensor<2x3xf32> -> tensor<3x3xf32>
// CHECK:         return %[[DX]], %[[DS]]
func.func @main(%x: tensor<4x3xf32>, %i: tensor<2x3xi64>, %s: tensor<3x3xf32>) -> tensor<4x3xf32> {
  %0 = "fxla.scatter"(%x, %i, %s) {dim = 0 : i64, reduce = "none"} : (tensor<4x3xf32>, tensor<2x3xi64>, tensor<3x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// scatter add: the input gets the cotangent itself, src the cotangent gathered.
// CHECK-LABEL: func.func @backward
// CHECK:         %[[CT:.+]] = fxla.mul %arg1, %arg0
// CHECK:         %[[DS:.+]] = fxla.gather %[[CT]], %arg2 {dim = 0}
// CHECK:         return %[[CT]], %[[DS]]
func.func @main(%x: tensor<4x3xf32>, %i: tensor<2x3xi64>, %s: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = "fxla.scatter"(%x, %i, %s) {dim = 0 : i64, reduce = "add"} : (tensor<4x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %1 = "fxla.exp"(%0) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}

// -----

// scatter multiply (scatter_reduce prod), torch's formula: the input's gradient is the product recomputed with
// its zeros as 1, divided by it; a src element that is its target's only zero gets the product recomputed with
// it as 1, the others the result divided by themselves.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[RES:.+]]: tensor<4x3xf32>, %[[CT:.+]]: tensor<4x3xf32>, %[[X:.+]]: tensor<4x3xf32>, %[[I:.+]]: tensor<2x3xi64>, %[[S:.+]]: tensor<2x3xf32>)
// CHECK:         %[[MX:.+]] = fxla.where %{{.+}}, %{{.+}}, %[[X]]
// CHECK:         %[[P:.+]] = fxla.scatter %[[MX]], %[[I]], %[[S]] {dim = 0, reduce = "multiply"}
// CHECK:         %[[DX:.+]] = fxla.div %{{.+}}, %[[MX]]
// CHECK:         %[[ZEROS:.+]] = fxla.scatter %{{.+}}, %[[I]], %{{.+}} {dim = 0, reduce = "add"}
// CHECK:         %[[ONE:.+]] = fxla.logical_and
// CHECK:         %[[DS:.+]] = fxla.where %[[ONE]], %{{.+}}, %{{.+}} : tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK:         return %[[DX]], %[[DS]]
func.func @main(%x: tensor<4x3xf32>, %i: tensor<2x3xi64>, %s: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = "fxla.scatter"(%x, %i, %s) {dim = 0 : i64, reduce = "multiply"} : (tensor<4x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// scatter amax (dim -1): the cotangent divided by the number of input and src elements equal to the result.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[RES:.+]]: tensor<4x3xf32>, %[[CT:.+]]: tensor<4x3xf32>, %[[X:.+]]: tensor<4x3xf32>, %[[I:.+]]: tensor<2x3xi64>, %[[S:.+]]: tensor<2x3xf32>)
// CHECK:         %[[XT:.+]] = fxla.convert %{{.+}} : tensor<4x3xi1> -> tensor<4x3xf32>
// CHECK:         %[[N:.+]] = fxla.scatter %[[XT]], %[[I]], %{{.+}} {dim = 1, reduce = "add"}
// CHECK:         %[[SHARE:.+]] = fxla.div %[[CT]], %[[N]]
// CHECK:         %[[DX:.+]] = fxla.mul %[[XT]], %[[SHARE]]
// CHECK:         return %[[DX]], %{{.+}}
func.func @main(%x: tensor<4x3xf32>, %i: tensor<2x3xi64>, %s: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = "fxla.scatter"(%x, %i, %s) {dim = -1 : i64, reduce = "amax"} : (tensor<4x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// A 0-d scatter: the same formulas on 1-element vectors.
// CHECK-LABEL: func.func @backward
// CHECK:         %[[DX:.+]] = fxla.scatter %{{.+}}, %{{.+}}, %{{.+}} {dim = 0, reduce = "none"} : tensor<1xf32>, tensor<1xi64>, tensor<1xf32> -> tensor<1xf32>
// CHECK:         %[[DS:.+]] = fxla.gather
// CHECK:         %[[DX0:.+]] = fxla.reshape %[[DX]] {shape = []} : tensor<1xf32> -> tensor<f32>
// CHECK:         %[[DS0:.+]] = fxla.reshape %[[DS]] {shape = []} : tensor<1xf32> -> tensor<f32>
// CHECK:         return %[[DX0]], %[[DS0]]
func.func @main(%x: tensor<f32>, %i: tensor<i64>, %s: tensor<f32>) -> tensor<f32> {
  %0 = "fxla.scatter"(%x, %i, %s) {dim = 0 : i64, reduce = "none"} : (tensor<f32>, tensor<i64>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// where: each branch gets the cotangent where the condition picks it, summed to its broadcast shape and
// converted to its element type; the condition gets none.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<2x3xf32>, %[[C:.+]]: tensor<2x3xi1>) -> (tensor<3xf32>, tensor<2x1xf16>)
// CHECK:         %[[A:.+]] = fxla.where %[[C]], %[[CT]], %{{.+}}
// CHECK:         %[[DX:.+]] = fxla.sum %[[A]] {dims = [0], keepdim = false}
// CHECK:         %[[B:.+]] = fxla.where %[[C]], %{{.+}}, %[[CT]]
// CHECK:         %[[DY:.+]] = fxla.convert %{{.+}} : tensor<2x1xf32> -> tensor<2x1xf16>
// CHECK:         return %[[DX]], %[[DY]]
func.func @main(%c: tensor<2x3xi1>, %x: tensor<3xf32>, %y: tensor<2x1xf16>) -> tensor<2x3xf32> {
  %0 = "fxla.where"(%c, %x, %y) : (tensor<2x3xi1>, tensor<3xf32>, tensor<2x1xf16>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// tril / triu: the cotangent masked the same way (same diagonal).
// CHECK-LABEL: func.func @backward
// CHECK:         %[[U:.+]] = fxla.triu %arg1 {diagonal = 2}
// CHECK:         %[[L:.+]] = fxla.tril %arg0 {diagonal = -1}
// CHECK:         fxla.add %[[U]], %[[L]]
func.func @main(%x: tensor<2x4x5xf32>) -> (tensor<2x4x5xf32>, tensor<2x4x5xf32>) {
  %0 = "fxla.tril"(%x) {diagonal = -1 : i64} : (tensor<2x4x5xf32>) -> tensor<2x4x5xf32>
  %1 = "fxla.triu"(%x) {diagonal = 2 : i64} : (tensor<2x4x5xf32>) -> tensor<2x4x5xf32>
  return %0, %1 : tensor<2x4x5xf32>, tensor<2x4x5xf32>
}
