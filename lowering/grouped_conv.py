"""``fxla-grouped-conv``: grouped and depthwise convolutions as per-tap slices, for XLA CPU.

XLA CPU runs a ``stablehlo.convolution`` with ``feature_group_count > 1`` through a slow generic loop: a
MobileNet depthwise 3x3 on ``[1, 32, 112, 112]`` takes 11-17 ms, 20-40x slower than the same convolution written
as a sum over the K*K kernel taps of a strided slice of the (padded) input times that tap's weights, which XLA
fuses into one loop (0.3-0.4 ms; torch: 0.57 ms).  For a group of ``Ci`` input channels and ``Mo`` output
channels per group (``G`` groups, kernel ``[G*Mo, Ci, k...]``), tap ``t`` contributes

    Ci == 1:  slice_t(x) (broadcast over Mo)   *  w[:, 0, t]          (elementwise, channels-last; depthwise)
    Ci >  1:  dot_general(w[:, :, t] as [G, Mo, Ci], slice_t(x) as [N, G, Ci, P])    (batched over the groups)

where ``slice_t(x)`` takes, from the padded input, the window position ``t * rhs_dilation`` with the
convolution's strides (``P`` = the output's spatial size).  The sum over taps is the convolution (the order of
the additions differs from XLA's and torch's: results agree to rounding).

A dense convolution (one group) is rewritten from the same taps when its kernel overhangs its input (larger
than the unpadded input in every spatial dim: a 3x3 convolution on the 2x2 and 1x1 maps at the end of a ResNet
fed small images), where XLA CPU's dense convolution is 4-70x slower than one dot over the concatenated taps
(:func:`_overhangs`), and when it computes at most :data:`IM2COL_MAX_POSITIONS` output positions (the 7x7 maps
at the end of a ResNet at batch 1: 1.25-1.6x faster, :func:`_few_positions`):

    G == 1:   dot_general(concat_t(slice_t(x_cl)) as [N, P, K*Ci], w as [K*Ci, O])   (im2col, channels-last: x_cl
              is x transposed to [N, spatial..., Ci], w transposed tap-major)

Whether a convolution is rewritten is decided by a cost model (:func:`estimate`): nanoseconds per
multiply-add of XLA's grouped convolution and of the per-tap form, by group width ``Ci``, measured on the
development box with ``utils/measure_grouped_conv.py`` (:data:`COSTS`); the rewrite is taken when it is
estimated at least :data:`MIN_SPEEDUP` times faster.  Narrow groups (depthwise, 2 or 4 channels per group:
MobileNet, EfficientNet, ConvNeXt, ShuffleNet) take it; for wider groups (the 8-channel groups of RegNetY) the
per-tap form is a toss-up, and a few of them (up to 11 groups of 8: :func:`pays_block_diagonal`) become one dense
convolution with a block-diagonal kernel instead, behind a test that the input is finite
(:mod:`fxla.lowering.block_diagonal`); more groups stay with XLA.

A convolution is rewritten only in the form fxla emits: dims ``[b, f, spatial...] x [o, i, spatial...] -> [b, f,
spatial...]``, ``batch_group_count = 1``, no ``lhs_dilation`` (transposed convolutions keep XLA's), no window
reversal, non-negative padding, and a float32/float64 element type (half types keep XLA's accumulation).

It is a choice for XLA CPU, so it is not part of the portable pipeline: ``fxla.compile`` runs it for a CPU device
among the device layout passes (:func:`fxla.lowering.passes.device_layouts`), before ``fxla-pool-layout`` and
``fxla-param-layout``; ``fxla-opt --fxla-grouped-conv`` runs it on a file (unconditionally on every eligible
convolution: ``--fxla-grouped-conv`` is for tests of the rewrite; the cost model applies under
``fxla.compile``).
"""
from __future__ import annotations

import itertools
import math
from typing import Optional

import numpy as np

from fxla.dialects.mlir import hlo, ir

from .block_diagonal import _tensor, _zero, rewrite_block_diagonal
from .pool_layout import _attr, _from_convolution, _ints, _op

#: group width Ci -> (XLA's grouped convolution, the per-tap form), ns per multiply-add of the convolution,
#: measured with utils/measure_grouped_conv.py on the development box (2 cores; medians of two shapes)
COSTS = {1: (3.4, 0.06), 2: (2.4, 0.51), 4: (0.67, 0.25), 8: (0.22, 0.19), 16: (0.13, 0.11), 32: (0.08, 0.07)}

#: the rewrite is taken when the cost model estimates it at least this many times faster than XLA's
MIN_SPEEDUP = 1.5

_FLOATS = ("f32", "f64")


def estimate(ci: int) -> tuple:
    """(XLA's, the per-tap form's) estimated ns per multiply-add for group width ``ci`` (log-interpolated in
    :data:`COSTS`; clamped at its ends)."""
    widths = sorted(COSTS)
    if ci <= widths[0]:
        return COSTS[widths[0]]
    if ci >= widths[-1]:
        return COSTS[widths[-1]]
    lo = max(w for w in widths if w <= ci)
    hi = min(w for w in widths if w >= ci)
    if lo == hi:
        return COSTS[lo]
    f = (math.log2(ci) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
    return tuple(a ** (1 - f) * b ** f for a, b in zip(COSTS[lo], COSTS[hi]))


def pays(ci: int) -> bool:
    """Whether the cost model takes the per-tap form for group width ``ci``."""
    xla, taps = estimate(ci)
    return xla >= MIN_SPEEDUP * taps


#: ns per multiply-add of XLA CPU's dense (Eigen) convolution, for the block-diagonal form's estimate
#: (:mod:`fxla.lowering.block_diagonal`); measured in JAX, NHWC: ``[32, 48, 112, 112]`` 3x3 stride 2 as one
#: 48-channel convolution 27.6 ms for 2.08 G multiply-adds (0.013 ns), ``[32, 104, 28, 28]`` 3x3 as one
#: 104-channel convolution 27.2 ms for 2.44 G (0.011 ns)
DENSE_COST = 0.0125


#: the widest groups the block-diagonal form is taken for: from 32 channels per group on XLA's grouped
#: convolution was measured faster than the dense one (ResNeSt's 2 groups of 32 at ``[1, 64, 56, 56]``: 1.5 ms
#: grouped, 1.9 ms dense; of 64 at ``[4, 128, 28, 28]``: 3.8 against 5.1 ms), below the estimate of :data:`COSTS`
BLOCK_DIAGONAL_MAX_WIDTH = 8
#: the fewest multiply-adds of a grouped convolution the block-diagonal form is taken for: below, the finite
#: test and the conditional cost what the dense kernel saves (``[2, 24, 16, 16]`` stride 2, 3 groups of 8,
#: 0.2 M: 146 us grouped, 151 us guarded dense; ``[2, 24, 32, 32]``, 3.5 M: 548 against 255 us)
BLOCK_DIAGONAL_MIN_MACS = 2_000_000


def pays_block_diagonal(ci: int, groups: int, macs: int = BLOCK_DIAGONAL_MIN_MACS) -> bool:
    """Whether the cost model takes the block-diagonal form for ``groups`` groups of width ``ci`` (``macs``
    multiply-adds in all) where the per-tap form does not pay: XLA's grouped convolution against a dense one
    doing ``groups`` times the multiply-adds (RegNetY's 6 groups of 8 channels: 0.22 against 6 * 0.0125 ns per
    grouped multiply-add), for groups of at most :data:`BLOCK_DIAGONAL_MAX_WIDTH` channels and at least
    :data:`BLOCK_DIAGONAL_MIN_MACS` multiply-adds."""
    return 1 < ci <= BLOCK_DIAGONAL_MAX_WIDTH and macs >= BLOCK_DIAGONAL_MIN_MACS and not pays(ci) \
        and estimate(ci)[0] >= MIN_SPEEDUP * DENSE_COST * groups


def _macs(p: dict) -> int:
    """The multiply-adds of the convolution ``p``: batch x output positions x outputs x the kernel's inputs."""
    return p["x"][0] * int(np.prod(p["y"][2:])) * int(np.prod(p["w"]))


def _eligible(op, few_positions: bool = True) -> Optional[dict]:
    """The convolution's parameters when it is in the rewritable form (see the module docstring), else None: a
    grouped one, or a dense one whose kernel overhangs its input (:func:`_overhangs`) or, with ``few_positions``,
    that computes few output positions (:func:`_few_positions`)."""
    groups = _attr(op, "feature_group_count")
    if groups is None:
        return None
    if _attr(op, "batch_group_count") is not None and ir.IntegerAttr(op.attributes["batch_group_count"]).value != 1:
        return None
    x, w = op.operands[0], op.operands[1]
    xt, wt, yt = (ir.RankedTensorType(v.type) for v in (x, w, op.results[0]))
    n = xt.rank - 2
    if n < 1 or str(xt.element_type) not in _FLOATS or xt.element_type != wt.element_type:
        return None
    dn = hlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
    spatial = list(range(2, 2 + n))
    if (dn.input_batch_dimension, dn.input_feature_dimension, _ints(dn.input_spatial_dimensions)) != (0, 1, spatial) \
            or (dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension,
                _ints(dn.kernel_spatial_dimensions)) != (0, 1, spatial) \
            or (dn.output_batch_dimension, dn.output_feature_dimension, _ints(dn.output_spatial_dimensions)) != (
                0, 1, spatial):
        return None
    if any(v != 1 for v in _ints(_attr(op, "lhs_dilation"))):
        return None
    reversal = _attr(op, "window_reversal")
    if reversal is not None and any(ir.DenseBoolArrayAttr(reversal)):
        return None
    pad = [(0, 0)] * n
    if _attr(op, "padding") is not None:
        flat = [int(v) for v in ir.DenseIntElementsAttr(op.attributes["padding"])]
        pad = [(flat[2 * i], flat[2 * i + 1]) for i in range(n)]
    if any(lo < 0 or hi < 0 for lo, hi in pad):
        return None
    g = ir.IntegerAttr(groups).value
    stride = _ints(_attr(op, "window_strides")) or [1] * n
    dilation = _ints(_attr(op, "rhs_dilation")) or [1] * n
    params = dict(groups=g, pad=pad, stride=stride, dilation=dilation, x=list(xt.shape), w=list(wt.shape),
                  y=list(yt.shape), elem=xt.element_type)
    return params if g > 1 or _overhangs(params) or (few_positions and _few_positions(params)) else None


#: a dense convolution with at most this many output positions (batch x output map) is rewritten (im2col)
IM2COL_MAX_POSITIONS = 64


def _few_positions(p: dict) -> bool:
    """Whether the convolution computes at most :data:`IM2COL_MAX_POSITIONS` output positions (batch times the
    output map: the 7x7 maps at the end of a ResNet at batch 1), where im2col and one dot beat XLA CPU's dense
    convolution at every width.  Measured in JAX (NHWC, the dots on YNNPACK as fxla runs such programs), XLA's
    convolution against im2col: 3x3 on ``[1, 7, 7, C]`` for C = 64, 128, 256, 512: 156/96, 207/167, 547/404,
    1814/1449 us; ``[1, 14, 14, 256]`` stride 2 -> 512: 994/669 us; from 98 positions up XLA's is as fast or
    faster (``[2, 7, 7, 512]``: 2995/3146 us, ``[1, 14, 14, 128]``: 373/664 us)."""
    return p["x"][0] * int(np.prod(p["y"][2:])) <= IM2COL_MAX_POSITIONS


def _overhangs(p: dict) -> bool:
    """Whether the kernel's extent is larger than the unpadded input in every spatial dim (a 3x3 convolution on
    the 2x2 or 1x1 maps at the end of a ResNet fed small images): XLA CPU's (Eigen's) dense convolution is
    4-70x slower there than im2col and one dot (measured in JAX: ``[2, 512, 2, 2]`` 3x3 -> 512 channels 34.6 ms
    vs 0.47 ms, ``[2, 512, 1, 1]`` 1.20 vs 0.15 ms, ``[1, 64, 2, 2]`` 73 vs 28 us; from 3x3 maps up the two are
    within 10 % and XLA's is kept)."""
    kernel = [(k - 1) * d + 1 for k, d in zip(p["w"][2:], p["dilation"])]
    return all(size < k for size, k in zip(p["x"][2:], kernel))


def _reshape(v, shape, elem):
    return hlo.ReshapeOp(_tensor(shape, elem), v).result


def _windows(p: dict):
    """Per kernel tap (in row-major order of the kernel's spatial dims): the start and limit of its window in the
    padded input's spatial dims (the convolution's strides apply)."""
    out_size = p["y"][2:]
    for tap in itertools.product(*[range(k) for k in p["w"][2:]]):
        start = [t * d for t, d in zip(tap, p["dilation"])]
        yield start, [s + (o - 1) * st + 1 for s, o, st in zip(start, out_size, p["stride"])]


def _taps(w, p: dict, tap_major: bool = False):
    """Per kernel tap: the start and limit of its window in the padded input's spatial dims (the convolution's
    strides apply), and the tap's weights ``w[:, :, tap]`` (``[O, Ci, 1...]``); with ``tap_major``, ``w`` is the
    kernel transposed to ``[spatial..., Ci, O]`` and the tap's weights are ``w[tap]`` (``[1..., Ci, O]``)."""
    out, ci, *kernel = p["w"]
    for tap, (start, limit) in zip(itertools.product(*[range(k) for k in kernel]), _windows(p)):
        if tap_major:
            weight = hlo.SliceOp(w, list(tap) + [0, 0], [t + 1 for t in tap] + [ci, out], [1] * len(p["w"])).result
        else:
            weight = hlo.SliceOp(w, [0, 0] + list(tap), [out, ci] + [t + 1 for t in tap], [1] * len(p["w"])).result
        yield start, limit, weight


def _padded(x, p: dict, last: bool = False):
    """``x`` (``[N, C, spatial...]``, or with ``last`` ``[N, spatial..., C]``) with the convolution's zero padding
    of its spatial dims (itself without)."""
    if not any(lo or hi for lo, hi in p["pad"]):
        return x
    lead, tail = ([0], [0]) if last else ([0, 0], [])
    return hlo.PadOp(x, _zero(p["elem"]), lead + [lo for lo, _ in p["pad"]] + tail,
                     lead + [hi for _, hi in p["pad"]] + tail, [0] * (len(p["pad"]) + 2)).result


def _channels_last(x, p: dict):
    """The input ``x`` transposed from ``[N, C, spatial...]`` to ``[N, spatial..., C]``."""
    n = len(p["pad"])
    return _permute(x, [0] + list(range(2, n + 2)) + [1], p["elem"])


def _window(x, p: dict, start, limit):
    """The strided slice of the padded channels-first input ``x`` that one tap reads (from :func:`_windows`)."""
    batch, channels = p["x"][:2]
    return hlo.SliceOp(x, [0, 0] + start, [batch, channels] + limit, [1, 1] + p["stride"]).result


def _tap_major(w, n: int):
    """The kernel ``w`` (``[O, Ci, spatial...]``, ``n`` spatial dims) transposed to ``[spatial..., Ci, O]``: each
    tap's weights one contiguous block (fxla-param-layout folds the transpose into a stored weight)."""
    return hlo.TransposeOp(w, list(range(2, n + 2)) + [1, 0]).result


def _sum(terms):
    total = None
    for term in terms:
        total = term if total is None else hlo.AddOp(total, term).result
    return total


def _bias_add(op):
    """``(add, broadcast)`` when ``op``'s result is used once, by a ``stablehlo.add`` of a rank-1 bias broadcast
    along dim 1 (how fxla lowers a convolution's bias), else ``(None, None)``."""
    uses = list(op.results[0].uses)
    if len(uses) != 1 or uses[0].owner.name != hlo.AddOp.OPERATION_NAME:
        return None, None
    add = uses[0].owner
    broadcast = _op(add.operands[1 - uses[0].operand_number])
    if broadcast is None or broadcast.name != hlo.BroadcastInDimOp.OPERATION_NAME \
            or _ints(_attr(broadcast, "broadcast_dimensions")) != [1] \
            or ir.RankedTensorType(broadcast.operands[0].type).rank != 1:
        return None, None
    return add, broadcast


def _rewrite(op, p: dict):
    """Replace ``op`` by the sum over its kernel taps (see the module docstring); a depthwise convolution's bias
    add becomes the first term of the sum (:func:`_depthwise`)."""
    depthwise = p["groups"] > 1 and p["w"][1] == 1
    add, broadcast = _bias_add(op) if depthwise else (None, None)
    with op.location, ir.InsertionPoint(op if add is None else add):
        if depthwise:
            total = _depthwise(op.operands[0], op.operands[1], p, None if add is None else broadcast.operands[0])
        else:
            total = (_dense if p["groups"] == 1 else _grouped)(op.operands[0], op.operands[1], p)
    if add is not None:
        add.results[0].replace_all_uses_with(total)
        add.erase()
        if not list(broadcast.results[0].uses):
            broadcast.erase()
    else:
        op.results[0].replace_all_uses_with(total)
    op.erase()


def _depthwise(x, w, p: dict, bias=None):
    """One input channel per group: elementwise.  Channels-last when the input comes from a convolution (XLA CPU
    lays convolution results out channels-last, so the transpose to ``[N, spatial..., C]`` is a bitcast): each
    tap's strided slice is multiplied by that tap's ``[O]`` weights broadcast along the channel dim, and the sum is
    transposed back to ``[N, O, spatial...]``.  Otherwise (a function argument: row-major ``[N, C, spatial...]``,
    where the transposes would be copies) the same in ``[N, C, spatial...]`` order.

    A ``bias`` (``[O]``, the convolution's bias add) is the sum's first term, so that the sum ends with a tap: XLA
    CPU duplicates a fused computation into each of its consumers through elementwise ops of one full-size
    operand (a bias add), and a layer norm after the convolution (ConvNeXt) has three, each of which computed the
    K*K taps again (docs/performance.md, finding 7); ending with the sum of two full-size operands, the taps are
    computed once (a ConvNeXt block at batch 1, 56x56x96: 2.96 -> 1.97 ms)."""
    elem, g = p["elem"], p["groups"]
    (batch, channels, *_), (out, _, *kernel), out_size = p["x"], p["w"], p["y"][2:]
    n, mo = len(kernel), out // g
    last = _from_convolution(x)
    c = n + 1 if last else 1                                        # the channel dim
    spatial = list(range(1, n + 1)) if last else list(range(2, n + 2))

    def dims(channel, space, lead=None):                         # a per-dim list in the working layout
        values = [lead] + [None] * (n + 1)
        values[c] = channel
        for d, v in zip(spatial, space):
            values[d] = v
        return values

    x = _padded(_channels_last(x, p) if last else x, p, last)

    def term(start, limit, weight):
        window = hlo.SliceOp(x, dims(0, start, 0), dims(channels, limit, batch), dims(1, p["stride"], 1)).result
        if mo > 1:          # a channel multiplier: input channel c feeds outputs c*Mo ... c*Mo + Mo-1
            wide = dims(g, out_size, batch)
            wide.insert(c + 1, mo)
            window = hlo.BroadcastInDimOp(_tensor(wide, elem), window,
                                          [d if d <= c else d + 1 for d in range(n + 2)]).result
            window = _reshape(window, dims(out, out_size, batch), elem)
        weight = hlo.BroadcastInDimOp(_tensor(dims(out, out_size, batch), elem), _reshape(weight, [out], elem),
                                      [c]).result
        return hlo.MulOp(window, weight).result

    # the kernel tap-major ([spatial..., 1, O], HWIO), so each tap's O weights are contiguous: sliced from torch's
    # [O, 1, spatial...] they are O values K*K apart, which the fused loop reads with a stride on every element
    # (ConvNeXt-Tiny's 7x7 taps: 2705 -> 2099 ms at batch 32).  fxla-param-layout folds this transpose into a
    # parameter's stored layout, so for a weight it costs nothing per call.
    taps = _taps(_tap_major(w, n), p, tap_major=True)
    terms = [term(*tap) for tap in taps]
    if bias is not None:
        terms.insert(0, hlo.BroadcastInDimOp(_tensor(dims(out, out_size, batch), elem), bias, [c]).result)
    total = _sum(terms)
    return hlo.TransposeOp(total, [0, n + 1] + list(range(1, n + 1))).result if last else total


def _grouped(x, w, p: dict):
    """Several input channels per group: per tap a ``dot_general`` batched over the groups, contracting the
    group width; the ``[G, Mo, N, P]`` sum is put back in ``[N, O, spatial...]`` order once."""
    elem, g = p["elem"], p["groups"]
    batch, (out, ci, *_), out_size = p["x"][0], p["w"], p["y"][2:]
    mo, positions = out // g, int(np.prod(out_size))
    x = _padded(x, p)
    dims = hlo.DotDimensionNumbers.get(lhs_batching_dimensions=[0], rhs_batching_dimensions=[1],
                                       lhs_contracting_dimensions=[2], rhs_contracting_dimensions=[2])

    def term(start, limit, weight):
        return hlo.DotGeneralOp(_tensor([g, mo, batch, positions], elem), _reshape(weight, [g, mo, ci], elem),
                                _reshape(_window(x, p, start, limit), [batch, g, ci, positions], elem), dims).result

    total = _sum(term(*tap) for tap in _taps(w, p))
    total = hlo.TransposeOp(total, [2, 0, 1, 3]).result
    return _reshape(total, [batch, out] + out_size, elem)


def _dense(x, w, p: dict):
    """One group: im2col, channels-last -- the input transposed to ``[N, spatial..., Ci]`` (fxla-channels-last
    moves that transpose into the ops computing the input), the taps' ``[N, P, Ci]`` windows concatenated along
    the channels (tap-major: ``[N, P, K*Ci]``), one ``dot_general`` with the kernel as ``[K*Ci, O]`` (transposed
    to ``[spatial..., Ci, O]`` once, which fxla-param-layout folds into a stored weight, so the reshape is free;
    per-tap dots would make XLA copy each tap's weight slice), and the ``[N, spatial..., O]`` result transposed
    back to ``[N, O, spatial...]`` (which fxla-channels-last sinks into its users)."""
    elem = p["elem"]
    (batch, *_), (out, ci, *kernel), out_size = p["x"], p["w"], p["y"][2:]
    n, positions, taps = len(kernel), int(np.prod(out_size)), int(np.prod(kernel))
    x = _padded(_channels_last(x, p), p, last=True)
    windows = []
    for start, limit in _windows(p):
        window = hlo.SliceOp(x, [0] + start + [0], [batch] + limit + [ci], [1] + p["stride"] + [1]).result
        windows.append(_reshape(window, [batch, positions, ci], elem))
    patches = windows[0] if len(windows) == 1 else hlo.ConcatenateOp(windows, 2).result
    kernel_matrix = _reshape(_tap_major(w, n), [taps * ci, out], elem)
    dims = hlo.DotDimensionNumbers.get(lhs_batching_dimensions=[], rhs_batching_dimensions=[],
                                       lhs_contracting_dimensions=[2], rhs_contracting_dimensions=[0])
    total = hlo.DotGeneralOp(_tensor([batch, positions, out], elem), patches, kernel_matrix, dims).result
    total = _reshape(total, [batch] + out_size + [out], elem)
    return _permute(total, [0, n + 1] + list(range(1, n + 1)), elem)


def _permute(v, perm, elem):
    """``v`` transposed by ``perm``: a reshape where only size-1 dims move (a ``[N, C, 1, 1]`` squeeze-and-
    excitation input), so that no transpose is left for fxla-channels-last to move."""
    shape = ir.RankedTensorType(v.type).shape
    if [d for d in perm if shape[d] != 1] == [d for d in range(len(shape)) if shape[d] != 1]:
        return _reshape(v, [shape[d] for d in perm], elem)
    return hlo.TransposeOp(v, perm).result


def _rewrite_chosen(module, choose, few_positions: bool) -> int:
    """Rewrite (in place, on every function of ``module``) each eligible convolution for which ``choose(params)``
    gives a rewrite (``rewrite(op, params)``); returns how many it rewrote."""
    root = module.operation if isinstance(module, ir.Module) else module
    found = []

    def collect(op):
        if op.name == hlo.ConvolutionOp.OPERATION_NAME:
            params = _eligible(op, few_positions=few_positions)
            rewrite = None if params is None else choose(params)
            if rewrite is not None:
                found.append((op, params, rewrite))
        return ir.WalkResult.ADVANCE

    with root.context:
        root.walk(collect)
        for op, params, rewrite in found:
            rewrite(op, params)
    return len(found)


def grouped_conv_pass(module, *, cost_model: bool = False, small_dots: bool = True) -> int:
    """The ``fxla-grouped-conv`` pass (see the module docstring), in place on every function of ``module``;
    returns how many convolutions it rewrote.  ``cost_model``: rewrite only where :func:`pays` (``fxla.compile``);
    without it every eligible convolution is rewritten (``fxla-opt``, tests)."""
    def choose(params):
        ci, groups = params["w"][1], params["groups"]
        if not cost_model or groups == 1 or pays(ci):
            return _rewrite
        if pays_block_diagonal(ci, groups, _macs(params)) and not _overhangs(params) \
                and not _few_positions(params):
            # (XLA's dense convolution is itself slow where its kernel overhangs the input or it computes few
            # positions: the im2col cases above, which a convolution inside the guard's branch would miss)
            return rewrite_block_diagonal
        return None
    return _rewrite_chosen(module, choose, few_positions=small_dots)


def block_diagonal_conv_pass(module) -> int:
    """The ``fxla-block-diagonal-conv`` pass: every eligible grouped convolution with several input channels per
    group as a guarded dense convolution with a block-diagonal kernel (:mod:`fxla.lowering.block_diagonal`),
    unconditionally (``fxla-opt`` and tests; ``fxla.compile`` takes the form through ``fxla-grouped-conv``'s cost
    model).  Returns how many it rewrote."""
    return _rewrite_chosen(module, lambda p: rewrite_block_diagonal if p["groups"] > 1 and p["w"][1] > 1 else None,
                           few_positions=False)
