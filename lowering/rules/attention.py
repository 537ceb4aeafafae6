"""``nn.MultiheadAttention`` (eval mode) as fxla ops, following ``F.multi_head_attention_forward``, and the
``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer`` built on it.

Queries, keys and values are projected (packed ``in_proj_weight`` or separate ``q/k/v_proj_weight``), split into
heads, scaled by ``1/sqrt(head_dim)``, masked (``attn_mask``: bool = not allowed, or additive float, 2-D or
``[N * heads, L, S]``; ``key_padding_mask``: bool = ignore, or additive float) and combined by softmax; the
heads are merged and ``out_proj`` applied.  Batch-first, unbatched inputs and the returned attention weights
(averaged over heads or per head, or ``None`` with ``need_weights=False``) are as in torch.  Not lowered:
``add_bias_kv``, ``add_zero_attn`` and dropout in training mode.

The transformer layers are their torch formulas: self-attention (and, in the decoder, attention over ``memory``)
and the ``linear2(activation(linear1(x)))`` feed-forward block, each as a residual around LayerNorm
(``norm_first``) or followed by it; activations 'relu' and 'gelu'.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from fxla.dialects.fxla import Sig, ops, type_of

from ..registry import register
from .indexing import reshape, slice_dim
from .nn import layer_norm_at, linear_at


def _heads(ctx, x, batch: int, heads: int):
    """[L, N, E] -> [N, heads, L, head_dim]."""
    length, _, embed = ctx.sig(x).shape
    return ctx.emit(ops.permute, reshape(ctx, x, (length, batch, heads, embed // heads)), dims=(1, 2, 0, 3))


def _mask(ctx, scores, mask, shape):
    """Apply a bool (True = not allowed) or additive float mask, reshaped to broadcast against ``scores``."""
    mask = reshape(ctx, mask, shape)
    if ctx.sig(mask).elem == "i1":
        return ctx.emit(ops.where, mask, ctx.tensor(float("-inf"), like=scores), scores)
    if ctx.sig(mask).elem != ctx.sig(scores).elem:
        mask = ctx.emit(ops.convert, mask, result_type=type_of(Sig(ctx.sig(mask).shape, ctx.sig(scores).elem)))
    return ctx.emit(ops.add, scores, mask)


@register(torch.nn.MultiheadAttention)
def _multihead_attention(ctx, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                         average_attn_weights=True, is_causal=False, *, mod):
    return attend(ctx, ctx.node.target, mod, query, key, value, key_padding_mask=key_padding_mask,
                  need_weights=need_weights, attn_mask=attn_mask, average_attn_weights=average_attn_weights)


def attend(ctx, target: str, mod, query, key, value, *, key_padding_mask=None, need_weights=True, attn_mask=None,
           average_attn_weights=True):
    """The MultiheadAttention ``mod`` whose parameters are at ``target`` (a submodule path): (output, weights)."""
    if mod.bias_k is not None or mod.add_zero_attn:
        raise ctx.error("nn.MultiheadAttention with add_bias_kv or add_zero_attn is not supported",
                        "fxla lowers the plain projections", "build the module without those options")
    if mod.training and mod.dropout:
        raise ctx.error("nn.MultiheadAttention dropout in training mode is not supported",
                        "random masks are not lowered", "call model.eval()")
    heads, embed = mod.num_heads, mod.embed_dim
    unbatched = ctx.sig(query).rank == 2
    q, k, v = query, key, value
    if unbatched:                                   # [L, E]: a batch of one, sequence first
        q, k, v = (reshape(ctx, t, (ctx.sig(t).shape[0], 1, ctx.sig(t).shape[1])) for t in (q, k, v))
    elif mod.batch_first:                           # [N, L, E] -> [L, N, E]
        q, k, v = (ctx.emit(ops.permute, t, dims=(1, 0, 2)) for t in (q, k, v))
    length, batch, _ = ctx.sig(q).shape
    source = ctx.sig(k).shape[0]
    bias = ctx.param(f"{target}.in_proj_bias") if mod.in_proj_bias is not None else None
    thirds = [(i * embed, (i + 1) * embed) for i in range(3)]            # q, k, v rows of the packed tensors
    if mod._qkv_same_embed_dim:
        packed = ctx.param(f"{target}.in_proj_weight")
        weights = [slice_dim(ctx, packed, 0, lo, hi) for lo, hi in thirds]
    else:
        weights = [ctx.param(f"{target}.{name}_proj_weight") for name in ("q", "k", "v")]
    biases = [slice_dim(ctx, bias, 0, lo, hi) if bias is not None else None for lo, hi in thirds]
    qh, kh, vh = (_heads(ctx, ctx.emit(ops.linear, x, w, b), batch, heads)
                  for x, w, b in zip((q, k, v), weights, biases))
    scores = ctx.emit(ops.matmul, qh, ctx.emit(ops.permute, kh, dims=(0, 1, 3, 2)))      # [N, H, L, S]
    scores = ctx.emit(ops.mul, scores, ctx.tensor(1.0 / math.sqrt(embed // heads), like=scores))
    if attn_mask is not None:
        shape = (1, 1, length, source) if ctx.sig(attn_mask).rank == 2 else (batch, heads, length, source)
        scores = _mask(ctx, scores, attn_mask, shape)
    if key_padding_mask is not None:
        scores = _mask(ctx, scores, key_padding_mask, (batch, 1, 1, source))
    probs = ctx.emit(ops.softmax, scores, dim=-1)
    out = ctx.emit(ops.matmul, probs, vh)                                                # [N, H, L, D]
    out = reshape(ctx, ctx.emit(ops.permute, out, dims=(2, 0, 1, 3)), (length, batch, embed))
    out = ctx.emit(ops.linear, out, ctx.param(f"{target}.out_proj.weight"),
                   ctx.param(f"{target}.out_proj.bias") if mod.out_proj.bias is not None else None)
    if unbatched:
        out = reshape(ctx, out, (length, embed))
    elif mod.batch_first:
        out = ctx.emit(ops.permute, out, dims=(1, 0, 2))
    if not need_weights:
        return out, None
    if average_attn_weights:
        probs = ctx.emit(ops.mean, probs, dims=(1,), keepdim=False)                       # [N, L, S]
    if unbatched:
        probs = reshape(ctx, probs, ctx.sig(probs).shape[1:])
    return out, probs


# -- nn.TransformerEncoderLayer / nn.TransformerDecoderLayer (eval mode) ---------------------------------------
#: the activations TransformerEncoderLayer/DecoderLayer accept by name or as the function
_ACTIVATIONS = {F.relu: (ops.relu, {}), F.gelu: (ops.gelu, {"approximate": "none"})}


def _feed_forward(ctx, target: str, mod, x):
    activation = _ACTIVATIONS.get(mod.activation)
    if activation is None:
        raise ctx.error(f"{type(mod).__name__} with activation {mod.activation!r} is not supported",
                        "fxla lowers the built-in 'relu' and 'gelu' activations of transformer layers",
                        "use activation='relu' or 'gelu', or write the layer out of modules fxla lowers")
    opdef, attrs = activation
    hidden = ctx.emit(opdef, linear_at(ctx, f"{target}.linear1", mod.linear1, x), **attrs)
    return linear_at(ctx, f"{target}.linear2", mod.linear2, hidden)


def _residual(ctx, target: str, mod, x, norm: str, block):
    """``x + block(norm(x))`` (norm_first) or ``norm(x + block(x))``."""
    ln = getattr(mod, norm)
    if mod.norm_first:
        return ctx.emit(ops.add, x, block(layer_norm_at(ctx, f"{target}.{norm}", ln, x)))
    return layer_norm_at(ctx, f"{target}.{norm}", ln, ctx.emit(ops.add, x, block(x)))


def _check_eval(ctx, mod):
    if mod.training and mod.dropout.p:
        raise ctx.error(f"{type(mod).__name__} dropout in training mode is not supported",
                        "random masks are not lowered", "call model.eval()")


@register(torch.nn.TransformerEncoderLayer)
def _encoder_layer(ctx, src, src_mask=None, src_key_padding_mask=None, is_causal=False, *, mod):
    _check_eval(ctx, mod)
    target = ctx.node.target

    def self_attention(x):
        return attend(ctx, f"{target}.self_attn", mod.self_attn, x, x, x, attn_mask=src_mask,
                      key_padding_mask=src_key_padding_mask, need_weights=False)[0]
    x = _residual(ctx, target, mod, src, "norm1", self_attention)
    return _residual(ctx, target, mod, x, "norm2", lambda h: _feed_forward(ctx, target, mod, h))


@register(torch.nn.TransformerDecoderLayer)
def _decoder_layer(ctx, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                   memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False, *, mod):
    _check_eval(ctx, mod)
    target = ctx.node.target

    def self_attention(x):
        return attend(ctx, f"{target}.self_attn", mod.self_attn, x, x, x, attn_mask=tgt_mask,
                      key_padding_mask=tgt_key_padding_mask, need_weights=False)[0]

    def cross_attention(x):
        return attend(ctx, f"{target}.multihead_attn", mod.multihead_attn, x, memory, memory, attn_mask=memory_mask,
                      key_padding_mask=memory_key_padding_mask, need_weights=False)[0]
    x = _residual(ctx, target, mod, tgt, "norm1", self_attention)
    x = _residual(ctx, target, mod, x, "norm2", cross_attention)
    return _residual(ctx, target, mod, x, "norm3", lambda h: _feed_forward(ctx, target, mod, h))
