"""Lowering rules, one small function per torch op family (importing this package fills the table)."""
from . import elementwise, nn, shape  # noqa: F401
