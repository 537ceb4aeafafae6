// RUN: fxla-opt %s --split-input-file --fxla-vjp | FileCheck %s

// VJP rules of the reduce family (lowering/autodiff/reduce.py): the cotangent goes back over the reduced dims,
// with torch's conventions for ties (amax/amin), zeros (prod), N <= correction (var) and indices (sort/topk).

// sum: the cotangent is reshaped to the kept dims (negative dims normalised) and broadcast back.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<3xf32>) -> tensor<2x3x4xf32>
// CHECK:         %[[K:.+]] = fxla.reshape %[[CT]] {shape = [1, 3, 1]}
// CHECK-NEXT:    %[[G:.+]] = fxla.expand %[[K]] {shape = [2, 3, 4]}
// CHECK-NEXT:    return %[[G]]
func.func @main(%x: tensor<2x3x4xf32>) -> tensor<3xf32> {
  %0 = "fxla.sum"(%x) {dims = array<i64: -1, 0>, keepdim = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// mean in bf16: the division by the count (257, not a bf16 number) is done in f32, as torch does.
// CHECK-LABEL: func.func @backward
// CHECK:         %[[W:.+]] = fxla.convert %arg0 : tensor<2x1xbf16> -> tensor<2x1xf32>
// CHECK:         %[[N:.+]] = fxla.constant {value = dense<2.570000e+02> : tensor<f32>}
// CHECK:         %[[D:.+]] = fxla.div %[[W]], %[[N]]
// CHECK:         fxla.convert %[[D]] : tensor<2x1xf32> -> tensor<2x1xbf16>
func.func @main(%x: tensor<2x257xbf16>) -> tensor<2x1xbf16> {
  %0 = "fxla.mean"(%x) {dims = array<i64: 1>, keepdim = true} : (tensor<2x257xbf16>) -> tensor<2x1xbf16>
  return %0 : tensor<2x1xbf16>
}

// -----

// amax: torch's scale_grad_by_count -- the gradient divided evenly among the elements equal to the result.
// CHECK-LABEL: func.func @backward
// CHECK:         %[[MASK:.+]] = fxla.eq %[[X:.+]], %{{.+}} : tensor<2x3xf32>, tensor<2x1xf32> -> tensor<2x3xi1>
// CHECK-NEXT:    %[[COUNT:.+]] = fxla.sum %[[MASK]] {dims = [1], keepdim = true} : tensor<2x3xi1> -> tensor<2x1xi64>
// CHECK:         %[[SHARE:.+]] = fxla.div %{{.+}}, %[[COUNT]]
// CHECK-NEXT:    fxla.mul %[[SHARE]], %[[MASK]] : tensor<2x1xf32>, tensor<2x3xi1> -> tensor<2x3xf32>
func.func @main(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "fxla.amax"(%x) {dims = array<i64: -1>, keepdim = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// amin over everything: the same, counted over all dims.
// CHECK-LABEL: func.func @backward
// CHECK:         %[[MASK:.+]] = fxla.eq
// CHECK-NEXT:    %[[COUNT:.+]] = fxla.sum %[[MASK]] {dims = [0, 1], keepdim = true} : tensor<2x3xi1> -> tensor<1x1xi64>
// CHECK:         fxla.div %{{.+}}, %[[COUNT]]
func.func @main(%x: tensor<2x3xf32>) -> tensor<f32> {
  %0 = "fxla.amin"(%x) {dims = array<i64>, keepdim = false} : (tensor<2x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// prod over a dim: grad * result / x, unless x has a zero: then the exclusive prefix times suffix products.
// CHECK-LABEL: func.func @backward
// CHECK:         %[[PLAIN:.+]] = fxla.mul %{{.+}}, %{{.+}} : tensor<2x1xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK:         %[[PRE:.+]] = fxla.cumprod %{{.+}} {dim = 1}
// CHECK:         %[[SAFE:.+]] = fxla.mul %{{.+}}, %{{.+}} : tensor<2x1xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK:         %[[ANY:.+]] = fxla.any %{{.+}} {dims = [], keepdim = false} : tensor<2x3xi1> -> tensor<i1>
// CHECK-NEXT:    %[[G:.+]] = fxla.where %[[ANY]], %[[SAFE]], %[[PLAIN]]
// CHECK-NEXT:    return %[[G]]
func.func @main(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "fxla.prod"(%x) {dims = array<i64: 1>, keepdim = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// prod over everything: the flattened input; more than one zero gives a zero gradient (torch's prod_backward
// outside grad mode), keep_history'd to the safe form, whose derivative is that of torch's create_graph formula.
// CHECK-LABEL: func.func @backward
// CHECK:         fxla.reshape %{{.+}} {shape = [6]} : tensor<2x3xf32> -> tensor<6xf32>
// CHECK:         %[[ZEROS:.+]] = fxla.sum %{{.+}} {dims = [], keepdim = false} : tensor<2x3xi1> -> tensor<i64>
// CHECK:         %[[SEVERAL:.+]] = fxla.gt %[[ZEROS]], %{{.+}}
// CHECK:         %[[V:.+]] = fxla.where %[[SEVERAL]], %{{.+}}, %[[OUT:.+]] : tensor<i1>, tensor<f32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %[[G:.+]] = fxla.keep_history %[[V]], %[[OUT]]
// CHECK-NEXT:    return %[[G]]
func.func @main(%x: tensor<2x3xf32>) -> tensor<f32> {
  %0 = "fxla.prod"(%x) {dims = array<i64>, keepdim = false} : (tensor<2x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// var over a dim: (2 / (N - correction)) * grad * (x - mean), N = 5, correction = 1.
// CHECK-LABEL: func.func @backward
// CHECK:         %[[MEAN:.+]] = fxla.mean %[[X:.+]] {dims = [1], keepdim = true}
// CHECK:         %[[S:.+]] = fxla.constant {value = dense<5.000000e-01> : tensor<f32>}
// CHECK-NEXT:    %[[SG:.+]] = fxla.mul %{{.+}}, %[[S]]
// CHECK-NEXT:    %[[DIFF:.+]] = fxla.sub %[[X]], %[[MEAN]]
// CHECK-NEXT:    fxla.mul %[[SG]], %[[DIFF]]
func.func @main(%x: tensor<2x5xf32>) -> tensor<2xf32> {
  %0 = "fxla.var"(%x) {dims = array<i64: -1>, keepdim = false, correction = 1 : i64} : (tensor<2x5xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// var over everything with N <= correction: torch's grad * (x == mean ? NaN : inf).
// CHECK-LABEL: func.func @backward
// CHECK:         %[[EQ:.+]] = fxla.eq
// CHECK-NEXT:    %[[NAN:.+]] = fxla.constant {value = dense<0x7FC00000> : tensor<f32>}
// CHECK-NEXT:    %[[INF:.+]] = fxla.constant {value = dense<0x7F800000> : tensor<f32>}
// CHECK-NEXT:    fxla.where %[[EQ]], %[[NAN]], %[[INF]]
func.func @main(%x: tensor<1xf32>) -> tensor<f32> {
  %0 = "fxla.var"(%x) {dims = array<i64>, keepdim = false, correction = 1 : i64} : (tensor<1xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// logsumexp: grad * exp(x - result).
// CHECK-LABEL: func.func @backward
// CHECK:         %[[D:.+]] = fxla.sub %{{.+}}, %{{.+}} : tensor<2x3xf32>, tensor<2x1xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %[[E:.+]] = fxla.exp %[[D]]
// CHECK:         fxla.mul %{{.+}}, %[[E]] : tensor<2x1xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
func.func @main(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "fxla.logsumexp"(%x) {dims = array<i64: 1>, keepdim = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// sort: the values' cotangent is scattered to the indices the forward returned (saved as a residual).
// CHECK-LABEL: func.func @forward
// CHECK:         %[[S:.+]]:2 = fxla.sort
// CHECK:         return %[[S]]#0, %[[S]]#1, %[[S]]#1
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[IDX:.+]]: tensor<2x3xi64>, %[[CT:.+]]: tensor<2x3xf32>)
// CHECK:         %[[Z:.+]] = fxla.expand
// CHECK-NEXT:    fxla.scatter %[[Z]], %[[IDX]], %[[CT]] {dim = 0, reduce = "none"}
func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>) {
  %0:2 = "fxla.sort"(%x) {dim = 0 : i64, descending = true} : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
  return %0#0, %0#1 : tensor<2x3xf32>, tensor<2x3xi64>
}

// -----

// topk (smallest): the same, into a zero tensor of the input's shape, along the normalised dim.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[IDX:.+]]: tensor<2x2xi64>, %[[CT:.+]]: tensor<2x2xf32>) -> tensor<2x3xf32>
// CHECK:         %[[Z:.+]] = fxla.expand %{{.+}} {shape = [2, 3]}
// CHECK-NEXT:    fxla.scatter %[[Z]], %[[IDX]], %[[CT]] {dim = 1, reduce = "none"}
func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x2xi64>) {
  %0:2 = "fxla.topk"(%x) {k = 2 : i64, dim = -1 : i64, largest = false} : (tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  return %0#0, %0#1 : tensor<2x2xf32>, tensor<2x2xi64>
}
