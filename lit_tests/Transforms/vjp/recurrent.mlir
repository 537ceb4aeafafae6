// RUN: fxla-opt %s --split-input-file --fxla-vjp | FileCheck %s

// VJP rules of the recurrent family (lowering/autodiff/recurrent.py): the layer's backward op (one loop from the
// last step back) gives the input's and the initial states' cotangents; W_hh's is one product of the hidden
// projections' cotangents with the saved states shifted by a step, b_hh's their sum.

// LSTM: the saved outputs and cell states are the residuals; the states each step started from are h0, then
// output[0 .. T-2].
// CHECK-LABEL: func.func @forward
// CHECK:         %[[L:.+]]:2 = fxla.lstm
// CHECK:         return %[[L]]#0, %[[L]]#1, %[[L]]#0, %[[L]]#1
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[OUT:[a-z0-9]+]]: tensor<3x2x4xf32>, %[[CELLS:[a-z0-9]+]]: tensor<3x2x4xf32>, %[[CT:[a-z0-9]+]]: tensor<3x2x4xf32>, %[[CT_C:[a-z0-9]+]]: tensor<3x2x4xf32>, %[[X:[a-z0-9]+]]: tensor<3x2x16xf32>, %[[H0:[a-z0-9]+]]: tensor<2x4xf32>
// CHECK:         %[[B:.+]]:3 = fxla.lstm_backward %[[X]], %[[H0]], {{.+}}, %[[OUT]], %[[CELLS]], %[[CT]], grad_cells %[[CT_C]] {reverse = false}
// CHECK:         %[[FIRST:.+]] = fxla.reshape %[[H0]] {shape = [1, 2, 4]}
// CHECK:         %[[REST:.+]] = fxla.slice %[[OUT]] {start = [0, 0, 0], limit = [2, 2, 4], stride = [1, 1, 1]}
// CHECK:         %[[PREV:.+]] = fxla.concat %[[FIRST]], %[[REST]] {dim = 0}
// CHECK:         %[[DW:.+]] = fxla.matmul %{{.+}}, %{{.+}} : tensor<16x6xf32>, tensor<6x4xf32> -> tensor<16x4xf32>
// CHECK:         %[[DB:.+]] = fxla.sum %{{.+}} {dims = [0], keepdim = false} : tensor<6x16xf32> -> tensor<16xf32>
// CHECK:         return %[[B]]#0, %[[B]]#1, %[[B]]#2, %[[DW]], %[[DB]]
func.func @main(%x: tensor<3x2x16xf32>, %h: tensor<2x4xf32>, %c: tensor<2x4xf32>, %w: tensor<16x4xf32>, %b: tensor<16xf32>) -> (tensor<3x2x4xf32>, tensor<3x2x4xf32>) {
  %0:2 = "fxla.lstm"(%x, %h, %c, %w, %b) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0>} : (tensor<3x2x16xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> (tensor<3x2x4xf32>, tensor<3x2x4xf32>)
  return %0#0, %0#1 : tensor<3x2x4xf32>, tensor<3x2x4xf32>
}

// -----

// A reversed GRU: its steps start from output[1 .. T-1], then h0; W_hh's cotangent takes the hidden projections'
// cotangents (the backward's second result, which differs from the input's at the n gate).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[OUT:[a-z0-9]+]]: tensor<3x2x4xf32>, %[[CT:[a-z0-9]+]]: tensor<3x2x4xf32>, %[[X:[a-z0-9]+]]: tensor<3x2x12xf32>, %[[H0:[a-z0-9]+]]: tensor<2x4xf32>, %[[W:[a-z0-9]+]]: tensor<12x4xf32>)
// CHECK:         %[[B:.+]]:3 = fxla.rnn_backward %[[X]], %[[H0]], %[[W]], %[[OUT]], %[[CT]] {cell = "gru", reverse = true}
// CHECK:         %[[REST:.+]] = fxla.slice %[[OUT]] {start = [1, 0, 0], limit = [3, 2, 4], stride = [1, 1, 1]}
// CHECK:         %[[PREV:.+]] = fxla.concat %[[REST]], %{{.+}} {dim = 0}
// CHECK:         %[[HID:.+]] = fxla.reshape %[[B]]#1 {shape = [6, 12]}
// CHECK:         return %[[B]]#0, %[[B]]#2, %{{.+}} : tensor<3x2x12xf32>, tensor<2x4xf32>, tensor<12x4xf32>
func.func @main(%x: tensor<3x2x12xf32>, %h: tensor<2x4xf32>, %w: tensor<12x4xf32>) -> tensor<3x2x4xf32> {
  %0 = "fxla.rnn"(%x, %h, %w) {cell = "gru", reverse = true, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<3x2x12xf32>, tensor<2x4xf32>, tensor<12x4xf32>) -> tensor<3x2x4xf32>
  return %0 : tensor<3x2x4xf32>
}

// -----

// ctc_loss: torch's ctc_loss backward. The betas come from fxla.ctc_beta; each (step, sample, class) gets
// exp(log_probs) minus the occupation exp(alpha + beta + nll - log_probs) scattered from the extended targets to
// their classes, times the sample's cotangent, 0 past its input length; zero_infinity also zeroes the samples
// whose loss is inf.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[NLL:[a-z0-9]+]]: tensor<2xf32>, %[[ALPHAS:[a-z0-9]+]]: tensor<4x2x5xf32>, %[[CT:[a-z0-9]+]]: tensor<2xf32>, %[[X:[a-z0-9]+]]: tensor<4x2x3xf32>
// CHECK:         %[[BETAS:.+]] = fxla.ctc_beta %[[X]]
// CHECK:         %[[AB:.+]] = fxla.add %[[ALPHAS]], %[[BETAS]]
// CHECK:         %[[OCC:.+]] = fxla.scatter %{{.+}}, %{{.+}}, %{{.+}} {dim = 2, reduce = "add"} : tensor<4x2x3xf32>, tensor<4x2x5xi64>, tensor<4x2x5xf32> -> tensor<4x2x3xf32>
// CHECK:         %[[D:.+]] = fxla.sub %{{.+}}, %[[OCC]] : tensor<4x2x3xf32>, tensor<4x2x3xf32> -> tensor<4x2x3xf32>
// CHECK:         %[[FINITE:.+]] = fxla.ne %{{.+}}, %{{.+}} : tensor<1x2x1xf32>, tensor<f32> -> tensor<1x2x1xi1>
// CHECK:         %[[G:.+]] = fxla.where %{{.+}}, %{{.+}}, %{{.+}} : tensor<4x2x1xi1>, tensor<4x2x3xf32>, tensor<f32> -> tensor<4x2x3xf32>
// CHECK-NEXT:    return %[[G]] : tensor<4x2x3xf32>
func.func @main(%x: tensor<4x2x3xf32>, %t: tensor<2x5xi64>, %il: tensor<2xi64>, %tl: tensor<2xi64>) -> tensor<2xf32> {
  %0:2 = "fxla.ctc_loss"(%x, %t, %il, %tl) {zero_infinity = true} : (tensor<4x2x3xf32>, tensor<2x5xi64>, tensor<2xi64>, tensor<2xi64>) -> (tensor<2xf32>, tensor<4x2x5xf32>)
  return %0#0 : tensor<2xf32>
}
