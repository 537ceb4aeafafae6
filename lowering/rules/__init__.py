"""Lowering rules, one small function per torch op family (importing this package fills the table)."""
from . import activations, creation, elementwise, indexing, joining, nn, reductions, shape  # noqa: F401
