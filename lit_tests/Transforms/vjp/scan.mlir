// RUN: fxla-opt %s --split-input-file --fxla-vjp | FileCheck %s

// VJP rules of the scan family (lowering/autodiff/scan.py), torch's derivatives: reversed scans, cumprod's
// division-free suffix scan, cummax/cummin through their indices.

// cumsum: the reversed cumulative sum of the cotangent (negative dim normalised).
// CHECK-LABEL: func.func @backward
// CHECK:         %[[F:.+]] = fxla.flip %arg0 {dims = [1]}
// CHECK-NEXT:    %[[S:.+]] = fxla.cumsum %[[F]] {dim = 1}
// CHECK-NEXT:    %[[G:.+]] = fxla.flip %[[S]] {dims = [1]}
// CHECK-NEXT:    return %[[G]]
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = "fxla.cumsum"(%x) {dim = -1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// cumprod: torch's O(n) form as the value (reversed_cumsum(result * grad) / x before each slice's first zero,
// torch's form at that zero: products after it times result[z1 - 1], gathered; zero after it), keep_history'd to
// exclusive_cumprod(x) * A, A_k = grad_k + x_{k+1} A_{k+1} by a suffix scan of log2(4) = 2 steps: no division, so
// its derivative is exact at zeros of x.
// CHECK-LABEL: func.func @backward
// CHECK:         %[[ZS:.+]] = fxla.cumsum %{{.+}} {dim = 1} : tensor<2x4xi1> -> tensor<2x4xi64>
// CHECK:         %[[PREV:.+]] = fxla.gather %{{.+}}, %{{.+}} {dim = 1} : tensor<2x4xf32>, tensor<2x1xi64> -> tensor<2x1xf32>
// CHECK:         %[[TORCH:.+]] = fxla.where %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x4xi1>, tensor<2x1xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK:         %[[EXCL:.+]] = fxla.cumprod %{{.+}} {dim = 1} : tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK:         %[[B1:.+]] = fxla.add %{{.+}}, %{{.+}} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK:         %[[B2:.+]] = fxla.add %[[B1]], %{{.+}} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[EXACT:.+]] = fxla.mul %[[EXCL]], %[[B2]]
// CHECK-NEXT:    %[[G:.+]] = fxla.keep_history %[[TORCH]], %[[EXACT]]
// CHECK-NEXT:    return %[[G]]
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = "fxla.cumprod"(%x) {dim = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// cummax: the values' cotangent is scatter-added to the indices the forward returned (a residual).
// CHECK-LABEL: func.func @forward
// CHECK:         %[[C:.+]]:2 = fxla.cummax
// CHECK:         return %[[C]]#0, %[[C]]#1, %[[C]]#1
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[IDX:.+]]: tensor<3x2xi64>, %[[CT:.+]]: tensor<3x2xf32>)
// CHECK:         %[[Z:.+]] = fxla.expand
// CHECK-NEXT:    fxla.scatter %[[Z]], %[[IDX]], %[[CT]] {dim = 0, reduce = "add"}
func.func @main(%x: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>) {
  %0:2 = "fxla.cummax"(%x) {dim = 0 : i64} : (tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  return %0#0, %0#1 : tensor<3x2xf32>, tensor<3x2xi64>
}

// -----

// cummin, its indices not returned by the program: the forward still saves them for the backward.
// CHECK-LABEL: func.func @forward
// CHECK:         %[[C:.+]]:2 = fxla.cummin
// CHECK:         return %[[C]]#0, %[[C]]#1
// CHECK-LABEL: func.func @backward
// CHECK:         fxla.scatter %{{.+}}, %arg0, %arg1 {dim = 0, reduce = "add"}
func.func @main(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %0:2 = "fxla.cummin"(%x) {dim = -2 : i64} : (tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  return %0#0 : tensor<3x2xf32>
}

// -----

// logcumsumexp: log|grad| where grad > 0 (< 0), else the lowest f32, through reversed logcumsumexps.
// CHECK-LABEL: func.func @backward
// CHECK:         %[[LOW:.+]] = fxla.constant {value = dense<-3.40282347E+38> : tensor<f32>}
// CHECK:         %[[POS:.+]] = fxla.where %{{.+}}, %{{.+}}, %[[LOW]]
// CHECK:         fxla.logcumsumexp %{{.+}} {dim = 1}
// CHECK:         %[[EP:.+]] = fxla.exp
// CHECK:         %[[EN:.+]] = fxla.exp
// CHECK-NEXT:    %[[G:.+]] = fxla.sub %[[EP]], %[[EN]] : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    return %[[G]]
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = "fxla.logcumsumexp"(%x) {dim = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
