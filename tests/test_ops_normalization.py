"""Family ``normalization`` (lowering/rules/normalization.py) against eager: batch_norm, instance_norm,
group_norm, rms_norm, local_response_norm, F.normalize and scaled_dot_product_attention.
The harness is tests/test_ops.py."""
from __future__ import annotations

from functools import partial

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from test_ops import BF16, BOOL, F16, F32, FLOATS, add_case, params_of, run_case, t

CASES = []
case = partial(add_case, CASES)


def _bn(cls, c):
    """A BatchNorm in eval mode with non-trivial running statistics and affine parameters."""
    def make():
        torch.manual_seed(1)
        m = cls(c)
        m.running_mean.normal_()
        m.running_var.uniform_(0.5, 2.0)
        m.weight.data.normal_()
        m.bias.data.normal_()
        return m
    return make


case(F.batch_norm, "F.batch_norm", lambda x, m, v, w, b: (F.batch_norm(x, m, v, w, b, eps=1e-3),
                                                           F.batch_norm(x, m, v)),
     t(2, 3, 4, 5), t(3), t(3, kind="positive"), t(3), t(3), dtypes=FLOATS, tol=4)
# training mode: batch statistics (the running statistics' updates are checked in tests/test_train_mode.py)
def _batch_norm_training(x, w, b):
    y = F.batch_norm(x, torch.zeros(3), torch.ones(3), w, b, training=True, momentum=0.3)
    return y, F.batch_norm(x[:, :, 0], None, None, training=True, eps=1e-3), F.batch_norm(x, None, None, w, b, True)


case(F.batch_norm, "F.batch_norm_training", _batch_norm_training, t(2, 3, 4, 5), t(3), t(3), tol=4)
case(nn.BatchNorm1d, "nn.BatchNorm1d", _bn(nn.BatchNorm1d, 4), t(3, 4, 5), module=True, dtypes=(F32, F16), tol=4)
case(nn.BatchNorm1d, "nn.BatchNorm1d_2d_input", _bn(nn.BatchNorm1d, 4), t(3, 4), module=True, tol=4)
case(nn.BatchNorm2d, "nn.BatchNorm2d", _bn(nn.BatchNorm2d, 3), t(2, 3, 4, 4), module=True, dtypes=(F32, BF16), tol=4)
case(nn.BatchNorm3d, "nn.BatchNorm3d", _bn(nn.BatchNorm3d, 2), t(1, 2, 3, 3, 2), module=True, tol=4)
case(F.rms_norm, "F.rms_norm", lambda x, w: (F.rms_norm(x, (8,), w), F.rms_norm(x, (3, 8), eps=1e-3)), t(2, 3, 8),
     t(8), dtypes=FLOATS, tol=4)
case(nn.RMSNorm, "nn.RMSNorm", lambda: nn.RMSNorm(8), t(2, 3, 8), module=True, dtypes=(F32, BF16), tol=4)
case(F.scaled_dot_product_attention, "sdpa",
     lambda q, k, v, m, a: (F.scaled_dot_product_attention(q, k, v), F.scaled_dot_product_attention(q, k, v, m),
                            F.scaled_dot_product_attention(q, k, v, attn_mask=a, scale=0.5),
                            F.scaled_dot_product_attention(q, k[:, :, :4], v[:, :, :4], is_causal=True)),
     t(2, 3, 4, 8), t(2, 3, 5, 8), t(2, 3, 5, 6), t(4, 5, dtype=BOOL), t(1, 4, 5), dtypes=FLOATS, tol=4)
# a query whose every key is masked (left padding under a causal mask) gets 0, not NaN (torch's _safe_softmax)
case(F.scaled_dot_product_attention, "sdpa_fully_masked_rows",
     lambda q, k, v: (F.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor(
                          [[False] * 5, [True] * 5, [True, False, True, False, True], [False] * 4 + [True]])),
                      F.scaled_dot_product_attention(q, k, v, attn_mask=torch.zeros(4, 5).index_fill(
                          0, torch.tensor([0, 2]), float("-inf")))),
     t(2, 3, 4, 8), t(2, 3, 5, 8), t(2, 3, 5, 6), dtypes=FLOATS, tol=4)

# group_norm
case(F.group_norm, "F.group_norm", lambda x, w, b: (F.group_norm(x, 2, w, b), F.group_norm(x, 3, eps=1e-3),
                                                    F.group_norm(x[..., 0], 6, w, b)),
     t(2, 6, 4, 5), t(6), t(6), dtypes=FLOATS, tol=4)
case(torch.group_norm, "torch.group_norm", lambda x, w, b: torch.group_norm(x, 2, w, b, 1e-5, False), t(2, 4, 3, 3, 2),
     t(4), t(4), tol=4)
case(nn.GroupNorm, "nn.GroupNorm", lambda: nn.GroupNorm(2, 4), t(2, 4, 3, 3), module=True, dtypes=(F32, BF16), tol=4)

case(F.normalize, "F.normalize",
     lambda x: (F.normalize(x), F.normalize(x, dim=-1), F.normalize(x, p=1, dim=0), F.normalize(x, p=3, dim=1),
                F.normalize(x * 0, eps=1e-3), F.normalize(x, p=float("inf"))),
     t(3, 4, 2), dtypes=FLOATS, tol=3)

# -- instance norm --------------------------------------------------------------------------------------------
case(F.instance_norm, "F.instance_norm",
     lambda x, w: (F.instance_norm(x), F.instance_norm(x, weight=w, bias=w * 2), F.instance_norm(x[:, :, 0], eps=1e-3),
                   F.instance_norm(x, torch.zeros(3), torch.ones(3) * 2, use_input_stats=False)),
     t(2, 3, 4, 5), t(3), dtypes=(F32, BF16), tol=4)
def _instance_norm_running_stats(x):
    return F.instance_norm(x, torch.zeros(3), torch.ones(3), use_input_stats=True, momentum=0.2)


case(F.instance_norm, "F.instance_norm_running_stats", _instance_norm_running_stats, t(2, 3, 4, 5), tol=4)
case(nn.InstanceNorm2d, "nn.InstanceNorm2d", lambda: nn.InstanceNorm2d(3, affine=True), t(2, 3, 4, 5), module=True)
case(nn.InstanceNorm1d, "nn.InstanceNorm1d_unbatched", lambda: nn.InstanceNorm1d(3), t(3, 6), module=True)
case(nn.InstanceNorm3d, "nn.InstanceNorm3d_running_stats", lambda: nn.InstanceNorm3d(2, track_running_stats=True),
     t(1, 2, 3, 3, 2), module=True)

case(nn.LocalResponseNorm, "nn.LocalResponseNorm", lambda: nn.LocalResponseNorm(5), t(2, 7, 3, 3), module=True)


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)
