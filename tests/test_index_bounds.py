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


class Tokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, ids):
        return self.emb(ids).sum(1)


def test_token_ids_past_the_vocabulary_are_an_error_as_in_eager():
    m = Tokens().eval().requires_grad_(False)
    fast = fxla.compile(m)
    ids = torch.tensor([[1, 9, 3]])
    for _ in range(3):                           # (every call is checked: no call plan skips it)
        torch.testing.assert_close(fast(ids), m(ids))
    bad = torch.tensor([[1, 10, 3]])
    with pytest.raises(IndexError):
        m(bad)
    with pytest.raises(IndexOutOfRangeError, match=r"tensor input 0 holds 10, and %emb indexes a dim of size 10 "
                                                   r"with it \(valid: \[0, 10\)\)"):
        fast(bad)
    with pytest.raises(IndexOutOfRangeError, match="holds -1"):
        fast(torch.tensor([[-1, 2, 3]]))


def test_advanced_indexing_takes_negative_indices_as_eager():
    def f(x, idx):
        return x[idx]
    fast = fxla.compile(f)
    x = torch.arange(5.)
    for idx in (torch.tensor([0, -1, -5, 4]), torch.tensor([2])):
        torch.testing.assert_close(fast(x, idx), f(x, idx))
    with pytest.raises(IndexOutOfRangeError, match=r"holds -6.*valid: \[-5, 5\)"):
        fast(x, torch.tensor([1, -6]))
    with pytest.raises(IndexOutOfRangeError, match="holds 5"):
        fast(x, torch.tensor([5]))


def test_labels_past_the_classes_of_a_loss():
    def loss(logits, labels):
        return torch.nn.functional.cross_entropy(logits, labels)
    fast = fxla.compile(loss)
    logits = torch.randn(4, 3)
    torch.testing.assert_close(fast(logits, torch.tensor([0, 2, 1, 2])), loss(logits, torch.tensor([0, 2, 1, 2])))
    ignored = torch.tensor([0, -100, 1, -100])            # (ignore_index: not an index)
    torch.testing.assert_close(fast(logits, ignored), loss(logits, ignored))
    with pytest.raises(IndexOutOfRangeError, match="holds 3"):
        fast(logits, torch.tensor([0, 3, 1, 2]))


def test_a_training_step_checks_its_labels():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = fxla.compile_step(model, opt, lambda m, x, y: torch.nn.functional.cross_entropy(m(x), y))
    x = torch.randn(5, 4)
    step(x, torch.tensor([0, 1, 2, 1, 0]))
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(IndexOutOfRangeError, match="holds 3"):
        step(x, torch.tensor([0, 1, 3, 1, 0]))
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))    # (refused before it ran)
