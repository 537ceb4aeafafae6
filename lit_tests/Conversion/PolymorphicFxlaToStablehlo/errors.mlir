// RUN: not fxla-opt %s --convert-polymorphic-fxla-to-stablehlo 2>&1 | FileCheck %s

// A pattern that needs a ? size as a number (a cumulative sum's window spans the whole ? dim) is an error naming
// the op: fxla.compile then refines such a program in the fxla dialect and converts it per size.
// CHECK: error: 'fxla.cumsum' op has no polymorphic StableHLO form yet (a ? size used as a number)
func.func @cumsum_over_symbolic_dim(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %s = fxla.dim_size %x {dim = 1} : tensor<2x?xf32> -> tensor<i64>
  %c = "fxla.cumsum"(%x, %s) {dim = 1 : i64, fxla.sym = ["result0.1"]} : (tensor<2x?xf32>, tensor<i64>) -> tensor<2x?xf32>
  return %c : tensor<2x?xf32>
}
