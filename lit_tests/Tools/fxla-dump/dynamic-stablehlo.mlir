// RUN: fxla-dump %S/Inputs/split_heads.py:model --dynamic x:1 --stage stablehlo | FileCheck %s

// --dynamic x:1, stage stablehlo: the polymorphic StableHLO (? dims kept, the size read by get_dimension_size,
// the view as dynamic_reshape, the softmax's broadcasts as dynamic_broadcast_in_dim), then it refined to the
// example's sizes by StableHLO's own shape refinement (static: no dynamic op, no ? dim).
// CHECK:       func.func @main(%[[X:.+]]: tensor<2x?x3xf32>) -> tensor<2x?x?xf32>
// CHECK:         %[[S:.+]] = stablehlo.get_dimension_size %[[X]], dim = 1
// CHECK:         %[[R:.+]] = stablehlo.dynamic_reshape %[[X]], %{{.+}} : (tensor<2x?x3xf32>, tensor<3xi64>) -> tensor<2x?x?xf32>
// CHECK:         stablehlo.dynamic_broadcast_in_dim %{{.+}} -> tensor<2x?x?xf32>
// CHECK-LABEL: refined to the example inputs' sizes (StableHLO's shape refinement):
// CHECK:       func.func @main(%{{.+}}: tensor<2x8x3xf32>) -> tensor<2x4x6xf32>
// CHECK-NOT:     dynamic_
// CHECK-NOT:     x?x
