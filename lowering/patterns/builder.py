"""The helper every fxla -> StableHLO pattern builds with, the helpers patterns of several families share, and the
pattern table."""
from __future__ import annotations

from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np

from fxla.dialects.fxla import OpDef, Sig, sig_of, type_of
from fxla.dialects.fxla.types import INT_TYPES, UNSIGNED_TYPES, is_float
from fxla.dialects.mlir import hlo, ir

#: OpDef -> pattern
PATTERNS: Dict[OpDef, Callable] = {}


def pattern(*opdefs: OpDef):
    """Decorator registering a pattern for one or more fxla ops."""
    def deco(fn):
        for opdef in opdefs:
            PATTERNS[opdef] = fn
        return fn
    return deco


def compute_type(elem: str) -> str:
    """Half-precision math is done in f32 and rounded once, as torch's CPU kernels do."""
    return "f32" if elem in ("f16", "bf16") else elem


def compare(a: ir.Value, c: ir.Value, direction: str, elem: str) -> ir.Value:
    """``stablehlo.compare`` of ``a`` and ``c`` (element type ``elem``) with the comparison type ``elem`` implies:
    FLOAT, SIGNED or UNSIGNED (bool included)."""
    kind = "FLOAT" if is_float(elem) else ("SIGNED" if elem in INT_TYPES and elem not in UNSIGNED_TYPES
                                           else "UNSIGNED")
    return hlo.CompareOp(a, c, hlo.ComparisonDirectionAttr.get(direction),
                         compare_type=hlo.ComparisonTypeAttr.get(kind)).result


def normalized_dims(dims: Sequence[int], rank: int) -> List[int]:
    """``dims`` with negative entries counted from the end (empty for a 0-d operand)."""
    return [d % rank for d in dims] if rank else []


def padding_attr(pairs: Sequence[Tuple[int, int]]) -> ir.DenseIntElementsAttr:
    """The ``[n, 2]`` (low, high) padding attribute of convolutions and windows."""
    return ir.DenseIntElementsAttr.get(np.asarray(pairs, dtype=np.int64).reshape(len(pairs), 2))


class Builder:
    """StableHLO building helpers at one fxla op's position; ``result`` is the op's result :class:`Sig`."""

    def __init__(self, op: ir.Operation):
        self.op = op
        results = op.results
        self.result_type = results[0].type
        self.result: Sig = sig_of(self.result_type)
        # every result (multi-result ops); a single-result op's list is just ``[self.result]``
        self.results = [self.result] if len(results) == 1 else [sig_of(t) for t in results.types]

    @staticmethod
    def sig(value: ir.Value) -> Sig:
        """The :class:`Sig` (shape, element type) of ``value``."""
        return sig_of(value.type)

    @staticmethod
    def type(shape: Sequence[int], elem: str) -> ir.RankedTensorType:
        """The tensor type of ``shape`` and element type ``elem`` (e.g. ``'f32'``)."""
        return type_of(Sig(tuple(shape), elem))

    def convert(self, value: ir.Value, elem: str) -> ir.Value:
        """``value`` converted to element type ``elem`` (unchanged if it has it already)."""
        sig = self.sig(value)
        if sig.elem == elem:
            return value
        return hlo.ConvertOp(self.type(sig.shape, elem), value).result

    def broadcast(self, value: ir.Value, shape: Sequence[int]) -> ir.Value:
        """Numpy-style broadcast of ``value`` to ``shape`` (trailing dims aligned)."""
        sig = self.sig(value)
        shape = tuple(shape)
        if sig.shape == shape:
            return value
        dims = list(range(len(shape) - sig.rank, len(shape)))
        return hlo.BroadcastInDimOp(self.type(shape, sig.elem), value, dims).result

    def broadcast_dims(self, value: ir.Value, shape: Sequence[int], dims: Sequence[int]) -> ir.Value:
        """broadcast_in_dim with explicit operand->result dimension mapping."""
        return hlo.BroadcastInDimOp(self.type(shape, self.sig(value).elem), value, list(dims)).result

    def splat(self, value, elem: str, shape: Sequence[int] = ()) -> ir.Value:
        """A constant tensor of ``shape`` filled with the Python number ``value``."""
        t = self.type(shape, elem)
        scalar_type = t.element_type
        attr = ir.FloatAttr.get(scalar_type, float(value)) if is_float(elem) else \
            ir.IntegerAttr.get(scalar_type, int(value))
        return hlo.ConstantOp(ir.DenseElementsAttr.get_splat(t, attr)).result

    def reshape(self, value: ir.Value, shape: Sequence[int]) -> ir.Value:
        """``value`` reshaped to ``shape`` (unchanged if it has it already)."""
        sig = self.sig(value)
        if sig.shape == tuple(shape):
            return value
        return hlo.ReshapeOp(self.type(shape, sig.elem), value).result

    def reduce(self, value: ir.Value, dims: Sequence[int], init, body: Callable) -> ir.Value:
        """``stablehlo.reduce`` over ``dims`` (removed from the shape) with a binary ``body`` op class."""
        sig = self.sig(value)
        dims = sorted(dims)
        out_shape = [d for i, d in enumerate(sig.shape) if i not in dims]
        init_value = self.splat(init, sig.elem)
        red = hlo.ReduceOp([self.type(out_shape, sig.elem)], [value], [init_value], dims)
        scalar = self.type((), sig.elem)
        block = red.regions[0].blocks.append(scalar, scalar)
        with ir.InsertionPoint(block):
            hlo.ReturnOp([body(block.arguments[0], block.arguments[1]).result])
        return red.result

    def lowest(self, elem: str):
        """The reduction identity of max: -inf for floats, the minimum integer otherwise."""
        if is_float(elem):
            return float("-inf")
        if elem == "i1":
            return 0
        bits = int(elem.lstrip("ui"))
        return 0 if elem.startswith("ui") else -(1 << (bits - 1))

    def highest(self, elem: str):
        """The reduction identity of min: inf for floats, the maximum integer otherwise."""
        if is_float(elem):
            return float("inf")
        if elem == "i1":
            return 1
        bits = int(elem.lstrip("ui"))
        return (1 << bits) - 1 if elem.startswith("ui") else (1 << (bits - 1)) - 1
