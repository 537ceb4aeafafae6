"""Patterns for the ``recurrent`` family: a recurrent layer (``fxla.rnn``, ``fxla.lstm``) and its backward, and the
CTC loss's alpha and beta recursions (``fxla.ctc_loss``, ``fxla.ctc_beta``), each one ``stablehlo.while`` loop
over the steps, whatever their number: the program, and XLA's compile time, do not grow with it, and a ``?``
number of steps is the loop's trip count read off the input.

Each iteration slices its step's input projection (``dynamic_slice`` at the step index; ``real_dynamic_slice`` of
``start + sizes`` where another dim is ``?``, which StableHLO's shape refinement turns into a
``dynamic_slice``), runs the cell on the carried state and writes the new state into the ``[T, N, H]`` result
(``dynamic_update_slice``).  Every value an iteration reads is carried, so the loop's regions capture nothing.
f16/bf16 layers compute each step in f32 and round the states they store, as torch's cells round each result.

The backward loops run the steps the other way.  Each iteration takes the step's previous states from the saved
results (the initial states at the first step), recomputes the gates it needs (the LSTM's and the GRU's; an
Elman cell's derivative reads its saved output only), and carries the cotangent of the previous state.
"""
from __future__ import annotations

from functools import partial
from typing import Callable, List, Optional, Sequence

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.symbolic import DYNAMIC
from fxla.dialects.mlir import hlo, ir

from .builder import Builder, compare, compute_type, pattern


# -- loop structure ----------------------------------------------------------------------------------------------
def _loop(b: Builder, steps, carried: Sequence[ir.Value], body: Callable, *, backwards: bool) -> List[ir.Value]:
    """``stablehlo.while`` over the steps ``0 .. steps - 1`` (``backwards``: from the last); ``body(t, *carried)``
    (``t`` the step, a ``tensor<i64>``) returns the new carried values.  The final carried values."""
    count = steps if isinstance(steps, ir.Value) else b.splat(steps, "i64")
    values = [b.splat(0, "i64"), count, *carried]
    types = [v.type for v in values]
    loop = hlo.WhileOp(types, values)
    cond = loop.regions[0].blocks.append(*types)
    with ir.InsertionPoint(cond):
        hlo.ReturnOp([compare(cond.arguments[0], cond.arguments[1], "LT", "i64")])
    block = loop.regions[1].blocks.append(*types)
    with ir.InsertionPoint(block):
        i, n = block.arguments[0], block.arguments[1]
        one = b.splat(1, "i64")
        t = hlo.SubtractOp(hlo.SubtractOp(n, i).result, one).result if backwards else i
        hlo.ReturnOp([hlo.AddOp(i, one).result, n, *body(t, *block.arguments[2:])])
    return list(loop.results)[2:]


def _row(b: Builder, x, t) -> ir.Value:
    """Step ``t`` of ``x`` ``[T, N, K]``: ``[N, K]``."""
    s = b.sig(x)
    _, n, k = s.shape
    zero = b.splat(0, "i64")
    if n != DYNAMIC and k != DYNAMIC:
        return b.reshape(hlo.DynamicSliceOp(x, [t, zero, zero], [1, n, k]).result, [n, k])
    sizes = b.dims_of(x)[1:]
    start = b.shape_value([t, 0, 0])
    limit = hlo.AddOp(start, b.shape_value([1, *sizes])).result
    row = hlo.RealDynamicSliceOp(b.type((1, n, k), s.elem), x, start, limit, b.shape_value([1, 1, 1])).result
    return b.reshape(row, sizes)


def _write(b: Builder, buffer, t, value) -> ir.Value:
    """``buffer`` ``[T, N, K]`` with step ``t`` set to ``value`` ``[N, K]`` (converted to the buffer's type)."""
    value = b.convert(value, b.sig(buffer).elem)
    zero = b.splat(0, "i64")
    return hlo.DynamicUpdateSliceOp(buffer, b.reshape(value, [1, *b.dims_of(value)]), [t, zero, zero]).result


def _cols(b: Builder, x, lo: int, hi: int) -> ir.Value:
    """Columns ``lo .. hi - 1`` of ``x`` ``[N, K]`` (one gate)."""
    n = b.sig(x).shape[0]
    if n != DYNAMIC:
        return hlo.SliceOp(x, [0, lo], [n, hi], [1, 1]).result
    return hlo.RealDynamicSliceOp(b.type((DYNAMIC, hi - lo), b.sig(x).elem), x, b.shape_value([0, lo]),
                                  b.shape_value([b.dim_of(x, 0), hi]), b.shape_value([1, 1])).result


def _gates(b: Builder, x, count: int) -> List[ir.Value]:
    """``x`` ``[N, count * H]`` split into its ``count`` gates (torch's order)."""
    width = b.sig(x).shape[1] // count
    return [_cols(b, x, g * width, (g + 1) * width) for g in range(count)]


def _hidden(b: Builder, h, weight, bias: Optional[ir.Value]) -> ir.Value:
    """``h W_hh^T + b_hh``: ``[N, G*H]``."""
    width = b.sig(weight).shape[0]
    y = b.dot(h, weight, (b.sig(h).shape[0], width), lhs_contract=[1], rhs_contract=[1])
    return y if bias is None else hlo.AddOp(y, b.broadcast(bias, [b.dim_of(h, 0), width])).result


def _back_through(b: Builder, grad, weight) -> ir.Value:
    """``grad W_hh``: the cotangent ``[N, G*H]`` of a hidden projection, as that of its state ``[N, H]``."""
    return b.dot(grad, weight, (b.sig(grad).shape[0], b.sig(weight).shape[1]), lhs_contract=[1], rhs_contract=[0])


class _Math:
    """Elementwise StableHLO in one compute type (f32 for f16/bf16 layers)."""

    def __init__(self, b: Builder, elem: str):
        self.b, self.elem = b, compute_type(elem)

    def __call__(self, v):
        return self.b.convert(v, self.elem)

    def one(self, like):
        return self.b.splat(1, self.elem, self.b.dims_of(like))

    def add(self, *vs):
        out = vs[0]
        for v in vs[1:]:
            out = hlo.AddOp(out, v).result
        return out

    def mul(self, *vs):
        out = vs[0]
        for v in vs[1:]:
            out = hlo.MulOp(out, v).result
        return out

    def sub(self, a, c):
        return hlo.SubtractOp(a, c).result

    def sigmoid(self, v):
        return hlo.LogisticOp(v).result

    def tanh(self, v):
        return hlo.TanhOp(v).result

    def d_sigmoid(self, y):
        """The derivative of a sigmoid at its result ``y``: ``y (1 - y)``."""
        return self.mul(y, self.sub(self.one(y), y))

    def d_tanh(self, y):
        """The derivative of tanh at its result ``y``: ``1 - y^2``."""
        return self.sub(self.one(y), self.mul(y, y))


def _prepared(m: _Math, weight, bias):
    """The recurrent weight and bias in the compute type (converted once, outside the loop)."""
    return m(weight), None if bias is None else m(bias)


def _previous(b: Builder, states, first, t, *, reverse: bool) -> ir.Value:
    """The state before step ``t`` of a layer whose states ``[T, N, H]`` are ``states``: ``first`` at the layer's
    first step, else the neighbouring step's."""
    steps = b.dim_of(states, 0)
    if reverse:
        last = hlo.SubtractOp(steps if isinstance(steps, ir.Value) else b.splat(steps, "i64"),
                              b.splat(1, "i64")).result
        at_first = compare(t, last, "EQ", "i64")
        index = hlo.MinOp(hlo.AddOp(t, b.splat(1, "i64")).result, last).result
    else:
        at_first = compare(t, b.splat(0, "i64"), "EQ", "i64")
        index = hlo.MaxOp(hlo.SubtractOp(t, b.splat(1, "i64")).result, b.splat(0, "i64")).result
    return hlo.SelectOp(at_first, first, _row(b, states, index)).result


# -- the cells, one step forward: (m, input_t, hh_t, h_{t-1}) -> h_t ------------------------------------------------
def _elman_step(m: _Math, x, hh, h, *, relu: bool):
    a = m.add(x, hh)
    return hlo.MaxOp(a, m.b.splat(0, m.elem, m.b.dims_of(a))).result if relu else m.tanh(a)


def _gru_step(m: _Math, x, hh, h):
    x_r, x_z, x_n = _gates(m.b, x, 3)
    h_r, h_z, h_n = _gates(m.b, hh, 3)
    r, z = m.sigmoid(m.add(x_r, h_r)), m.sigmoid(m.add(x_z, h_z))
    n = m.tanh(m.add(x_n, m.mul(r, h_n)))
    return m.add(n, m.mul(z, m.sub(h, n)))                 # (1 - z) n + z h


#: fxla.rnn's cell -> its step
_STEPS = {"tanh": partial(_elman_step, relu=False), "relu": partial(_elman_step, relu=True), "gru": _gru_step}


@pattern(ops.rnn)
def _rnn(b: Builder, input, h0, weight, bias, *, cell, reverse):
    elem = b.sig(input).elem
    m = _Math(b, elem)
    step = _STEPS[cell]

    def body(t, h, out, input, weight, bias=None):
        hh = _hidden(b, m(h), weight, bias)
        h = b.convert(step(m, m(_row(b, input, t)), hh, m(h)), elem)
        return [h, _write(b, out, t, h), input, weight] + ([] if bias is None else [bias])

    weight, bias = _prepared(m, weight, bias)
    out = b.splat(0, elem, b.dims(0))
    carried = [h0, out, input, weight] + ([] if bias is None else [bias])
    return _loop(b, b.dim_of(input, 0), carried, body, backwards=reverse)[1]


def _optionals(values, *present) -> list:
    """Carried optional operands (only the present ones, in order) back as one entry per flag, None if absent."""
    given = iter(values)
    return [next(given) if flag else None for flag in present]


@pattern(ops.lstm)
def _lstm(b: Builder, input, h0, c0, weight, bias, projection, *, reverse):
    elem = b.sig(input).elem
    m = _Math(b, elem)
    present = (bias is not None, projection is not None)

    def body(t, h, c, out, cells, input, weight, *optional):
        bias, projection = _optionals(optional, *present)
        gates = m.add(m(_row(b, input, t)), _hidden(b, m(h), weight, bias))
        i, f, g, o = _gates(b, gates, 4)
        c = b.convert(m.add(m.mul(m.sigmoid(f), m(c)), m.mul(m.sigmoid(i), m.tanh(g))), elem)
        h = m.mul(m.sigmoid(o), m.tanh(m(c)))
        h = b.convert(h if projection is None else _hidden(b, h, projection, None), elem)     # (h = W_hr r)
        return [h, c, _write(b, out, t, h), _write(b, cells, t, c), input, weight, *optional]

    weight, bias = _prepared(m, weight, bias)
    optional = [m(v) for v in (bias, projection) if v is not None]
    carried = [h0, c0, b.splat(0, elem, b.dims(0)), b.splat(0, elem, b.dims(1)), input, weight, *optional]
    results = _loop(b, b.dim_of(input, 0), carried, body, backwards=reverse)
    return results[2], results[3]


# -- the backward loops ----------------------------------------------------------------------------------------------
# a cell's step backward: (m, dh_t, h_t, t, the loop's values) -> (d input_t, d hh_t, d h_{t-1}), all [N, *]
def _elman_back(m: _Math, dh, h_t, t, rows, *, relu: bool):
    b = m.b
    if relu:                         # torch's threshold_backward: passes where the result is > 0
        zero = b.splat(0, m.elem, b.dims_of(h_t))
        d = hlo.SelectOp(compare(h_t, zero, "GT", m.elem), dh, zero).result
    else:
        d = m.mul(dh, m.d_tanh(h_t))
    return d, d, _back_through(b, d, rows.weight)


def _gru_back(m: _Math, dh, h_t, t, rows):
    b = m.b
    h = m(rows.previous(t))
    x_r, x_z, x_n = _gates(b, m(_row(b, rows.input, t)), 3)
    h_r, h_z, h_n = _gates(b, _hidden(b, h, rows.weight, rows.bias), 3)
    r, z = m.sigmoid(m.add(x_r, h_r)), m.sigmoid(m.add(x_z, h_z))
    n = m.tanh(m.add(x_n, m.mul(r, h_n)))
    dan = m.mul(dh, m.sub(m.one(z), z), m.d_tanh(n))
    dar = m.mul(dan, h_n, m.d_sigmoid(r))
    daz = m.mul(dh, m.sub(h, n), m.d_sigmoid(z))
    d_hid = hlo.ConcatenateOp([dar, daz, m.mul(dan, r)], 1).result
    return hlo.ConcatenateOp([dar, daz, dan], 1).result, d_hid, m.add(m.mul(dh, z), _back_through(b, d_hid,
                                                                                                   rows.weight))


#: fxla.rnn_backward's cell -> its step backward
_BACK_STEPS = {"tanh": partial(_elman_back, relu=False), "relu": partial(_elman_back, relu=True), "gru": _gru_back}


class _Rows:
    """What a backward iteration reads: its loop's carried operands, and the state each step started from."""

    def __init__(self, b: Builder, input, h0, weight, output, bias, reverse: bool):
        self.b, self.input, self.h0, self.weight, self.output, self.bias = b, input, h0, weight, output, bias
        self.reverse = reverse

    def previous(self, t):
        return _previous(self.b, self.output, self.h0, t, reverse=self.reverse)


@pattern(ops.rnn_backward)
def _rnn_backward(b: Builder, input, h0, weight, bias, output, grad_output, *, cell, reverse):
    elem = b.sig(input).elem
    m = _Math(b, elem)
    back, separate = _BACK_STEPS[cell], cell == "gru"      # (only a GRU's hh_t cotangent differs from input_t's)

    def body(t, dh, grad_in, grad_hid, input, h0, weight, output, grad_output, bias=None):
        rows = _Rows(b, input, h0, weight, output, bias, reverse)
        d_in, d_hid, dh = back(m, m.add(m(_row(b, grad_output, t)), dh), m(_row(b, output, t)), t, rows)
        grad_hid = _write(b, grad_hid, t, d_hid) if separate else grad_hid
        return [dh, _write(b, grad_in, t, d_in), grad_hid, input, h0, weight, output, grad_output] + \
            ([] if bias is None else [bias])

    weight, bias = _prepared(m, weight, bias)
    grads = b.splat(0, elem, b.dims_of(input))
    carried = [m(b.splat(0, elem, b.dims_of(h0))), grads, grads, input, h0, weight, output, grad_output] + \
        ([] if bias is None else [bias])
    dh, grad_in, grad_hid = _loop(b, b.dim_of(input, 0), carried, body, backwards=not reverse)[:3]
    return grad_in, grad_hid if separate else grad_in, b.convert(dh, elem)


@pattern(ops.lstm_backward)
def _lstm_backward(b: Builder, input, h0, c0, weight, bias, output, cells, grad_output, grad_cells, projection, *,
                   reverse):
    elem = b.sig(input).elem
    m = _Math(b, elem)
    grad_cells = grad_cells if grad_cells is not None else b.splat(0, elem, b.dims_of(cells))
    present = (bias is not None, projection is not None)

    def body(t, dh, dc, grad_in, input, h0, c0, weight, output, cells, grad_output, grad_cells, *optional):
        bias, projection = _optionals(optional, *present)
        h = m(_previous(b, output, h0, t, reverse=reverse))
        c = m(_previous(b, cells, c0, t, reverse=reverse))
        gates = m.add(m(_row(b, input, t)), _hidden(b, h, weight, bias))
        i, f, g, o = _gates(b, gates, 4)
        i, f, g, o = m.sigmoid(i), m.sigmoid(f), m.tanh(g), m.sigmoid(o)
        tc = m.tanh(m(_row(b, cells, t)))
        dh_t = m.add(m(_row(b, grad_output, t)), dh)
        dr = dh_t if projection is None else _back_through(b, dh_t, projection)   # (through h = W_hr r)
        dc_t = m.add(dc, m(_row(b, grad_cells, t)), m.mul(dr, o, m.d_tanh(tc)))
        d_gates = [m.mul(dc_t, g, m.d_sigmoid(i)), m.mul(dc_t, c, m.d_sigmoid(f)),
                   m.mul(dc_t, i, m.d_tanh(g)), m.mul(dr, tc, m.d_sigmoid(o))]
        d_in = hlo.ConcatenateOp(d_gates, 1).result
        return [_back_through(b, d_in, weight), m.mul(dc_t, f), _write(b, grad_in, t, d_in), input, h0, c0, weight,
                output, cells, grad_output, grad_cells, *optional]

    weight, bias = _prepared(m, weight, bias)
    optional = [m(v) for v in (bias, projection) if v is not None]
    carried = [m(b.splat(0, elem, b.dims_of(h0))), m(b.splat(0, elem, b.dims_of(c0))),
               b.splat(0, elem, b.dims_of(input)), input, h0, c0, weight, output, cells, grad_output, grad_cells,
               *optional]
    dh, dc, grad_in = _loop(b, b.dim_of(input, 0), carried, body, backwards=not reverse)[:3]
    return grad_in, b.convert(dh, elem), b.convert(dc, elem)


# -- the CTC loss's recursions ------------------------------------------------------------------------------------
_NEG_INF = float("-inf")


def _extended_log_probs(b: Builder, m: _Math, log_probs, targets) -> ir.Value:
    """``log_probs`` at each sample's extended targets, every step: ``[T, N, W]`` in the compute type."""
    shape = [b.dim_of(log_probs, 0), *b.dims_of(targets)]
    return m(b.take_along(log_probs, b.broadcast_dims(targets, shape, [1, 2]), 2))


def _shift(b: Builder, v, by: int, fill) -> ir.Value:
    """``v[:, s - by]`` of ``v`` ``[N, W]`` (``by`` < 0: ``v[:, s + |by|]``), ``fill`` where that is outside."""
    return hlo.PadOp(v, b.splat(fill, b.sig(v).elem), [0, by], [0, -by], [0, 0]).result


def _positions(b: Builder, like) -> ir.Value:
    """The extended-target position ``s`` of each element of ``like`` ``[N, W]`` (i64)."""
    return b.iota(b.dims_of(like), 1, "i64")


def _per_sample(b: Builder, lengths, like) -> ir.Value:
    """``lengths`` ``[N]`` broadcast along the positions of ``like`` ``[N, W]``."""
    return b.broadcast_dims(lengths, b.dims_of(like), [0])


def _skips(b: Builder, targets) -> ir.Value:
    """Where alpha may come from ``s - 2``: a label (odd ``s`` >= 2) other than the label before it."""
    s = _positions(b, targets)
    odd = compare(hlo.RemOp(s, b.splat(2, "i64", b.dims_of(s))).result, b.splat(1, "i64", b.dims_of(s)), "EQ", "i64")
    later = compare(s, b.splat(2, "i64", b.dims_of(s)), "GE", "i64")
    other = compare(targets, _shift(b, targets, 2, -1), "NE", "i64")
    return hlo.AndOp(hlo.AndOp(odd, later).result, other).result


def _logsumexp(m: _Math, *vs) -> ir.Value:
    """torch's CTC log-sum-exp: the largest term taken out (0 where it is -inf, so the result is -inf then)."""
    b = m.b
    top = vs[0]
    for v in vs[1:]:
        top = hlo.MaxOp(top, v).result
    shape = b.dims_of(top)
    top = hlo.SelectOp(compare(top, b.splat(_NEG_INF, m.elem, shape), "EQ", m.elem), b.splat(0, m.elem, shape),
                       top).result
    return m.add(hlo.LogOp(m.add(*(hlo.ExpOp(m.sub(v, top)).result for v in vs))).result, top)


def _at_step(b: Builder, t, like) -> ir.Value:
    """The step ``t`` (a ``tensor<i64>``) broadcast to ``like``'s shape."""
    return b.broadcast_dims(t, b.dims_of(like), [])


@pattern(ops.ctc_loss)
def _ctc_loss(b: Builder, log_probs, targets, input_lengths, target_lengths, *, zero_infinity):
    elem = b.sig(log_probs).elem
    m = _Math(b, elem)
    lp = _extended_log_probs(b, m, log_probs, targets)
    neg_inf = b.splat(_NEG_INF, m.elem, b.dims_of(targets))
    s = _positions(b, targets)
    nonempty = compare(_per_sample(b, target_lengths, targets), b.splat(0, "i64", b.dims_of(s)), "GT", "i64")
    start = hlo.OrOp(compare(s, b.splat(0, "i64", b.dims_of(s)), "EQ", "i64"),
                     hlo.AndOp(compare(s, b.splat(1, "i64", b.dims_of(s)), "EQ", "i64"), nonempty).result).result
    alpha = hlo.SelectOp(start, _row(b, lp, b.splat(0, "i64")), neg_inf).result
    alphas = _write(b, b.splat(_NEG_INF, m.elem, b.dims_of(lp)), b.splat(0, "i64"), alpha)

    def body(i, alpha, alphas, lp, skips, lengths):
        t = hlo.AddOp(i, b.splat(1, "i64")).result                 # (steps 1 .. T - 1)
        neg_inf = b.splat(_NEG_INF, m.elem, b.dims_of(alpha))
        two_back = hlo.SelectOp(skips, _shift(b, alpha, 2, _NEG_INF), neg_inf).result
        new = m.add(_logsumexp(m, alpha, _shift(b, alpha, 1, _NEG_INF), two_back), _row(b, lp, t))
        alpha = hlo.SelectOp(compare(_at_step(b, t, lengths), lengths, "LT", "i64"), new, alpha).result
        return [alpha, _write(b, alphas, t, alpha), lp, skips, lengths]

    steps = b.arith(hlo.SubtractOp, b.dim_of(log_probs, 0), 1)
    alpha, alphas = _loop(b, steps, [alpha, alphas, lp, _skips(b, targets), _per_sample(b, input_lengths, targets)],
                          body, backwards=False)[:2]
    # -logsumexp(alpha[2 S], alpha[2 S - 1]) at each sample's last step (the second only for S > 0)
    last = hlo.MulOp(target_lengths, b.splat(2, "i64", b.dims_of(target_lengths))).result
    column = lambda index: b.reshape(b.take_along(alpha, b.reshape(index, [b.dim_of(index, 0), 1]), 1),  # noqa: E731
                                     [b.dim_of(index, 0)])
    zeros = b.splat(0, "i64", b.dims_of(last))
    before = column(hlo.MaxOp(hlo.SubtractOp(last, b.splat(1, "i64", b.dims_of(last))).result, zeros).result)
    before = hlo.SelectOp(compare(target_lengths, zeros, "GT", "i64"), before,
                          b.splat(_NEG_INF, m.elem, b.dims_of(last))).result
    loss = hlo.NegOp(_logsumexp(m, column(last), before)).result
    return b.convert(loss, elem), b.convert(alphas, elem)


@pattern(ops.ctc_beta)
def _ctc_beta(b: Builder, log_probs, targets, input_lengths, target_lengths):
    elem = b.sig(log_probs).elem
    m = _Math(b, elem)
    lp = _extended_log_probs(b, m, log_probs, targets)
    s = _positions(b, targets)
    last = hlo.MulOp(_per_sample(b, target_lengths, targets), b.splat(2, "i64", b.dims_of(s))).result
    one = b.splat(1, "i64", b.dims_of(s))
    end = hlo.OrOp(compare(s, last, "EQ", "i64"),
                   hlo.AndOp(compare(s, hlo.SubtractOp(last, one).result, "EQ", "i64"),
                             compare(last, b.splat(0, "i64", b.dims_of(s)), "GT", "i64")).result).result
    neg_inf = b.splat(_NEG_INF, m.elem, b.dims_of(targets))
    final = hlo.SubtractOp(_per_sample(b, input_lengths, targets), one).result     # each sample's last step

    def body(t, beta, betas, lp, skips, end, final):
        neg_inf = b.splat(_NEG_INF, m.elem, b.dims_of(beta))
        row = _row(b, lp, t)
        two_ahead = hlo.SelectOp(skips, _shift(b, beta, -2, _NEG_INF), neg_inf).result
        recur = m.add(_logsumexp(m, beta, _shift(b, beta, -1, _NEG_INF), two_ahead), row)
        step = _at_step(b, t, final)
        beta = hlo.SelectOp(compare(step, final, "EQ", "i64"), hlo.SelectOp(end, row, neg_inf).result,
                            hlo.SelectOp(compare(step, final, "LT", "i64"), recur, neg_inf).result).result
        return [beta, _write(b, betas, t, beta), lp, skips, end, final]

    skips = _shift(b, _skips(b, targets), -2, 0)            # (beta reaches s + 2 where alpha may skip to it)
    carried = [neg_inf, b.splat(_NEG_INF, m.elem, b.dims_of(lp)), lp, skips, end, final]
    return b.convert(_loop(b, b.dim_of(log_probs, 0), carried, body, backwards=True)[1], elem)
