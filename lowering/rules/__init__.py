"""Lowering rules, one small function per torch op family (importing this package fills the table)."""
from . import (activations, composite, creation, elementwise, embedding_bag, indexing, joining, nn,  # noqa: F401
               normalization, padding, pooling, reductions, rnn, scans, scatter, shape)
