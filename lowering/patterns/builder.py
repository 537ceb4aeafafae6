"""The helper every fxla -> StableHLO pattern builds with, the helpers patterns of several families share, and the
pattern table."""
from __future__ import annotations

import math
import operator
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from fxla.dialects.fxla import OpDef, Sig, sig_of, type_of
from fxla.dialects.fxla.opdef import sig_of_shaped
from fxla.dialects.fxla.symbolic import DYNAMIC, UNKNOWN, NotPolymorphicError, sym_slots
from fxla.dialects.fxla.types import INT_TYPES, UNSIGNED_TYPES, is_float
from fxla.dialects.mlir import func, hlo, ir

#: a size: a Python int, or (a ``?`` dim of a polymorphic program) a ``tensor<i64>`` value computing it
Size = Union[int, ir.Value]

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


#: the Python arithmetic of :meth:`Builder.arith` on static sizes
_SIZE_ARITH = {hlo.AddOp: operator.add, hlo.SubtractOp: operator.sub, hlo.MulOp: operator.mul, hlo.MaxOp: max,
               hlo.MinOp: min}


class Builder:
    """StableHLO building helpers at one fxla op's position; ``result`` is the op's result :class:`Sig`.

    In a polymorphic program (``?`` dims) ``result.shape`` has :data:`~fxla.dialects.fxla.symbolic.DYNAMIC` at
    each ``?`` dim, and the op's size operands (``fxla.sym``) give those sizes: :meth:`dims` (a result's shape as
    ints and ``tensor<i64>`` values) and :meth:`sizes` (a symbolic attribute's).  The helpers below build
    StableHLO's dynamic ops (``dynamic_broadcast_in_dim``, ``dynamic_reshape``) where a shape has ``?`` dims.
    """

    def __init__(self, op: ir.Operation):
        self.op = op
        results = op.results
        self.result_type = results[0].type
        self.result: Sig = sig_of_shaped(self.result_type)
        # every result (multi-result ops); a single-result op's list is just ``[self.result]``
        self.results = [self.result] if len(results) == 1 else [sig_of_shaped(t) for t in results.types]
        slots = sym_slots(op)
        operands = list(op.operands)
        self.slots: Dict[str, ir.Value] = dict(zip(slots, operands[len(operands) - len(slots):])) if slots else {}

    # -- sizes of polymorphic programs ---------------------------------------------------------------------------
    def _slot(self, name: str) -> ir.Value:
        value = self.slots.get(name)
        if value is None:
            raise NotPolymorphicError(f"{self.op.name}: no size operand '{name}' for a ? size")
        return value

    def dims(self, result: int = 0) -> List[Size]:
        """The shape of result ``result``: an int per static dim, a ``tensor<i64>`` value per ``?`` dim."""
        return [self._slot(f"result{result}.{d}") if n == DYNAMIC else n
                for d, n in enumerate(self.results[result].shape)]

    def sizes(self, name: str, values) -> List[Size]:
        """The values of the ``array<i64>`` attribute ``name`` (read as ``values``), a ``?`` entry as its size
        operand's value."""
        return [self._slot(f"{name}.{i}") if v == DYNAMIC else v for i, v in enumerate(values)]

    def size(self, name: str, value) -> Size:
        """The ``i64`` attribute ``name`` (read as ``value``): itself, or its size operand's value if ``?``."""
        return self._slot(name) if value == DYNAMIC else value

    def dim_of(self, value: ir.Value, dim: int) -> Size:
        """The size of dim ``dim`` of ``value``: an int, or (a ``?`` dim) a ``tensor<i64>`` computing it."""
        n = self.sig(value).shape[dim]
        if n != DYNAMIC:
            return n
        size = hlo.GetDimensionSizeOp(value, dim).result
        return hlo.ConvertOp(self.type((), "i64"), size).result

    def dims_of(self, value: ir.Value) -> List[Size]:
        """The shape of ``value`` as :meth:`dim_of` gives each dim."""
        return [self.dim_of(value, d) for d in range(self.sig(value).rank)]

    def shape_value(self, dims: Sequence[Size]) -> ir.Value:
        """A ``tensor<Nxi64>`` of the sizes ``dims`` (the shape operand of StableHLO's dynamic ops)."""
        if all(not isinstance(d, ir.Value) for d in dims):
            return hlo.ConstantOp(ir.DenseElementsAttr.get(np.asarray(list(dims), dtype=np.int64).reshape(len(dims)),
                                                           type=self.type((len(dims),), "i64"))).result
        one = self.type((1,), "i64")
        parts = [hlo.ReshapeOp(one, d).result if isinstance(d, ir.Value) else
                 hlo.ConstantOp(ir.DenseElementsAttr.get(np.asarray([d], dtype=np.int64), type=one)).result
                 for d in dims]
        return parts[0] if len(parts) == 1 else hlo.ConcatenateOp(parts, 0).result

    def count(self, dims: Sequence[Size]) -> Size:
        """The product of the sizes ``dims`` (an element count): an int, or a ``tensor<i64>`` where one is ``?``."""
        static = math.prod(d for d in dims if not isinstance(d, ir.Value))
        values = [d for d in dims if isinstance(d, ir.Value)]
        if not values:
            return static
        out = self.splat(static, "i64")
        for v in values:
            out = hlo.MulOp(out, v).result
        return out

    def arith(self, op, a: Size, c: Size) -> Size:
        """``op`` (``hlo.AddOp``, ``SubtractOp``, ``MulOp``, ``MaxOp`` or ``MinOp``) of the sizes ``a`` and ``c``:
        an int where both are, else a ``tensor<i64>``."""
        if not isinstance(a, ir.Value) and not isinstance(c, ir.Value):
            return _SIZE_ARITH[op](a, c)
        a, c = (v if isinstance(v, ir.Value) else self.splat(v, "i64") for v in (a, c))
        return op(a, c).result

    def fill(self, value, elem: str, shape: Sequence[Size] = ()) -> ir.Value:
        """:meth:`splat` of a Python number, or the broadcast of a ``tensor<i64>`` size (converted to ``elem``)."""
        if not isinstance(value, ir.Value):
            return self.splat(value, elem, shape)
        return self.broadcast_dims(self.convert(value, elem), shape, [])

    def _resolve(self, shape: Sequence[Size]) -> List[Size]:
        """``shape`` with each ``?`` (:data:`~fxla.dialects.fxla.symbolic.UNKNOWN`) resolved: only a result's own
        ``shape`` tuple (``b.result.shape``) resolves, to :meth:`dims`; a pattern builds any other shape with ``?``
        dims from :meth:`dims_of` its values, else this raises :class:`NotPolymorphicError`."""
        if all(isinstance(d, ir.Value) or d != DYNAMIC for d in shape):
            return list(shape)
        for r, sig in enumerate(self.results):
            if shape is sig.shape:          # (the result's own shape object: a shape merely equal to it may have
                return self.dims(r)         # other sizes at its ? dims)
        raise NotPolymorphicError(f"{self.op.name}: a helper needs the ? sizes of shape {shape}")

    @staticmethod
    def _static(shape: Sequence[Size]) -> Tuple[int, ...]:
        return tuple(UNKNOWN if isinstance(d, ir.Value) else d for d in shape)

    @staticmethod
    def sig(value: ir.Value) -> Sig:
        """The :class:`Sig` (shape, element type) of ``value``."""
        return sig_of_shaped(value.type)

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

    def broadcast(self, value: ir.Value, shape: Sequence[Size]) -> ir.Value:
        """Numpy-style broadcast of ``value`` to ``shape`` (trailing dims aligned)."""
        sig = self.sig(value)
        static = self._static(shape)
        if sig.shape == static:          # (a ? dim is never 1: one broadcast to a ? dim keeps its size)
            return value
        dims = list(range(len(static) - sig.rank, len(static)))
        return self.broadcast_dims(value, shape, dims)

    def broadcast_dims(self, value: ir.Value, shape: Sequence[Size], dims: Sequence[int]) -> ir.Value:
        """broadcast_in_dim with explicit operand->result dimension mapping (``dynamic_broadcast_in_dim`` where
        ``shape`` has ``?`` dims)."""
        static = self._static(shape)
        t = self.type(static, self.sig(value).elem)
        if DYNAMIC not in static:
            return hlo.BroadcastInDimOp(t, value, list(dims)).result
        return hlo.DynamicBroadcastInDimOp(t, value, self.shape_value(self._resolve(shape)), list(dims)).result

    def splat(self, value, elem: str, shape: Sequence[Size] = ()) -> ir.Value:
        """A constant tensor of ``shape`` filled with the Python number ``value``."""
        static = self._static(shape)
        if DYNAMIC in static:
            return self.broadcast_dims(self.splat(value, elem), shape, [])
        t = self.type(static, elem)
        scalar_type = t.element_type
        attr = ir.FloatAttr.get(scalar_type, float(value)) if is_float(elem) else \
            ir.IntegerAttr.get(scalar_type, int(value))
        return hlo.ConstantOp(ir.DenseElementsAttr.get_splat(t, attr)).result

    def reshape(self, value: ir.Value, shape: Sequence[Size]) -> ir.Value:
        """``value`` reshaped to ``shape`` (unchanged if it has it already; ``dynamic_reshape`` where ``shape``
        has ``?`` dims)."""
        sig = self.sig(value)
        static = self._static(shape)
        if sig.shape == static and static.count(DYNAMIC) <= 1:
            return value     # (the same element count and static dims: one ? dim keeps its size; two may swap)
        if DYNAMIC not in static:
            return hlo.ReshapeOp(self.type(static, sig.elem), value).result
        return hlo.DynamicReshapeOp(self.type(static, sig.elem), value,
                                    self.shape_value(self._resolve(shape))).result

    def iota(self, shape: Sequence[Size], dim: int, elem: str) -> ir.Value:
        """``stablehlo.iota`` of ``shape`` along ``dim`` (``dynamic_iota`` where ``shape`` has ``?`` dims)."""
        static = self._static(shape)
        t = self.type(static, elem)
        if DYNAMIC not in static:
            return hlo.IotaOp(t, dim).result
        return hlo.DynamicIotaOp(t, self.shape_value(self._resolve(shape)), dim).result

    def dot(self, lhs: ir.Value, rhs: ir.Value, out_shape: Sequence[int], *, lhs_contract, rhs_contract,
            lhs_batch=(), rhs_batch=(), elem: Optional[str] = None) -> ir.Value:
        """``stablehlo.dot_general`` of ``lhs`` and ``rhs`` (result shape ``out_shape``; element type ``elem``,
        else ``lhs``'s: f32 for half operands keeps the products' sum unrounded, as JAX's
        ``preferred_element_type``)."""
        dn = hlo.DotDimensionNumbers.get(lhs_batching_dimensions=list(lhs_batch),
                                         rhs_batching_dimensions=list(rhs_batch),
                                         lhs_contracting_dimensions=list(lhs_contract),
                                         rhs_contracting_dimensions=list(rhs_contract))
        return hlo.DotGeneralOp(self.type(out_shape, elem or self.sig(lhs).elem), lhs, rhs, dn).result

    def coordinates(self, index: ir.Value, dim: int) -> ir.Value:
        """``[*index.shape, rank]`` full coordinates: ``index`` along ``dim``, the position (iota) along the other
        dims (the start indices of ``torch.gather`` / ``scatter`` as StableHLO's gather and scatter take them)."""
        s = self.sig(index)
        elem = "i32" if s.elem == "i32" else "i64"          # (i32 indices as they are: their iotas fit in i32 too)
        index = self.convert(index, elem)
        shape = self.dims_of(index)
        parts = [index if d == dim else self.iota(shape, d, elem) for d in range(s.rank)]
        return hlo.ConcatenateOp([self.reshape(p, shape + [1]) for p in parts], s.rank).result

    def take_along(self, x: ir.Value, index: ir.Value, dim: int) -> ir.Value:
        """``torch.gather(x, dim, index)`` (``index`` of ``x``'s rank, in range) as one ``stablehlo.gather``."""
        rank = self.sig(x).rank
        dn = hlo.GatherDimensionNumbers.get(offset_dims=[], collapsed_slice_dims=list(range(rank)),
                                            operand_batching_dims=[], start_indices_batching_dims=[],
                                            start_index_map=list(range(rank)), index_vector_dim=rank)
        return hlo.GatherOp(x, self.coordinates(index, dim), dn, [1] * rank).result

    def window_reduce(self, operands: Sequence[ir.Value], inits: Sequence[ir.Value], window: Sequence[Size],
                      pads: Sequence[Tuple[Size, Size]], result_types: Sequence[ir.Type],
                      body: Callable[..., Sequence[ir.Value]], strides: Optional[Sequence[int]] = None,
                      dilations: Optional[Sequence[int]] = None) -> List[ir.Value]:
        """``stablehlo.reduce_window`` of ``operands`` from ``inits`` (window ``strides`` and ``dilations``: unit
        where not given); ``body(*acc, *new)`` combines two scalars of each operand.  Where a window or padding
        size is a ``?`` size (a value), it is StableHLO's ``stablehlo.dynamic_reduce_window`` custom call (the sizes
        as operands, ``body`` a private function of the module), which StableHLO's shape refinement turns into a
        reduce_window once they are known, as ``jax.export`` writes one."""
        rank = len(window)
        strides = list(strides) if strides is not None else [1] * rank
        elems = [self.sig(v).elem for v in operands]
        scalars = [self.type((), e) for e in elems]
        sizes = list(window) + [p for pair in pads for p in pair]
        if not any(isinstance(n, ir.Value) for n in sizes):
            op = hlo.ReduceWindowOp(list(result_types), list(operands), list(inits), list(window),
                                    window_strides=strides, padding=padding_attr(pads),
                                    window_dilations=None if dilations is None else list(dilations))
            block = op.regions[0].blocks.append(*(scalars + scalars))
            with ir.InsertionPoint(block):
                hlo.ReturnOp(list(body(*block.arguments)))
            return list(op.results)
        module = self.op.operation
        while module.name != "builtin.module":
            module = module.parent
        body_block = module.regions[0].blocks[0]
        name = f"fxla_window_body_{len(list(body_block.operations))}"      # (unique in the module, deterministic)
        with ir.InsertionPoint(body_block):
            fn = func.FuncOp(name, ir.FunctionType.get(scalars + scalars, scalars), visibility="private")
            block = fn.add_entry_block()
            with ir.InsertionPoint(block):
                func.ReturnOp(list(body(*block.arguments)))
        ones = self.shape_value([1] * rank)
        padding = hlo.ReshapeOp(self.type((rank, 2), "i64"),
                                self.shape_value([p for pair in pads for p in pair])).result
        op = hlo.CustomCallOp(list(result_types), [*operands, *inits, self.shape_value(window),
                                                   self.shape_value(strides), ones,
                                                   ones if dilations is None else self.shape_value(dilations),
                                                   padding], "stablehlo.dynamic_reduce_window",
                              called_computations=ir.ArrayAttr.get([ir.FlatSymbolRefAttr.get(name)]))
        return list(op.results)

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
