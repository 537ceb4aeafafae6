"""Family ``creation`` (lowering/rules/creation.py) against eager: the traced forms of the creation ops, tril/triu,
and what eager fixes exactly of the random ones (tests/test_random.py has their statistics).
The harness is tests/test_ops.py."""
from __future__ import annotations

from functools import partial

import pytest
import torch
from test_ops import BF16, BOOL, F32, I64, add_case, params_of, run_case, t

CASES = []
case = partial(add_case, CASES)


ALL3 = (F32, I64, BOOL)

# ---------------------------------------------------------------------------------------------------------------
# creation: the traced forms
# ---------------------------------------------------------------------------------------------------------------
case((torch.zeros, torch.ones, torch.empty, torch.full), "creation_from_traced_shape",
     lambda x: (torch.zeros(x.shape), torch.ones(x.shape, dtype=torch.int32) + 1, x + torch.empty(x.shape).shape[0],
                torch.full(x.shape, 2.5), torch.full(x.shape, 3)), t(2, 3))
case((torch.zeros_like, torch.ones_like, torch.empty_like, torch.full_like), "creation_like",
     lambda x: (torch.zeros_like(x), torch.ones_like(x), x + torch.empty_like(x).size(1), torch.full_like(x, 7),
                torch.ones_like(x, dtype=torch.float16), torch.full_like(x, True, dtype=torch.bool)), t(2, 3),
     dtypes=(F32, BF16, I64, BOOL))
case((torch.Tensor.new_zeros, torch.Tensor.new_ones, torch.Tensor.new_full, torch.Tensor.new_empty), "creation_new",
     lambda x: (x.new_zeros(3), x.new_ones((2, 2)), x.new_full((2,), 4), x + x.new_empty(2).shape[0],
                x.new_zeros(2, dtype=torch.int64)), t(2, 3), dtypes=(F32, I64))
case(torch.arange, "arange",
     lambda x: (torch.arange(x.size(0)), torch.arange(1, x.size(1), 2), torch.arange(x.size(0), dtype=torch.float32),
                torch.arange(0.5, x.size(1)), torch.arange(x.size(1), 0, -1) * 2,
                torch.arange(x.size(0), dtype=torch.bfloat16)), t(5, 7))
case((torch.eye, torch.linspace, torch.logspace), "eye_linspace_logspace",
     lambda x: (torch.eye(x.size(0)), torch.eye(x.size(0), 3, dtype=torch.int64), torch.eye(x.size(1), dtype=torch.bool),
                torch.linspace(x.min(), x.max(), 7), torch.linspace(0, x.size(0), 5),
                torch.linspace(-1, 1, x.size(1), dtype=torch.float64), torch.linspace(0, 10, x.size(0), dtype=torch.int64),
                torch.linspace(x.max(), 3, 1), torch.linspace(0, 1, x.size(1), dtype=torch.float16),
                torch.logspace(0, x.max().clamp(max=3), 4), torch.logspace(-2, 2, x.size(0), base=2.0)),
     t(5, 7), dtypes=(F32,))
case((torch.tril, torch.Tensor.tril, torch.triu, torch.Tensor.triu), "tril_triu",
     lambda x: (torch.tril(x), x.tril(1), torch.tril(x, -1), torch.triu(x), x.triu(-2), torch.triu(x, 2)),
     t(2, 4, 5), dtypes=ALL3)


# ---------------------------------------------------------------------------------------------------------------
# random tensors: drawn per call (tests/test_random.py checks their statistics); here what eager fixes exactly --
# ranges, dtypes, shapes, and degenerate draws (a one-value integer range, probabilities 0 and 1)
# ---------------------------------------------------------------------------------------------------------------
case((torch.rand, torch.rand_like), "rand_in_unit_interval",
     lambda x: ((torch.rand(x.shape) >= 0) & (torch.rand(x.shape, dtype=torch.float64) < 1), torch.rand_like(x).floor(),
                torch.rand_like(x, dtype=torch.bfloat16).floor()), t(3, 4), dtypes=(F32, BF16))
case((torch.randn, torch.randn_like), "randn_finite",
     lambda x: (torch.randn(x.shape).abs() < 100, torch.randn_like(x).abs() < 100, torch.randn(x.size(0), 2) * 0 == 0),
     t(3, 4), dtypes=(F32, BF16))
case((torch.randint, torch.randint_like), "randint_one_value",
     lambda x: (torch.randint(3, 4, x.shape), torch.randint(1, (x.size(0), 2), dtype=torch.int32),
                torch.randint_like(x, 5, 6), torch.randint_like(x, 1), torch.randint(0, 7, x.shape) < 7),
     t(2, 3), dtypes=(F32, I64))
case((torch.bernoulli, torch.Tensor.bernoulli), "bernoulli_certain",
     lambda x: (torch.bernoulli(torch.zeros_like(x)), torch.bernoulli(torch.ones_like(x)),
                torch.ones_like(x).bernoulli(),
                torch.bernoulli(torch.zeros_like(x), 0.0), torch.bernoulli(torch.zeros_like(x), p=1.0)),
     t(3, 4), dtypes=(F32, BF16))


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)
