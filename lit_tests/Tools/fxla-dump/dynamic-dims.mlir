// RUN: fxla-dump %S/Inputs/split_heads.py:model --dynamic x:1 --stage fxla | FileCheck %s

// --dynamic x:1 (fxla.compile(model, dynamic={"x": {1: fxla.Dim("x_1")}})): the fxla stage is the polymorphic
// program -- a ? dim, the size read by fxla.dim_size, s // 2 as size arithmetic, the reshape's symbolic shape
// entries and the ? result dims' sizes as operands named by fxla.sym -- then the program refined to the example's sizes (static, no size ops).
// CHECK:       func.func @main(%[[X:.+]]: tensor<2x?x3xf32>) -> tensor<2x?x?xf32>
// CHECK:         %[[S:.+]] = fxla.dim_size %[[X]] {dim = 1} : tensor<2x?x3xf32> -> tensor<i64>
// CHECK:         %[[HALF:.+]] = fxla.floor_divide %[[S]], %{{.+}} : tensor<i64>, tensor<i64> -> tensor<i64>
// CHECK:         "fxla.reshape"(%[[X]], %[[HALF]], %{{.+}}) {fxla.sym = ["shape.1", "shape.2", "result0.1", "result0.2"]
// CHECK-LABEL: refined to the example inputs' sizes (pipeline stage 'refine'):
// CHECK:       func.func @main(%[[Y:.+]]: tensor<2x8x3xf32>) -> tensor<2x4x6xf32>
// CHECK-NEXT:    %[[R:.+]] = fxla.reshape %[[Y]] {shape = [2, 4, 6]} : tensor<2x8x3xf32> -> tensor<2x4x6xf32>
// CHECK-NOT:     dim_size
