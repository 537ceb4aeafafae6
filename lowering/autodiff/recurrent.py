"""VJP rules of the ``recurrent`` family.

``fxla.rnn`` / ``fxla.lstm``: their backward op (``fxla.rnn_backward`` / ``fxla.lstm_backward``: one loop from the
last step back, dialects/fxla/ops_recurrent.py) gives the cotangents of the input projection, of each step's hidden
projection ``hh_t = h_{t-1} W_hh^T + b_hh`` and of the initial states; the recurrent weight's cotangent is then one
product over every step, ``sum_t d(hh_t)^T h_{t-1}``, and the bias's the sum of ``d(hh_t)``, as ``fxla.linear``'s
VJP makes them, with ``h_{t-1}`` the saved states shifted by one step (the initial state first).  A result with no
cotangent counts as zero.  The backward ops are not differentiated again.

``fxla.ctc_loss``: torch's ``ctc_loss_backward`` (LossCTC.cpp), with the betas of ``fxla.ctc_beta``.  The
cotangent of ``log_probs[t, n, c]`` is ``(exp(log_probs) - sum over s with l'[s] = c of
exp(alpha + beta + nll - log_probs)) * grad[n]`` for ``t`` below the sample's input length, 0 after it, and 0
for the whole sample where ``zero_infinity`` and its loss is inf (without it, such a sample's gradient is NaN, as
torch's).  torch's formula includes ``exp(log_probs)`` whatever produced ``log_probs``: it is the gradient with
respect to the logits of a ``log_softmax`` (whose backward then adds nothing), so for other inputs it differs
from the loss's derivative; fxla follows torch.  The integer operands get no gradient.
"""
from __future__ import annotations

import math

from fxla.dialects.fxla import Sig, ops, type_of

from .reduce import scatter_back
from .registry import non_differentiable, vjp_rule


def _previous_states(ctx, output, h0, reverse: bool):
    """``[T, N, H]``: the state each step started from (``h0`` at the first step, a reversed layer's last)."""
    steps, batch, hidden = ctx.sig(output).shape
    first = ctx.reshape(h0, (1, batch, hidden))
    if reverse:
        return ctx.emit(ops.concat, [ctx.slice_dim(output, 0, 1, steps), first], dim=0)
    return ctx.emit(ops.concat, [first, ctx.slice_dim(output, 0, 0, steps - 1)], dim=0)


def _rows(ctx, v):
    """``v`` ``[T, N, K]`` as ``[T * N, K]``: one row per step and sample."""
    steps, batch, width = ctx.sig(v).shape
    return ctx.reshape(v, (steps * batch, width))


def _over_steps(ctx, grads, values):
    """``grads^T values`` of ``[T * N, out]`` and ``[T * N, in]`` rows (:func:`_rows`): the cotangent of a weight
    applied at every step, summed over the steps and samples."""
    return ctx.emit(ops.matmul, ctx.emit(ops.permute, grads, dims=(1, 0)), values)


def _recurrent_weights(ctx, grad_hidden, previous, bias):
    """The cotangents of ``W_hh`` and ``b_hh`` from those of every step's hidden projection."""
    flat = _rows(ctx, grad_hidden)
    d_weight = _over_steps(ctx, flat, _rows(ctx, previous))
    return d_weight, None if bias is None else ctx.emit(ops.sum, flat, dims=(0,), keepdim=False)


@vjp_rule(ops.rnn)
def _rnn(ctx, ct, input, h0, weight, bias, *, result, cell, reverse):
    grad_input, grad_hidden, grad_h0 = ctx.emit(ops.rnn_backward, input, h0, weight, bias, result, ct, cell=cell,
                                                reverse=reverse)
    d_weight, d_bias = _recurrent_weights(ctx, grad_hidden, _previous_states(ctx, result, h0, reverse), bias)
    return grad_input, grad_h0, d_weight, d_bias


@vjp_rule(ops.lstm)
def _lstm(ctx, ct, input, h0, c0, weight, bias, projection, *, result, reverse):
    output, cells = result
    grad_output = ct[0] if ct[0] is not None else ctx.zeros_like(output)
    grad_input, grad_h0, grad_c0 = ctx.emit(ops.lstm_backward, input, h0, c0, weight, bias, output, cells,
                                            grad_output, ct[1], projection, reverse=reverse)
    previous = _previous_states(ctx, output, h0, reverse)
    d_weight, d_bias = _recurrent_weights(ctx, grad_input, previous, bias)
    d_projection = None if projection is None else _projection_grad(ctx, grad_input, grad_output, input, previous,
                                                                     cells, weight, bias, reverse)
    return grad_input, grad_h0, grad_c0, d_weight, d_bias, d_projection


def _projection_grad(ctx, grad_gates, grad_output, input, previous, cells, weight, bias, reverse: bool):
    """W_hr's cotangent, ``sum_t dh_t^T r_t``: ``r_t = o_t * tanh(c_t)`` recomputed for every step at once from the
    saved states, and ``dh_t`` (each step's whole hidden-state cotangent) its output's plus what the next step's
    gates send back through W_hh (the step before, for a reversed layer)."""
    steps, batch, width = ctx.sig(grad_gates).shape
    state = ctx.sig(previous).shape[2]
    gates = ctx.emit(ops.add, input, ctx.emit(ops.linear, previous, weight, bias))
    o = ctx.emit(ops.sigmoid, ctx.slice_dim(gates, 2, 3 * (width // 4), width))
    r = ctx.emit(ops.mul, o, ctx.emit(ops.tanh, cells))
    sent = ctx.reshape(ctx.emit(ops.matmul, _rows(ctx, grad_gates), weight), (steps, batch, state))
    none = ctx.zeros(Sig((1, batch, state), ctx.sig(sent).elem))
    if reverse:
        sent = ctx.emit(ops.concat, [none, ctx.slice_dim(sent, 0, 0, steps - 1)], dim=0)
    else:
        sent = ctx.emit(ops.concat, [ctx.slice_dim(sent, 0, 1, steps), none], dim=0)
    return _over_steps(ctx, _rows(ctx, ctx.emit(ops.add, grad_output, sent)), _rows(ctx, r))


@vjp_rule(ops.ctc_loss)
def _ctc_loss(ctx, ct, log_probs, targets, input_lengths, target_lengths, *, result, zero_infinity):
    grad = ct[0]
    if grad is None:
        return None, None, None, None
    nll, alphas = result
    steps, batch, width = ctx.sig(alphas).shape
    betas = ctx.emit(ops.ctc_beta, log_probs, targets, input_lengths, target_lengths)
    index = ctx.emit(ops.expand, ctx.reshape(targets, (1, batch, width)), shape=(steps, batch, width))
    at_targets = ctx.emit(ops.gather, log_probs, index, dim=2)
    per_sample = ctx.reshape(nll, (1, batch, 1))
    occupied = ctx.emit(ops.exp, ctx.emit(ops.sub, ctx.emit(ops.add, ctx.emit(ops.add, alphas, betas), per_sample),
                                          at_targets))
    d = ctx.emit(ops.sub, ctx.emit(ops.exp, log_probs), scatter_back(ctx, occupied, index, log_probs, 2, "add"))
    d = ctx.emit(ops.mul, d, ctx.reshape(grad, (1, batch, 1)))
    t = ctx.emit(ops.arange, start=0.0, step=1.0, length=steps, result_type=type_of(Sig((steps,), "i64")))
    inside = ctx.emit(ops.lt, ctx.reshape(t, (steps, 1, 1)), ctx.reshape(input_lengths, (1, batch, 1)))
    zero = ctx.tensor(0.0, like=d)
    if zero_infinity:
        inside = ctx.emit(ops.logical_and, inside, ctx.emit(ops.ne, per_sample, ctx.tensor(math.inf, like=nll)))
    return ctx.emit(ops.where, inside, d, zero), None, None, None


non_differentiable("it is the backward of a recurrent layer, which fxla differentiates once (no second-order "
                   "gradients through recurrent layers)", ops.rnn_backward, ops.lstm_backward)
non_differentiable("it is the CTC loss's backward recursion (no second-order gradients through ctc_loss)",
                   ops.ctc_beta)
