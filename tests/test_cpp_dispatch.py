"""``output="jax"`` modules are called through JAX's C++ dispatch object (fxla.runtime.cpp_dispatch): after a
signature's first call, jax-array calls run the executable without entering Python, and must behave exactly
like the Python path.  Also the parameters-first executables that this needs (Executable.runner, n_params)."""
from __future__ import annotations

import gc
import sys
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import fxla
from fxla.compile import CompiledModule
from fxla.runtime import CompileError, compile_stablehlo, compile_stats, resolve_device
from fxla.runtime.jax_interop import InteropError


@pytest.fixture
def python_calls(monkeypatch):
    """How many calls JAX's C++ dispatch object handed back to fxla (its fast path does not; modules compiled
    after the fixture runs)."""
    count = [0]
    compile_module = sys.modules[CompiledModule.__module__]     # (fxla.compile the module, not the function)
    original = compile_module._cpp_miss

    def spy(*args, **kwargs):
        count[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(compile_module, "_cpp_miss", spy)
    return count


def _linear():
    torch.manual_seed(0)
    return torch.nn.Linear(4, 3).eval()


def test_jax_calls_run_from_cpp_after_the_first(python_calls):
    model = _linear()
    fast = fxla.compile(model, output="jax")
    x = jnp.asarray(np.random.default_rng(0).standard_normal((2, 4)), jnp.float32)
    want = model(torch.from_numpy(np.array(x))).detach().numpy()
    for _ in range(5):
        y = fast(x)
        assert isinstance(y, jax.Array)
        np.testing.assert_allclose(np.asarray(y), want, rtol=1e-5, atol=1e-6)
    assert python_calls[0] == 1 and fast._cpp_call._cache_size() == 1
    x5 = jnp.ones((5, 4), jnp.float32)                   # a new signature: one Python call, then C++ again
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(fast(x5)), model(torch.ones(5, 4)).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    assert python_calls[0] == 2 and fast.cache_size == 2


def test_tuple_and_sorted_dict_outputs_keep_their_structure(python_calls):
    fast = fxla.compile(lambda x: (x + 1, {"a": x * 2, "b": [x - 1]}), output="jax")
    x = jnp.arange(3.0)
    for _ in range(3):
        first, rest = fast(x)
        assert type(rest) is dict and list(rest) == ["a", "b"] and type(rest["b"]) is list
        assert first.tolist() == [1, 2, 3] and rest["a"].tolist() == [0, 2, 4] and rest["b"][0].tolist() == [-1, 0, 1]
    assert python_calls[0] == 1


def test_results_jax_would_flatten_differently_stay_in_python(python_calls):
    """A dict whose keys are not sorted: JAX's pytree would give its leaves in another order than fxla's."""
    fast = fxla.compile(lambda x: {"b": x + 1, "a": x * 2}, output="jax")
    x = jnp.arange(3.0)
    for _ in range(3):
        out = fast(x)
        assert list(out) == ["b", "a"] and out["b"].tolist() == [1, 2, 3] and out["a"].tolist() == [0, 2, 4]
    assert python_calls[0] == 3


def test_static_outputs_stay_in_python_and_torch_inputs_run_from_fxlas_c_dispatch(python_calls):
    fast = fxla.compile(lambda x: (x * 2, x.size(0)), output="jax")
    x = jnp.arange(3.0)
    for _ in range(2):
        y, n = fast(x)
        assert n == 3 and y.tolist() == [0, 2, 4]
    assert python_calls[0] == 2
    g = fxla.compile(lambda x: x * 2, output="jax")
    t = torch.arange(3.0)
    for _ in range(3):
        y = g(t)
        assert isinstance(y, jax.Array) and y.tolist() == [0, 2, 4]
    # torch in: the first call goes through JAX's dispatch to fxla's Python path, which records the signature's
    # plan in front of JAX's (module._front_plans); later calls run its host shortcut from C
    assert python_calls[0] == 3
    (plan,) = g._front_plans.values()
    assert plan.host is not None and plan.host[2] is None
    j = jnp.arange(3.0)                                  # jax arrays pass the front to JAX's dispatch
    for _ in range(3):
        assert g(j).tolist() == [0, 2, 4]
    assert python_calls[0] == 4 and len(g._front_plans) == 1 and len(g._plans) == 2


class _Counter(torch.nn.Module):
    def __init__(self, only_long: bool):
        super().__init__()
        self.only_long = only_long
        self.register_buffer("count", torch.zeros(()))

    def forward(self, x):
        if not self.only_long or x.shape[0] > 2:
            self.count += 1
        return x + self.count


def test_a_mutating_program_never_takes_a_stale_fast_path():
    model = _Counter(only_long=False)
    fast = fxla.compile(model, output="jax")
    x = jnp.zeros(2)
    assert [fast(x).tolist() for _ in range(3)] == [[1, 1], [2, 2], [3, 3]]
    assert float(model.count) == 3


def test_state_written_by_one_signature_reaches_the_fast_paths_of_the_others():
    """concrete_shapes: the length-4 trace increments the buffer, the length-1 trace only reads it; its fast
    path holds the buffer as a constant and must be dropped when the buffer changes (on the CPU the old
    constant may alias the module's tensor, which is updated too, so the values alone cannot tell)."""
    model = _Counter(only_long=True)
    fast = fxla.compile(model, output="jax", concrete_shapes=True)
    short, long = jnp.zeros(1), jnp.zeros(4)
    assert [fast(short).tolist() for _ in range(3)] == [[0], [0], [0]]      # the later calls ran from C++
    (reader,) = fast._per_shape.compiled.values()
    assert reader._cpp_call._cache_size() == 1
    assert fast(long).tolist() == [1, 1, 1, 1]
    assert reader._cpp_call._cache_size() == 0                                # its fast path was dropped
    assert fast(short).tolist() == [1] and fast(short).tolist() == [1]
    assert fast(long).tolist() == [2, 2, 2, 2] and fast(short).tolist() == [2]
    assert float(model.count) == 2


def test_disable_jit_still_runs_the_compiled_program():
    fast_jax = fxla.compile(lambda x: x * 2, output="jax")
    fast = fxla.compile(lambda x: x * 2)
    x, t = jnp.arange(3.0), torch.arange(3.0)
    for _ in range(2):                                   # compiled before, and then inside disable_jit
        fast_jax(x), fast(t)
        with jax.disable_jit():
            assert fast_jax(x).tolist() == [0, 2, 4] and fast_jax(t).tolist() == [0, 2, 4]
            assert fast(t).tolist() == [0, 2, 4]


@pytest.mark.parametrize("transform", [jax.jit, jax.vmap], ids=["jit", "vmap"])
def test_calling_inside_a_jax_transformation_names_the_interop_function(transform):
    fast = fxla.compile(lambda x: x * 2, output="jax")
    x = jnp.arange(3.0)
    fast(x)
    with pytest.raises(InteropError, match=r"called with JAX tracers[\s\S]*fix: call fast.as_jax_function"):
        transform(lambda a: fast(a))(x)


def test_the_dispatcher_does_not_keep_its_module_alive():
    fast = fxla.compile(_linear(), output="jax")
    x = jnp.ones((2, 4))
    fast(x), fast(x)
    ref = weakref.ref(fast)
    del fast
    gc.collect()
    assert ref() is None


def test_a_kept_call_of_a_deleted_module_says_so():
    fast = fxla.compile(lambda x: x * 2, output="jax")
    call = fast.__call__                                 # the dispatcher itself
    del fast
    gc.collect()
    with pytest.raises(fxla.FxlaError, match="belongs to a CompiledModule that has been deleted"):
        call(jnp.arange(3.0))


# -- parameters first ------------------------------------------------------------------------------------------
_ADD = """
func.func @main(%x: tensor<3xf32>, %p: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.subtract %x, %p : tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""


def test_runner_takes_the_parameters_first_and_the_call_the_program_order(tmp_path):
    cpu = resolve_device("cpu")
    x, p = jnp.asarray([5.0, 6, 7]), jnp.asarray([1.0, 2, 3])
    for n_params, want in ((0, [4, 4, 4]), (1, [4, 4, 4])):
        exe = compile_stablehlo(_ADD, cpu, n_params=n_params, cache_dir=str(tmp_path))
        assert exe.n_params == n_params
        assert exe([x, p])[0].tolist() == want                       # program order: x, then p
        runner_args = (p, x) if n_params else (x, p)
        assert exe.runner(*runner_args)[0].tolist() == want
    assert compile_stats()["disk_hits"] >= 0
    again = compile_stablehlo(_ADD, cpu, n_params=1, cache_dir=str(tmp_path))   # the cache keeps both orders
    assert again.from_cache and again([x, p])[0].tolist() == [4, 4, 4]
    with pytest.raises(CompileError, match="n_params=3, but the program takes 2 arguments"):
        compile_stablehlo(_ADD, cpu, n_params=3)
