"""``fxla-full-precision``: float32 dots and convolutions computed in float32 on accelerators.

torch computes a float32 matmul in full float32 by default (``torch.backends.cuda.matmul.allow_tf32`` is False);
XLA GPU computes a ``stablehlo.dot_general`` or ``stablehlo.convolution`` without a ``precision_config`` with
TF32 on tensor cores (XLA TPU: bfloat16 passes), which differs from eager by ~1e-3 relative -- measured on an
H200: GPT-2 small's logits 2.3e-3 off eager CUDA.  This pass sets ``precision_config = [HIGHEST, HIGHEST]`` on
every float32 (and float64) dot and convolution that has none, so an fxla program computes what eager does.

``fxla.compile`` runs it among the device layout passes (:func:`fxla.lowering.passes.device_layouts`) for every
device but the CPU (XLA CPU computes float32 in float32 whatever the precision says, so the CPU's StableHLO stays
as it is); ``fxla-opt --fxla-full-precision`` runs it on a file.
"""
from __future__ import annotations

from fxla.dialects.mlir import hlo, ir

_OPS = (hlo.DotGeneralOp.OPERATION_NAME, hlo.ConvolutionOp.OPERATION_NAME)
_FULL = ("f32", "f64")


def full_precision_pass(module) -> int:
    """The ``fxla-full-precision`` pass (see the module docstring), in place; returns how many ops it changed."""
    root = module.operation if isinstance(module, ir.Module) else module
    found = []

    def collect(op):
        if op.name in _OPS and "precision_config" not in op.attributes and \
                str(ir.RankedTensorType(op.operands[0].type).element_type) in _FULL:
            found.append(op)
        return ir.WalkResult.ADVANCE

    with root.context:
        root.walk(collect)
        highest = ir.ArrayAttr.get([hlo.PrecisionAttr.get("HIGHEST")] * 2)
        for op in found:
            op.attributes["precision_config"] = highest
    return len(found)
