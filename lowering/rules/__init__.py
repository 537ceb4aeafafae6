"""Lowering rules, one small function per torch op family (importing this package fills the table)."""
from . import (activations, attention, composite, creation, ctc, elementwise, embedding_bag, im2col,  # noqa: F401
               indexing, joining, losses, nn, normalization, padding, pooling, reductions, rnn, scans, scatter,
               shape)
