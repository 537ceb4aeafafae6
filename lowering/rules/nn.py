"""Neural-network layers: convolution (+ transposed), softmax/log_softmax, layer_norm, dropout (every form; a random
mask per call in training mode), identity and the distances (cosine_similarity, pairwise_distance), with their nn
modules."""
from __future__ import annotations

import math
from functools import partial

import torch
import torch.nn.functional as F

from fxla.dialects.fxla import ops

from ..emit import norm_root, ntuple
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


# -- dropout (training mode: a random mask drawn per call, fxla.rng; eval mode / p = 0: the input itself) --------
_SELU_ALPHA = 1.7580993408473766          # alpha dropout's alpha (torch's _dropout_impl)


def _dropped(ctx, input, p, training, *, feature: bool = False, alpha: bool = False, name: str = "dropout"):
    """torch's ``_dropout_impl``: in training mode a keep-mask ``u < 1 - p`` (``u`` a uniform in f32, f64 for an
    f64 input) -- per element, or per (sample, channel) for the feature forms -- scaled by 1 / (1 - p) and
    multiplied in (alpha dropout: ``x * a * mask + b``, keeping SELU's mean and variance); ``p == 1``: ``x * 0``.
    The mask is a value of the program, so a backward reuses the forward's (``x.grad = mask / (1 - p)``)."""
    if not 0 <= p <= 1:
        raise ctx.error(f"{name} probability has to be between 0 and 1, but got {p}", "eager refuses it too",
                        "pass 0 <= p <= 1")
    s = ctx.sig(input)
    if p == 0 or not training or 0 in s.shape:
        return input
    if s.elem not in ("f16", "bf16", "f32", "f64"):
        raise ctx.error(f"{name} in training mode of a {s.elem} tensor", "eager refuses it too (the scaled mask is "
                        "a float)", "apply dropout to floating-point tensors")
    if p == 1:
        return ctx.emit(ops.mul, input, ctx.tensor(0.0, like=input))
    if feature and s.rank < 2:
        raise ctx.error(f"{name} of a {s.rank}-D tensor", "feature dropout requires at least 2 dimensions in the "
                        "input (eager refuses it too)", "pass an (N, C, ...) tensor")
    shape = s.shape[:2] + (1,) * (s.rank - 2) if feature else s.shape
    work = "f64" if s.elem == "f64" else "f32"
    u = ctx.random(shape, work)
    keep = ctx.convert(ctx.emit(ops.lt, u, ctx.tensor(1.0 - p, like=u)), work)
    if not alpha:
        noise = ctx.convert(ctx.emit(ops.div, keep, ctx.tensor(1.0 - p, like=keep)), s.elem)
        return ctx.emit(ops.mul, input, noise)
    a = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    shift = ctx.emit(ops.mul, ctx.emit(ops.sub, keep, ctx.tensor(1.0, like=keep)),
                     ctx.tensor(_SELU_ALPHA * a, like=keep))
    shift = ctx.convert(ctx.emit(ops.add, shift, ctx.tensor(_SELU_ALPHA * a * p, like=keep)), s.elem)
    noise = ctx.convert(ctx.emit(ops.mul, keep, ctx.tensor(a, like=keep)), s.elem)
    return ctx.emit(ops.add, ctx.emit(ops.mul, input, noise), shift)


@register(F.dropout)
def _dropout(ctx, input, p=0.5, training=True, inplace=False):
    return _dropped(ctx, input, p, training)


@register(F.alpha_dropout)
def _alpha_dropout(ctx, input, p=0.5, training=False, inplace=False):
    return _dropped(ctx, input, p, training, alpha=True, name="alpha_dropout")


@register(F.feature_alpha_dropout)
def _feature_alpha_dropout(ctx, input, p=0.5, training=False, inplace=False):
    return _dropped(ctx, input, p, training, feature=True, alpha=True, name="feature_alpha_dropout")


def _dropout_nd(ctx, input, p=0.5, training=True, inplace=False, *, n: int):
    """``F.dropout1d/2d/3d``: channel-wise dropout; an input without the batch dim (rank n + 1) is one sample
    (``dropout2d`` treats a 3-D input as (N, C, L), as torch does)."""
    rank = ctx.sig(input).rank
    if n == 1 and rank not in (2, 3):
        raise ctx.error(f"dropout1d of a {rank}-D input", "eager refuses it too: it expects 2-D or 3-D input",
                        "pass (C, L) or (N, C, L)")
    unbatched = rank == n + 1 and n != 2
    x = ctx.reshape(input, (1,) + ctx.sig(input).shape) if unbatched else input
    y = _dropped(ctx, x, p, training, feature=True, name=f"dropout{n}d")
    return ctx.reshape(y, ctx.sig(input).shape)


for _n, _f in ((1, F.dropout1d), (2, F.dropout2d), (3, F.dropout3d)):
    register(_f)(partial(_dropout_nd, n=_n))

for _module, _f in ((torch.nn.Dropout, F.dropout), (torch.nn.Dropout1d, F.dropout1d),
                    (torch.nn.Dropout2d, F.dropout2d), (torch.nn.Dropout3d, F.dropout3d),
                    (torch.nn.AlphaDropout, F.alpha_dropout), (torch.nn.FeatureAlphaDropout, F.feature_alpha_dropout)):
    register_module(_module, _f, attrs=("p", "training"))


@register(torch.nn.Identity)
def _identity_module(ctx, input, *args, mod, **kwargs):
    return input


@register(torch.nn.Softmax2d)
def _softmax2d(ctx, input, *, mod):
    return ctx.emit(ops.softmax, input, dim=-3)


# -- distances -------------------------------------------------------------------------------------------------
@register(F.cosine_similarity)
def _cosine_similarity(ctx, x1, x2, dim=1, eps=1e-8):
    """sum((x1 / max(|x1|, eps)) * (x2 / max(|x2|, eps)), dim), torch's formula (the norms clamped apart; torch
    clamps them in place under no_grad, so the gradient goes through the norm unclamped: keep_history)."""
    shape = tuple(torch.broadcast_shapes(ctx.sig(x1).shape, ctx.sig(x2).shape))
    x1, x2 = (t if ctx.sig(t).shape == shape else ctx.emit(ops.expand, t, shape=shape) for t in (x1, x2))
    d = dim % len(shape)

    def unit(x):
        norm = norm_root(ctx, ctx.emit(ops.sum, ctx.emit(ops.mul, x, x), dims=(d,), keepdim=True))
        clamped = ctx.emit(ops.keep_history, ctx.emit(ops.maximum, norm, ctx.tensor(float(eps), like=norm)), norm)
        return ctx.emit(ops.div, x, clamped)
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
        return norm_root(ctx, ctx.emit(ops.sum, ctx.emit(ops.mul, diff, diff), dims=last, keepdim=keepdim))
    powered = ctx.emit(ops.pow, ctx.emit(ops.abs, diff), ctx.tensor(float(p), like=diff))
    return norm_root(ctx, ctx.emit(ops.sum, powered, dims=last, keepdim=keepdim), float(p))


register_module(torch.nn.CosineSimilarity, F.cosine_similarity, attrs=("dim", "eps"))
register_module(torch.nn.PairwiseDistance, F.pairwise_distance, attrs=("eps", "keepdim"), p="norm")
