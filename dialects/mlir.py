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
import threading

# jaxlib's C++ logging reads its level once, when the library loads.  `import jax` sets it to 1 (warnings and
# up) first; this module may load jaxlib before jax does (fxla-opt never imports jax), so it does the same, or
# every later PJRT client creation prints INFO lines ("PjRt-IFRT device count: ...") on stderr.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

from fxla.base import jax_private  # noqa: E402  (jaxlib's private MLIR modules; loaded first, as before)
from fxla.base.jax_private import rewrite  # noqa: F401,E402  (re-exported: MLIR's native rewrite API)
from jaxlib.mlir import ir, passmanager  # noqa: F401,E402  (re-exported)
from jaxlib.mlir.dialects import chlo, func, mhlo, sdy  # noqa: F401,E402
from jaxlib.mlir.dialects import stablehlo as hlo  # noqa: F401,E402

from fxla.base.errors import FxlaError  # noqa: E402

__all__ = ["ir", "passmanager", "func", "hlo", "chlo", "rewrite", "fxla_context", "strict_context",
           "location_parts", "register_stablehlo_passes", "NestingError", "parse_untrusted",
           "read_untrusted_bytecode", "check_nesting"]

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
        jax_private.add_dialect_module("fxla.dialects", "fxla")
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
        jax_private.jax_mlir_ext.register_dialects(_upstream_dialects)
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


# ---------------------------------------------------------------------------------------------------------------
# Parsing untrusted MLIR (fxla-opt's input, the program of an artifact fxla.load reads)
#
# MLIR's parsers, printer and verifier recurse once per nesting level of regions, types and attributes, on the
# calling thread's stack: a 3,000-deep region nest or a 20,000-deep ``tuple<...>`` overflows the 8 MiB main
# stack and kills the process with SIGSEGV.  So untrusted text is first scanned for its bracket depth (cheap,
# one regex pass) and refused past MAX_NESTING, and parsing runs on a thread with a PARSE_STACK stack, far more
# than MAX_NESTING levels need.  Bytecode cannot be scanned before it is read: it is read on that thread, printed
# there, and the printed text is held to the same limit, so a module that comes back is shallow enough for
# every later pass, print and verification on an ordinary stack.

MAX_NESTING = 1000
"""The deepest bracket nesting (``( [ { <`` together) accepted in untrusted MLIR.  Real programs stay below 50."""

PARSE_STACK = 512 * 1024 * 1024
"""The stack size of the thread untrusted MLIR is parsed on (virtual memory; only the pages used are touched)."""

BYTECODE_STACK_PER_BYTE = 256
"""Bytecode encodes one more level of ``tuple<...>`` in about 6 bytes, and reading plus printing it takes under
1.5 KiB of stack: bytecode is read on a stack of this many bytes per byte of input (at least PARSE_STACK, at
most BYTECODE_STACK_MAX), so any nesting it can encode fits."""

BYTECODE_STACK_MAX = 4 * 1024 * 1024 * 1024

BYTECODE_MAGIC = b"ML\xefR"
"""The first four bytes of MLIR bytecode (what ``fxla.export`` writes, as a StableHLO portable artifact)."""

_NESTING_TOKENS = re.compile(rb'"(?:[^"\\\n]|\\.)*"|//[^\n]*|->|[(\[{<]|[)\]}>]')
_OPENERS = frozenset(b"([{<")


class NestingError(FxlaError):
    """MLIR nested deeper than :data:`MAX_NESTING` (MLIR's recursive parser would overflow the stack)."""

    def __init__(self, message: str, line: int = 0, col: int = 0):
        super().__init__(message)
        self.line, self.col = line, col


def nesting_depth(text) -> tuple:
    """``(depth, offset)``: the deepest bracket nesting of MLIR ``text`` (str or bytes; strings and ``//``
    comments skipped, ``->`` not a bracket) and the offset where it first passes :data:`MAX_NESTING` (or ``-1``)."""
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else bytes(text)
    depth = deepest = 0
    for match in _NESTING_TOKENS.finditer(data):
        token = match.group()
        if len(token) != 1:
            continue
        if token[0] in _OPENERS:
            depth += 1
            if depth > deepest:
                deepest = depth
                if depth > MAX_NESTING:
                    return depth, match.start()
        elif depth:
            depth -= 1
    return deepest, -1


def check_nesting(text) -> None:
    """Raise :class:`NestingError` (with the 1-based line and column) if ``text`` nests past :data:`MAX_NESTING`."""
    depth, offset = nesting_depth(text)
    if offset < 0:
        return
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else bytes(text)
    line = data.count(b"\n", 0, offset) + 1
    col = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    raise NestingError(f"brackets nest more than {MAX_NESTING} deep (regions, types or attributes); MLIR's "
                       "recursive parser could overflow the stack on it", line, col)


def on_parse_stack(fn, *args, stack: int = PARSE_STACK):
    """``fn(*args)`` on a thread with a ``stack``-byte stack; its result, or its exception re-raised."""
    box = {}

    def run():
        try:
            box["value"] = fn(*args)
        except BaseException as err:  # noqa: BLE001  (handed to the caller)
            box["error"] = err

    with _STACK_LOCK:
        old = threading.stack_size(stack)
        try:
            worker = threading.Thread(target=run, name="fxla-mlir-parse", daemon=True)
            worker.start()
        finally:
            threading.stack_size(old)
    worker.join()
    if "error" in box:
        raise box.pop("error")
    return box["value"]


_STACK_LOCK = threading.Lock()     # threading.stack_size is process-wide: set it only around our own start()


def parse_untrusted(text: str, context: ir.Context) -> ir.Module:
    """``ir.Module.parse(text)`` in ``context`` for text from outside fxla: :class:`NestingError` past
    :data:`MAX_NESTING`, MLIR's ``MLIRError`` for anything else it rejects; never a crash."""
    check_nesting(text)

    def parse():
        with context:
            return ir.Module.parse(text)
    return on_parse_stack(parse)


def read_untrusted_bytecode(data: bytes, read):
    """``read(data)`` (a bytecode reader returning a module) run on the parse stack, for bytes from outside fxla.

    Refuses (``ValueError``) anything but MLIR bytecode, and (:class:`NestingError`) a module nested past
    :data:`MAX_NESTING` once read.  Returns ``(module, text)``: the module and its printed form."""
    data = bytes(data)
    if not data.startswith(BYTECODE_MAGIC):
        raise ValueError(f"not MLIR bytecode (it starts {data[:4]!r}, not {BYTECODE_MAGIC!r})")

    def load():
        module = read(data)
        text = module.operation.get_asm(enable_debug_info=False)
        check_nesting(text)
        return module, text
    stack = min(max(PARSE_STACK, BYTECODE_STACK_PER_BYTE * len(data)), BYTECODE_STACK_MAX)
    return on_parse_stack(load, stack=stack)
