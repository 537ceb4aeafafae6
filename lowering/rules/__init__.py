"""Lowering rules, one small function per torch op family (importing this package fills the table)."""
from . import (activations, composite, creation, elementwise, indexing, joining, nn, normalization,  # noqa: F401
               padding, pooling, reductions, shape)
