// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t
// RUN: FileCheck %s --input-file %t
// RUN: FileCheck %s --input-file %t --check-prefix=NOFXLA

// Full conversion: no fxla op or attribute is left anywhere in the output (each case below also ends
// with a CHECK-NOT, which only covers the lines after its last match).
// NOFXLA-NOT: fxla

// The recurrent family (dialects/fxla/ops_recurrent.py, lowering/patterns/recurrent.py) -> StableHLO: one
// stablehlo.while over the steps, carrying the state and the [T, N, H] results, whatever T is.

// An LSTM layer: the step's input row by dynamic_slice at the step index, one dot with W_hh per step, the four
// gates as slices, both states written back by dynamic_update_slice.
// CHECK-LABEL: func.func @lstm
// CHECK:         %[[T:.+]] = stablehlo.constant dense<5> : tensor<i64>
// CHECK:         %[[LOOP:.+]]:9 = stablehlo.while(%[[I:[a-zA-Z0-9_]+]] = %{{.+}}, %[[N:[a-zA-Z0-9_]+]] = %[[T]], {{.+}}) : tensor<i64>, tensor<i64>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<5x2x4xf32>, tensor<5x2x4xf32>, tensor<5x2x16xf32>, tensor<16x4xf32>, tensor<16xf32>
// CHECK:         stablehlo.compare LT, %[[I]], %[[N]]
// CHECK:         stablehlo.dynamic_slice %{{.+}}, %[[I]], {{.+}} sizes = [1, 2, 16]
// CHECK:         stablehlo.dot_general %{{.+}}, %{{.+}}, contracting_dims = [1] x [1] : (tensor<2x4xf32>, tensor<16x4xf32>) -> tensor<2x16xf32>
// CHECK:         stablehlo.slice %{{.+}} [0:2, 12:16]
// CHECK:         stablehlo.dynamic_update_slice %{{.+}}, %{{.+}}, %[[I]],
// CHECK:         return %[[LOOP]]#4, %[[LOOP]]#5 : tensor<5x2x4xf32>, tensor<5x2x4xf32>
// CHECK-NOT: fxla.
func.func @lstm(%x: tensor<5x2x16xf32>, %h: tensor<2x4xf32>, %c: tensor<2x4xf32>, %w: tensor<16x4xf32>, %b: tensor<16xf32>) -> (tensor<5x2x4xf32>, tensor<5x2x4xf32>) {
  %0:2 = "fxla.lstm"(%x, %h, %c, %w, %b) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0>} : (tensor<5x2x16xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> (tensor<5x2x4xf32>, tensor<5x2x4xf32>)
  return %0#0, %0#1 : tensor<5x2x4xf32>, tensor<5x2x4xf32>
}

// -----

// A reversed bf16 GRU layer: step T - 1 - i, computed in f32 (W_hh converted once, before the loop), the state
// rounded to bf16 where it is stored.
// CHECK-LABEL: func.func @gru_reverse_bf16
// CHECK:         %[[W32:.+]] = stablehlo.convert %arg2 : (tensor<12x4xbf16>) -> tensor<12x4xf32>
// CHECK:         stablehlo.while({{.+}}) : tensor<i64>, tensor<i64>, tensor<2x4xbf16>, tensor<5x2x4xbf16>, tensor<5x2x12xbf16>, tensor<12x4xf32>
// CHECK:         %[[LEFT:.+]] = stablehlo.subtract %[[N:.+]], %[[I:.+]] : tensor<i64>
// CHECK:         %[[STEP:.+]] = stablehlo.subtract %[[LEFT]], %{{.+}} : tensor<i64>
// CHECK:         %[[H:.+]] = stablehlo.convert %{{.+}} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// CHECK:         stablehlo.dynamic_update_slice %{{.+}}, %{{.+}}, %[[STEP]],
// CHECK-NOT: fxla.
func.func @gru_reverse_bf16(%x: tensor<5x2x12xbf16>, %h: tensor<2x4xbf16>, %w: tensor<12x4xbf16>) -> tensor<5x2x4xbf16> {
  %0 = "fxla.rnn"(%x, %h, %w) {cell = "gru", reverse = true, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<5x2x12xbf16>, tensor<2x4xbf16>, tensor<12x4xbf16>) -> tensor<5x2x4xbf16>
  return %0 : tensor<5x2x4xbf16>
}

// -----

// The backward of a relu layer runs from the last step back: the cotangent passes where the saved output is > 0
// (torch's threshold_backward), goes back through W_hh (contracting its rows) and is written per step; it is
// also the hidden projections' cotangent (returned twice).
// CHECK-LABEL: func.func @rnn_backward_relu
// CHECK:         %[[LOOP:.+]]:11 = stablehlo.while
// CHECK:         %[[POS:.+]] = stablehlo.compare GT, %{{.+}}, %{{.+}}, FLOAT
// CHECK:         %[[D:.+]] = stablehlo.select %[[POS]], %{{.+}}, %{{.+}} : tensor<2x4xi1>, tensor<2x4xf32>
// CHECK:         stablehlo.dot_general %[[D]], %{{.+}}, contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// CHECK:         return %[[LOOP]]#3, %[[LOOP]]#3, %[[LOOP]]#2
// CHECK-NOT: fxla.
func.func @rnn_backward_relu(%x: tensor<3x2x4xf32>, %h: tensor<2x4xf32>, %w: tensor<4x4xf32>, %b: tensor<4xf32>, %y: tensor<3x2x4xf32>, %g: tensor<3x2x4xf32>) -> (tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<2x4xf32>) {
  %0:3 = "fxla.rnn_backward"(%x, %h, %w, %b, %y, %g) {cell = "relu", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>} : (tensor<3x2x4xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>) -> (tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<2x4xf32>)
  return %0#0, %0#1, %0#2 : tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<2x4xf32>
}

// -----

// The LSTM's backward: each step's previous states are the saved ones of the step before (the initial states at
// step 0, chosen by a select), its gates recomputed with one dot; with no cells cotangent, zeros are carried.
// CHECK-LABEL: func.func @lstm_backward
// CHECK:         %[[LOOP:.+]]:13 = stablehlo.while
// CHECK:         %[[FIRST:.+]] = stablehlo.compare EQ, %[[STEP:.+]], %{{.+}}, SIGNED
// CHECK:         %[[H:.+]] = stablehlo.select %[[FIRST]], %{{.+}}, %{{.+}} : tensor<i1>, tensor<2x4xf32>
// CHECK:         stablehlo.dot_general %[[H]], %{{.+}}, contracting_dims = [1] x [1] : (tensor<2x4xf32>, tensor<16x4xf32>) -> tensor<2x16xf32>
// CHECK:         stablehlo.concatenate {{.+}} dim = 1 : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x16xf32>
// CHECK:         return %[[LOOP]]#4, %[[LOOP]]#2, %[[LOOP]]#3
// CHECK-NOT: fxla.
func.func @lstm_backward(%x: tensor<3x2x16xf32>, %h: tensor<2x4xf32>, %c: tensor<2x4xf32>, %w: tensor<16x4xf32>, %y: tensor<3x2x4xf32>, %cs: tensor<3x2x4xf32>, %g: tensor<3x2x4xf32>) -> (tensor<3x2x16xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %0:3 = "fxla.lstm_backward"(%x, %h, %c, %w, %y, %cs, %g) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 1, 1, 1, 0, 0>} : (tensor<3x2x16xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<16x4xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>) -> (tensor<3x2x16xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  return %0#0, %0#1, %0#2 : tensor<3x2x16xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// The CTC loss: the log-probs at the extended targets gathered once for every step, alpha[0] where s is the blank
// (or the first label of a non-empty target), then one loop over steps 1 .. T-1: torch's three-term log-sum-exp of
// alpha[s], alpha[s-1] (a pad by 1) and alpha[s-2] (a pad by 2, where the skip is allowed), frozen past each
// sample's input length; the loss is -logsumexp(alpha[2S], alpha[2S-1]) gathered at each sample's end.
// CHECK-LABEL: func.func @ctc_loss
// CHECK:         %[[LP:.+]] = "stablehlo.gather"(%arg0, %{{.+}}) {{.+}} -> tensor<4x2x5xf32>
// CHECK:         %[[SKIP_SRC:.+]] = stablehlo.pad %arg1, %{{.+}}, low = [0, 2], high = [0, -2], interior = [0, 0]
// CHECK:         %[[LOOP:.+]]:7 = stablehlo.while({{.+}}) : tensor<i64>, tensor<i64>, tensor<2x5xf32>, tensor<4x2x5xf32>, tensor<4x2x5xf32>, tensor<2x5xi1>, tensor<2x5xi64>
// CHECK:         %[[BACK1:.+]] = stablehlo.pad %{{.+}}, %{{.+}}, low = [0, 1], high = [0, -1], interior = [0, 0]
// CHECK:         %[[FROZEN:.+]] = stablehlo.compare LT, %{{.+}}, %{{.+}}, SIGNED : (tensor<2x5xi64>, tensor<2x5xi64>) -> tensor<2x5xi1>
// CHECK:         "stablehlo.gather"(%[[LOOP]]#2, %{{.+}})
// CHECK:         %[[NLL:.+]] = stablehlo.negate %{{.+}} : tensor<2xf32>
// CHECK:         return %[[NLL]], %[[LOOP]]#3 : tensor<2xf32>, tensor<4x2x5xf32>
// CHECK-NOT: fxla.
func.func @ctc_loss(%x: tensor<4x2x3xf32>, %t: tensor<2x5xi64>, %il: tensor<2xi64>, %tl: tensor<2xi64>) -> (tensor<2xf32>, tensor<4x2x5xf32>) {
  %0:2 = "fxla.ctc_loss"(%x, %t, %il, %tl) {zero_infinity = false} : (tensor<4x2x3xf32>, tensor<2x5xi64>, tensor<2xi64>, tensor<2xi64>) -> (tensor<2xf32>, tensor<4x2x5xf32>)
  return %0#0, %0#1 : tensor<2xf32>, tensor<4x2x5xf32>
}

// -----

// The beta recursion runs from the last step back: each sample starts at its last step from the end positions
// 2S and 2S-1, reaches s+1 and s+2 (pads by -1 and -2), and is -inf past its input length.
// CHECK-LABEL: func.func @ctc_beta
// CHECK:         %[[LOOP:.+]]:8 = stablehlo.while
// CHECK:         %[[FWD:.+]] = stablehlo.pad %{{.+}}, %{{.+}}, low = [0, -1], high = [0, 1], interior = [0, 0]
// CHECK:         %[[LAST:.+]] = stablehlo.compare EQ, %{{.+}}, %{{.+}}, SIGNED : (tensor<2x5xi64>, tensor<2x5xi64>) -> tensor<2x5xi1>
// CHECK:         return %[[LOOP]]#3 : tensor<4x2x5xf32>
// CHECK-NOT: fxla.
func.func @ctc_beta(%x: tensor<4x2x3xf32>, %t: tensor<2x5xi64>, %il: tensor<2xi64>, %tl: tensor<2xi64>) -> tensor<4x2x5xf32> {
  %0 = "fxla.ctc_beta"(%x, %t, %il, %tl) : (tensor<4x2x3xf32>, tensor<2x5xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<4x2x5xf32>
  return %0 : tensor<4x2x5xf32>
}

// -----

// An LSTM with a projection (proj_size): the hidden state is W_hr (o * tanh(c)), one more product per step, and
// the state, the output and W_hh's columns are P = 3 wide while the cell state stays H = 4.
// CHECK-LABEL: func.func @lstm_projection
// CHECK:         stablehlo.while({{.+}}) : tensor<i64>, tensor<i64>, tensor<2x3xf32>, tensor<2x4xf32>, tensor<5x2x3xf32>, tensor<5x2x4xf32>, tensor<5x2x16xf32>, tensor<16x3xf32>, tensor<3x4xf32>
// CHECK:         stablehlo.dot_general %{{.+}}, %{{.+}}, contracting_dims = [1] x [1] : (tensor<2x3xf32>, tensor<16x3xf32>) -> tensor<2x16xf32>
// CHECK:         %[[H:.+]] = stablehlo.dot_general %{{.+}}, %{{.+}}, contracting_dims = [1] x [1] : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
// CHECK:         stablehlo.return %{{.+}}, %{{.+}}, %[[H]],
// CHECK-NOT: fxla.
func.func @lstm_projection(%x: tensor<5x2x16xf32>, %h: tensor<2x3xf32>, %c: tensor<2x4xf32>, %w: tensor<16x3xf32>, %p: tensor<3x4xf32>) -> (tensor<5x2x3xf32>, tensor<5x2x4xf32>) {
  %0:2 = "fxla.lstm"(%x, %h, %c, %w, %p) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 1>} : (tensor<5x2x16xf32>, tensor<2x3xf32>, tensor<2x4xf32>, tensor<16x3xf32>, tensor<3x4xf32>) -> (tensor<5x2x3xf32>, tensor<5x2x4xf32>)
  return %0#0, %0#1 : tensor<5x2x3xf32>, tensor<5x2x4xf32>
}
