// RUN: not fxla-opt %s --pass-pipeline=canonicalise 2>&1 | FileCheck %s
// RUN: not fxla-opt %s --pass-pipeline=fxla-fold-constant 2>&1 | FileCheck %s --check-prefix=FXLA

// A misspelt pass name gets the closest pass names, not an MLIR parser dump.
// CHECK: fxla-opt: error: unknown pass 'canonicalise'; did you mean 'canonicalize'?
// CHECK-NEXT: fix: use one of convert-fxla-to-stablehlo,
// FXLA: fxla-opt: error: unknown pass 'fxla-fold-constant'; did you mean 'fxla-fold-constants'?

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
