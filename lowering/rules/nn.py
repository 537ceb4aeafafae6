"""Neural-network ops: linear algebra, convolution, pooling, normalisation, softmax, dropout, reductions."""
from __future__ import annotations

import math
import operator
from functools import partial

import torch
import torch.nn.functional as F

from fxla.dialects.fxla import Sig, ops, type_of

from ..dtypes import elem_of
from ..registry import register
from .indexing import reshape
from .padding import _pad


def _pair(value, n=2):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


@register(F.linear)
def _linear(ctx, input, weight, bias=None):
    if ctx.sig(weight).rank == 1:             # torch allows a [in] weight: y = x @ w (+ bias), dim dropped
        y = ctx.emit(ops.matmul, input, weight)
        return y if bias is None else ctx.emit(ops.add, y, bias)
    return ctx.emit(ops.linear, input, weight, bias)


def linear_at(ctx, target: str, mod, input):
    """The nn.Linear ``mod`` whose parameters are at ``target`` (its own node, or a submodule of a composite)."""
    bias = ctx.param(f"{target}.bias") if mod.bias is not None else None
    return ctx.emit(ops.linear, input, ctx.param(f"{target}.weight"), bias)


@register(torch.nn.Linear)
def _linear_module(ctx, input, *, mod):
    return linear_at(ctx, ctx.node.target, mod, input)


@register(F.bilinear, torch.bilinear)
def _bilinear(ctx, input1, input2, weight, bias=None):
    """y[.., o] = sum_ij x1[.., i] W[o, i, j] x2[.., j] (+ b[o]): x1 @ W as [in1, out * in2], then a product with x2
    summed over in2; half precision is computed in f32 and rounded once."""
    s1, s2 = ctx.sig(input1), ctx.sig(input2)
    out, in1, in2 = ctx.sig(weight).shape
    lead = s1.shape[:-1]
    m = math.prod(lead)
    elem = "f32" if s1.elem in ("f16", "bf16") else s1.elem
    as_work = lambda v: v if ctx.sig(v).elem == elem else \
        ctx.emit(ops.convert, v, result_type=type_of(Sig(ctx.sig(v).shape, elem)))  # noqa: E731
    w = reshape(ctx, ctx.emit(ops.permute, as_work(weight), dims=(1, 0, 2)), (in1, out * in2))
    t = reshape(ctx, ctx.emit(ops.matmul, reshape(ctx, as_work(input1), (m, in1)), w), (m, out, in2))
    y = ctx.emit(ops.sum, ctx.emit(ops.mul, t, reshape(ctx, as_work(input2), (m, 1, in2))), dims=(-1,))
    if bias is not None:
        y = ctx.emit(ops.add, y, as_work(bias))
    y = reshape(ctx, y, lead + (out,))
    return y if ctx.sig(y).elem == s1.elem else ctx.emit(ops.convert, y, result_type=type_of(Sig(ctx.sig(y).shape,
                                                                                                  s1.elem)))


@register(torch.nn.Bilinear)
def _bilinear_module(ctx, input1, input2, *, mod):
    bias = ctx.param(f"{ctx.node.target}.bias") if mod.bias is not None else None
    return _bilinear(ctx, input1, input2, ctx.param(f"{ctx.node.target}.weight"), bias)


@register(torch.matmul, torch.Tensor.matmul, torch.mm, torch.Tensor.mm, torch.bmm, torch.Tensor.bmm,
          operator.matmul)
def _matmul(ctx, input, other):
    return ctx.emit(ops.matmul, input, other)


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
    return _pair(padding, n)


def _conv(ctx, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, n):
    if ctx.sig(input).rank == n + 1:        # unbatched input: add N = 1 and drop it again
        y = _conv(ctx, reshape(ctx, input, (1,) + ctx.sig(input).shape), weight, bias, stride, padding, dilation,
                  groups, n=n)
        return reshape(ctx, y, ctx.sig(y).shape[1:])
    dilation = _pair(dilation, n)
    return ctx.emit(ops.conv, input, weight, bias, stride=_pair(stride, n),
                    padding=_conv_padding(ctx, padding, weight, dilation, n), dilation=dilation, groups=groups)


def _conv_transpose(ctx, input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                    *, n):
    if ctx.sig(input).rank == n + 1:
        y = _conv_transpose(ctx, reshape(ctx, input, (1,) + ctx.sig(input).shape), weight, bias, stride, padding,
                            output_padding, groups, dilation, n=n)
        return reshape(ctx, y, ctx.sig(y).shape[1:])
    if isinstance(padding, str):
        raise ctx.error(f"conv_transpose{n}d(padding={padding!r}) is not supported", "torch takes numbers here",
                        "pass the padding as numbers")
    return ctx.emit(ops.conv, input, weight, bias, stride=_pair(stride, n), padding=_pair(padding, n),
                    dilation=_pair(dilation, n), groups=groups, transposed=True,
                    output_padding=_pair(output_padding, n))


def _conv_module(ctx, input, *, mod, n, transposed=False):
    weight = ctx.param(f"{ctx.node.target}.weight")
    bias = ctx.param(f"{ctx.node.target}.bias") if mod.bias is not None else None
    if transposed:
        return _conv_transpose(ctx, input, weight, bias, mod.stride, mod.padding, mod.output_padding, mod.groups,
                               mod.dilation, n=n)
    if mod.padding_mode != "zeros":      # torch pads with F.pad in that mode, then convolves without padding
        input = _pad(ctx, input, mod._reversed_padding_repeated_twice, mod.padding_mode)
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


def _softmax_module(ctx, input, *, mod, opdef):
    return _softmax(ctx, input, mod.dim, opdef=opdef)


for _opdef, _keys, _module in ((ops.softmax, (torch.softmax, F.softmax, torch.Tensor.softmax), torch.nn.Softmax),
                               (ops.log_softmax, (torch.log_softmax, F.log_softmax, torch.Tensor.log_softmax),
                                torch.nn.LogSoftmax)):
    register(*_keys)(partial(_softmax, opdef=_opdef))
    register(_module)(partial(_softmax_module, opdef=_opdef))


@register(F.layer_norm)
def _layer_norm(ctx, input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return ctx.emit(ops.layer_norm, input, weight, bias, normalized_rank=len(tuple(normalized_shape)), eps=eps)


def layer_norm_at(ctx, target: str, mod, input):
    """The nn.LayerNorm ``mod`` whose parameters are at ``target``."""
    weight = ctx.param(f"{target}.weight") if mod.weight is not None else None
    bias = ctx.param(f"{target}.bias") if mod.bias is not None else None
    return _layer_norm(ctx, input, mod.normalized_shape, weight, bias, mod.eps)


@register(torch.nn.LayerNorm)
def _layer_norm_module(ctx, input, *, mod):
    return layer_norm_at(ctx, ctx.node.target, mod, input)


@register(F.dropout)
def _dropout(ctx, input, p=0.5, training=True, inplace=False):
    if training and p > 0:
        raise ctx.error("dropout in training mode is not supported", "fxla compiles inference programs; "
                        "random masks are not lowered yet", "call model.eval() (or pass training=False)")
    return input


@register(torch.nn.Dropout)
def _dropout_module(ctx, input, *, mod):
    return _dropout(ctx, input, mod.p, mod.training)


@register(torch.nn.Identity)
def _identity_module(ctx, input, *args, mod, **kwargs):
    return input


def _reduce(ctx, input, dim=None, keepdim=False, *, dtype=None, opdef):
    dims = () if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    if dtype is not None:
        input = ctx.emit(ops.convert, input, result_type=type_of(Sig(ctx.sig(input).shape, elem_of(dtype))))
    result = ctx.emit(opdef, input, dims=dims, keepdim=bool(keepdim))
    if dtype is not None and ctx.sig(result).elem != elem_of(dtype):
        # fxla.sum widens integers to i64; an explicit dtype= (e.g. int32) is kept by torch.  Integer sums wrap
        # modulo 2**bits, so summing in i64 and narrowing gives the same values.
        result = ctx.emit(ops.convert, result, result_type=ctx.result_type)
    return result


for _opdef, _keys in ((ops.sum, (torch.sum, torch.Tensor.sum)), (ops.mean, (torch.mean, torch.Tensor.mean))):
    register(*_keys)(partial(_reduce, opdef=_opdef))


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


@register(torch.nn.CosineSimilarity)
def _cosine_similarity_module(ctx, x1, x2, *, mod):
    return _cosine_similarity(ctx, x1, x2, mod.dim, mod.eps)


@register(torch.nn.PairwiseDistance)
def _pairwise_distance_module(ctx, x1, x2, *, mod):
    return _pairwise_distance(ctx, x1, x2, mod.norm, mod.eps, mod.keepdim)
