"""The fast call path of fxla.compile (api/dispatch.py): a compiled signature's later calls go through a call
plan (JAX's C++ dispatch, zero-copy buffers) and must behave exactly like the general path."""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from torch.utils import _pytree as pytree

import fxla
from fxla.runtime import Executable


@pytest.fixture
def general_calls(monkeypatch):
    """How many runs went through the general path (Executable.__call__)."""
    count = [0]
    original = Executable.__call__

    def spy(self, args, **kw):
        count[0] += 1
        return original(self, args, **kw)

    monkeypatch.setattr(Executable, "__call__", spy)
    return count


def test_second_call_takes_the_plan(general_calls):
    fast = fxla.compile(lambda x, y: x * y + 1)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    first = fast(x, y)
    assert general_calls[0] == 1 and len(fast._plans) == 1
    for _ in range(3):
        torch.testing.assert_close(fast(x, y), x * y + 1)
    assert general_calls[0] == 1                         # later calls never touched the general path
    fast(torch.randn(5, 4), torch.randn(5, 4))           # a new signature: general path, then its own plan
    assert general_calls[0] == 2 and len(fast._plans) == 2 and fast.cache_size == 2
    torch.testing.assert_close(first, x * y + 1)


def test_keywords_and_defaults_take_the_general_path(general_calls):
    def f(x, scale=2.0):
        return x * scale
    fast = fxla.compile(f)
    x = torch.randn(4)
    torch.testing.assert_close(fast(x=x), x * 2)
    torch.testing.assert_close(fast(x), x * 2)           # defaults filled in: not a plan key of its own
    assert fast._plans == {}
    assert general_calls[0] == 2


def test_result_is_a_private_writable_buffer():
    fast = fxla.compile(lambda x: x * 1)                  # XLA returns its input buffer unchanged
    x = torch.arange(6.0)
    assert fxla.compile(lambda x: x)(x) is x              # (``return x`` is the input itself, as in eager)
    out = fast(x)
    out = fast(x)                                         # (the plan's call)
    assert out.data_ptr() != x.data_ptr()                 # never aliases the caller's tensor
    out += 1                                              # writable, and writing leaves x alone
    assert x.tolist() == [0, 1, 2, 3, 4, 5] and out.tolist() == [1, 2, 3, 4, 5, 6]
    again = fast(x)
    assert again.tolist() == [0, 1, 2, 3, 4, 5]           # and does not touch later results


def test_result_outlives_everything_else():
    fast = fxla.compile(lambda x: x * 3)
    x = torch.ones(1000)
    fast(x)
    out = fast(x)
    del fast, x
    gc.collect()
    junk = [torch.randn(1000) for _ in range(50)]         # reuse freed memory if the buffer were released
    assert out.sum().item() == 3000 and len(junk) == 50


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
                                   torch.int32, torch.uint8, torch.bool], ids=str)
def test_result_dtypes(dtype):
    fast = fxla.compile(lambda x: (x, x.to(torch.float32)))
    x = (torch.arange(12).reshape(3, 4) % 3).to(dtype)
    for _ in range(2):                                    # general path, then the plan
        same, f32 = fast(x)
        assert same.dtype == dtype and torch.equal(same, x)
        assert f32.dtype == torch.float32 and torch.equal(f32, x.to(torch.float32))


def test_structured_and_static_outputs():
    fast = fxla.compile(lambda x: {"y": x + 1, "n": x.size(0), "pair": (x * 2, [x - 1])})
    x = torch.randn(2, 3)
    for _ in range(2):
        out = fast(x)
        assert out["n"] == 2
        torch.testing.assert_close(out["y"], x + 1)
        torch.testing.assert_close(out["pair"][0], x * 2)
        torch.testing.assert_close(out["pair"][1][0], x - 1)


def test_noncontiguous_and_grad_inputs():
    fast = fxla.compile(lambda x: x.sum(0))
    base = torch.randn(4, 6, requires_grad=True)
    for _ in range(2):
        torch.testing.assert_close(fast(base), base.detach().sum(0))
        t = base.detach().t()                             # non-contiguous
        torch.testing.assert_close(fast(t), t.sum(0))


def test_jax_output_waits_for_torch_inputs():
    fast = fxla.compile(lambda x: x * 2, output="jax")
    x = torch.ones(1 << 16)
    fast(x)
    y = fast(x)
    x.fill_(100.0)                                        # the caller reuses its tensor right after the call
    assert isinstance(y, jax.Array) and float(y.sum()) == 2.0 * (1 << 16)


def test_jax_inputs_pass_through_and_give_jax_outputs():
    fast = fxla.compile(lambda x: x + 1, output="jax")
    x = jnp.arange(4.0)
    for _ in range(2):
        y = fast(x)
        assert isinstance(y, jax.Array) and y.tolist() == [1, 2, 3, 4]
    (plan,) = fast._plans.values()
    assert plan.direct is not None              # jax in and out: CompiledModule.__call__ makes the C++ call
    fast(torch.arange(4.0))
    assert [p.direct for p in fast._plans.values()][1] is None     # torch in: through the plan


@pytest.mark.slow
def test_jax_input_on_another_device_is_moved():
    """In a process with 2 CPU devices: an array committed to cpu:1 given to a program compiled for cpu:0."""
    script = textwrap.dedent("""
        import jax, jax.numpy as jnp, fxla
        fast = fxla.compile(lambda x: x * 2, device="cpu:0", output="jax")
        here = jnp.arange(3.0)
        there = jax.device_put(jnp.arange(3.0), jax.devices()[1])
        for x in (here, there, here, there):
            y = fast(x)
            assert y.tolist() == [0, 2, 4] and y.devices() == {jax.devices()[0]}, (y, y.devices())
        print("ok", fast.cache_size, len(fast._plans))
    """)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["ok", "1", "1"]


def test_plan_results_match_the_general_path_on_a_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).eval()
    fast = fxla.compile(model)
    x = torch.randn(5, 8)
    with torch.no_grad():
        first = fast(x).clone()
        np.testing.assert_array_equal(fast(x).numpy(), first.numpy())
        torch.testing.assert_close(first, model(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
                                   torch.int32, torch.int8, torch.uint8, torch.bool], ids=str)
def test_input_dtypes_through_the_plan(dtype):
    fast = fxla.compile(lambda x, y: (x.to(torch.float32) * 2 + y, x))
    x = (torch.arange(12).reshape(3, 4) % 3).to(dtype)
    y = jnp.ones((3, 4), jnp.float32)                     # a jax array next to a torch tensor
    for _ in range(2):                                    # general path, then the plan
        doubled, same = fast(x, y)
        assert same.dtype == dtype and torch.equal(same, x)
        torch.testing.assert_close(doubled, x.to(torch.float32) * 2 + 1)
    bf = torch.randn(3, 4, dtype=torch.bfloat16, requires_grad=True)
    if dtype == torch.bfloat16:                           # the numpy view's fallback: grad + bfloat16
        torch.testing.assert_close(fast(bf, y)[1], bf.detach())


def test_host_input_hands_views_or_wide_buffers():
    from fxla.runtime.buffers import host_input
    device = jax.devices("cpu")[0]
    t = torch.randn(5)
    view = host_input(torch.float32, device)(t)
    assert isinstance(view, np.ndarray) and view.ctypes.data == t.data_ptr()   # no copy made by fxla
    wide = host_input(torch.int64, device)(torch.arange(5))
    assert isinstance(wide, jax.Array) and wide.dtype == np.int64              # kept 64-bit with x64 off


def test_zero_size_and_scalar_results_through_the_plan():
    fast = fxla.compile(lambda x: (x[:0] * 2, x.sum()))
    x = torch.randn(4, 3)
    for _ in range(2):
        empty, total = fast(x)
        assert empty.shape == (0, 3) and empty.dtype == torch.float32
        torch.testing.assert_close(total, x.sum())


@pytest.mark.parametrize("fn, dtype, inline", [
    (lambda x: x + 1, torch.float32, True),               # torch tensors in and out: the C dispatch inlines it
    (lambda x: x + 1, torch.int64, False),                # 64-bit input: placed by fxla (see host_input)
    (lambda x: x + 1, torch.bfloat16, False),             # its view needs a cast
    (lambda x: (x + 1, x - 1), torch.float32, True),      # two results
    (lambda x: {"b": x.sum(), "a": (x * 2, x.shape[0])}, torch.float32, True),   # a structure, a static result
    (lambda x: x.sum() + torch.zeros(0, 3), torch.float32, False),               # an empty result
], ids=["f32", "i64", "bf16", "pair", "structure", "empty"])
def test_host_shortcut_only_where_it_applies(fn, dtype, inline):
    fast = fxla.compile(fn)
    x = torch.arange(6).reshape(2, 3).to(dtype)
    want = fn(x)
    for _ in range(3):
        got = fast(x)
        torch.testing.assert_close(got, want)
        assert pytree.tree_structure(got) == pytree.tree_structure(want)
    (plan,) = fast._plans.values()
    assert (plan.host is not None) == inline
    if inline:
        out = pytree.tree_leaves(fast(x))[0]
        out += 1                                          # a private writable view, like the plan's
        torch.testing.assert_close(fast(x), want)


def test_host_shortcut_with_two_tensors_in():
    fast = fxla.compile(lambda x, y: (x @ y, x.sum()))
    x, y = torch.randn(2, 3), torch.randn(3, 4)
    for _ in range(3):
        got = fast(x, y)
        torch.testing.assert_close(got, (x @ y, x.sum()))
    (plan,) = fast._plans.values()
    assert plan.host is not None
    y.add_(1)                                             # the inputs are read during the call only
    torch.testing.assert_close(fast(x, y), (x @ y, x.sum()))
