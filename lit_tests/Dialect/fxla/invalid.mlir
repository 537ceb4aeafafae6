// RUN: not fxla-opt %s --split-input-file --verify-fxla 2>&1 | FileCheck %s

// The fxla verifier's diagnostics, one case per kind.  fxla-opt pads each split chunk with blank lines,
// so the reported line numbers are those of this file ([[# @LINE + 1]] is the line of the bad op; the
// Python FileCheck port needs this spelling, it does not expand the legacy [[@LINE+1]] form).

// CHECK-NOT: Traceback

func.func @wrong_operand_count(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:8: error: 'fxla.add' op expects 2 operands, but got 1
  %0 = "fxla.add"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @wrong_result_type(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf16> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.add' op result #0 has type tensor<4xf16>, but the operands imply tensor<4xf32>
  %0 = "fxla.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @wrong_result_shape(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.sub' op result #0 has type tensor<3xf32>, but the operands imply tensor<2x3xf32>
  %0 = "fxla.sub"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @not_broadcastable(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.mul' op operand shapes [2, 3], [4] do not broadcast
  %0 = "fxla.mul"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @float_only_operand(%a: tensor<4xi32>) -> tensor<4xi32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.gelu' op operand 'input' must have element type in {f16, bf16, f32, f64}, got i32
  %0 = "fxla.gelu"(%a) {approximate = "none"} : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @dynamic_operand(%a: tensor<?xf32>) -> tensor<?xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.neg' op operand 'input' must be a statically shaped ranked tensor, got tensor<?xf32>
  %0 = "fxla.neg"(%a) : (tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @missing_attribute(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.softmax' op requires attribute 'dim' (i64)
  %0 = "fxla.softmax"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @unknown_attribute(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.relu' op has unknown attribute 'inplace'
  %0 = "fxla.relu"(%a) {inplace = true} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @attribute_kind(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.softmax' op attribute 'dim' must be i64, got "last"
  %0 = "fxla.softmax"(%a) {dim = "last"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @attribute_choice(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.gelu' op attribute 'approximate' must be one of ['none', 'tanh'], got 'bogus'
  %0 = "fxla.gelu"(%a) {approximate = "bogus"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @attribute_arity(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.conv' op attribute 'stride' must have 2 entries, got 1
  %0 = "fxla.conv"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>, stride = array<i64: 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @unknown_op(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.frobnicate' op is not an op of the fxla dialect (its {{[0-9]+}} ops are listed in docs/dialect.md)
  %0 = "fxla.frobnicate"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @dim_out_of_range(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.softmax' op dim 2 is out of range for a rank-2 operand
  %0 = "fxla.softmax"(%a) {dim = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @reduce_dim_out_of_range(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.sum' op dim -3 is out of range for a rank-2 operand
  %0 = "fxla.sum"(%a) {dims = array<i64: -3>, keepdim = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @not_a_permutation(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.permute' op dims [0, 0] are not a permutation of a rank-2 operand's dims
  %0 = "fxla.permute"(%a) {dims = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @reshape_element_count(%a: tensor<2x3xf32>) -> tensor<7xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.reshape' op cannot reshape [2, 3] (6 elements) to [7]
  %0 = "fxla.reshape"(%a) {shape = array<i64: 7>} : (tensor<2x3xf32>) -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @linear_feature_mismatch(%x: tensor<8x64xf32>, %w: tensor<16x32xf32>) -> tensor<8x16xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.linear' op input features 64 do not match weight's 32 (weight is [out, in])
  %0 = "fxla.linear"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<8x64xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @linear_bias_mismatch(%x: tensor<8x64xf32>, %w: tensor<16x64xf32>, %b: tensor<10xf32>) -> tensor<8x16xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.linear' op bias shape [10] does not match 16 output features
  %0 = "fxla.linear"(%x, %w, %b) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<8x64xf32>, tensor<16x64xf32>, tensor<10xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @missing_segment_sizes(%x: tensor<8x64xf32>, %w: tensor<16x64xf32>) -> tensor<8x16xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.linear' op requires attribute 'operandSegmentSizes' (it has optional operands)
  %0 = "fxla.linear"(%x, %w) : (tensor<8x64xf32>, tensor<16x64xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @segment_sizes_sum(%x: tensor<8x64xf32>, %w: tensor<16x64xf32>) -> tensor<8x16xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.linear' op 'operandSegmentSizes' adds up to 3 but the op has 2 operands
  %0 = "fxla.linear"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<8x64xf32>, tensor<16x64xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @matmul_no_promotion(%a: tensor<2x3xf32>, %b: tensor<3x2xf16>) -> tensor<2x2xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.matmul' op operand element types differ (f32 vs f16); torch.matmul does not promote
  %0 = "fxla.matmul"(%a, %b) : (tensor<2x3xf32>, tensor<3x2xf16>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @wrong_result_count(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.neg' op expects 1 result(s), but got 2
  %0:2 = "fxla.neg"(%a) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %0#0 : tensor<4xf32>
}

// -----

// Every finding of a chunk is reported, in program order.
func.func @two_findings(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.neg' op has unknown attribute 'x'
  %0 = "fxla.neg"(%a) {x = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK-NEXT: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.abs' op result #0 has type tensor<4xi32>, but the operands imply tensor<4xf32>
  %1 = "fxla.abs"(%0) : (tensor<4xf32>) -> tensor<4xi32>
  return %0 : tensor<4xf32>
}

// -----

func.func @neg_bool(%a: tensor<4xi1>) -> tensor<4xi1> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.neg' op operand 'input' must have element type in {ui8, i8, i16, i32, i64, f16, bf16, f32, f64}, got i1
  %0 = "fxla.neg"(%a) : (tensor<4xi1>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @linear_mixed_types(%x: tensor<2x3xf32>, %w: tensor<4x3xf16>) -> tensor<2x4xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.linear' op operands must share one element type (torch does not promote here), got input: f32, weight: f16
  %0 = "fxla.linear"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x3xf32>, tensor<4x3xf16>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<5x3xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.concat' op shapes [2, 3], [3, 3] differ outside dim 1
  %0 = "fxla.concat"(%a, %b) {dim = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

func.func @slice_negative_bound(%a: tensor<4xf32>) -> tensor<2xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.slice' op dim 0: slice [-2:4:1] is not a forward slice of size 4
  %0 = "fxla.slice"(%a) {start = array<i64: -2>, limit = array<i64: 4>, stride = array<i64: 1>} : (tensor<4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @where_int_condition(%c: tensor<4xi64>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.where' op operand 'condition' must have element type in {i1}, got i64
  %0 = "fxla.where"(%c, %a, %a) : (tensor<4xi64>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @recurrent_weight_of_another_hidden_size(%x: tensor<5x2x16xf32>, %h: tensor<2x4xf32>, %c: tensor<2x4xf32>, %w: tensor<16x3xf32>) -> tensor<5x2x4xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.lstm' op weight [16, 3] is not [4 * 4, 4] for a hidden size of 4 and 4 gate(s)
  %0:2 = "fxla.lstm"(%x, %h, %c, %w) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>} : (tensor<5x2x16xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<16x3xf32>) -> (tensor<5x2x4xf32>, tensor<5x2x4xf32>)
  return %0#0 : tensor<5x2x4xf32>
}

// -----

func.func @ctc_lengths_of_another_batch(%x: tensor<4x2x3xf32>, %t: tensor<2x5xi64>, %il: tensor<3xi64>, %tl: tensor<2xi64>) -> tensor<2xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.ctc_loss' op targets [2, 5] and lengths [3], [2] do not hold one row per sample of a batch of 2
  %0:2 = "fxla.ctc_loss"(%x, %t, %il, %tl) : (tensor<4x2x3xf32>, tensor<2x5xi64>, tensor<3xi64>, tensor<2xi64>) -> (tensor<2xf32>, tensor<4x2x5xf32>)
  return %0#0 : tensor<2xf32>
}

// -----

func.func @keep_history_of_another_type(%new: tensor<3xf32>, %old: tensor<3xf16>) -> tensor<3xf32> {
  // CHECK: invalid.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'fxla.keep_history' op operands must have one type, got tensor<3xf32> and tensor<3xf16>
  %0 = "fxla.keep_history"(%new, %old) : (tensor<3xf32>, tensor<3xf16>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// CHECK-NOT: error:
// CHECK-NOT: Traceback
