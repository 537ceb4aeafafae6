"""``torch.autocast("cpu")`` regions entered inside a traced forward: the casts eager autocast makes, recorded
as graph nodes.

Eager autocast casts the floating-point tensor arguments of some ops as they run: the *lower-precision* ops
(``linear``, ``matmul``, ``conv*``, ...) to the autocast dtype, the *float32* ops (most losses, ``prod``,
``cdist``, ...) to float32; every other op runs in its inputs' dtypes.  While a forward runs inside a CPU autocast
region it entered itself (``with torch.autocast("cpu", dtype=torch.bfloat16): ...`` in the model or the loss of
``fxla.compile_step``), the tracer records, before each op of those lists, an :func:`autocast_cast` of each of
its tensor arguments (a cast of floating-point tensors only, as autocast's), so the graph computes in eager's
dtypes.  ``nn.Linear``, ``nn.Conv*`` and ``nn.PReLU`` are traced through there (their weights are cast too).

Torch ops that are *composites* of listed ops inside ATen (``einsum`` runs ``bmm``, ``nn.MultiheadAttention``
runs ``linear``) would get casts inside that the graph cannot see: in an autocast region they are refused with
:class:`~fxla.frontend.errors.AutocastError`.  The lists follow torch's CPU autocast policy
(aten/src/ATen/autocast_mode.cpp).
"""
from __future__ import annotations

import operator
from typing import Any, Optional

import torch
import torch.nn.functional as F

from .wrap import wrap

__all__ = ["LOWER_PRECISION", "FLOAT32", "COMPOSITES", "TRACED_THROUGH", "autocast_cast", "region_dtype"]

T = torch.Tensor

#: ops whose floating-point tensor arguments autocast casts to its dtype (bfloat16 by default on the CPU)
LOWER_PRECISION = frozenset({
    F.linear, torch.matmul, T.matmul, operator.matmul, torch.mm, T.mm, torch.bmm, T.bmm, torch.addmm, T.addmm,
    torch.baddbmm, T.baddbmm, torch.addbmm, T.addbmm, F.conv1d, F.conv2d, F.conv3d, torch.conv1d, torch.conv2d,
    torch.conv3d, F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d, torch.conv_transpose1d,
    torch.conv_transpose2d, torch.conv_transpose3d, F.prelu, torch.prelu, F.scaled_dot_product_attention,
})

#: ops (and loss modules) whose floating-point tensor arguments autocast casts to float32
FLOAT32 = frozenset({
    F.binary_cross_entropy, F.mse_loss, F.cosine_embedding_loss, F.nll_loss, F.hinge_embedding_loss,
    F.poisson_nll_loss, F.smooth_l1_loss, F.cross_entropy, F.l1_loss, F.huber_loss, F.margin_ranking_loss,
    F.soft_margin_loss, F.triplet_margin_loss, F.multi_margin_loss, F.ctc_loss, F.kl_div,
    F.multilabel_margin_loss, F.binary_cross_entropy_with_logits, torch.prod, T.prod, torch.cdist,
    F.avg_pool3d, F.max_pool3d, F.adaptive_avg_pool3d, torch.nn.BCELoss, torch.nn.MSELoss,
    torch.nn.CosineEmbeddingLoss, torch.nn.NLLLoss, torch.nn.HingeEmbeddingLoss, torch.nn.PoissonNLLLoss,
    torch.nn.SmoothL1Loss, torch.nn.CrossEntropyLoss, torch.nn.L1Loss, torch.nn.HuberLoss,
    torch.nn.MarginRankingLoss, torch.nn.SoftMarginLoss, torch.nn.TripletMarginLoss, torch.nn.MultiMarginLoss,
    torch.nn.CTCLoss, torch.nn.KLDivLoss, torch.nn.MultiLabelMarginLoss, torch.nn.BCEWithLogitsLoss,
    torch.nn.AvgPool3d, torch.nn.MaxPool3d, torch.nn.AdaptiveAvgPool3d,
})

#: leaf modules traced through in an autocast region, so that the casts of their weights are recorded
TRACED_THROUGH = (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d, torch.nn.ConvTranspose1d,
                  torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d, torch.nn.PReLU)

#: torch ops (and modules) that run listed ops inside ATen, where the graph cannot record the casts
COMPOSITES = frozenset({
    torch.einsum, torch.tensordot, F.bilinear, torch.bilinear, F.multi_head_attention_forward, torch.kron,
    torch.nn.MultiheadAttention, torch.nn.Bilinear, torch.nn.TransformerEncoderLayer,
    torch.nn.TransformerDecoderLayer, torch.nn.TransformerEncoder, torch.nn.TransformerDecoder, torch.nn.Transformer,
    torch.nn.RNN, torch.nn.LSTM, torch.nn.GRU, torch.nn.RNNCell, torch.nn.LSTMCell, torch.nn.GRUCell,
})


def region_dtype(at_start: bool) -> Optional[torch.dtype]:
    """The dtype of the CPU autocast region the traced forward is in, when it entered one itself (``None``
    otherwise: outside any, or in one the caller entered before tracing began)."""
    if at_start or not torch.is_autocast_enabled("cpu"):
        return None
    return torch.get_autocast_dtype("cpu")


@wrap
def autocast_cast(x: Any, dtype: torch.dtype) -> Any:
    """``x`` in ``dtype`` when it is a floating-point tensor (what autocast casts), else ``x`` itself."""
    if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != dtype:
        return x.to(dtype)
    return x
