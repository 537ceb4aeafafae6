"""Shape ops.  Reshape-like ops read the static result shape computed by shape propagation."""
from __future__ import annotations

import torch

from fxla.dialects.fxla import ops

from ..registry import register


def _reshape_to_result(ctx, input, *args, **kwargs):
    """view/reshape/flatten/unflatten/squeeze/unsqueeze: torch already resolved -1 and the dims."""
    if ctx.result_sig.elem != ctx.sig(input).elem:
        raise ctx.error("Tensor.view(dtype) is not supported yet", "it reinterprets the bits of the elements "
                        "(a bitcast), which fxla has no op for", "use .to(dtype) to convert the values instead")
    return ctx.emit(ops.reshape, input, shape=ctx.result_sig.shape)


register(torch.Tensor.view, torch.Tensor.reshape, torch.reshape, torch.flatten, torch.Tensor.flatten,
         torch.Tensor.unflatten, torch.unflatten, torch.squeeze, torch.Tensor.squeeze, torch.unsqueeze,
         torch.Tensor.unsqueeze, torch.Tensor.view_as, torch.Tensor.reshape_as)(_reshape_to_result)


@register(torch.nn.Flatten, torch.nn.Unflatten)
def _flatten_module(ctx, input, *, mod):
    return ctx.emit(ops.reshape, input, shape=ctx.result_sig.shape)


@register(torch.Tensor.permute, torch.permute)
def _permute(ctx, input, *dims):
    dims = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
    return ctx.emit(ops.permute, input, dims=dims)


@register(torch.Tensor.transpose, torch.transpose, torch.swapaxes, torch.Tensor.swapaxes)
def _transpose(ctx, input, dim0, dim1):
    rank = ctx.sig(input).rank
    if rank == 0:
        return input                          # torch allows dims 0/-1 on a 0-d tensor: a no-op
    perm = list(range(rank))
    a, b = dim0 % rank, dim1 % rank
    perm[a], perm[b] = perm[b], perm[a]
    return ctx.emit(ops.permute, input, dims=perm)


@register(torch.Tensor.t, torch.t)
def _t(ctx, input):
    rank = ctx.sig(input).rank
    return input if rank < 2 else ctx.emit(ops.permute, input, dims=(1, 0))


@register(torch.Tensor.contiguous, torch.Tensor.clone, torch.clone, torch.Tensor.detach, torch.detach)
def _identity(ctx, input, *args, **kwargs):
    return input
