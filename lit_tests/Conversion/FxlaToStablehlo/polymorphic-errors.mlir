// RUN: not fxla-opt %s --convert-polymorphic-fxla-to-stablehlo 2>&1 | FileCheck %s

// A pattern that needs a ? size as a number (a mean's element count over the ? dim) is an error naming the op:
// fxla.compile then refines such a program in the fxla dialect and converts it per size.
// CHECK: error: 'fxla.mean' op has no polymorphic StableHLO form yet (a ? size used as a number)
func.func @mean_over_symbolic_dim(%x: tensor<2x?xf32>) -> tensor<2xf32> {
  %m = fxla.mean %x {dims = [1], keepdim = false} : tensor<2x?xf32> -> tensor<2xf32>
  return %m : tensor<2xf32>
}
