// RUN: fxla-opt %s --split-input-file --verify-fxla | FileCheck %s
// RUN: fxla-opt %s --split-input-file | fxla-opt --split-input-file --verify-fxla | FileCheck %s

// Every op of the fxla op table parses, verifies against the table and prints back in generic form;
// the second RUN line re-parses the printed IR to prove the printed form round-trips.

// CHECK-LABEL: func.func @binary
// CHECK-SAME:    (%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<3xf32>)
// CHECK:         %[[ADD:.+]] = fxla.add %[[A]], %[[B]] : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK:         %[[SUB:.+]] = fxla.sub %[[ADD]], %[[B]] : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK:         %[[MUL:.+]] = fxla.mul %[[SUB]], %[[A]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK:         %[[DIV:.+]] = fxla.div %[[MUL]], %[[A]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK:         %[[MAX:.+]] = fxla.maximum %[[DIV]], %[[A]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK:         %[[MIN:.+]] = fxla.minimum %[[MAX]], %[[A]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK:         %[[POW:.+]] = fxla.pow %[[MIN]], %[[A]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK:         return %[[POW]] : tensor<2x3xf32>
func.func @binary(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = "fxla.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = "fxla.sub"(%0, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = "fxla.mul"(%1, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = "fxla.div"(%2, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = "fxla.maximum"(%3, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = "fxla.minimum"(%4, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = "fxla.pow"(%5, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %6 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @compare
// CHECK:         fxla.eq %[[A:.+]], %[[B:.+]] : tensor<4xi32>, tensor<4xi32> -> tensor<4xi1>
// CHECK:         fxla.ne %[[A]], %[[B]] : tensor<4xi32>, tensor<4xi32> -> tensor<4xi1>
// CHECK:         fxla.lt %[[A]], %[[B]] : tensor<4xi32>, tensor<4xi32> -> tensor<4xi1>
// CHECK:         fxla.le %[[A]], %[[B]] : tensor<4xi32>, tensor<4xi32> -> tensor<4xi1>
// CHECK:         fxla.gt %[[A]], %[[B]] : tensor<4xi32>, tensor<4xi32> -> tensor<4xi1>
// CHECK:         fxla.ge %[[A]], %[[B]] : tensor<4xi32>, tensor<4xi32> -> tensor<4xi1>
func.func @compare(%a: tensor<4xi32>, %b: tensor<4xi32>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %0 = "fxla.eq"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %1 = "fxla.ne"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %2 = "fxla.lt"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %3 = "fxla.le"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %4 = "fxla.gt"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %5 = "fxla.ge"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  return %0, %1, %2, %3, %4, %5 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @unary
// CHECK:         %[[NEG:.+]] = fxla.neg %{{.+}} : tensor<4xf32> -> tensor<4xf32>
// CHECK:         %[[ABS:.+]] = fxla.abs %[[NEG]] : tensor<4xf32> -> tensor<4xf32>
// CHECK:         %[[RELU:.+]] = fxla.relu %[[ABS]] : tensor<4xf32> -> tensor<4xf32>
// CHECK:         %[[EXP:.+]] = fxla.exp %[[RELU]] : tensor<4xf32> -> tensor<4xf32>
// CHECK:         %[[LOG:.+]] = fxla.log %[[EXP]] : tensor<4xf32> -> tensor<4xf32>
// CHECK:         %[[SQRT:.+]] = fxla.sqrt %[[LOG]] : tensor<4xf32> -> tensor<4xf32>
// CHECK:         %[[RSQRT:.+]] = fxla.rsqrt %[[SQRT]] : tensor<4xf32> -> tensor<4xf32>
// CHECK:         %[[TANH:.+]] = fxla.tanh %[[RSQRT]] : tensor<4xf32> -> tensor<4xf32>
// CHECK:         %[[SIG:.+]] = fxla.sigmoid %[[TANH]] : tensor<4xf32> -> tensor<4xf32>
// CHECK:         %[[GELU:.+]] = fxla.gelu %[[SIG]] {approximate = "tanh"} : tensor<4xf32> -> tensor<4xf32>
// CHECK:         fxla.gelu %[[GELU]] : tensor<4xf32> -> tensor<4xf32>
func.func @unary(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "fxla.abs"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "fxla.relu"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "fxla.exp"(%2) : (tensor<4xf32>) -> tensor<4xf32>
  %4 = "fxla.log"(%3) : (tensor<4xf32>) -> tensor<4xf32>
  %5 = "fxla.sqrt"(%4) : (tensor<4xf32>) -> tensor<4xf32>
  %6 = "fxla.rsqrt"(%5) : (tensor<4xf32>) -> tensor<4xf32>
  %7 = "fxla.tanh"(%6) : (tensor<4xf32>) -> tensor<4xf32>
  %8 = "fxla.sigmoid"(%7) : (tensor<4xf32>) -> tensor<4xf32>
  %9 = "fxla.gelu"(%8) {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  // An attribute with a default may be omitted.
  %10 = "fxla.gelu"(%9) : (tensor<4xf32>) -> tensor<4xf32>
  return %10 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @softmax
// CHECK:         %[[S:.+]] = fxla.softmax %{{.+}} {dim = 1} : tensor<2x5xf32> -> tensor<2x5xf32>
// CHECK:         fxla.log_softmax %[[S]] {dim = -1} : tensor<2x5xf32> -> tensor<2x5xf32>
func.func @softmax(%a: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = "fxla.softmax"(%a) {dim = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %1 = "fxla.log_softmax"(%0) {dim = -1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %1 : tensor<2x5xf32>
}

// -----

// Optional operands are carried by operandSegmentSizes.
// CHECK-LABEL: func.func @contractions
// CHECK-SAME:    (%[[X:.+]]: tensor<8x64xf32>, %[[W:.+]]: tensor<16x64xf32>, %[[B:.+]]: tensor<16xf32>, %[[M:.+]]: tensor<16x4xf32>)
// CHECK:         fxla.linear %[[X]], %[[W]], bias %[[B]] : tensor<8x64xf32>, tensor<16x64xf32>, tensor<16xf32> -> tensor<8x16xf32>
// CHECK:         %[[L:.+]] = fxla.linear %[[X]], %[[W]] : tensor<8x64xf32>, tensor<16x64xf32> -> tensor<8x16xf32>
// CHECK:         fxla.matmul %[[L]], %[[M]] : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
func.func @contractions(%x: tensor<8x64xf32>, %w: tensor<16x64xf32>, %b: tensor<16xf32>, %m: tensor<16x4xf32>) -> (tensor<8x16xf32>, tensor<8x4xf32>) {
  %0 = "fxla.linear"(%x, %w, %b) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %1 = "fxla.linear"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<8x64xf32>, tensor<16x64xf32>) -> tensor<8x16xf32>
  %2 = "fxla.matmul"(%1, %m) : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %0, %2 : tensor<8x16xf32>, tensor<8x4xf32>
}

// -----

// Attributes print sorted by name.
// CHECK-LABEL: func.func @conv_pool
// CHECK:         %[[C:.+]] = fxla.conv %{{.+}}, %{{.+}}, bias %{{.+}} {stride = [1, 1], padding = [1, 1], dilation = [1, 1], groups = 1} : tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>, tensor<8xf32> -> tensor<2x8x16x16xf32>
// CHECK:         fxla.max_pool2d %[[C]] {kernel_size = [2, 2], stride = [2, 2], padding = [0, 0], dilation = [1, 1], ceil_mode = false} : tensor<2x8x16x16xf32> -> tensor<2x8x8x8xf32>
func.func @conv_pool(%x: tensor<2x3x16x16xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>) -> tensor<2x8x8x8xf32> {
  %0 = "fxla.conv"(%x, %w, %b) {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<2x8x16x16xf32>
  %1 = "fxla.max_pool2d"(%0) {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = false} : (tensor<2x8x16x16xf32>) -> tensor<2x8x8x8xf32>
  return %1 : tensor<2x8x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @layout
// CHECK:         %[[R:.+]] = fxla.reshape %{{.+}} {shape = [6, 4]} : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK:         fxla.permute %[[R]] {dims = [1, 0]} : tensor<6x4xf32> -> tensor<4x6xf32>
func.func @layout(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = "fxla.reshape"(%x) {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = "fxla.permute"(%0) {dims = array<i64: 1, 0>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// -----

// CHECK-LABEL: func.func @reductions
// CHECK:         fxla.sum %[[X:.+]] {dims = [1], keepdim = true} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
// CHECK:         fxla.mean %[[X]] {dims = [], keepdim = false} : tensor<2x3x4xf32> -> tensor<f32>
func.func @reductions(%x: tensor<2x3x4xf32>) -> (tensor<2x1x4xf32>, tensor<f32>) {
  %0 = "fxla.sum"(%x) {dims = array<i64: 1>, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %1 = "fxla.mean"(%x) {dims = array<i64>, keepdim = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  return %0, %1 : tensor<2x1x4xf32>, tensor<f32>
}

// -----

// CHECK-LABEL: func.func @layer_norm
// CHECK:         fxla.layer_norm %{{.+}}, weight %{{.+}} {normalized_rank = 1, eps = 1.000000e-05} : tensor<2x5x8xf32>, tensor<8xf32> -> tensor<2x5x8xf32>
func.func @layer_norm(%x: tensor<2x5x8xf32>, %w: tensor<8xf32>) -> tensor<2x5x8xf32> {
  %0 = "fxla.layer_norm"(%x, %w) {normalized_rank = 1 : i64, eps = 1.0e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  return %0 : tensor<2x5x8xf32>
}

// -----

// A 0-d constant promotes like a Python scalar: i32 tensor + 0-d i64 stays i32.
// CHECK-LABEL: func.func @constant_convert
// CHECK:         %[[C:.+]] = fxla.constant {value = dense<[1.500000e+00, 2.500000e+00]> : tensor<2xf32>} : () -> tensor<2xf32>
// CHECK:         fxla.convert %[[C]] : tensor<2xf32> -> tensor<2xf16>
// CHECK:         %[[K:.+]] = fxla.constant {value = dense<3> : tensor<i64>} : () -> tensor<i64>
// CHECK:         fxla.add %{{.+}}, %[[K]] : tensor<2xi32>, tensor<i64> -> tensor<2xi32>
func.func @constant_convert(%i: tensor<2xi32>) -> (tensor<2xf16>, tensor<2xi32>) {
  %0 = "fxla.constant"() {value = dense<[1.5, 2.5]> : tensor<2xf32>} : () -> tensor<2xf32>
  %1 = "fxla.convert"(%0) : (tensor<2xf32>) -> tensor<2xf16>
  %2 = "fxla.constant"() {value = dense<3> : tensor<i64>} : () -> tensor<i64>
  %3 = "fxla.add"(%i, %2) : (tensor<2xi32>, tensor<i64>) -> tensor<2xi32>
  return %1, %3 : tensor<2xf16>, tensor<2xi32>
}
