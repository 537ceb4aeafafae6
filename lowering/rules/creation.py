"""Tensor creation.  Calls without traced arguments run at trace time and become tensor constants; these rules
cover the traced forms (``*_like``, ``Tensor.new_*``, sizes read from a traced tensor) and tril/triu."""
from __future__ import annotations

from functools import partial

import torch

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.types import UNSIGNED_TYPES, bit_width, is_float
from fxla.dialects.mlir import ir

from ..registry import register


def splat(ctx, value) -> ir.Value:
    """A constant of the node's result type with every element ``value`` (converted as torch converts it)."""
    t = ctx.result_type
    elem = ctx.result_sig.elem
    if is_float(elem):
        scalar = ir.FloatAttr.get(t.element_type, float(value))
    elif elem == "i1":
        scalar = ir.IntegerAttr.get(t.element_type, int(bool(value)))
    else:
        v = int(value)
        scalar = ir.IntegerAttr.get(t.element_type, v % (1 << bit_width(elem)) if elem in UNSIGNED_TYPES else v)
    return ctx.emit(ops.constant, value=ir.DenseElementsAttr.get_splat(t, scalar))


def _filled(ctx, *args, fill, **kwargs):
    return splat(ctx, fill)


def _full(ctx, size, fill_value, **kwargs):
    return splat(ctx, fill_value)


def _full_like(ctx, input, fill_value, **kwargs):
    return splat(ctx, fill_value)


def _new_full(ctx, input, size, fill_value, **kwargs):
    return splat(ctx, fill_value)


for _keys, _fill in (((torch.zeros, torch.zeros_like, torch.Tensor.new_zeros, torch.empty, torch.empty_like,
                       torch.Tensor.new_empty), 0),
                     ((torch.ones, torch.ones_like, torch.Tensor.new_ones), 1)):
    register(*_keys)(partial(_filled, fill=_fill))

register(torch.full)(_full)
register(torch.Tensor.new_full)(_new_full)
register(torch.full_like)(_full_like)


@register(torch.arange)
def _arange(ctx, start, end=None, step=1, **kwargs):
    if end is None:
        start, end = 0, start
    return ctx.emit(ops.arange, start=float(start), step=float(step), length=ctx.result_sig.shape[0],
                    result_type=ctx.result_type)


@register(torch.tril, torch.Tensor.tril)
def _tril(ctx, input, diagonal=0):
    return ctx.emit(ops.tril, input, diagonal=diagonal)


@register(torch.triu, torch.Tensor.triu)
def _triu(ctx, input, diagonal=0):
    return ctx.emit(ops.triu, input, diagonal=diagonal)
