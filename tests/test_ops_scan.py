"""Family ``scan`` (lowering/rules/scan.py) against eager: cumsum/cumprod, cummax/cummin and logcumsumexp.
The harness is tests/test_ops.py."""
from __future__ import annotations

from functools import partial

import pytest
import torch
from test_ops import BF16, BOOL, F16, F32, FLOATS, I64, add_case, params_of, run_case, t

CASES = []
case = partial(add_case, CASES)


# -- scans -------------------------------------------------------------------------------------------------------
case((torch.cumprod, torch.Tensor.cumprod), "cumprod",
     lambda x: (torch.cumprod(x, 0), x.cumprod(-1), torch.cumprod(x, 1, dtype=torch.float64), x[0, 0].cumprod(0)),
     t(3, 4, 5, kind="unit"), dtypes=(F32, BF16, F16), tol=4)
case((torch.cumprod, torch.Tensor.cumprod), "cumprod_int_bool",
     lambda x, b: (torch.cumprod(x, 1), x.cumprod(0, dtype=torch.int32), torch.cumprod(b, -1), x.sum().cumprod(0)),
     t(3, 5, dtype=I64), t(2, 6, dtype=torch.bool))
case((torch.cummax, torch.Tensor.cummax, torch.cummin, torch.Tensor.cummin), "cummax_cummin",
     lambda x: (torch.cummax(x, 0), x.cummax(-1), torch.cummin(x, 1), x.cummin(dim=-2), torch.cummax(x, 1).values,
                torch.cummin(x, 2).indices, x[0, 0, 0].cummax(0)),
     t(3, 4, 6, kind="small"), dtypes=(F32, BF16, F16, I64))
case((torch.cummax, torch.cummin), "cummax_cummin_nan_inf",
     lambda x: (torch.cummax(x.masked_fill(x > 1, float("nan")), -1), torch.cummin(x.masked_fill(x < -1, float("nan")), 0),
                torch.cummax(x.masked_fill(x > 0, float("-inf")), 1), torch.cummin(x.masked_fill(x > 0, float("inf")), 1)),
     t(4, 7, kind="small"))
case((torch.cummax, torch.cummin), "cummax_cummin_bool", lambda b: (torch.cummax(b, 1), torch.cummin(b, 0)),
     t(3, 5, dtype=torch.bool))
case((torch.logcumsumexp, torch.Tensor.logcumsumexp), "logcumsumexp",
     lambda x: (torch.logcumsumexp(x, 0), x.logcumsumexp(-1), torch.logcumsumexp(x * 50, 1),
                torch.logcumsumexp(x.masked_fill(x < 0, float("-inf")), -1), x[0, 0, 0].logcumsumexp(0)),
     t(3, 4, 6), dtypes=FLOATS, tol=2)
case(torch.logcumsumexp, "logcumsumexp_inf_nan",
     lambda x: (torch.logcumsumexp(x.masked_fill(x > 1, float("inf")), 1),
                torch.logcumsumexp(x.masked_fill(x > 1.5, float("nan")), 1),
                torch.logcumsumexp(torch.full_like(x, float("-inf")), 0)),
     t(3, 8))

case((torch.cumsum, torch.Tensor.cumsum), "cumsum",
     lambda x: (torch.cumsum(x, 0), x.cumsum(-1), torch.cumsum(x, 1, dtype=torch.float32)), t(3, 5, kind="small"),
     dtypes=(F32, F16, I64, BOOL), tol=2)


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)
