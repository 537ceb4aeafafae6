"""The ``fxla`` op table.  Every op mirrors one torch operation's semantics on static shapes.

Read the `ops_<family>.py` files as the dialect's specification, one per op family (`FAMILIES`); this module
assembles them and re-exports every op by name (`ops.add`).  `docs/dialect.md` is generated from it
(`python -m fxla.dialects.fxla.docs`).  Shared conventions:

* ops are built as unregistered MLIR ops (jaxlib's MLIR has no IRDL) and printed in the dialect's own syntax
  (see "Syntax" below), e.g. `%0 = fxla.add %a, %b : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>`; MLIR's
  generic form (`"fxla.add"(%a, %b) : (...) -> ...`) is read too;
* operands are ranked, statically shaped tensors; Python scalars enter as 0-d `fxla.constant` ops;
* elementwise ops broadcast like torch and promote element types like `torch.result_type` (0-d operands
  only raise the category); the lowering to StableHLO inserts the broadcasts and converts;
* an optional operand is written with its name when present (`bias %b`); in generic form, ops with optional
  operands carry `operandSegmentSizes` (one 0/1 entry per declared operand);
* dims may be negative (counted from the end), as in torch.

One family vocabulary names every place an op lives: its `OpDef` in `dialects/fxla/ops_<family>.py`, its
StableHLO pattern in `lowering/patterns/<family>.py` and its FileCheck cases in
`lit_tests/Conversion/FxlaToStablehlo/<family>.mlir` (`tests/test_families.py` checks all three).
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

from .opdef import OpDef
from .ops_elementwise import (ELEMENTWISE_OPS, abs, add, bitwise_and, bitwise_not, bitwise_or,  # noqa: F401
                              bitwise_xor, ceil, clamp, convert, cos, div, elu, eq, erf, exp, expm1,
                              floor, floor_divide, fmod, ge, gelu, gt, hardsigmoid, hardswish, le,
                              leaky_relu, log, log1p, logical_and, logical_not, logical_or, logical_xor,
                              logsigmoid, lt, maximum, minimum, mish, mul, ne, neg, pow, reciprocal,
                              relu, remainder, round, rsqrt, sigmoid, sign, silu, sin, softplus, sqrt,
                              sub, tan, tanh, trunc)
from .ops_creation import CREATION_OPS, arange, constant, rng  # noqa: F401
from .ops_shape import (SHAPE_OPS, concat, detach, dim_size, expand, flip, keep_history, no_gradient,  # noqa: F401
                        pad, permute, reshape)
from .ops_indexing import INDEXING_OPS, gather, index_select, scatter, slice, tril, triu, where  # noqa: F401
from .ops_reduce import (REDUCE_OPS, all, amax, amin, any, argmax, argmin, logsumexp, mean, prod, sort,  # noqa: F401
                         sum, topk, var)
from .ops_scan import SCAN_OPS, cummax, cummin, cumprod, cumsum, logcumsumexp  # noqa: F401
from .ops_linalg import LINALG_OPS, linear, matmul  # noqa: F401
from .ops_nn import NN_OPS, conv, layer_norm, log_softmax, softmax  # noqa: F401
from .ops_pool import POOL_OPS, LEGACY_OPS, avg_pool, max_pool, max_pool2d, max_pool_with_indices  # noqa: F401
from .ops_recurrent import RECURRENT_OPS, ctc_beta, ctc_loss, lstm, lstm_backward, rnn, rnn_backward  # noqa: F401


#: Op family -> its ops, in documentation order.  A family is defined in ``ops_<family>.py`` (as
#: ``<FAMILY>_OPS``) and lowered by ``fxla.lowering.patterns.<family>``.
FAMILIES: Dict[str, Tuple[OpDef, ...]] = {
    "elementwise": ELEMENTWISE_OPS,
    "creation": CREATION_OPS,
    "shape": SHAPE_OPS,
    "indexing": INDEXING_OPS,
    "reduce": REDUCE_OPS,
    "scan": SCAN_OPS,
    "linalg": LINALG_OPS,
    "nn": NN_OPS,
    "pool": POOL_OPS,
    "recurrent": RECURRENT_OPS,
}

#: Every op of the dialect, in documentation order (family by family).
ALL_OPS: Tuple[OpDef, ...] = tuple(op for family in FAMILIES.values() for op in family)

#: Op definitions by full name (``"fxla.add"``); used by the verifier and the parser-facing tools.
BY_NAME: Dict[str, OpDef] = {op.name: op for op in ALL_OPS}

#: Former spellings still accepted in IR (verified and lowered, never emitted, not in ``ALL_OPS``): each keeps its
#: own ``OpDef``, so old IR verifies and prints back exactly as before.  See ``ops_pool.LEGACY_OPS``.
LEGACY_BY_NAME: Dict[str, OpDef] = {op.name: op for op in LEGACY_OPS}


def lookup(name: str) -> Optional[OpDef]:
    """The definition of the op spelled ``name`` (``"fxla.add"``), a legacy spelling included; ``None`` if unknown."""
    return BY_NAME.get(name) or LEGACY_BY_NAME.get(name)
