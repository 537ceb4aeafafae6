"""Family ``resampling`` (lowering/rules/resampling.py) against eager: F.interpolate in every mode and the nn
upsampling modules.
The harness is tests/test_ops.py."""
from __future__ import annotations

from functools import partial

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from test_ops import BF16, F32, FLOATS, add_case, params_of, run_case, t

CASES = []
case = partial(add_case, CASES)


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

# interpolate / Upsample
case(F.interpolate, "F.interpolate_nearest",
     lambda x: (F.interpolate(x, scale_factor=2), F.interpolate(x, size=(5, 7)), F.interpolate(x, size=(2, 3)),
                F.interpolate(x, scale_factor=(1.5, 0.5)), F.interpolate(x, size=(5, 7), mode="nearest-exact")),
     t(2, 3, 4, 6), dtypes=FLOATS)
case(F.interpolate, "F.interpolate_bilinear",
     lambda x: (F.interpolate(x, scale_factor=2, mode="bilinear"), F.interpolate(x, size=(5, 7), mode="bilinear"),
                F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=True),
                F.interpolate(x, scale_factor=1.7, mode="bilinear", align_corners=True),
                F.interpolate(x, size=(2, 3), mode="bilinear"), F.interpolate(x, size=(1, 1), mode="bilinear",
                                                                              align_corners=True)),
     t(2, 3, 4, 6), dtypes=FLOATS, tol=3)
case(F.interpolate, "F.interpolate_linear_trilinear",
     lambda x, v: (F.interpolate(x, scale_factor=2.5, mode="linear"), F.interpolate(v, size=(3, 4, 5), mode="trilinear")),
     t(2, 3, 7), t(1, 2, 2, 3, 4), tol=3)
case(nn.Upsample, "nn.Upsample_nearest", lambda: nn.Upsample(scale_factor=2), t(2, 3, 3, 4), module=True)
case(nn.Upsample, "nn.Upsample_bilinear", lambda: nn.Upsample(size=(6, 5), mode="bilinear", align_corners=False),
     t(2, 3, 3, 4), module=True, dtypes=(F32, BF16), tol=3)
case(nn.UpsamplingNearest2d, "nn.UpsamplingNearest2d", lambda: nn.UpsamplingNearest2d(size=(5, 5)), t(1, 2, 3, 4),
     module=True)
case(nn.UpsamplingBilinear2d, "nn.UpsamplingBilinear2d", lambda: nn.UpsamplingBilinear2d(scale_factor=2),
     t(1, 2, 3, 4), module=True, tol=3)


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)


def _resizes(x):
    return (F.interpolate(x, size=(10, 12), mode="bilinear"), F.interpolate(x, scale_factor=1.5, mode="bicubic"),
            F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
            F.interpolate(x, size=(3, 4), mode="bicubic", align_corners=True), F.interpolate(x, size=(3, 4), mode="area"),
            F.adaptive_avg_pool2d(x, (5, 2)), F.interpolate(x.flatten(2), scale_factor=1.3, mode="linear"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_non_finite_inputs_reach_only_the_outputs_that_read_them(dtype):
    """A NaN or inf input element reaches only the outputs whose taps (or adaptive windows) read it, as in eager:
    each resized dim is a gather of its taps (before: a product with an [out, in] weight matrix, whose zero weights
    sent it into every output of the row: 12 NaN outputs of eager's 1 in a 7x9 -> 3x4 adaptive average). Float64
    is computed in double (before: float32 coordinates, 6e-7 off eager)."""
    import fxla
    torch.manual_seed(0)
    x = torch.randn(2, 3, 7, 9, dtype=dtype)
    x[0, 0, 1, 1], x[1, 2, 3, 3], x[1, 0, 6, 8] = float("nan"), float("inf"), float("-inf")
    for got, want in zip(fxla.compile(_resizes)(x), _resizes(x)):
        assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.isinf(), want.isinf())
        torch.testing.assert_close(got, want, equal_nan=True)
