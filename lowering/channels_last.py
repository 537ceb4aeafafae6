"""``fxla-channels-last``: sink channels-last-to-channels-first transposes into the ops that use them.

fxla's CPU layout passes compute some values channels-last (a depthwise convolution's taps, a pool) and put them
back in torch's ``[N, C, spatial...]`` order with ``stablehlo.transpose %s, dims = [0, r-1, 1, ..., r-2]``.  XLA
CPU fuses that transpose into the loop that computes ``%s``: the fused loop then walks the channels-first output
and reads its channels-last inputs with a stride on every element, so the 25 taps of an EfficientNet-B0 5x5
depthwise convolution ran 5x slower than the same loop written channels-last, and the squeeze-and-excitation block
after it read and wrote channels-first copies (measured on one ``[1, 672, 14, 14]`` block in JAX: 2.27 ms as fxla
wrote it, 1.03 ms channels-last throughout).  This pass moves each such transpose below the ops that use it,
rewriting those ops to work on the channels-last value, until it reaches an op that must see channels-first data
(where the transpose stays):

    %t = stablehlo.transpose %s, dims = [0, 3, 1, 2]          (s: [N, H, W, C], t: [N, C, H, W])
    %y = stablehlo.multiply %t, %b                             (b: broadcast_in_dim %v, dims = [1])
  becomes
    %y' = stablehlo.multiply %s, %b'                           (b': broadcast_in_dim %v, dims = [3])
    %y = stablehlo.transpose %y', dims = [0, 3, 1, 2]          (for the uses that still want channels-first)

A use of a transposed value ``%t`` is rewritten when it is

* an elementwise op (:data:`~fxla.lowering.pool_layout.ELEMENTWISE`) each of whose other operands is a scalar, a
  value transposed the same way (its source is used), a ``broadcast_in_dim`` (re-emitted with its dims mapped), a
  constant, or a value computed from a channels-first convolution (transposed to channels-last: XLA lays a
  convolution's result out channels-last, so that transpose is a bitcast);
* a ``reduce_window`` of ``%t`` alone (window, strides, dilations and padding permuted);
* a ``reduce`` of ``%t`` alone whose kept dims stay in the same order (a global mean over the spatial dims: its
  result is the same tensor);
* a ``convolution`` whose input is ``%t`` (the permutation moves into its input dimension numbers).

Every other use (a reshape, a dot, the function's result, ...) keeps ``%t``.  The values are unchanged: each
rewritten op computes the same elements, only stored in another order; reductions sum the same elements in
the same window order per output.

It is a choice for XLA CPU, so it is not part of the portable pipeline: ``fxla.compile`` runs it for a CPU device
among the device layout passes (:func:`fxla.lowering.passes.device_layouts`), after ``fxla-grouped-conv`` and
``fxla-pool-layout`` (whose transposes it sinks) and before ``fxla-param-layout``; ``fxla-opt
--fxla-channels-last`` runs it on a file.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from fxla.dialects.mlir import hlo, ir

from .param_layout import _permuted_type
from .pool_layout import ELEMENTWISE, _attr, _from_convolution, _ints, _padding, _shape, _to_channels_first

#: reduce_window attributes indexed by the operand's dims
_WINDOW_ATTRS = ("window_dimensions", "window_strides", "base_dilations", "window_dilations")


def _op(value):
    """The op that defines ``value``, or None for a block argument."""
    return None if isinstance(value.owner, ir.Block) else value.owner.operation


def _source(value, perm: List[int]):
    """The channels-last value that ``value`` is a ``stablehlo.transpose`` of by ``perm``, or None."""
    op = _op(value)
    if op is None or op.name != hlo.TransposeOp.OPERATION_NAME or _ints(op.attributes["permutation"]) != perm:
        return None
    return op.operands[0]


def _inverse(perm: List[int]) -> List[int]:
    return [int(i) for i in np.argsort(perm)]


def _channels_last_operand(value, perm: List[int]):
    """A builder of ``value`` (an operand of an elementwise op, shaped like its result) in the channels-last order,
    or None when it cannot be had for free; called at the op's insertion point."""
    source = _source(value, perm)
    if source is not None:
        return lambda: source
    if _shape(value) is None or not _shape(value):
        return lambda: value                           # a scalar (clamp's bounds)
    op = _op(value)
    inverse = _inverse(perm)
    if op is not None and op.name == hlo.BroadcastInDimOp.OPERATION_NAME:
        dims = _ints(op.attributes["broadcast_dimensions"])
        return lambda: hlo.BroadcastInDimOp(_permuted_type(value.type, inverse), op.operands[0],
                                            [perm[d] for d in dims]).result
    if (op is not None and op.name == hlo.ConstantOp.OPERATION_NAME) or _from_convolution(value):
        return lambda: hlo.TransposeOp(value, inverse).result
    return None


def _retype(op, perm: List[int]):
    """Give ``op``'s one result the channels-last type and put a transpose back to channels-first after it for
    its uses."""
    result = op.results[0]
    uses = [(use.owner, use.operand_number) for use in result.uses]
    result.set_type(_permuted_type(result.type, _inverse(perm)))
    with op.location, ir.InsertionPoint.after(op):
        back = hlo.TransposeOp(result, perm).result
    for owner, index in uses:
        owner.operands[index] = back


def _elementwise(op, perm: List[int]) -> bool:
    shape = _shape(op.results[0])
    if len(op.results) != 1 or shape is None:
        return False
    with op.location, ir.InsertionPoint(op):
        builders = [_channels_last_operand(o, perm) if _shape(o) == shape else
                    (lambda o=o: o) if not _shape(o) else None for o in op.operands]
        if any(b is None for b in builders):
            return False
        replaced = [_op(o) for o in op.operands]
        for index, build in enumerate(builders):
            op.operands[index] = build()
    for producer in replaced:
        _erase_if_dead(producer)
    _retype(op, perm)
    return True


def _reduce_window(op, perm: List[int]) -> bool:
    if len(op.operands) != 2 or len(op.results) != 1:
        return False
    inverse = _inverse(perm)
    pads = _padding(op)
    op.operands[0] = _source(op.operands[0], perm)
    for name in _WINDOW_ATTRS:
        values = _ints(_attr(op, name))
        if values:
            op.attributes[name] = ir.DenseI64ArrayAttr.get([values[p] for p in inverse])
    if _attr(op, "padding") is not None:
        op.attributes["padding"] = ir.DenseIntElementsAttr.get(
            np.asarray([pads[p] for p in inverse], dtype=np.int64),
            type=ir.RankedTensorType.get([len(pads), 2], ir.IntegerType.get_signless(64)))
    _retype(op, perm)
    return True


def _reduce(op, perm: List[int]) -> bool:
    if len(op.operands) != 2:
        return False
    reduced = _ints(op.attributes["dimensions"])
    kept = [d for d in range(len(perm)) if d not in reduced]
    if [perm[d] for d in kept] != sorted(perm[d] for d in kept):
        return False                                   # the result would be transposed: left alone
    op.operands[0] = _source(op.operands[0], perm)
    op.attributes["dimensions"] = ir.DenseI64ArrayAttr.get(sorted(perm[d] for d in reduced))
    return True


def _convolution(op, perm: List[int]) -> bool:
    if op.operands[1] == op.operands[0]:
        return False
    dn = hlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
    op.attributes["dimension_numbers"] = hlo.ConvDimensionNumbers.get(
        input_batch_dimension=perm[dn.input_batch_dimension],
        input_feature_dimension=perm[dn.input_feature_dimension],
        input_spatial_dimensions=[perm[d] for d in _ints(dn.input_spatial_dimensions)],
        kernel_input_feature_dimension=dn.kernel_input_feature_dimension,
        kernel_output_feature_dimension=dn.kernel_output_feature_dimension,
        kernel_spatial_dimensions=_ints(dn.kernel_spatial_dimensions),
        output_batch_dimension=dn.output_batch_dimension,
        output_feature_dimension=dn.output_feature_dimension,
        output_spatial_dimensions=_ints(dn.output_spatial_dimensions))
    op.operands[0] = _source(op.operands[0], perm)
    return True


def _sink_into(op, operand_number: int, perm: List[int]) -> bool:
    """Rewrite ``op`` (a use of a transposed value as operand ``operand_number``) to work channels-last; whether
    it was."""
    name = op.name
    if name in ELEMENTWISE:
        return _elementwise(op, perm)
    if operand_number == 0 and name == hlo.ReduceWindowOp.OPERATION_NAME:
        return _reduce_window(op, perm)
    if operand_number == 0 and name == hlo.ReduceOp.OPERATION_NAME:
        return _reduce(op, perm)
    if operand_number == 0 and name == hlo.ConvolutionOp.OPERATION_NAME:
        return _convolution(op, perm)
    return False


def _seed(op) -> Optional[List[int]]:
    """The permutation of a channels-last-to-channels-first ``stablehlo.transpose`` (rank >= 3), else None."""
    if op.name != hlo.TransposeOp.OPERATION_NAME:
        return None
    shape = _shape(op.results[0])
    if shape is None or len(shape) < 3:
        return None
    perm = _ints(op.attributes["permutation"])
    return perm if perm == _to_channels_first(len(shape)) else None


def channels_last_pass(module) -> int:
    """The ``fxla-channels-last`` pass (see the module docstring), in place on every function of ``module``;
    returns how many ops it rewrote to work channels-last."""
    root = module.operation if isinstance(module, ir.Module) else module
    seeds: List = []

    def collect(op):
        if _seed(op) is not None:
            seeds.append(op)
        return ir.WalkResult.ADVANCE

    rewritten = 0
    with root.context, ir.Location.unknown():
        root.walk(collect)
        pending, transposes = list(seeds), []
        while pending:
            transpose = pending.pop(0)
            transposes.append(transpose)
            perm = _ints(transpose.attributes["permutation"])
            for use in [(u.owner, u.operand_number) for u in transpose.results[0].uses]:
                owner, index = use
                if owner.operands[index] != transpose.results[0]:
                    continue                           # already rewritten (it used the value twice)
                if _sink_into(owner, index, perm):
                    rewritten += 1
                    after = owner.results[0].uses if len(owner.results) == 1 else []
                    pending.extend(u.owner for u in after if _seed(u.owner) == perm
                                   and u.owner.operands[0] == owner.results[0])
        for op in reversed(transposes):
            if not list(op.results[0].uses):
                producer = _op(op.operands[0])
                op.erase()
                _erase_if_dead(producer)
    return rewritten


def _erase_if_dead(op) -> None:
    """Erase a broadcast or constant left without uses by a rewrite."""
    if op is not None and op.name in (hlo.BroadcastInDimOp.OPERATION_NAME, hlo.ConstantOp.OPERATION_NAME) \
            and not list(op.results[0].uses):
        op.erase()
