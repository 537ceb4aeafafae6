"""nn rules built from fxla ops (F.pad, batch_norm, rms_norm, scaled_dot_product_attention) against eager."""
from __future__ import annotations

import operator
from functools import partial

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla

from test_ops import BF16, BOOL, F16, F32, FLOATS, I64, add_case, index, params_of, run_case, t

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

# group_norm
case(F.group_norm, "F.group_norm", lambda x, w, b: (F.group_norm(x, 2, w, b), F.group_norm(x, 3, eps=1e-3),
                                                    F.group_norm(x[..., 0], 6, w, b)),
     t(2, 6, 4, 5), t(6), t(6), dtypes=FLOATS, tol=4)
case(torch.group_norm, "torch.group_norm", lambda x, w, b: torch.group_norm(x, 2, w, b, 1e-5, False), t(2, 4, 3, 3, 2),
     t(4), t(4), tol=4)
case(nn.GroupNorm, "nn.GroupNorm", lambda: nn.GroupNorm(2, 4), t(2, 4, 3, 3), module=True, dtypes=(F32, BF16), tol=4)

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

# matrix products with accumulation, type_as, EmbeddingBag, normalize, einsum
case((torch.addmm, torch.Tensor.addmm), "addmm",
     lambda a, m1, m2, v: (torch.addmm(a, m1, m2), torch.addmm(v, m1, m2, beta=0.5, alpha=2.0), a.addmm(m1, m2),
                           torch.addmm(a, m1, m2, beta=0)),
     t(3, 5), t(3, 4), t(4, 5), t(5), dtypes=FLOATS, tol=3)
case((torch.baddbmm, torch.Tensor.baddbmm), "baddbmm",
     lambda a, b1, b2: (torch.baddbmm(a, b1, b2, alpha=0.3), a.baddbmm(b1, b2, beta=2)),
     t(2, 3, 5), t(2, 3, 4), t(2, 4, 5), dtypes=FLOATS, tol=3)
case(torch.Tensor.type_as, "type_as", lambda x, y, i: (x.type_as(y), y.type_as(x), x.type_as(i), i.type_as(x)),
     t(3, 4), t(3, dtype=F16), t(2, dtype=I64))
case(F.embedding_bag, "F.embedding_bag",
     lambda i, w, p: (F.embedding_bag(i, w, mode="sum"), F.embedding_bag(i, w), F.embedding_bag(i, w, mode="max"),
                      F.embedding_bag(i, w, mode="sum", per_sample_weights=p)),
     index(4, 3, high=10), t(10, 5), t(4, 3), dtypes=(F32, BF16), tol=2)
case(nn.EmbeddingBag, "nn.EmbeddingBag_sum", lambda: nn.EmbeddingBag(10, 4, mode="sum"), index(3, 2, high=10),
     module=True)
case(nn.EmbeddingBag, "nn.EmbeddingBag_mean", lambda: nn.EmbeddingBag(10, 4), index(3, 5, high=10), module=True)
case(F.normalize, "F.normalize",
     lambda x: (F.normalize(x), F.normalize(x, dim=-1), F.normalize(x, p=1, dim=0), F.normalize(x, p=3, dim=1),
                F.normalize(x * 0, eps=1e-3), F.normalize(x, p=float("inf"))),
     t(3, 4, 2), dtypes=FLOATS, tol=3)
case(torch.einsum, "torch.einsum",
     lambda a, b, c, v: (torch.einsum("ij,jk->ik", a[0, 0], b[0, 0].transpose(0, 1)),
                         torch.einsum("bhqd,bhkd->bhqk", a, b), torch.einsum("...qd,...kd->...qk", a, b),
                         torch.einsum("bhqd,bhkd,bhke->bhqe", a, b, c), torch.einsum("bhqd->bq", a),
                         torch.einsum("ij->ji", a[0, 0]), torch.einsum("i,i->", v, v), torch.einsum("i,j", v, v),
                         torch.einsum("bhqd,bkd->bhqk", a, b[:, 0]), torch.einsum("bqd", a[0]),
                         torch.einsum("ij,jk", [a[0, 0], c[0, 0, :5]])),
     t(2, 3, 4, 5), t(2, 3, 6, 5), t(2, 3, 6, 2), t(5), dtypes=FLOATS, tol=3)
case(torch.div, "div_rounding_mode",
     lambda a, b: (torch.div(a, b, rounding_mode="floor"), torch.div(a, b, rounding_mode="trunc"),
                   a.div(3, rounding_mode="trunc"), torch.div(a, -2, rounding_mode="floor")),
     t(4, 5), t(4, 5, kind="positive"), dtypes=(F32, BF16, I64))
case(operator.getitem, "getitem_adjacent_tensor_indices",
     lambda x, i, j: (x[:, i, j], x[i, j], x[1:, [0, 2], [1, -1]], x[:, i[:, None], j]),
     t(6, 6, 6), index(3, high=6), index(3, high=6))
case(operator.getitem, "getitem_tensor_indices_apart",        # torch puts the indexed dims first
     lambda x, i, j: (x[i, :, j], x[:, i, :, j], x[i[:, None], ..., j], x[[0, -1], 1:, :, [2, 3]]),
     t(6, 5, 6, 6), index(3, high=5), index(3, high=6))


# -- instance norm, distances, Softmax2d ----------------------------------------------------------------------
case(F.instance_norm, "F.instance_norm",
     lambda x, w: (F.instance_norm(x), F.instance_norm(x, weight=w, bias=w * 2), F.instance_norm(x[:, :, 0], eps=1e-3),
                   F.instance_norm(x, torch.zeros(3), torch.ones(3) * 2, use_input_stats=False)),
     t(2, 3, 4, 5), t(3), dtypes=(F32, BF16), tol=4)
case(nn.InstanceNorm2d, "nn.InstanceNorm2d", lambda: nn.InstanceNorm2d(3, affine=True), t(2, 3, 4, 5), module=True)
case(nn.InstanceNorm1d, "nn.InstanceNorm1d_unbatched", lambda: nn.InstanceNorm1d(3), t(3, 6), module=True)
case(nn.InstanceNorm3d, "nn.InstanceNorm3d_running_stats", lambda: nn.InstanceNorm3d(2, track_running_stats=True),
     t(1, 2, 3, 3, 2), module=True)
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
case(nn.LocalResponseNorm, "nn.LocalResponseNorm", lambda: nn.LocalResponseNorm(5), t(2, 7, 3, 3), module=True)

# -- unfold (im2col) / fold (col2im) ---------------------------------------------------------------------------
case((F.unfold, F.fold), "unfold_fold",
     lambda x, y: (F.unfold(x, 2), F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
                   F.unfold(x[0], 3, padding=1), F.fold(y, (4, 5), 2), F.fold(y[0], (4, 5), 2),
                   F.fold(F.unfold(x, 3, padding=1, stride=2), (6, 7), 3, padding=1, stride=2)),
     t(2, 3, 6, 7), t(2, 12, 12), dtypes=(F32, BF16), tol=2)
case(nn.Unfold, "nn.Unfold", lambda: nn.Unfold((2, 2), stride=2), t(1, 2, 4, 6), module=True)
case(nn.Fold, "nn.Fold", lambda: nn.Fold((3, 4), 2, dilation=(1, 2)), t(2, 8, 4), module=True)

# -- pixel / channel shuffles ---------------------------------------------------------------------------------
case((torch.pixel_shuffle, torch.pixel_unshuffle, torch.channel_shuffle), "pixel_channel_shuffle",
     lambda x, y: (F.pixel_shuffle(x, 2), F.pixel_unshuffle(y, 2), F.channel_shuffle(x, 4), F.pixel_shuffle(x[0], 2),
                   torch.pixel_unshuffle(y[:, :, :2, :4], 2)),
     t(2, 8, 3, 5), t(2, 2, 4, 6), dtypes=(F32, BF16, I64))
case(nn.PixelShuffle, "nn.PixelShuffle", lambda: nn.PixelShuffle(3), t(1, 18, 2, 2), module=True)
case(nn.PixelUnshuffle, "nn.PixelUnshuffle", lambda: nn.PixelUnshuffle(2), t(1, 3, 4, 2), module=True)
case(nn.ChannelShuffle, "nn.ChannelShuffle", lambda: nn.ChannelShuffle(3), t(2, 6, 5), module=True)

# -- nn.MultiheadAttention (eval mode) -------------------------------------------------------------------------
class _Attend(nn.Module):
    """Calls its MultiheadAttention with fixed keyword options (masks are constants of the program)."""

    def __init__(self, mha, **options):
        super().__init__()
        self.mha, self.options = mha, options

    def forward(self, q, k, v):
        out, weights = self.mha(q, k, v, **self.options)
        return (out, weights) if self.options.get("need_weights", True) else out      # weights is None


torch.manual_seed(0)
_CAUSAL = torch.triu(torch.ones(4, 5, dtype=torch.bool), 1)
_PADDING = torch.tensor([[False] * 4 + [True], [False] * 5])
case(nn.MultiheadAttention, "nn.MultiheadAttention", _Attend(nn.MultiheadAttention(8, 2)).eval(),
     t(4, 2, 8), t(5, 2, 8), t(5, 2, 8))
case(nn.MultiheadAttention, "nn.MultiheadAttention_batch_first_per_head_masks",
     _Attend(nn.MultiheadAttention(8, 4, batch_first=True), attn_mask=_CAUSAL, key_padding_mask=_PADDING,
             average_attn_weights=False).eval(), t(2, 4, 8), t(2, 5, 8), t(2, 5, 8))
case(nn.MultiheadAttention, "nn.MultiheadAttention_kdim_vdim_float_mask",
     _Attend(nn.MultiheadAttention(8, 2, kdim=3, vdim=6, bias=False),
             attn_mask=torch.randn(4, 4, 5), need_weights=False).eval(), t(4, 2, 8), t(5, 2, 3), t(5, 2, 6))
case(nn.MultiheadAttention, "nn.MultiheadAttention_unbatched", _Attend(nn.MultiheadAttention(8, 2)).eval(),
     t(4, 8), t(5, 8), t(5, 8))

# -- nn.TransformerEncoderLayer / nn.TransformerDecoderLayer (eval mode) ---------------------------------------
class _Layer(nn.Module):
    """Calls a transformer layer on one or two inputs with fixed keyword options."""

    def __init__(self, layer, **options):
        super().__init__()
        self.layer, self.options = layer, options

    def forward(self, x, memory=None):
        if isinstance(self.layer, (nn.TransformerDecoderLayer, nn.TransformerDecoder, nn.Transformer)):
            return self.layer(x, memory, **self.options)    # (tgt, memory), or nn.Transformer's (src, tgt)
        return self.layer(x, **self.options)


torch.manual_seed(0)
case(nn.TransformerEncoderLayer, "nn.TransformerEncoderLayer", _Layer(nn.TransformerEncoderLayer(8, 2, 16)).eval(),
     t(4, 2, 8))
case(nn.TransformerEncoderLayer, "nn.TransformerEncoderLayer_norm_first_gelu_batch_first_masks",
     _Layer(nn.TransformerEncoderLayer(8, 2, 16, activation="gelu", norm_first=True, batch_first=True),
            src_mask=nn.Transformer.generate_square_subsequent_mask(4),
            src_key_padding_mask=torch.tensor([[False] * 3 + [True], [False] * 4])).eval(), t(2, 4, 8))
case(nn.TransformerDecoderLayer, "nn.TransformerDecoderLayer",
     _Layer(nn.TransformerDecoderLayer(8, 2, 16), tgt_mask=nn.Transformer.generate_square_subsequent_mask(4)).eval(),
     t(4, 2, 8), t(5, 2, 8))
case(nn.TransformerDecoderLayer, "nn.TransformerDecoderLayer_norm_first",
     _Layer(nn.TransformerDecoderLayer(8, 2, 16, norm_first=True, activation=F.gelu)).eval(), t(4, 2, 8), t(5, 2, 8))

# the stacks: padding masks left-aligned (torch's nested-tensor path, which zeroes the padded positions) or not
_LEFT = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])
_NOT_LEFT = torch.tensor([[False] * 5, [True] + [False] * 4, [False] * 4 + [True]])


def _encoder(norm_first=False, batch_first=True, **options):
    layer = nn.TransformerEncoderLayer(8, 2, 16, norm_first=norm_first, batch_first=batch_first)
    return nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8), **options)


case(nn.TransformerEncoder, "nn.TransformerEncoder", _Layer(_encoder()).eval(), t(3, 5, 8))
case(nn.TransformerEncoder, "nn.TransformerEncoder_padding_nested",
     _Layer(_encoder(), src_key_padding_mask=_LEFT).eval(), t(3, 5, 8))
case(nn.TransformerEncoder, "nn.TransformerEncoder_padding_not_left_aligned",
     _Layer(_encoder(), src_key_padding_mask=_NOT_LEFT).eval(), t(3, 5, 8))
case(nn.TransformerEncoder, "nn.TransformerEncoder_causal_seq_first_no_nested",
     _Layer(_encoder(norm_first=True, batch_first=False, enable_nested_tensor=False),
            mask=nn.Transformer.generate_square_subsequent_mask(5), src_key_padding_mask=_LEFT).eval(), t(5, 3, 8))
case(nn.TransformerDecoder, "nn.TransformerDecoder",
     _Layer(nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, batch_first=True), 2, norm=nn.LayerNorm(8)),
            tgt_mask=nn.Transformer.generate_square_subsequent_mask(4), memory_key_padding_mask=_LEFT).eval(),
     t(3, 4, 8), t(3, 5, 8))
case(nn.Transformer, "nn.Transformer",
     _Layer(nn.Transformer(8, 2, 2, 1, 16, batch_first=True),
            tgt_mask=nn.Transformer.generate_square_subsequent_mask(4), src_key_padding_mask=_LEFT,
            memory_key_padding_mask=_LEFT).eval(), t(3, 5, 8), t(3, 4, 8))
case(nn.Transformer, "nn.Transformer_seq_first", _Layer(nn.Transformer(8, 2, 1, 1, 16)).eval(),
     t(5, 3, 8), t(4, 3, 8))

# -- recurrent layers (eval mode), unrolled over the sequence -------------------------------------------------
case(nn.LSTM, "nn.LSTM", lambda: nn.LSTM(3, 4), t(5, 2, 3), module=True, dtypes=(F32, F16), tol=4)
case(nn.LSTM, "nn.LSTM_2layer_bidirectional_batch_first",
     lambda: nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True), t(2, 5, 3), module=True)
case(nn.LSTM, "nn.LSTM_unbatched", lambda: nn.LSTM(3, 4, bias=False), t(5, 3), module=True)
case(nn.GRU, "nn.GRU", lambda: nn.GRU(3, 4, num_layers=2, bidirectional=True), t(5, 2, 3), module=True,
     dtypes=(F32, BF16), tol=4)
case(nn.LSTMCell, "nn.LSTMCell", lambda: nn.LSTMCell(3, 4), t(2, 3), module=True)
case(nn.GRUCell, "nn.GRUCell", lambda: nn.GRUCell(3, 4, bias=False), t(3), module=True, dtypes=(F32, BF16), tol=4)
case(nn.RNNCell, "nn.RNNCell", lambda: nn.RNNCell(3, 4, nonlinearity="relu"), t(2, 3), module=True)
case(nn.RNN, "nn.RNN", lambda: nn.RNN(3, 4, num_layers=2), t(5, 2, 3), module=True)
case(nn.RNN, "nn.RNN_relu_unbatched", lambda: nn.RNN(3, 4, nonlinearity="relu", bidirectional=True), t(5, 3),
     module=True)


class _WithState(nn.Module):
    """An RNN called with initial states (the harness's module holder passes one input)."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn
        self.lstm = isinstance(rnn, (nn.LSTM, nn.LSTMCell))

    def forward(self, x, h, c=None):
        return self.rnn(x, (h, c) if self.lstm else h)


torch.manual_seed(0)
case(nn.LSTM, "nn.LSTM_initial_state", _WithState(nn.LSTM(3, 4, num_layers=2)).eval(), t(5, 2, 3), t(2, 2, 4),
     t(2, 2, 4))
case(nn.LSTMCell, "nn.LSTMCell_state", _WithState(nn.LSTMCell(3, 4)).eval(), t(2, 3), t(2, 4), t(2, 4))
case(nn.GRU, "nn.GRU_initial_state", _WithState(nn.GRU(3, 4, num_layers=2, batch_first=True)).eval(), t(2, 5, 3),
     t(2, 2, 4))

@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)


def test_lstm_projection_is_a_clear_error():
    class Projected(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(3, 4, proj_size=2)

        def forward(self, x):
            return self.lstm(x)[0]
    with pytest.raises(fxla.LoweringError) as info:
        fxla.compile(Projected().eval())(torch.randn(5, 2, 3))
    assert "nn.LSTM with proj_size is not supported" in str(info.value)
    assert "return self.lstm(x)[0]" in str(info.value) and "fix: use proj_size=0" in str(info.value)


def test_multihead_attention_options_not_lowered_are_errors():
    model = _Attend(nn.MultiheadAttention(8, 2, add_bias_kv=True)).eval()
    with pytest.raises(fxla.LoweringError, match="add_bias_kv or add_zero_attn is not supported"):
        fxla.compile(model)(torch.randn(4, 2, 8), torch.randn(5, 2, 8), torch.randn(5, 2, 8))


def test_transformer_options_not_lowered_are_errors():
    encoder = _encoder(mask_check=False)
    with pytest.raises(fxla.LoweringError, match=r"mask_check=False\) with a src_key_padding_mask"):
        fxla.compile(_Layer(encoder, src_key_padding_mask=_LEFT).eval())(torch.randn(3, 5, 8))
    with pytest.raises(fxla.FxlaError, match=r"return self.layer\(x, \*\*self.options\)\n.*Need attn_mask if "
                                             r"specifying the is_causal hint"):   # torch's own check, at the line
        fxla.compile(_Layer(nn.TransformerEncoderLayer(8, 2, 16), is_causal=True).eval())(torch.randn(4, 2, 8))
    odd = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 1, norm=nn.BatchNorm1d(8))
    with pytest.raises(fxla.LoweringError, match="final norm of type BatchNorm1d is not supported"):
        fxla.compile(_Layer(odd).eval())(torch.randn(4, 2, 8))
    with pytest.raises(fxla.LoweringError, match="their batch sizes differ"):
        fxla.compile(nn.Transformer(8, 2, 1, 1, 16).eval())(torch.randn(5, 3, 8), torch.randn(4, 2, 8))


def test_a_torch_layer_compiled_on_its_own_is_one_leaf():
    """The root module is a torch layer: its forward (Python that inspects its inputs) is not traced; the graph is
    one call_module on ``module`` (parameters ``module.<name>``), and keyword arguments bind as in the layer."""
    torch.manual_seed(0)
    enc = _encoder().eval()
    fast = fxla.compile(enc)
    nodes = [n for n in fast.graph_module.graph.nodes if n.op == "call_module"]
    assert [n.target for n in nodes] == ["module"]
    x = torch.randn(3, 5, 8)
    with torch.no_grad():
        torch.testing.assert_close(fast(x, src_key_padding_mask=_LEFT), enc(x, src_key_padding_mask=_LEFT),
                                   rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(fast(x), enc(x), rtol=1e-5, atol=1e-5)
    lstm = nn.LSTM(3, 4, batch_first=True).eval()
    out, (h, c) = fxla.compile(lstm)(torch.ones(2, 5, 3))
    want, (wh, wc) = lstm(torch.ones(2, 5, 3))
    torch.testing.assert_close((out, h, c), (want.detach(), wh.detach(), wc.detach()), rtol=1e-5, atol=1e-5)
    assert sorted(n for n, _ in fxla.compile(lstm).graph_module.named_parameters())[0] == "module.bias_hh_l0"


def test_transformer_layer_with_a_custom_activation_is_an_error():
    model = _Layer(nn.TransformerEncoderLayer(8, 2, 16, activation=torch.tanh)).eval()
    with pytest.raises(fxla.LoweringError, match="TransformerEncoderLayer with activation .* is not supported"):
        fxla.compile(model)(torch.randn(4, 2, 8))
