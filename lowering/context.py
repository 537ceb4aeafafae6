"""The state a lowering rule sees while one graph is lowered to the fxla dialect."""
from __future__ import annotations

from typing import Dict, List, Optional

import torch

from fxla.dialects.fxla import ops, sig_of
from fxla.frontend import TensorMeta
from fxla.dialects.mlir import ir

from .dtypes import mlir_type
from .errors import node_error


class LoweringContext:
    """Passed as ``ctx`` to every rule.

    * ``ctx.node`` — the graph node being lowered; ``ctx.result_type`` its tensor type from shape propagation;
    * ``ctx.emit(opdef, *operands, **attrs)`` — build an fxla op at the node's source location;
    * ``ctx.tensor(x)`` — a tensor operand from an ``ir.Value`` or a Python scalar (a 0-d ``fxla.constant``:
      float -> f32, int -> i64, bool -> i1, matching torch's default dtypes);
    * ``ctx.param(qualname)`` — the function argument carrying parameter/buffer ``qualname`` (uploaded once);
    * ``ctx.error(what, why, fix)`` — a :class:`LoweringError` at the node's source line.
    """

    def __init__(self, root: torch.nn.Module, block: ir.Block, param_values: Dict[str, torch.Tensor]):
        self.root = root
        self.block = block
        self.node = None
        self.loc: Optional[ir.Location] = None
        self.param_names: List[str] = []
        self._param_args: Dict[str, ir.Value] = {}
        self._param_values = param_values

    # -- the node being lowered ----------------------------------------------------------------------------------
    @property
    def result_type(self) -> ir.Type:
        meta = self.node.meta.get("tensor_meta")
        if meta is None or isinstance(meta, (tuple, list)):
            raise self.error("this op should produce one tensor", "shape propagation recorded no single tensor",
                             "report this as an fxla bug")
        return mlir_type(meta)

    @property
    def result_sig(self):
        return sig_of(self.result_type)

    def error(self, what: str, why: str, fix: str):
        return node_error(self.node, what, why, fix)

    # -- building ------------------------------------------------------------------------------------------------
    def emit(self, opdef, *operands, result_type: Optional[ir.Type] = None, **attrs) -> ir.Value:
        return opdef(*operands, loc=self.loc, result_type=result_type, **attrs)

    def tensor(self, value) -> ir.Value:
        if isinstance(value, ir.Value):
            return value
        if isinstance(value, (bool, int)):
            elem = ir.IntegerType.get_signless(1 if isinstance(value, bool) else 64)
            scalar = ir.IntegerAttr.get(elem, int(value))
        elif isinstance(value, float):
            elem = ir.F32Type.get()
            scalar = ir.FloatAttr.get(elem, value)
        else:
            raise self.error(f"expected a tensor or a Python number, got {type(value).__name__}",
                             "fxla lowers tensors and scalar constants only",
                             "pass a tensor, or make the value a constant outside the traced code")
        dense = ir.DenseElementsAttr.get_splat(ir.RankedTensorType.get([], elem), scalar)
        return self.emit(ops.constant, value=dense)

    def param(self, qualname: str) -> ir.Value:
        if qualname not in self._param_args:
            tensor = self._param_values.get(qualname)
            if tensor is None:
                tensor = self.root.get_parameter(qualname) if _has_param(self.root, qualname) else \
                    self.root.get_buffer(qualname)
                self._param_values[qualname] = tensor
            arg_type = mlir_type(TensorMeta(tuple(tensor.shape), tensor.dtype))
            self._param_args[qualname] = self.block.add_argument(arg_type, self.loc or ir.Location.unknown())
            self.param_names.append(qualname)
        return self._param_args[qualname]

    @staticmethod
    def sig(value: ir.Value):
        return sig_of(value.type)


def _has_param(root: torch.nn.Module, qualname: str) -> bool:
    try:
        root.get_parameter(qualname)
        return True
    except AttributeError:
        return False
