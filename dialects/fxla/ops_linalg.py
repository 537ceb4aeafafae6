"""The ``linalg`` family: contractions (part of the op table; see :mod:`.ops`).

Both lower to one ``stablehlo.dot_general``; ``einsum``, ``bmm``, ``mm``, ``mv``, ``@`` and friends are
rewritten onto them (with ``fxla.permute``/``fxla.reshape`` around) by the torch-side rules.
"""
from __future__ import annotations

from . import infer
from .opdef import OpDef, Operand

linear = OpDef("linear", "y = x @ weight^T + bias over the last dimension of x.",
               (Operand("input", "[..., in]"), Operand("weight", "[out, in]"),
                Operand("bias", "[out]", optional=True)),
               infer=infer.linear, torch="torch.nn.functional.linear")
matmul = OpDef("matmul", "torch.matmul: 1-D/2-D products and broadcast batched matrix products.",
               (Operand("lhs"), Operand("rhs")), infer=infer.matmul, torch="torch.matmul")

LINALG_OPS = (linear, matmul)
