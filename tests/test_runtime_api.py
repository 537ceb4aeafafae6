"""The runtime-facing options of fxla.compile: devices, zero-copy buffers, output="jax", jax inputs, signature
errors, the on-disk executable cache (across processes) and running compiled programs inside jax.jit."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla
from fxla.runtime import CacheWarning, DeviceError, Executable, compile_stats
from fxla.runtime.buffers import from_device, to_device


from support import gelu_mlp  # noqa: E402  (tests/ is on sys.path)

MLP = gelu_mlp


@pytest.fixture
def mlp():
    """A frozen model for inference (a call with grad mode on and parameters that require grad would also compile
    the program that saves residuals for a backward: fxla.autograd)."""
    torch.manual_seed(0)
    return MLP().eval().requires_grad_(False)


def close(got, want):
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.fixture
def recorded(monkeypatch):
    """Every run of a compiled program, through the general path (``Executable.__call__``) or a call plan
    (``Executable.runner``, which takes the parameters first): (argument buffers in the program's order —
    inputs, then parameters —, result buffers)."""
    calls = []
    original = Executable.__call__
    original_runner = Executable.runner.fget

    def spy(self, args, **kw):
        out = original(self, args, **kw)
        calls.append((list(args), list(out)))
        return out

    def runner_spy(self):
        run = original_runner(self)

        def spied(*args):
            out = run(*args)
            n = self.n_params
            calls.append((list(args[n:]) + list(args[:n]), list(out)))
            return out
        return spied

    monkeypatch.setattr(Executable, "__call__", spy)
    monkeypatch.setattr(Executable, "runner", property(runner_spy))
    return calls


# ---------------------------------------------------------------------------------------------------------------
# devices
# ---------------------------------------------------------------------------------------------------------------
def test_every_device_form(mlp):
    x = torch.randn(2, 8)
    cpu0 = jax.devices("cpu")[0]
    for device in (None, "cpu", "cpu:0", cpu0):
        fast = fxla.compile(mlp, device=device)
        assert fast.device == cpu0
        close(fast(x), mlp(x))
        assert all(p.devices() == {cpu0} for p in fast._params.values())


@pytest.mark.parametrize("platform", ["gpu", "tpu"])
def test_missing_accelerator_is_a_device_error(mlp, platform):
    try:
        jax.devices(platform)
        pytest.skip(f"this machine has a {platform}")
    except RuntimeError:
        pass
    with pytest.raises(DeviceError) as info:
        fxla.compile(mlp, device=platform)
    msg = str(info.value)
    assert f"no '{platform}' device is available" in msg and "fix:" in msg and "['cpu']" in msg


@pytest.mark.parametrize("device", ["cpu:x", "cpu:-1"])
def test_malformed_device_index(mlp, device):
    with pytest.raises(DeviceError, match="not a device index"):
        fxla.compile(mlp, device=device)


def _has(platform: str) -> bool:
    try:
        return bool(jax.devices(platform))
    except RuntimeError:
        return False


@pytest.mark.skipif(not _has("gpu"), reason="needs a GPU")
def test_gpu_runs_and_matches(mlp):                                       # pragma: no cover (CPU box)
    x = torch.randn(4, 8)
    fast = fxla.compile(mlp, device="gpu")
    close(fast(x), mlp(x))
    y = fxla.compile(mlp, device="gpu", output="jax")(x)
    assert y.devices() == {jax.devices("gpu")[0]}


# ---------------------------------------------------------------------------------------------------------------
# zero-copy buffers and residency
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int32], ids=str)
def test_cpu_inputs_and_outputs_share_memory(recorded, dtype):
    fast = fxla.compile(lambda x: x * 2)
    x = torch.arange(64).reshape(4, 16).to(dtype)
    out = fast(x)
    assert torch.equal(out, x * 2) and out.dtype == dtype
    (args, results), = recorded
    assert args[0].unsafe_buffer_pointer() == x.data_ptr()          # the input was not copied
    assert results[0].unsafe_buffer_pointer() == out.data_ptr()     # nor was the output
    assert to_device(x, jax.devices("cpu")[0]).unsafe_buffer_pointer() == x.data_ptr()


def test_parameters_stay_resident(mlp, recorded):
    fast = fxla.compile(mlp)
    for batch in (2, 2, 5):
        fast(torch.randn(batch, 8))
    pointers = [[a.unsafe_buffer_pointer() for a in args[1:]] for args, _ in recorded]
    assert pointers[0] == pointers[1] == pointers[2]                 # the same device buffers every call
    objects = [args[1:] for args, _ in recorded]
    assert all(a is b for a, b in zip(objects[0], objects[2]))


def test_output_jax_stays_on_device(mlp, recorded):
    fast = fxla.compile(mlp, output="jax")
    x = torch.randn(3, 8)
    y = fast(x)
    assert isinstance(y, jax.Array) and y.devices() == {jax.devices("cpu")[0]} and y.dtype == jnp.float32
    assert y is recorded[0][1][0]                                     # the executable's own result buffer
    close(torch.from_numpy(np.array(y)), mlp(x).detach())
    t = from_device(y)
    assert t.data_ptr() == y.unsafe_buffer_pointer()                  # and torch can view it without a copy


def test_jax_arrays_as_inputs(mlp, recorded):
    fast = fxla.compile(mlp)
    x = torch.randn(3, 8)
    xj = jnp.asarray(x.numpy())
    close(fast(xj), mlp(x).detach())
    assert recorded[0][0][0] is xj                                    # passed through untouched
    close(fast(x), mlp(x).detach())
    assert fast.cache_size == 1                                       # same signature as the torch tensor
    bf = fxla.compile(lambda a: a + 1)(jnp.ones(3, jnp.bfloat16))
    assert bf.dtype == torch.bfloat16 and bf.tolist() == [2.0, 2.0, 2.0]


# ---------------------------------------------------------------------------------------------------------------
# signatures and options
# ---------------------------------------------------------------------------------------------------------------
def test_wrong_rank_or_size_names_the_input(mlp):
    fast = fxla.compile(mlp)
    fast(torch.randn(2, 8))
    with pytest.raises(fxla.FxlaError) as info:
        fast(torch.randn(2, 7))
    msg = str(info.value)
    assert "for inputs (x=float32[2, 7])" in msg and "compiled so far: (x=float32[2, 8])" in msg
    assert msg.rstrip().splitlines()[-1].startswith("fix:")


def test_wrong_dtype_names_the_input(mlp):
    with pytest.raises(fxla.FxlaError) as info:
        fxla.compile(mlp)(torch.randn(2, 8, dtype=torch.float64))
    assert "x=float64[2, 8]" in str(info.value) and "fix:" in str(info.value)


def test_unsupported_options(mlp):
    from fxla import OptionError
    with pytest.raises(OptionError, match="dynamic='yes' is not supported.*\nfix:"):
        fxla.compile(mlp, dynamic="yes")
    with pytest.raises(OptionError, match="output='numpy'"):
        fxla.compile(mlp, output="numpy")
    assert fxla.compile(mlp, dynamic=False).cache_size == 0


def test_something_not_callable_is_a_clear_error(mlp):
    from fxla import OptionError
    x = torch.randn(2, 4)
    with pytest.raises(OptionError, match=r"expects an nn.Module or a function to compile, got a tuple of 2 items\n"
                                          r"why: .*callable\nfix: its first item is a \w+: unpack first"):
        fxla.compile((mlp, (x,)))
    with pytest.raises(OptionError, match=r"got a Tensor\nwhy: .*\nfix: pass the model or function itself"):
        fxla.compile(x)
    with pytest.raises(OptionError, match="got a str"):
        fxla.compile(output="jax")("model.py")                 # the decorator form checks too


# ---------------------------------------------------------------------------------------------------------------
# on-disk executable cache
# ---------------------------------------------------------------------------------------------------------------
_CHILD = textwrap.dedent("""
    import json, sys, torch, fxla
    from fxla.runtime import compile_stats
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).eval()
    model.requires_grad_(False)
    x = torch.randn(3, 8)
    y = fxla.compile(model, cache_dir=sys.argv[1])(x)
    torch.testing.assert_close(y, model(x).detach())
    print(json.dumps(compile_stats()))
""")


@pytest.mark.slow
def test_second_process_is_a_cache_hit(tmp_path):
    cache = tmp_path / "cache"

    def run():
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(cache)], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    first = run()
    assert first["compiles"] == 1 and first["disk_writes"] == 1 and first["disk_hits"] == 0
    assert len(os.listdir(cache)) == 1
    second = run()
    assert second["compiles"] == 0 and second["disk_hits"] == 1       # deserialized, not recompiled
    assert len(os.listdir(cache)) == 1


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_corrupt_cache_entry_is_recompiled_with_a_warning(mlp, tmp_path, damage):
    x = torch.randn(2, 8)
    close(fxla.compile(mlp, cache_dir=tmp_path)(x), mlp(x).detach())
    (entry,) = list(tmp_path.iterdir())
    blob = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(blob[: len(blob) // 2])
    elif damage == "flip":
        entry.write_bytes(blob[:-10] + bytes([blob[-10] ^ 0xFF]) + blob[-9:])
    else:
        entry.write_bytes(b"not an executable")
    before = compile_stats()
    with pytest.warns(CacheWarning, match="ignoring cache entry"):
        close(fxla.compile(mlp, cache_dir=tmp_path)(x), mlp(x).detach())
    after = compile_stats()
    assert after["compiles"] == before["compiles"] + 1 and after["disk_errors"] == before["disk_errors"] + 1
    assert entry.read_bytes() == blob or len(entry.read_bytes()) > len(blob) // 2   # rewritten, whole again
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fxla.compile(mlp, cache_dir=tmp_path)(x)                                       # and now a clean hit
    assert compile_stats()["disk_hits"] == after["disk_hits"] + 1


def test_set_cache_dir_is_the_default(mlp, tmp_path):
    fxla.runtime.set_cache_dir(tmp_path)
    try:
        fxla.compile(mlp)(torch.randn(2, 8))
        assert len(list(tmp_path.glob("*.fxlaexe"))) == 1
        hits = compile_stats()["disk_hits"]
        fxla.compile(mlp)(torch.randn(2, 8))
        assert compile_stats()["disk_hits"] == hits + 1
    finally:
        fxla.runtime.set_cache_dir(None)
    assert fxla.runtime.get_cache_dir() is None


def test_different_signature_is_a_different_entry(mlp, tmp_path):
    fast = fxla.compile(mlp, cache_dir=tmp_path)
    fast(torch.randn(2, 8))
    fast(torch.randn(3, 8))
    assert len(list(tmp_path.glob("*.fxlaexe"))) == 2 and not list(tmp_path.glob(".tmp-*"))


# ---------------------------------------------------------------------------------------------------------------
# JAX interop
# ---------------------------------------------------------------------------------------------------------------
def test_as_jax_function_under_jit_and_vmap(mlp):
    from fxla.runtime.jax_interop import InteropError
    x = torch.randn(3, 8)
    want = mlp(x).detach().numpy()
    f = fxla.compile(mlp).as_jax_function(x)
    xj = jnp.asarray(x.numpy())
    np.testing.assert_allclose(np.asarray(f(xj)), want, rtol=1e-5, atol=1e-5)             # eager
    g = jax.jit(lambda a: jnp.tanh(f(a)) * 2.0)
    np.testing.assert_allclose(np.asarray(g(xj)), np.tanh(want) * 2, rtol=1e-5, atol=1e-5)  # inside jit
    assert "fxla_main" in g.lower(xj).as_text()                     # the fxla program is inlined in the module
    batch = jnp.stack([xj, xj * 2])
    vm = jax.jit(jax.vmap(f))(batch)                                 # vmap: a loop over the batch
    np.testing.assert_allclose(np.asarray(vm[1]), mlp(x * 2).detach().numpy(), rtol=1e-5, atol=1e-5)
    grad = jax.jit(jax.grad(lambda a: jnp.tanh(f(a)).sum()))(xj)          # fxla's backward, as a custom_vjp
    xt = x.clone().requires_grad_()
    torch.tanh(mlp(xt)).sum().backward()
    np.testing.assert_allclose(np.asarray(grad), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(InteropError, match=r"as_jax_function was built for inputs \(x=float32\[.*\]\), and got "
                                           r"float32\[4, 8\]"):
        f(jnp.ones((4, 8)))


def test_as_jax_function_structured_outputs():
    def fn(x, y, n):
        return {"s": x + y * n, "shape": x.shape[0]}

    fast = fxla.compile(fn)
    x, y = torch.randn(3), torch.randn(3)
    f = fast.as_jax_function(x, y, 2)
    out = jax.jit(lambda a, b: f(a, b, 2))(jnp.asarray(x.numpy()), jnp.asarray(y.numpy()))
    assert out["shape"] == 3
    np.testing.assert_allclose(np.asarray(out["s"]), (x + y * 2).numpy(), rtol=1e-6)


def test_numpy_and_unhashable_inputs_are_clear_errors(mlp):
    import numpy as np
    from fxla import SignatureError
    fast = fxla.compile(mlp)
    with pytest.raises(SignatureError, match=r"called with a numpy array \(input leaf 0: float32\[2, 4\]\)\n"
                                             r"why: .*\nfix: pass torch.from_numpy\(a\)"):
        fast(np.ones((2, 4), np.float32))

    class Unhashable:
        __hash__ = None

    scaled = fxla.compile(lambda x, s: x * 2)
    with pytest.raises(SignatureError, match=r"unhashable Unhashable \(input leaf 1\)\nwhy: .*hashable\nfix: "):
        scaled(torch.ones(2), Unhashable())
    torch.testing.assert_close(scaled(torch.ones(2), 3), torch.full((2,), 2.0))     # hashable values still work


def test_error_notes_about_inputs_stay_short_for_graphs_with_many_inputs():
    fast = fxla.compile(lambda a, b, c, d, e, f, g, h, i, j: a + b + c + d + e + f + g + h + i + j)
    args = [torch.ones(2)] * 10
    text = fast._describe_call(args)
    assert text.startswith("a=float32[2], b=float32[2]") and text.endswith("g=float32[2], ... 3 more")
    assert fast._describe_call(args, shown=10).count("=float32[2]") == 10
