// RUN: not fxla-opt %s --convert-polymorphic-fxla-to-stablehlo 2>&1 | FileCheck %s

// A pattern that needs a ? size as a number (a ceil-mode window's extra padding depends on the size) is an error
// naming the op: fxla.compile then refines such a program in the fxla dialect and converts it per size.
// CHECK: error: 'fxla.max_pool2d' op has no polymorphic StableHLO form yet (ceil_mode windows over a ? dim)
func.func @max_pool_ceil_over_symbolic_dim(%x: tensor<2x3x?x8xf32>) -> tensor<2x3x?x4xf32> {
  %s = fxla.dim_size %x {dim = 2} : tensor<2x3x?x8xf32> -> tensor<i64>
  %y = "fxla.max_pool2d"(%x, %s) {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = true, fxla.sym = ["result0.2"]} : (tensor<2x3x?x8xf32>, tensor<i64>) -> tensor<2x3x?x4xf32>
  return %y : tensor<2x3x?x4xf32>
}
