# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `attention` (lowering/rules/attention.py): nn.MultiheadAttention and the transformer
# layers and stacks built on it -- one case per op object of fxla.lowering.RULES.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
import torch.nn as nn
import torch.nn.functional as F

from fxla.testing import case, t


# nn.MultiheadAttention: the packed in-projection sliced into q/k/v rows, heads split to [N, H, L, D], scores
# scaled by 1/sqrt(D), softmax, heads merged, out_proj; the weights averaged over heads.
# CHECK-LABEL: case torch.nn.MultiheadAttention:
# CHECK:         func.func @main(%[[Q:.+]]: tensor<4x2x8xf32>, %[[K:.+]]: tensor<5x2x8xf32>, %[[V:.+]]: tensor<5x2x8xf32>, %[[B:.+]]: tensor<24xf32> {fxla.param = "mod.in_proj_bias"}, %[[W:.+]]: tensor<24x8xf32> {fxla.param = "mod.in_proj_weight"}
# CHECK:         %[[WQ:.+]] = fxla.slice %[[W]] {start = [0, 0], limit = [8, 8], stride = [1, 1]} : tensor<24x8xf32> -> tensor<8x8xf32>
# CHECK:         fxla.linear %[[Q]], %[[WQ]], bias %{{.+}} {{.+}} -> tensor<4x2x8xf32>
# CHECK:         %[[QH:.+]] = fxla.permute %{{.+}} {dims = [1, 2, 0, 3]} : tensor<4x2x2x4xf32> -> tensor<2x2x4x4xf32>
# CHECK:         %[[SCORES:.+]] = fxla.matmul %[[QH]], %{{.+}} : tensor<2x2x4x4xf32>, tensor<2x2x4x5xf32> -> tensor<2x2x4x5xf32>
# CHECK:         fxla.constant {value = dense<5.000000e-01> : tensor<f32>}
# CHECK:         %[[P:.+]] = fxla.softmax %{{.+}} {dim = -1} : tensor<2x2x4x5xf32> -> tensor<2x2x4x5xf32>
# CHECK:         %[[OUT:.+]] = fxla.linear %{{.+}}, %{{.+}}, bias %{{.+}} : tensor<4x2x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<4x2x8xf32>
# CHECK:         %[[AVG:.+]] = fxla.mean %[[P]] {dims = [1], keepdim = false} : tensor<2x2x4x5xf32> -> tensor<2x4x5xf32>
# CHECK:         return %[[OUT]], %[[AVG]] : tensor<4x2x8xf32>, tensor<2x4x5xf32>
@case(nn.MultiheadAttention, t(4, 2, 8), t(5, 2, 8), t(5, 2, 8))
def multihead_attention():
    return nn.MultiheadAttention(8, 2)


# nn.TransformerEncoderLayer (post-norm): x = norm1(x + self_attn(x)); norm2(x + linear2(relu(linear1(x)))).
# CHECK-LABEL: case torch.nn.TransformerEncoderLayer:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x2x8xf32>
# CHECK:         %[[SA:.+]] = fxla.add %[[X]], %{{.+}} : tensor<4x2x8xf32>, tensor<4x2x8xf32> -> tensor<4x2x8xf32>
# CHECK:         %[[N1:.+]] = fxla.layer_norm %[[SA]], {{.+}} -> tensor<4x2x8xf32>
# CHECK:         %[[H:.+]] = fxla.relu %{{.+}} : tensor<4x2x16xf32> -> tensor<4x2x16xf32>
# CHECK:         %[[FF:.+]] = fxla.add %[[N1]], %{{.+}}
# CHECK:         %[[OUT:.+]] = fxla.layer_norm %[[FF]], {{.+}}
# CHECK:         return %[[OUT]] : tensor<4x2x8xf32>
@case(nn.TransformerEncoderLayer, t(4, 2, 8))
def transformer_encoder_layer():
    return nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)


# nn.TransformerDecoderLayer (pre-norm): self-attention, attention over memory, feed-forward, each x + f(norm(x)).
# CHECK-LABEL: case torch.nn.TransformerDecoderLayer:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x2x8xf32>, %[[MEM:.+]]: tensor<5x2x8xf32>
# CHECK:         fxla.layer_norm %[[X]], {{.+}}
# CHECK:         %[[SA:.+]] = fxla.add %[[X]], %{{.+}} : tensor<4x2x8xf32>, tensor<4x2x8xf32> -> tensor<4x2x8xf32>
# CHECK:         fxla.linear %[[MEM]], {{.+}} -> tensor<5x2x8xf32>
# CHECK:         %[[CA:.+]] = fxla.add %[[SA]], %{{.+}}
# CHECK:         %[[OUT:.+]] = fxla.add %[[CA]], %{{.+}}
# CHECK:         return %[[OUT]] : tensor<4x2x8xf32>
@case(nn.TransformerDecoderLayer, t(4, 2, 8), t(5, 2, 8))
def transformer_decoder_layer():
    return nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, norm_first=True)


# nn.TransformerEncoder: the layers in turn (each with its own parameters), then the final norm.
# CHECK-LABEL: case torch.nn.TransformerEncoder:
# CHECK:         func.func @main(%[[X:.+]]: tensor<5x2x8xf32>, {{.+}}"mod.layers.0.self_attn.in_proj_bias"{{.+}}"mod.layers.1.self_attn.in_proj_bias"{{.+}}, %[[NW:.+]]: tensor<8xf32> {fxla.param = "mod.norm.weight"}, %[[NB:.+]]: tensor<8xf32> {fxla.param = "mod.norm.bias"})
# CHECK:         fxla.layer_norm
# CHECK:         %[[L0:.+]] = fxla.layer_norm {{.+}} -> tensor<5x2x8xf32>
# CHECK-NEXT:    fxla.slice {{.+}} {start = [0, 0], limit = [8, 8]
# CHECK:         fxla.linear %[[L0]], {{.+}} -> tensor<5x2x8xf32>
# CHECK:         fxla.layer_norm
# CHECK:         %[[L1:.+]] = fxla.layer_norm {{.+}} -> tensor<5x2x8xf32>
# CHECK-NEXT:    %[[OUT:.+]] = fxla.layer_norm %[[L1]], weight %[[NW]], bias %[[NB]]
# CHECK-NEXT:    return %[[OUT]] : tensor<5x2x8xf32>
@case(nn.TransformerEncoder, t(5, 2, 8))
def transformer_encoder():
    return nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16), 2, norm=nn.LayerNorm(8))


# nn.TransformerEncoder with a key padding mask, where torch runs on a nested tensor (eval, and here its parameters
# frozen: with grad mode on and a parameter requiring grad torch takes the plain path): the layers' output is
# zeroed at the padded positions when every row of the mask is left-aligned (a padded position is followed by
# padded ones only), before the final norm.
# CHECK-LABEL: case torch.nn.TransformerEncoder (nested padding):
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x8xf32>, %[[PAD:.+]]: tensor<2x3xi1>
# CHECK:         fxla.layer_norm
# CHECK:         %[[LAYER:.+]] = fxla.layer_norm {{.+}} -> tensor<2x3x8xf32>
# CHECK:         %[[BEFORE:.+]] = fxla.slice %[[PAD]] {start = [0, 0], limit = [2, 2]
# CHECK:         %[[AFTER:.+]] = fxla.slice %[[PAD]] {start = [0, 1], limit = [2, 3]
# CHECK:         %[[NOT:.+]] = fxla.logical_not %[[BEFORE]]
# CHECK:         %[[FOLLOWS:.+]] = fxla.logical_or %[[NOT]], %[[AFTER]]
# CHECK:         %[[ALIGNED:.+]] = fxla.all %[[FOLLOWS]] {dims = [], keepdim = false} : tensor<2x2xi1> -> tensor<i1>
# CHECK:         %[[ZERO:.+]] = fxla.logical_and %[[PAD]], %[[ALIGNED]] : tensor<2x3xi1>, tensor<i1> -> tensor<2x3xi1>
# CHECK:         %[[Z:.+]] = fxla.reshape %[[ZERO]] {{.+}} -> tensor<2x3x1xi1>
# CHECK:         %[[ZEROED:.+]] = fxla.where %[[Z]], %{{.+}}, %[[LAYER]] : tensor<2x3x1xi1>, tensor<f32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32>
# CHECK-NEXT:    %[[OUT:.+]] = fxla.layer_norm %[[ZEROED]], {{.+}}
# CHECK-NEXT:    return %[[OUT]]
@case(nn.TransformerEncoder, t(2, 3, 8), None, torch.tensor([[False, False, True], [False, False, False]]),
      variant="nested padding")
def transformer_encoder_padding():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    return nn.TransformerEncoder(layer, 1, norm=nn.LayerNorm(8)).requires_grad_(False)


# nn.TransformerDecoder: the layers in turn, each attending over the same memory, then the final norm.
# CHECK-LABEL: case torch.nn.TransformerDecoder:
# CHECK:         func.func @main(%[[TGT:.+]]: tensor<4x2x8xf32>, %[[MEM:.+]]: tensor<5x2x8xf32>, {{.+}}%[[W1:arg[0-9]+]]: tensor<24x8xf32> {fxla.param = "mod.layers.1.multihead_attn.in_proj_weight"}{{.+}}, %[[NW:.+]]: tensor<8xf32> {fxla.param = "mod.norm.weight"}, %[[NB:.+]]: tensor<8xf32> {fxla.param = "mod.norm.bias"})
# CHECK:         %[[WK:.+]] = fxla.slice %[[W1]] {start = [8, 0], limit = [16, 8]
# CHECK:         fxla.linear %[[MEM]], %[[WK]], {{.+}} -> tensor<5x2x8xf32>
# CHECK:         fxla.layer_norm
# CHECK:         %[[L1:.+]] = fxla.layer_norm {{.+}} -> tensor<4x2x8xf32>
# CHECK-NEXT:    %[[OUT:.+]] = fxla.layer_norm %[[L1]], weight %[[NW]], bias %[[NB]]
# CHECK-NEXT:    return %[[OUT]] : tensor<4x2x8xf32>
@case(nn.TransformerDecoder, t(4, 2, 8), t(5, 2, 8))
def transformer_decoder():
    return nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, dim_feedforward=16), 2, norm=nn.LayerNorm(8))


# nn.Transformer: the encoder stack over src (ending in its norm), then the decoder stack over tgt with that as
# memory.
# CHECK-LABEL: case torch.nn.Transformer:
# CHECK:         func.func @main(%[[SRC:.+]]: tensor<5x2x8xf32>, %[[TGT:.+]]: tensor<4x2x8xf32>, {{.+}}%[[ENW:arg[0-9]+]]: tensor<8xf32> {fxla.param = "mod.encoder.norm.weight"}, %[[ENB:arg[0-9]+]]: tensor<8xf32> {fxla.param = "mod.encoder.norm.bias"}{{.+}}%[[DNW:arg[0-9]+]]: tensor<8xf32> {fxla.param = "mod.decoder.norm.weight"}, %[[DNB:arg[0-9]+]]: tensor<8xf32> {fxla.param = "mod.decoder.norm.bias"})
# CHECK:         %[[MEM:.+]] = fxla.layer_norm %{{.+}}, weight %[[ENW]], bias %[[ENB]] {{.+}} -> tensor<5x2x8xf32>
# CHECK:         fxla.linear %[[MEM]], {{.+}} -> tensor<5x2x8xf32>
# CHECK:         %[[OUT:.+]] = fxla.layer_norm %{{.+}}, weight %[[DNW]], bias %[[DNB]] {{.+}} -> tensor<4x2x8xf32>
# CHECK-NEXT:    return %[[OUT]] : tensor<4x2x8xf32>
@case(nn.Transformer, t(5, 2, 8), t(4, 2, 8))
def transformer():
    return nn.Transformer(8, 2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16)


# torch's fused encoder layer (what dynamo records for a TransformerEncoderLayer in eval mode): packed q/k/v
# projections, a plain softmax, post-norm; torch has no derivative for it (fxla.no_gradient).
_FUSED = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True).eval()


# CHECK-LABEL: case torch._VariableFunctionsClass._transformer_encoder_layer_fwd:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x5x8xf32>
# CHECK:         %[[QKV:.+]] = fxla.linear %[[X]], {{.+}} -> tensor<2x5x24xf32>
# CHECK:         fxla.softmax %{{.+}} {dim = -1} : tensor<2x2x5x5xf32> -> tensor<2x2x5x5xf32>
# CHECK:         %[[N1:.+]] = fxla.layer_norm
# CHECK:         %[[OUT:.+]] = fxla.layer_norm
# CHECK-NEXT:    %[[NG:.+]] = fxla.no_gradient %[[OUT]] {op = "aten::_transformer_encoder_layer_fwd"
# CHECK:         return %[[NG]] : tensor<2x5x8xf32>
@case(torch._transformer_encoder_layer_fwd, t(2, 5, 8))
def transformer_encoder_layer_fwd(x):
    m = _FUSED
    return torch._transformer_encoder_layer_fwd(
        x, 8, 2, m.self_attn.in_proj_weight, m.self_attn.in_proj_bias, m.self_attn.out_proj.weight,
        m.self_attn.out_proj.bias, False, False, 1e-5, m.norm1.weight, m.norm1.bias, m.norm2.weight, m.norm2.bias,
        m.linear1.weight, m.linear1.bias, m.linear2.weight, m.linear2.bias, None, None)


# F.multi_head_attention_forward (what dynamo records for nn.MultiheadAttention): the module's computation with
# its weights as operands; sequence first, weights averaged over heads.
_MHA = nn.MultiheadAttention(8, 2).eval()


# CHECK-LABEL: case torch.nn.functional.multi_head_attention_forward:
# CHECK:         func.func @main(%[[Q:.+]]: tensor<4x2x8xf32>, %[[K:.+]]: tensor<5x2x8xf32>, %[[V:.+]]: tensor<5x2x8xf32>
# CHECK:         fxla.linear %[[Q]], {{.+}} -> tensor<4x2x8xf32>
# CHECK:         %[[P:.+]] = fxla.softmax %{{.+}} {dim = -1} : tensor<2x2x4x5xf32> -> tensor<2x2x4x5xf32>
# CHECK:         %[[W:.+]] = fxla.mean %[[P]] {dims = [1], keepdim = false} : tensor<2x2x4x5xf32> -> tensor<2x4x5xf32>
# CHECK:         return %{{.+}}, %[[W]] : tensor<4x2x8xf32>, tensor<2x4x5xf32>
@case(F.multi_head_attention_forward, t(4, 2, 8), t(5, 2, 8), t(5, 2, 8))
def multi_head_attention_forward(q, k, v):
    m = _MHA
    return F.multi_head_attention_forward(q, k, v, 8, 2, m.in_proj_weight, m.in_proj_bias, None, None, False, 0.0,
                                          m.out_proj.weight, m.out_proj.bias, training=False)
