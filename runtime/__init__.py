"""Runtime stage: PJRT devices, compiling verified StableHLO, device buffers and execution, the on-disk
executable cache, sharding (Shardy/SPMD), portable artifacts and JAX interop.

It imports jax and jaxlib throughout; JAX's private API only through :mod:`fxla.base.jax_private`.  (The
dialects import jaxlib's MLIR bindings, the API layer jax's public API; docs/runtime.md lists who imports what
and why.)  It never imports the frontend or the lowering: it receives StableHLO text and metadata.
"""
from .devices import DeviceError, resolve_device
from .buffers import InputError, from_device, to_device
from .cache import CacheError, CacheWarning, get_cache_dir, set_cache_dir
from .executable import CompileError, Executable, compile_stablehlo
from .sharding import Mesh, Partitioning, ShardingError
from .artifact import ArtifactError
from .jax_interop import InteropError
from .host_memory import HostMemoryError, keep_host_memory, release_host_memory


def compile_stats() -> dict:
    """Process-wide counters: ``compiles`` (XLA compilations run), ``disk_hits`` / ``disk_misses`` /
    ``disk_writes`` / ``disk_errors`` (the on-disk executable cache)."""
    from .cache import STATS
    return STATS.as_dict()


__all__ = ["DeviceError", "resolve_device", "to_device", "from_device", "InputError", "CompileError",
           "Executable", "compile_stablehlo", "CacheError", "CacheWarning", "set_cache_dir", "get_cache_dir",
           "compile_stats", "Mesh", "Partitioning", "ShardingError", "ArtifactError", "InteropError",
           "HostMemoryError", "keep_host_memory", "release_host_memory"]
