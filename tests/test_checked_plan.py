"""Checked call plans (api/dispatch.py ``checked_plan``): a signature whose calls must be checked against their
inputs -- a program that writes its inputs back, views an input, reads input values as indices or draws random
bits -- skips binding and signature lookup on its later calls, and keeps every check and effect of the general
path (write-back, refusals, index checks, layouts, fresh random bits)."""
from __future__ import annotations

import importlib

import pytest
import torch

import fxla
from fxla.lowering.index_bounds import IndexOutOfRangeError

_compile = importlib.import_module("fxla.compile")


@pytest.fixture
def general_calls(monkeypatch):
    """How many calls went through CompiledModule._general_call (modules compiled after the fixture)."""
    count = [0]
    original = _compile.CompiledModule._general_call

    def spy(self, *args, **kwargs):
        count[0] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(_compile.CompiledModule, "_general_call", spy)
    return count


def _planned(fast):
    (plan,) = fast._plans.values()
    assert plan.host is None and plan.direct is None      # (a checked plan: no shortcut around the checks)
    return plan


def _accumulate(x, y):
    x += y
    return x * 2


def test_a_program_that_writes_its_inputs_back_runs_its_plan(general_calls):
    fast = fxla.compile(_accumulate)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    xe = x.clone()
    for _ in range(4):
        want = _accumulate(xe, y)
        torch.testing.assert_close(fast(x, y), want)
        torch.testing.assert_close(x, xe)                  # written back on every call
    assert general_calls[0] == 1
    _planned(fast)


def test_refusals_still_apply_through_the_plan(general_calls):
    fast = fxla.compile(_accumulate)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    fast(x, y)
    fast(x, y)
    same, want = x.clone(), x.clone()
    torch.testing.assert_close(fast(same, same), _accumulate(want, want))   # one tensor twice: as eager
    torch.testing.assert_close(same, want)
    before, rows = x.clone(), torch.randn(4, 4)
    with pytest.raises(fxla.InputMutationError, match="shares its memory"):
        fast(rows[:3], rows[1:])                           # the same plan key; overlapping rows, no view of both
    with pytest.raises(fxla.InputMutationError, match="requires grad"):
        fast(torch.randn(3, 4, requires_grad=True), y)
    with pytest.raises(fxla.InputMutationError, match="one memory location"):
        fast(torch.randn(1, 4).expand(3, 4), y)
    torch.testing.assert_close(x, before)                  # nothing was written by a refused call


def test_meta_inputs_are_refused_by_the_general_path(general_calls):
    fast = fxla.compile(_accumulate)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    fast(x, y)
    fast(x, y)
    with pytest.raises(fxla.SignatureError, match="meta tensor"):
        fast(torch.empty(3, 4, device="meta"), y)


def _lookup(table, ids):
    return table[ids] * 2


def test_index_checks_run_on_every_planned_call(general_calls):
    fast = fxla.compile(_lookup)
    table, ids = torch.randn(5, 3), torch.tensor([0, 4, 2])
    for _ in range(3):
        torch.testing.assert_close(fast(table, ids), _lookup(table, ids))
    assert general_calls[0] == 1
    _planned(fast)
    with pytest.raises(IndexOutOfRangeError):
        fast(table, torch.tensor([0, 5, 2]))


def _flatten(x):
    return x.view(-1) + 1


def test_a_viewed_input_must_be_contiguous_through_the_plan(general_calls):
    fast = fxla.compile(_flatten)
    x = torch.randn(4, 3)
    for _ in range(3):
        torch.testing.assert_close(fast(x), _flatten(x))
    assert general_calls[0] == 1
    _planned(fast)
    with pytest.raises(fxla.SignatureError, match="view size is not compatible"):
        fast(torch.randn(3, 4).t())                        # same shape and dtype: eager's view refuses it
    assert general_calls[0] == 2                           # (the plan handed it to the general path)


def test_random_programs_draw_fresh_bits_through_the_plan(general_calls):
    fast = fxla.compile(lambda x: torch.nn.functional.dropout(x, 0.5, training=True))
    x = torch.ones(256)
    draws = [fast(x) for _ in range(4)]
    assert general_calls[0] == 1
    _planned(fast)
    assert all(not torch.equal(a, b) for a, b in zip(draws, draws[1:]))
    torch.manual_seed(3)
    first = fast(x)
    torch.manual_seed(3)
    torch.testing.assert_close(fast(x), first)             # seeded from torch's generator, as eager
