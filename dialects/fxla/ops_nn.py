"""The ``nn`` family: the neural-network ops that are more than one elementwise or reduction step: convolution,
softmax and layer normalisation (part of the op table; see :mod:`.ops`).

Pointwise activations are ``elementwise`` ops; pooling has its own family (``pool``).
"""
from __future__ import annotations

from . import infer
from .opdef import BOOL, F64, I64, I64_ARRAY, Attr, FloatOperand, OpDef, Operand

conv = OpDef("conv", "N-d convolution (1-, 2- or 3-D: the spatial rank is the input rank - 2), NC... input; "
             "cross-correlation like torch.  `transposed` gives torch's conv_transpose*d (its gradient).",
             (Operand("input", "[N, C, *spatial]"),
              Operand("weight", "[O, C/groups, *kernel], transposed: [C, O/groups, *kernel]"),
              Operand("bias", "[O]", optional=True)),
             (Attr("stride", I64_ARRAY, "window strides, one per spatial dim"),
              Attr("padding", I64_ARRAY, "symmetric zero padding, one per spatial dim"),
              Attr("dilation", I64_ARRAY, "window dilation, one per spatial dim"),
              Attr("groups", I64, "feature groups", default=1),
              Attr("transposed", BOOL, "a transposed convolution (conv_transpose*d)", default=False),
              Attr("output_padding", I64_ARRAY, "transposed only: extra size on the high end of each "
                   "spatial dim (empty: none)", default=())),
             infer=infer.conv, torch="torch.nn.functional.conv2d")
softmax = OpDef("softmax", "Softmax along `dim`.", (FloatOperand("input"),),
                (Attr("dim", I64, "the normalised dimension"),), infer=infer.softmax,
                torch="torch.softmax")
log_softmax = OpDef("log_softmax", "log(softmax(x)) along `dim`, computed stably.", (FloatOperand("input"),),
                    (Attr("dim", I64, "the normalised dimension"),), infer=infer.softmax,
                    torch="torch.log_softmax")
layer_norm = OpDef("layer_norm", "Layer normalisation over the last `normalized_rank` dims.",
                   (FloatOperand("input"), FloatOperand("weight", optional=True),
                    FloatOperand("bias", optional=True)),
                   (Attr("normalized_rank", I64, "how many trailing dims are normalised"),
                    Attr("eps", F64, "added to the variance", default=1e-5)),
                   infer=infer.norm_last, torch="torch.nn.functional.layer_norm")

NN_OPS = (conv, softmax, log_softmax, layer_norm)
