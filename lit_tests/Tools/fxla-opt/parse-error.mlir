// RUN: not fxla-opt %s --split-input-file 2>&1 | FileCheck %s
// RUN: not fxla-opt %s --split-input-file --pass-pipeline=no-such-pass 2>&1 | FileCheck %s --check-prefix=PASS
// RUN: not fxla-opt %s.does-not-exist 2>&1 | FileCheck %s --check-prefix=NOFILE

// Malformed input gives mlir-opt style `file:line:col: error:` diagnostics (at this file's line
// numbers, even with --split-input-file), a failing exit status, and never a Python traceback.
// Chunks that do parse are still processed; their output is printed after all diagnostics.

// An unknown pass is reported once, with the fix, before any input is read.
// PASS-NOT:  Traceback
// PASS:      fxla-opt: error: unknown pass 'no-such-pass': {{.*}}'no-such-pass' does not refer to a registered pass or pass pipeline
// PASS:      fix: use one of convert-fxla-to-stablehlo, convert-polymorphic-fxla-to-stablehlo, verify-fxla, fxla-vjp, fxla-fold-constants, fxla-dce, fxla-check-index-bounds, fxla-grouped-conv, fxla-block-diagonal-conv, fxla-full-precision, fxla-pool-layout, fxla-channels-last, fxla-param-layout or an MLIR pass such as canonicalize, cse
// PASS-NOT:  unknown pass
// PASS-NOT:  error: expected
// PASS-NOT:  module {
// PASS-NOT:  Traceback

// NOFILE:     fxla-opt: error: cannot read '{{.*}}parse-error.mlir.does-not-exist': No such file or directory
// NOFILE-NOT: Traceback

// CHECK-NOT: Traceback

func.func @missing_paren(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: parse-error.mlir:[[# @LINE + 1]]:21: error: expected ')' to end operand list
  %0 = "fxla.neg"(%a : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @undefined_value(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: parse-error.mlir:[[# @LINE + 1]]:19: error: use of undeclared SSA value name
  %0 = "fxla.neg"(%b) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The parser's note points at the earlier use.
func.func @type_mismatch(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: parse-error.mlir:[[# @LINE + 1]]:19: error: use of value '%a' expects different type than prior uses: 'tensor<4xf16>' vs 'tensor<4xf32>'
  %0 = "fxla.neg"(%a) : (tensor<4xf16>) -> tensor<4xf32>
  // CHECK-NEXT: parse-error.mlir:[[# @LINE - 3]]:26: note: prior use here
  return %0 : tensor<4xf32>
}

// -----

// MLIR's own verifier (here func.return's) rejects the module before fxla's verifier runs.
func.func @bad_return(%a: tensor<4xf32>) -> tensor<4xf16> {
  // CHECK: parse-error.mlir:[[# @LINE + 1]]:3: error: type of return operand 0 ('tensor<4xf32>') doesn't match function result type ('tensor<4xf16>') in function @bad_return
  return %a : tensor<4xf32>
}

// -----

func.func @well_formed(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}

// -----

// Unexpected end of file: reported at the file's last line.
// CHECK: parse-error.mlir:{{[0-9]+}}:{{[0-9]+}}: error: expected non-function type
// The well-formed chunk is printed (stdout comes after the diagnostics).
// CHECK: module {
// CHECK-NEXT: func.func @well_formed(%arg0: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NOT: Traceback
func.func @truncated(
