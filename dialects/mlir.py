"""The one module that binds fxla to an MLIR engine: jaxlib's bundled MLIR Python bindings.

Everything else in fxla imports ``ir``, ``passmanager``, ``func``, ``hlo`` (StableHLO), ``chlo`` and
``rewrite`` from here, so swapping the engine is a change to this file alone.

Two kinds of context exist:

* :func:`fxla_context` — the StableHLO/func/chlo dialects registered *and* unregistered dialects allowed,
  so generic-form ``"fxla.*"`` ops can be created and parsed.  fxla's own verifier
  (:mod:`fxla.dialects.fxla.verifier`) checks those ops against the op table.
* :func:`strict_context` — unregistered dialects rejected; used to re-parse and verify StableHLO output with
  MLIR's real verifier before it is handed to XLA.
"""
from __future__ import annotations

import os
import re

# jaxlib's C++ logging reads its level once, when the library loads.  `import jax` sets it to 1 (warnings and
# up) first; this module may load jaxlib before jax does (fxla-opt never imports jax), so it does the same, or
# every later PJRT client creation prints INFO lines ("PjRt-IFRT device count: ...") on stderr.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import jaxlib.mlir._mlir_libs._jax_mlir_ext as _jax_mlir_ext  # noqa: E402  (registers jaxlib's upstream dialects)
from jaxlib.mlir import ir, passmanager  # noqa: F401  (re-exported)
from jaxlib.mlir.dialects import chlo, func, mhlo, sdy  # noqa: F401
from jaxlib.mlir.dialects import stablehlo as hlo  # noqa: F401
from jaxlib.mlir._mlir_libs._mlir import rewrite  # noqa: F401  (raw native rewrite API; no public wrapper in 0.10.2)
from jaxlib.mlir._mlir_libs._mlir import globals as _bindings_globals

__all__ = ["ir", "passmanager", "func", "hlo", "chlo", "rewrite", "fxla_context", "strict_context",
           "location_parts", "register_stablehlo_passes"]

_passes_registered = False
_upstream_dialects = None
_thread_pool = None
_dialect_module_registered = False


def _register_fxla_dialect_module() -> None:
    """Make the bindings find a Python module for the ``fxla`` dialect namespace (this package), once.

    Whenever the bindings wrap an op (``value.owner``, the ops a rewrite pattern receives) they look up the
    Python module of its dialect, importing ``<prefix>.<namespace>`` for every search prefix; a namespace with
    no module is never remembered, so each wrapped ``fxla.*`` op cost three failing imports (a file-system
    search each).  With ``fxla.dialects`` as a search prefix the lookup succeeds once (``fxla.dialects.fxla``
    registers no op classes, so ops stay generic ``OpView`` objects) and is cached for the rest of the process.
    """
    global _dialect_module_registered
    if not _dialect_module_registered:
        if "fxla.dialects" not in _bindings_globals.dialect_search_modules:
            _bindings_globals.append_dialect_search_prefix("fxla.dialects")
        _bindings_globals._check_dialect_module_loaded("fxla")
        _dialect_module_registered = True


def register_stablehlo_passes() -> None:
    """Register StableHLO's passes (e.g. ``chlo-legalize-to-stablehlo``) with the pass registry once."""
    global _passes_registered
    if not _passes_registered:
        hlo.register_stablehlo_passes()
        _passes_registered = True


class _Context(ir.Context):
    def __init__(self):
        # Skips ir.Context.__init__, which loads every dialect linked into jaxlib; only the ones below are
        # loaded (what JAX's own make_ir_context does, built from jaxlib alone: fxla-opt never imports jax).
        super(ir.Context, self).__init__()


def _make_context() -> ir.Context:
    """The dialects JAX's IR contexts hold: jaxlib's upstream set (func, arith, math, memref, scf, vector),
    StableHLO, CHLO, MHLO and Shardy, with one thread pool shared by every context."""
    global _upstream_dialects, _thread_pool
    if _upstream_dialects is None:
        _upstream_dialects = ir.DialectRegistry()
        _jax_mlir_ext.register_dialects(_upstream_dialects)
        _thread_pool = ir.ThreadPool()
    ctx = _Context()
    ctx.append_dialect_registry(_upstream_dialects)
    ctx.load_all_available_dialects()
    ctx.set_thread_pool(_thread_pool)
    sdy.register_dialect(ctx)
    mhlo.register_mhlo_dialect(ctx)
    chlo.register_dialect(ctx)
    hlo.register_dialect(ctx)
    return ctx


def strict_context() -> ir.Context:
    """A context with StableHLO, CHLO, func, … registered and unregistered dialects *rejected*."""
    register_stablehlo_passes()
    ctx = _make_context()
    ctx.allow_unregistered_dialects = False
    return ctx


def fxla_context() -> ir.Context:
    """A context in which generic-form ``fxla.*`` ops may be created and parsed (fxla's own context)."""
    _register_fxla_dialect_module()
    ctx = strict_context()
    ctx.allow_unregistered_dialects = True
    return ctx


_FILE_LOC = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')


def location_parts(loc: ir.Location):
    """``(file, line, col)`` of the innermost file location inside ``loc``, or ``None``.

    Works for plain file locations and for name/call-site/fused locations wrapping one.
    """
    match = _FILE_LOC.search(str(loc))
    if match is None:
        return None
    return match.group(1), int(match.group(2)), int(match.group(3))
