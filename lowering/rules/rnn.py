"""Recurrent layers: ``nn.RNN``, ``nn.LSTM`` and ``nn.GRU`` modules, each layer and direction one loop over the
sequence (``fxla.rnn`` / ``fxla.lstm``, whatever its length, a symbolic one included), and their one-step cells
``nn.RNNCell``, ``nn.LSTMCell``, ``nn.GRUCell``.

Each layer and direction computes its input projection for every time step at once (one ``fxla.linear`` of the
whole sequence), then runs the cell over the steps in one op: ``h @ W_hh^T + b_hh`` plus the gate arithmetic of
torch's formulas (``torch.nn.LSTM`` docs; the cell modules emit that arithmetic as ops).  Layers are stacked and
the directions of a bidirectional layer concatenated on the feature dim, as torch does; ``batch_first``,
unbatched 2-D inputs and given initial states are supported (in training mode with dropout between layers: a
random mask per call), and so are LSTM projections (``proj_size``).  Not lowered: packed sequences.
"""
from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.ops_recurrent import GATES
from fxla.frontend.shape_prop import (at_traced_sizes, has_symbolic_sizes, register_meta_function,
                                      register_meta_module, run_module_on_meta)

from ..registry import register


def _chunks(ctx, x, n: int):
    """``x`` split into ``n`` equal pieces along its last dim (torch's gate order)."""
    size = ctx.sig(x).shape[-1] // n
    dim = ctx.sig(x).rank - 1
    return [ctx.slice_dim(x, dim, i * size, (i + 1) * size) for i in range(n)]


def _rnn_cell(ctx, xt, h, c, w_hh, b_hh, *, activation):
    return ctx.emit(activation, ctx.emit(ops.add, xt, ctx.emit(ops.linear, h, w_hh, b_hh))), None


def _lstm_cell(ctx, xt, h, c, w_hh, b_hh):
    gates = ctx.emit(ops.add, xt, ctx.emit(ops.linear, h, w_hh, b_hh))
    i, f, g, o = _chunks(ctx, gates, 4)
    i, f, o = (ctx.emit(ops.sigmoid, v) for v in (i, f, o))
    c = ctx.emit(ops.add, ctx.emit(ops.mul, f, c), ctx.emit(ops.mul, i, ctx.emit(ops.tanh, g)))
    return ctx.emit(ops.mul, o, ctx.emit(ops.tanh, c)), c


def _gru_cell(ctx, xt, h, c, w_hh, b_hh):
    x_r, x_z, x_n = _chunks(ctx, xt, 3)
    h_r, h_z, h_n = _chunks(ctx, ctx.emit(ops.linear, h, w_hh, b_hh), 3)
    r = ctx.emit(ops.sigmoid, ctx.emit(ops.add, x_r, h_r))
    z = ctx.emit(ops.sigmoid, ctx.emit(ops.add, x_z, h_z))
    n = ctx.emit(ops.tanh, ctx.emit(ops.add, x_n, ctx.emit(ops.mul, r, h_n)))
    return ctx.emit(ops.add, n, ctx.emit(ops.mul, z, ctx.emit(ops.sub, h, n))), None    # (1 - z) n + z h


def _split_state(hx, has_cell_state: bool):
    """The (h, c) initial states a call passed (LSTMs take a pair; c is None for RNN/GRU; both None if absent)."""
    if hx is None:
        return None, None
    return hx if has_cell_state else (hx, None)


#: nn.RNN / nn.RNNCell nonlinearity -> the fxla op
_NONLINEARITY = {"tanh": ops.tanh, "relu": ops.relu}


def _zeros(ctx, batch: int, hidden: int, like):
    """The default initial state: zeros [N, H] in ``like``'s element type."""
    return ctx.emit(ops.expand, ctx.tensor(0.0, like=like), shape=(batch, hidden))


def _state(ctx, given, index: int, batch: int, hidden: int, like):
    """Layer/direction ``index`` of an initial state ([layers * dirs, N, H]), zeros when not given."""
    if given is None:
        return _zeros(ctx, batch, hidden, like)
    return ctx.reshape(ctx.slice_dim(given, 0, index, index + 1), (batch, hidden))


def _layers(ctx, input, h0, c0, weights, *, cell: str, hidden: int, layers: int, dirs: int, batch_first: bool,
            dropout: float, state: int = 0):
    """A recurrent module's layers and directions over ``input`` (``[T, N, F]``, ``[N, T, F]`` with
    ``batch_first``, or unbatched ``[T, F]``) from the initial states ``h0``/``c0`` (``[layers * dirs, N, H]``, or
    None for zeros): each layer and direction one ``fxla.lstm`` / ``fxla.rnn`` on its input projection, the
    directions concatenated, ``dropout`` (the probability; 0: none) between layers.  ``weights(layer, d)`` gives
    ``(W_ih, W_hh, b_ih, b_hh, W_hr)`` (None where absent; ``W_hr``: an LSTM's projection to ``state`` features,
    which are then the hidden state's and the output's width).  torch's result: ``(output, (h_n, c_n))`` for an
    LSTM, else ``(output, h_n)``."""
    lstm, state = cell == "lstm", state or hidden
    unbatched = ctx.sig(input).rank == 2
    x = ctx.reshape(input, (ctx.sig(input).shape[0], 1, ctx.sig(input).shape[1])) if unbatched else input
    if batch_first and not unbatched:
        x = ctx.emit(ops.permute, x, dims=(1, 0, 2))
    steps, batch, _ = ctx.sig(x).shape
    if unbatched:
        h0, c0 = (None if s is None else ctx.reshape(s, (ctx.sig(s).shape[0], 1, ctx.sig(s).shape[1]))
                  for s in (h0, c0))
    layer_input, h_n, c_n = x, [], []
    for layer in range(layers):
        outputs = []
        for d in range(dirs):
            w_ih, w_hh, b_ih, b_hh, w_hr = weights(layer, d)
            pre = ctx.emit(ops.linear, layer_input, w_ih, b_ih)
            index = layer * dirs + d
            h = _state(ctx, h0, index, batch, state, input)
            if lstm:     # (one loop over the steps: fxla.lstm / fxla.rnn, dialects/fxla/ops_recurrent.py)
                out, cells = ctx.emit(ops.lstm, pre, h, _state(ctx, c0, index, batch, hidden, input), w_hh, b_hh,
                                      w_hr, reverse=bool(d))
            else:
                out = ctx.emit(ops.rnn, pre, h, w_hh, b_hh, cell=cell, reverse=bool(d))
            last = (0, 1) if d else (steps - 1, steps)     # a reversed layer's last step is output[0]
            outputs.append(out)
            h_n.append(ctx.slice_dim(out, 0, *last))
            c_n.append(ctx.slice_dim(cells, 0, *last) if lstm else None)
        layer_input = ctx.emit(ops.concat, outputs, dim=2) if dirs > 1 else outputs[0]
        if dropout and layer < layers - 1:                 # between layers, as torch drops out
            layer_input = ctx.lower(F.dropout, layer_input, float(dropout), True)
    output = layer_input
    if batch_first and not unbatched:
        output = ctx.emit(ops.permute, output, dims=(1, 0, 2))
    states = [ctx.emit(ops.concat, s, dim=0) if len(s) > 1 else s[0] for s in ((h_n, c_n) if lstm else (h_n,))]
    if unbatched:
        output = ctx.reshape(output, (steps, dirs * state))
        states = [ctx.reshape(s, (ctx.sig(s).shape[0], ctx.sig(s).shape[2])) for s in states]
    return (output, tuple(states)) if lstm else (output, states[0])


def _not_packed(ctx, input, what: str) -> None:
    if not hasattr(input, "type"):
        raise ctx.error(f"{what} on a {type(input).__name__} is not supported",
                        "fxla lowers padded tensors, not packed sequences",
                        "pass the padded batch (and mask the outputs past each length)")


def _recurrent(ctx, input, hx=None, *, mod, cell: str):
    _not_packed(ctx, input, type(mod).__name__)
    target, projected = ctx.node.target, bool(getattr(mod, "proj_size", 0))

    def weights(layer, d):
        suffix = f"_l{layer}" + ("_reverse" if d else "")
        w_ih, b_ih, w_hh, b_hh = (ctx.param(f"{target}.{name}{suffix}") if mod.bias or name.startswith("weight")
                                  else None for name in ("weight_ih", "bias_ih", "weight_hh", "bias_hh"))
        w_hr = ctx.param(f"{target}.weight_hr{suffix}") if projected else None
        return w_ih, w_hh, b_ih, b_hh, w_hr   # (read in that order: the program's parameter order as before)

    h0, c0 = _split_state(hx, cell == "lstm")
    return _layers(ctx, input, h0, c0, weights, cell=cell, hidden=mod.hidden_size, layers=mod.num_layers,
                   dirs=2 if mod.bidirectional else 1, batch_first=mod.batch_first,
                   dropout=mod.dropout if mod.training else 0.0, state=getattr(mod, "proj_size", 0))


register(torch.nn.LSTM)(partial(_recurrent, cell="lstm"))
register(torch.nn.GRU)(partial(_recurrent, cell="gru"))


@register(torch.nn.RNN)
def _rnn(ctx, input, hx=None, *, mod):
    return _recurrent(ctx, input, hx, mod=mod, cell=mod.nonlinearity)


def _functional(ctx, input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first=None, *,
                cell: str):
    """``torch.lstm`` / ``gru`` / ``rnn_tanh`` / ``rnn_relu`` (``_VF``'s, what the modules call and what dynamo's
    graphs hold with ``torch._dynamo.config.allow_rnn``): the module's layers over the flat ``params`` (per layer
    and direction ``W_ih, W_hh[, b_ih, b_hh]``)."""
    name = f"torch.{ctx.node.target.__name__}"
    if not isinstance(params, (list, tuple)):      # (the packed overload: data, batch_sizes, hx, params, ...)
        raise ctx.error(f"{name}'s packed-sequence form (data, batch_sizes, ...) is not supported",
                        "fxla lowers padded tensors, not packed sequences",
                        "pass the padded batch (and mask the outputs past each length)")
    lstm, dirs = cell == "lstm", 2 if bidirectional else 1
    per = 4 if has_biases else 2
    projected = lstm and len(params) == num_layers * dirs * (per + 1)      # (each layer's W_hr last)
    if len(params) != num_layers * dirs * (per + projected):
        raise ctx.error(f"{name} with {len(params)} weights for {num_layers} layer(s) of {dirs} direction(s)",
                        "a layer takes W_ih, W_hh, the biases if has_biases and an LSTM's W_hr if projected",
                        "pass the module's _flat_weights")
    group = per + projected

    def weights(layer, d):
        w = list(params[(layer * dirs + d) * group:(layer * dirs + d + 1) * group])
        return (w[0], w[1], w[2] if has_biases else None, w[3] if has_biases else None,
                w[-1] if projected else None)

    h0, c0 = (hx[0], hx[1]) if lstm else (hx, None)
    w_hh = ctx.sig(params[1]).shape
    output, states = _layers(ctx, input, h0, c0, weights, cell=cell, hidden=w_hh[0] // GATES[cell],
                             layers=num_layers, dirs=dirs, batch_first=bool(batch_first),
                             dropout=dropout if train else 0.0, state=w_hh[1])
    return (output, *states) if lstm else (output, states)


register(torch.lstm)(partial(_functional, cell="lstm"))
register(torch.gru)(partial(_functional, cell="gru"))
register(torch.rnn_tanh)(partial(_functional, cell="tanh"))
register(torch.rnn_relu)(partial(_functional, cell="relu"))


def _step(ctx, input, h0, c0, w_ih, w_hh, b_ih, b_hh, *, cell, hidden: int, has_cell_state: bool):
    """One step of a cell on ``input`` ([N, in] or unbatched [in]) from ``h0``/``c0`` (None: zeros)."""
    unbatched = ctx.sig(input).rank == 1
    x = ctx.reshape(input, (1, ctx.sig(input).shape[0])) if unbatched else input
    batch = ctx.sig(x).shape[0]
    xt = ctx.emit(ops.linear, x, w_ih, b_ih)
    h, c = (_zeros(ctx, batch, hidden, input) if s is None else ctx.reshape(s, (batch, hidden)) for s in (h0, c0))
    h, c = cell(ctx, xt, h, c if has_cell_state else None, w_hh, b_hh)
    if unbatched:
        h, c = (None if s is None else ctx.reshape(s, (hidden,)) for s in (h, c))
    return (h, c) if has_cell_state else h


def _one_step(ctx, input, hx=None, *, mod, cell, has_cell_state: bool):
    """A cell module: :func:`_step` with its parameters."""
    target = ctx.node.target
    param = lambda name: ctx.param(f"{target}.{name}") if mod.bias or name.startswith("weight") else None  # noqa
    w_ih, b_ih = param("weight_ih"), param("bias_ih")
    h0, c0 = _split_state(hx, has_cell_state)
    return _step(ctx, input, h0, c0, w_ih, param("weight_hh"), b_ih, param("bias_hh"), cell=cell,
                 hidden=mod.hidden_size, has_cell_state=has_cell_state)


register(torch.nn.LSTMCell)(partial(_one_step, cell=_lstm_cell, has_cell_state=True))
register(torch.nn.GRUCell)(partial(_one_step, cell=_gru_cell, has_cell_state=False))


@register(torch.nn.RNNCell)
def _rnn_cell_module(ctx, input, hx=None, *, mod):
    activation = _NONLINEARITY[mod.nonlinearity]
    return _one_step(ctx, input, hx, mod=mod, cell=partial(_rnn_cell, activation=activation), has_cell_state=False)


def _functional_step(ctx, input, hx, w_ih, w_hh, b_ih=None, b_hh=None, *, cell, has_cell_state: bool):
    """``torch.lstm_cell`` / ``gru_cell`` / ``rnn_tanh_cell`` / ``rnn_relu_cell`` (what the cell modules call;
    dynamo's graphs hold them with allow_rnn): :func:`_step` with the given weights and state."""
    h0, c0 = (hx[0], hx[1]) if has_cell_state else (hx, None)
    return _step(ctx, input, h0, c0, w_ih, w_hh, b_ih, b_hh, cell=cell, hidden=ctx.sig(w_hh).shape[1],
                 has_cell_state=has_cell_state)


register(torch.lstm_cell)(partial(_functional_step, cell=_lstm_cell, has_cell_state=True))
register(torch.gru_cell)(partial(_functional_step, cell=_gru_cell, has_cell_state=False))
register(torch.rnn_tanh_cell)(partial(_functional_step, cell=partial(_rnn_cell, activation=ops.tanh),
                                      has_cell_state=False))
register(torch.rnn_relu_cell)(partial(_functional_step, cell=partial(_rnn_cell, activation=ops.relu),
                                      has_cell_state=False))


# -- meta results by size arithmetic: torch's modules check their inputs with the sizes as ints (check_input), which
# would fix a symbolic batch or sequence length (the layers' loops take both symbolic).  torch's
# own forward still checks the arguments, at the traced sizes, and the equalities it checks are guards.
def _shapes(input, batch_first: bool, layers: int, dirs: int, state: int, hidden: int):
    """The output's, the hidden state's and the cell state's shapes of a recurrent layer's call on ``input``."""
    if input.dim() == 2:
        return (input.shape[0], dirs * state), (layers * dirs, state), (layers * dirs, hidden)
    steps, batch = (input.shape[1], input.shape[0]) if batch_first else input.shape[:2]
    output = (batch, steps, dirs * state) if batch_first else (steps, batch, dirs * state)
    return output, (layers * dirs, batch, state), (layers * dirs, batch, hidden)


def _results(input, lstm: bool, hx, shapes):
    """Meta results of those shapes, after checking the given initial states against them (guards)."""
    output, state, cell = shapes
    states = (state, cell) if lstm else (state,)
    for given, shape in zip(() if hx is None else hx if isinstance(hx, tuple) else (hx,), states):
        _expect_states((given,), shape)
    return input.new_empty(output), tuple(input.new_empty(s) for s in states)


def _recurrent_meta(mod, input, hx=None):
    if not isinstance(input, torch.Tensor) or not has_symbolic_sizes((input, hx)):
        return run_module_on_meta(mod, (input, hx), {})    # (a packed sequence: the rule refuses it)
    run_module_on_meta(mod, at_traced_sizes((input, hx)), {})
    lstm = isinstance(mod, torch.nn.LSTM)
    out, states = _results(input, lstm, hx, _shapes(input, mod.batch_first, mod.num_layers,
                                                    2 if mod.bidirectional else 1,
                                                    getattr(mod, "proj_size", 0) or mod.hidden_size, mod.hidden_size))
    return (out, states) if lstm else (out, states[0])


def _step_results(input, hx, hidden, lstm: bool):
    """A cell's meta results (``h``, and ``(h, c)`` for an LSTM cell) after checking the given state against
    their shape (guards)."""
    shape = (hidden,) if input.dim() == 1 else (input.shape[0], hidden)
    _expect_states(hx, shape)
    h = input.new_empty(shape)
    return (h, input.new_empty(shape)) if lstm else h


def _cell_meta(mod, input, hx=None):
    if not has_symbolic_sizes((input, hx)):
        return run_module_on_meta(mod, (input, hx), {})
    run_module_on_meta(mod, at_traced_sizes((input, hx)), {})
    return _step_results(input, hx, mod.hidden_size, isinstance(mod, torch.nn.LSTMCell))


def _expect_states(hx, shape) -> None:
    """torch's check of the given initial states' shapes: with symbolic sizes each equality is a guard."""
    for state in (() if hx is None else hx if isinstance(hx, tuple) else (hx,)):
        if tuple(state.shape) != tuple(shape):
            raise RuntimeError(f"Expected hidden size {tuple(shape)}, got {list(state.shape)}")


def _functional_meta(function, *args):
    """The functional forms' meta results by size arithmetic where a size is symbolic (as the modules')."""
    input, hx, params = args[:3]
    if not isinstance(params, (list, tuple)) or not has_symbolic_sizes((input, hx)):
        return function(*args)                              # (the packed overload: the rule refuses it)
    function(*at_traced_sizes(args))
    _, _, _, has_biases, layers, _, _, bidirectional, batch_first = args
    lstm = function is torch.lstm
    gates, state = params[1].shape
    hidden = gates // 4 if lstm else state               # (the cell state's width: an LSTM's W_hh is [4 H, P])
    out, states = _results(input, lstm, tuple(hx) if lstm else hx,
                           _shapes(input, batch_first, layers, 2 if bidirectional else 1, state, hidden))
    return (out, *states)


def _cell_functional_meta(function, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    if not has_symbolic_sizes((input, hx)):
        return function(input, hx, w_ih, w_hh, b_ih, b_hh)
    function(*at_traced_sizes((input, hx, w_ih, w_hh, b_ih, b_hh)))
    return _step_results(input, tuple(hx) if function is torch.lstm_cell else hx, w_hh.shape[1],
                         function is torch.lstm_cell)


for _function in (torch.lstm, torch.gru, torch.rnn_tanh, torch.rnn_relu):
    register_meta_function(_function, partial(_functional_meta, _function))
for _function in (torch.lstm_cell, torch.gru_cell, torch.rnn_tanh_cell, torch.rnn_relu_cell):
    register_meta_function(_function, partial(_cell_functional_meta, _function))
for _module in (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN):
    register_meta_module(_module, _recurrent_meta)
for _module in (torch.nn.LSTMCell, torch.nn.GRUCell, torch.nn.RNNCell):
    register_meta_module(_module, _cell_meta)
