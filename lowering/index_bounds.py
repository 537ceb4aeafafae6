"""Index bounds: an index that is out of range where it can be known at compile time is an error, not a clamp.

XLA's gathers clamp an out-of-range index into range (and its scatters drop such updates), where eager PyTorch
raises ``IndexError: index out of range in self``: an embedding of positions past the table's rows (a sequence
longer than ``max_position_embeddings``) would silently repeat the last row.  Before conversion to StableHLO,
:func:`check_index_bounds` finds, for every ``fxla.index_select``, ``fxla.gather`` and ``fxla.scatter``, the
values its index can take when they follow from the program itself -- an ``fxla.arange`` (positions), a constant
(``x[[0, 2]]``), through reshapes, broadcasts, transposes, integer conversions and shifts by a constant -- and
raises :class:`IndexOutOfRangeError` at the op's source line when one is out of range.

Indices that are a tensor input's values (token ids into an embedding, labels into a loss's gather, ``x[idx]``)
are checked on the call's inputs before the program runs (:func:`input_index_checks` finds them,
:func:`check_input_indices` checks a call).  Indices the program computes from the data otherwise are checked by
the program itself, on every call: the lowering rules of the indexing ops make them value checks
(:func:`fxla.lowering.value_checks.check_indices`), which raise ``IndexCheckError`` (an ``IndexError``).
"""
from __future__ import annotations

import re
from typing import Any, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from fxla.dialects.fxla import ops, sig_of
from fxla.dialects.fxla.ops import lookup
from fxla.dialects.fxla.symbolic import SYM_ATTR
from fxla.dialects.fxla.types import bit_width
from fxla.dialects.mlir import ir, location_parts

from .errors import LoweringError

__all__ = ["IndexOutOfRangeError", "check_index_bounds", "InputIndexCheck", "input_index_checks",
           "check_input_indices"]


class IndexOutOfRangeError(LoweringError, IndexError):
    """An index the program computes is outside the dim it indexes (eager raises ``IndexError`` there too)."""


#: value-preserving ops: the index values are their first operand's
#: ops whose result holds (some of) their first operand's values, in its element type, and no others
VALUE_KEEPING = frozenset(op.name for op in (ops.reshape, ops.expand, ops.permute, ops.flip, ops.detach,
                                             ops.no_gradient, ops.keep_history))
_SAME = VALUE_KEEPING | {ops.convert.name}
_INDEXED = {ops.index_select.name: 1, ops.gather.name: 1, ops.scatter.name: 1}     # op -> its index operand
#: the value-preserving ops that keep every element where it is (a region of their result is one of their operand)
_ELEMENTWISE_SAME = frozenset(op.name for op in (ops.detach, ops.no_gradient, ops.keep_history, ops.convert))


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
        shift = splat_value(op.operands[1])             # (x + c, x - c: exact shifts of x's values)
        inner = _bounds(op.operands[0], depth + 1)
        if shift is None or inner is None or inner[0] > inner[1]:
            return None if inner is None or shift is None else inner
        shift = shift if name == ops.add.name else -shift
        return (inner[0] + shift, inner[1] + shift)
    return None


def splat_value(value: ir.Value) -> Optional[int]:
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


def _dim_size(value: ir.Value, dim: int) -> int:
    """The size of ``value``'s dim ``dim`` (a 0-d operand is indexed as one element, as torch does)."""
    shape = sig_of(value.type).shape
    return shape[dim % len(shape)] if shape else 1


def _index_ops(module: ir.Module) -> Iterator[tuple]:
    """``(op, index operand, size of the indexed dim, node name, (file, line, col) or None)`` of every index op."""
    body = module.body if isinstance(module, ir.Module) else module.regions[0].blocks[0]   # (a module or its op)
    for fn in body.operations:
        for block in fn.regions[0].blocks if len(fn.regions) else ():
            for op in block.operations:
                operand = _INDEXED.get(op.operation.name)
                if operand is None:
                    continue
                op = op.operation
                values, attrs = lookup(op.name).read(op)
                named = re.match(r'loc\("([^"]+)"\(', str(op.location))      # (a NameLoc: the graph node)
                yield (op, values[operand], _dim_size(values[0], attrs["dim"]), named.group(1) if named else "",
                       location_parts(op.location))


def check_index_bounds(module: ir.Module) -> None:
    """Raise :class:`IndexOutOfRangeError` for the first index op whose index is known to leave its dim (see the
    module docstring)."""
    for op, index, size, node, where in _index_ops(module):
        bounds = _bounds(index)
        if bounds is None or bounds[0] > bounds[1] or (0 <= bounds[0] and bounds[1] < size):
            continue
        at = f"\n  at {where[0]}:{where[1]}:{where[2]}" if where else ""
        bad = bounds[1] if bounds[1] >= size else bounds[0]
        raise IndexOutOfRangeError(
            f"index out of range: {'%' + node if node else op.name} reads index {bad} of a dim of size {size} (its "
            f"indices span [{bounds[0]}, {bounds[1]}]){at}\nwhy: eager PyTorch raises IndexError here; XLA would "
            f"clamp the index and silently read another element\nfix: keep the indices within the dim: for "
            f"positions, a sequence no longer than the position table (max_position_embeddings)")


def known_bounds(value: ir.Value) -> Optional[Tuple[int, int]]:
    """``(low, high)`` of the integer values ``value`` takes where the program itself determines them (positions,
    constants, through reshapes and shifts by a constant), else ``None``; ``(0, -1)`` for an empty tensor."""
    try:
        return _bounds(value)
    except (ValueError, TypeError):          # (a polymorphic op's symbolic attribute: not a known number)
        return None



def indexes_input(value: ir.Value, n_inputs: int, exempt: Optional[int] = None) -> bool:
    """Whether ``value``'s values are a tensor input's (of the first ``n_inputs`` block arguments; through the ops
    :func:`input_index_checks` sees through), which every call checks before the program runs; ``exempt``: the
    value the index op will let through (a loss's ``ignore_index``, which padding may have added)."""
    return _input_of(value, n_inputs, exempt=exempt) is not None


class InputIndexCheck(NamedTuple):
    """Tensor input ``input`` (its number among the program's tensor inputs) is used as an index of a dim of size
    ``high`` (or, wrapped like ``x[idx]``, of ``[low, high)``): its values must lie in ``[low, high)``.  ``node``
    and ``where`` name the op (graph node, ``(file, line, col)``)."""

    input: int
    low: int
    high: int
    node: str
    where: Optional[Tuple[str, int, int]]
    exempt: Optional[int] = None           # a value the program replaces before indexing (a loss's ignore_index)
    #: the part of the input the op reads, ``(start, stop)`` per dim (a slice of it, HF's shifted labels), or
    #: ``None``: all of it
    region: Optional[Tuple[Tuple[int, int], ...]] = None

    def part(self, t):
        """The values of the input ``t`` (a tensor) that the op reads."""
        if self.region is None or t.dim() != len(self.region):
            return t
        return t[tuple(slice(a, b) for a, b in self.region)]


def input_index_checks(module: ir.Module, n_inputs: int) -> List[InputIndexCheck]:
    """The index ops of ``module`` whose indices are a tensor input's values (through reshapes, broadcasts,
    transposes, widening integer conversions and the negative-index wrap of ``x[idx]``): what a call checks on
    those inputs before running the program (:func:`check_input_indices`).  Indices computed otherwise from the
    data are not covered."""
    checks = []
    for op, index, size, node, where in _index_ops(module):
        found = _input_of(index, n_inputs)
        if found is not None:
            arg, wrapped, exempt, region = found
            checks.append(InputIndexCheck(arg, -size if wrapped else 0, size, node or op.name, where, exempt,
                                          region))
    return checks


def _input_of(value: ir.Value, n_inputs: int, depth: int = 0, exempt: Optional[int] = None,
              region: Optional[List[Tuple[int, int]]] = None) -> Optional[tuple]:
    """``(tensor input number, wrapped, exempt value, region)`` when ``value``'s values are a tensor input's (see
    :func:`input_index_checks`), else ``None``.  ``exempt``: the value a loss's ``ignore_index`` test lets
    through, found further out; ``region``: the part of ``value`` those values come from (a slice further out,
    ``(start, stop)`` per dim), which a slice or a pad by ``exempt`` (HF's shifted labels: ``pad(labels, (0, 1),
    value=ignore_index)[..., 1:]``) maps to the input's coordinates."""
    if depth > 64:
        return None
    if isinstance(value.owner, ir.Block):
        number = ir.BlockArgument(value).arg_number
        return (number, False, exempt, None if region is None else tuple(region)) if number < n_inputs else None
    op = value.owner.operation if not isinstance(value.owner, ir.Operation) else value.owner
    if op.name in _SAME:
        if op.name == ops.convert.name:
            source, target = sig_of(op.operands[0].type), sig_of(value.type)
            if source is None or target is None or not (source.elem.startswith("i") and target.elem.startswith("i")) \
                    or source.elem == "i1" or bit_width(target.elem) < bit_width(source.elem):
                return None
        elif region is not None and op.name not in _ELEMENTWISE_SAME:
            return None                                  # (a reshape inside a slice: its region has no meaning)
        return _input_of(op.operands[0], n_inputs, depth + 1, exempt, region)
    if op.name in (ops.slice.name, ops.pad.name) and (
            SYM_ATTR in op.attributes or not ir.RankedTensorType(op.operands[0].type).has_static_shape):
        return None                                  # (a polymorphic program's sizes: no region to check on the host)
    if op.name == ops.slice.name and region is None:
        values, attrs = lookup(op.name).read(op)
        if any(k != 1 for k in attrs["stride"]):
            return None
        return _input_of(values[0], n_inputs, depth + 1, exempt, list(zip(attrs["start"], attrs["limit"])))
    if op.name == ops.pad.name and exempt is not None:
        values, attrs = lookup(op.name).read(op)     # (padding by the exempt value adds nothing that indexes)
        shape = sig_of(values[0].type).shape
        if attrs["value"] != exempt or min(*attrs["low"], *attrs["high"], 0) < 0:
            return None
        inner = [(0, n) for n in shape] if region is None else \
            [(min(max(a - low, 0), n), min(max(b - low, 0), n)) for (a, b), low, n in zip(region, attrs["low"], shape)]
        return _input_of(values[0], n_inputs, depth + 1, exempt, inner)
    if op.name == ops.where.name:
        cond, first, second = list(op.operands)[:3]      # (a polymorphic op adds its size operands after)
        add = first.owner if not isinstance(first.owner, ir.Block) else None
        if add is not None and add.operation.name == ops.add.name and add.operation.operands[0] == second:
            found = _input_of(second, n_inputs, depth + 1, exempt, region)    # where(i < 0, i + size, i): x[idx]
            return None if found is None else (found[0], True, found[2], found[3])
        test = cond.owner if not isinstance(cond.owner, ir.Block) else None
        if exempt is None and test is not None and test.operation.name == ops.ne.name and \
                test.operation.operands[0] == first and splat_value(second) is not None and \
                splat_value(test.operation.operands[1]) is not None:     # where(i != c, i, k): a loss's ignore_index c
            return _input_of(first, n_inputs, depth + 1, splat_value(test.operation.operands[1]), region)
    return None


def check_input_indices(name: str, checks: Sequence[InputIndexCheck], leaves: Sequence[Any]) -> None:
    """Raise :class:`IndexOutOfRangeError` where a call's tensor input holds an index outside its range (before
    the program runs: eager raises ``IndexError`` there, XLA would clamp).  ``leaves``: the call's input leaves
    (tensors and jax arrays are its tensor inputs, in order; other leaves are skipped)."""
    if not checks:
        return
    import torch                         # (the dialect and its passes stay torch-free: fxla-opt)
    tensors = [t for t in leaves if hasattr(t, "shape") and hasattr(t, "dtype") and not isinstance(t, (int, float))]
    for check in checks:
        t = tensors[check.input]
        if not isinstance(t, torch.Tensor):       # a jax.Array; one over several processes: this process's part
            shards = None if getattr(t, "is_fully_addressable", True) else t.addressable_shards
            t = torch.from_numpy(np.array(t) if shards is None else       # (a writable copy: index tensors are small)
                                 np.concatenate([np.asarray(s.data).reshape(-1) for s in shards]))
        t = check.part(t)
        if check.exempt is not None:
            t = t[t != check.exempt]
        if t.numel() == 0:
            continue
        low, high = int(t.min()), int(t.max())
        if low >= check.low and high < check.high:
            continue
        bad = high if high >= check.high else low
        at = f"\n  at {check.where[0]}:{check.where[1]}:{check.where[2]}" if check.where else ""
        raise IndexOutOfRangeError(
            f"{name}: index out of range: tensor input {check.input} holds {bad}, and %{check.node} indexes a dim of "
            f"size {check.high} with it (valid: [{check.low}, {check.high})){at}\nwhy: eager PyTorch raises "
            f"IndexError here; XLA would clamp the index and silently read another element\nfix: pass indices in "
            f"range (token ids below the vocabulary size, labels below the number of classes)")
