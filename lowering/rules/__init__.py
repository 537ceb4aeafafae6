"""Lowering rules, one file per torch op family (importing this package fills the table).

Families named as the dialect names them (elementwise, creation, shape, indexing, reduce, scan, linalg, nn,
pooling) and torch-only ones by what they hold (activations, attention, ctc, embedding_bag, im2col, losses,
normalization, padding, resampling, rnn, scatter).  Rules share helpers through the lowering context and
:mod:`fxla.lowering.emit`, never through another rule file's private names."""
from . import (activations, attention, creation, ctc, elementwise, embedding_bag, im2col, indexing,  # noqa: F401
               linalg, losses, nn, normalization, padding, pooling, reduce, resampling, rnn, scan, scatter, shape)
