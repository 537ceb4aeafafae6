"""Elementwise math (rounding, trigonometry, logic/bitwise, integer division, clamp) and nn activations."""
from __future__ import annotations

import operator
from functools import partial

import torch
import torch.nn.functional as F

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.types import is_float
from fxla.dialects.mlir import ir

from ..emit import refuse_bool
from ..registry import register, register_module
from ..value_checks import check_divisor


def _unary(ctx, input, *, opdef):
    return ctx.emit(opdef, ctx.tensor(input))


for _opdef, _keys in (
    (ops.floor, (torch.floor, torch.Tensor.floor)), (ops.ceil, (torch.ceil, torch.Tensor.ceil)),
    (ops.trunc, (torch.trunc, torch.Tensor.trunc, torch.fix, torch.Tensor.fix)),
    (ops.sign, (torch.sign, torch.Tensor.sign)),
    (ops.reciprocal, (torch.reciprocal, torch.Tensor.reciprocal)),
    (ops.sin, (torch.sin, torch.Tensor.sin)), (ops.cos, (torch.cos, torch.Tensor.cos)),
    (ops.tan, (torch.tan, torch.Tensor.tan)), (ops.erf, (torch.erf, torch.Tensor.erf, torch.special.erf)),
    (ops.log1p, (torch.log1p, torch.Tensor.log1p)), (ops.expm1, (torch.expm1, torch.Tensor.expm1)),
    (ops.logical_not, (torch.logical_not, torch.Tensor.logical_not)),
    (ops.bitwise_not, (torch.bitwise_not, torch.Tensor.bitwise_not, operator.invert)),
):
    register(*_keys)(partial(_unary, opdef=_opdef))


@register(torch.round, torch.Tensor.round)
def _round(ctx, input, *, decimals=0):
    refuse_bool(ctx, input, "round")
    return ctx.emit(ops.round, input, decimals=decimals)


@register(torch.square, torch.Tensor.square)
def _square(ctx, input):
    return ctx.emit(ops.pow, input, ctx.tensor(2, like=input))     # torch.square is pow(x, 2): bool -> int64


def _binary(ctx, input, other, *, opdef, division=False):
    """``division`` (``//``, ``%``, ``fmod``): an integer divisor's zeros are a value check (torch raises
    ZeroDivisionError)."""
    a, b = ctx.tensor(input, like=other), ctx.tensor(other, like=input)
    if division:
        check_divisor(ctx, b, ctx.result_sig.elem)
    return ctx.emit(opdef, a, b)


for _opdef, _keys in (
    (ops.logical_and, (torch.logical_and, torch.Tensor.logical_and)),
    (ops.logical_or, (torch.logical_or, torch.Tensor.logical_or)),
    (ops.logical_xor, (torch.logical_xor, torch.Tensor.logical_xor)),
    (ops.bitwise_and, (torch.bitwise_and, torch.Tensor.bitwise_and, operator.and_, torch.Tensor.__and__)),
    (ops.bitwise_or, (torch.bitwise_or, torch.Tensor.bitwise_or, operator.or_, torch.Tensor.__or__)),
    (ops.bitwise_xor, (torch.bitwise_xor, torch.Tensor.bitwise_xor, operator.xor, torch.Tensor.__xor__)),
):
    register(*_keys)(partial(_binary, opdef=_opdef))


for _opdef, _keys in (
    (ops.floor_divide, (torch.floor_divide, torch.Tensor.floor_divide, operator.floordiv)),
    (ops.remainder, (torch.remainder, torch.Tensor.remainder, operator.mod)),
    (ops.fmod, (torch.fmod, torch.Tensor.fmod)),
):
    register(*_keys)(partial(_binary, opdef=_opdef, division=True))


def _bound(ctx, value, input):
    return None if value is None else ctx.tensor(value, like=input)


@register(torch.clamp, torch.clip, torch.Tensor.clamp, torch.Tensor.clip)
def _clamp(ctx, input, min=None, max=None):
    if min is None and max is None:
        raise ctx.error("clamp needs min or max", "torch rejects clamp() without bounds", "pass min= or max=")
    return ctx.emit(ops.clamp, input, _bound(ctx, min, input), _bound(ctx, max, input))


@register(torch.clamp_min, torch.Tensor.clamp_min)
def _clamp_min(ctx, input, min):
    return ctx.emit(ops.clamp, input, ctx.tensor(min, like=input), None)


@register(torch.clamp_max, torch.Tensor.clamp_max)
def _clamp_max(ctx, input, max):
    return ctx.emit(ops.clamp, input, None, ctx.tensor(max, like=input))


def _in_type_of(ctx, value, input):
    """A scalar bound as a 0-d tensor of ``input``'s element type (hardtanh keeps the input's type)."""
    v = ctx.tensor(value, like=input)
    elem_type = ir.RankedTensorType(input.type).element_type
    if ir.RankedTensorType(v.type).element_type == elem_type:
        return v
    return ctx.emit(ops.convert, v, result_type=ir.RankedTensorType.get([], elem_type))


def _hardtanh(ctx, input, min_val=-1.0, max_val=1.0, inplace=False):
    """clamp's values with torch's hardtanh gradient, which (unlike clamp's) is 0 at the bounds: the input where
    it is strictly inside them (or NaN), elsewhere the clamped value, detached."""
    low, high = _in_type_of(ctx, min_val, input), _in_type_of(ctx, max_val, input)
    clamped = ctx.emit(ops.clamp, input, low, high)
    if not is_float(ctx.sig(input).elem):
        return clamped
    at_bounds = ctx.emit(ops.logical_or, ctx.emit(ops.le, input, low), ctx.emit(ops.ge, input, high))
    return ctx.emit(ops.where, at_bounds, ctx.emit(ops.detach, clamped), input)


register(F.hardtanh)(_hardtanh)
register(F.relu6)(partial(_hardtanh, min_val=0.0, max_val=6.0))


for _module in (torch.nn.Hardtanh, torch.nn.ReLU6):
    register_module(_module, F.hardtanh, attrs=("min_val", "max_val"))


# -- activations: functional forms take (input, <params>, inplace=False); modules carry the params ---------------
def _plain(ctx, input, inplace=False, *, opdef):
    return ctx.emit(opdef, input)


for _opdef, _keys, _module in (
    (ops.silu, (F.silu,), torch.nn.SiLU), (ops.mish, (F.mish,), torch.nn.Mish),
    (ops.hardswish, (F.hardswish,), torch.nn.Hardswish), (ops.hardsigmoid, (F.hardsigmoid,), torch.nn.Hardsigmoid),
    (ops.logsigmoid, (F.logsigmoid,), torch.nn.LogSigmoid),
):
    register(*_keys)(partial(_plain, opdef=_opdef))
    register_module(_module, _keys[0])


@register(F.leaky_relu)
def _leaky_relu(ctx, input, negative_slope=0.01, inplace=False):
    return ctx.emit(ops.leaky_relu, input, negative_slope=negative_slope)


register_module(torch.nn.LeakyReLU, F.leaky_relu, attrs=("negative_slope",))


@register(F.elu)
def _elu(ctx, input, alpha=1.0, inplace=False):
    return ctx.emit(ops.elu, input, alpha=alpha)


register_module(torch.nn.ELU, F.elu, attrs=("alpha",))


@register(F.softplus)
def _softplus(ctx, input, beta=1.0, threshold=20.0):
    return ctx.emit(ops.softplus, input, beta=beta, threshold=threshold)


register_module(torch.nn.Softplus, F.softplus, attrs=("beta", "threshold"))
