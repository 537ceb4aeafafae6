"""The ``creation`` family: tensors made from attributes alone, no operands (part of the op table; see :mod:`.ops`).

Python scalars enter the IR as 0-d ``fxla.constant`` ops; creation ops with static sizes (``torch.zeros``,
``torch.full``, ``torch.arange`` ...) become ``fxla.constant`` splats or ``fxla.arange``.
"""
from __future__ import annotations

from . import infer, infer_indexing
from .opdef import DENSE, F64, I64, Attr, OpDef

constant = OpDef("constant", "A tensor literal (also how Python scalars enter the IR, as 0-d tensors).", (),
                 (Attr("value", DENSE, "the elements; its type is the result type"),), infer=infer.constant,
                 torch="torch.tensor")
arange = OpDef("arange", "start + i * step for i in [0, length); the result type names the element type.", (),
               (Attr("start", F64, "first value"), Attr("step", F64, "increment"),
                Attr("length", I64, "number of elements")),
               infer=infer_indexing.arange, torch="torch.arange")

CREATION_OPS = (constant, arange)
