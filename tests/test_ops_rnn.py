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


# -- recurrent layers (eval mode), unrolled over the sequence -------------------------------------------------
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


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)


def test_lstm_projection_is_a_clear_error():
    class Projected(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(3, 4, proj_size=2)

        def forward(self, x):
            return self.lstm(x)[0]
    with pytest.raises(fxla.LoweringError) as info:
        fxla.compile(Projected().eval())(torch.randn(5, 2, 3))
    assert "nn.LSTM with proj_size is not supported" in str(info.value)
    assert "return self.lstm(x)[0]" in str(info.value) and "fix: use proj_size=0" in str(info.value)
