// RUN: fxla-dump %S/../../../examples/models.py:mlp --stage graph | FileCheck %s --check-prefix=GRAPH
// RUN: fxla-dump %S/../../../examples/models.py:mlp --stage fxla --run | FileCheck %s --check-prefix=FXLA
// RUN: fxla-dump %S/../../../examples/models.py:mlp --stage stablehlo | FileCheck %s --check-prefix=SHLO

// fxla-dump prints one compilation stage of examples/models.py:mlp
// (Linear(64, 128) -> GELU -> Linear(128, 128) -> relu + residual -> Linear(128, 10) -> log_softmax).

// The captured graph: one node per module call / function, in program order.
// GRAPH-LABEL: graph(x):
// GRAPH:         %x : {{.*}} = placeholder[target=x]
// GRAPH:         %fc1 : {{.*}} = call_module[target=fc1](args = (%x,)
// GRAPH:         %relu : {{.*}} = call_function[target=torch.relu](args = (%fc2,)
// GRAPH:         %add : {{.*}} = call_function[target=operator.add](args = (%relu, %act)
// GRAPH:         return %log_softmax
// GRAPH-NOT:     fxla.

// The fxla dialect: parameters become annotated function arguments.  --run then compiles the model,
// runs it and compares the result with eager PyTorch.
// FXLA-LABEL: func.func @main
// FXLA-SAME:    (%[[X:.+]]: tensor<8x64xf32>, %[[B1:.+]]: tensor<128xf32> {fxla.param = "fc1.bias"}, %[[W1:.+]]: tensor<128x64xf32> {fxla.param = "fc1.weight"},
// FXLA:         %[[H:.+]] = fxla.linear %[[X]], %[[W1]], bias %[[B1]] : tensor<8x64xf32>, tensor<128x64xf32>, tensor<128xf32> -> tensor<8x128xf32>
// FXLA:         %[[G:.+]] = fxla.gelu %[[H]] {approximate = "none"} : tensor<8x128xf32> -> tensor<8x128xf32>
// FXLA:         %[[R:.+]] = fxla.relu %{{.+}} : tensor<8x128xf32> -> tensor<8x128xf32>
// FXLA:         fxla.add %[[R]], %[[G]] : tensor<8x128xf32>, tensor<8x128xf32> -> tensor<8x128xf32>
// FXLA:         %[[Y:.+]] = fxla.log_softmax %{{.+}} {dim = -1} : tensor<8x10xf32> -> tensor<8x10xf32>
// FXLA:         return %[[Y]] : tensor<8x10xf32>
// FXLA:       // run: output: float32[8, 10], max |fxla - eager| = {{[0-9.e+-]+}} (match)
// FXLA:       // run: max |fxla - eager| = {{[0-9.e+-]+}} (match: 1 of 1 leaves match)
// FXLA-NOT:   MISMATCH

// StableHLO: canonicalised (constants hoisted), no fxla left, not even the parameter annotations.
// SHLO-LABEL: func.func @main
// SHLO-SAME:    (%arg0: tensor<8x64xf32>, %arg1: tensor<128xf32>, %arg2: tensor<128x64xf32>,
// SHLO:         [[D:%.+]] = stablehlo.dot_general %arg0, %arg2, contracting_dims = [1] x [1] : (tensor<8x64xf32>, tensor<128x64xf32>) -> tensor<8x128xf32>
// SHLO:         [[B:%.+]] = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<128xf32>) -> tensor<8x128xf32>
// SHLO:         stablehlo.add [[D]], [[B]] : tensor<8x128xf32>
// SHLO:         stablehlo.maximum %{{.+}}, %{{.+}} : tensor<8x128xf32>
// SHLO:         stablehlo.reduce(%{{.+}} init: %{{.+}}) applies stablehlo.maximum across dimensions = [1] : (tensor<8x10xf32>, tensor<f32>) -> tensor<8xf32>
// SHLO:         [[LOG:%.+]] = stablehlo.log %{{.+}} : tensor<8x10xf32>
// SHLO:         [[OUT:%.+]] = stablehlo.subtract %{{.+}}, [[LOG]] : tensor<8x10xf32>
// SHLO:         return [[OUT]] : tensor<8x10xf32>
// SHLO-NOT:     fxla
// SHLO-NOT:     chlo.
