"""Index bounds: an index that is out of range where it can be known at compile time is an error, not a clamp.

XLA's gathers clamp an out-of-range index into range (and its scatters drop such updates), where eager PyTorch
raises ``IndexError: index out of range in self``: an embedding of positions past the table's rows (a sequence
longer than ``max_position_embeddings``) would silently repeat the last row.  Before conversion to StableHLO,
:func:`check_index_bounds` finds, for every ``fxla.index_select``, ``fxla.gather`` and ``fxla.scatter``, the
values its index can take when they follow from the program itself -- an ``fxla.arange`` (positions), a constant
(``x[[0, 2]]``), through reshapes, broadcasts, transposes, integer conversions and shifts by a constant -- and
raises :class:`IndexOutOfRangeError` at the op's source line when one is out of range.  Indices read from the
inputs' data (token ids) are not known here and are not checked yet (README, "Limits of this version").
"""
from __future__ import annotations

import re
from typing import Optional, Tuple

import numpy as np

from fxla.dialects.fxla import ops, sig_of
from fxla.dialects.fxla.ops import lookup
from fxla.dialects.mlir import ir, location_parts

from .errors import LoweringError

__all__ = ["IndexOutOfRangeError", "check_index_bounds"]


class IndexOutOfRangeError(LoweringError, IndexError):
    """An index the program computes is outside the dim it indexes (eager raises ``IndexError`` there too)."""


#: value-preserving ops: the index values are their first operand's
_SAME = frozenset(op.name for op in (ops.reshape, ops.expand, ops.permute, ops.flip, ops.detach, ops.no_gradient,
                                     ops.convert))
_INDEXED = {ops.index_select.name: 1, ops.gather.name: 1, ops.scatter.name: 1}     # op -> its index operand


def _bounds(value: ir.Value, depth: int = 0) -> Optional[Tuple[int, int]]:
    """``(low, high)`` of the integer values ``value`` takes, exactly, when the program determines them; else
    ``None``.  ``(0, -1)`` for an empty tensor."""
    if depth > 64 or isinstance(value.owner, ir.Block):
        return None
    op = value.owner.operation if not isinstance(value.owner, ir.Operation) else value.owner
    name = op.name
    sig = sig_of(value.type)
    if sig is None or not (sig.elem.startswith("i") or sig.elem.startswith("ui")) or sig.elem == "i1":
        return None
    if name == ops.arange.name:
        start, step = ir.FloatAttr(op.attributes["start"]).value, ir.FloatAttr(op.attributes["step"]).value
        length = ir.IntegerAttr(op.attributes["length"]).value
        if length <= 0:
            return (0, -1)
        first, last = int(start), int(start + (length - 1) * step)
        return (min(first, last), max(first, last))
    if name == ops.constant.name:
        values = np.asarray(ir.DenseIntElementsAttr(op.attributes["value"]))
        return (0, -1) if values.size == 0 else (int(values.min()), int(values.max()))
    if name in _SAME:
        if name == ops.convert.name:
            source = sig_of(op.operands[0].type)
            if source is None or not source.elem.startswith("i") or source.elem == "i1":
                return None
        return _bounds(op.operands[0], depth + 1)
    if name in (ops.add.name, ops.sub.name) and sig.shape == sig_of(op.operands[0].type).shape:
        shift = _scalar(op.operands[1])             # (x + c, x - c: exact shifts of x's values)
        inner = _bounds(op.operands[0], depth + 1)
        if shift is None or inner is None or inner[0] > inner[1]:
            return None if inner is None or shift is None else inner
        shift = shift if name == ops.add.name else -shift
        return (inner[0] + shift, inner[1] + shift)
    return None


def _scalar(value: ir.Value) -> Optional[int]:
    """The integer a splat constant holds, else ``None``."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    op = owner.operation if not isinstance(owner, ir.Operation) else owner
    if op.name != ops.constant.name:
        return None
    attr = ir.DenseElementsAttr(op.attributes["value"])
    if not attr.is_splat or not isinstance(ir.RankedTensorType(attr.type).element_type, ir.IntegerType):
        return None
    return int(np.asarray(ir.DenseIntElementsAttr(attr)).reshape(-1)[0])


def check_index_bounds(module: ir.Module) -> None:
    """Raise :class:`IndexOutOfRangeError` for the first index op whose index is known to leave its dim (see the
    module docstring)."""
    for fn in module.body.operations:
        for block in fn.regions[0].blocks if len(fn.regions) else ():
            for op in block.operations:
                operand = _INDEXED.get(op.operation.name)
                if operand is None:
                    continue
                _check(op.operation, operand)


def _check(op: ir.Operation, operand: int) -> None:
    opdef = lookup(op.name)
    values, attrs = opdef.read(op)
    bounds = _bounds(values[operand])
    if bounds is None or bounds[0] > bounds[1]:
        return
    size = sig_of(values[0].type).shape[attrs["dim"] % sig_of(values[0].type).rank]
    if 0 <= bounds[0] and bounds[1] < size:
        return
    where = location_parts(op.location)
    named = re.match(r'loc\("([^"(]+)"', str(op.location))
    node = named.group(1) if named else ""
    at = f"\n  at {where[0]}:{where[1]}:{where[2]}" if where else ""
    bad = bounds[1] if bounds[1] >= size else bounds[0]
    raise IndexOutOfRangeError(
        f"index out of range: {'%' + node if node else op.name} reads index {bad} of a dim of size {size} (its "
        f"indices span [{bounds[0]}, {bounds[1]}]){at}\nwhy: eager PyTorch raises IndexError here; XLA would clamp "
        f"the index and silently read another element\nfix: keep the indices within the dim: for positions, a "
        f"sequence no longer than the position table (max_position_embeddings)")
