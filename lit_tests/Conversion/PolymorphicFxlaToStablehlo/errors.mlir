// RUN: not fxla-opt %s --convert-polymorphic-fxla-to-stablehlo 2>&1 | FileCheck %s

// A pattern that needs a ? size as a number (StableHLO's rng_bit_generator makes a static shape) is an error
// naming the op: fxla.compile then refines such a program in the fxla dialect and converts it per size.
// CHECK: error: 'fxla.rng' op has no polymorphic StableHLO form yet (fxla.rng: a helper needs the ? sizes of shape (2, ?))
func.func @random_bits_of_symbolic_shape(%x: tensor<2x?xf32>, %seed: tensor<2xi64>) -> tensor<2x?xf32> {
  %s = fxla.dim_size %x {dim = 1} : tensor<2x?xf32> -> tensor<i64>
  %r = "fxla.rng"(%seed, %s, %s) {distribution = "uniform", fxla.sym = ["shape.1", "result0.1"], shape = array<i64: 2, -9223372036854775808>, stream = 0 : i64} : (tensor<2xi64>, tensor<i64>, tensor<i64>) -> tensor<2x?xf32>
  return %r : tensor<2x?xf32>
}
