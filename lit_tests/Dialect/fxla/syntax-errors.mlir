// RUN: not fxla-opt %s --split-input-file 2>&1 | FileCheck %s

// Malformed pretty fxla text is a diagnostic at the user's line and column, never an MLIR crash or a
// traceback; misspelt names get "did you mean".

// CHECK-NOT: Traceback

func.func @misspelt_op(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: syntax-errors.mlir:[[# @LINE + 1]]:8: error: 'fxla.sofmax' is not an op of the fxla dialect; did you mean 'fxla.softmax'?
  %0 = fxla.sofmax %a {dim = 0} : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @misspelt_attribute(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: syntax-errors.mlir:[[# @LINE + 1]]:25: error: 'fxla.softmax' has no attribute 'dims'; did you mean 'dim'?
  %0 = fxla.softmax %a {dims = 0} : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @unnamed_optional_operand(%a: tensor<4x4xf32>, %b: tensor<4xf32>) -> tensor<4x4xf32> {
  // CHECK: syntax-errors.mlir:[[# @LINE + 1]]:28: error: 'fxla.linear' takes 3 operand(s); this one is one too many (optional ones are written with their name: bias)
  %0 = fxla.linear %a, %a, %b : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @bad_value(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: syntax-errors.mlir:[[# @LINE + 1]]:36: error: bad value for 'approximate' (string): expected a string literal in double quotes ("tanh")
  %0 = fxla.gelu %a {approximate = tanh} : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @missing_signature(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: syntax-errors.mlir:[[# @LINE + 1]]:36: error: expected '->' and the result types, found the end of the line
  %0 = fxla.relu %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Valid syntax that the verifier rejects is reported at the op, as for the generic form.
func.func @verifier(%a: tensor<4xf32>) -> tensor<4xf16> {
  // CHECK: syntax-errors.mlir:[[# @LINE + 1]]:8: error: 'fxla.relu' op result #0 has type tensor<4xf16>, but the operands imply tensor<4xf32>
  %0 = fxla.relu %a : tensor<4xf32> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// An unknown op in generic form: the closest names, not the whole op list.
func.func @unknown_generic(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: syntax-errors.mlir:[[# @LINE + 1]]:8: error: 'fxla.reluu' op is not an op of the fxla dialect; did you mean 'fxla.relu'? (its {{[0-9]+}} ops are listed in docs/dialect.md)
  %0 = "fxla.reluu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
