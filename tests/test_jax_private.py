"""fxla.base.jax_private: the one module naming JAX's and jaxlib's private API.

A jax/jaxlib upgrade that moves or renames one of those names fails here, in one clear test, instead of deep in
the runtime; and no other fxla module may name them (so that upgrade touches one file)."""
from __future__ import annotations

import importlib
import pathlib
import re
import subprocess
import sys
import tomllib

import jax
import jax.numpy as jnp
import pytest

from fxla.base import jax_private

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: what only fxla/base/jax_private.py may write: jax's private modules, jaxlib's native ones and xla_client, and
#: the private attributes of JAX objects fxla reads
PRIVATE = re.compile(r"jax\._src|jaxlib\._jax|_mlir_libs|xla_client|\bpxla\b|MeshExecutable|xla_executable"
                     r"|\._executable\b|[\"']_call[\"']|_clear_cache|\._committed|_in_shardings"
                     r"|_out_shardings|_kept_var_idx|_dispatch_in_layouts|_check_dialect_module_loaded"
                     r"|compile_or_get_cached")


def _resolve(module: str, path: str):
    value = importlib.import_module(module)
    for part in path.split("."):
        value = getattr(value, part)
    return value


@pytest.mark.parametrize("module,path", jax_private.NAMES, ids=[f"{m}:{p}" for m, p in jax_private.NAMES])
def test_every_private_name_resolves_in_the_installed_jaxlib(module, path):
    assert _resolve(module, path) is not None


def test_the_private_attributes_of_jax_objects_exist():
    f = jax.jit(lambda x, c: x + c)
    x, c = jnp.ones(3), jnp.ones(3)
    compiled = f.lower(x, c).compile()
    compiled(x, c)                                    # a called Compiled holds its C++ call object
    assert jax_private.compiled_call(compiled) is compiled._call
    mesh = compiled._executable
    for name in ("xla_executable", "unsafe_call", "_in_shardings", "_out_shardings", "_kept_var_idx",
                 "_dispatch_in_layouts", "shard_const_args"):
        assert hasattr(mesh, name), name
    for name in ("ordered_effects", "has_unordered_effects", "has_host_callbacks"):
        assert hasattr(mesh.unsafe_call, name), name
    assert hasattr(x, "_committed")
    assert jax_private.loaded_executable(compiled) is mesh.xla_executable
    assert jax_private.serialize_executable(jax_private.loaded_executable(compiled))
    assert (jax_private.call_compiled_without_jit(compiled, x, c)[0] == 2).all()


def test_a_pjit_dispatcher_records_fast_paths_and_clears_them():
    compiled = jax.jit(lambda x: x * 2).lower(jnp.ones(2)).compile()
    misses = []

    def miss(x):
        out = compiled(x)
        misses.append(x)
        return out, jax_private.fast_path_data(compiled, [], [x], [out], jax.tree_util.tree_structure(out)), False

    call = jax_private.pjit("double", lambda x: x * 2, miss, 8)
    x = jnp.arange(2.0)
    assert (call(x) == x * 2).all() and (call(x) == x * 2).all()
    assert len(misses) == 1                           # the second call ran from C++
    jax_private.clear_pjit(call)
    call(x)
    assert len(misses) == 2


def test_the_spmd_compile_options_and_device_list():
    options = jax_private.spmd_compile_options([jax.devices()[0].id], {"xla_allow_excess_precision": False})
    assert options.num_partitions == 1 and options.executable_build_options.use_shardy_partitioner


def test_importing_it_does_not_import_jax():
    code = "import sys; import fxla.base.jax_private; assert 'jax' not in sys.modules, 'jax imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd="/")


def _fxla_files():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for folder in sorted(set(config["tool"]["setuptools"]["package-dir"].values())):
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_no_other_fxla_module_names_them():
    files = list(_fxla_files())
    assert ROOT / "base" / "jax_private.py" in files and ROOT / "runtime" / "cpp_dispatch.py" in files
    offenders = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
                 for path in files if path != ROOT / "base" / "jax_private.py"
                 for n, line in enumerate(path.read_text().splitlines(), 1) if PRIVATE.search(line)]
    assert offenders == [], "name JAX's private API in fxla/base/jax_private.py only:\n" + "\n".join(offenders)
