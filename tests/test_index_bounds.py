"""Index bounds known at compile time (lowering/index_bounds.py): an embedding of positions past its table, a
constant index list past a dim, are an ``IndexOutOfRangeError`` at the user's line -- as eager raises IndexError
-- instead of XLA's silent clamp; in range, nothing changes."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import fxla
from fxla.lowering.index_bounds import IndexOutOfRangeError


class Positions(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(10, 4)

    def forward(self, x):
        return x + self.table(torch.arange(x.shape[1]))


def test_positions_past_the_table_are_an_error_as_in_eager():
    m = Positions().eval().requires_grad_(False)
    fast = fxla.compile(m)
    x = torch.randn(2, 10, 4)
    torch.testing.assert_close(fast(x), m(x))
    with pytest.raises(IndexError):
        m(torch.randn(2, 12, 4))
    with pytest.raises(IndexOutOfRangeError, match=r"reads index 11 of a dim of size 10") as info:
        fast(torch.randn(2, 12, 4))
    assert "test_index_bounds.py" in str(info.value) and isinstance(info.value, IndexError)


def test_symbolic_positions_are_checked_per_size():
    m = Positions().eval().requires_grad_(False)
    fast = fxla.compile(m, dynamic={"x": {1: fxla.Dim("seq")}})
    for n in (4, 10):
        x = torch.randn(2, n, 4)
        torch.testing.assert_close(fast(x), m(x))
    with pytest.raises(IndexOutOfRangeError, match="index 10 of a dim of size 10"):
        fast(torch.randn(2, 11, 4))
    assert fast._dynamic.lowerings == 1


def test_a_constant_index_list_past_the_dim():
    def f(x):
        return x[:, [0, 2, 5]]
    fast = fxla.compile(f)
    torch.testing.assert_close(fast(torch.arange(12.).view(2, 6)), f(torch.arange(12.).view(2, 6)))
    with pytest.raises(IndexOutOfRangeError, match="index 5 of a dim of size 4"):
        fast(torch.randn(2, 4))


def test_shifted_positions():
    class Offset(Positions):
        def forward(self, x):
            return x + self.table(torch.arange(x.shape[1]) + 3)
    m = Offset().eval().requires_grad_(False)
    fast = fxla.compile(m)
    x = torch.randn(1, 7, 4)
    torch.testing.assert_close(fast(x), m(x))
    with pytest.raises(IndexOutOfRangeError, match="index 10 of a dim of size 10"):
        fast(torch.randn(1, 8, 4))
