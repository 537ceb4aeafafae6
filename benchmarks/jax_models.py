"""The benchmark models written by hand in JAX (the "hand-written JAX" baseline), reading the torch weights."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def params_of(model) -> dict:
    """The model's parameters as jax arrays, by qualified name."""
    return {name: jnp.asarray(p.detach().numpy()) for name, p in model.named_parameters()}


def _linear(p, name, x):
    return x @ p[f"{name}.weight"].T + p[f"{name}.bias"]


def _layer_norm(p, name, x, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * p[f"{name}.weight"] + p[f"{name}.bias"]


def mlp(p, x):
    h = jax.nn.gelu(_linear(p, "fc1", x), approximate=False)
    h = jax.nn.relu(_linear(p, "fc2", h)) + h
    return jax.nn.log_softmax(_linear(p, "fc3", h), axis=-1)


def _conv(p, name, x, stride, pad):
    y = jax.lax.conv_general_dilated(x, p[f"{name}.weight"], (stride, stride), [(pad, pad), (pad, pad)],
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return y + p[f"{name}.bias"][None, :, None, None]


def small_cnn(p, x):
    x = jax.nn.relu(_conv(p, "conv1", x, 1, 1))
    x = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    x = jax.nn.relu(_conv(p, "conv2", x, 2, 1))
    return _linear(p, "fc", x.reshape(x.shape[0], -1))


def encoder_block(p, x, heads=4):
    b, s, d = x.shape
    n = _layer_norm(p, "norm1", x)

    def split(t):
        return t.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)

    q, k, v = split(_linear(p, "q", n)), split(_linear(p, "k", n)), split(_linear(p, "v", n))
    att = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) * (1.0 / np.sqrt(d // heads)), axis=-1)
    y = (att @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
    x = x + _linear(p, "proj", y)
    h = jax.nn.gelu(_linear(p, "ff1", _layer_norm(p, "norm2", x)), approximate=False)
    return x + _linear(p, "ff2", h)


# -- real-size models: params converted once from the torch state_dict into the layouts a JAX user keeps ---------
# (dense kernels [in, out], conv kernels HWIO with NHWC activations), then one jax.jit of the whole forward.

def _np(t):
    return t.detach().cpu().numpy()


def _dense(sd, name, transpose=True):
    """(kernel [in, out], bias) of a torch Linear (weight [out, in]) or, ``transpose=False``, of an HF Conv1D."""
    w = _np(sd[f"{name}.weight"])
    return {"w": jnp.asarray(w.T if transpose else w), "b": jnp.asarray(_np(sd[f"{name}.bias"]))}


def _ln_params(sd, name):
    return {"g": jnp.asarray(_np(sd[f"{name}.weight"])), "b": jnp.asarray(_np(sd[f"{name}.bias"]))}


def _apply_dense(p, x):
    return x @ p["w"] + p["b"]


def _ln(p, x, eps):
    mean = x.mean(-1, keepdims=True)
    var = jnp.square(x - mean).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * p["g"] + p["b"]


# ResNet-18 (NHWC) ----------------------------------------------------------------------------------------------

def _conv_kernel(sd, name):
    return jnp.asarray(_np(sd[f"{name}.weight"]).transpose(2, 3, 1, 0))        # OIHW -> HWIO


def _bn_params(sd, name):
    return {k: jnp.asarray(_np(sd[f"{name}.{k}"])) for k in ("weight", "bias", "running_mean", "running_var")}


def resnet18_params(model) -> dict:
    sd = model.state_dict()
    stages = []
    for i in range(1, 5):
        blocks = []
        for j in range(2):
            pre = f"layer{i}.{j}"
            block = {"conv1": _conv_kernel(sd, f"{pre}.conv1"), "bn1": _bn_params(sd, f"{pre}.bn1"),
                     "conv2": _conv_kernel(sd, f"{pre}.conv2"), "bn2": _bn_params(sd, f"{pre}.bn2")}
            if f"{pre}.downsample.0.weight" in sd:
                block["down"] = _conv_kernel(sd, f"{pre}.downsample.0")
                block["down_bn"] = _bn_params(sd, f"{pre}.downsample.1")
            blocks.append(block)
        stages.append(blocks)
    return {"conv1": _conv_kernel(sd, "conv1"), "bn1": _bn_params(sd, "bn1"), "stages": stages,
            "fc": _dense(sd, "fc")}


def resnet18_input(x):
    """NCHW torch tensor -> NHWC jax array (done once, outside the timing)."""
    return jnp.asarray(_np(x).transpose(0, 2, 3, 1))


def _conv_nhwc(x, w, stride, pad):
    return jax.lax.conv_general_dilated(x, w, (stride, stride), [(pad, pad), (pad, pad)],
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _bn(p, x, eps=1e-5):
    scale = p["weight"] * jax.lax.rsqrt(p["running_var"] + eps)
    return (x - p["running_mean"]) * scale + p["bias"]


def resnet18(p, x):
    x = jax.nn.relu(_bn(p["bn1"], _conv_nhwc(x, p["conv1"], 2, 3)))
    x = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1),
                              [(0, 0), (1, 1), (1, 1), (0, 0)])
    for i, stage in enumerate(p["stages"]):
        for j, b in enumerate(stage):
            stride = 2 if i > 0 and j == 0 else 1
            identity = _bn(b["down_bn"], _conv_nhwc(x, b["down"], stride, 0)) if "down" in b else x
            out = jax.nn.relu(_bn(b["bn1"], _conv_nhwc(x, b["conv1"], stride, 1)))
            out = _bn(b["bn2"], _conv_nhwc(out, b["conv2"], 1, 1))
            x = jax.nn.relu(out + identity)
    return _apply_dense(p["fc"], x.mean(axis=(1, 2)))


# Attention shared by GPT-2 and BERT ----------------------------------------------------------------------------

def _attention(q, k, v, heads, causal):
    b, s, d = q.shape
    q, k, v = (t.reshape(b, s, heads, d // heads) for t in (q, k, v))
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) * (1.0 / np.sqrt(d // heads))
    if causal:
        mask = jnp.tril(jnp.ones((s, s), dtype=bool))
        scores = jnp.where(mask, scores, jnp.finfo(scores.dtype).min)
    probs = jax.nn.softmax(scores, axis=-1)
    return jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, d)


def ids_input(ids):
    return jnp.asarray(_np(ids).astype(np.int32))


# GPT-2 (transformers' GPT2Model: HF Conv1D weights are already [in, out]) ---------------------------------------

def gpt2_params(model) -> dict:
    sd = model.model.state_dict()
    n_layer = model.model.config.n_layer
    blocks = [{"ln_1": _ln_params(sd, f"h.{i}.ln_1"), "c_attn": _dense(sd, f"h.{i}.attn.c_attn", False),
               "attn_proj": _dense(sd, f"h.{i}.attn.c_proj", False), "ln_2": _ln_params(sd, f"h.{i}.ln_2"),
               "c_fc": _dense(sd, f"h.{i}.mlp.c_fc", False), "mlp_proj": _dense(sd, f"h.{i}.mlp.c_proj", False)}
              for i in range(n_layer)]
    return {"wte": jnp.asarray(_np(sd["wte.weight"])), "wpe": jnp.asarray(_np(sd["wpe.weight"])),
            "blocks": blocks, "ln_f": _ln_params(sd, "ln_f")}


def gpt2(p, ids, heads=12, eps=1e-5):
    s = ids.shape[1]
    x = p["wte"][ids] + p["wpe"][:s]
    for blk in p["blocks"]:
        q, k, v = jnp.split(_apply_dense(blk["c_attn"], _ln(blk["ln_1"], x, eps)), 3, axis=-1)
        x = x + _apply_dense(blk["attn_proj"], _attention(q, k, v, heads, causal=True))
        h = jax.nn.gelu(_apply_dense(blk["c_fc"], _ln(blk["ln_2"], x, eps)), approximate=True)   # gelu_new
        x = x + _apply_dense(blk["mlp_proj"], h)
    return _ln(p["ln_f"], x, eps)


# BERT (transformers' BertModel without pooler, no attention mask, token type 0) --------------------------------

def bert_params(model) -> dict:
    sd = model.model.state_dict()
    layers = []
    for i in range(model.model.config.num_hidden_layers):
        pre = f"encoder.layer.{i}"
        layers.append({"q": _dense(sd, f"{pre}.attention.self.query"), "k": _dense(sd, f"{pre}.attention.self.key"),
                       "v": _dense(sd, f"{pre}.attention.self.value"),
                       "attn_out": _dense(sd, f"{pre}.attention.output.dense"),
                       "attn_ln": _ln_params(sd, f"{pre}.attention.output.LayerNorm"),
                       "inter": _dense(sd, f"{pre}.intermediate.dense"), "out": _dense(sd, f"{pre}.output.dense"),
                       "out_ln": _ln_params(sd, f"{pre}.output.LayerNorm")})
    return {"word": jnp.asarray(_np(sd["embeddings.word_embeddings.weight"])),
            "pos": jnp.asarray(_np(sd["embeddings.position_embeddings.weight"])),
            "type0": jnp.asarray(_np(sd["embeddings.token_type_embeddings.weight"])[0]),
            "emb_ln": _ln_params(sd, "embeddings.LayerNorm"), "layers": layers}


def bert(p, ids, heads=12, eps=1e-12):
    s = ids.shape[1]
    x = _ln(p["emb_ln"], p["word"][ids] + p["pos"][:s] + p["type0"], eps)
    for lp in p["layers"]:
        att = _attention(_apply_dense(lp["q"], x), _apply_dense(lp["k"], x), _apply_dense(lp["v"], x), heads,
                         causal=False)
        x = _ln(lp["attn_ln"], x + _apply_dense(lp["attn_out"], att), eps)
        h = jax.nn.gelu(_apply_dense(lp["inter"], x), approximate=False)
        x = _ln(lp["out_ln"], x + _apply_dense(lp["out"], h), eps)
    return x
