// RUN: fxla-dump %S/../../../examples/models.py:small_cnn --stage hlo --print-ir-after-all 2>&1 | FileCheck %s

// --print-ir-after-all prints the IR after every step fxla.compile runs, in order: functionalization, the
// lowering to fxla, the fxla -> StableHLO pass pipeline (MLIR's printer) and the device layout passes.
// CHECK:      IR Dump After functionalize
// CHECK-NEXT: graph(x):
// CHECK:      IR Dump After lower-to-fxla
// CHECK:      IR Dump After verify-fxla
// CHECK:      IR Dump After convert-fxla-to-stablehlo
// CHECK:      IR Dump After CSEPass
// CHECK:      IR Dump After fxla-grouped-conv
// CHECK:      IR Dump After fxla-pool-layout
// CHECK:      stablehlo.transpose
// CHECK:      IR Dump After fxla-param-layout
// CHECK:      HloModule
