"""Scans beyond cumsum: cumprod, cummax/cummin ((values, indices) as torch's named tuples) and logcumsumexp."""
from __future__ import annotations

from functools import partial

import torch

from fxla.dialects.fxla import ops

from ..registry import register
from .reductions import typed_scan


register(torch.cumprod, torch.Tensor.cumprod)(partial(typed_scan, opdef=ops.cumprod))


def _cum_extreme(ctx, input, dim, *, opdef, result):
    return result(ctx.emit(opdef, input, dim=dim))


register(torch.cummax, torch.Tensor.cummax)(partial(_cum_extreme, opdef=ops.cummax, result=torch.return_types.cummax))
register(torch.cummin, torch.Tensor.cummin)(partial(_cum_extreme, opdef=ops.cummin, result=torch.return_types.cummin))


@register(torch.logcumsumexp, torch.Tensor.logcumsumexp)
def _logcumsumexp(ctx, input, dim):
    return ctx.emit(ops.logcumsumexp, input, dim=dim)
