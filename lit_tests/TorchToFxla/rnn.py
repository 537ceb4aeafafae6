# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `rnn` (lowering/rules/rnn.py): recurrent layers (nn.LSTM, nn.GRU, nn.RNN), each layer and
# direction one fxla.lstm / fxla.rnn loop over the sequence, and their cells -- one case per op object of
# fxla.lowering.RULES; the checks show the input projection of the whole sequence as one fxla.linear, the layer
# op on it with the initial states, and the last step's states sliced off its results (the cells: the gates).
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
import torch.nn as nn

from fxla.testing import case, t


# CHECK-LABEL: case torch.nn.LSTM:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x1x3xf32>, %[[W_IH:.+]]: tensor<16x3xf32> {fxla.param = "mod.weight_ih_l0"}, %[[B_IH:.+]]: tensor<16xf32> {fxla.param = "mod.bias_ih_l0"}, %[[W_HH:.+]]: tensor<16x4xf32> {fxla.param = "mod.weight_hh_l0"}, %[[B_HH:.+]]: tensor<16xf32> {fxla.param = "mod.bias_hh_l0"})
# CHECK:         %[[PRE:.+]] = fxla.linear %[[X]], %[[W_IH]], bias %[[B_IH]] {{.+}} -> tensor<2x1x16xf32>
# CHECK:         %[[L:.+]]:2 = fxla.lstm %[[PRE]], %{{.+}}, %{{.+}}, %[[W_HH]], bias %[[B_HH]] {reverse = false} : {{.+}} -> (tensor<2x1x4xf32>, tensor<2x1x4xf32>)
# CHECK:         %[[H:.+]] = fxla.slice %[[L]]#0 {start = [1, 0, 0], limit = [2, 1, 4], stride = [1, 1, 1]}
# CHECK:         %[[C:.+]] = fxla.slice %[[L]]#1 {start = [1, 0, 0], limit = [2, 1, 4], stride = [1, 1, 1]}
# CHECK:         return %[[L]]#0, %[[H]], %[[C]] : tensor<2x1x4xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>
@case(nn.LSTM, t(2, 1, 3))
def lstm():
    return nn.LSTM(3, 4)


# An LSTM with proj_size: W_hr is the op's projection operand; h is proj_size wide, the cell state hidden_size.
# CHECK-LABEL: case torch.nn.LSTM (projection):
# CHECK:         %[[W_HR:[a-z0-9]+]]: tensor<2x4xf32> {fxla.param = "mod.weight_hr_l0"}
# CHECK:         %[[L:.+]]:2 = fxla.lstm %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, bias %{{.+}}, projection %[[W_HR]] {reverse = false} : {{.+}} -> (tensor<3x1x2xf32>, tensor<3x1x4xf32>)
@case(nn.LSTM, t(3, 1, 3), variant="projection")
def lstm_projection():
    return nn.LSTM(3, 4, proj_size=2)


# CHECK-LABEL: case torch.nn.GRU:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[WEIGHT_IH_L0:.+]]: tensor<12x3xf32> {fxla.param = "mod.weight_ih_l0"}, %[[WEIGHT_HH_L0:.+]]: tensor<12x4xf32> {fxla.param = "mod.weight_hh_l0"})
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 1, 3]} : tensor<2x3xf32> -> tensor<2x1x3xf32>
# CHECK:         %[[LINEAR:.+]] = fxla.linear %[[RESHAPE]], %[[WEIGHT_IH_L0]] : tensor<2x1x3xf32>, tensor<12x3xf32> -> tensor<2x1x12xf32>
# CHECK:         %[[GRU:.+]] = fxla.rnn %[[LINEAR]], %{{.+}}, %[[WEIGHT_HH_L0]] {cell = "gru", reverse = false} : tensor<2x1x12xf32>, tensor<1x4xf32>, tensor<12x4xf32> -> tensor<2x1x4xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %{{.+}} {shape = [1, 4]} : tensor<1x1x4xf32> -> tensor<1x4xf32>
# CHECK:         return %{{.+}}, %[[RESHAPE_2]] : tensor<2x4xf32>, tensor<1x4xf32>
@case(nn.GRU, t(2, 3))
def gru_unbatched():
    return nn.GRU(3, 4, bias=False)


# CHECK-LABEL: case torch.nn.RNN:
# CHECK:         %[[PERMUTE:.+]] = fxla.permute %[[X:.+]] {dims = [1, 0, 2]} : tensor<1x2x3xf32> -> tensor<2x1x3xf32>
# CHECK:         %[[PRE:.+]] = fxla.linear %[[PERMUTE]], {{.+}} -> tensor<2x1x4xf32>
# CHECK:         %[[Y:.+]] = fxla.rnn %[[PRE]], {{.+}} {cell = "relu", reverse = false}
# CHECK:         %[[OUT:.+]] = fxla.permute %[[Y]] {dims = [1, 0, 2]} : tensor<2x1x4xf32> -> tensor<1x2x4xf32>
# CHECK:         return %[[OUT]], %{{.+}} : tensor<1x2x4xf32>, tensor<1x1x4xf32>
@case(nn.RNN, t(1, 2, 3))
def rnn_batch_first_relu():
    return nn.RNN(3, 4, nonlinearity="relu", batch_first=True)


# A bidirectional layer: the reversed direction's op has reverse = true, and its last step is output[0].
# CHECK-LABEL: case torch.nn.GRU (bidirectional):
# CHECK:         %[[FWD:.+]] = fxla.rnn %{{.+}} {cell = "gru", reverse = false} : {{.+}} -> tensor<3x2x4xf32>
# CHECK:         %[[H_FWD:.+]] = fxla.slice %[[FWD]] {start = [2, 0, 0], limit = [3, 2, 4], stride = [1, 1, 1]}
# CHECK:         %[[BWD:.+]] = fxla.rnn %{{.+}} {cell = "gru", reverse = true} : {{.+}} -> tensor<3x2x4xf32>
# CHECK:         %[[H_BWD:.+]] = fxla.slice %[[BWD]] {start = [0, 0, 0], limit = [1, 2, 4], stride = [1, 1, 1]}
# CHECK:         fxla.concat %[[FWD]], %[[BWD]] {dim = 2}
@case(nn.GRU, t(3, 2, 3), variant="bidirectional")
def gru_bidirectional():
    return nn.GRU(3, 4, bidirectional=True)


# CHECK-LABEL: case torch.nn.LSTMCell:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[WEIGHT_IH:.+]]: tensor<16x3xf32> {fxla.param = "mod.weight_ih"}, %[[BIAS_IH:.+]]: tensor<16xf32> {fxla.param = "mod.bias_ih"}, %[[WEIGHT_HH:.+]]: tensor<16x4xf32> {fxla.param = "mod.weight_hh"}, %[[BIAS_HH:.+]]: tensor<16xf32> {fxla.param = "mod.bias_hh"})
# CHECK:         %[[LINEAR:.+]] = fxla.linear %[[X]], %[[WEIGHT_IH]], bias %[[BIAS_IH]] : tensor<2x3xf32>, tensor<16x3xf32>, tensor<16xf32> -> tensor<2x16xf32>
# CHECK:         %[[ZERO:.+]] = fxla.expand %{{.+}} {shape = [2, 4]} : tensor<f32> -> tensor<2x4xf32>
# CHECK:         fxla.linear %[[ZERO]], %[[WEIGHT_HH]], bias %[[BIAS_HH]] {{.+}} -> tensor<2x16xf32>
# CHECK:         return %{{.+}}, %{{.+}} : tensor<2x4xf32>, tensor<2x4xf32>
@case(nn.LSTMCell, t(2, 3))
def lstm_cell():
    return nn.LSTMCell(3, 4)


# CHECK-LABEL: case torch.nn.GRUCell:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xf32>, %[[WEIGHT_IH:.+]]: tensor<12x3xf32> {fxla.param = "mod.weight_ih"}, %[[BIAS_IH:.+]]: tensor<12xf32> {fxla.param = "mod.bias_ih"}, %[[WEIGHT_HH:.+]]: tensor<12x4xf32> {fxla.param = "mod.weight_hh"}, %[[BIAS_HH:.+]]: tensor<12xf32> {fxla.param = "mod.bias_hh"})
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [1, 3]} : tensor<3xf32> -> tensor<1x3xf32>
# CHECK:         %[[LINEAR:.+]] = fxla.linear %[[RESHAPE]], %[[WEIGHT_IH]], bias %[[BIAS_IH]] : tensor<1x3xf32>, tensor<12x3xf32>, tensor<12xf32> -> tensor<1x12xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %{{.+}} {shape = [4]} : tensor<1x4xf32> -> tensor<4xf32>
# CHECK:         return %[[RESHAPE_2]] : tensor<4xf32>
@case(nn.GRUCell, t(3))
def gru_cell_unbatched():
    return nn.GRUCell(3, 4)


# CHECK-LABEL: case torch.nn.RNNCell:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[WEIGHT_IH:.+]]: tensor<4x3xf32> {fxla.param = "mod.weight_ih"}, %[[BIAS_IH:.+]]: tensor<4xf32> {fxla.param = "mod.bias_ih"}, %[[WEIGHT_HH:.+]]: tensor<4x4xf32> {fxla.param = "mod.weight_hh"}, %[[BIAS_HH:.+]]: tensor<4xf32> {fxla.param = "mod.bias_hh"})
# CHECK:         %[[LINEAR:.+]] = fxla.linear %[[X]], %[[WEIGHT_IH]], bias %[[BIAS_IH]] : tensor<2x3xf32>, tensor<4x3xf32>, tensor<4xf32> -> tensor<2x4xf32>
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[TANH:.+]] = fxla.tanh %{{.+}} : tensor<2x4xf32> -> tensor<2x4xf32>
# CHECK:         return %[[TANH]] : tensor<2x4xf32>
@case(nn.RNNCell, t(2, 3))
def rnn_cell():
    return nn.RNNCell(3, 4)


# The functional forms (torch._VF's, what the modules call; dynamo's graphs hold them with allow_rnn): the same
# layers over the flat weights, with the given initial states.
torch.manual_seed(0)
_LSTM = nn.LSTM(3, 4)
_GRU = nn.GRU(3, 4, bias=False, batch_first=True)
_RNN = nn.RNN(3, 4)


# CHECK-LABEL: case torch.lstm:
# CHECK:         func.func @main(%[[X:[a-z0-9]+]]: tensor<2x1x3xf32>, %{{.+}}: tensor<1x1x4xf32>, %{{.+}}: tensor<1x1x4xf32>, %[[W_IH:[a-z0-9]+]]: tensor<16x3xf32> {fxla.param = "_tensor_constant0"}
# CHECK:         %[[PRE:.+]] = fxla.linear %[[X]], %[[W_IH]], {{.+}} -> tensor<2x1x16xf32>
# CHECK:         %[[H0:.+]] = fxla.reshape %{{.+}} {shape = [1, 4]}
# CHECK:         %[[L:.+]]:2 = fxla.lstm %[[PRE]], %[[H0]], %{{.+}} {reverse = false}
# CHECK:         return %[[L]]#0, %{{.+}}, %{{.+}} : tensor<2x1x4xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>
@case(torch.lstm, t(2, 1, 3), t(1, 1, 4), t(1, 1, 4))
def lstm_functional(x, h, c):
    return torch.lstm(x, (h, c), list(_LSTM._flat_weights), True, 1, 0.0, False, False, False)


# CHECK-LABEL: case torch.gru:
# CHECK:         %[[X:.+]] = fxla.permute %{{.+}} {dims = [1, 0, 2]} : tensor<1x2x3xf32> -> tensor<2x1x3xf32>
# CHECK:         fxla.rnn %{{.+}} {cell = "gru", reverse = false}
@case(torch.gru, t(1, 2, 3), t(1, 1, 4))
def gru_functional(x, h):
    return torch.gru(x, h, list(_GRU._flat_weights), False, 1, 0.0, False, False, True)


# CHECK-LABEL: case torch.rnn_tanh:
# CHECK:         fxla.rnn %{{.+}} {cell = "tanh", reverse = false}
@case(torch.rnn_tanh, t(2, 1, 3), t(1, 1, 4))
def rnn_tanh_functional(x, h):
    return torch.rnn_tanh(x, h, list(_RNN._flat_weights), True, 1, 0.0, False, False, False)


# CHECK-LABEL: case torch.rnn_relu:
# CHECK:         fxla.rnn %{{.+}} {cell = "relu", reverse = false}
@case(torch.rnn_relu, t(2, 1, 3), t(1, 1, 4))
def rnn_relu_functional(x, h):
    return torch.rnn_relu(x, h, list(_RNN._flat_weights), True, 1, 0.0, False, False, False)


# The cells' functional forms: the input projection, the hidden projection and the gates, as the cell modules.
_LSTM_CELL, _GRU_CELL, _RNN_CELL = nn.LSTMCell(3, 4), nn.GRUCell(3, 4), nn.RNNCell(3, 4)


# CHECK-LABEL: case torch.lstm_cell:
# CHECK:         %[[XT:.+]] = fxla.linear %{{.+}} -> tensor<2x16xf32>
# CHECK:         %[[HT:.+]] = fxla.linear %{{.+}} -> tensor<2x16xf32>
# CHECK:         fxla.add %[[XT]], %[[HT]]
# CHECK:         return %{{.+}}, %{{.+}} : tensor<2x4xf32>, tensor<2x4xf32>
@case(torch.lstm_cell, t(2, 3), t(2, 4), t(2, 4))
def lstm_cell_functional(x, h, c):
    return torch.lstm_cell(x, (h, c), *_LSTM_CELL.parameters())


# CHECK-LABEL: case torch.gru_cell:
# CHECK:         fxla.linear %{{.+}} -> tensor<2x12xf32>
# CHECK:         return %{{.+}} : tensor<2x4xf32>
@case(torch.gru_cell, t(2, 3), t(2, 4))
def gru_cell_functional(x, h):
    return torch.gru_cell(x, h, *_GRU_CELL.parameters())


# CHECK-LABEL: case torch.rnn_tanh_cell:
# CHECK:         %[[Y:.+]] = fxla.tanh %{{.+}} : tensor<2x4xf32> -> tensor<2x4xf32>
# CHECK:         return %[[Y]]
@case(torch.rnn_tanh_cell, t(2, 3), t(2, 4))
def rnn_tanh_cell_functional(x, h):
    return torch.rnn_tanh_cell(x, h, *_RNN_CELL.parameters())


# CHECK-LABEL: case torch.rnn_relu_cell:
# CHECK:         %[[Y:.+]] = fxla.relu %{{.+}} : tensor<2x4xf32> -> tensor<2x4xf32>
# CHECK:         return %[[Y]]
@case(torch.rnn_relu_cell, t(2, 3), t(2, 4))
def rnn_relu_cell_functional(x, h):
    return torch.rnn_relu_cell(x, h, *_RNN_CELL.parameters())
