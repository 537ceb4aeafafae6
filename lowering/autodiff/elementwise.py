"""VJP rules of the ``elementwise`` family, each the formula of torch's ``tools/autograd/derivatives.yaml`` (or of
the CPU backward kernel it names) for the op the fxla op lowers.

* A binary op's cotangent goes back through :meth:`~fxla.lowering.autodiff.context.VJPContext.unbroadcast`:
  computed in the broadcast, promoted result's shape and type, summed to each operand's shape, then converted to
  its element type (torch's autograd engine does the same: ``sum_to``, then ``.to(dtype)``).  Integer and bool
  operands get no gradient (``None``).
* Unary math and activations compute their formula in the compute type (f32 for f16/bf16, as torch's CPU
  backward kernels do) and round once to the operand's type.
* Where torch picks a value at a kink or a tie, so do these rules: ``relu`` passes no gradient where the result
  is <= 0, ``abs`` has ``sign(0) = 0``, ``maximum``/``minimum`` split a tie's gradient in halves, ``clamp``
  passes it where ``min <= x <= max``, ``pow`` has a zero base gradient where the exponent is 0 and a zero
  exponent gradient where the base is 0 and the exponent >= 0; the tests at NaN follow torch's comparisons.
* ``floor``/``ceil``/``trunc``/``round``/``sign`` have a zero gradient (torch's convention); ``floor_divide`` has
  none (torch: "derivative for aten::floor_divide is not implemented"), so it has no rule and is refused.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.types import is_float

from ..emit import compute_elem
from .registry import vjp_rule, zero_gradient


class _T:
    """A value of a gradient formula: ``+ - * /`` and unary ``-`` emit fxla ops at the rule's location (fxla's
    broadcasting and promotion apply), a Python number next to a ``_T`` becomes a 0-d constant of its element type,
    ``x.map(ops.exp)`` applies a unary op, ``x.lt(y)`` etc. compare (an i1 ``_T``), ``&``/``|`` combine masks."""

    __slots__ = ("ctx", "v")

    def __init__(self, ctx, value):
        self.ctx, self.v = ctx, value

    def _lift(self, other):
        return other.v if isinstance(other, _T) else self.ctx.tensor(other, like=self.v)

    def _binary(self, opdef, other, swap=False):
        a, b = self.v, self._lift(other)
        return _T(self.ctx, self.ctx.emit(opdef, *((b, a) if swap else (a, b))))

    def __add__(self, o): return self._binary(ops.add, o)
    def __radd__(self, o): return self._binary(ops.add, o, swap=True)
    def __sub__(self, o): return self._binary(ops.sub, o)
    def __rsub__(self, o): return self._binary(ops.sub, o, swap=True)
    def __mul__(self, o): return self._binary(ops.mul, o)
    def __rmul__(self, o): return self._binary(ops.mul, o, swap=True)
    def __truediv__(self, o): return self._binary(ops.div, o)
    def __rtruediv__(self, o): return self._binary(ops.div, o, swap=True)
    def __pow__(self, o): return self._binary(ops.pow, o)
    def __and__(self, o): return self._binary(ops.logical_and, o)
    def __or__(self, o): return self._binary(ops.logical_or, o)
    def __neg__(self): return self.map(ops.neg)

    def eq(self, o): return self._binary(ops.eq, o)
    def lt(self, o): return self._binary(ops.lt, o)
    def le(self, o): return self._binary(ops.le, o)
    def gt(self, o): return self._binary(ops.gt, o)
    def ge(self, o): return self._binary(ops.ge, o)

    def map(self, opdef) -> "_T":
        return _T(self.ctx, self.ctx.emit(opdef, self.v))

    def to(self, elem: str) -> "_T":
        return _T(self.ctx, self.ctx.convert(self.v, elem))


def _where(cond: _T, a, b) -> _T:
    """``cond ? a : b`` (``a``/``b`` a ``_T`` or a Python number in the other's type)."""
    ctx = cond.ctx
    like = a if isinstance(a, _T) else b
    a, b = (like._lift(v) for v in (a, b))
    return _T(ctx, ctx.emit(ops.where, cond.v, a, b))


def _wrap(ctx, elem: str, *values):
    """``values`` (``None`` stays ``None``) as ``_T``s converted to ``elem``."""
    return [None if v is None else _T(ctx, ctx.convert(v, elem)) for v in values]


def _back(ctx, d, operand):
    """``d`` (a cotangent in the broadcast result's shape) as ``operand``'s cotangent; ``None`` where ``operand``
    is absent or not floating point (no gradient)."""
    if operand is None or not is_float(ctx.sig(operand).elem):
        return None
    return ctx.unbroadcast(d.v if isinstance(d, _T) else d, operand)


# -- binary arithmetic ----------------------------------------------------------------------------------------------
@vjp_rule(ops.add)
def _add(ctx, ct, lhs, rhs, *, result):
    return _back(ctx, ct, lhs), _back(ctx, ct, rhs)


@vjp_rule(ops.sub)
def _sub(ctx, ct, lhs, rhs, *, result):
    return _back(ctx, ct, lhs), _back(ctx, -_T(ctx, ct), rhs)


@vjp_rule(ops.mul)
def _mul(ctx, ct, lhs, rhs, *, result):
    g = _T(ctx, ct)
    return _back(ctx, g * _T(ctx, rhs), lhs), _back(ctx, g * _T(ctx, lhs), rhs)


@vjp_rule(ops.div)
def _div(ctx, ct, lhs, rhs, *, result):
    # torch: grad / other, and -grad * ((self / other) / other), self / other being the result
    g, b, y = _T(ctx, ct), _T(ctx, rhs), _T(ctx, result)
    return _back(ctx, g / b, lhs), _back(ctx, -(g * (y / b)), rhs)


def _extremum(ctx, ct, lhs, rhs, *, result, loses):
    """maximum/minimum: the gradient goes to the winner, halves to each of a tie; ``loses(a, b)`` is the mask where
    ``a`` is not picked (torch: ``where(a == b, grad / 2, grad).masked_fill_(loses, 0)``; NaN ties nothing, so
    both operands get the whole gradient there, as in torch)."""
    g, a, b = _T(ctx, ct), _T(ctx, lhs), _T(ctx, rhs)
    split = _where(a.eq(b), g / 2.0, g)
    return _back(ctx, _where(loses(a, b), 0.0, split), lhs), _back(ctx, _where(loses(b, a), 0.0, split), rhs)


vjp_rule(ops.maximum)(partial(_extremum, loses=_T.lt))
vjp_rule(ops.minimum)(partial(_extremum, loses=_T.gt))


@vjp_rule(ops.pow)
def _pow(ctx, ct, base, exponent, *, result):
    """torch's pow_backward_self / pow_backward_exponent: ``grad * exponent * base ** (exponent - 1)``, 0 where
    the exponent is 0; ``grad * result * log(base)``, 0 where the base is 0 and the exponent >= 0."""
    elem = compute_elem(ctx.sig(result).elem)
    g, b, e, y = _wrap(ctx, elem, ct, base, exponent, result)
    # exponent - 1 in the exponent's own type, as torch computes it (an f32 exponent of an f64 base: in f32)
    e_minus_1 = (_T(ctx, exponent) - 1).to(elem)
    d_base = _where(e.eq(0.0), 0.0, g * (e * b ** e_minus_1))
    d_exponent = g * _where(b.eq(0.0) & e.ge(0.0), 0.0, y * b.map(ops.log))
    return _back(ctx, d_base, base), _back(ctx, d_exponent, exponent)


@vjp_rule(ops.fmod)
def _fmod(ctx, ct, lhs, rhs, *, result):
    # torch: self gets grad; other gets -grad * self.div(other, rounding_mode="trunc") (f16/bf16: in f32)
    g, a, b = _wrap(ctx, compute_elem(ctx.sig(result).elem), ct, lhs, rhs)
    return _back(ctx, ct, lhs), _back(ctx, -g * (a / b).map(ops.trunc), rhs)


@vjp_rule(ops.remainder)
def _remainder(ctx, ct, lhs, rhs, *, result):
    # torch: self gets grad; other gets -grad * self.div(other, rounding_mode="floor"), which is floor_divide
    quotient = _T(ctx, ctx.emit(ops.floor_divide, lhs, rhs))
    return _back(ctx, ct, lhs), _back(ctx, -_T(ctx, ct) * quotient, rhs)


@vjp_rule(ops.clamp)
def _clamp(ctx, ct, x, lo, hi, *, result):
    """torch's clamp_backward / clamp_backward_min_max: ``x`` gets the gradient where ``min <= x <= max`` (the
    bounds present); ``min`` where ``x < min`` (and ``min < max``), ``max`` where ``x > max`` (or ``max < min``:
    then the result is ``max`` everywhere)."""
    g, v = _T(ctx, ct), _T(ctx, x)
    low, high = (None if b is None else _T(ctx, b) for b in (lo, hi))
    masks = [v.ge(low) if low is not None else None, v.lt(low) if low is not None else None,
             v.gt(high) if high is not None else None]                       # x passes, min gets, max gets
    if high is not None:
        masks[0] = v.le(high) if low is None else masks[0] & v.le(high)
    if low is not None and high is not None:
        masks[1] = masks[1] & low.lt(high)
        masks[2] = masks[2] | high.lt(low)
    return tuple(_back(ctx, g if mask is None else _where(mask, g, 0.0), operand)
                 for mask, operand in zip(masks, (x, lo, hi)))


# -- unary ops: formulas in the compute type --------------------------------------------------------------------------
def _unary(*opdefs):
    """Register ``formula(g, x, y, **attrs)`` as the VJP rule of ``opdefs``: the operand's cotangent from the
    result's cotangent ``g``, the operand ``x`` and the result ``y`` (``_T``\\ s in the compute type: f32 for
    f16/bf16, as torch's CPU backward kernels); the rule converts it back to the operand's element type."""
    def register(formula):
        @vjp_rule(*opdefs)
        def rule(ctx, ct, x, *, result, **attrs):
            g, xc, y = _wrap(ctx, compute_elem(ctx.sig(result).elem), ct, x, result)
            return (ctx.like(formula(g, xc, y, **attrs).v, x),)
        return formula
    return register


@vjp_rule(ops.neg)
def _neg(ctx, ct, x, *, result):
    return (ctx.like(ctx.emit(ops.neg, ct), x),)


@vjp_rule(ops.convert)
def _convert(ctx, ct, x, *, result):
    return (ctx.like(ct, x),)


@vjp_rule(ops.relu)
def _relu(ctx, ct, x, *, result):
    # torch's threshold_backward(grad, result, 0): result <= 0 ? 0 : grad (0 at 0; NaN passes the gradient)
    return (ctx.like(_where(_T(ctx, result).le(0.0), 0.0, _T(ctx, ct)).v, x),)


@vjp_rule(ops.abs)
def _abs(ctx, ct, x, *, result):
    # torch: grad * sgn(self); sign(0) = sign(NaN) = 0
    return (ctx.like(ctx.emit(ops.mul, ct, ctx.emit(ops.sign, x)), x),)


_unary(ops.exp)(lambda g, x, y: g * y)
_unary(ops.log)(lambda g, x, y: g / x)
_unary(ops.sqrt)(lambda g, x, y: g / (2.0 * y))
_unary(ops.rsqrt)(lambda g, x, y: -0.5 * g * (y * y * y))
_unary(ops.tanh)(lambda g, x, y: g * (1.0 - y * y))
_unary(ops.sigmoid)(lambda g, x, y: g * ((1.0 - y) * y))
_unary(ops.reciprocal)(lambda g, x, y: -g * (y * y))
_unary(ops.sin)(lambda g, x, y: g * x.map(ops.cos))
_unary(ops.cos)(lambda g, x, y: g * -x.map(ops.sin))
_unary(ops.tan)(lambda g, x, y: g * (1.0 + y * y))
_unary(ops.erf)(lambda g, x, y: (2.0 / math.sqrt(math.pi)) * (-(x * x)).map(ops.exp) * g)
_unary(ops.log1p)(lambda g, x, y: g / (x + 1.0))
_unary(ops.expm1)(lambda g, x, y: g * (y + 1.0))


# -- activations: torch's CPU backward kernels ------------------------------------------------------------------------
_SQRT_HALF = math.sqrt(0.5)
_GELU_PDF = 0.5 * _SQRT_HALF * (2.0 / math.sqrt(math.pi))       # 1 / sqrt(2 pi)
_GELU_TANH_BETA = math.sqrt(2.0) * (2.0 / math.sqrt(math.pi)) * 0.5   # sqrt(2 / pi)
_GELU_TANH_KAPPA = 0.044715
_F32_ONE_SIXTH = float(np.float32(1.0) / np.float32(6.0))


def _gelu_erf(g, x):
    cdf = 0.5 * (1.0 + (x * _SQRT_HALF).map(ops.erf))
    pdf = _GELU_PDF * (x * x * -0.5).map(ops.exp)
    return g * (cdf + x * pdf)


def _gelu_tanh(g, x):
    x_sq = x * x
    inner = _GELU_TANH_BETA * (x + _GELU_TANH_KAPPA * (x_sq * x))
    t = inner.map(ops.tanh)
    left_derivative = 0.5 * (1.0 + t)
    right_derivative = 0.5 * x * (1.0 - t * t) * _GELU_TANH_BETA * (1.0 + 3.0 * _GELU_TANH_KAPPA * x_sq)
    return g * (left_derivative + right_derivative)


_GELU = {"none": _gelu_erf, "tanh": _gelu_tanh}


@_unary(ops.gelu)
def _gelu(g, x, y, *, approximate):
    return _GELU[approximate](g, x)


@_unary(ops.silu)
def _silu(g, x, y):
    s = x.map(ops.sigmoid)
    return g * s * (1.0 + x * (1.0 - s))


@_unary(ops.mish)
def _mish(g, x, y):
    s = x.map(ops.sigmoid)
    t = x.map(ops.exp).map(ops.log1p).map(ops.tanh)
    return g * (t + x * s * (1.0 - t * t))


@_unary(ops.softplus)
def _softplus(g, x, y, *, beta, threshold):
    # torch: beta * x > threshold ? grad : grad * z / (z + 1), z = exp(beta * x); its double backward is 0 where
    # beta * x >= threshold, so there the value is a constant of x (z / (z + 1) at beta * x = threshold)
    bx = x * beta
    z = bx.map(ops.exp)
    t = float(threshold)         # (z / (z + 1) at z = exp(t), as a sigmoid that overflows for no threshold)
    edge = np.float32(1.0 / (1.0 + math.exp(-t)) if t >= 0 else math.exp(t) / (1.0 + math.exp(t))).item()
    return _where(bx.gt(threshold), g, _where(bx.eq(threshold), g * edge, g * z / (z + 1.0)))


@_unary(ops.logsigmoid)
def _logsigmoid(g, x, y):
    # torch: z = exp(-|x|); grad * (x < 0 ? 1 - z / (1 + z) : z / (1 + z)), which is sigmoid(-x) on both sides:
    # written so, differentiating it again has the curvature at 0 (through |x|, sign(0) = 0 would drop it)
    return g * (-x).map(ops.sigmoid)


@_unary(ops.leaky_relu)
def _leaky_relu(g, x, y, *, negative_slope):
    return _where(x.gt(0.0), g, g * negative_slope)


@_unary(ops.elu)
def _elu(g, x, y, *, alpha):
    # torch's elu_backward: x <= 0 ? grad * alpha * exp(x) : grad; its double backward takes the x < 0 side only,
    # so at 0 the value grad * alpha (exp(0) = 1) is a constant of x
    return _where(x.lt(0.0), g * alpha * x.map(ops.exp), _where(x.eq(0.0), g * alpha, g))


@_unary(ops.hardswish)
def _hardswish(g, x, y):
    # torch: x <= -3 ? 0 : (x < 3 ? grad * (x / 3 + 0.5) : grad)
    return _where(x.le(-3.0), 0.0, _where(x.lt(3.0), g * (x / 3.0 + 0.5), g))


@_unary(ops.hardsigmoid)
def _hardsigmoid(g, x, y):
    # torch: -3 < x < 3 ? grad * one_sixth : 0, one_sixth being the float literal 1.0f / 6.0f in every dtype
    return _where(x.gt(-3.0) & x.lt(3.0), g * _F32_ONE_SIXTH, 0.0)


zero_gradient(ops.floor, ops.ceil, ops.trunc, ops.round, ops.sign)
