"""Family ``pooling`` (lowering/rules/pooling.py) against eager: max, average, lp and adaptive pooling of every
spatial rank (with indices), max unpooling; and the dialect verifier's messages on the pooling, scan and scatter
ops.
The harness is tests/test_ops.py."""
from __future__ import annotations

from functools import partial

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from test_dialect import verify_text
from test_ops import BF16, F16, F32, FLOATS, I64, NUMERIC, add_case, params_of, run_case, t

CASES = []
case = partial(add_case, CASES)


case(F.max_pool2d, "F.max_pool2d", lambda x: F.max_pool2d(x, 2), t(2, 3, 8, 8), dtypes=NUMERIC)
case(F.max_pool2d, "F.max_pool2d_ceil", lambda x: F.max_pool2d(x, 3, stride=2, ceil_mode=True), t(1, 2, 8, 9),
     dtypes=(F32, BF16))
case(F.max_pool2d, "F.max_pool2d_ceil_pad", lambda x: F.max_pool2d(x, 3, 2, padding=1, ceil_mode=True),
     t(1, 2, 6, 7))
case(F.max_pool2d, "F.max_pool2d_pad_dil", lambda x: F.max_pool2d(x, (3, 2), (1, 2), (1, 1), dilation=(2, 1)),
     t(1, 2, 7, 8))
case(F.max_pool2d, "F.max_pool2d_3d_input", lambda x: F.max_pool2d(x, 2, stride=1), t(3, 5, 5))
case(torch.max_pool2d, "torch.max_pool2d", lambda x: torch.max_pool2d(x, 2, 2, 0, 1, True), t(1, 2, 5, 7),
     dtypes=(I64,))
case(nn.MaxPool2d, "nn.MaxPool2d", lambda: nn.MaxPool2d(3, stride=2, padding=1), t(2, 3, 8, 8), module=True)
case(nn.MaxPool2d, "nn.MaxPool2d_ceil", lambda: nn.MaxPool2d(2, ceil_mode=True), t(1, 2, 5, 5), module=True,
     dtypes=(F16,))

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

# average pooling (fxla.avg_pool), adaptive pooling
case(F.avg_pool2d, "F.avg_pool2d",
     lambda x: (F.avg_pool2d(x, 2), F.avg_pool2d(x, 3, 2, 1), F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
                F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), F.avg_pool2d(x, 3, 2, 1, True, False),
                F.avg_pool2d(x, (2, 3), ceil_mode=True), F.avg_pool2d(x, 2, divisor_override=3)),
     t(2, 3, 8, 9), dtypes=FLOATS, tol=2)
case(F.avg_pool1d, "F.avg_pool1d", lambda x: (F.avg_pool1d(x, 3, 2, 1, ceil_mode=True), torch.avg_pool1d(x, 2)),
     t(2, 3, 8), dtypes=(F32, BF16))
case(F.avg_pool3d, "F.avg_pool3d", lambda x: (F.avg_pool3d(x, 2), F.avg_pool3d(x, 3, 2, 1, count_include_pad=False)),
     t(1, 2, 4, 5, 6))
case(nn.AvgPool2d, "nn.AvgPool2d", lambda: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True,
                                                        count_include_pad=False), t(3, 7, 8), module=True)
case(nn.AvgPool1d, "nn.AvgPool1d", lambda: nn.AvgPool1d(2), t(2, 3, 7), module=True)
case(nn.AvgPool3d, "nn.AvgPool3d", lambda: nn.AvgPool3d(2, ceil_mode=True), t(1, 2, 3, 5, 4), module=True)
case(F.adaptive_avg_pool2d, "F.adaptive_avg_pool2d",
     lambda x: (F.adaptive_avg_pool2d(x, 1), F.adaptive_avg_pool2d(x, (3, 2)), F.adaptive_avg_pool2d(x, (None, 4)),
                F.adaptive_avg_pool2d(x, (7, 5))),
     t(2, 3, 7, 6), dtypes=FLOATS, tol=2)
case(F.adaptive_avg_pool1d, "F.adaptive_avg_pool1d", lambda x: (F.adaptive_avg_pool1d(x, 3), F.adaptive_avg_pool1d(x, 4)),
     t(2, 3, 8), dtypes=(F32, BF16))
case(nn.AdaptiveAvgPool2d, "nn.AdaptiveAvgPool2d", lambda: nn.AdaptiveAvgPool2d((1, 1)), t(2, 4, 5, 5), module=True)
case(nn.AdaptiveAvgPool2d, "nn.AdaptiveAvgPool2d_uneven", lambda: nn.AdaptiveAvgPool2d((2, 3)), t(2, 4, 5, 7),
     module=True)
case(nn.AdaptiveAvgPool1d, "nn.AdaptiveAvgPool1d", lambda: nn.AdaptiveAvgPool1d(3), t(2, 4, 7), module=True)

# -- power-average pooling, local response normalisation -----------------------------------------------------
case((F.lp_pool1d, F.lp_pool2d, F.lp_pool3d, F.local_response_norm), "lp_pool_local_response_norm",
     lambda x: (F.lp_pool2d(x, 2, 2), F.lp_pool2d(x.abs(), 3, (2, 3), stride=1), F.lp_pool1d(x[:, 0], 1.5, 2),
                F.lp_pool3d(x.unsqueeze(1).abs(), 2, 2), F.local_response_norm(x, 3),
                F.local_response_norm(x[:, :, 0], 2, alpha=0.1, beta=0.5, k=2.0)),
     t(2, 4, 6, 6))
case((F.lp_pool2d, F.local_response_norm), "lp_pool2d_local_response_norm_half",   # (no half avg_pool3d in torch)
     lambda x: (F.lp_pool2d(x.abs(), 2, 2), F.local_response_norm(x[:, :, 0], 3)), t(1, 4, 4, 4), dtypes=(BF16, F16),
     tol=4)
case(nn.LPPool2d, "nn.LPPool2d", lambda: nn.LPPool2d(2, 3, stride=2), t(1, 2, 7, 7), module=True)
case(nn.LPPool1d, "nn.LPPool1d", lambda: nn.LPPool1d(1, 2), t(2, 3, 6), module=True)
case(nn.LPPool3d, "nn.LPPool3d", lambda: nn.LPPool3d(2, 2), t(1, 2, 4, 4, 4), module=True)


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
