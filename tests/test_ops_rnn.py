"""Family ``rnn`` (lowering/rules/rnn.py) against eager: nn.RNN / LSTM / GRU and their cells, with initial states.
The harness is tests/test_ops.py."""
from __future__ import annotations

from functools import partial

import pytest
import torch
import torch.nn as nn

import fxla
from test_ops import BF16, F16, F32, add_case, params_of, run_case, t

CASES = []
case = partial(add_case, CASES)


# -- recurrent layers (eval mode), each layer and direction one loop over the sequence ----------------------------
case(nn.LSTM, "nn.LSTM", lambda: nn.LSTM(3, 4), t(5, 2, 3), module=True, dtypes=(F32, F16), tol=4)
case(nn.LSTM, "nn.LSTM_2layer_bidirectional_batch_first",
     lambda: nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True), t(2, 5, 3), module=True)
case(nn.LSTM, "nn.LSTM_unbatched", lambda: nn.LSTM(3, 4, bias=False), t(5, 3), module=True)
case(nn.GRU, "nn.GRU", lambda: nn.GRU(3, 4, num_layers=2, bidirectional=True), t(5, 2, 3), module=True,
     dtypes=(F32, BF16), tol=4)
case(nn.LSTMCell, "nn.LSTMCell", lambda: nn.LSTMCell(3, 4), t(2, 3), module=True)
case(nn.GRUCell, "nn.GRUCell", lambda: nn.GRUCell(3, 4, bias=False), t(3), module=True, dtypes=(F32, BF16), tol=4)
case(nn.RNNCell, "nn.RNNCell", lambda: nn.RNNCell(3, 4, nonlinearity="relu"), t(2, 3), module=True)
case(nn.RNN, "nn.RNN", lambda: nn.RNN(3, 4, num_layers=2), t(5, 2, 3), module=True)
case(nn.RNN, "nn.RNN_relu_unbatched", lambda: nn.RNN(3, 4, nonlinearity="relu", bidirectional=True), t(5, 3),
     module=True)
case(nn.RNN, "nn.RNN_bidirectional_no_bias", lambda: nn.RNN(3, 4, bias=False, bidirectional=True), t(4, 2, 3),
     module=True)
case(nn.LSTM, "nn.LSTM_one_step_bidirectional", lambda: nn.LSTM(3, 4, bidirectional=True), t(1, 2, 3), module=True)
case(nn.GRU, "nn.GRU_long_sequence", lambda: nn.GRU(3, 4, batch_first=True), t(2, 40, 3), module=True)
case(nn.LSTM, "nn.LSTM_projection", lambda: nn.LSTM(3, 5, proj_size=2), t(5, 2, 3), module=True)
case(nn.LSTM, "nn.LSTM_projection_2layer_bidirectional_batch_first",
     lambda: nn.LSTM(3, 5, num_layers=2, bidirectional=True, batch_first=True, proj_size=3), t(2, 4, 3), module=True)
case(nn.LSTM, "nn.LSTM_projection_unbatched_no_bias", lambda: nn.LSTM(3, 4, bias=False, proj_size=2), t(6, 3),
     module=True)


class _WithState(nn.Module):
    """An RNN called with initial states (the harness's module holder passes one input)."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn
        self.lstm = isinstance(rnn, (nn.LSTM, nn.LSTMCell))

    def forward(self, x, h, c=None):
        return self.rnn(x, (h, c) if self.lstm else h)


torch.manual_seed(0)
case(nn.LSTM, "nn.LSTM_initial_state", _WithState(nn.LSTM(3, 4, num_layers=2)).eval(), t(5, 2, 3), t(2, 2, 4),
     t(2, 2, 4))
case(nn.LSTMCell, "nn.LSTMCell_state", _WithState(nn.LSTMCell(3, 4)).eval(), t(2, 3), t(2, 4), t(2, 4))
case(nn.GRU, "nn.GRU_initial_state", _WithState(nn.GRU(3, 4, num_layers=2, batch_first=True)).eval(), t(2, 5, 3),
     t(2, 2, 4))


# -- the functional forms (torch._VF's, what the modules call; dynamo's graphs hold them with allow_rnn) ----------
torch.manual_seed(0)
_LSTM2 = nn.LSTM(3, 4, num_layers=2, bidirectional=True).eval()
_GRU = nn.GRU(3, 4, batch_first=True, bias=False).eval()
_TANH, _RELU = nn.RNN(3, 4).eval(), nn.RNN(3, 4, nonlinearity="relu", num_layers=2).eval()
case(torch.lstm, "torch.lstm", lambda x, h, c: torch.lstm(x, (h, c), list(_LSTM2._flat_weights), True, 2, 0.0, False,
                                                          True, False), t(5, 2, 3), t(4, 2, 4), t(4, 2, 4))
case(torch.gru, "torch.gru", lambda x, h: torch.gru(x, h, list(_GRU._flat_weights), False, 1, 0.0, False, False, True),
     t(2, 5, 3), t(1, 2, 4))
case(torch.rnn_tanh, "torch.rnn_tanh", lambda x, h: torch.rnn_tanh(x, h, list(_TANH._flat_weights), True, 1, 0.0,
                                                                   False, False, False), t(5, 2, 3), t(1, 2, 4))
case(torch.rnn_relu, "torch.rnn_relu", lambda x, h: torch.rnn_relu(x, h, list(_RELU._flat_weights), True, 2, 0.0,
                                                                   False, False, False), t(5, 2, 3), t(2, 2, 4))


_LSTM_CELL, _GRU_CELL, _RNN_CELL = nn.LSTMCell(3, 4).eval(), nn.GRUCell(3, 4, bias=False).eval(), nn.RNNCell(3, 4)
case(torch.lstm_cell, "torch.lstm_cell", lambda x, h, c: torch.lstm_cell(x, (h, c), *_LSTM_CELL.parameters()),
     t(2, 3), t(2, 4), t(2, 4))
case(torch.gru_cell, "torch.gru_cell", lambda x, h: torch.gru_cell(x, h, *_GRU_CELL.parameters()), t(2, 3), t(2, 4))
case(torch.rnn_tanh_cell, "torch.rnn_tanh_cell", lambda x, h: torch.rnn_tanh_cell(x, h, *_RNN_CELL.parameters()),
     t(2, 3), t(2, 4))
case(torch.rnn_relu_cell, "torch.rnn_relu_cell", lambda x, h: torch.rnn_relu_cell(x, h, *_RNN_CELL.parameters()),
     t(2, 3), t(2, 4))


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)


def test_lstm_packed_sequences_are_a_clear_error():
    class Packed(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(3, 4)

        def forward(self, x):
            packed = nn.utils.rnn.pack_padded_sequence(x, [5, 3], enforce_sorted=True)
            return self.lstm(packed)[1][0]
    with pytest.raises(fxla.FxlaError) as info:
        fxla.compile(Packed().eval())(torch.randn(5, 2, 3))
    assert "packed" in str(info.value).lower() and "fix:" in str(info.value)


@pytest.mark.parametrize("make", [lambda: nn.LSTM(3, 4, num_layers=2, bidirectional=True),
                                  lambda: nn.GRU(3, 4, bidirectional=True), lambda: nn.RNN(3, 4)],
                         ids=["lstm", "gru", "rnn"])
def test_a_long_sequence_is_one_loop_per_layer_and_direction(make):
    """A layer is one stablehlo.while over its steps, not the steps unrolled: the program is the same size for 3
    steps and for 300 (XLA compiled 300 unrolled LSTM steps in about a minute), and equals eager with its
    gradients at both lengths."""
    torch.manual_seed(0)
    layer = make()
    loops = layer.num_layers * (2 if layer.bidirectional else 1)
    fast = fxla.compile(layer)
    sizes = []
    for steps in (3, 300):
        x = torch.randn(steps, 2, 3)
        with torch.no_grad():
            got, want = fast(x), layer(x)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
        text = fast.lower(x).stablehlo
        assert text.count("stablehlo.while") == loops
        sizes.append(text.count("\n"))
        xs = [x.clone().requires_grad_(True) for _ in range(2)]
        grads = []
        for fn, xi in ((layer, xs[0]), (fast, xs[1])):
            layer.zero_grad()
            out, state = fn(xi)
            states = state if isinstance(state, tuple) else (state,)
            (out.square().sum() + sum(s.sum() for s in states)).backward()
            grads.append([xi.grad] + [p.grad.clone() for p in layer.parameters()])
        for a, b in zip(*grads):
            torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-4)
    assert sizes[0] == sizes[1]


def test_half_precision_layers_train_like_eager():
    """bf16 layers compute each step in f32 and round the states they store: outputs and gradients within bf16's
    tolerance of eager's bf16 layers."""
    torch.manual_seed(0)
    layer = nn.LSTM(3, 8, bidirectional=True).to(torch.bfloat16)
    fast = fxla.compile(layer)
    x = torch.randn(6, 2, 3, dtype=torch.bfloat16)
    grads = []
    for fn in (layer, fast):
        layer.zero_grad()
        xi = x.clone().requires_grad_(True)
        out, (h, c) = fn(xi)
        (out.float().square().sum() + c.float().sum()).backward()
        grads.append([out, xi.grad] + [p.grad.clone() for p in layer.parameters()])
    for a, b in zip(*grads):
        torch.testing.assert_close(b.float(), a.float(), rtol=4e-2, atol=4e-2)


def test_torch_compile_with_allow_rnn_trains_recurrent_layers_in_fxla(monkeypatch):
    """With torch._dynamo.config.allow_rnn, dynamo's graph holds torch.lstm / torch.gru / torch.gru_cell (by
    default it breaks the graph and runs them eagerly): fxla lowers them as the modules, outputs and gradients
    equal eager's."""
    import copy
    import torch._dynamo
    monkeypatch.setattr(torch._dynamo.config, "allow_rnn", True)
    torch._dynamo.reset()

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=True)
            self.gru = nn.GRU(12, 5)
            self.cell = nn.GRUCell(5, 5)
            self.out = nn.Linear(5, 3)

        def forward(self, x):
            y, _ = self.lstm(x)
            z, h = self.gru(y.transpose(0, 1))
            return self.out(z).sum(0), self.cell(z[-1], h[0])

    torch.manual_seed(0)
    model = Tagger()
    twin = copy.deepcopy(model)
    fast = torch.compile(model, backend="fxla")
    for steps in (5, 7):
        x = torch.randn(2, steps, 4)
        got, want = fast(x), twin(x)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
        (got[0].square().sum() + got[1].sum()).backward()
        (want[0].square().sum() + want[1].sum()).backward()
    for (name, a), b in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5, msg=name)
    torch._dynamo.reset()
