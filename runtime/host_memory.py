"""Keeping a training step's host memory between steps on the CPU (:func:`keep_host_memory`).

XLA CPU allocates each executable's temporary buffer (and YNNPACK its scratch) per run with ``malloc``; glibc
serves blocks that large with ``mmap`` and gives them back with ``munmap`` when they are freed, so every step
maps, page-faults (the kernel zeroes each page) and unmaps them again.  GPT-2 small's training step does that
with ~2.1 GB a step: ~490 k page faults and 0.7-6 s of system CPU time per step on this VM (the cost drifted
with the host's memory pressure), against ~4.4 s of computing (docs/performance.md, "Training").

:func:`keep_host_memory` makes the process keep and reuse that memory, as a caching allocator does (JAX on a
GPU preallocates most of the device's memory for the same reason), in two stages:

1. at the call, before JAX's CPU client starts its worker threads: one ``malloc`` arena for every thread
   (``M_ARENA_MAX = 1``), so the workers' large blocks come from the main heap;
2. once the first compiled training step on the CPU is built (:func:`retain_after_compile`, called by
   ``fxla.compile_step``; after the compile, whose transient memory is given back first with ``malloc_trim``):
   no ``mmap``'d blocks and no trimming (``M_MMAP_MAX = 0``, ``M_TRIM_THRESHOLD`` = the largest int), so freed
   blocks stay in the heap for the next step.  glibc reuses them when the next step's blocks fit the freed space;
   it does not promise to: a small block landing there makes the heap grow again (seen under load,
   tests/test_host_memory.py).

The settings are the whole process's (glibc has no per-library allocator), which is why this is a call the user
makes, not a default: the process's resident memory stays at its peak (GPT-2 small: 3.96 GB after a step against
2.85 GB; the peak is the same).  :func:`release_host_memory` restores glibc's defaults and trims the heap.
Only glibc's ``malloc`` (Linux) has these settings; elsewhere :class:`HostMemoryError` says so.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Optional

from fxla.base import jax_private
from fxla.base.errors import FxlaError

__all__ = ["HostMemoryError", "keep_host_memory", "release_host_memory", "retain_after_compile", "state"]

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_MAX, _M_ARENA_MAX = -1, -4, -8
_DEFAULT_TRIM_THRESHOLD = 128 * 1024
_DEFAULT_MMAP_MAX = 65536
_INT_MAX = 2 ** 31 - 1

_state = {"requested": False, "retained": False}


class HostMemoryError(FxlaError):
    """:func:`keep_host_memory` cannot take effect in this process."""


def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


def _mallopt(libc, param: int, value: int) -> None:
    if libc.mallopt(ctypes.c_int(param), ctypes.c_int(value)) != 1:
        raise HostMemoryError(f"glibc refused mallopt({param}, {value})\nfix: run without fxla.runtime."
                              "keep_host_memory()")


def keep_host_memory() -> None:
    """Keep and reuse the host memory of compiled training steps on the CPU from step to step instead of mapping
    and page-faulting it afresh each step (module docstring).  Call it first, right after ``import fxla`` and
    before anything starts JAX's CPU client (compiling, ``jax.devices()``, placing an array): later, JAX's worker
    threads already have their own ``malloc`` arenas and the setting would not reach them, so that is an error."""
    libc = _libc()
    if libc is None:
        raise HostMemoryError("fxla.runtime.keep_host_memory() needs glibc's malloc (Linux)\nwhy: it sets glibc's "
                              "mallopt parameters; this platform's allocator has none\nfix: leave it out here")
    if _state["requested"]:
        return
    if jax_private.backends_initialized():   # (a JAX backend, and so its thread pool, exists already)
        raise HostMemoryError("fxla.runtime.keep_host_memory() was called after JAX's CPU client started\nwhy: "
                              "its worker threads already have their own malloc arenas, which the setting "
                              "would not reach\nfix: call it right after `import fxla`, before compiling or "
                              "placing anything")
    _mallopt(libc, _M_ARENA_MAX, 1)
    _state["requested"] = True


def retain_after_compile() -> bool:
    """Stage 2 (module docstring), once, where :func:`keep_host_memory` was called: give back what the compile
    left, then keep every freed block.  Whether the process now keeps its memory."""
    if not _state["requested"] or _state["retained"]:
        return _state["retained"]
    libc = _libc()
    libc.malloc_trim(ctypes.c_size_t(0))
    _mallopt(libc, _M_MMAP_MAX, 0)
    _mallopt(libc, _M_TRIM_THRESHOLD, _INT_MAX)
    _state["retained"] = True
    return True


def release_host_memory() -> None:
    """Undo :func:`keep_host_memory`: glibc's default ``mmap`` and trimming thresholds, and the heap trimmed
    (the single arena stays: arenas cannot be added back to running threads)."""
    libc = _libc()
    if libc is None or not _state["requested"]:
        return
    _mallopt(libc, _M_MMAP_MAX, _DEFAULT_MMAP_MAX)
    _mallopt(libc, _M_TRIM_THRESHOLD, _DEFAULT_TRIM_THRESHOLD)
    libc.malloc_trim(ctypes.c_size_t(0))
    _state.update(requested=False, retained=False)


def state() -> Optional[str]:
    """``None`` (glibc's defaults), ``"requested"`` (stage 1) or ``"retained"`` (stage 2)."""
    return "retained" if _state["retained"] else "requested" if _state["requested"] else None
