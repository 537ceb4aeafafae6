"""The one module that names JAX's and jaxlib's private API: the boundary a jax/jaxlib upgrade touches.

fxla relies on a few internals of the pinned jax/jaxlib (``jax==0.10.2``, ``jaxlib==0.10.2``, pyproject.toml):
names under ``jax._src``, jaxlib's native modules (``jaxlib._jax`` through ``jax._src.lib``,
``jaxlib.mlir._mlir_libs``), ``jaxlib.xla_client`` and private attributes of JAX's objects (``Compiled._call``,
``MeshExecutable._in_shardings``...).  Every one of them is named here and nowhere else in fxla, each with what
fxla uses it for; :data:`NAMES` lists them, ``tests/test_jax_private.py`` checks that each resolves in the installed
jax/jaxlib (so an upgrade that moves one fails there, in one clear test) and that no other fxla module mentions
``jax._src``, ``jaxlib._jax``, ``_mlir_libs`` or ``xla_client``.

Layer 0: it imports jax/jaxlib only, nothing of fxla, so every stage may use it.  Importing it loads jaxlib's
MLIR bindings but not jax (``fxla-opt`` reaches it through :mod:`fxla.dialects.mlir` and never imports jax): the
jax internals are imported inside the functions that use them.
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, Sequence

# jaxlib's C++ logging reads its level once, when the library loads; `import jax` sets it to 1 (warnings and up)
# first.  This module may load jaxlib before jax does, so it does the same (else PJRT prints INFO lines on stderr).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

# -- jaxlib's MLIR bindings (fxla.dialects.mlir) --------------------------------------------------------------
# register_dialects(registry): jaxlib's upstream dialects (func, arith, math, ...) for fxla's IR contexts
from jaxlib.mlir._mlir_libs import _jax_mlir_ext as jax_mlir_ext  # noqa: E402
# MLIR's native rewrite API (greedy pattern driver, PDL); jaxlib 0.10.2 has no public wrapper
from jaxlib.mlir._mlir_libs._mlir import rewrite  # noqa: E402,F401
# the bindings' registry of Python modules per dialect namespace (see add_dialect_module)
from jaxlib.mlir._mlir_libs._mlir import globals as _mlir_globals  # noqa: E402

#: Every private name fxla uses, as ``(module, attribute path)`` (``None``: the module itself), for the test that
#: they all resolve.  Attributes of objects (``Compiled._call``...) are checked by the tests of their users.
NAMES = (
    ("jaxlib.mlir._mlir_libs._jax_mlir_ext", "register_dialects"),
    ("jaxlib.mlir._mlir_libs._mlir", "rewrite"),
    ("jaxlib.mlir._mlir_libs._mlir", "globals.dialect_search_modules"),
    ("jaxlib.mlir._mlir_libs._mlir", "globals.append_dialect_search_prefix"),
    ("jaxlib.mlir._mlir_libs._mlir", "globals._check_dialect_module_loaded"),
    ("jax._src.lib", "_jax.pjit"),
    ("jax._src.lib", "_jax.PjitFunctionCache"),
    ("jax._src.tree_util", "dispatch_registry"),
    ("jax._src.interpreters.pxla", "JitGlobalCppCacheKeys"),
    ("jax._src.interpreters.pxla", "cc_shard_arg"),
    ("jax._src.interpreters.pxla", "MeshExecutable"),
    ("jax._src.interpreters.pxla", "ExecuteReplicated"),
    ("jax._src.interpreters.pxla", "MeshExecutableFastpathData"),
    ("jax._src.compiler", "compile_or_get_cached"),
    ("jaxlib.xla_client", "batched_device_put"),
    ("jaxlib.xla_client", "CompileOptions"),
    ("jaxlib.xla_client", "DeviceAssignment.create"),
    ("jaxlib.xla_client", "DeviceList"),
    ("jax._src.distributed", "global_state"),           # (its .client: None until initialize)
    ("jax._src.xla_bridge", "backends_are_initialized"),
    ("jax._src.lib", "_jax.mlir.refine_polymorphic_shapes"),
)


def refine_polymorphic_shapes(module_bytecode: bytes) -> bytes:
    """StableHLO's shape refinement (``stablehlo-refine-shapes`` and its companions, as ``jax.export`` runs them
    on a polymorphic module): the module (MLIR bytecode) whose ``main`` has static argument types, with every
    ``?`` inferred from them and the dynamic ops made static; raises where a shape stays dynamic."""
    from jax._src.lib import _jax
    return _jax.mlir.refine_polymorphic_shapes(module_bytecode, enable_shape_assertions=True,
                                               validate_static_shapes=True)


def add_dialect_module(prefix: str, namespace: str) -> None:
    """Make the MLIR bindings find the Python module ``<prefix>.<namespace>`` of a dialect, and look it up now
    (so the failed lookups of a namespace without one are not repeated for every wrapped op)."""
    if prefix not in _mlir_globals.dialect_search_modules:
        _mlir_globals.append_dialect_search_prefix(prefix)
    _mlir_globals._check_dialect_module_loaded(namespace)


# -- PJRT through jaxlib.xla_client (fxla.runtime.buffers, fxla.runtime.executable) ----------------------------
_xc = None


def _xla_client():
    """``jaxlib.xla_client``, imported on first use (it loads jaxlib's PJRT library; fxla-opt never needs it)."""
    global _xc
    if _xc is None:
        from jaxlib import xla_client
        _xc = xla_client
    return _xc


def batched_device_put(aval, sharding, host, device) -> Any:
    """``host`` (a numpy array) as a ``jax.Array`` of ``aval`` on ``device``, keeping 64-bit types: PJRT's
    transfer that ``jax.device_put`` ends in, without its generic argument handling (~3 µs instead of ~27 µs)."""
    return (_xc or _xla_client()).batched_device_put(aval, sharding, [host], [device], True, enable_x64=True)


def spmd_compile_options(device_ids: Sequence[int], env_overrides: dict):
    """XLA's compile options for one program partitioned over ``device_ids`` by Shardy (SPMD), with the
    debug-option overrides ``env_overrides`` (fxla.runtime.executable's partitioned compile)."""
    import numpy as np
    xla_client = _xla_client()
    options = xla_client.CompileOptions()
    options.env_option_overrides = list(env_overrides.items())
    # Without an explicit assignment XLA assumes device 0, and buffers on e.g. cpu:1 are then rejected.
    options.device_assignment = xla_client.DeviceAssignment.create(np.array(device_ids).reshape(1, -1))
    options.num_replicas = 1
    options.num_partitions = len(device_ids)
    build = options.executable_build_options
    build.use_spmd_partitioning = True
    build.use_shardy_partitioner = True
    return options


def compile_and_load(backend, text: str, devices: Sequence[Any], options):
    """PJRT's compile of StableHLO ``text`` for ``devices`` of ``backend`` (a PJRT client): a loaded executable."""
    return backend.compile_and_load(text, _xla_client().DeviceList(tuple(devices)), options)


def deserialize_executable(backend, payload: bytes, devices: Sequence[Any], options=None):
    """The loaded executable of ``payload`` (:func:`serialize_executable`'s bytes) on ``devices``."""
    device_list = _xla_client().DeviceList(tuple(devices))
    if options is None:
        return backend.deserialize_executable(payload, device_list)
    return backend.deserialize_executable(payload, device_list, options)


def serialize_executable(loaded) -> bytes:
    """A PJRT loaded executable's own bytes (XLA's serialized form; no Python objects)."""
    return loaded.client.serialize_executable(loaded) if hasattr(loaded, "client") else loaded.serialize()


# -- JAX's distributed runtime (fxla.runtime.multihost) ------------------------------------------------------
def distributed_client():
    """The client of JAX's coordination service (its key-value store and barriers), or ``None`` before
    ``jax.distributed.initialize``."""
    from jax._src import distributed
    return distributed.global_state.client


def backends_initialized() -> bool:
    """Whether JAX has created its PJRT clients (after which device counts and collectives are fixed)."""
    from jax._src import xla_bridge
    return xla_bridge.backends_are_initialized()


# -- jax.stages.Compiled internals (fxla.runtime.executable, fxla.dispatch) ------------------------------------
def loaded_executable(compiled):
    """The PJRT loaded executable inside a ``jax.stages.Compiled`` (what the disk cache serializes)."""
    return compiled._executable.xla_executable


def call_compiled_without_jit(compiled, *args) -> list:
    """Run a ``jax.stages.Compiled`` under ``jax.disable_jit()``, where its own call refuses to run."""
    return compiled._executable.call(*args)


def compiled_call(compiled) -> Callable[..., Any]:
    """What calling a ``jax.stages.Compiled`` runs: once called, its C++ call object (``Compiled._call``), which
    skips a Python frame per call; before, the Compiled itself."""
    return getattr(compiled, "_call", None) or compiled


_precompiled = threading.local()


def _compile_or_get_precompiled(*args, **kwargs):
    executable = getattr(_precompiled, "executable", None)
    if executable is None:
        return _jax_compile_or_get_cached(*args, **kwargs)
    _precompiled.executable = None
    return executable


_jax_compile_or_get_cached = None


@contextmanager
def precompiled(executable) -> Iterator[None]:
    """Within the block, this thread's next ``jax.stages.Lowered.compile()`` returns ``executable`` (a PJRT
    loaded executable of exactly that program) instead of compiling; ``None``: compile as usual.

    JAX builds a ``jax.stages.Compiled`` (its C++ dispatch path) only around an executable it compiled itself, and
    its own serializer pickles that object.  fxla's disk cache stores the PJRT executable's bytes instead and, on
    a hit, lowers the same wrapper again and hands JAX the deserialized executable where it would call XLA: JAX's
    private ``jax._src.compiler.compile_or_get_cached`` is wrapped (once) to return the executable parked in this
    thread's slot and otherwise defer to JAX unchanged (other threads' jax.jit too)."""
    global _jax_compile_or_get_cached
    if _jax_compile_or_get_cached is None:
        from jax._src import compiler
        _jax_compile_or_get_cached = compiler.compile_or_get_cached
        compiler.compile_or_get_cached = _compile_or_get_precompiled
    _precompiled.executable = executable
    try:
        yield
    finally:
        _precompiled.executable = None


# -- JAX's C++ jit dispatch (fxla.runtime.cpp_dispatch) --------------------------------------------------------
def pjit(name: str, plain: Callable[..., Any], cache_miss: Callable[..., Any], capacity: int):
    """JAX's C++ dispatch object (what ``jax.jit`` returns) over ``cache_miss(*args, **kwargs) -> (result,
    fast path or None, False)``, keeping the fast paths of ``capacity`` signatures; ``plain`` under
    ``jax.disable_jit()``."""
    from jax._src import tree_util
    from jax._src.interpreters import pxla
    from jax._src.lib import _jax
    return _jax.pjit(name, plain, cache_miss, [], [], pxla.JitGlobalCppCacheKeys(), tree_util.dispatch_registry,
                     pxla.cc_shard_arg, _jax.PjitFunctionCache(capacity=capacity))


def clear_pjit(call) -> None:
    """Drop every fast path a :func:`pjit` object keeps."""
    call._clear_cache()


def fast_path_data(compiled, params: Sequence[Any], args: Sequence[Any], outs: Sequence[Any],
                   out_tree) -> Optional[Any]:
    """The :func:`pjit` fast path of a ``jax.stages.Compiled`` called as ``compiled(*params, *args)`` (arrays on
    one device) that returned the arrays ``outs``, put together as the pytree ``out_tree``; ``None`` when JAX's
    C++ call would not run it as this call ran: an executable with side effects or another argument count, an
    argument whose sharding is not the one the executable takes.  ``params`` are passed as its constants."""
    from jax._src.interpreters import pxla
    mesh = getattr(compiled, "_executable", None)
    if not isinstance(mesh, pxla.MeshExecutable) or not isinstance(mesh.unsafe_call, pxla.ExecuteReplicated):
        return None
    call = mesh.unsafe_call
    if call.ordered_effects or call.has_unordered_effects or call.has_host_callbacks:
        return None
    n = len(params) + len(args)
    if len(mesh._in_shardings) != n:
        return None
    if any(a.sharding != sharding for a, sharding in zip(args, mesh._in_shardings[len(params):])):
        return None
    return pxla.MeshExecutableFastpathData(
        mesh.xla_executable, out_tree, list(mesh._in_shardings), list(mesh._out_shardings), [o.aval for o in outs],
        [o._committed for o in outs], [i in mesh._kept_var_idx for i in range(n)], mesh._dispatch_in_layouts,
        mesh.shard_const_args(list(params)))
