"""The state a lowering rule sees while one graph is lowered to the fxla dialect."""
from __future__ import annotations

from typing import Dict, List, Optional

import torch

import numpy as np

from fxla.frontend import meta as M
from fxla.dialects.fxla import Sig, ops, sig_of, type_of
from fxla.dialects.fxla.opdef import elem_type
from fxla.dialects.fxla.types import UNSIGNED_TYPES, bit_width, is_float
from fxla.frontend import TensorMeta
from fxla.dialects.mlir import ir

from .dtypes import mlir_type
from .errors import node_error
from .registry import RULES


class Emitter:
    """What every builder of fxla ops has: ``emit`` at its location ``loc``, scalar constants (``tensor``) and the
    shared building blocks (``convert``, ``reshape``, ``expand``, ``slice_dim``, ``int_constant``).  Lowering rules
    get a :class:`LoweringContext`, VJP rules a :class:`fxla.lowering.autodiff.VJPContext`; subclasses give
    ``error(what, why, fix)`` and set ``loc``."""

    def __init__(self) -> None:
        self.loc: Optional[ir.Location] = None
        self._scalars: Dict[tuple, ir.Attribute] = {}

    def error(self, what: str, why: str, fix: str):
        raise NotImplementedError

    # -- building ------------------------------------------------------------------------------------------------
    def emit(self, opdef, *operands, result_type: Optional[ir.Type] = None, **attrs) -> ir.Value:
        return opdef(*operands, loc=self.loc, result_type=result_type, **attrs)

    def tensor(self, value, like: Optional[object] = None) -> ir.Value:
        if isinstance(value, ir.Value):
            return value
        if not isinstance(value, (bool, int, float)):
            raise self.error(f"expected a tensor or a Python number, got {type(value).__name__}",
                             "fxla lowers tensors and scalar constants only",
                             "pass a tensor, or make the value a constant outside the traced code")
        elem = scalar_elem(value, sig_of(like.type).elem if isinstance(like, ir.Value) else None)
        # the 0-d splat attribute, made once per (element type, value) in this lowering (floats keyed by their
        # exact bits: -0.0 and 0.0 differ)
        key = (elem, type(value), value.hex() if isinstance(value, float) else value)
        dense = self._scalars.get(key)
        if dense is None:
            scalar_type = elem_type(elem)
            if is_float(elem):
                scalar = ir.FloatAttr.get(scalar_type, float(value))
            else:
                v = int(value)
                scalar = ir.IntegerAttr.get(scalar_type, v % (1 << bit_width(elem)) if elem in UNSIGNED_TYPES else v)
            dense = self._scalars[key] = ir.DenseElementsAttr.get_splat(ir.RankedTensorType.get([], scalar_type),
                                                                        scalar)
        return self.emit(ops.constant, value=dense)

    @staticmethod
    def sig(value: ir.Value):
        return sig_of(value.type)

    # -- building blocks shared by rules -------------------------------------------------------------------------
    def convert(self, value: ir.Value, elem: str) -> ir.Value:
        """``value`` with element type ``elem`` (e.g. ``"f32"``): an ``fxla.convert``, or ``value`` itself."""
        s = self.sig(value)
        return value if s.elem == elem else self.emit(ops.convert, value, result_type=type_of(Sig(s.shape, elem)))

    def reshape(self, value: ir.Value, shape) -> ir.Value:
        """``value`` reshaped to ``shape`` (``value`` itself when it has that shape)."""
        shape = tuple(shape)
        return value if self.sig(value).shape == shape else self.emit(ops.reshape, value, shape=shape)

    def expand(self, value: ir.Value, shape) -> ir.Value:
        """``value`` broadcast to ``shape`` (``value`` itself when it has that shape)."""
        shape = tuple(shape)
        return value if self.sig(value).shape == shape else self.emit(ops.expand, value, shape=shape)

    def slice_dim(self, value: ir.Value, dim: int, start: int, limit: int, stride: int = 1) -> ir.Value:
        """``value`` sliced along one (non-negative) dim."""
        shape = self.sig(value).shape
        starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
        starts[dim], limits[dim], strides[dim] = start, limit, stride
        return self.emit(ops.slice, value, start=starts, limit=limits, stride=strides)

    def int_constant(self, values) -> ir.Value:
        """A 1-D i64 ``fxla.constant`` (index lists written in the program, e.g. ``x[[0, 2]]``)."""
        return self.emit(ops.constant, value=ir.DenseElementsAttr.get(np.asarray(values, dtype=np.int64)))



class LoweringContext(Emitter):
    """Passed as ``ctx`` to every rule.

    * ``ctx.node`` — the graph node being lowered; ``ctx.result_type`` its tensor type from shape propagation;
    * ``ctx.emit(opdef, *operands, **attrs)`` — build an fxla op at the node's source location;
    * ``ctx.tensor(x, like=None)`` — a tensor operand from an ``ir.Value`` or a Python scalar (a 0-d
      ``fxla.constant``; see :func:`scalar_elem` for its element type: next to the tensor ``like`` it takes the
      type torch computes in, alone float -> f32, int -> i64, bool -> i1);
    * ``ctx.param(qualname)`` — the function argument carrying parameter/buffer ``qualname`` (uploaded once);
    * ``ctx.error(what, why, fix)`` — a :class:`LoweringError` at the node's source line.

    The building blocks rules share are methods too (each emits nothing when there is nothing to do):
    ``ctx.convert(x, elem)`` (``x`` in another element type), ``ctx.reshape(x, shape)``,
    ``ctx.expand(x, shape)`` (broadcast), ``ctx.slice_dim(x, dim, start, limit, stride)``,
    ``ctx.int_constant(values)`` (a 1-D i64 constant), ``ctx.module_param(name)`` (a parameter of the node's
    module, ``None`` when the module has none) and ``ctx.lower(op, *args, **kwargs)`` (lower ``op`` here as
    its own rule does: one rule reusing another names the torch op, never the other file's helper).
    Rule-level helpers without a context live in :mod:`fxla.lowering.emit`.
    """

    def __init__(self, root: torch.nn.Module, block: ir.Block, param_values: Dict[str, torch.Tensor]):
        super().__init__()
        self.root = root
        self.block = block
        self.node = None
        self.param_names: List[str] = []
        self._param_args: Dict[str, ir.Value] = {}
        self._param_values = param_values

    # -- the node being lowered ----------------------------------------------------------------------------------
    @property
    def result_type(self) -> ir.Type:
        meta = self.node.meta.get(M.TENSOR_META)
        if meta is None or isinstance(meta, (tuple, list)):
            raise self.error("this op should produce one tensor", "shape propagation recorded no single tensor",
                             "report this as an fxla bug")
        return mlir_type(meta)

    @property
    def result_sig(self):
        return sig_of(self.result_type)

    def error(self, what: str, why: str, fix: str):
        return node_error(self.node, what, why, fix)

    def param(self, qualname: str) -> ir.Value:
        if qualname not in self._param_args:
            tensor = self._param_values.get(qualname)
            if tensor is None:
                tensor = _tensor_attr(self.root, qualname)
                self._param_values[qualname] = tensor
            arg_type = mlir_type(TensorMeta(tuple(tensor.shape), tensor.dtype))
            self._param_args[qualname] = self.block.add_argument(arg_type, self.loc or ir.Location.unknown())
            self.param_names.append(qualname)
        return self._param_args[qualname]

    def module_param(self, name: str, mod: Optional[torch.nn.Module] = None,
                     target: Optional[str] = None) -> Optional[ir.Value]:
        """The parameter (or buffer) ``name`` of the ``call_module`` node's module -- or of the submodule
        ``mod`` at ``target`` -- as a function argument; ``None`` when the module's attribute is ``None``
        (``nn.Linear(bias=False)``)."""
        if target is None:
            target = self.node.target
            mod = self.root.get_submodule(target) if mod is None else mod
        return None if getattr(mod, name, None) is None else self.param(f"{target}.{name}")

    def lower(self, op, *args, **kwargs):
        """Lower ``op`` (a torch function with a registered rule) on ``args`` here, as its own rule does."""
        return RULES[op](self, *args, **kwargs)


def scalar_elem(value, other: Optional[str] = None) -> str:
    """The element type of a Python scalar operand next to a tensor of element type ``other``.

    torch treats Python numbers as "wrapped numbers": they never change the result's element type unless they
    raise its category (bool < int < float), and they are used at the computation's precision.  So a scalar
    that does not raise the category takes ``other`` itself (``x_f64 * 0.1`` keeps 0.1 in f64, a 0-d ``i32``
    tensor ``+ 2`` stays ``i32``); one that does takes torch's default dtype (float -> f32, int -> i64).
    """
    if isinstance(value, bool):
        return other or "i1"
    if isinstance(value, int):
        return "i64" if other in (None, "i1") else other
    return other if other is not None and is_float(other) else "f32"


def _tensor_attr(root: torch.nn.Module, qualname: str) -> torch.Tensor:
    """A parameter, buffer or plain tensor attribute (e.g. a ``_tensor_constant<N>`` the tracer stored)."""
    value = root
    for atom in qualname.split("."):
        value = getattr(value, atom)
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"'{qualname}' is a {type(value).__name__}, not a tensor")
    return value
