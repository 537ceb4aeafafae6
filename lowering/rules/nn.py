"""Neural-network layers: convolution (+ transposed), softmax/log_softmax, layer_norm, dropout, identity and the
distances (cosine_similarity, pairwise_distance), with their nn modules."""
from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F

from fxla.dialects.fxla import ops

from ..emit import ntuple
from ..registry import register, register_module


def _conv_padding(ctx, padding, weight, dilation, n=2):
    if padding == "valid":
        return (0,) * n
    if padding == "same":
        kernel = ctx.sig(weight).shape[2:]
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        if any(t % 2 for t in total):
            raise ctx.error("padding='same' with an even effective kernel is not supported yet",
                            "it needs asymmetric padding", "pad explicitly with F.pad")
        return tuple(t // 2 for t in total)
    return ntuple(padding, n)


def _conv(ctx, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, n):
    if ctx.sig(input).rank == n + 1:        # unbatched input: add N = 1 and drop it again
        y = _conv(ctx, ctx.reshape(input, (1,) + ctx.sig(input).shape), weight, bias, stride, padding, dilation,
                  groups, n=n)
        return ctx.reshape(y, ctx.sig(y).shape[1:])
    dilation = ntuple(dilation, n)
    return ctx.emit(ops.conv, input, weight, bias, stride=ntuple(stride, n),
                    padding=_conv_padding(ctx, padding, weight, dilation, n), dilation=dilation, groups=groups)


def _conv_transpose(ctx, input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                    *, n):
    if ctx.sig(input).rank == n + 1:
        y = _conv_transpose(ctx, ctx.reshape(input, (1,) + ctx.sig(input).shape), weight, bias, stride, padding,
                            output_padding, groups, dilation, n=n)
        return ctx.reshape(y, ctx.sig(y).shape[1:])
    if isinstance(padding, str):
        raise ctx.error(f"conv_transpose{n}d(padding={padding!r}) is not supported", "torch takes numbers here",
                        "pass the padding as numbers")
    return ctx.emit(ops.conv, input, weight, bias, stride=ntuple(stride, n), padding=ntuple(padding, n),
                    dilation=ntuple(dilation, n), groups=groups, transposed=True,
                    output_padding=ntuple(output_padding, n))


def _conv_module(ctx, input, output_size=None, *, mod, n, transposed=False):
    weight, bias = ctx.module_param("weight", mod), ctx.module_param("bias", mod)
    if transposed:       # (ConvTranspose's forward(input, output_size=None): the size picks the output padding)
        output_padding = mod.output_padding if output_size is None else mod._output_padding(
            torch.empty(ctx.sig(input).shape, device="meta"), list(output_size), mod.stride, mod.padding,
            mod.kernel_size, n, mod.dilation)
        return _conv_transpose(ctx, input, weight, bias, mod.stride, mod.padding, output_padding, mod.groups,
                               mod.dilation, n=n)
    if output_size is not None:
        raise TypeError("a convolution module takes no output_size")
    if mod.padding_mode != "zeros":      # torch pads with F.pad in that mode, then convolves without padding
        input = ctx.lower(F.pad, input, mod._reversed_padding_repeated_twice, mod.padding_mode)
        return _conv(ctx, input, weight, bias, mod.stride, 0, mod.dilation, mod.groups, n=n)
    return _conv(ctx, input, weight, bias, mod.stride, mod.padding, mod.dilation, mod.groups, n=n)


for _n, (_f, _t, _m, _mt) in enumerate(((F.conv1d, F.conv_transpose1d, torch.nn.Conv1d, torch.nn.ConvTranspose1d),
                                        (F.conv2d, F.conv_transpose2d, torch.nn.Conv2d, torch.nn.ConvTranspose2d),
                                        (F.conv3d, F.conv_transpose3d, torch.nn.Conv3d, torch.nn.ConvTranspose3d)),
                                       start=1):
    register(_f)(partial(_conv, n=_n))
    register(_t)(partial(_conv_transpose, n=_n))
    register(_m)(partial(_conv_module, n=_n))
    register(_mt)(partial(_conv_module, n=_n, transposed=True))


def _softmax(ctx, input, dim=None, _stacklevel=3, dtype=None, *, opdef):
    if dim is None:
        raise ctx.error(f"{opdef.mnemonic} without dim is not supported", "torch's implicit dim is deprecated",
                        "pass dim explicitly")
    if dtype is not None:
        input = ctx.emit(ops.convert, input, result_type=ctx.result_type)
    return ctx.emit(opdef, input, dim=dim)


for _opdef, _keys, _module in ((ops.softmax, (torch.softmax, F.softmax, torch.Tensor.softmax), torch.nn.Softmax),
                               (ops.log_softmax, (torch.log_softmax, F.log_softmax, torch.Tensor.log_softmax),
                                torch.nn.LogSoftmax)):
    register(*_keys)(partial(_softmax, opdef=_opdef))
    register_module(_module, _keys[1], attrs=("dim",))


@register(F.layer_norm)
def _layer_norm(ctx, input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return ctx.emit(ops.layer_norm, input, weight, bias, normalized_rank=len(tuple(normalized_shape)), eps=eps)


register_module(torch.nn.LayerNorm, F.layer_norm, params=("weight", "bias"), attrs=("normalized_shape", "eps"))


@register(F.dropout)
def _dropout(ctx, input, p=0.5, training=True, inplace=False):
    if training and p > 0:
        raise ctx.error("dropout in training mode is not supported", "fxla compiles inference programs; "
                        "random masks are not lowered yet", "call model.eval() (or pass training=False)")
    return input


register_module(torch.nn.Dropout, F.dropout, attrs=("p", "training"))


@register(torch.nn.Identity)
def _identity_module(ctx, input, *args, mod, **kwargs):
    return input


@register(torch.nn.Softmax2d)
def _softmax2d(ctx, input, *, mod):
    return ctx.emit(ops.softmax, input, dim=-3)


# -- distances -------------------------------------------------------------------------------------------------
@register(F.cosine_similarity)
def _cosine_similarity(ctx, x1, x2, dim=1, eps=1e-8):
    """sum((x1 / max(|x1|, eps)) * (x2 / max(|x2|, eps)), dim), torch's formula (the norms clamped apart)."""
    shape = tuple(torch.broadcast_shapes(ctx.sig(x1).shape, ctx.sig(x2).shape))
    x1, x2 = (t if ctx.sig(t).shape == shape else ctx.emit(ops.expand, t, shape=shape) for t in (x1, x2))
    d = dim % len(shape)

    def unit(x):
        norm = ctx.emit(ops.sqrt, ctx.emit(ops.sum, ctx.emit(ops.mul, x, x), dims=(d,), keepdim=True))
        return ctx.emit(ops.div, x, ctx.emit(ops.maximum, norm, ctx.tensor(float(eps), like=norm)))
    return ctx.emit(ops.sum, ctx.emit(ops.mul, unit(x1), unit(x2)), dims=(d,), keepdim=False)


@register(F.pairwise_distance)
def _pairwise_distance(ctx, x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim (p > 0 or inf)."""
    diff = ctx.emit(ops.add, ctx.emit(ops.sub, x1, x2), ctx.tensor(float(eps), like=x1))
    last = (ctx.sig(diff).rank - 1,)
    if p == float("inf"):
        return ctx.emit(ops.amax, ctx.emit(ops.abs, diff), dims=last, keepdim=keepdim)
    if not p > 0:
        raise ctx.error(f"pairwise_distance with p={p} is not supported", "fxla lowers p > 0 and p = inf",
                        "use p=1, 2 or another positive p")
    if p == 2:
        return ctx.emit(ops.sqrt, ctx.emit(ops.sum, ctx.emit(ops.mul, diff, diff), dims=last, keepdim=keepdim))
    powered = ctx.emit(ops.pow, ctx.emit(ops.abs, diff), ctx.tensor(float(p), like=diff))
    total = ctx.emit(ops.sum, powered, dims=last, keepdim=keepdim)
    return ctx.emit(ops.pow, total, ctx.tensor(1.0 / p, like=total))


register_module(torch.nn.CosineSimilarity, F.cosine_similarity, attrs=("dim", "eps"))
register_module(torch.nn.PairwiseDistance, F.pairwise_distance, attrs=("eps", "keepdim"), p="norm")
