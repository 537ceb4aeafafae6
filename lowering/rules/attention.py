"""``nn.MultiheadAttention`` as fxla ops, following ``F.multi_head_attention_forward``, and the
``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer`` built on it, and their stacks.

Queries, keys and values are projected (packed ``in_proj_weight`` or separate ``q/k/v_proj_weight``), split into
heads, scaled by ``1/sqrt(head_dim)``, masked (``attn_mask``: bool = not allowed, or additive float, 2-D or
``[N * heads, L, S]``; ``key_padding_mask``: bool = ignore, or additive float) and combined by softmax (without
``need_weights`` torch's safe softmax: 0, not NaN, for a query whose every key is masked); the
heads are merged and ``out_proj`` applied.  Batch-first, unbatched inputs and the returned attention weights
(averaged over heads or per head, or ``None`` with ``need_weights=False``) are as in torch; in training mode the
weights are dropped out (a random mask per call, fxla's generator: fxla.lowering.program).  Not lowered:
``add_bias_kv`` and ``add_zero_attn``.

The transformer layers are their torch formulas: self-attention (and, in the decoder, attention over ``memory``)
and the ``linear2(dropout(activation(linear1(x))))`` feed-forward block, each block's output dropped out in
training mode (``dropout1/2/3``), each as a residual around LayerNorm
(``norm_first``) or followed by it; activations 'relu' and 'gelu'.  The stacks (``nn.TransformerEncoder``,
``nn.TransformerDecoder``, ``nn.Transformer``) chain their layers and final LayerNorm; where torch's encoder
would run on a nested tensor (eval mode, a left-aligned key padding mask: checked in the program) its output is
zero at the padded positions, as torch's is.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from fxla.dialects.fxla import Sig, ops, type_of
from fxla.frontend import meta as M
from fxla.frontend.shape_prop import register_meta_module

from ..emit import safe_softmax
from ..registry import register


def _linear_at(ctx, target: str, mod, input):
    """The nn.Linear ``mod`` whose parameters are at ``target`` (a submodule of the node's module)."""
    bias = ctx.module_param("bias", mod, target)
    return ctx.lower(F.linear, input, ctx.module_param("weight", mod, target), bias)


def _layer_norm_at(ctx, target: str, mod, input):
    """The nn.LayerNorm ``mod`` whose parameters are at ``target``."""
    weight, bias = ctx.module_param("weight", mod, target), ctx.module_param("bias", mod, target)
    return ctx.lower(F.layer_norm, input, mod.normalized_shape, weight, bias, mod.eps)


def _heads(ctx, x, batch: int, heads: int):
    """[L, N, E] -> [N, heads, L, head_dim]."""
    length, _, embed = ctx.sig(x).shape
    return ctx.emit(ops.permute, ctx.reshape(x, (length, batch, heads, embed // heads)), dims=(1, 2, 0, 3))


def _mask(ctx, scores, mask, shape):
    """Apply a bool (True = not allowed) or additive float mask, reshaped to broadcast against ``scores``."""
    mask = ctx.reshape(mask, shape)
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
    in_bias = ctx.param(f"{target}.in_proj_bias") if mod.in_proj_bias is not None else None
    packed = ctx.param(f"{target}.in_proj_weight") if mod._qkv_same_embed_dim else None
    separate = None if packed is not None else [ctx.param(f"{target}.{n}_proj_weight") for n in ("q", "k", "v")]
    return _attention(ctx, query, key, value, heads=mod.num_heads, batch_first=mod.batch_first, packed=packed,
                      separate=separate, in_bias=in_bias,
                      out_weight=ctx.param(f"{target}.out_proj.weight"),
                      out_bias=ctx.param(f"{target}.out_proj.bias") if mod.out_proj.bias is not None else None,
                      dropout=float(mod.dropout) if mod.training else 0.0, key_padding_mask=key_padding_mask,
                      need_weights=need_weights, attn_mask=attn_mask, average_attn_weights=average_attn_weights)


@register(F.multi_head_attention_forward)
def _multi_head_attention_forward(ctx, query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                  in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight,
                                  out_proj_bias, training=True, key_padding_mask=None, need_weights=True,
                                  attn_mask=None, use_separate_proj_weight=False, q_proj_weight=None,
                                  k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None,
                                  average_attn_weights=True, is_causal=False):
    """torch's functional multi-head attention (sequence first; what dynamo records for nn.MultiheadAttention):
    the module's computation with its weights given.  ``is_causal`` is a hint about ``attn_mask``, which is what
    is applied (torch refuses the hint without a mask)."""
    if bias_k is not None or bias_v is not None or add_zero_attn or static_k is not None or static_v is not None:
        raise ctx.error("multi_head_attention_forward with bias_k/bias_v, add_zero_attn or static_k/static_v is "
                        "not supported", "fxla lowers the plain projections",
                        "build the module without add_bias_kv or add_zero_attn")
    separate = [q_proj_weight, k_proj_weight, v_proj_weight] if use_separate_proj_weight else None
    return _attention(ctx, query, key, value, heads=num_heads, batch_first=False,
                      packed=None if use_separate_proj_weight else in_proj_weight, separate=separate,
                      in_bias=in_proj_bias, out_weight=out_proj_weight, out_bias=out_proj_bias,
                      dropout=float(dropout_p) if training else 0.0, key_padding_mask=key_padding_mask,
                      need_weights=need_weights, attn_mask=attn_mask, average_attn_weights=average_attn_weights)


def _attention(ctx, query, key, value, *, heads, batch_first, packed, separate, in_bias, out_weight, out_bias,
               dropout, key_padding_mask, need_weights, attn_mask, average_attn_weights):
    """Multi-head attention with the projections given (``packed`` q/k/v rows, or ``separate`` weights):
    (output, weights or None)."""
    embed = ctx.sig(query).shape[-1]
    unbatched = ctx.sig(query).rank == 2
    q, k, v = query, key, value
    if unbatched:                                   # [L, E]: a batch of one, sequence first
        q, k, v = (ctx.reshape(t, (ctx.sig(t).shape[0], 1, ctx.sig(t).shape[1])) for t in (q, k, v))
    elif batch_first:                               # [N, L, E] -> [L, N, E]
        q, k, v = (ctx.emit(ops.permute, t, dims=(1, 0, 2)) for t in (q, k, v))
    length, batch, _ = ctx.sig(q).shape
    source = ctx.sig(k).shape[0]
    thirds = [(i * embed, (i + 1) * embed) for i in range(3)]            # q, k, v rows of the packed tensors
    weights = [ctx.slice_dim(packed, 0, lo, hi) for lo, hi in thirds] if packed is not None else separate
    biases = [ctx.slice_dim(in_bias, 0, lo, hi) if in_bias is not None else None for lo, hi in thirds]
    qh, kh, vh = (_heads(ctx, ctx.emit(ops.linear, x, w, b), batch, heads)
                  for x, w, b in zip((q, k, v), weights, biases))
    scores = ctx.emit(ops.matmul, qh, ctx.emit(ops.permute, kh, dims=(0, 1, 3, 2)))      # [N, H, L, S]
    scores = ctx.emit(ops.mul, scores, ctx.tensor(1.0 / math.sqrt(embed // heads), like=scores))
    if attn_mask is not None:
        shape = (1, 1, length, source) if ctx.sig(attn_mask).rank == 2 else (batch, heads, length, source)
        scores = _mask(ctx, scores, attn_mask, shape)
    if key_padding_mask is not None:
        scores = _mask(ctx, scores, key_padding_mask, (batch, 1, 1, source))
    # torch returns the weights from a plain softmax (NaN where a query's every key is masked); without them it
    # calls scaled_dot_product_attention, whose safe softmax gives 0 there
    masked = attn_mask is not None or key_padding_mask is not None
    probs = safe_softmax(ctx, scores) if masked and not need_weights else ctx.emit(ops.softmax, scores, dim=-1)
    if dropout:                             # the weights dropped out (and returned so), as torch does
        probs = ctx.lower(F.dropout, probs, dropout, True)
    out = ctx.emit(ops.matmul, probs, vh)                                                # [N, H, L, D]
    out = ctx.reshape(ctx.emit(ops.permute, out, dims=(2, 0, 1, 3)), (length, batch, embed))
    out = ctx.emit(ops.linear, out, out_weight, out_bias)
    if unbatched:
        out = ctx.reshape(out, (length, embed))
    elif batch_first:
        out = ctx.emit(ops.permute, out, dims=(1, 0, 2))
    if not need_weights:
        return out, None
    if average_attn_weights:
        probs = ctx.emit(ops.mean, probs, dims=(1,), keepdim=False)                       # [N, L, S]
    if unbatched:
        probs = ctx.reshape(probs, ctx.sig(probs).shape[1:])
    return out, probs


# -- nn.TransformerEncoderLayer / nn.TransformerDecoderLayer ----------------------------------------------------
#: the activations TransformerEncoderLayer/DecoderLayer accept by name or as the function
_ACTIVATIONS = {F.relu: (ops.relu, {}), F.gelu: (ops.gelu, {"approximate": "none"})}


def _feed_forward(ctx, target: str, mod, x):
    activation = _ACTIVATIONS.get(mod.activation)
    if activation is None:
        raise ctx.error(f"{type(mod).__name__} with activation {mod.activation!r} is not supported",
                        "fxla lowers the built-in 'relu' and 'gelu' activations of transformer layers",
                        "use activation='relu' or 'gelu', or write the layer out of modules fxla lowers")
    opdef, attrs = activation
    hidden = ctx.emit(opdef, _linear_at(ctx, f"{target}.linear1", mod.linear1, x), **attrs)
    return _linear_at(ctx, f"{target}.linear2", mod.linear2, _dropped(ctx, mod.dropout, hidden))


def _dropped(ctx, drop, x):
    """The layer's nn.Dropout ``drop`` applied to ``x``: in training mode a random mask per call (F.dropout)."""
    return ctx.lower(F.dropout, x, float(drop.p), True) if drop.training and drop.p else x


def _residual(ctx, target: str, mod, x, norm: str, block):
    """``x + block(norm(x))`` (norm_first) or ``norm(x + block(x))``."""
    ln = getattr(mod, norm)
    if mod.norm_first:
        return ctx.emit(ops.add, x, block(_layer_norm_at(ctx, f"{target}.{norm}", ln, x)))
    return _layer_norm_at(ctx, f"{target}.{norm}", ln, ctx.emit(ops.add, x, block(x)))


def encoder_layer_at(ctx, target: str, mod, src, src_mask=None, src_key_padding_mask=None):
    """The TransformerEncoderLayer ``mod`` whose parameters are at ``target``.  (The layers' and stacks'
    ``is_causal`` arguments are only hints that the mask is causal: the mask is what is applied, and without one
    torch refuses the hint while fxla computes shapes.)"""
    def self_attention(x):
        return _dropped(ctx, mod.dropout1, attend(ctx, f"{target}.self_attn", mod.self_attn, x, x, x,
                                                  attn_mask=src_mask, key_padding_mask=src_key_padding_mask,
                                                  need_weights=False)[0])
    x = _residual(ctx, target, mod, src, "norm1", self_attention)
    return _residual(ctx, target, mod, x, "norm2",
                     lambda h: _dropped(ctx, mod.dropout2, _feed_forward(ctx, target, mod, h)))


def decoder_layer_at(ctx, target: str, mod, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                     memory_key_padding_mask=None):
    """The TransformerDecoderLayer ``mod`` whose parameters are at ``target``."""
    def self_attention(x):
        return _dropped(ctx, mod.dropout1, attend(ctx, f"{target}.self_attn", mod.self_attn, x, x, x,
                                                  attn_mask=tgt_mask, key_padding_mask=tgt_key_padding_mask,
                                                  need_weights=False)[0])

    def cross_attention(x):
        return _dropped(ctx, mod.dropout2, attend(ctx, f"{target}.multihead_attn", mod.multihead_attn, x, memory,
                                                  memory, attn_mask=memory_mask,
                                                  key_padding_mask=memory_key_padding_mask, need_weights=False)[0])
    x = _residual(ctx, target, mod, tgt, "norm1", self_attention)
    x = _residual(ctx, target, mod, x, "norm2", cross_attention)
    return _residual(ctx, target, mod, x, "norm3",
                     lambda h: _dropped(ctx, mod.dropout3, _feed_forward(ctx, target, mod, h)))


@register(torch._transformer_encoder_layer_fwd)
def _fused_encoder_layer(ctx, src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu,
                         norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1,
                         ffn_bias_1, ffn_weight_2, ffn_bias_2, mask=None, mask_type=None):
    """torch's fused TransformerEncoderLayer (its eval-mode fast path, which dynamo records): batch-first
    ``[N, L, E]``, packed q/k/v projections, ``mask`` as ``merge_masks`` leaves it (``mask_type`` 0: ``[L, L]``
    attention mask, 1: ``[N, L]`` key padding mask, 2: merged ``[N, heads, L, L]``; bool True = not allowed, or
    additive float).  As the fused kernel, a plain softmax: a query whose every key is masked gives NaN."""
    n, length, embed = ctx.sig(src).shape
    head_dim = embed_dim // num_heads

    def norm(x, weight, bias):
        return ctx.lower(F.layer_norm, x, (embed_dim,), weight, bias, eps)

    def heads(t):                                   # [N, L, E] -> [N, heads, L, head_dim]
        return ctx.emit(ops.permute, ctx.reshape(t, (n, length, num_heads, head_dim)), dims=(0, 2, 1, 3))

    def attention(x):
        qkv = ctx.lower(F.linear, x, qkv_weight, qkv_bias)
        q, k, v = (heads(ctx.slice_dim(qkv, 2, i * embed, (i + 1) * embed)) for i in range(3))
        scores = ctx.emit(ops.matmul, q, ctx.emit(ops.permute, k, dims=(0, 1, 3, 2)))
        scores = ctx.emit(ops.mul, scores, ctx.tensor(1.0 / math.sqrt(head_dim), like=scores))
        if mask is not None:
            rank = ctx.sig(mask).rank
            shape = ((1, 1, length, length) if mask_type == 0 else (n, 1, 1, length)) if rank == 2 else \
                (n, num_heads, length, length)
            scores = _mask(ctx, scores, mask, shape)
        out = ctx.emit(ops.matmul, ctx.emit(ops.softmax, scores, dim=-1), v)
        out = ctx.reshape(ctx.emit(ops.permute, out, dims=(0, 2, 1, 3)), (n, length, embed))
        return ctx.lower(F.linear, out, proj_weight, proj_bias)

    def feed_forward(x):
        hidden = ctx.lower(F.linear, x, ffn_weight_1, ffn_bias_1)
        hidden = ctx.emit(ops.gelu, hidden, approximate="none") if use_gelu else ctx.emit(ops.relu, hidden)
        return ctx.lower(F.linear, hidden, ffn_weight_2, ffn_bias_2)
    if norm_first:
        x = ctx.emit(ops.add, src, attention(norm(src, norm_weight_1, norm_bias_1)))
        out = ctx.emit(ops.add, x, feed_forward(norm(x, norm_weight_2, norm_bias_2)))
    else:
        x = norm(ctx.emit(ops.add, src, attention(src)), norm_weight_1, norm_bias_1)
        out = norm(ctx.emit(ops.add, x, feed_forward(x)), norm_weight_2, norm_bias_2)
    return ctx.emit(ops.no_gradient, out, op="aten::_transformer_encoder_layer_fwd",
                    reason="torch has no derivative for its fused encoder layer (an inference-only fast path)")


@register(torch.nn.TransformerEncoderLayer)
def _encoder_layer(ctx, src, src_mask=None, src_key_padding_mask=None, is_causal=False, *, mod):
    return encoder_layer_at(ctx, ctx.node.target, mod, src, src_mask, src_key_padding_mask)


@register(torch.nn.TransformerDecoderLayer)
def _decoder_layer(ctx, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                   memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False, *, mod):
    return decoder_layer_at(ctx, ctx.node.target, mod, tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                            memory_key_padding_mask)


# -- the stacks: nn.TransformerEncoder / nn.TransformerDecoder / nn.Transformer -------------------------------
def _final_norm(ctx, target: str, mod, x):
    if mod.norm is None:
        return x
    if not isinstance(mod.norm, torch.nn.LayerNorm):
        raise ctx.error(f"{type(mod).__name__} with a final norm of type {type(mod.norm).__name__} is not supported",
                        "fxla lowers the stack's norm when it is an nn.LayerNorm",
                        "use norm=nn.LayerNorm(d_model), or apply the norm after the stack")
    return _layer_norm_at(ctx, f"{target}.norm", mod.norm, x)


def _nested_fast_path(ctx, mod, src, mask, src_key_padding_mask) -> bool:
    """Whether torch's TransformerEncoder would run this call on a nested tensor (``use_nested_tensor`` and its
    per-call conditions, decided when fxla lowers: the MHA fast path enabled, eval mode, batched input, a key
    padding mask and no ``mask``, no autocast) — provided the padding mask is left-aligned, which only the data
    tells.  Then the padded positions of the stack's output are zero.  torch skips the nested path when grad mode
    is on and a parameter requires grad: the trace of a call under ``no_grad`` is its own (the tracer counts such
    an encoder call as a read of the grad mode: fxla.frontend.grad_enables), whose node is marked grad-disabled.
    (Parameters' ``requires_grad`` is read here, when the signature compiles; an input requiring grad is taken as
    not.)"""
    first = mod.layers[0]
    if not (torch.backends.mha.get_fastpath_enabled() and getattr(mod, "use_nested_tensor", False)
            and not first.training and ctx.sig(src).rank == 3 and src_key_padding_mask is not None
            and mask is None and not torch.is_autocast_enabled()):
        return False
    grad_on = ctx.node is not None and not ctx.node.meta.get(M.GRAD_DISABLED)
    if grad_on and any(p.requires_grad for p in mod.parameters()):
        return False
    if not getattr(mod, "mask_check", True):
        raise ctx.error("nn.TransformerEncoder(mask_check=False) with a src_key_padding_mask is not supported",
                        "torch then assumes every padding mask is left-aligned, and fxla checks it in the program",
                        "build the encoder with mask_check=True (the default) or enable_nested_tensor=False")
    return True


def _zero_padded(ctx, mod, out, src_key_padding_mask):
    """``out`` with its padded positions zeroed where every row of the mask is left-aligned (valid positions
    first), as ``torch._nested_tensor_from_mask(...).to_padded_tensor(0.0)`` leaves them."""
    padded = src_key_padding_mask                                                   # [N, S]: True / nonzero
    if ctx.sig(padded).elem != "i1":
        padded = ctx.emit(ops.ne, padded, ctx.tensor(0.0, like=padded))
    length = ctx.sig(padded).shape[1]
    before, after = ctx.slice_dim(padded, 1, 0, length - 1), ctx.slice_dim(padded, 1, 1, length)
    # left-aligned: a padded position is followed by padded ones only (before[j] implies after[j])
    follows = ctx.emit(ops.logical_or, ctx.emit(ops.logical_not, before), after)
    zero = ctx.emit(ops.logical_and, padded, ctx.emit(ops.all, follows, dims=(), keepdim=False))
    if not mod.layers[0].self_attn.batch_first:
        zero = ctx.emit(ops.permute, zero, dims=(1, 0))                             # [S, N]
    shape = ctx.sig(zero).shape
    return ctx.emit(ops.where, ctx.reshape(zero, (*shape, 1)), ctx.tensor(0.0, like=out), out)


def encoder_at(ctx, target: str, mod, src, mask=None, src_key_padding_mask=None):
    """The TransformerEncoder ``mod`` whose parameters are at ``target``.  Its layers always see the key padding
    mask: on torch's nested-tensor path each sequence attends over its own valid positions only, which is the
    masked attention for those positions; what differs is the padded positions, zero there (see
    :func:`_zero_padded`)."""
    nested = _nested_fast_path(ctx, mod, src, mask, src_key_padding_mask)
    out = src
    for i, layer in enumerate(mod.layers):
        out = encoder_layer_at(ctx, f"{target}.layers.{i}", layer, out, mask, src_key_padding_mask)
    if nested:
        out = _zero_padded(ctx, mod, out, src_key_padding_mask)
    return _final_norm(ctx, target, mod, out)


def decoder_at(ctx, target: str, mod, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
               memory_key_padding_mask=None):
    """The TransformerDecoder ``mod`` whose parameters are at ``target``."""
    out = tgt
    for i, layer in enumerate(mod.layers):
        out = decoder_layer_at(ctx, f"{target}.layers.{i}", layer, out, memory, tgt_mask, memory_mask,
                               tgt_key_padding_mask, memory_key_padding_mask)
    return _final_norm(ctx, target, mod, out)


@register(torch.nn.TransformerEncoder)
def _encoder(ctx, src, mask=None, src_key_padding_mask=None, is_causal=None, *, mod):
    return encoder_at(ctx, ctx.node.target, mod, src, mask, src_key_padding_mask)


@register(torch.nn.TransformerDecoder)
def _decoder(ctx, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
             memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False, *, mod):
    return decoder_at(ctx, ctx.node.target, mod, tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                      memory_key_padding_mask)


@register(torch.nn.Transformer)
def _transformer(ctx, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                 tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                 memory_is_causal=False, *, mod):
    target = ctx.node.target
    batch_dim = 0 if mod.batch_first else 1
    src_shape, tgt_shape = ctx.sig(src).shape, ctx.sig(tgt).shape
    if len(src_shape) == 3 and src_shape[batch_dim] != tgt_shape[batch_dim]:
        raise ctx.error(f"nn.Transformer got src {list(src_shape)} and tgt {list(tgt_shape)}: their batch sizes "
                        f"differ", "torch requires the same batch size for src and tgt",
                        "pass src and tgt with the same batch size (batch_first={mod.batch_first})")
    if src_shape[-1] != mod.d_model or tgt_shape[-1] != mod.d_model:
        raise ctx.error(f"nn.Transformer(d_model={mod.d_model}) got src {list(src_shape)} and tgt {list(tgt_shape)}",
                        "the feature size of src and tgt must equal d_model", "pass inputs of that feature size")
    memory = encoder_at(ctx, f"{target}.encoder", mod.encoder, src, src_mask, src_key_padding_mask)
    return decoder_at(ctx, f"{target}.decoder", mod.decoder, tgt, memory, tgt_mask, memory_mask,
                      tgt_key_padding_mask, memory_key_padding_mask)


# the transformer stacks look at data in eager forward (a mask compared with a causal one via .item()): shape
# propagation takes their result's meta from the argument it has the shape of
for _module, _argument in ((torch.nn.TransformerEncoder, "src"), (torch.nn.TransformerDecoder, "tgt"),
                           (torch.nn.Transformer, "tgt")):
    register_meta_module(_module, like=_argument)
