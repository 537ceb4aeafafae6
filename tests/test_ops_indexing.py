"""Indexing, joining/splitting and creation rules against eager PyTorch (the harness is tests/test_ops.py)."""
from __future__ import annotations

import operator
from functools import partial

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from test_ops import BF16, BOOL, F16, F32, I32, I64, NUMERIC, add_case, index, params_of, perm, run_case, t

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
case((torch.narrow, torch.Tensor.narrow, torch.select, torch.Tensor.select), "narrow_select",
     lambda x: (torch.narrow(x, 1, 1, 2), x.narrow(-1, -3, 2), torch.select(x, 0, -1), x.select(1, 2)),
     t(3, 4, 5), dtypes=(F32, I64))

# ---------------------------------------------------------------------------------------------------------------
# joining and splitting (tuple results)
# ---------------------------------------------------------------------------------------------------------------
case((torch.cat, torch.concat, torch.concatenate), "cat",
     lambda x, y: (torch.cat([x, y]), torch.cat((x, y, x), dim=-1), torch.concat([x, y], 1),
                   torch.concatenate([y, x], axis=0)), t(2, 3), t(2, 3), dtypes=ALL3)
case(torch.cat, "cat_promotes", lambda x, y: torch.cat([x, y], 1), t(2, 3, dtype=F16), t(2, 1, dtype=I64))
case(torch.cat, "cat_skips_1d_empty",                       # torch's legacy rule; HF DynamicCache starts so
     lambda x, e: (torch.cat((e, x), dim=-2), torch.cat([x, e, x], 1), torch.cat([e, e])), t(2, 3, 4), t(0),
     dtypes=(F32, BF16))
case(torch.stack, "stack", lambda x, y: (torch.stack([x, y]), torch.stack((x, y, x), dim=-1), torch.stack([x], 1)),
     t(2, 3), t(2, 3), dtypes=(F32, I64))
case((torch.split, torch.Tensor.split), "split",
     lambda x: (torch.split(x, 2), x.split([1, 3], dim=1), torch.split(x, 3, -1)), t(5, 4), dtypes=(F32, BOOL))
case((torch.Tensor.split_with_sizes, torch.split_with_sizes), "split_with_sizes",
     lambda x: (x.split_with_sizes([2, 2], 1), torch.split_with_sizes(x, [1, 4])), t(5, 4))
case((torch.chunk, torch.Tensor.chunk), "chunk", lambda x: (torch.chunk(x, 3), x.chunk(2, dim=-1)), t(5, 4),
     dtypes=(F32, I64))
case((torch.tensor_split, torch.Tensor.tensor_split), "tensor_split",
     lambda x: (torch.tensor_split(x, 3), x.tensor_split([1, 3], dim=1)), t(5, 4))
case((torch.unbind, torch.Tensor.unbind), "unbind",
     lambda x: (torch.unbind(x), x.unbind(-1), [a + b for a, b in [x.unbind(1)[:2]]]), t(2, 3, 2),
     dtypes=(F32, I64))
case((torch.Tensor.expand, torch.broadcast_to, torch.Tensor.broadcast_to, torch.Tensor.expand_as), "expand",
     lambda x, y: (x.expand(2, 4, 3), x.expand(-1, 3), torch.broadcast_to(x, (3, 4, 3)), x.broadcast_to(4, 3),
                   x.expand_as(y)), t(4, 1), t(5, 4, 3), dtypes=ALL3)
case(torch.Tensor.repeat, "repeat", lambda x: (x.repeat(2, 3), x.repeat((2, 1, 2)), x.repeat(1, 1)), t(2, 3),
     dtypes=(F32, I64))
case((torch.tile, torch.Tensor.tile), "tile", lambda x: (torch.tile(x, (2,)), x.tile((2, 1, 3))), t(2, 3),
     dtypes=(BF16,))
case((torch.flip, torch.Tensor.flip, torch.fliplr, torch.flipud), "flip",
     lambda x: (torch.flip(x, [0]), x.flip(-1, 0), x.flip((1,)), torch.fliplr(x), torch.flipud(x)), t(3, 4, 2),
     dtypes=ALL3)
case((torch.roll, torch.Tensor.roll), "roll",
     lambda x: (torch.roll(x, 1, 0), x.roll(-2, -1), torch.roll(x, (1, 5), (0, 1)), torch.roll(x, 3), x.roll(0, 1)),
     t(3, 4), dtypes=(F32, I64))

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


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)
