"""``as_jax_function`` and the module's state: the function embeds the weights of its making (in buffers of its
own, so an in-place change of a parameter later changes neither its value nor a ``jax.jit`` of it), made after a
change it has the new ones, its gradient is refused once the module changed, and torch tensors passed to it are
read at the call (the review of 2026-12-08, /tmp/s/hunt29_jax.md)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from torch import nn

import fxla


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))


def _want(model, x):
    with torch.no_grad():
        return model(torch.from_numpy(np.asarray(x))).numpy()


def test_the_function_keeps_the_weights_of_its_making():
    model = _mlp()
    fast = fxla.compile(model)
    x = jnp.asarray(np.random.default_rng(0).standard_normal((2, 4), dtype=np.float32))
    before = _want(model, x)
    old = fast.as_jax_function(x)
    jitted = jax.jit(old)
    np.testing.assert_allclose(old(x), before, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jitted(x), before, rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(-1.5)                         # (in place: biases are zero-copy uploads of torch's memory)
    after = _want(model, x)
    new = fast.as_jax_function(x)               # (no compiled call between: made from the new weights)
    np.testing.assert_allclose(new(x), after, rtol=1e-5, atol=1e-6)
    for f in (old, jitted, jax.jit(old)):
        np.testing.assert_allclose(f(x), before, rtol=1e-5, atol=1e-6)
    model.load_state_dict({k: torch.zeros_like(v) for k, v in model.state_dict().items()})
    np.testing.assert_allclose(fast.as_jax_function(x)(x), _want(model, x), rtol=1e-5, atol=1e-6)


def test_a_gradient_after_the_module_changed_is_refused():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 2.0

        def forward(self, x):
            return (torch.sin(x) * self.scale).sum()

    model = Scaled()
    fast = fxla.compile(model)
    x = jnp.linspace(-1.0, 1.0, 5, dtype=jnp.float32)
    f = fast.as_jax_function(x)
    value, grad = jax.value_and_grad(f)(x)
    np.testing.assert_allclose(grad, 2 * np.cos(np.asarray(x)), rtol=1e-5, atol=1e-6)
    g = fast.as_jax_function(x)
    model.scale = 5.0
    fast(torch.from_numpy(np.asarray(x)))          # (the module now runs the trace of scale 5)
    with pytest.raises(fxla.FxlaError, match="module changed.*\n.*as_jax_function again"):
        jax.grad(g)(x)
    np.testing.assert_allclose(jax.grad(fast.as_jax_function(x))(x), 5 * np.cos(np.asarray(x)), rtol=1e-5,
                               atol=1e-6)


def test_a_torch_input_is_read_at_the_call():
    def heavy(x):
        y = x
        for _ in range(4):
            y = torch.tanh(y @ x)
        return y.sum() + x.sum()

    x = torch.randn(96, 96) / 20
    want = heavy(x).item()
    f = fxla.compile(heavy).as_jax_function(x)
    for _ in range(3):
        given = x.clone()
        result = f(given)
        given.zero_()                               # (changed once the call returned, before JAX read it)
        assert float(result) == pytest.approx(want, rel=1e-4)


def test_a_compiled_function_sees_its_tensors_changed_in_place():
    """A global or closure tensor a compiled function reads is watched as a module's weights are (eager's next
    call reads it as it is then)."""
    weight, bias = torch.randn(4, 3), torch.randn(4)

    def f(x):
        return x @ weight.t() + bias

    fast, x = fxla.compile(f), torch.randn(2, 3)
    for scale in (1.0, 2.0, -3.0):
        with torch.no_grad():
            weight.mul_(scale)
            bias.add_(scale)
        torch.testing.assert_close(fast(x), f(x))


def test_inputs_jax_transformations_hand_over():
    """A dict input with its keys unsorted (JAX rebuilds dicts sorted under jit, grad, vmap) and numpy arrays are
    taken; a typed PRNG key is a clear InputError."""
    def f(batch):
        return (batch["x"] * batch["mask"]).sum()

    example = {"x": jnp.ones(3), "mask": jnp.full(3, 2.0)}
    g = fxla.compile(f).as_jax_function(example)
    assert float(g(example)) == 6.0
    assert float(jax.jit(g)(example)) == 6.0
    grads = jax.grad(g)(example)
    np.testing.assert_allclose(grads["x"], np.full(3, 2.0))
    np.testing.assert_allclose(grads["mask"], np.ones(3))
    h = fxla.compile(lambda x: x * 2).as_jax_function(jnp.ones((2, 3)))
    np.testing.assert_allclose(h(np.ones((2, 3), np.float32)), np.full((2, 3), 2.0))
    with pytest.raises(fxla.FxlaError, match="key<fry> has no torch equivalent"):
        fxla.compile(lambda x: x * 2)(jax.random.key(0))


def test_a_loaded_artifact_under_a_jax_transformation_is_a_clear_error(tmp_path):
    model = nn.Linear(3, 2)
    fxla.export(model, (torch.randn(2, 3),), tmp_path / "linear")
    loaded = fxla.load(tmp_path / "linear")
    with pytest.raises(fxla.FxlaError, match="a loaded artifact runs its own compiled program(.|\n)*fix: call it "
                                             "outside the transformation"):
        jax.jit(loaded)(jnp.ones((2, 3)))


def test_batch_norm_in_training_mode_names_its_fix():
    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    with pytest.raises(fxla.FxlaError, match="running statistics: model.eval\\(\\), or track_running_stats=False"):
        fxla.compile(model).as_jax_function(jnp.ones((4, 3)))


def test_equal_global_tensors_of_two_traces_stay_apart():
    """Two globals holding equal values, each read by another trace (a None variant): one buffer each, so a
    change of one is seen by its trace alone (they shared one upload, by content)."""
    g1, g2 = torch.ones(3), torch.ones(3)

    def f(x, mask=None):
        return x * g1 if mask is None else x * g2 * mask

    fast, x = fxla.compile(f), torch.ones(3)
    torch.testing.assert_close(fast(x), f(x))
    torch.testing.assert_close(fast(x, torch.ones(3)), f(x, torch.ones(3)))
    g1.mul_(5)
    for _ in range(2):
        torch.testing.assert_close(fast(x), f(x))
        torch.testing.assert_close(fast(x, torch.ones(3)), f(x, torch.ones(3)))
