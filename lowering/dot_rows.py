"""How many rows the matrix products of a StableHLO program have: what picks XLA CPU's dot kernels.

XLA CPU (jaxlib 0.10.2) can run each dot on YNNPACK or on its own Eigen kernels.  Measured on this 2-core machine
(docs/performance.md, "Kernel libraries"), YNNPACK's individual dots are 4-13 % faster on products of up to a few
thousand rows (GPT-2 small and BERT-base at batch 1, 128 tokens: 0.86x -> 0.78x and 0.99x -> 0.86x eager's time;
an MLP at batch 128 1.07x -> 0.96x; ConvNeXt-Tiny at batch 1, 3136 rows: 1.07x -> 0.99x), equal at 1024 rows
(GPT-2 small at batch 8) and 3-6 % slower on products of 10^5 rows and more (ConvNeXt-Tiny, MobileNetV2 and
EfficientNet-B0 at batch 32).  :func:`largest_dot_rows` is the measure the choice is made on
(:func:`fxla.runtime.executable.forward_xla_options`).

The rows of a ``dot_general`` are its result's elements over the rhs's free dims (the batch dims times the lhs's
free dims).  A convolution with a 1x1 kernel, unit strides and dilations, no padding and one group is a dot to XLA
CPU too (it rewrites them): its rows are the batch times the output's spatial elements.
"""
from __future__ import annotations

import math

from fxla.dialects.mlir import hlo, ir

from .pool_layout import _attr, _ints, _shape


def _dot_rows(op) -> int:
    dn = hlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    rhs = _shape(op.operands[1]) or []
    fixed = set(_ints(dn.rhs_batching_dimensions)) | set(_ints(dn.rhs_contracting_dimensions))
    columns = math.prod(size for d, size in enumerate(rhs) if d not in fixed)
    return math.prod(_shape(op.results[0]) or []) // max(columns, 1)


def _pointwise_conv_rows(op) -> int:
    """The rows of a convolution that XLA CPU runs as a dot (see the module docstring), else 0."""
    dn = hlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
    kernel, out = _shape(op.operands[1]) or [], _shape(op.results[0]) or []
    spatial = _ints(dn.kernel_spatial_dimensions)
    ones = lambda name: all(v == 1 for v in _ints(_attr(op, name)))        # noqa: E731
    pads = _attr(op, "padding")
    if any(kernel[d] != 1 for d in spatial) or not ones("window_strides") or not ones("rhs_dilation") \
            or not ones("lhs_dilation") or (pads is not None and any(int(v) for v in ir.DenseIntElementsAttr(pads))) \
            or ir.IntegerAttr(op.attributes["feature_group_count"]).value != 1:
        return 0
    return out[dn.output_batch_dimension] * math.prod(out[d] for d in _ints(dn.output_spatial_dimensions))


def largest_dot_rows(module) -> int:
    """The most rows of any matrix product in ``module`` (see the module docstring); 0 without one."""
    root = module.operation if isinstance(module, ir.Module) else module
    rows = [0]

    def visit(op):
        if op.name == hlo.DotGeneralOp.OPERATION_NAME:
            rows.append(_dot_rows(op))
        elif op.name == hlo.ConvolutionOp.OPERATION_NAME:
            rows.append(_pointwise_conv_rows(op))
        return ir.WalkResult.ADVANCE

    with root.context:
        root.walk(visit)
    return max(rows)
