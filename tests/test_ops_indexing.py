"""Family ``indexing`` (lowering/rules/indexing.py) against eager: x[...] (ints, slices, None, Ellipsis, tensor
and list indices), index_select, gather, scatter, masked_fill, where, embedding and the tensor attributes that
are values (x.T, x.mT, ...).
The harness is tests/test_ops.py."""
from __future__ import annotations

import builtins
import operator
import re
from functools import partial

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from test_ops import BF16, BOOL, F16, F32, I32, I64, add_case, index, params_of, perm, run_case, t

CASES = []
case = partial(add_case, CASES)


ALL3 = (F32, I64, BOOL)

# ---------------------------------------------------------------------------------------------------------------
# x[...]: ints, slices (steps, negative bounds), None, Ellipsis, an integer tensor / list index, tuple results
# ---------------------------------------------------------------------------------------------------------------
G = operator.getitem
case(G, "getitem_int_slice", lambda x: (x[1], x[-1], x[1:3], x[::2], x[-3:-1], x[:, 1:], x[..., ::3]),
     t(4, 5, 6), dtypes=ALL3)
case(G, "getitem_none_ellipsis", lambda x: (x[None], x[:, None, 1], x[..., None], x[1, ..., -2], x[..., 0, :]),
     t(3, 4, 5), dtypes=(F32, BF16))
case(G, "getitem_steps_bounds", lambda x: (x[1:-1:2, ::-1 if False else 3], x[5:], x[-100:100], x[2:1]),
     t(6, 7), dtypes=(I64,))
case(G, "getitem_0d_and_full", lambda x: (x[...], x[()], x[None, ...]), t(3), dtypes=(F32,))
case(G, "getitem_tensor_index", lambda x, i: (x[i], x[:, i], x[..., i], x[1:, i[::2]]), t(5, 6), index(4, high=5),
     dtypes=(F32, I64))
case(G, "getitem_tensor_index_2d_negative", lambda x, i: (x[i - 5], x[None, i]), t(5, 3), index(2, 3, high=5),
     dtypes=(F16,))
case(G, "getitem_list_index", lambda x: (x[[0, 2, -1]], x[:, [1, 1]]), t(4, 3))
# a tuple inside the index is a sequence of positions, as a list (dynamo records nanoGPT's x[:, [-1], :] so)
case(G, "getitem_nested_tuple_index", lambda x: (x[:, (-1,), :], x[(0, 2), :, 1]), t(4, 3, 2))
case(G, "getitem_int_and_tensor", lambda x, i: x[0, :, i], t(2, 3, 4), index(2, high=4))
case(G, "getitem_tuple_result", lambda x: torch.split(x, 2)[1] + torch.chunk(x, 2, 0)[0][:, :1], t(4, 3))

case((torch.index_select, torch.Tensor.index_select), "index_select",
     lambda x, i: (torch.index_select(x, 0, i), x.index_select(-1, i)), t(5, 5), index(3, high=5), dtypes=ALL3)
case(torch.index_select, "index_select_i32", lambda x, i: torch.index_select(x, 1, i), t(2, 4),
     index(6, high=4, dtype=I32))
case((torch.gather, torch.Tensor.gather), "gather",
     lambda x, i, j: (torch.gather(x, 1, i), x.gather(0, j)), t(3, 4), index(3, 2, high=4), index(2, 4, high=3),
     dtypes=ALL3)
case((torch.scatter, torch.Tensor.scatter), "scatter",
     lambda x, i, s: (torch.scatter(x, 0, i, s), x.scatter(0, i, 2.5), torch.scatter(x, 0, i, value=-1.0)),
     t(4, 3), perm(2, 3, high=4), t(3, 3), dtypes=(F32, BF16))
case(torch.scatter, "scatter_0d", lambda x, i, s: (torch.scatter(x, 0, i, s), torch.scatter_add(x, 0, i, s),
                                                    torch.scatter(x, -1, i, s, reduce="multiply")),
     t(), index(high=1), t(), dtypes=(F32, I64))
case(torch.scatter, "scatter_add_reduce", lambda x, i, s: torch.scatter(x, 1, i, s, reduce="add"),
     t(3, 4), index(3, 5, high=4), t(3, 6), dtypes=(I64,))
case((torch.scatter_add, torch.Tensor.scatter_add), "scatter_add",
     lambda x, i, s: (torch.scatter_add(x, 0, i, s), x.scatter_add(1, i, s)), t(3, 4),
     index(3, 2, high=3), t(3, 3), dtypes=(F32, I64))
case((torch.masked_fill, torch.Tensor.masked_fill), "masked_fill",
     lambda x, m: (torch.masked_fill(x, m, -1), x.masked_fill(m[0], 0.5), x.masked_fill(m, torch.tensor(2))),
     t(3, 4), t(3, 4, dtype=BOOL), dtypes=(F32, F16, I64))
case((torch.where, torch.Tensor.where), "where",
     lambda c, x, y: (torch.where(c, x, y), torch.where(c, x, 0.5), torch.where(c[0], 1, y), x.where(c, y)),
     t(3, 4, dtype=BOOL), t(3, 4), t(4), dtypes=(F32, BF16, I64))
case(torch.where, "where_promotes", lambda c, x, y: torch.where(c, x, y), t(4, dtype=BOOL), t(4, dtype=I64),
     t(2, 1, dtype=F16))
case(F.embedding, "F.embedding", lambda i, w: F.embedding(i, w), index(2, 3, high=10), t(10, 4),
     dtypes=(F32, BF16))
case(torch.embedding, "torch.embedding", lambda w, i: torch.embedding(w, i), t(10, 4), index(5, high=10))
case(nn.Embedding, "nn.Embedding", lambda: nn.Embedding(10, 4), index(2, 3, high=10, dtype=I64), module=True,
     dtypes=(I64,))
case((torch.diff, torch.Tensor.diff), "diff",
     lambda x, b: (torch.diff(x), x.diff(n=2, dim=0), torch.diff(x, dim=1, prepend=x[:, :1], append=x[:, -2:]),
                   torch.diff(b)), t(4, 5), t(6, dtype=BOOL), dtypes=(F32, I64))
case((torch.narrow, torch.Tensor.narrow, torch.select, torch.Tensor.select), "narrow_select",
     lambda x: (torch.narrow(x, 1, 1, 2), x.narrow(-1, -3, 2), torch.select(x, 0, -1), x.select(1, 2)),
     t(3, 4, 5), dtypes=(F32, I64))

case(torch.scatter, "scatter_reduce_multiply", lambda x, i, s: (torch.scatter(x, 0, i, s, reduce="multiply"),
                                                               torch.scatter(x, 1, i[:4, :2], 2.0, reduce="multiply")),
     t(4, 3), index(5, 3, high=3), t(5, 3), dtypes=(F32, I64))

# -- tensor attributes that are values (x.T, x.mT, ...) ----------------------------------------------------------
case(builtins.getattr, "tensor_attributes",
     lambda x, v, s: (x.mT, x.mH, v.T, v.H, v.T @ v, s.T, x.real * 2, x.data + 1, x @ v.mT, v.mT.T @ x.mT, x.T),
     t(2, 3, 4), t(3, 4), t(5), dtypes=(F32, BF16, I64))

case(operator.getitem, "getitem_adjacent_tensor_indices",
     lambda x, i, j: (x[:, i, j], x[i, j], x[1:, [0, 2], [1, -1]], x[:, i[:, None], j]),
     t(6, 6, 6), index(3, high=6), index(3, high=6))
case(operator.getitem, "getitem_tensor_indices_apart",        # torch puts the indexed dims first
     lambda x, i, j: (x[i, :, j], x[:, i, :, j], x[i[:, None], ..., j], x[[0, -1], 1:, :, [2, 3]]),
     t(6, 5, 6, 6), index(3, high=5), index(3, high=6))


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)


@pytest.mark.parametrize("fn, message", [
    (lambda x: x.H, "tensor.H is only supported on matrices"),
    (lambda x: x[0, 0].mT, "tensor.mT is only supported on matrices"),
])
def test_tensor_attribute_errors(fn, message):
    import fxla
    with pytest.raises(fxla.FxlaError, match=re.escape(message)) as err:
        fxla.compile(fn)(torch.randn(2, 3, 4))
    assert "test_ops_indexing.py" in str(err.value) and "fix:" in str(err.value)


def test_none_outputs_and_attributes_that_are_none():
    import fxla
    x = torch.randn(3)
    fast = fxla.compile(lambda x: (x + 1, None, {"a": None, "b": x.grad_fn, "c": x * 2}))
    for _ in range(2):                              # the general call path, then the call plan
        got = fast(x)
        assert got[1] is None and got[2]["a"] is None and got[2]["b"] is None
        torch.testing.assert_close(got[0], x + 1)
        torch.testing.assert_close(got[2]["c"], x * 2)
