// RUN: not fxla-opt %s --split-input-file 2>&1 | FileCheck %s --strict-whitespace

// Malformed fxla syntax is reported whole, as every fxla error is: what went wrong at the user's
// file:line:col, the line itself with a caret under the column, and the fix.
// CHECK-NOT: Traceback

func.func @misspelt_attribute(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK:      syntax-error.mlir:[[# @LINE + 4]]:25: error: 'fxla.softmax' has no attribute 'dims'; did you mean 'dim'?
  // CHECK-NEXT: {{^}}  %0 = fxla.softmax %a {dims = 0} : tensor<4xf32> -> tensor<4xf32>{{$}}
  // CHECK-NEXT: {{^}}                        ^{{$}}
  // CHECK-NEXT: {{^}}fix: write one of the attributes of 'fxla.softmax': dim{{$}}
  %0 = fxla.softmax %a {dims = 0} : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @misspelt_op(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK:      syntax-error.mlir:[[# @LINE + 4]]:8: error: 'fxla.relux' is not an op of the fxla dialect; did you mean 'fxla.relu'?
  // CHECK-NEXT: {{^}}  %0 = fxla.relux %a : tensor<4xf32> -> tensor<4xf32>{{$}}
  // CHECK-NEXT: {{^}}       ^{{$}}
  // CHECK-NEXT: {{^}}fix: see docs/dialect.md for the ops of the fxla dialect{{$}}
  %0 = fxla.relux %a : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @no_attributes(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK:      syntax-error.mlir:[[# @LINE + 2]]:22: error: 'fxla.relu' has no attribute 'dim'
  // CHECK:      {{^}}fix: 'fxla.relu' takes no attributes: leave out the {...}{{$}}
  %0 = fxla.relu %a {dim = 0} : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
