"""Scans: cumsum/cumprod (with dtype=), cummax/cummin ((values, indices) as torch's named tuples) and logcumsumexp."""
from __future__ import annotations

from functools import partial

import torch

from fxla.dialects.fxla import Sig, ops, type_of

from ..dtypes import elem_of
from ..registry import register


def typed_scan(ctx, input, dim, *, dtype=None, opdef):
    """cumsum / cumprod: ``input`` converted to ``dtype`` first (if given), the scan, then torch's result type."""
    if dtype is not None:
        input = ctx.emit(ops.convert, input, result_type=type_of(Sig(ctx.sig(input).shape, elem_of(dtype))))
    y = ctx.emit(opdef, input, dim=dim)
    return y if ctx.sig(y) == ctx.result_sig else ctx.emit(ops.convert, y, result_type=ctx.result_type)


register(torch.cumsum, torch.Tensor.cumsum)(partial(typed_scan, opdef=ops.cumsum))
register(torch.cumprod, torch.Tensor.cumprod)(partial(typed_scan, opdef=ops.cumprod))


def _cum_extreme(ctx, input, dim, *, opdef, result):
    return result(ctx.emit(opdef, input, dim=dim))


register(torch.cummax, torch.Tensor.cummax)(partial(_cum_extreme, opdef=ops.cummax, result=torch.return_types.cummax))
register(torch.cummin, torch.Tensor.cummin)(partial(_cum_extreme, opdef=ops.cummin, result=torch.return_types.cummin))


@register(torch.logcumsumexp, torch.Tensor.logcumsumexp)
def _logcumsumexp(ctx, input, dim):
    return ctx.emit(ops.logcumsumexp, input, dim=dim)
