"""Rules composed of several fxla ops against eager: N-d and adaptive max pooling, padding modes, bicubic/area
interpolation, EmbeddingBag with offsets, einsum diagonals, scans, rot90/kron, scatter_reduce/index_add/index_copy,
x[idx] = value, bilinear and the tensor attributes that are values."""
from __future__ import annotations

import builtins
import re
from functools import partial

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from fxla.frontend.passes.functionalize import setitem as functional_setitem
from test_dialect import verify_text
from test_ops import BF16, F16, F32, FLOATS, I64, add_case, index, params_of, run_case, t

CASES = []
case = partial(add_case, CASES)

# -- max pooling of every spatial rank, with indices -------------------------------------------------------------
case(F.max_pool1d, "F.max_pool1d",
     lambda x: (F.max_pool1d(x, 2), F.max_pool1d(x, 3, 2, 1, ceil_mode=True), F.max_pool1d(x, 3, 1, 1, dilation=2),
                F.max_pool1d(x[0], 4, 3)),
     t(2, 3, 11), dtypes=(F32, BF16, F16))
case(F.max_pool3d, "F.max_pool3d",
     lambda x: (F.max_pool3d(x, 2), F.max_pool3d(x, (1, 3, 2), (1, 2, 1), (0, 1, 1)),
                F.max_pool3d(x, 3, 2, 1, ceil_mode=True), F.max_pool3d(x, 2, 1, dilation=(1, 2, 2))),
     t(2, 2, 4, 7, 6), dtypes=(F32, BF16, I64))
case((torch.max_pool1d, torch.max_pool3d), "torch.max_pool1d/3d",
     lambda x, v: (torch.max_pool1d(x, 3, 2, 1, 1, True), torch.max_pool3d(v, 2, 2, 0, 1, False)),
     t(2, 3, 8), t(1, 2, 4, 4, 5))
case(F.max_pool2d_with_indices, "F.max_pool2d_return_indices",
     lambda x: (F.max_pool2d(x, 2, return_indices=True), F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True),
                F.max_pool2d(x[0], (2, 3), dilation=(2, 1), return_indices=True)),
     t(2, 3, 7, 8), dtypes=(F32, BF16, I64))
case((F.max_pool1d_with_indices, F.max_pool2d_with_indices, F.max_pool3d_with_indices, torch.max_pool1d_with_indices),
     "max_pool_with_indices",
     lambda x, y, z: (F.max_pool1d_with_indices(x, 3, 2, 1), F.max_pool2d_with_indices(y, 2, 1),
                      F.max_pool3d_with_indices(z, 2, ceil_mode=True), torch.max_pool1d_with_indices(x, 2)),
     t(2, 3, 9), t(1, 2, 5, 5), t(1, 2, 3, 5, 4))
case(F.max_pool2d_with_indices, "F.max_pool2d_indices_ties_nan_inf",
     lambda x: (F.max_pool2d(x, 2, return_indices=True), F.max_pool2d(x.masked_fill(x > 1, float("nan")), 3, 1, 1,
                                                                       return_indices=True),
                F.max_pool2d(torch.full_like(x, float("-inf")), 2, 2, 1, return_indices=True)),
     t(2, 3, 6, 6, kind="small"))
case(nn.MaxPool1d, "nn.MaxPool1d", lambda: nn.MaxPool1d(3, stride=2, padding=1), t(2, 4, 9), module=True,
     dtypes=(F32, F16))
case(nn.MaxPool3d, "nn.MaxPool3d", lambda: nn.MaxPool3d(2, ceil_mode=True), t(1, 2, 3, 5, 5), module=True)
case(nn.MaxPool2d, "nn.MaxPool2d_return_indices", lambda: nn.MaxPool2d(2, return_indices=True), t(2, 3, 6, 5),
     module=True)


class _PoolUnpool(nn.Module):
    """max_pool with indices, then max_unpool of the result (the indices unpooling needs)."""

    def __init__(self, n, kernel, **options):
        super().__init__()
        self.pool = getattr(nn, f"MaxPool{n}d")(kernel, return_indices=True, **options)
        self.unpool = getattr(nn, f"MaxUnpool{n}d")(kernel, **options)

    def forward(self, x):
        y, idx = self.pool(x)
        return self.unpool(y, idx, output_size=x.shape)


case((F.max_unpool1d, F.max_unpool2d, F.max_unpool3d), "F.max_unpool",
     lambda x, y, z: (F.max_unpool1d(*F.max_pool1d(x, 2, return_indices=True), 2),
                      F.max_unpool2d(*F.max_pool2d(y, 3, 2, 1, return_indices=True), 3, 2, 1, output_size=(8, 7)),
                      F.max_unpool2d(*F.max_pool2d(y[0, :, :, :6], 2, return_indices=True), 2),   # unbatched
                      F.max_unpool3d(*F.max_pool3d(z, 2, return_indices=True), 2, output_size=(1, 2, 5, 4, 4))),
     t(2, 3, 9), t(2, 3, 8, 7), t(1, 2, 5, 4, 4), dtypes=(F32, BF16))     # (torch has no integer max_unpool)
case(nn.MaxUnpool1d, "nn.MaxUnpool1d", _PoolUnpool(1, 3, stride=2, padding=1), t(2, 3, 9))
case(nn.MaxUnpool2d, "nn.MaxUnpool2d", _PoolUnpool(2, 2), t(2, 3, 7, 6))
case(nn.MaxUnpool3d, "nn.MaxUnpool3d", _PoolUnpool(3, 2), t(1, 2, 4, 5, 4))

# -- adaptive pooling --------------------------------------------------------------------------------------------
case(F.adaptive_max_pool2d, "F.adaptive_max_pool2d",
     lambda x: (F.adaptive_max_pool2d(x, 1), F.adaptive_max_pool2d(x, (3, 2)), F.adaptive_max_pool2d(x, (None, 4)),
                F.adaptive_max_pool2d(x, (5, 5)), F.adaptive_max_pool2d(x[0], 3)),
     t(2, 3, 7, 6), dtypes=(F32, BF16))
case(F.adaptive_max_pool2d_with_indices, "F.adaptive_max_pool2d_indices",
     lambda x: (F.adaptive_max_pool2d(x, (3, 4), return_indices=True), F.adaptive_max_pool2d(x, 2, True),
                F.adaptive_max_pool2d(x.masked_fill(x > 1, float("nan")), (4, 3), True)),
     t(2, 3, 7, 6, kind="small"), dtypes=(F32, BF16))
case(F.adaptive_max_pool1d, "F.adaptive_max_pool1d",
     lambda x: (F.adaptive_max_pool1d(x, 3), F.adaptive_max_pool1d(x, 4), F.adaptive_max_pool1d(x, 5, True),
                F.adaptive_max_pool1d(x, 2, return_indices=True)),
     t(2, 3, 8), dtypes=(F32, F16))
case((F.adaptive_max_pool1d_with_indices, F.adaptive_max_pool2d_with_indices, F.adaptive_max_pool3d_with_indices,
      torch.adaptive_max_pool1d, F.adaptive_max_pool3d), "adaptive_max_pool_with_indices",
     lambda x, y, z: (F.adaptive_max_pool1d_with_indices(x, 3), F.adaptive_max_pool2d_with_indices(y, (2, 3)),
                      F.adaptive_max_pool3d_with_indices(z, (2, 3, 2)), torch.adaptive_max_pool1d(x, 4),
                      F.adaptive_max_pool3d(z, 2)),
     t(2, 3, 7), t(1, 2, 5, 7), t(1, 2, 3, 5, 4))
case(nn.AdaptiveMaxPool1d, "nn.AdaptiveMaxPool1d", lambda: nn.AdaptiveMaxPool1d(3), t(2, 4, 7), module=True)
case(nn.AdaptiveMaxPool2d, "nn.AdaptiveMaxPool2d", lambda: nn.AdaptiveMaxPool2d((2, 3)), t(2, 4, 5, 7), module=True,
     dtypes=(F32, BF16))
case(nn.AdaptiveMaxPool2d, "nn.AdaptiveMaxPool2d_indices", lambda: nn.AdaptiveMaxPool2d(3, return_indices=True),
     t(2, 4, 5, 7), module=True)
case(nn.AdaptiveMaxPool3d, "nn.AdaptiveMaxPool3d", lambda: nn.AdaptiveMaxPool3d((1, 2, 3)), t(1, 2, 3, 4, 5),
     module=True)

case(F.adaptive_avg_pool3d, "F.adaptive_avg_pool3d",
     lambda x: (F.adaptive_avg_pool3d(x, 1), F.adaptive_avg_pool3d(x, (2, 3, 2)), F.adaptive_avg_pool3d(x, (None, 4, 3)),
                F.adaptive_avg_pool3d(x[0], (3, 5, 1))),
     t(2, 3, 4, 6, 5), dtypes=FLOATS, tol=2)
case(nn.AdaptiveAvgPool3d, "nn.AdaptiveAvgPool3d", lambda: nn.AdaptiveAvgPool3d((1, 2, 3)), t(1, 2, 3, 4, 5),
     module=True, dtypes=(F32, BF16))


# -- F.pad modes and the padding modules -------------------------------------------------------------------------
case(F.pad, "F.pad_reflect",
     lambda x, v: (F.pad(x, (2, 3), mode="reflect"), F.pad(x, (1, 0, 2, 2), mode="reflect"),
                   F.pad(x, (-1, 2), mode="reflect"), F.pad(v, (1, 2, 0, 1, 2, 1), mode="reflect"),
                   F.pad(x[0], (3, 3), mode="reflect")),
     t(2, 3, 5), t(1, 2, 3, 4, 5), dtypes=(F32, BF16, F16, I64))
case(F.pad, "F.pad_replicate",
     lambda x, v: (F.pad(x, (4, 1), mode="replicate"), F.pad(x, (1, 2, 3, 0), mode="replicate"),
                   F.pad(x, (-2, 1), mode="replicate"), F.pad(v, (2, 0, 1, 1, 0, 3), mode="replicate")),
     t(2, 3, 4), t(1, 2, 2, 3, 3), dtypes=(F32, BF16, I64))
case(F.pad, "F.pad_circular",
     lambda x, v: (F.pad(x, (2, 3), mode="circular"), F.pad(x, (4, 4, 1, 2), mode="circular"),
                   F.pad(x, (-1, 3), mode="circular"), F.pad(v, (1, 1, 2, 0, 1, 2), mode="circular")),
     t(2, 3, 4), t(1, 2, 3, 3, 4), dtypes=(F32, BF16, I64))
case(F.pad, "F.pad_constant_negative", lambda x: (F.pad(x, (1, -1, -2, 0), value=3.0), F.pad(x, (2, 2))),
     t(2, 3, 4), dtypes=(F32, I64))
for _name, _args in (("ReflectionPad1d", (2,)), ("ReflectionPad2d", ((1, 2, 2, 0),)), ("ReflectionPad3d", (1,)),
                     ("ReplicationPad1d", ((3, 1),)), ("ReplicationPad2d", (2,)), ("ReplicationPad3d", ((1, 0, 2, 1, 0, 1),)),
                     ("CircularPad1d", ((1, 3),)), ("CircularPad2d", (2,)), ("CircularPad3d", ((1, 2, 0, 1, 2, 0),)),
                     ("ConstantPad1d", (2, 1.5)), ("ConstantPad2d", ((1, 0, 2, 1), -2.0)), ("ConstantPad3d", (1, 3.0)),
                     ("ZeroPad1d", ((1, 2),)), ("ZeroPad2d", (2,)), ("ZeroPad3d", ((1, 0, 0, 1, 2, 0),))):
    _cls = getattr(nn, _name)
    _rank = int(_name[-2]) + 2
    case(_cls, f"nn.{_name}", partial(_cls, *_args), t(*(2, 3, 4, 5, 4)[:_rank]), module=True,
         dtypes=(F32, BF16) if _name.startswith("Reflection") else (F32,))

case(nn.Conv2d, "nn.Conv2d_padding_modes", lambda: nn.Conv2d(3, 4, 3, padding=(1, 2), padding_mode="reflect"),
     t(2, 3, 6, 7), module=True, dtypes=(F32, BF16), tol=3)
case(nn.Conv1d, "nn.Conv1d_circular", lambda: nn.Conv1d(2, 3, 4, padding="same", padding_mode="circular"),
     t(2, 2, 9), module=True, tol=3)
case(nn.Conv3d, "nn.Conv3d_replicate", lambda: nn.Conv3d(2, 2, 3, stride=2, padding=1, padding_mode="replicate"),
     t(1, 2, 4, 5, 6), module=True, tol=3)


# -- interpolate: bicubic (A = -0.75, both align_corners) and area -----------------------------------------------
case(F.interpolate, "F.interpolate_bicubic",
     lambda x: (F.interpolate(x, scale_factor=2, mode="bicubic"), F.interpolate(x, size=(5, 9), mode="bicubic"),
                F.interpolate(x, size=(5, 9), mode="bicubic", align_corners=True),
                F.interpolate(x, scale_factor=1.7, mode="bicubic", align_corners=True),
                F.interpolate(x, scale_factor=(0.5, 1.3), mode="bicubic"),
                F.interpolate(x, size=(2, 3), mode="bicubic", align_corners=False),
                F.interpolate(x, size=(1, 1), mode="bicubic", align_corners=True),
                F.interpolate(x, scale_factor=1.5, mode="bicubic", recompute_scale_factor=True)),
     t(2, 3, 4, 6), dtypes=FLOATS, tol=4)
case(F.interpolate, "F.interpolate_area",
     lambda x, v, w: (F.interpolate(x, size=(3, 4), mode="area"), F.interpolate(x, scale_factor=0.5, mode="area"),
                      F.interpolate(x, size=(8, 7), mode="area"), F.interpolate(v, size=5, mode="area"),
                      F.interpolate(w, size=(2, 3, 2), mode="area")),
     t(2, 3, 6, 5), t(2, 3, 7), t(1, 2, 4, 5, 3), dtypes=FLOATS, tol=2)
case(nn.Upsample, "nn.Upsample_bicubic", lambda: nn.Upsample(scale_factor=2, mode="bicubic", align_corners=True),
     t(1, 2, 3, 4), module=True, dtypes=(F32, BF16), tol=4)


# -- EmbeddingBag with offsets (bag boundaries are data: sorted from a traced tensor) ----------------------------
def _offsets(o):
    """Non-decreasing offsets starting at 0 (empty bags likely), computed in the traced program."""
    o = torch.sort(o)[0]
    return o - o[0]


case(F.embedding_bag, "F.embedding_bag_offsets",
     lambda i, w, o, p: (F.embedding_bag(i, w, _offsets(o), mode="sum"), F.embedding_bag(i, w, _offsets(o)),
                         F.embedding_bag(i, w, _offsets(o), mode="max"),
                         F.embedding_bag(i, w, _offsets(o), mode="sum", per_sample_weights=p),
                         F.embedding_bag(i, w, _offsets(o), mode="sum", include_last_offset=True),
                         F.embedding_bag(i, w, _offsets(o), mode="mean", include_last_offset=True),
                         F.embedding_bag(i, w, _offsets(o), mode="max", padding_idx=3),
                         F.embedding_bag(i, w, _offsets(o), mode="mean", padding_idx=-7)),
     index(12, high=10), t(10, 5), index(5, high=12), t(12), dtypes=(F32, BF16, F16), tol=2)
case(F.embedding_bag, "F.embedding_bag_2d_padding_idx",
     lambda i, w: (F.embedding_bag(i, w, mode="sum", padding_idx=2), F.embedding_bag(i, w, padding_idx=2),
                   F.embedding_bag(i, w, mode="max", padding_idx=2)),
     index(4, 3, high=4), t(4, 6), dtypes=(F32, BF16), tol=2)


class _Bag(nn.Module):
    """An nn.EmbeddingBag called with 1-D input and offsets (a buffer: a runtime tensor of the compiled program)."""

    def __init__(self, mode, include_last_offset=False, padding_idx=None):
        super().__init__()
        self.bag = nn.EmbeddingBag(10, 4, mode=mode, include_last_offset=include_last_offset, padding_idx=padding_idx)
        self.register_buffer("offsets", torch.tensor([0, 2, 2, 5, 7]))

    def forward(self, x):
        return self.bag(x, self.offsets)


case(nn.EmbeddingBag, "nn.EmbeddingBag_offsets_sum", lambda: _Bag("sum"), index(9, high=10), module=True)
case(nn.EmbeddingBag, "nn.EmbeddingBag_offsets_mean_last", lambda: _Bag("mean", True), index(9, high=10),
     module=True, dtypes=(F32, BF16), tol=2)
case(nn.EmbeddingBag, "nn.EmbeddingBag_offsets_max_padding", lambda: _Bag("max", padding_idx=1), index(9, high=10),
     module=True)


# -- einsum with repeated subscripts in one operand (diagonals) --------------------------------------------------
case(torch.einsum, "torch.einsum_diagonal",
     lambda a, b, c, v: (torch.einsum("ii->i", a), torch.einsum("ii", a), torch.einsum("bii->bi", b),
                         torch.einsum("bii", b), torch.einsum("iji->j", c), torch.einsum("ii,i->i", a, v),
                         torch.einsum("bii,bjj->bij", b, b), torch.einsum("...ii->...i", b),
                         torch.einsum("iii->i", v[:, None, None] * a), torch.einsum("ij,ii->j", a, a)),
     t(4, 4), t(2, 4, 4), t(4, 3, 4), t(4), dtypes=(F32, BF16, I64), tol=2)


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


# -- rot90, kron -------------------------------------------------------------------------------------------------
case((torch.rot90, torch.Tensor.rot90), "rot90",
     lambda x: (torch.rot90(x), torch.rot90(x, 2), torch.rot90(x, 3, (1, 2)), torch.rot90(x, -1, (0, -1)),
                x.rot90(5, [-1, -2]), torch.rot90(x, 0)),
     t(2, 3, 4), dtypes=(F32, I64, torch.bool))
case(torch.kron, "torch.kron",
     lambda a, b, v: (torch.kron(a, b), torch.kron(b, a), torch.kron(v, a), torch.kron(a, v), torch.kron(v, v)),
     t(2, 3), t(2, 4, 2), t(3), dtypes=(F32, BF16, I64))
case(torch.kron, "torch.kron_promotes", lambda a, b: torch.kron(a, b), t(2, 2, dtype=I64), t(3, 2))

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
case(torch.scatter, "scatter_reduce_multiply", lambda x, i, s: (torch.scatter(x, 0, i, s, reduce="multiply"),
                                                               torch.scatter(x, 1, i[:4, :2], 2.0, reduce="multiply")),
     t(4, 3), index(5, 3, high=3), t(5, 3), dtypes=(F32, I64))
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


# -- bilinear ----------------------------------------------------------------------------------------------------
case((F.bilinear, torch.bilinear), "F.bilinear",
     lambda a, b, w, bias: (F.bilinear(a, b, w, bias), F.bilinear(a, b, w), torch.bilinear(a[0], b[0], w, bias),
                            F.bilinear(a[0, 0], b[0, 0], w, bias)),
     t(2, 3, 4), t(2, 3, 5), t(6, 4, 5), t(6), dtypes=FLOATS, tol=3)


class _TwoInput(nn.Module):
    def __init__(self, bias=True):
        super().__init__()
        self.bil = nn.Bilinear(3, 4, 5, bias=bias)

    def forward(self, x):
        return self.bil(x[..., :3], x[..., 3:])


case(nn.Bilinear, "nn.Bilinear", _TwoInput, t(2, 6, 7), module=True, dtypes=(F32, BF16), tol=3)
case(nn.Bilinear, "nn.Bilinear_no_bias", partial(_TwoInput, False), t(5, 7), module=True, tol=3)


# -- tensor attributes that are values (x.T, x.mT, ...) ----------------------------------------------------------
case(builtins.getattr, "tensor_attributes",
     lambda x, v, s: (x.mT, x.mH, v.T, v.H, v.T @ v, s.T, x.real * 2, x.data + 1, x @ v.mT, v.mT.T @ x.mT, x.T),
     t(2, 3, 4), t(3, 4), t(5), dtypes=(F32, BF16, I64))


@pytest.mark.parametrize("fn, message", [
    (lambda x: x.H, "tensor.H is only supported on matrices"),
    (lambda x: x[0, 0].mT, "tensor.mT is only supported on matrices"),
])
def test_tensor_attribute_errors(fn, message):
    import fxla
    with pytest.raises(fxla.FxlaError, match=re.escape(message)) as err:
        fxla.compile(fn)(torch.randn(2, 3, 4))
    assert "test_ops_composite.py" in str(err.value) and "fix:" in str(err.value)


def test_none_outputs_and_attributes_that_are_none():
    import fxla
    x = torch.randn(3)
    fast = fxla.compile(lambda x: (x + 1, None, {"a": None, "b": x.grad_fn, "c": x * 2}))
    for _ in range(2):                              # the general call path, then the call plan
        got = fast(x)
        assert got[1] is None and got[2]["a"] is None and got[2]["b"] is None
        torch.testing.assert_close(got[0], x + 1)
        torch.testing.assert_close(got[2]["c"], x * 2)


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)


# -- the verifier on the new ops ---------------------------------------------------------------------------------
_POOL = 'kernel_size = array<i64: {k}>, stride = array<i64: {s}>, padding = array<i64: {p}>, dilation = array<i64: {d}>'


def _pool(op, k="2, 2", s="2, 2", p="0, 0", d="1, 1", result="tensor<1x2x2x2xf32>", arg="tensor<1x2x4x4xf32>"):
    attrs = _POOL.format(k=k, s=s, p=p, d=d).replace("array<i64: >", "array<i64>")
    return f'%0 = "fxla.{op}"(%a) {{{attrs}}} : ({arg}) -> {result}', f"%a: {arg}"


@pytest.mark.parametrize("body,args,message", [
    _pool("max_pool", k="", s="", p="", d="") + ("attribute 'kernel_size' must have one entry per pooled dim, "
                                                 "got none",),
    _pool("max_pool", s="0, 2") + ("attribute 'stride' must be positive, got [0, 2]",),
    _pool("max_pool", d="1, -1") + ("attribute 'dilation' must be positive, got [1, -1]",),
    _pool("max_pool", p="2, 0") + ("padding must be at most half the kernel size",),
    _pool("max_pool", k="2", s="2", p="0", d="1") + ("expects a rank-2 or rank-3 input, got rank 4",),
    _pool("max_pool", s="2") + ("attribute 'stride' must have 2 entries, got 1",),
    _pool("max_pool", result="tensor<1x2x3x3xf32>") + ("result #0 has type tensor<1x2x3x3xf32>, but the operands "
                                                       "imply tensor<1x2x2x2xf32>",),
    _pool("max_pool", arg="tensor<1x2x4x4xi1>", result="tensor<1x2x2x2xi1>") + ("operand 'input' must have element "
                                                                             "type in",),
    ('%0:2 = "fxla.max_pool_with_indices"(%a) {' + _POOL.format(k="2, 2", s="2, 2", p="0, 0", d="1, 1") +
     '} : (tensor<1x2x4x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xi32>)', "%a: tensor<1x2x4x4xf32>",
     "result #1 has type tensor<1x2x2x2xi32>, but the operands imply tensor<1x2x2x2xi64>"),
    ('%0 = "fxla.cumprod"(%a) {dim = 1 : i64} : (tensor<2x3xi32>) -> tensor<2x3xi32>', "%a: tensor<2x3xi32>",
     "result #0 has type tensor<2x3xi32>, but the operands imply tensor<2x3xi64>"),
    ('%0:2 = "fxla.cummax"(%a) {dim = 2 : i64} : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)',
     "%a: tensor<2x3xf32>", "dim 2 is out of range for a rank-2 operand"),
    ('%0 = "fxla.cummin"(%a) {dim = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>', "%a: tensor<2x3xf32>",
     "expects 2 result(s), but got 1"),
    ('%0 = "fxla.logcumsumexp"(%a) {dim = 0 : i64} : (tensor<4xi64>) -> tensor<4xi64>', "%a: tensor<4xi64>",
     "operand 'input' must have element type in {f16, bf16, f32, f64}, got i64"),
    ('%0 = "fxla.logcumsumexp"(%a) : (tensor<4xf32>) -> tensor<4xf32>', "%a: tensor<4xf32>",
     "requires attribute 'dim' (i64)"),
    ('%0 = "fxla.scatter"(%a, %i, %a) {dim = 0 : i64, reduce = "mean"} : (tensor<4xf32>, tensor<4xi64>, '
     'tensor<4xf32>) -> tensor<4xf32>', "%a: tensor<4xf32>, %i: tensor<4xi64>",
     "attribute 'reduce' must be one of ['none', 'add', 'multiply', 'amax', 'amin'], got 'mean'"),
])
def test_verifier_messages_of_new_ops(body, args, message):
    err = verify_text("  " + body, args=args)
    assert len(err.diagnostics) == 1
    assert message in str(err), str(err)

