"""VJP rules of the ``elementwise`` family: the cotangent of a broadcast, promoted result goes back through
:meth:`~fxla.lowering.autodiff.context.VJPContext.unbroadcast` (summed to each operand's shape, converted to its
element type).  Where torch picks a value at a kink, so do these rules: ``relu`` has gradient 0 at 0, ``abs``
has ``sign(0) = 0``, ``maximum``/``minimum`` split a tie's gradient in halves."""
from __future__ import annotations

from fxla.dialects.fxla import ops

from .registry import vjp_rule, zero_gradient


def _mul(ctx, a, b):
    return ctx.emit(ops.mul, a, b)


@vjp_rule(ops.add)
def _add(ctx, ct, lhs, rhs, *, result):
    return ctx.unbroadcast(ct, lhs), ctx.unbroadcast(ct, rhs)


@vjp_rule(ops.sub)
def _sub(ctx, ct, lhs, rhs, *, result):
    return ctx.unbroadcast(ct, lhs), ctx.unbroadcast(ctx.emit(ops.neg, ct), rhs)


@vjp_rule(ops.mul)
def _mul_vjp(ctx, ct, lhs, rhs, *, result):
    return ctx.unbroadcast(_mul(ctx, ct, rhs), lhs), ctx.unbroadcast(_mul(ctx, ct, lhs), rhs)


@vjp_rule(ops.div)
def _div(ctx, ct, lhs, rhs, *, result):
    d_lhs = ctx.emit(ops.div, ct, rhs)
    d_rhs = ctx.emit(ops.neg, ctx.emit(ops.div, _mul(ctx, ct, result), rhs))
    return ctx.unbroadcast(d_lhs, lhs), ctx.unbroadcast(d_rhs, rhs)


@vjp_rule(ops.neg)
def _neg(ctx, ct, x, *, result):
    return (ctx.like(ctx.emit(ops.neg, ct), x),)


@vjp_rule(ops.convert)
def _convert(ctx, ct, x, *, result):
    return (ctx.like(ct, x),)


@vjp_rule(ops.relu)
def _relu(ctx, ct, x, *, result):
    # torch's threshold_backward: the gradient passes where the result is > 0 (0 at 0)
    zero = ctx.tensor(0.0, like=result)
    return (ctx.emit(ops.where, ctx.emit(ops.gt, result, zero), ct, ctx.zeros_like(ct)),)


@vjp_rule(ops.exp)
def _exp(ctx, ct, x, *, result):
    return (ctx.like(_mul(ctx, ct, result), x),)


@vjp_rule(ops.log)
def _log(ctx, ct, x, *, result):
    return (ctx.like(ctx.emit(ops.div, ct, ctx.like(x, result)), x),)


@vjp_rule(ops.tanh)
def _tanh(ctx, ct, x, *, result):
    one = ctx.tensor(1.0, like=result)
    return (ctx.like(_mul(ctx, ct, ctx.emit(ops.sub, one, _mul(ctx, result, result))), x),)


@vjp_rule(ops.sigmoid)
def _sigmoid(ctx, ct, x, *, result):
    one = ctx.tensor(1.0, like=result)
    return (ctx.like(_mul(ctx, ct, _mul(ctx, result, ctx.emit(ops.sub, one, result))), x),)


@vjp_rule(ops.sqrt)
def _sqrt(ctx, ct, x, *, result):
    return (ctx.like(ctx.emit(ops.div, ct, _mul(ctx, result, ctx.tensor(2.0, like=result))), x),)


@vjp_rule(ops.rsqrt)
def _rsqrt(ctx, ct, x, *, result):
    # d/dx x**-1/2 = -1/2 x**-3/2 = -1/2 * result**3
    cube = _mul(ctx, _mul(ctx, result, result), result)
    return (ctx.like(_mul(ctx, ct, _mul(ctx, cube, ctx.tensor(-0.5, like=result))), x),)


zero_gradient(ops.floor, ops.ceil, ops.trunc, ops.round, ops.sign)
