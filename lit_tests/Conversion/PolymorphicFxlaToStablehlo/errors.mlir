// RUN: not fxla-opt %s --convert-polymorphic-fxla-to-stablehlo 2>&1 | FileCheck %s

// A pattern that needs a ? size as a number (a transposed convolution regroups its kernel with static reshapes
// and pads by d * (k - 1) - p, an attribute of stablehlo.convolution; here the kernel size k is ?: a weight passed
// as an input with a symbolic size) is an error naming the op: fxla.compile then refines such a program in the
// fxla dialect and converts it per size.
// CHECK: error: 'fxla.conv' op has no polymorphic StableHLO form yet (fxla.conv: a helper needs the ? sizes of shape (1, 4, 3, ?))
func.func @transposed_conv_of_symbolic_kernel(%x: tensor<2x4x5xf32>, %w: tensor<4x3x?xf32>) -> tensor<2x3x?xf32> {
  %four = fxla.constant {value = dense<4> : tensor<i64>} : () -> tensor<i64>
  %k = fxla.dim_size %w {dim = 2} : tensor<4x3x?xf32> -> tensor<i64>
  %n = fxla.add %four, %k : tensor<i64>, tensor<i64> -> tensor<i64>
  %y = "fxla.conv"(%x, %w, %n) {dilation = array<i64: 1>, fxla.sym = ["result0.2"], groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0>, padding = array<i64: 0>, stride = array<i64: 1>, transposed = true} : (tensor<2x4x5xf32>, tensor<4x3x?xf32>, tensor<i64>) -> tensor<2x3x?xf32>
  return %y : tensor<2x3x?xf32>
}
