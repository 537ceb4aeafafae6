"""fxla -> StableHLO rewrite patterns, one per fxla op, keyed by the op's :class:`OpDef` object.

A pattern is ``pattern(b, *operands, **attrs) -> ir.Value`` where ``b`` is a :class:`Builder` positioned at
the fxla op (its insertion point and location), operands are the op's values (``None`` for an absent optional
one) and attrs its attributes as Python values.  :mod:`fxla.lowering.to_stablehlo` wraps each in an MLIR
rewrite pattern.
"""
from .builder import PATTERNS, Builder, pattern  # noqa: F401
from . import elementwise, indexing, math, nn, pool, reduce, scan  # noqa: F401,E402  (fill the table)

__all__ = ["PATTERNS", "Builder", "pattern"]
