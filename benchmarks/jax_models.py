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
