"""``fxla-pool-layout``: pool channels-last the values that convolutions computed.

torch's pooling is channels-first (``[N, C, spatial...]``), so fxla's pooling patterns emit a
``stablehlo.reduce_window`` whose window covers the trailing (spatial) dims.  XLA CPU runs convolutions with
channels-last activations: a convolution's ``[N, C, H, W]`` result is physically NHWC.  A reduce_window over
that value is given the default (NCHW) physical layout, so XLA copies the activation to NCHW before the pool
and the pool's result back to NHWC for the next convolution — and every residual add between the pool and a
convolution's result gets a copy too (ResNet-18, batch 32: 8 activation copies, ~30 MB each call for the
stem's pool alone).  Written with the channels moved last, the same pool lets XLA keep one layout:

    %y = stablehlo.reduce_window(%x) window [1, 1, kh, kw]                         (x: [N, C, H, W])
  becomes
    %t = stablehlo.transpose %x, dims = [0, 2, 3, 1]                               ([N, H, W, C])
    %p = stablehlo.reduce_window(%t) window [1, kh, kw, 1]   (strides, dilations, padding permuted alike)
    %y = stablehlo.transpose %p, dims = [0, 3, 1, 2]

which XLA's layout assignment turns into no copy at all (both transposes become bitcasts of the NHWC buffer).
The values are the same (a reduce_window computes each output from its window independently).

A ``reduce_window`` is rewritten when it has one operand of rank r >= 3, its window, strides and dilations are 1
and its padding 0 on dims 0 and 1, its window does not cover the whole unpadded spatial extent (see
:func:`_pools_spatial_dims`), and its operand is computed from a ``stablehlo.convolution`` with output
dims ``[b, f, spatial...]`` through elementwise ops only (BatchNorm's scale and shift, ReLU, residual adds).  A
pool of a pool rewritten so (its channels-first transpose) is rewritten too.  A pool of anything else (a
function argument, whose buffer is row-major NCHW; the result of a reshape) is left alone: there the transposes
would be real copies.

It is a choice for XLA CPU, so it is not part of the portable pipeline (``DEFAULT_PIPELINE``, whose StableHLO
export artifacts and ``as_jax_function`` carry): ``fxla.compile`` runs it on the verified StableHLO of a
single-device program for a CPU device, with ``fxla-param-layout``, before XLA compiles it (``fxla-dump``'s hlo
stage does the same); ``fxla-opt --fxla-pool-layout`` runs it on a file.
"""
from __future__ import annotations

from typing import List

import numpy as np

from fxla.dialects.mlir import hlo, ir

from .param_layout import _permuted_type

#: ops whose result is computed element by element from operands of the same shape (ReLU6 is a select over an
#: ``or`` of two compares): the walk from a pool's operand back to a convolution goes through these, and
#: fxla-channels-last rewrites them
ELEMENTWISE = frozenset(op.OPERATION_NAME for op in (
    hlo.AddOp, hlo.SubtractOp, hlo.MulOp, hlo.DivOp, hlo.MaxOp, hlo.MinOp, hlo.NegOp, hlo.AbsOp, hlo.ExpOp,
    hlo.LogOp, hlo.TanhOp, hlo.LogisticOp, hlo.SqrtOp, hlo.RsqrtOp, hlo.PowOp, hlo.ClampOp, hlo.SelectOp,
    hlo.ConvertOp, hlo.CompareOp, hlo.AndOp, hlo.OrOp, hlo.NotOp, hlo.XorOp, hlo.SignOp, hlo.FloorOp, hlo.CeilOp,
    hlo.RoundNearestEvenOp, hlo.RoundOp, hlo.RemOp, hlo.Atan2Op, hlo.CosineOp, hlo.SineOp, hlo.TanOp, hlo.Expm1Op,
    hlo.Log1pOp, hlo.IsFiniteOp, hlo.CbrtOp))

#: how many ops the walk from one pool's operand visits at most (a deep elementwise tail is not worth more)
WALK_LIMIT = 64


def _ints(attr) -> List[int]:
    return list(attr) if attr is not None else []


def _attr(op, name):
    return op.attributes[name] if name in op.attributes else None


def _shape(value):
    t = value.type.maybe_downcast()
    return t.shape if isinstance(t, ir.RankedTensorType) else None


def _channels_first_conv(op) -> bool:
    dn = hlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
    spatial = _ints(dn.output_spatial_dimensions)
    return dn.output_batch_dimension == 0 and dn.output_feature_dimension == 1 and spatial == list(
        range(2, 2 + len(spatial)))


def _to_channels_last(rank: int) -> List[int]:
    return [0] + list(range(2, rank)) + [1]


def _to_channels_first(rank: int) -> List[int]:
    return [0, rank - 1] + list(range(1, rank - 1))


def _op(value):
    """The op that defines ``value``, or None for a block argument."""
    return None if isinstance(value.owner, ir.Block) else value.owner.operation


def _from_convolution(value) -> bool:
    """Whether ``value`` is computed, through elementwise ops of its shape, from a channels-first convolution or
    from a transpose of channels-last data to channels-first (what this pass makes of a pool)."""
    shape = _shape(value)
    pending, seen = [value], 0
    while pending and seen < WALK_LIMIT:
        v = pending.pop()
        owner = v.owner
        if isinstance(owner, ir.Block):
            continue                                   # a block argument: row-major as given
        op = owner.operation
        seen += 1
        if op.name == hlo.ConvolutionOp.OPERATION_NAME:
            if _channels_first_conv(op):
                return True
            continue
        if op.name == hlo.TransposeOp.OPERATION_NAME and _ints(op.attributes["permutation"]) == _to_channels_first(
                len(shape)):
            return True                                # channels-last data (e.g. an earlier pool, rewritten)
        if op.name in ELEMENTWISE:
            pending.extend(o for o in op.operands if _shape(o) == shape)
    return False


def _pools_spatial_dims(op) -> bool:
    if len(op.operands) != 2 or len(op.results) != 1:     # one operand and its init value
        return False
    shape = _shape(op.operands[0])
    if shape is None or len(shape) < 3 or _shape(op.results[0]) is None:    # unranked: left alone
        return False
    window = _ints(_attr(op, "window_dimensions"))
    for name in ("window_strides", "base_dilations", "window_dilations"):
        values = _ints(_attr(op, name))
        if values and values[:2] != [1, 1]:
            return False
    pads = _padding(op)
    if window[:2] != [1, 1] or pads[:2] != [(0, 0), (0, 0)]:
        return False
    # a window over the whole spatial extent (global pooling, adaptive_avg_pool to 1x1) is left as it is:
    # rewritten (and also written as a mean `reduce`), it made XLA run ResNet-18's last six convolutions without
    # YNNPACK, 1.6x slower overall at batch 1; left alone, it costs one copy of the smallest activation
    return window[2:] != list(shape[2:]) or any(p != (0, 0) for p in pads[2:])


def _padding(op) -> List[tuple]:
    rank = len(_shape(op.operands[0]))
    attr = _attr(op, "padding")
    if attr is None:
        return [(0, 0)] * rank
    flat = [int(v) for v in ir.DenseIntElementsAttr(attr)]
    return [(flat[2 * i], flat[2 * i + 1]) for i in range(rank)]


def permute_window(op, perm: List[int], pads: List[tuple]) -> None:
    """Permute reduce_window ``op``'s window, strides, dilations and padding (``pads``, as :func:`_padding` read
    them) by ``perm``: dim ``d`` takes what dim ``perm[d]`` had."""
    for name in ("window_dimensions", "window_strides", "base_dilations", "window_dilations"):
        values = _ints(_attr(op, name))
        if values:
            op.attributes[name] = ir.DenseI64ArrayAttr.get([values[p] for p in perm])
    if _attr(op, "padding") is not None:
        op.attributes["padding"] = ir.DenseIntElementsAttr.get(
            np.asarray([pads[p] for p in perm], dtype=np.int64),
            type=ir.RankedTensorType.get([len(pads), 2], ir.IntegerType.get_signless(64)))


def _rewrite(op) -> None:
    x = op.operands[0]
    rank = ir.RankedTensorType(x.type).rank
    perm, inverse = _to_channels_last(rank), _to_channels_first(rank)
    uses = [(use.owner, use.operand_number) for use in op.results[0].uses]
    pads = _padding(op)
    producer = None if isinstance(x.owner, ir.Block) else x.owner.operation
    with op.location:
        if producer is not None and producer.name == hlo.TransposeOp.OPERATION_NAME and \
                _ints(producer.attributes["permutation"]) == inverse:
            op.operands[0] = producer.operands[0]     # channels-last already (an earlier pool): no transpose pair
            if not list(producer.results[0].uses):
                producer.erase()
        else:
            with ir.InsertionPoint(op):
                op.operands[0] = hlo.TransposeOp(x, perm).result
        permute_window(op, perm, pads)
        op.results[0].set_type(_permuted_type(op.results[0].type, perm))
        with ir.InsertionPoint.after(op):
            back = hlo.TransposeOp(op.results[0], inverse).result
    for owner, index in uses:
        owner.operands[index] = back


def pool_layout_pass(module) -> int:
    """The ``fxla-pool-layout`` pass (see the module docstring), in place on every function of ``module``; returns
    how many pools it rewrote."""
    root = module.operation if isinstance(module, ir.Module) else module
    pools = []

    def collect(op):
        if op.name == hlo.ReduceWindowOp.OPERATION_NAME and _pools_spatial_dims(op):
            pools.append(op)
        return ir.WalkResult.ADVANCE

    with root.context:
        root.walk(collect)
        rewritten = 0
        for op in pools:                 # in program order: a pool of a rewritten pool sees its transpose
            if _from_convolution(op.operands[0]):
                _rewrite(op)
                rewritten += 1
    return rewritten
