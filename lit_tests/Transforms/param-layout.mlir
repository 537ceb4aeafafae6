// RUN: fxla-opt %s --split-input-file --fxla-param-layout | FileCheck %s

// fxla-param-layout stores parameters (the @main arguments marked fxla.param) in the layout their
// consumers want, so XLA does not transpose them on every call; fxla.layout records the permutation
// (stored = param.permute(perm)).

// nn.Linear: x·Wᵀ on the torch [out, in] weight -> the weight is stored [in, out], the dot contracts dim 0.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    %[[W:[a-z0-9]+]]: tensor<16x8xf32> {fxla.layout = array<i64: 1, 0>, fxla.param = "fc.weight"}
// CHECK:         stablehlo.dot_general %{{.+}}, %[[W]], contracting_dims = [1] x [0] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
module {
func.func @main(%x: tensor<2x16xf32>, %w: tensor<8x16xf32> {fxla.param = "fc.weight"}) -> tensor<2x8xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [1] : (tensor<2x16xf32>, tensor<8x16xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}
}

// -----

// Conv2d: the OIHW kernel is stored HWIO and the kernel dimension numbers say so.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    %[[K:[a-z0-9]+]]: tensor<3x3x3x4xf32> {fxla.layout = array<i64: 2, 3, 1, 0>, fxla.param = "conv.weight"}
// CHECK:         stablehlo.convolution(%{{.+}}, %[[K]]) dim_numbers = [b, f, 0, 1]x[0, 1, i, o]->[b, f, 0, 1]
module {
func.func @main(%x: tensor<2x3x8x8xf32>, %k: tensor<4x3x3x3xf32> {fxla.param = "conv.weight"}) -> tensor<2x4x6x6xf32> {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return %0 : tensor<2x4x6x6xf32>
}
}

// -----

// A transpose of the parameter is folded into the stored layout, then the dot rule applies to its uses:
// here the two cancel (w is already [in, out]), so only the transpose goes.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    %[[W:[a-z0-9]+]]: tensor<16x8xf32> {fxla.param = "w"}
// CHECK-NOT:     stablehlo.transpose
// CHECK:         stablehlo.dot_general %{{.+}}, %[[W]], contracting_dims = [1] x [0]
module {
func.func @main(%x: tensor<2x16xf32>, %w: tensor<16x8xf32> {fxla.param = "w"}) -> tensor<2x8xf32> {
  %t = stablehlo.transpose %w, dims = [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %0 = stablehlo.dot_general %x, %t, contracting_dims = [1] x [1] : (tensor<2x16xf32>, tensor<8x16xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}
}

// -----

// Mixed uses (a dot and a return) and inputs without fxla.param are left alone.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    %{{.+}}: tensor<8x16xf32> {fxla.param = "tied"}
// CHECK-NOT:     fxla.layout
// CHECK:         contracting_dims = [1] x [1]
module {
func.func @main(%x: tensor<2x16xf32>, %w: tensor<8x16xf32> {fxla.param = "tied"}) -> (tensor<2x8xf32>, tensor<8x16xf32>) {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [1] : (tensor<2x16xf32>, tensor<8x16xf32>) -> tensor<2x8xf32>
  return %0, %w : tensor<2x8xf32>, tensor<8x16xf32>
}
}
