"""fxla.recompile: every compiled signature is logged (logger ``fxla.compile``), a module past its recompile
budget warns once, and ``precompile`` compiles signatures ahead of the calls."""
from __future__ import annotations

import logging
import warnings

import pytest
import torch
import torch.nn as nn

import fxla
from fxla.recompile import RecompileWarning


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def test_each_compile_is_logged_with_the_old_and_new_signature(caplog):
    fast = fxla.compile(mlp())
    with torch.no_grad(), caplog.at_level(logging.INFO, logger="fxla.compile"):
        fast(torch.randn(2, 4))
        fast(torch.randn(2, 4))                       # same signature: no compile, no record
        fast(torch.randn(3, 4))
    records = [r.getMessage() for r in caplog.records if r.name == "fxla.compile"]
    assert len(records) == 2
    assert records[0].startswith("Sequential: compiled input signature #1 (input=float32[2, 4]) in ")
    assert records[1].startswith("Sequential: compiled input signature #2 (input=float32[3, 4]) in ")
    assert "; why: the first call; phases: prepare " in records[0]
    assert "; why: changed from signature #1: input float32[2, 4] -> float32[3, 4]; phases: prepare " in records[1]
    assert records[1].endswith(" s (XLA compile)") or records[1].endswith(" s (executable from the on-disk cache)")


def test_passing_the_budget_warns_once_with_the_fix():
    fast = fxla.compile(mlp())
    fast.recompile_budget = 2
    with torch.no_grad(), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for n in range(1, 6):
            fast(torch.randn(n, 4))
    warned = [w for w in seen if issubclass(w.category, RecompileWarning)]
    assert len(warned) == 1
    message = str(warned[0].message)
    assert message.startswith("Sequential has compiled 3 input signatures (more than its recompile_budget of 2)")
    assert "fix: pad inputs to a few sizes" in message and "fast.precompile" in message


def test_precompile_compiles_ahead_of_the_calls():
    fast = fxla.compile(mlp())
    assert fast.precompile(torch.randn(1, 4), (torch.randn(8, 4),), torch.randn(1, 4)) == 2
    assert fast.cache_size == 2
    with torch.no_grad():
        fast(torch.randn(8, 4))
    assert fast.cache_size == 2
