"""Gradients of every lowered op against torch.autograd: each float case of ``tests/test_ops_*.py`` (the numeric
cases of every lowering rule) is differentiated with respect to its float inputs and parameters
(tests/grad_support.py) through random cotangents of its float outputs."""
from __future__ import annotations

import pytest
import torch

from grad_support import check_grad
from test_ops import _build, all_cases, make

F32 = torch.float32


def _params():
    params = []
    for c in all_cases():
        if F32 in c.dtypes and F32 not in c.xfail:
            params.append(pytest.param(c, id=c.name.replace("/", "+")))
    return params


@pytest.mark.parametrize("case", _params())
def test_gradient_matches_eager(case):
    gen = torch.Generator().manual_seed(0)
    inputs = tuple(make(spec, F32, gen) for spec in case.inputs)
    fn = _build(case, F32)
    check_grad(fn, inputs, tol=case.tol)
