"""Family ``embedding_bag`` (lowering/rules/embedding_bag.py) against eager: F.embedding_bag / nn.EmbeddingBag in
every mode, with 2-D input or 1-D input and offsets, per_sample_weights and padding_idx.
The harness is tests/test_ops.py."""
from __future__ import annotations

from functools import partial

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from test_ops import BF16, F16, F32, add_case, index, params_of, run_case, t

CASES = []
case = partial(add_case, CASES)


# -- EmbeddingBag with offsets (bag boundaries are data: sorted from a traced tensor) ----------------------------
def _offsets(o):
    """Non-decreasing offsets starting at 0 (empty bags likely), computed in the traced program."""
    o = torch.sort(o)[0]
    return o - o[0]


case(F.embedding_bag, "F.embedding_bag_offsets",
     lambda i, w, o, p: (F.embedding_bag(i, w, _offsets(o), mode="sum"), F.embedding_bag(i, w, _offsets(o)),
                         F.embedding_bag(i, w, _offsets(o), mode="max"),
                         F.embedding_bag(i, w, _offsets(o), mode="sum", per_sample_weights=p),
                         F.embedding_bag(i, w, _offsets(o), mode="sum", include_last_offset=True),
                         F.embedding_bag(i, w, _offsets(o), mode="mean", include_last_offset=True),
                         F.embedding_bag(i, w, _offsets(o), mode="max", padding_idx=3),
                         F.embedding_bag(i, w, _offsets(o), mode="mean", padding_idx=-7)),
     index(12, high=10), t(10, 5), index(5, high=12), t(12), dtypes=(F32, BF16, F16), tol=2)
case(F.embedding_bag, "F.embedding_bag_2d_padding_idx",
     lambda i, w: (F.embedding_bag(i, w, mode="sum", padding_idx=2), F.embedding_bag(i, w, padding_idx=2),
                   F.embedding_bag(i, w, mode="max", padding_idx=2)),
     index(4, 3, high=4), t(4, 6), dtypes=(F32, BF16), tol=2)


class _Bag(nn.Module):
    """An nn.EmbeddingBag called with 1-D input and offsets (a buffer: a runtime tensor of the compiled program)."""

    def __init__(self, mode, include_last_offset=False, padding_idx=None):
        super().__init__()
        self.bag = nn.EmbeddingBag(10, 4, mode=mode, include_last_offset=include_last_offset, padding_idx=padding_idx)
        self.register_buffer("offsets", torch.tensor([0, 2, 2, 5, 7]))

    def forward(self, x):
        return self.bag(x, self.offsets)


case(nn.EmbeddingBag, "nn.EmbeddingBag_offsets_sum", lambda: _Bag("sum"), index(9, high=10), module=True)
case(nn.EmbeddingBag, "nn.EmbeddingBag_offsets_mean_last", lambda: _Bag("mean", True), index(9, high=10),
     module=True, dtypes=(F32, BF16), tol=2)
case(nn.EmbeddingBag, "nn.EmbeddingBag_offsets_max_padding", lambda: _Bag("max", padding_idx=1), index(9, high=10),
     module=True)

case(F.embedding_bag, "F.embedding_bag",
     lambda i, w, p: (F.embedding_bag(i, w, mode="sum"), F.embedding_bag(i, w), F.embedding_bag(i, w, mode="max"),
                      F.embedding_bag(i, w, mode="sum", per_sample_weights=p)),
     index(4, 3, high=10), t(10, 5), t(4, 3), dtypes=(F32, BF16), tol=2)
case(nn.EmbeddingBag, "nn.EmbeddingBag_sum", lambda: nn.EmbeddingBag(10, 4, mode="sum"), index(3, 2, high=10),
     module=True)
case(nn.EmbeddingBag, "nn.EmbeddingBag_mean", lambda: nn.EmbeddingBag(10, 4), index(3, 5, high=10), module=True)


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)
