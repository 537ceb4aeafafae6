"""The training benchmark's steps written by hand in JAX (the "hand-written JAX" baseline of benchmarks/training.py).

Each step is what a JAX user writes: one ``jax.jit`` of ``jax.value_and_grad`` of the loss plus the optimizer's
update written out in ``jnp``, with the parameters and optimizer state donated (updated in place).  The models
read the torch model's initial weights, converted once into the layouts a JAX user keeps (dense kernels
``[in, out]``, conv kernels HWIO with NHWC activations), so the first step's loss is eager torch's.  The update
math follows torch's single-tensor implementations op for op:

* SGD with momentum (dampening 0, no weight decay, not nesterov): ``buf = momentum * buf + g`` (the first step's
  ``buf`` is ``g``, as torch's clone of the gradient), ``p = p - lr * buf``;
* AdamW: ``p = p * (1 - lr * wd)``, ``m = lerp(m, g, 1 - b1)``, ``v = b2 * v + (1 - b2) * g * g``,
  ``p = p - (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps)``, where the bias corrections ``bc1 = 1 - b1**t`` and
  ``bc2 = 1 - b2**t`` are computed on the host in double precision and passed in each step, as torch does.

Public: ``mlp_step``, ``resnet18_step``, ``gpt2_step`` — each ``(torch model, hyperparameters) -> (step, state)``
where ``state = step(state, *batch)[0]`` carries everything the next step needs and ``step(...)[1]`` is the
loss (a jax scalar); see :class:`JaxStep`.
"""
from __future__ import annotations

import types
from typing import Any, Callable, Dict, Tuple

import jax
import jax.numpy as jnp
import numpy as np

import jax_models as jm


def _np(t):
    return t.detach().cpu().numpy()


def cross_entropy(logits, labels):
    """Mean negative log-likelihood of integer ``labels`` (``F.cross_entropy``)."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, labels[..., None], axis=-1).mean()


# -- optimizers ---------------------------------------------------------------------------------------------------
def sgd_momentum(lr: float, momentum: float):
    """``(init, update, scalars_of)`` of torch's SGD(lr, momentum) (dampening 0, no weight decay; no per-step
    scalars)."""
    def init(params):
        return jax.tree_util.tree_map(jnp.zeros_like, params)

    def update(params, grads, bufs, scalars):
        bufs = jax.tree_util.tree_map(lambda b, g: momentum * b + g, bufs, grads)
        params = jax.tree_util.tree_map(lambda p, b: p - lr * b, params, bufs)
        return params, bufs
    return init, update, lambda t: ()


def adamw(lr: float, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.01):
    """``(init, update, scalars_of)`` of torch's AdamW; ``scalars_of(t)`` gives step ``t``'s (1-based) host
    scalars ``(step_size, sqrt(bc2))``."""
    b1, b2 = betas

    def init(params):
        zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
        return (zeros, jax.tree_util.tree_map(jnp.zeros_like, params))

    def update(params, grads, state, scalars):
        step_size, bc2_sqrt = scalars
        m, v = state

        def one(p, g, m, v):
            p = p * (1 - lr * weight_decay)
            m = m + (1 - b1) * (g - m)                                  # torch's lerp_(g, 1 - b1)
            v = v * b2 + (1 - b2) * g * g
            p = p - step_size * (m / (jnp.sqrt(v) / bc2_sqrt + eps))
            return p, m, v
        out = jax.tree_util.tree_map(one, params, grads, m, v)
        pick = lambda i: jax.tree_util.tree_map(lambda t: t[i], out, is_leaf=lambda t: isinstance(t, tuple))  # noqa
        return pick(0), (pick(1), pick(2))

    def scalars_of(t):
        return (np.float32(lr / (1 - b1 ** t)), np.float32((1 - b2 ** t) ** 0.5))
    return init, update, scalars_of


class JaxStep:
    """A jitted training step: ``state, loss = step(state, *batch)``.

    ``state`` is ``(params, opt_state, aux)`` (``aux``: non-trained state such as BatchNorm's running statistics,
    ``()`` where none); all of it is donated.  ``loss_fn(params, aux, *batch) -> (loss, new_aux)``."""

    def __init__(self, loss_fn: Callable, optimizer, params, aux=()):
        init, update, self.scalars_of = optimizer
        self.t = 0

        def step(state, scalars, *batch):
            params, opt_state, aux = state
            (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, aux, *batch)
            params, opt_state = update(params, grads, opt_state, scalars)
            return (params, opt_state, aux), loss
        self._jitted = jax.jit(step, donate_argnums=(0,))
        self.state = (params, init(params), aux)

    def __call__(self, *batch):
        """Run one step on ``batch`` (jax arrays); returns the loss (jax scalar), keeping the new state."""
        self.t += 1
        self.state, loss = self._jitted(self.state, self.scalars_of(self.t), *batch)
        return loss

    def block(self, loss) -> float:
        """Wait for the step's every output (not only the loss) and return the loss as a float."""
        jax.block_until_ready(self.state)
        return float(loss)


# -- MLP ----------------------------------------------------------------------------------------------------------
def mlp_step(model, optimizer) -> JaxStep:
    """``model``: ``nn.Sequential`` of Linear layers with ReLU between them."""
    linears = [m for m in model if hasattr(m, "weight")]
    params = [{"w": jnp.asarray(_np(m.weight).T), "b": jnp.asarray(_np(m.bias))} for m in linears]

    def loss_fn(params, aux, x, y):
        h = x
        for i, p in enumerate(params):
            h = h @ p["w"] + p["b"]
            if i < len(params) - 1:
                h = jax.nn.relu(h)
        return cross_entropy(h, y), aux
    return JaxStep(loss_fn, optimizer, params)


# -- ResNet-18 (NHWC, BatchNorm with batch statistics and running-statistic updates) ------------------------------
def _resnet_trees(model) -> Tuple[dict, dict]:
    """(trained parameters, BatchNorm running statistics) of a torchvision ResNet-18."""
    sd = model.state_dict()

    def bn(name):
        return ({"weight": jnp.asarray(_np(sd[f"{name}.weight"])), "bias": jnp.asarray(_np(sd[f"{name}.bias"]))},
                {"mean": jnp.asarray(_np(sd[f"{name}.running_mean"])),
                 "var": jnp.asarray(_np(sd[f"{name}.running_var"]))})
    params, stats = {"conv1": jm._conv_kernel(sd, "conv1")}, {}
    params["bn1"], stats["bn1"] = bn("bn1")
    params["stages"], stats["stages"] = [], []
    for i in range(1, 5):
        blocks, block_stats = [], []
        for j in range(2):
            pre = f"layer{i}.{j}"
            b, s = {"conv1": jm._conv_kernel(sd, f"{pre}.conv1"), "conv2": jm._conv_kernel(sd, f"{pre}.conv2")}, {}
            b["bn1"], s["bn1"] = bn(f"{pre}.bn1")
            b["bn2"], s["bn2"] = bn(f"{pre}.bn2")
            if f"{pre}.downsample.0.weight" in sd:
                b["down"] = jm._conv_kernel(sd, f"{pre}.downsample.0")
                b["down_bn"], s["down_bn"] = bn(f"{pre}.downsample.1")
            blocks.append(b)
            block_stats.append(s)
        params["stages"].append(blocks)
        stats["stages"].append(block_stats)
    params["fc"] = jm._dense(sd, "fc")
    return params, stats


def _bn_train(p, s, x, momentum=0.1, eps=1e-5):
    """torch's BatchNorm2d in training mode (NHWC): normalise by the batch's biased variance; running statistics
    move towards the batch mean and unbiased variance."""
    n = x.shape[0] * x.shape[1] * x.shape[2]
    mean = x.mean(axis=(0, 1, 2))
    var = jnp.square(x - mean).mean(axis=(0, 1, 2))
    y = (x - mean) * jax.lax.rsqrt(var + eps) * p["weight"] + p["bias"]
    mean, var = jax.lax.stop_gradient(mean), jax.lax.stop_gradient(var)
    new = {"mean": (1 - momentum) * s["mean"] + momentum * mean,
           "var": (1 - momentum) * s["var"] + momentum * var * (n / (n - 1))}
    return y, new


def resnet18_train(params, stats, x):
    """(logits, new running statistics) of ResNet-18 in training mode on NHWC ``x``."""
    new: Dict[str, Any] = {"stages": []}
    x, new["bn1"] = _bn_train(params["bn1"], stats["bn1"], jm._conv_nhwc(x, params["conv1"], 2, 3))
    x = jax.nn.relu(x)
    x = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1),
                              [(0, 0), (1, 1), (1, 1), (0, 0)])
    for i, (stage, stage_stats) in enumerate(zip(params["stages"], stats["stages"])):
        new_stage = []
        for j, (b, s) in enumerate(zip(stage, stage_stats)):
            ns = {}
            stride = 2 if i > 0 and j == 0 else 1
            identity = x
            if "down" in b:
                identity, ns["down_bn"] = _bn_train(b["down_bn"], s["down_bn"],
                                                    jm._conv_nhwc(x, b["down"], stride, 0))
            out, ns["bn1"] = _bn_train(b["bn1"], s["bn1"], jm._conv_nhwc(x, b["conv1"], stride, 1))
            out, ns["bn2"] = _bn_train(b["bn2"], s["bn2"], jm._conv_nhwc(jax.nn.relu(out), b["conv2"], 1, 1))
            x = jax.nn.relu(out + identity)
            new_stage.append(ns)
        new["stages"].append(new_stage)
    return jm._apply_dense(params["fc"], x.mean(axis=(1, 2))), new


def resnet18_step(model, optimizer) -> JaxStep:
    """``model``: torchvision's ResNet-18; the batch is (NHWC images, labels)."""
    params, stats = _resnet_trees(model)

    def loss_fn(params, stats, x, y):
        logits, stats = resnet18_train(params, stats, x)
        return cross_entropy(logits, y), stats
    return JaxStep(loss_fn, optimizer, params, stats)


# -- GPT-2 with its language-model head (tied to the token embedding) ----------------------------------------------
def gpt2_step(model, optimizer) -> JaxStep:
    """``model``: ``transformers.GPT2LMHeadModel`` (dropout 0); the batch is (ids,), the loss is Hugging Face's
    ``labels=ids`` loss: next-token cross entropy over the first ``s - 1`` positions."""
    params = jm.gpt2_params(types.SimpleNamespace(model=model.transformer))
    heads, eps = model.config.n_head, model.config.layer_norm_epsilon

    def loss_fn(params, aux, ids):
        h = jm.gpt2(params, ids, heads=heads, eps=eps)
        logits = h @ params["wte"].T                        # lm_head: the token embedding, transposed
        return cross_entropy(logits[:, :-1], ids[:, 1:]), aux
    return JaxStep(loss_fn, optimizer, params)
