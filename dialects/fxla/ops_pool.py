"""The ``pool`` family: window pooling of any spatial rank: max (with or without torch's argmax indices) and
average (part of the op table; see :mod:`.ops`).

The spatial rank is ``len(kernel_size)``: the trailing that many dims are pooled, the one or two dims before
them ([N, C] or [C]) are batch dims.  For max pooling padding counts as -inf (it never wins), as in torch.

``LEGACY_OPS`` holds ``fxla.max_pool2d``, the former 2-D spelling of ``fxla.max_pool``: no lowering emits it and it
is no part of the table (:data:`.ops.ALL_OPS`), but IR written with it still parses, verifies, prints back under
its own name and lowers like ``fxla.max_pool`` (:func:`.ops.lookup`).
"""
from __future__ import annotations

from functools import partial

from . import infer
from .opdef import BOOL, I64, I64_ARRAY, Attr, FloatOperand, OpDef, Operand
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

avg_pool = OpDef("avg_pool", "N-d average pooling over the trailing len(kernel_size) dims (torch's avg_pool1d/2d/3d: "
                 "windows are clipped to the padded input; padding counts per `count_include_pad`).",
                 (FloatOperand("input", "[N, C, *spatial] or [C, *spatial]"),),
                 (Attr("kernel_size", I64_ARRAY, "window size"),
                  Attr("stride", I64_ARRAY, "window strides, one per spatial dim"),
                  Attr("padding", I64_ARRAY, "symmetric zero padding, one per spatial dim"),
                  Attr("ceil_mode", BOOL, "round output size up", default=False),
                  Attr("count_include_pad", BOOL, "padding elements count in the divisor", default=True),
                  Attr("divisor_override", I64, "divide by this instead (0: none)", default=0)),
                 infer=infer.pool, torch="torch.nn.functional.avg_pool2d")

POOL_OPS = (max_pool, max_pool_with_indices, avg_pool)

# -- legacy spellings: accepted in IR, never emitted, not in ALL_OPS ------------------------------------------------
max_pool2d = OpDef("max_pool2d", "2-D max pooling over the last two dims (padding counts as -inf); the 2-D spelling "
                   "of `fxla.max_pool`, kept for existing IR (the lowering emits `fxla.max_pool`).",
                   (Operand("input", "[N, C, H, W] or [C, H, W]"),),
                   (Attr("kernel_size", I64_ARRAY, "window size"),
                    Attr("stride", I64_ARRAY, "window strides, one per spatial dim"),
                    Attr("padding", I64_ARRAY, "symmetric zero padding, one per spatial dim"),
                    Attr("dilation", I64_ARRAY, "window dilation, one per spatial dim"),
                    Attr("ceil_mode", BOOL, "round output size up", default=False)),
                   infer=partial(infer.pool, spatial=2), torch="torch.nn.functional.max_pool2d")

LEGACY_OPS = (max_pool2d,)
