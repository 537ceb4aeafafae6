"""fxla max pooling of any spatial rank, with or without torch's argmax indices (part of the op table; see
:mod:`.ops`).

The spatial rank is ``len(kernel_size)``: the trailing that many dims are pooled, the one or two dims before
them ([N, C] or [C]) are batch dims.  Padding counts as -inf (it never wins), as in torch.
"""
from __future__ import annotations

from . import infer
from .opdef import BOOL, I64_ARRAY, Attr, OpDef, Operand
from .types import FLOAT_TYPES, INT_TYPES, Sig

_WINDOW = (Attr("kernel_size", I64_ARRAY, "window size, one per spatial dim (their count is the spatial rank)"),
           Attr("stride", I64_ARRAY, "window strides, one per spatial dim"),
           Attr("padding", I64_ARRAY, "symmetric -inf padding, one per spatial dim (at most half the kernel)"),
           Attr("dilation", I64_ARRAY, "window dilation, one per spatial dim"),
           Attr("ceil_mode", BOOL, "round output size up", default=False))
_INPUT = (Operand("input", "[N, C, *spatial] or [C, *spatial]", elems=INT_TYPES + FLOAT_TYPES),)


def _with_indices(ops, attrs) -> list:
    (values,) = infer.pool(ops, attrs)
    return [values, Sig(values.shape, "i64")]


max_pool = OpDef("max_pool", "N-d max pooling over the trailing len(kernel_size) dims (torch's max_pool1d/2d/3d; "
                 "NaN propagates).", _INPUT, _WINDOW, infer=infer.pool, torch="torch.nn.functional.max_pool2d")
max_pool_with_indices = OpDef(
    "max_pool_with_indices", "max_pool plus, per output element, the int64 position of its maximum in the "
    "flattened spatial dims of the input (torch's return_indices=True): the first maximum in row-major order, "
    "the last NaN when a window holds NaN.", _INPUT, _WINDOW, results=("values", "indices"), infer=_with_indices,
    torch="torch.nn.functional.max_pool2d")

POOL_OPS = (max_pool, max_pool_with_indices)
