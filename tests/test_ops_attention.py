"""Family ``attention`` (lowering/rules/attention.py) against eager: nn.MultiheadAttention, the transformer layers
and stacks (padding masks, causal masks, norm_first), and the options that are errors.
The harness is tests/test_ops.py."""
from __future__ import annotations

from functools import partial

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla
from test_ops import add_case, params_of, run_case, t

CASES = []
case = partial(add_case, CASES)


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
# a query whose every key is masked: NaN in torch's weights (a plain softmax), 0 in its output without them
# (scaled_dot_product_attention's safe softmax); both as torch
_EVERY_KEY = torch.tensor([[True] * 5, [False, False, True, True, False]])
case(nn.MultiheadAttention, "nn.MultiheadAttention_fully_masked_rows",
     _Attend(nn.MultiheadAttention(8, 2, batch_first=True), key_padding_mask=_EVERY_KEY,
             need_weights=False).eval(), t(2, 4, 8), t(2, 5, 8), t(2, 5, 8))
case(nn.MultiheadAttention, "nn.MultiheadAttention_fully_masked_rows_weights",
     _Attend(nn.MultiheadAttention(8, 2, batch_first=True), key_padding_mask=_EVERY_KEY).eval(),
     t(2, 4, 8), t(2, 5, 8), t(2, 5, 8))


class _Functional(nn.Module):
    """F.multi_head_attention_forward with its module's weights (what dynamo records for nn.MultiheadAttention)."""

    def __init__(self, mha, **options):
        super().__init__()
        self.mha, self.options = mha, options

    def forward(self, q, k, v):
        m = self.mha
        out, weights = F.multi_head_attention_forward(
            q, k, v, m.embed_dim, m.num_heads, m.in_proj_weight, m.in_proj_bias, None, None, False, 0.0,
            m.out_proj.weight, m.out_proj.bias, training=False, **self.options)
        return (out, weights) if self.options.get("need_weights", True) else out      # weights is None


torch.manual_seed(0)
case(F.multi_head_attention_forward, "F.multi_head_attention_forward",
     _Functional(nn.MultiheadAttention(8, 2), attn_mask=_CAUSAL, average_attn_weights=False).eval(),
     t(4, 2, 8), t(5, 2, 8), t(5, 2, 8))
case(F.multi_head_attention_forward, "F.multi_head_attention_forward_padding_no_weights",
     _Functional(nn.MultiheadAttention(8, 2), key_padding_mask=_PADDING, need_weights=False).eval(),
     t(4, 2, 8), t(5, 2, 8), t(5, 2, 8))


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
class _Fused(nn.Module):
    """Calls torch's fused encoder layer (what dynamo records for a TransformerEncoderLayer in eval mode) with
    its layer's weights and a fixed mask."""

    def __init__(self, layer, mask=None, mask_type=None):
        super().__init__()
        self.layer, self.mask, self.mask_type = layer, mask, mask_type

    def forward(self, x):
        m = self.layer
        return torch._transformer_encoder_layer_fwd(
            x, m.self_attn.embed_dim, m.self_attn.num_heads, m.self_attn.in_proj_weight, m.self_attn.in_proj_bias,
            m.self_attn.out_proj.weight, m.self_attn.out_proj.bias, m.activation_relu_or_gelu == 2, m.norm_first,
            m.norm1.eps, m.norm1.weight, m.norm1.bias, m.norm2.weight, m.norm2.bias, m.linear1.weight,
            m.linear1.bias, m.linear2.weight, m.linear2.bias, self.mask, self.mask_type)


torch.manual_seed(0)
case(torch._transformer_encoder_layer_fwd, "transformer_encoder_layer_fwd",
     _Fused(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)).eval(), t(2, 5, 8))
case(torch._transformer_encoder_layer_fwd, "transformer_encoder_layer_fwd_padding_gelu_norm_first",
     _Fused(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, activation="gelu", norm_first=True),
            torch.tensor([[False, False, True, True, False], [False] * 5]), 1).eval(), t(2, 5, 8))
case(torch._transformer_encoder_layer_fwd, "transformer_encoder_layer_fwd_causal",
     _Fused(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True),
            nn.Transformer.generate_square_subsequent_mask(5), 0).eval(), t(2, 5, 8))
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


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)


def test_multihead_attention_options_not_lowered_are_errors():
    model = _Attend(nn.MultiheadAttention(8, 2, add_bias_kv=True)).eval()
    with pytest.raises(fxla.LoweringError, match="add_bias_kv or add_zero_attn is not supported"):
        fxla.compile(model)(torch.randn(4, 2, 8), torch.randn(5, 2, 8), torch.randn(5, 2, 8))


def test_transformer_options_not_lowered_are_errors():
    encoder = _encoder(mask_check=False)
    with torch.no_grad(), pytest.raises(fxla.LoweringError, match=r"mask_check=False\) with a src_key_padding"):
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


def test_encoder_layer_with_a_fully_padded_sequence_is_eager_with_grad_enabled():
    """A sequence whose every position is padding: eager's TransformerEncoderLayer gives NaN under no_grad (its
    fused fast path, torch._transformer_encoder_layer_fwd) and finite values with grad enabled (attention through
    scaled_dot_product_attention, whose safe softmax gives 0).  fxla computes the latter, in both modes."""
    torch.manual_seed(0)
    layer = _Layer(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True),
                   src_key_padding_mask=torch.tensor([[True] * 4, [False, True, False, True]])).eval()
    x = torch.randn(2, 4, 8)
    want = layer(x).detach()
    assert not want.isnan().any()
    with torch.no_grad():
        assert layer(x)[0].isnan().all()                     # (eager's fast path)
        got = fxla.compile(layer)(x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_dynamo_records_the_fused_encoder_layer_in_eval_mode():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).eval()
    x, padding = torch.randn(2, 5, 8), torch.tensor([[False, False, True, True, False], [False] * 5])
    torch._dynamo.reset()
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(layer, backend="fxla")(x, src_key_padding_mask=padding),
                                   layer(x, src_key_padding_mask=padding), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("make", [lambda: nn.TransformerDecoderLayer(8, 2, 16), lambda: nn.Transformer(8, 2, 1, 1, 16)],
                         ids=["decoder_layer", "transformer"])
def test_dynamo_records_functional_multi_head_attention(make):
    torch.manual_seed(0)
    model = make().eval()
    x, memory = torch.randn(4, 2, 8), torch.randn(5, 2, 8)
    torch._dynamo.reset()
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model, backend="fxla")(memory, x) if isinstance(model, nn.Transformer)
                                   else torch.compile(model, backend="fxla")(x, memory),
                                   model(memory, x) if isinstance(model, nn.Transformer) else model(x, memory),
                                   rtol=1e-5, atol=1e-5)


def test_encoder_padding_in_each_grad_mode_as_eager():
    """torch's TransformerEncoder zeroes padded positions (its nested-tensor path) only where grad mode is off or
    no parameter requires grad: each grad mode's call matches eager's, also alternating."""
    torch.manual_seed(0)
    model, x = _Layer(_encoder(), src_key_padding_mask=_LEFT).eval(), torch.randn(3, 5, 8)
    fast = fxla.compile(model)
    for grad in (True, False, True, False):
        with torch.set_grad_enabled(grad):
            got, want = fast(x), model(x)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        assert got.requires_grad == want.requires_grad
        assert (want[1, 3:].abs().sum() > 0) == grad
    model.requires_grad_(False)
    fresh = fxla.compile(model)
    torch.testing.assert_close(fresh(x), model(x), rtol=1e-5, atol=1e-5)     # (nothing requires grad: zeros)
