"""Shape ops.  Reshape-like ops read the static result shape computed by shape propagation; pixel/channel
shuffles are a reshape, a permute and a reshape."""
from __future__ import annotations

import torch

from fxla.dialects.fxla import ops

from ..registry import register
from .indexing import reshape


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


# -- pixel_shuffle / pixel_unshuffle / channel_shuffle: a reshape, a permute, a reshape ------------------------
def _pixel_shuffle(ctx, input, upscale_factor: int):
    """[*, C r^2, H, W] -> [*, C, H r, W r]: split C into (C, r, r), interleave them with H and W."""
    *lead, c, h, w = ctx.sig(input).shape
    r, n = upscale_factor, len(lead)
    x = reshape(ctx, input, (*lead, c // (r * r), r, r, h, w))
    x = ctx.emit(ops.permute, x, dims=(*range(n), n, n + 3, n + 1, n + 4, n + 2))
    return reshape(ctx, x, ctx.result_sig.shape)


def _pixel_unshuffle(ctx, input, downscale_factor: int):
    """[*, C, H r, W r] -> [*, C r^2, H, W]: the inverse permutation of pixel_shuffle."""
    *lead, c, h, w = ctx.sig(input).shape
    r, n = downscale_factor, len(lead)
    x = reshape(ctx, input, (*lead, c, h // r, r, w // r, r))
    x = ctx.emit(ops.permute, x, dims=(*range(n), n, n + 2, n + 4, n + 1, n + 3))
    return reshape(ctx, x, ctx.result_sig.shape)


def _channel_shuffle(ctx, input, groups: int):
    """[N, C, *] -> channels regrouped: (groups, C / groups) transposed to (C / groups, groups)."""
    n, c, *rest = ctx.sig(input).shape
    x = reshape(ctx, input, (n, groups, c // groups, *rest))
    x = ctx.emit(ops.permute, x, dims=(0, 2, 1, *range(3, 3 + len(rest))))
    return reshape(ctx, x, ctx.result_sig.shape)


register(torch.pixel_shuffle)(_pixel_shuffle)            # F.pixel_shuffle & co. are these same objects
register(torch.pixel_unshuffle)(_pixel_unshuffle)
register(torch.channel_shuffle)(_channel_shuffle)


@register(torch.nn.PixelShuffle)
def _pixel_shuffle_module(ctx, input, *, mod):
    return _pixel_shuffle(ctx, input, mod.upscale_factor)


@register(torch.nn.PixelUnshuffle)
def _pixel_unshuffle_module(ctx, input, *, mod):
    return _pixel_unshuffle(ctx, input, mod.downscale_factor)


@register(torch.nn.ChannelShuffle)
def _channel_shuffle_module(ctx, input, *, mod):
    return _channel_shuffle(ctx, input, mod.groups)
