"""The ``recurrent`` family: recurrences over time, each one ``stablehlo.while`` loop whatever the number of steps:
a recurrent layer (one layer, one direction) and its backward, and the CTC loss's forward (alpha) and backward
(beta) recursions.  ``input`` is
the layer's input projection ``x_t W_ih^T + b_ih`` of every step, ``[T, N, G*H]`` (``G`` gates of ``H``
features); the cell runs over the leading (time) dim from step 0, or from step ``T - 1`` with ``reverse``,
starting from ``h0`` ``[N, H]`` (and the LSTM's ``c0``), with ``weight`` ``[G*H, H]`` and ``bias`` ``[G*H]``
(``W_hh``, ``b_hh``); each step's hidden projection is ``hh_t = h_{t-1} W_hh^T + b_hh`` and the cells are
torch's (``torch.nn.RNN`` / ``LSTM`` / ``GRU`` docs): ``tanh`` and ``relu`` (G = 1) are
``h_t = act(input_t + hh_t)``; ``gru`` (G = 3, gates r, z, n) is ``r = sigmoid(i_r + hh_r)``,
``z = sigmoid(i_z + hh_z)``, ``n = tanh(i_n + r * hh_n)``, ``h_t = (1 - z) * n + z * h_{t-1}``; ``lstm`` (G = 4,
gates i, f, g, o) is ``c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g)``, ``h_t = sigmoid(o) * tanh(c_t)``
(times ``W_hr``'s transpose with a ``projection``: ``proj_size``).

``output[t]`` is ``h_t`` in sequence order for both directions (a reversed layer's ``output[0]`` is its last
step) and ``cells[t]`` the LSTM's ``c_t``.  The backward ops take the forward's operands, its results and the
results' cotangents and recompute each step's gates from the saved states, from the last step back; they give
the cotangents of ``input``, of each step's hidden projection ``hh_t`` (the recurrent weight's and bias's
cotangents are sums of it, made outside the loop by the VJP rule) and of the initial states.  They are not
differentiated again.

``fxla.ctc_loss`` takes ``log_probs`` ``[T, N, C]``, the extended targets ``targets`` ``[N, W]`` (``W = 2S + 1``:
blank, l1, blank, l2, ..., blank; the blank is whatever class the targets put there) and the lengths ``[N]``; it
runs the alpha recursion of Graves et al. (2006) as torch's ``ctc_loss`` documents it and gives each sample's
negative log-likelihood (``inf`` where no alignment exists) and every step's alpha (a sample's stops changing
once its input length is reached).  ``fxla.ctc_beta`` runs the backward (beta) recursion from each sample's last
step; its gradient (lowering/autodiff/recurrent.py) is torch's ``ctc_loss_backward``.
"""
from __future__ import annotations

from .opdef import BOOL, STR, Attr, FloatOperand, InferError, OpDef, Operand
from .types import Sig

#: cell -> its gate count
GATES = {"tanh": 1, "relu": 1, "gru": 3, "lstm": 4}
_REVERSE = Attr("reverse", BOOL, "run from the last step to the first", default=False)


def _layer(input, h0, weight, bias, gates: int, hidden=None):
    """``(steps, batch, hidden)`` of a layer's operands, checked against each other (``hidden``: the cell's size
    where the state ``h0`` is a projection of another size, an LSTM's with ``projection``)."""
    present = [s for s in (input, h0, weight, bias) if s is not None]
    if len({s.elem for s in present}) != 1:
        raise InferError("operand element types differ (" + ", ".join(s.elem for s in present) + ")")
    if input.rank != 3 or h0.rank != 2 or weight.rank != 2:
        raise InferError(f"expects input [T, N, G*H], h0 [N, H] and weight [G*H, H], got ranks {input.rank}, "
                         f"{h0.rank} and {weight.rank}")
    steps, batch, width = input.shape
    state = h0.shape[1]
    hidden = state if hidden is None else hidden
    if weight.shape[0] != gates * hidden or weight.shape[1] != state:
        raise InferError(f"weight {list(weight.shape)} is not [{gates} * {hidden}, {state}] for a hidden size of "
                         f"{hidden} and {gates} gate(s)")
    if width != gates * hidden or h0.shape[0] != batch:
        raise InferError(f"input {list(input.shape)} and h0 {list(h0.shape)} are not [T, N, {gates * hidden}] and "
                         f"[N, {state}]")
    if bias is not None and bias.shape != (gates * hidden,):
        raise InferError(f"bias {list(bias.shape)} is not [{gates * hidden}]")
    return steps, batch, hidden


def _same(what: str, sig, want: Sig) -> None:
    if sig is not None and (sig.shape != want.shape or sig.elem != want.elem):
        raise InferError(f"{what} is {sig}, expected {want}")


def _rnn(ops, attrs) -> list:
    input, h0, weight, bias = ops
    steps, batch, hidden = _layer(input, h0, weight, bias, GATES[attrs["cell"]])
    return [Sig((steps, batch, hidden), input.elem)]


def _lstm(ops, attrs) -> list:
    input, h0, c0, weight, bias, projection = ops
    if c0.rank != 2 or c0.shape[0] != h0.shape[0] or c0.elem != h0.elem:
        raise InferError(f"c0 {c0} is not [N, H] of h0's batch and element type")
    _layer(input, h0, weight, bias, 4, c0.shape[1])
    if projection is None:
        _same("c0", c0, h0)
    else:
        _same("projection", projection, Sig((h0.shape[1], c0.shape[1]), h0.elem))
    return [Sig(input.shape[:2] + h0.shape[1:], input.elem), Sig(input.shape[:2] + c0.shape[1:], input.elem)]


def _rnn_backward(ops, attrs) -> list:
    input, h0, weight, bias, output, grad_output = ops
    _rnn([input, h0, weight, bias], attrs)
    states = Sig(input.shape[:2] + h0.shape[1:], input.elem)
    _same("output", output, states)
    _same("grad_output", grad_output, states)
    return [input, input, h0]


def _lstm_backward(ops, attrs) -> list:
    input, h0, c0, weight, bias, output, cells, grad_output, grad_cells, projection = ops
    states, cell_states = _lstm([input, h0, c0, weight, bias, projection], attrs)
    for what, sig, want in (("output", output, states), ("cells", cells, cell_states),
                            ("grad_output", grad_output, states), ("grad_cells", grad_cells, cell_states)):
        _same(what, sig, want)
    return [input, h0, c0]


_LAYER = (FloatOperand("input", "[T, N, G*H]: every step's input projection"),
          FloatOperand("h0", "[N, H]: the initial hidden state"))
_WEIGHTS = (FloatOperand("weight", "[G*H, H]: W_hh"), FloatOperand("bias", "[G*H]: b_hh", optional=True))

rnn = OpDef("rnn", "An Elman RNN (`tanh`, `relu`) or GRU layer over the leading dim of `input`: every step's "
            "hidden state (the family's cells).", _LAYER + _WEIGHTS,
            (Attr("cell", STR, "the cell: tanh, relu or gru", choices=("tanh", "relu", "gru")), _REVERSE),
            results=("output",), infer=_rnn, torch="torch.nn.RNN, torch.nn.GRU (one layer, one direction)")
_PROJECTION = FloatOperand("projection", "[P, H]: W_hr, an LSTM's projection of its hidden state (h_t = "
                           "W_hr (o * tanh(c_t)); h0, the output and W_hh's columns are then P wide)", optional=True)
lstm = OpDef("lstm", "An LSTM layer over the leading dim of `input`: every step's hidden and cell state "
             "(the family's cells).", _LAYER + (FloatOperand("c0", "[N, H]: the initial cell state"),) + _WEIGHTS +
             (_PROJECTION,),
             (_REVERSE,), results=("output", "cells"), infer=_lstm,
             torch="torch.nn.LSTM (one layer, one direction)")
rnn_backward = OpDef(
    "rnn_backward", "The backward of `fxla.rnn`: the cotangents of `input`, of each step's hidden projection "
    "`hh_t` and of `h0`, from the forward's operands, its `output` and that output's cotangent.",
    _LAYER + _WEIGHTS + (FloatOperand("output", "[T, N, H]: the forward's result"),
                         FloatOperand("grad_output", "[T, N, H]: its cotangent")),
    (Attr("cell", STR, "the cell: tanh, relu or gru", choices=("tanh", "relu", "gru")), _REVERSE),
    results=("grad_input", "grad_hidden", "grad_h0"), infer=_rnn_backward)
lstm_backward = OpDef(
    "lstm_backward", "The backward of `fxla.lstm`: the cotangents of `input` (which are also those of each step's "
    "hidden projection), `h0` and `c0`, from the forward's operands, its results and their cotangents.",
    _LAYER + (FloatOperand("c0"),) + _WEIGHTS + (
        FloatOperand("output", "[T, N, H]: the forward's hidden states"),
        FloatOperand("cells", "[T, N, H]: the forward's cell states"),
        FloatOperand("grad_output", "[T, N, H]: the hidden states' cotangent"),
        FloatOperand("grad_cells", "[T, N, H]: the cell states' cotangent (absent: zero)", optional=True),
        _PROJECTION),
    (_REVERSE,), results=("grad_input", "grad_h0", "grad_c0"), infer=_lstm_backward)



def _ctc(ops, attrs) -> list:
    log_probs, targets, input_lengths, target_lengths = ops
    if log_probs.rank != 3 or targets.rank != 2:
        raise InferError(f"expects log_probs [T, N, C] and targets [N, 2S + 1], got ranks {log_probs.rank} and "
                         f"{targets.rank}")
    steps, batch, _ = log_probs.shape
    if targets.shape[0] != batch or input_lengths.shape != (batch,) or target_lengths.shape != (batch,):
        raise InferError(f"targets {list(targets.shape)} and lengths {list(input_lengths.shape)}, "
                         f"{list(target_lengths.shape)} do not hold one row per sample of a batch of {batch}")
    return [Sig((batch,), log_probs.elem), Sig((steps, batch, targets.shape[1]), log_probs.elem)]


_CTC = (FloatOperand("log_probs", "[T, N, C]"),
        Operand("targets", "[N, 2S + 1]: the extended targets", elems=("i64",)),
        Operand("input_lengths", "[N]", elems=("i64",)), Operand("target_lengths", "[N]", elems=("i64",)))

ctc_loss = OpDef("ctc_loss", "The CTC loss's alpha recursion: each sample's negative log-likelihood and every "
                 "step's alpha.", _CTC,
                 (Attr("zero_infinity", BOOL, "its gradient is 0 for a sample whose loss is inf (the loss itself "
                       "stays inf: the caller replaces it)", default=False),),
                 results=("loss", "alphas"), infer=_ctc, torch="torch.nn.functional.ctc_loss (per sample)")
ctc_beta = OpDef("ctc_beta", "The CTC loss's beta recursion (from each sample's last step back; -inf past its "
                 "input length): the backward of `fxla.ctc_loss`.", _CTC, results=("betas",),
                 infer=lambda ops, attrs: _ctc(ops, attrs)[1:])

RECURRENT_OPS = (rnn, lstm, rnn_backward, lstm_backward, ctc_loss, ctc_beta)
