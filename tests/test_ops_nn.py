"""nn rules built from fxla ops (F.pad, batch_norm, rms_norm, scaled_dot_product_attention) against eager."""
from __future__ import annotations

from functools import partial

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from test_ops import BF16, BOOL, F16, F32, FLOATS, I64, add_case, params_of, run_case, t

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


case(F.pad, "F.pad", lambda x: (F.pad(x, (1, 2)), F.pad(x, (0, 1, 2, 0), value=-1.5), F.pad(x, (-1, 1, 1, 1, 1, 0))),
     t(2, 3, 4), dtypes=(F32, BF16, I64, BOOL))
case(F.batch_norm, "F.batch_norm", lambda x, m, v, w, b: (F.batch_norm(x, m, v, w, b, eps=1e-3),
                                                           F.batch_norm(x, m, v)),
     t(2, 3, 4, 5), t(3), t(3, kind="positive"), t(3), t(3), dtypes=FLOATS, tol=4)
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


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)
