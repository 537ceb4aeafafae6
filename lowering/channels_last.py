"""``fxla-channels-last``: move the transposes between channels-first and channels-last to where they cost nothing.

fxla's CPU layout passes compute some values channels-last (a depthwise convolution's taps, a pool): they take
their input through ``stablehlo.transpose %x, dims = [0, 2, ..., r-1, 1]`` and give their result back in torch's
``[N, C, spatial...]`` order through ``dims = [0, r-1, 1, ..., r-2]``.  XLA CPU fuses such a transpose into the
loop next to it: after the taps it made the taps' loop walk the channels-first output and read its inputs with a
stride of C elements (EfficientNet-B0's 5x5 depthwise + SiLU fusions ran 3-5x slower than channels-last), and
before them it gave the expansion convolution's BatchNorm + SiLU a channels-first result that the taps then read
with that stride (measured on one ``[1, 672, 14, 14]`` block in JAX: 2.27 ms as fxla wrote it, 1.03 ms
channels-last throughout).  This pass makes the channels-last order explicit and moves the transposes to where
they cost nothing, rewriting the ops they pass to work on channels-last values, in three steps:

**Up** (to channels-last, first): a transpose whose operand is used only so transposed moves into the op that
computes it -- an elementwise op (its operands are had channels-last as in the down step below; transposes of
them move on up), a ``broadcast_in_dim`` (its dims mapped) or a ``convolution`` (the permutation goes into its
output dimension numbers, so it writes channels-last itself).  An elementwise op is only rewritten when each of
its operands can be had channels-last without a copy: a scalar, a broadcast (re-emitted), a constant, a
channels-first view of channels-last data, or a value computed from a convolution.

    %c = stablehlo.convolution(...) ->[b, f, 0, 1]         %c = stablehlo.convolution(...) ->[b, 0, 1, f]
    %y = stablehlo.logistic %c                       ==>    %y = stablehlo.logistic %c
    %t = stablehlo.transpose %y, dims = [0, 2, 3, 1]

**Convolutions write channels-last**: every other convolution with a ``[b, f, spatial...]`` result gets a
``[b, spatial..., f]`` one (XLA CPU's own layout for it) and a transpose back for its uses, which moves down.

**Down** (to channels-first): a transpose ``%t = stablehlo.transpose %s, dims = [0, r-1, 1, ...]`` moves below
each use that can work on ``%s`` instead:

* an elementwise op (:data:`~fxla.lowering.pool_layout.ELEMENTWISE`) each of whose other operands is a scalar, a
  value transposed the same way (its source is used), a ``broadcast_in_dim`` (re-emitted with its dims mapped), a
  constant, or a value computed from a channels-first convolution (transposed to channels-last: XLA lays a
  convolution's result out channels-last, so that transpose is a bitcast); its result gets a transpose back for
  its own uses, which moves on down;
* a ``reduce_window`` of ``%t`` alone (window, strides, dilations and padding permuted), likewise;
* a ``reduce`` of ``%t`` alone whose kept dims stay in the same order (a global mean over the spatial dims: its
  result is the same tensor);
* a ``convolution`` whose input is ``%t`` (the permutation moves into its input dimension numbers), a
  ``broadcast_in_dim`` of it (into its dims), or a ``reshape`` of it when the transpose moves only size-1 dims
  (a pooled ``[N, 1, 1, C]``: the same elements in the same order).

Every other use (a reshape, a dot, the function's result, ...) keeps ``%t``.  The values are unchanged: each
rewritten op computes the same elements, only stored in another order; reductions sum the same elements in the
same window order per output.

It is a choice for XLA CPU, so it is not part of the portable pipeline: ``fxla.compile`` runs it for a CPU device
among the device layout passes (:func:`fxla.lowering.passes.device_layouts`), after ``fxla-grouped-conv`` and
``fxla-pool-layout`` (whose transposes it moves) and before ``fxla-param-layout``; ``fxla-opt
--fxla-channels-last`` runs it on a file.
"""
from __future__ import annotations

from typing import List, Optional

from fxla.dialects.mlir import hlo, ir

from .param_layout import _permuted_type, inverse, map_conv_dimensions
from .pool_layout import (ELEMENTWISE, _attr, _channels_first_conv, _from_convolution, _ints, _op, _padding, _shape,
                          _to_channels_first, _to_channels_last, permute_window)


def _source(value, perm: List[int]):
    """The channels-last value that ``value`` is a ``stablehlo.transpose`` of by ``perm``, or None."""
    op = _op(value)
    if op is None or op.name != hlo.TransposeOp.OPERATION_NAME or _ints(op.attributes["permutation"]) != perm:
        return None
    return op.operands[0]


def _channels_last_operand(value, perm: List[int]):
    """A builder of ``value`` (an operand of an elementwise op, shaped like its result) in the channels-last order,
    or None when it cannot be had for free; called at the op's insertion point."""
    source = _source(value, perm)
    if source is not None:
        return lambda: source
    if _shape(value) is None or not _shape(value):
        return lambda: value                           # a scalar (clamp's bounds)
    op = _op(value)
    last = inverse(perm)
    if op is not None and op.name == hlo.BroadcastInDimOp.OPERATION_NAME:
        dims = _ints(op.attributes["broadcast_dimensions"])
        return lambda: hlo.BroadcastInDimOp(_permuted_type(value.type, last), op.operands[0],
                                            [perm[d] for d in dims]).result
    if (op is not None and op.name == hlo.ConstantOp.OPERATION_NAME) or _from_convolution(value):
        return lambda: hlo.TransposeOp(value, last).result
    return None


def _retype(op, perm: List[int]):
    """Give ``op``'s one result the channels-last type and put a transpose back to channels-first after it for
    its uses."""
    result = op.results[0]
    uses = [(use.owner, use.operand_number) for use in result.uses]
    result.set_type(_permuted_type(result.type, inverse(perm)))
    with op.location, ir.InsertionPoint.after(op):
        back = hlo.TransposeOp(result, perm).result
    for owner, index in uses:
        owner.operands[index] = back


def _operands_channels_last(op, perm: List[int]) -> bool:
    """Give elementwise ``op`` each of its operands in the channels-last order (``perm``: channels-last to
    channels-first; see :func:`_channels_last_operand`); False, and ``op`` untouched, where one cannot be had so
    without a copy."""
    shape = _shape(op.results[0])
    with op.location, ir.InsertionPoint(op):
        builders = [_channels_last_operand(o, perm) if _shape(o) == shape else
                    (lambda o=o: o) if not _shape(o) else None for o in op.operands]
        if any(b is None for b in builders):
            return False
        for index, build in enumerate(builders):
            op.operands[index] = build()
    return True


def _elementwise(op, perm: List[int]) -> bool:
    if len(op.results) != 1 or _shape(op.results[0]) is None or not _operands_channels_last(op, perm):
        return False
    _retype(op, perm)
    return True


def _reduce_window(op, perm: List[int]) -> bool:
    if len(op.operands) != 2 or len(op.results) != 1:
        return False
    pads = _padding(op)
    op.operands[0] = _source(op.operands[0], perm)
    permute_window(op, inverse(perm), pads)
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
    map_conv_dimensions(op, input=perm)
    op.operands[0] = _source(op.operands[0], perm)
    return True


def _broadcast(op, perm: List[int]) -> bool:
    dims = _ints(op.attributes["broadcast_dimensions"])
    op.attributes["broadcast_dimensions"] = ir.DenseI64ArrayAttr.get([dims[i] for i in inverse(perm)])
    op.operands[0] = _source(op.operands[0], perm)
    return True


def _reshape(op, perm: List[int]) -> bool:
    """A reshape of a transpose that moves only size-1 dims (the ``[N, 1, 1, C]`` result of a global pool) reads
    the same elements in the same order from the transpose's operand."""
    source = _source(op.operands[0], perm)
    shape = _shape(source)
    if shape is None or [p for p in perm if shape[p] != 1] != sorted(p for p in perm if shape[p] != 1):
        return False
    op.operands[0] = source
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
    if name == hlo.BroadcastInDimOp.OPERATION_NAME:
        return _broadcast(op, perm)
    if name == hlo.ReshapeOp.OPERATION_NAME:
        return _reshape(op, perm)
    return False


def _seed(op, toward=_to_channels_first) -> Optional[List[int]]:
    """The permutation of a ``stablehlo.transpose`` (rank >= 3) from channels-last to channels-first (``toward``
    :func:`_to_channels_last`: the other way), else None."""
    if op.name != hlo.TransposeOp.OPERATION_NAME:
        return None
    shape = _shape(op.results[0])
    if shape is None or len(shape) < 3:
        return None
    perm = _ints(op.attributes["permutation"])
    return perm if perm == toward(len(shape)) else None


def _hoistable(value, perm: List[int]) -> bool:
    """Whether every use of ``value`` is a ``stablehlo.transpose`` of it by ``perm``."""
    uses = [u.owner for u in value.uses]
    return bool(uses) and all(op.name == hlo.TransposeOp.OPERATION_NAME and _ints(op.attributes["permutation"]) ==
                              perm for op in uses)


def _hoist_into(value, perm: List[int], erased: set) -> bool:
    """Rewrite the op defining ``value`` (whose every use is a transpose by ``perm``) to compute the transposed
    value itself; whether it was.  The results of the transposes it erases are added to ``erased``."""
    op = _op(value)
    if op is None or len(op.results) != 1:
        return False
    first = inverse(perm)
    if op.name in ELEMENTWISE:
        if not _operands_channels_last(op, first):
            return False
    elif op.name == hlo.BroadcastInDimOp.OPERATION_NAME:
        op.attributes["broadcast_dimensions"] = ir.DenseI64ArrayAttr.get(
            [first[d] for d in _ints(op.attributes["broadcast_dimensions"])])
    elif op.name == hlo.ConvolutionOp.OPERATION_NAME:
        map_conv_dimensions(op, output=first)
    else:
        return False
    transposes = [u.owner for u in value.uses]
    value.set_type(_permuted_type(value.type, perm))
    for transpose in transposes:
        transpose.results[0].replace_all_uses_with(value)
        erased.add(transpose.results[0])
        transpose.erase()
    return True


def _hoist(root) -> int:
    """Move every channels-first-to-channels-last transpose up into the ops that compute its operand, as long as
    they are elementwise ops, broadcasts or a convolution whose results are used only so transposed; returns how
    many ops now compute channels-last."""
    hoisted = 0
    while True:
        found = {}

        def collect(op):
            perm = _seed(op, toward=_to_channels_last)
            if perm is not None:
                found.setdefault(op.operands[0], perm)
            return ir.WalkResult.ADVANCE

        root.walk(collect)
        # (a value found may be the result of a transpose an earlier hoist of this round erased, as in
        # `h @ h.transpose(1, 2)` after a convolution: it is skipped, never read: its op is gone)
        erased: set = set()
        rounds = sum(1 for value, perm in found.items()
                     if value not in erased and _hoistable(value, perm) and _hoist_into(value, perm, erased))
        if not rounds:
            return hoisted
        hoisted += rounds


def _convolution_outputs(root) -> int:
    """Give every convolution with a channels-first result ``[b, f, spatial...]`` a channels-last one and a
    transpose back (which the down phase then moves on); returns how many."""
    found = []

    def collect(op):
        if op.name == hlo.ConvolutionOp.OPERATION_NAME and _channels_first_conv(op) and \
                len(_shape(op.results[0]) or ()) >= 3:
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(collect)
    for op in found:
        perm = _to_channels_first(len(_shape(op.results[0])))
        map_conv_dimensions(op, output=perm)
        _retype(op, perm)
    return len(found)


def channels_last_pass(module) -> int:
    """The ``fxla-channels-last`` pass (see the module docstring), in place on every function of ``module``;
    returns how many ops it rewrote to work channels-last."""
    root = module.operation if isinstance(module, ir.Module) else module
    seeds: List = []

    def collect(op):
        if _seed(op) is not None:
            seeds.append(op)
        return ir.WalkResult.ADVANCE

    with root.context, ir.Location.unknown():
        rewritten = _hoist(root) + _convolution_outputs(root)
        root.walk(collect)
        pending = list(seeds)
        while pending:
            transpose = pending.pop(0)
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
        _erase_dead(root)
    return rewritten


#: ops the pass leaves without uses (the transposes it moved, the broadcasts and constants it re-emitted)
_DEAD = frozenset(op.OPERATION_NAME for op in (hlo.TransposeOp, hlo.BroadcastInDimOp, hlo.ConstantOp))


def _erase_dead(root) -> None:
    """Erase the transposes, broadcasts and constants left without uses (users before their operands)."""
    while True:
        dead = []

        def collect(op):
            if op.name in _DEAD and not list(op.results[0].uses):
                dead.append(op)
            return ir.WalkResult.ADVANCE

        root.walk(collect)
        if not dead:
            return
        for op in reversed(dead):
            op.erase()
