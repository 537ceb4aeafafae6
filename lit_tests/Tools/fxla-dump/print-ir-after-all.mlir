// RUN: fxla-dump %S/../../../examples/models.py:small_cnn --stage hlo --print-ir-after-all > %t 2>&1
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=PRETTY

// --print-ir-after-all prints the IR after every step fxla.compile runs, in order: functionalization, the
// lowering to fxla, each pass of the fxla -> StableHLO pipeline and the device layout passes; fxla ops in the
// dialect's own syntax after every one of them, never MLIR's generic form.
// PRETTY-NOT: operandSegmentSizes
// PRETTY-NOT: "fxla.
// CHECK:      IR Dump After functionalize
// CHECK-NEXT: graph(x):
// CHECK:      IR Dump After lower-to-fxla
// CHECK:      fxla.conv %arg0, %arg{{[0-9]+}}, bias %arg{{[0-9]+}} {
// CHECK:      // -----// IR Dump After verify-fxla //----- //
// CHECK-NEXT: module {
// CHECK:      fxla.conv %arg0, %arg{{[0-9]+}}, bias %arg{{[0-9]+}} {
// CHECK:      // -----// IR Dump After fxla-dce //----- //
// CHECK:      fxla.conv %arg0, %arg{{[0-9]+}}, bias %arg{{[0-9]+}} {
// CHECK:      IR Dump After convert-fxla-to-stablehlo
// CHECK:      IR Dump After cse //
// CHECK:      IR Dump After fxla-grouped-conv
// CHECK:      IR Dump After fxla-pool-layout
// CHECK:      stablehlo.transpose
// CHECK:      IR Dump After fxla-param-layout
// CHECK:      HloModule
