"""Family ``scatter`` (lowering/rules/scatter.py) against eager: scatter_reduce, index_add, index_copy,
masked_scatter and ``x[idx] = value``.
The harness is tests/test_ops.py."""
from __future__ import annotations

from functools import partial

import pytest
import torch

from fxla.frontend.passes.functionalize import setitem as functional_setitem
from test_ops import BF16, F16, F32, I64, add_case, index, params_of, run_case, t

CASES = []
case = partial(add_case, CASES)


# -- scatter_reduce, index_add, index_copy -----------------------------------------------------------------------
_REDUCES = ("sum", "prod", "amax", "amin", "mean")


def _all_reduces(x, i, s, dim):
    return tuple(torch.scatter_reduce(x, dim, i, s, r, include_self=inc) for r in _REDUCES for inc in (True, False))


case((torch.scatter_reduce, torch.Tensor.scatter_reduce), "scatter_reduce",
     lambda x, i, s, j: _all_reduces(x, i, s, 0) + _all_reduces(x, j, s, -1) +
     (x.scatter_reduce(1, j, s, "amax"), x.scatter_reduce(0, i[:2], s, "mean", include_self=False)),
     t(5, 4, kind="small"), index(6, 4, high=5), t(6, 4, kind="small"), index(5, 3, high=4),
     dtypes=(F32, BF16, F16, I64), tol=2)
case(torch.scatter_reduce, "scatter_reduce_bool",
     lambda x, i, s: tuple(torch.scatter_reduce(x, 0, i, s, r, include_self=inc) for r in ("sum", "prod", "amax", "amin")
                           for inc in (True, False)),
     t(4, 3, dtype=torch.bool), index(5, 3, high=4), t(5, 3, dtype=torch.bool))

case((torch.index_add, torch.Tensor.index_add), "index_add",
     lambda x, i, s, r: (torch.index_add(x, 0, i, s), x.index_add(0, i, s, alpha=2), torch.index_add(x, -1, i[:3], r),
                         x.index_add(1, i[:3], r, alpha=-2)),
     t(4, 5), index(6, high=4), t(6, 5), t(4, 3), dtypes=(F32, BF16, I64), tol=2)
case((torch.index_copy, torch.Tensor.index_copy), "index_copy",
     lambda x, s, r: (torch.index_copy(x, 0, torch.tensor([3, 0]), s), x.index_copy(-1, torch.tensor([4, 1, 2]), r)),
     t(4, 5), t(2, 5), t(4, 3), dtypes=(F32, I64, torch.bool))


# -- x[idx] = value (functionalized to fxla.frontend.passes.functionalize.setitem) ---------------------------------


def _setitems(x, v):
    i, m = torch.tensor([1, -2]), torch.tensor([True, False, False, True])
    y = x.clone()
    y[0] = 5                      # int: a row, scalar broadcast
    y[1:3, 2:] = v                # step-1 slices: a box
    y[..., -1] = x[:, 0]          # ellipsis, negative index, a tensor value
    y[:, i] = 0                   # one integer index tensor (negative entries wrap)
    y[m] = -1                     # bool mask, scalar value
    y[None, 3] = 7                # None
    y[::2, 1::3] = -2             # strided slices
    z = x.clone()
    z[[0, 2]] = v[:, :1]          # list index, broadcast value
    z[x > 0.5] = torch.tensor(2.0)
    z[torch.tensor([0, 2, -1]), torch.tensor([1, 3, 0])] = v[0]      # index tensors on adjacent dims: points
    w = x.new_zeros(2, 4, 5)
    w[:, [1, 2], torch.tensor([0, -1])] = v[:, :2]                   # ... after a full slice
    u = x.new_zeros(3, 2, 5)
    u[[0, 2], :, [1, -1]] = v[:2, :2]          # on dims apart: the value is laid out indexed dims first
    u[torch.tensor([1]), :, torch.tensor([3, 4])] = 9
    r = x.clone()
    r[x[:, 0] > 0] = v[0, :1].expand(5)        # a bool mask over the rows, one row as the value
    r[:, x[0] < 0] = v[1:, :1]                 # a mask on dim 1, a [1, 1] value
    return y, z, w, u, r


case(functional_setitem, "setitem", _setitems, t(4, 5), t(2, 3), dtypes=(F32, I64, F16))


def _setitems_per_position(x, rows, v):
    """One value per selected position (the count is the mask's, fixed here): LLaVA's
    ``embeds[image_mask] = image_features``, a mask on dim 1, a mask over two dims with a broadcast row."""
    mask = torch.tensor([[False, True, False, True], [True, False, False, False], [False, False, True, True]])
    e = x.clone()
    e[mask] = rows                               # [3, 4, 5][mask of 5] = [5, 5]
    f = x.clone()
    f[:, torch.tensor([True, False, True, True])] = v    # [3, 4, 5][:, mask of 3] = [3, 3, 5]
    g = x.clone()
    g[mask] = rows[:, :1]                        # [5, 1]: one value per position, broadcast over the last dim
    return e, f, g


case(functional_setitem, "setitem_per_position", _setitems_per_position, t(3, 4, 5), t(5, 5), t(3, 3, 5),
     dtypes=(F32, I64, BF16))
case((torch.masked_scatter, torch.Tensor.masked_scatter), "masked_scatter",
     lambda x, s: (torch.masked_scatter(x, x > 0, s),                          # a data mask, enough source
                   x.masked_scatter(torch.tensor([True, False, True, False, True]), s[:12]),  # broadcast mask
                   x.clone().masked_scatter_(x < 0, s.reshape(6, 5))),
     t(4, 5), t(30), dtypes=(F32, I64, F16))


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)
