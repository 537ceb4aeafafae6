"""fxla's on-disk cache of compiled executables (so a second process does not recompile).

fxla keeps its own cache, per module (``cache_dir=``) or per process (:func:`set_cache_dir`), instead of
turning on JAX's persistent compilation cache, which is a process-wide setting of the user's JAX (and does not
cover the partitioned programs fxla compiles with ``Client.compile_and_load``).  One file per executable, named
by a SHA-256 of

    the StableHLO text (or bytecode) + platform + device kind + platform version + number of devices
    + partitioning options + jaxlib version + this file format's version,

holding the serialized executable (single device: JAX's ``serialize_executable`` of the ``Compiled``;
partitioned: ``LoadedExecutable.serialize()``) behind a magic header and a SHA-256 of the payload.  Files are written
atomically (a temporary file in the same folder, then ``os.replace``), so a crash or a concurrent writer never
leaves a half-written entry under the final name.  An entry that is unreadable, fails its checksum or that
PJRT refuses to deserialize is ignored with a :class:`CacheWarning` and recompiled (and rewritten).
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from dataclasses import asdict, dataclass
from typing import Optional, Union

import jaxlib

from fxla.errors import FxlaError

MAGIC = b"FXLAEXE1"
_FORMAT = "2"   # 2: single-device entries hold a serialized jax Compiled
SUFFIX = ".fxlaexe"


class CacheWarning(UserWarning):
    """A cache entry was unusable (corrupt, truncated, or from another build) and was recompiled."""


class CacheError(FxlaError):
    """The cache directory cannot be used."""


@dataclass
class CompileStats:
    """Process-wide counters (see :func:`fxla.runtime.compile_stats`)."""

    compiles: int = 0        # XLA compilations actually run
    disk_hits: int = 0       # executables deserialized from a cache directory instead
    disk_misses: int = 0     # lookups that found no (usable) entry
    disk_writes: int = 0     # entries written
    disk_errors: int = 0     # entries ignored because they were corrupt

    def as_dict(self):
        return asdict(self)


STATS = CompileStats()
_default_dir: Optional[str] = None


def set_cache_dir(path: Optional[Union[str, os.PathLike]]) -> None:
    """Use ``path`` as the default on-disk executable cache of every later compilation (``None`` turns it off).

    ``fxla.compile(..., cache_dir=...)`` overrides it per module.
    """
    global _default_dir
    _default_dir = None if path is None else os.fspath(path)


def get_cache_dir() -> Optional[str]:
    """The default on-disk executable cache directory set by :func:`set_cache_dir` (``None``: no disk cache)."""
    return _default_dir


def cache_key(program: Union[str, bytes], fingerprint: str) -> str:
    h = hashlib.sha256()
    h.update(f"fxla-exe/{_FORMAT}/jaxlib-{jaxlib.__version__}/{fingerprint}\0".encode())
    h.update(program.encode() if isinstance(program, str) else bytes(program))
    return h.hexdigest()


class DiskCache:
    """A folder of serialized executables; see the module docstring."""

    def __init__(self, path: Union[str, os.PathLike]):
        self.path = os.fspath(path)
        try:
            os.makedirs(self.path, exist_ok=True)
        except OSError as err:
            raise CacheError(f"cannot use '{self.path}' as an fxla cache directory: {err}\n"
                             f"fix: pass a writable folder as cache_dir") from None

    def file(self, key: str) -> str:
        return os.path.join(self.path, key + SUFFIX)

    def load(self, key: str) -> Optional[bytes]:
        """The payload stored under ``key``, or ``None`` (missing or corrupt: warned about, then ignored)."""
        try:
            with open(self.file(key), "rb") as f:
                blob = f.read()
        except FileNotFoundError:
            STATS.disk_misses += 1
            return None
        except OSError as err:
            return self.corrupt(key, f"it cannot be read ({err})")
        head = len(MAGIC) + 32
        if len(blob) < head or blob[:len(MAGIC)] != MAGIC:
            return self.corrupt(key, "it does not start with fxla's header (truncated or not an fxla entry)")
        payload = blob[head:]
        if hashlib.sha256(payload).digest() != blob[len(MAGIC):head]:
            return self.corrupt(key, "its checksum does not match (truncated or modified)")
        return payload

    def corrupt(self, key: str, why: str) -> None:
        STATS.disk_errors += 1
        STATS.disk_misses += 1
        warnings.warn(f"fxla: ignoring cache entry {self.file(key)}: {why}; recompiling and rewriting it",
                      CacheWarning, stacklevel=3)
        return None

    def store(self, key: str, payload: bytes) -> None:
        """Write ``payload`` under ``key`` atomically; a failure to write only warns (the cache is optional)."""
        blob = MAGIC + hashlib.sha256(payload).digest() + payload
        try:
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=SUFFIX, dir=self.path)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(blob)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.file(key))
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
        except OSError as err:
            warnings.warn(f"fxla: could not write cache entry in {self.path}: {err}", CacheWarning, stacklevel=3)
            return
        STATS.disk_writes += 1

    def entries(self):
        return sorted(n for n in os.listdir(self.path) if n.endswith(SUFFIX) and not n.startswith("."))
