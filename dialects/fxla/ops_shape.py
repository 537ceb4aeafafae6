"""The ``shape`` family: ops that move elements without computing on them: reshape, permute, broadcast, join,
reverse and pad (part of the op table; see :mod:`.ops`).

``view``/``flatten``/``squeeze``/``unsqueeze`` become ``fxla.reshape``; ``transpose``/``t``/``movedim`` become
``fxla.permute``; splitting ops (``split``, ``chunk``, ``unbind``) become several ``fxla.slice`` ops (indexing).
"""
from __future__ import annotations

from . import infer, infer_indexing as inf
from .opdef import F64, I64, I64_ARRAY, STR, Attr, OpDef, Operand, Variadic

_X = (Operand("input"),)

reshape = OpDef("reshape", "Row-major reshape to a fully static `shape` (view/reshape/flatten).", _X,
                (Attr("shape", I64_ARRAY, "the result shape"),), infer=infer.reshape, torch="torch.reshape")
permute = OpDef("permute", "Permute dimensions: result dim i is input dim dims[i].", _X,
                (Attr("dims", I64_ARRAY, "a permutation of the input dims (negative allowed)"),),
                infer=infer.permute, torch="torch.permute")
expand = OpDef("expand", "Broadcast to `shape` (size-1 dims repeat, new dims in front), like Tensor.expand.", _X,
               (Attr("shape", I64_ARRAY, "the static result shape"),), infer=inf.expand, torch="torch.Tensor.expand")
concat = OpDef("concat", "Concatenation along `dim`; element types promote like torch.cat.",
               (Variadic("inputs", "tensors of equal rank whose shapes agree outside `dim`"),),
               (Attr("dim", I64, "the joined dimension (negative counts from the end)"),),
               infer=inf.concat, torch="torch.cat")
flip = OpDef("flip", "Reverse the order of elements along `dims`.", _X,
             (Attr("dims", I64_ARRAY, "distinct dims to reverse"),), infer=inf.dims_op, torch="torch.flip")
pad = OpDef("pad", "Constant padding: `low[i]`/`high[i]` elements before/after dim i (negative crops).", _X,
            (Attr("low", I64_ARRAY, "padding before, per dim"), Attr("high", I64_ARRAY, "padding after, per dim"),
             Attr("value", F64, "the fill value (converted to the element type)", default=0.0)),
            infer=inf.pad, torch="torch.nn.functional.pad")

detach = OpDef("detach", "The input itself, with a zero gradient: where a gradient must stop (Tensor.detach, "
               "embedding's padding row).", _X,
               (Attr("first_order", STR, "set where a lowering rule detaches to give a torch op's exact first "
                     "derivative by a straight-through term (the op named): a derivative of the program that "
                     "recomputes it, or a gradient of its residuals, refuses a second derivative through it",
                     default=None),),
               infer=infer.same_as_first, torch="torch.Tensor.detach")

no_gradient = OpDef("no_gradient", "The input itself, through which no gradient may be asked: the result of a torch op "
                    "that torch cannot differentiate either (a gradient through it is an error naming `op`).", _X,
                    (Attr("op", STR, "the torch op whose result it is (named in the error)"),
                     Attr("reason", STR, "why (empty: torch has no derivative for the op either)", default="")),
                    infer=infer.same_as_first, torch="(derivative not implemented)")

keep_history = OpDef("keep_history", "The value of `input`, with the gradient of `history`: a tensor changed in place "
                     "where torch records no history (under torch.no_grad()) keeps the history it had before the "
                     "change, as eager's does (the cotangent goes to `history`, none to `input`).",
                     (Operand("input", "the new value"), Operand("history", "the tensor before the change")),
                     infer=infer.same_types, torch="(in place under torch.no_grad())")

dim_size = OpDef("dim_size", "The size of dim `dim` of the input as a `tensor<i64>`: how a polymorphic program (symbolic "
                 "dims, docs/shapes.md) reads a symbolic size.", _X,
                 (Attr("dim", I64, "the dim (negative counts from the end)"),), infer=infer.dim_size,
                 torch="torch.Tensor.size")

SHAPE_OPS = (reshape, permute, expand, concat, flip, pad, detach, no_gradient, keep_history, dim_size)
