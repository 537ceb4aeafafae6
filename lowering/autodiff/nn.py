"""VJP rules of the ``nn`` family (see :mod:`fxla.lowering.autodiff.registry`): convolution, softmax,
log-softmax and layer normalisation.

* ``conv``: the input's cotangent is the convolution's transpose applied to the result's (a transposed
  ``fxla.conv`` for a plain one, a plain one for a transposed one, ``output_padding`` taking up the input
  elements the forward windows never reached); the weight's is a convolution of the input with the
  cotangent (the batch as the contracted feature dim) for ``groups=1``, and for a grouped one a sum over the
  kernel taps of the input's strided window times the cotangent; the bias's is the cotangent summed over all
  dims but the channels.
* ``softmax`` / ``log_softmax`` / ``layer_norm``: torch's closed forms, computed in f32 for f16/bf16 operands
  (as the forward patterns and torch's CPU kernels compute) and rounded once.  ``layer_norm`` recomputes the
  mean and the reciprocal standard deviation from the input (the forward op does not return them).
"""
from __future__ import annotations

import itertools
import math

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.types import same_shape

from ..emit import may_be_nonzero

from .registry import vjp_rule


def _compute(elem: str) -> str:
    """Half-precision gradients are computed in f32 and rounded once (torch's CPU kernels do the same)."""
    return "f32" if elem in ("f16", "bf16") else elem


def _up(ctx, value):
    return ctx.convert(value, _compute(ctx.sig(value).elem))


# -- convolution --------------------------------------------------------------------------------------------------

def _crop_spatial(ctx, value, sizes):
    """``value`` ([A, B, *spatial]) cut to its first ``sizes`` elements along each spatial dim."""
    shape = ctx.sig(value).shape
    if same_shape(shape[2:], sizes):
        return value
    rank = len(shape)
    return ctx.emit(ops.slice, value, start=[0] * rank, limit=list(shape[:2]) + list(sizes), stride=[1] * rank)


def _swap_batch_feature(ctx, value):
    rank = ctx.sig(value).rank
    return ctx.emit(ops.permute, value, dims=[1, 0] + list(range(2, rank)))


def _conv_weight_grad(ctx, inp, cot, kernel, stride, padding, dilation, groups):
    """The weight cotangent ([Cout, Cin/groups, *kernel]) of a plain convolution mapping ``inp`` ([N, Cin, *in])
    to a result whose cotangent is ``cot`` ([N, Cout, *out]).

    dw[o, c, k] = sum over n, j of inp_padded[n, group(o)*Cin/g + c, k*dilation + j*stride] * cot[n, o, j]: a
    convolution whose batch is c, whose contracted features are (group, n) in ``groups`` feature groups, whose
    kernel is the cotangent dilated by ``stride`` and whose window stride is ``dilation``.  Input elements past
    the last window (``(in + 2p - d(k-1) - 1) % stride`` of them) make extra kernel taps, cut off afterwards.
    """
    n, cin = ctx.sig(inp).shape[:2]
    spatial = ctx.sig(inp).shape[2:]
    cg = cin // groups
    x = ctx.reshape(inp, (n, groups, cg) + tuple(spatial))
    x = ctx.emit(ops.permute, x, dims=[2, 1, 0] + [3 + i for i in range(len(spatial))])
    x = ctx.reshape(x, (cg, groups * n) + tuple(spatial))                      # [Cin/g, g*N, *in]
    k = _swap_batch_feature(ctx, cot)                                           # [Cout, N, *out]
    dw = ctx.emit(ops.conv, x, k, None, stride=list(dilation), padding=list(padding), dilation=list(stride),
                  groups=groups)                                                # [Cin/g, Cout, *k']
    return _swap_batch_feature(ctx, _crop_spatial(ctx, dw, kernel))


def _grouped_weight_grad(ctx, inp, cot, kernel, stride, padding, dilation, groups):
    """:func:`_conv_weight_grad` of a grouped convolution as a sum over the kernel taps: per tap, the strided
    window of the padded input it meets ([N, g, Ci, P] for P output positions) contracted with the cotangent
    ([N, g, Mo, P]) over the batch and the positions -- an elementwise product and a sum for one channel per
    group (depthwise), a matmul batched over the groups otherwise.  (As one grouped convolution, the cotangent
    would be its kernel, and fxla-grouped-conv on CPU would expand that into one tap per output position.)"""
    n, cin = ctx.sig(inp).shape[:2]
    cout, out = ctx.sig(cot).shape[1], ctx.sig(cot).shape[2:]
    ci, mo, positions = cin // groups, cout // groups, math.prod(out)
    elem = ctx.sig(inp).elem
    xp, cot = _up(ctx, inp), _up(ctx, cot)
    if any(padding):
        xp = ctx.emit(ops.pad, xp, low=[0, 0] + list(padding), high=[0, 0] + list(padding))
    if ci == 1:
        g = ctx.reshape(cot, (n, groups, mo, positions))
    else:                                                                       # [g, Mo, N*P]
        g = ctx.emit(ops.permute, ctx.reshape(cot, (n, groups, mo, positions)), dims=[1, 2, 0, 3])
        g = ctx.reshape(g, (groups, mo, n * positions))
    taps = []
    for tap in itertools.product(*(range(k) for k in kernel)):
        start = [0, 0] + [t * d for t, d in zip(tap, dilation)]
        limit = [n, cin] + [t * d + (o - 1) * s + 1 for t, d, o, s in zip(tap, dilation, out, stride)]
        window = ctx.emit(ops.slice, xp, start=start, limit=limit, stride=[1, 1] + list(stride))
        if ci == 1:
            window = ctx.reshape(window, (n, groups, 1, positions))
            dw = ctx.emit(ops.sum, ctx.emit(ops.mul, window, g), dims=[0, 3], keepdim=False)
        else:
            window = ctx.emit(ops.permute, ctx.reshape(window, (n, groups, ci, positions)), dims=[1, 0, 3, 2])
            dw = ctx.emit(ops.matmul, g, ctx.reshape(window, (groups, n * positions, ci)))
        taps.append(ctx.reshape(dw, (cout, ci, 1)))
    dw = taps[0] if len(taps) == 1 else ctx.emit(ops.concat, taps, dim=2)
    return ctx.convert(ctx.reshape(dw, (cout, ci) + tuple(kernel)), elem)


def _weight_grad(ctx, inp, cot, kernel, stride, padding, dilation, groups):
    rule = _grouped_weight_grad if groups > 1 else _conv_weight_grad
    return rule(ctx, inp, cot, kernel, stride, padding, dilation, groups)


@vjp_rule(ops.conv)
def _conv(ctx, ct, x, w, bias, *, result, stride, padding, dilation, groups, transposed, output_padding):
    xs, ws = ctx.sig(x), ctx.sig(w)
    kernel, in_sizes = ws.shape[2:], xs.shape[2:]
    out_sizes = ctx.sig(ct).shape[2:]
    if not transposed:
        # the transpose of this convolution, its output padding restoring the input's size
        extra = [i + 2 * p - d * (k - 1) - 1 - (o - 1) * s
                 for i, o, k, s, p, d in zip(in_sizes, out_sizes, kernel, stride, padding, dilation)]
        dx = ctx.emit(ops.conv, ct, w, None, stride=list(stride), padding=list(padding), dilation=list(dilation),
                      groups=groups, transposed=True, output_padding=extra if may_be_nonzero(extra) else [])
        dw = _weight_grad(ctx, x, ct, kernel, stride, padding, dilation, groups)
    else:
        # a transposed convolution is the input gradient of the plain one with the same weight, mapping the
        # result's shape back to the input's: its gradients are that plain convolution and its weight gradient
        dx = ctx.emit(ops.conv, ct, w, None, stride=list(stride), padding=list(padding), dilation=list(dilation),
                      groups=groups)
        dx = _crop_spatial(ctx, dx, in_sizes)       # output_padding >= stride (allowed below the dilation)
        dw = _weight_grad(ctx, ct, x, kernel, stride, padding, dilation, groups)
    db = None
    if bias is not None:
        db = ctx.like(ctx.emit(ops.sum, _up(ctx, ct), dims=[0] + list(range(2, xs.rank)), keepdim=False), bias)
    return dx, dw, db


# -- softmax, log_softmax -----------------------------------------------------------------------------------------

def _sum_along(ctx, value, dim):
    """``value`` summed along ``dim``, kept as a size-1 dim (a 0-d ``value`` is its own sum)."""
    if ctx.sig(value).rank == 0:
        return value
    return ctx.emit(ops.sum, value, dims=[dim], keepdim=True)


@vjp_rule(ops.softmax)
def _softmax(ctx, ct, x, *, result, dim):
    # dx = y * (g - sum(g * y))
    y, g = _up(ctx, result), _up(ctx, ct)
    inner = _sum_along(ctx, ctx.emit(ops.mul, g, y), dim)
    return (ctx.like(ctx.emit(ops.mul, y, ctx.emit(ops.sub, g, inner)), x),)


@vjp_rule(ops.log_softmax)
def _log_softmax(ctx, ct, x, *, result, dim):
    # dx = g - exp(y) * sum(g)
    y, g = _up(ctx, result), _up(ctx, ct)
    total = _sum_along(ctx, g, dim)
    return (ctx.like(ctx.emit(ops.sub, g, ctx.emit(ops.mul, ctx.emit(ops.exp, y), total)), x),)


# -- layer_norm ---------------------------------------------------------------------------------------------------

@vjp_rule(ops.layer_norm)
def _layer_norm(ctx, ct, x, weight, bias, *, result, normalized_rank, eps):
    """xhat = (x - mean) * rstd; dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat)) with gh = g * weight;
    dweight = sum over the leading dims of g * xhat, dbias = that of g."""
    rank = ctx.sig(x).rank
    dims = list(range(rank - normalized_rank, rank))
    lead = list(range(rank - normalized_rank))
    xf, g = _up(ctx, x), _up(ctx, ct)

    def mean(v):
        return ctx.emit(ops.mean, v, dims=dims, keepdim=True)

    centered = ctx.emit(ops.sub, xf, mean(xf))
    var = mean(ctx.emit(ops.mul, centered, centered))
    rstd = ctx.emit(ops.rsqrt, ctx.emit(ops.add, var, ctx.tensor(float(eps), like=var)))
    xhat = ctx.emit(ops.mul, centered, rstd)
    gh = g if weight is None else ctx.emit(ops.mul, g, _up(ctx, weight))
    dx = ctx.emit(ops.mul, rstd, ctx.emit(ops.sub, ctx.emit(ops.sub, gh, mean(gh)),
                                          ctx.emit(ops.mul, xhat, mean(ctx.emit(ops.mul, gh, xhat)))))

    def over_lead(v, like):
        summed = ctx.emit(ops.sum, v, dims=lead, keepdim=False) if lead else v
        return ctx.like(summed, like)

    dw = None if weight is None else over_lead(ctx.emit(ops.mul, g, xhat), weight)
    db = None if bias is None else over_lead(g, bias)
    return ctx.like(dx, x), dw, db
