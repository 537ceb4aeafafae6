"""fxla -> StableHLO rewrite patterns, one per fxla op, keyed by the op's :class:`OpDef` object.

One module per op family, named like the dialect's (``patterns/<family>.py`` lowers the ops of
``dialects/fxla/ops_<family>.py``); helpers that patterns of several families share live in :mod:`.builder`.

A pattern is ``pattern(b, *operands, **attrs) -> ir.Value`` where ``b`` is a :class:`Builder` positioned at
the fxla op (its insertion point and location), operands are the op's values (``None`` for an absent optional
one) and attrs its attributes as Python values.  :mod:`fxla.lowering.to_stablehlo` wraps each in an MLIR
rewrite pattern.
"""
from .builder import PATTERNS, Builder, pattern  # noqa: F401
from . import (creation, elementwise, indexing, linalg, nn, pool, recurrent, reduce, scan,  # noqa: F401,E402
               shape)  # (the table)

__all__ = ["PATTERNS", "Builder", "pattern"]
