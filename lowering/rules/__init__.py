"""Lowering rules, one small function per torch op family (importing this package fills the table)."""
from . import activations, creation, elementwise, indexing, joining, nn, shape  # noqa: F401
