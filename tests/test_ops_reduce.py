"""Family ``reduce`` (lowering/rules/reduce.py) against eager: sum/mean, amax/amin, max/min, argmax/argmin, prod,
var/std, any/all, logsumexp, sort and top-k (values, indices and dtypes).
The harness is tests/test_ops.py."""
from __future__ import annotations

import builtins
from functools import partial

import pytest
import torch
from test_ops import BF16, BOOL, F16, F32, FLOATS, I32, I64, NUMERIC, add_case, params_of, run_case, t

CASES = []
case = partial(add_case, CASES)


# ---------------------------------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------------------------------
case(torch.sum, "torch.sum_all", lambda x: torch.sum(x), t(4, 16, kind="unit"), dtypes=(F32, BF16, I64, BOOL),
     tol=3)
case(torch.sum, "torch.sum_dim_keepdim", lambda x: torch.sum(x, -1, keepdim=True), t(3, 4, 16, kind="unit"),
     dtypes=(F32, F16, I64), tol=3)
case(torch.sum, "torch.sum_dims", lambda x: torch.sum(x, (0, -1)), t(3, 4, 5), dtypes=(I64,))
case(torch.sum, "torch.sum_dtype", lambda x: torch.sum(x, 1, dtype=torch.float32), t(3, 64), dtypes=(F16, I32),
     tol=3)
case(torch.sum, "torch.sum_dtype_narrow_int", lambda x: (torch.sum(x, dtype=torch.int32),
                                                        torch.sum(x.int(), 0, dtype=torch.int16)),
     t(5, 3), dtypes=(BOOL, I64))
case(torch.sum, "torch.sum_i32_widens", lambda x: torch.sum(x, 0), t(5, 3, dtype=I32))
case((torch.Tensor.sum, torch.Tensor.mean), "sum_mean_methods", lambda x: (x.sum(dim=1), x.mean(-1)), t(3, 4, 5),
     tol=3)
case(torch.mean, "torch.mean_all", lambda x: torch.mean(x), t(4, 16, kind="unit"), dtypes=FLOATS, tol=3)
case(torch.mean, "torch.mean_dims_keepdim", lambda x: torch.mean(x, (-1, 1), keepdim=True), t(2, 3, 8),
     dtypes=(F32, BF16), tol=3)
case(torch.mean, "torch.mean_int_with_dtype", lambda x: torch.mean(x, 0, dtype=torch.float32), t(5, 3, dtype=I64))

case((torch.amax, torch.amin, torch.Tensor.amax, torch.Tensor.amin), "amax_amin",
     lambda x: (torch.amax(x), torch.amax(x, 1), torch.amin(x, (0, -1), keepdim=True), x.amax(-1), x.amin(dim=0)),
     t(3, 4, 5), dtypes=NUMERIC + (BOOL,))
case((torch.max, torch.min), "max_min_overloads",     # full reduction, (values, indices) with dim, elementwise
     lambda x, y: (torch.max(x), torch.min(x), torch.max(x, 1)[0], torch.max(x, 1)[1], torch.min(x, -1, keepdim=True)[0], torch.min(x, -1, keepdim=True)[1],
                   torch.max(x, y), torch.min(x, y)), t(3, 5), t(5), dtypes=NUMERIC)
case((torch.Tensor.max, torch.Tensor.min), "max_min_methods",
     lambda x: (x.max(), x.max(dim=0).__getitem__(1), x.min(1)[0], x.max(0, True)), t(4, 3, kind="small"),
     dtypes=(F32, I64))
case(torch.max, "max_named_tuple", lambda x: torch.max(x, 0), t(4, 3))
case((torch.argmax, torch.argmin, torch.Tensor.argmax, torch.Tensor.argmin), "argmax_argmin",  # ties: first index
     lambda x: (torch.argmax(x), torch.argmax(x, 1), torch.argmin(x, 0, keepdim=True), x.argmax(-1, True),
                x.argmin(), torch.argmax(x, keepdim=True)), t(4, 6, kind="small"), dtypes=NUMERIC)
case(torch.argmax, "argmax_nan", lambda x: torch.argmax(torch.where(x > 1, x * float("nan"), x), 1), t(5, 6))
case((torch.prod, torch.Tensor.prod), "prod",
     lambda x: (torch.prod(x), torch.prod(x, 1), x.prod(0, keepdim=True), torch.prod(x, 1, dtype=torch.float32)),
     t(3, 4, kind="unit"), dtypes=(F32, BF16, I64, BOOL), tol=3)
case((torch.var, torch.std, torch.Tensor.var, torch.Tensor.std), "var_std",
     lambda x: (torch.var(x), torch.var(x, 1), torch.var(x, (0, 2), keepdim=True, correction=0),
                torch.std(x, 0, unbiased=False), torch.std(x), x.var(-1, correction=2), x.std(1, keepdim=True),
                torch.var(x, False)), t(3, 4, 5), dtypes=FLOATS, tol=5)
case((torch.any, torch.all, torch.Tensor.any, torch.Tensor.all), "any_all",
     lambda x: (torch.any(x), torch.all(x), torch.any(x, 1), torch.all(x, -1, keepdim=True), x.any(0), x.all()),
     t(3, 4, kind="small"), dtypes=(F32, I64, BOOL))
case(torch.any, "any_u8", lambda x: (torch.any(x), torch.any(x, 0)), t(3, 4, dtype=torch.uint8))
case((torch.logsumexp, torch.Tensor.logsumexp), "logsumexp",
     lambda x: (torch.logsumexp(x, 1), torch.logsumexp(x * 50, (0, 1), keepdim=True), x.logsumexp(-1)), t(3, 6),
     dtypes=FLOATS + (I64,), tol=3)
case(torch.logsumexp, "logsumexp_inf", lambda x: torch.logsumexp(torch.where(x > 0, float("-inf"), x * 0 - float("inf")), 1),
     t(3, 4))

case((torch.sort, torch.Tensor.sort, torch.argsort, torch.Tensor.argsort), "sort",
     lambda x: (torch.sort(x)[0], torch.sort(x)[1], x.sort(0, descending=True)[0], x.sort(0, descending=True)[1], torch.argsort(x, 1), x.argsort(dim=0, descending=True),
                torch.sort(x, stable=True)[1]), t(4, 5), dtypes=FLOATS + (I64,))
case(torch.sort, "sort_named_tuple_nan", lambda x: torch.sort(torch.where(x > 1, float("nan"), x), 0), t(6, 3))
case((torch.topk, torch.Tensor.topk), "topk",
     lambda x: (torch.topk(x, 2)[0], torch.topk(x, 2)[1], x.topk(3, dim=0, largest=False)[0], x.topk(3, dim=0, largest=False)[1], torch.topk(x, 1, 1)[0]), t(4, 6),
     dtypes=(F32, BF16))
case(torch.topk, "topk_int_values", lambda x: (torch.topk(x, 3)[0], torch.topk(x, 2, 0, largest=False)[0]), t(4, 6),
     dtypes=(I64,))                               # torch orders tied indices arbitrarily: values only

case((torch.max, builtins.getattr), "named_tuple_fields", lambda x: (torch.max(x, 1).values, x.sort().indices), t(3, 4))


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)
