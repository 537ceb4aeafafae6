// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// Full conversion: no fxla op or attribute is left anywhere in the output (each case below also ends
// with a CHECK-NOT, which only covers the lines after its last match).
// NOFXLA-NOT: fxla

// The indexing family (dialects/fxla/ops_indexing.py, lowering/patterns/indexing.py) -> StableHLO: slice,
// gather, scatter (its reduce modes pick the scatter body), select and triangular masks.

// fxla.slice takes normalised bounds: it is one stablehlo.slice.
// CHECK-LABEL: func.func @slice
// CHECK:   %[[V0:.+]] = stablehlo.slice %arg0 [1:3, 0:6:3] : (tensor<4x6xf32>) -> tensor<2x2xf32>
// CHECK:   return %[[V0]] : tensor<2x2xf32>
// CHECK-NOT: fxla.
func.func @slice(%x: tensor<4x6xf32>) -> tensor<2x2xf32> {
  %0 = "fxla.slice"(%x) {start = array<i64: 1, 0>, limit = array<i64: 3, 6>, stride = array<i64: 1, 3>} : (tensor<4x6xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// torch.gather: each index element becomes a full coordinate (iota along the other dims), one gather.
// CHECK-LABEL: func.func @gather
// CHECK:   %[[V0:.+]] = stablehlo.iota dim = 0 : tensor<3x2xi64>
// CHECK:   %[[V1:.+]] = stablehlo.reshape %[[V0]] : (tensor<3x2xi64>) -> tensor<3x2x1xi64>
// CHECK:   %[[V2:.+]] = stablehlo.reshape %arg1 : (tensor<3x2xi64>) -> tensor<3x2x1xi64>
// CHECK:   %[[V3:.+]] = stablehlo.concatenate %[[V1]], %[[V2]], dim = 2 : (tensor<3x2x1xi64>, tensor<3x2x1xi64>) -> tensor<3x2x2xi64>
// CHECK:   %[[V4:.+]] = "stablehlo.gather"(%arg0, %[[V3]]) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0, 1], start_index_map = [0, 1], index_vector_dim = 2>, slice_sizes = array<i64: 1, 1>}> : (tensor<3x4xf32>, tensor<3x2x2xi64>) -> tensor<3x2xf32>
// CHECK:   return %[[V4]] : tensor<3x2xf32>
// CHECK-NOT: fxla.
func.func @gather(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>) -> tensor<3x2xf32> {
  %0 = "fxla.gather"(%x, %i) {dim = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// index_select: a gather whose slices keep every other dim whole; i32 indices widen to i64.
// CHECK-LABEL: func.func @index_select
// CHECK:   %[[V0:.+]] = stablehlo.convert %arg1 : (tensor<3xi32>) -> tensor<3xi64>
// CHECK:   %[[V1:.+]] = stablehlo.reshape %[[V0]] : (tensor<3xi64>) -> tensor<3x1xi64>
// CHECK:   %[[V2:.+]] = "stablehlo.gather"(%arg0, %[[V1]]) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>, slice_sizes = array<i64: 5, 1>}> : (tensor<5x4xf32>, tensor<3x1xi64>) -> tensor<5x3xf32>
// CHECK:   return %[[V2]] : tensor<5x3xf32>
// CHECK-NOT: fxla.
func.func @index_select(%x: tensor<5x4xf32>, %i: tensor<3xi32>) -> tensor<5x3xf32> {
  %0 = "fxla.index_select"(%x, %i) {dim = -1 : i64} : (tensor<5x4xf32>, tensor<3xi32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// scatter with reduce = add: src is cut to the index shape, the update region adds.
// CHECK-LABEL: func.func @scatter_add
// CHECK:   %[[V0:.+]] = stablehlo.slice %arg2 [0:2, 0:4] : (tensor<2x5xf32>) -> tensor<2x4xf32>
// CHECK:   %[[V1:.+]] = stablehlo.iota dim = 1 : tensor<2x4xi64>
// CHECK:   %[[V2:.+]] = stablehlo.reshape %arg1 : (tensor<2x4xi64>) -> tensor<2x4x1xi64>
// CHECK:   %[[V3:.+]] = stablehlo.reshape %[[V1]] : (tensor<2x4xi64>) -> tensor<2x4x1xi64>
// CHECK:   %[[V4:.+]] = stablehlo.concatenate %[[V2]], %[[V3]], dim = 2 : (tensor<2x4x1xi64>, tensor<2x4x1xi64>) -> tensor<2x4x2xi64>
// CHECK:   %[[V5:.+]] = "stablehlo.scatter"(%arg0, %[[V4]], %[[V0]]) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 2>}> ({
// CHECK:   ^bb0(%{{.+}}: tensor<f32>, %{{.+}}: tensor<f32>):
// CHECK:   %[[V6:.+]] = stablehlo.add %arg3, %arg4 : tensor<f32>
// CHECK:   stablehlo.return %[[V6]] : tensor<f32>
// CHECK:   }) : (tensor<3x4xf32>, tensor<2x4x2xi64>, tensor<2x4xf32>) -> tensor<3x4xf32>
// CHECK:   return %[[V5]] : tensor<3x4xf32>
// CHECK-NOT: fxla.
func.func @scatter_add(%x: tensor<3x4xf32>, %i: tensor<2x4xi64>, %s: tensor<2x5xf32>) -> tensor<3x4xf32> {
  %0 = "fxla.scatter"(%x, %i, %s) {dim = 0 : i64, reduce = "add"} : (tensor<3x4xf32>, tensor<2x4xi64>, tensor<2x5xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// i32 indices stay i32 (the max-pool backward's flat positions), and so do the iotas beside them.
// CHECK-LABEL: func.func @scatter_i32
// CHECK:   %[[I:.+]] = stablehlo.iota dim = 1 : tensor<2x4xi32>
// CHECK:   stablehlo.concatenate %{{.+}}, %{{.+}}, dim = 2 : (tensor<2x4x1xi32>, tensor<2x4x1xi32>) -> tensor<2x4x2xi32>
// CHECK:   }) : (tensor<3x4xf32>, tensor<2x4x2xi32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// CHECK-NOT: fxla.
func.func @scatter_i32(%x: tensor<3x4xf32>, %i: tensor<2x4xi32>, %s: tensor<2x4xf32>) -> tensor<3x4xf32> {
  %0 = "fxla.scatter"(%x, %i, %s) {dim = 0 : i64, reduce = "add"} : (tensor<3x4xf32>, tensor<2x4xi32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// A 0-d scatter writes (or combines into) the input's one element: no stablehlo.scatter.
// CHECK-LABEL: func.func @scatter_0d
// CHECK:   %[[V0:.+]] = stablehlo.multiply %arg0, %arg2 : tensor<f32>
// CHECK:   return %[[V0]] : tensor<f32>
// CHECK-NOT: fxla.
func.func @scatter_0d(%x: tensor<f32>, %i: tensor<i64>, %s: tensor<f32>) -> tensor<f32> {
  %0 = "fxla.scatter"(%x, %i, %s) {dim = 0 : i64, reduce = "multiply"} : (tensor<f32>, tensor<i64>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// where broadcasts and promotes input/other (i64 with a 0-d f32 gives f32), then selects.
// CHECK-LABEL: func.func @where
// CHECK:   %[[V0:.+]] = stablehlo.convert %arg1 : (tensor<4xi64>) -> tensor<4xf32>
// CHECK:   %[[V1:.+]] = stablehlo.broadcast_in_dim %[[V0]], dims = [1] : (tensor<4xf32>) -> tensor<3x4xf32>
// CHECK:   %[[V2:.+]] = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
// CHECK:   %[[V3:.+]] = stablehlo.select %arg0, %[[V1]], %[[V2]] : tensor<3x4xi1>, tensor<3x4xf32>
// CHECK:   return %[[V3]] : tensor<3x4xf32>
// CHECK-NOT: fxla.
func.func @where(%c: tensor<3x4xi1>, %x: tensor<4xi64>, %y: tensor<f32>) -> tensor<3x4xf32> {
  %0 = "fxla.where"(%c, %x, %y) : (tensor<3x4xi1>, tensor<4xi64>, tensor<f32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// tril keeps j - i <= diagonal via iotas, a compare and a select.
// CHECK-LABEL: func.func @tril
// CHECK:   %[[V0:.+]] = stablehlo.iota dim = 0 : tensor<3x4xi64>
// CHECK:   %[[V1:.+]] = stablehlo.iota dim = 1 : tensor<3x4xi64>
// CHECK:   %[[V2:.+]] = stablehlo.subtract %[[V1]], %[[V0]] : tensor<3x4xi64>
// CHECK:   %[[V3:.+]] = stablehlo.constant dense<1> : tensor<3x4xi64>
// CHECK:   %[[V4:.+]] = stablehlo.compare LE, %[[V2]], %[[V3]], SIGNED : (tensor<3x4xi64>, tensor<3x4xi64>) -> tensor<3x4xi1>
// CHECK:   %[[V5:.+]] = stablehlo.constant dense<0> : tensor<3x4xi64>
// CHECK:   %[[V6:.+]] = stablehlo.select %[[V4]], %arg0, %[[V5]] : tensor<3x4xi1>, tensor<3x4xi64>
// CHECK:   return %[[V6]] : tensor<3x4xi64>
// CHECK-NOT: fxla.
func.func @tril(%x: tensor<3x4xi64>) -> tensor<3x4xi64> {
  %0 = "fxla.tril"(%x) {diagonal = 1 : i64} : (tensor<3x4xi64>) -> tensor<3x4xi64>
  return %0 : tensor<3x4xi64>
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

// triu keeps j - i >= diagonal (columns minus rows over the last two dims) and zeroes the rest.
// CHECK-LABEL: func.func @triu
// CHECK:         %[[V0:[a-z0-9_]+]] = stablehlo.iota dim = 0 : tensor<3x4xi64>
// CHECK:         %[[V1:[a-z0-9_]+]] = stablehlo.iota dim = 1 : tensor<3x4xi64>
// CHECK:         %[[V2:[a-z0-9_]+]] = stablehlo.subtract %[[V1]], %[[V0]] : tensor<3x4xi64>
// CHECK:         %[[C:[a-z0-9_]+]] = stablehlo.constant dense<-1> : tensor<3x4xi64>
// CHECK:         %[[V3:[a-z0-9_]+]] = stablehlo.compare GE, %[[V2]], %[[C]], SIGNED : (tensor<3x4xi64>, tensor<3x4xi64>) -> tensor<3x4xi1>
// CHECK:         %[[C_0:[a-z0-9_]+]] = stablehlo.constant dense<0> : tensor<3x4xi32>
// CHECK:         %[[V4:[a-z0-9_]+]] = stablehlo.select %[[V3]], %arg0, %[[C_0]] : tensor<3x4xi1>, tensor<3x4xi32>
// CHECK:         return %[[V4]] : tensor<3x4xi32>
// CHECK-NOT:     fxla.
func.func @triu(%x: tensor<3x4xi32>) -> tensor<3x4xi32> {
  %0 = "fxla.triu"(%x) {diagonal = -1 : i64} : (tensor<3x4xi32>) -> tensor<3x4xi32>
  return %0 : tensor<3x4xi32>
}
