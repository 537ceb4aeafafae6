"""Family ``nn`` (lowering/rules/nn.py) against eager: convolutions of every spatial rank (+ transposed, padding
modes), softmax/log_softmax, layer_norm, dropout, identity and the distances.
The harness is tests/test_ops.py."""
from __future__ import annotations

from functools import partial

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from test_ops import BF16, F16, F32, FLOATS, I64, add_case, params_of, run_case, t

CASES = []
case = partial(add_case, CASES)


# ---------------------------------------------------------------------------------------------------------------
# convolution
# ---------------------------------------------------------------------------------------------------------------
case(F.conv2d, "conv2d", lambda x, w, b: F.conv2d(x, w, b), t(2, 3, 7, 7), t(4, 3, 3, 3), t(4),
     dtypes=FLOATS, tol=3)
case(F.conv2d, "conv2d_int", lambda x, w: F.conv2d(x, w), t(1, 2, 5, 5), t(3, 2, 3, 3), dtypes=(I64,))
case(F.conv2d, "conv2d_stride_pad_dil", lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=(1, 2), dilation=2),
     t(1, 3, 9, 8), t(2, 3, 3, 3), tol=3)
case(F.conv2d, "conv2d_groups", lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=2), t(2, 4, 6, 6),
     t(6, 2, 3, 3), t(6), tol=3)
case(F.conv2d, "conv2d_depthwise", lambda x, w: F.conv2d(x, w, groups=3, stride=2), t(1, 3, 8, 8), t(3, 1, 3, 3),
     tol=3)
case(F.conv2d, "conv2d_same", lambda x, w: F.conv2d(x, w, padding="same"), t(1, 2, 6, 7), t(3, 2, 5, 3), tol=3)
case(F.conv2d, "conv2d_same_dilated", lambda x, w: F.conv2d(x, w, padding="same", dilation=2), t(1, 2, 6, 7),
     t(3, 2, 2, 3), tol=3)
case(F.conv2d, "conv2d_valid", lambda x, w: F.conv2d(x, w, padding="valid"), t(1, 2, 6, 7), t(3, 2, 2, 3), tol=3)
case(nn.Conv2d, "nn.Conv2d", lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), t(2, 3, 8, 8), module=True,
     dtypes=(F32, BF16), tol=3)
case(nn.Conv2d, "nn.Conv2d_groups_nobias", lambda: nn.Conv2d(4, 8, (3, 1), groups=4, bias=False, dilation=(1, 2)),
     t(1, 4, 6, 6), module=True, tol=3)
case(nn.Conv2d, "nn.Conv2d_same", lambda: nn.Conv2d(2, 3, 3, padding="same"), t(1, 2, 5, 6), module=True, tol=3)

# ---------------------------------------------------------------------------------------------------------------
# normalisation, softmax, dropout
# ---------------------------------------------------------------------------------------------------------------
case(F.layer_norm, "F.layer_norm_affine", lambda x, w, b: F.layer_norm(x, (8,), w, b), t(2, 3, 8), t(8), t(8),
     dtypes=FLOATS, tol=5)
case(F.layer_norm, "F.layer_norm_plain", lambda x: F.layer_norm(x, (3, 8), eps=1e-3), t(2, 3, 8),
     dtypes=(F32, BF16), tol=5)
case(F.layer_norm, "F.layer_norm_weight_only", lambda x, w: F.layer_norm(x, [8], w), t(4, 8), t(8), tol=5)
case(nn.LayerNorm, "nn.LayerNorm", lambda: nn.LayerNorm(8), t(2, 3, 8), module=True, dtypes=(F32, F16), tol=5)
case(nn.LayerNorm, "nn.LayerNorm_no_affine", lambda: nn.LayerNorm((3, 8), elementwise_affine=False), t(2, 3, 8),
     module=True, tol=5)
case(nn.LayerNorm, "nn.LayerNorm_no_bias", lambda: nn.LayerNorm(8, bias=False), t(4, 8), module=True, tol=5)

case(torch.softmax, "torch.softmax", lambda x: torch.softmax(x, -1), t(3, 7), dtypes=FLOATS, tol=3)
case(torch.softmax, "torch.softmax_dtype", lambda x: torch.softmax(x, 0, dtype=torch.float32), t(4, 5),
     dtypes=(F16,), tol=3)
case(F.softmax, "F.softmax", lambda x: F.softmax(x, dim=1), t(2, 5, 3), tol=3)
case(F.softmax, "F.softmax_dtype", lambda x: F.softmax(x, dim=-1, dtype=torch.float64), t(2, 5), tol=3)
case(nn.Softmax, "nn.Softmax", lambda: nn.Softmax(dim=-1), t(3, 6), module=True, tol=3)
case(torch.log_softmax, "torch.log_softmax", lambda x: torch.log_softmax(x, 1), t(3, 7), dtypes=FLOATS, tol=3)
case(F.log_softmax, "F.log_softmax", lambda x: F.log_softmax(x, dim=-1), t(2, 5), tol=3)
case(F.log_softmax, "F.log_softmax_dtype", lambda x: F.log_softmax(x, 0, dtype=torch.float32), t(4, 5),
     dtypes=(BF16,), tol=3)
case((torch.Tensor.softmax, torch.Tensor.log_softmax), "softmax_methods",
     lambda x: (x.softmax(-2), x.log_softmax(0)), t(2, 5, 3), tol=3)
case(nn.LogSoftmax, "nn.LogSoftmax", lambda: nn.LogSoftmax(dim=1), t(3, 6), module=True, tol=3)

case(F.dropout, "F.dropout_eval", lambda x: F.dropout(x, 0.5, training=False) * 2, t(3, 4))
case(F.dropout, "F.dropout_p0", lambda x: F.dropout(x, p=0.0) + 1, t(3, 4))
case(nn.Dropout, "nn.Dropout_eval", lambda: nn.Dropout(0.3), t(3, 4), module=True, dtypes=(BF16,))
# (the other dropout forms: identity in eval mode and for p = 0, zeros for p = 1 -- tests/test_random.py draws masks)
case((F.dropout1d, F.dropout2d, F.dropout3d), "F.dropout_nd_eval",
     lambda x: (F.dropout1d(x[0], 0.5, training=False), F.dropout2d(x, 0.4, training=False),
                F.dropout3d(x, 0.0), F.dropout2d(x, 1.0), F.dropout1d(x[0], 1.0)), t(2, 3, 4, 5))
case((F.alpha_dropout, F.feature_alpha_dropout), "F.alpha_dropout_eval",
     lambda x: (F.alpha_dropout(x, 0.5), F.feature_alpha_dropout(x, 0.2, training=False),
                F.alpha_dropout(x, 0.0, training=True)), t(2, 3, 4))
case(nn.Dropout1d, "nn.Dropout1d_eval", lambda: nn.Dropout1d(0.3), t(2, 3, 4), module=True)
case(nn.Dropout2d, "nn.Dropout2d_eval", lambda: nn.Dropout2d(0.3), t(2, 3, 4, 4), module=True, dtypes=(BF16,))
case(nn.Dropout3d, "nn.Dropout3d_eval", lambda: nn.Dropout3d(0.3), t(2, 3, 2, 2, 2), module=True)
case(nn.AlphaDropout, "nn.AlphaDropout_eval", lambda: nn.AlphaDropout(0.3), t(3, 4), module=True)
case(nn.FeatureAlphaDropout, "nn.FeatureAlphaDropout_eval", lambda: nn.FeatureAlphaDropout(0.3), t(2, 3, 4),
     module=True)
case(nn.Identity, "nn.Identity", nn.Identity, t(3, 4), module=True, dtypes=(I64,))

# convolutions of every spatial rank, transposed convolutions (one fxla.conv op)
case(F.conv1d, "F.conv1d", lambda x, w, b: (F.conv1d(x, w, b), F.conv1d(x, w, stride=2, padding=1, dilation=2),
                                            F.conv1d(x[0], w, b, padding="same")),
     t(2, 4, 9), t(6, 4, 3), t(6), dtypes=FLOATS, tol=3)
case(F.conv3d, "F.conv3d", lambda x, w, b: (F.conv3d(x, w, b, padding=1), F.conv3d(x, w[:, :1], stride=(1, 2, 2),
                                                                                    groups=2)),
     t(1, 2, 4, 5, 6), t(4, 2, 3, 3, 3), t(4), dtypes=FLOATS, tol=3)
case(nn.Conv1d, "nn.Conv1d", lambda: nn.Conv1d(3, 4, 3, padding=2, dilation=2), t(2, 3, 8), module=True,
     dtypes=(F32, BF16), tol=3)
case(nn.Conv3d, "nn.Conv3d", lambda: nn.Conv3d(2, 4, (1, 3, 3), stride=(1, 2, 1), bias=False), t(1, 2, 3, 6, 5),
     module=True, tol=3)
case(F.conv_transpose2d, "F.conv_transpose2d",
     lambda x, w, b: (F.conv_transpose2d(x, w, b), F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
                      F.conv_transpose2d(x, w[:, :2], None, stride=(2, 1), groups=2, dilation=(1, 2))),
     t(2, 4, 5, 6), t(4, 3, 3, 3), t(3), dtypes=FLOATS, tol=3)
case(F.conv_transpose1d, "F.conv_transpose1d", lambda x, w: F.conv_transpose1d(x, w, stride=3, padding=2, dilation=2),
     t(2, 4, 5), t(4, 3, 3), tol=3)
case(F.conv_transpose3d, "F.conv_transpose3d", lambda x, w: F.conv_transpose3d(x, w, stride=2, padding=1),
     t(1, 2, 3, 4, 3), t(2, 3, 2, 2, 2), tol=3)
case(nn.ConvTranspose2d, "nn.ConvTranspose2d", lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1,
                                                                          output_padding=1, groups=2),
     t(2, 4, 5, 6), module=True, dtypes=(F32, BF16), tol=3)
case(nn.ConvTranspose2d, "nn.ConvTranspose2d_unet", lambda: nn.ConvTranspose2d(4, 2, 2, stride=2), t(2, 4, 3, 3),
     module=True, tol=3)
case(nn.ConvTranspose1d, "nn.ConvTranspose1d", lambda: nn.ConvTranspose1d(3, 2, 4, stride=2), t(2, 3, 5), module=True,
     tol=3)
case(nn.ConvTranspose3d, "nn.ConvTranspose3d", lambda: nn.ConvTranspose3d(2, 2, 2, stride=2, bias=False),
     t(1, 2, 2, 3, 2), module=True, tol=3)

case((F.cosine_similarity, F.pairwise_distance), "cosine_similarity_pairwise_distance",
     lambda x, y: (F.cosine_similarity(x, y), F.cosine_similarity(x, y[:1], dim=-1, eps=1e-3),
                   F.pairwise_distance(x[:, 0], y[:, 0]), F.pairwise_distance(x[:, 0], y[:, 0], p=1, keepdim=True),
                   F.pairwise_distance(x[:, 0], y[:, 0], p=float("inf")), F.pairwise_distance(x[:, 0], y[:, 0], p=3)),
     t(2, 3, 4), t(2, 3, 4), dtypes=(F32, F16), tol=4)
case(nn.Softmax2d, "nn.Softmax2d", lambda: nn.Softmax2d(), t(2, 3, 4, 5), module=True)


class _Pair(nn.Module):
    def __init__(self, mod):
        super().__init__()
        self.mod = mod

    def forward(self, x, y):
        return self.mod(x, y)


case(nn.CosineSimilarity, "nn.CosineSimilarity", _Pair(nn.CosineSimilarity(dim=-1)), t(3, 4), t(3, 4))
case(nn.PairwiseDistance, "nn.PairwiseDistance", _Pair(nn.PairwiseDistance(p=1.5, keepdim=True)), t(3, 4), t(3, 4))

case(nn.Conv2d, "nn.Conv2d_padding_modes", lambda: nn.Conv2d(3, 4, 3, padding=(1, 2), padding_mode="reflect"),
     t(2, 3, 6, 7), module=True, dtypes=(F32, BF16), tol=3)
case(nn.Conv1d, "nn.Conv1d_circular", lambda: nn.Conv1d(2, 3, 4, padding="same", padding_mode="circular"),
     t(2, 2, 9), module=True, tol=3)
case(nn.Conv3d, "nn.Conv3d_replicate", lambda: nn.Conv3d(2, 2, 3, stride=2, padding=1, padding_mode="replicate"),
     t(1, 2, 4, 5, 6), module=True, tol=3)


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)


class _UpTo(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1)

    def forward(self, x):
        return self.up(x, output_size=[16, 16])      # the size picks output_padding=1


@pytest.mark.parametrize("make", [lambda: nn.ConvTranspose2d(8, 8, 3, stride=2, groups=8), _UpTo])
def test_conv_transpose_module_called_with_its_output_size_argument(make):
    """ConvTranspose's forward(input, output_size=None): compiled as the root module (output_size a placeholder
    defaulting to None) and called with an output size."""
    import fxla
    torch.manual_seed(0)
    model = make().eval()
    x = torch.randn(1, 8 if isinstance(model, nn.ConvTranspose2d) else 4, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(fxla.compile(model)(x), model(x), rtol=1e-5, atol=1e-5)
