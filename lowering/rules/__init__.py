"""Lowering rules, one small function per torch op family (importing this package fills the table)."""
from . import activations, creation, elementwise, indexing, joining, nn, normalization, reductions, shape  # noqa: F401
