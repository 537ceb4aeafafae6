"""fxla's on-disk cache of compiled executables (so a second process does not recompile).

fxla keeps its own cache, per module (``cache_dir=``) or per process (:func:`set_cache_dir`), instead of
turning on JAX's persistent compilation cache, which is a process-wide setting of the user's JAX (and does not
cover the partitioned programs fxla compiles with ``Client.compile_and_load``).  One file per executable, named
by a SHA-256 of its :class:`EntryKey`:

    the StableHLO text (or bytecode) + platform + device kind + platform version + number of devices
    + partitioning options + jax and jaxlib versions + this file format's version.

File format (nothing in it is ever unpickled or evaluated)::

    b"FXLAEXE3"  | 8-byte big-endian length N | N bytes of JSON header | payload

The JSON header records the entry's whole key (:class:`EntryKey` as a dict), the payload's size and SHA-256;
the payload is the serialized PJRT executable itself (``Client.serialize_executable`` /
``LoadedExecutable.serialize()``: XLA's own protobuf, no Python objects).  fxla rebuilds everything else (the
argument and result structure) from its own data.  An entry is used only if

* the folder is a directory owned by the current user and not writable by group or others (fxla creates it
  ``0700``); otherwise the whole cache is skipped with a :class:`CacheWarning` and programs compile normally;
* the file is a regular file (opened with ``O_NOFOLLOW | O_NONBLOCK``: a symlink, FIFO or device is refused
  without reading it) no larger than :data:`MAX_ENTRY_BYTES`;
* its header parses, its recorded key equals the key being looked up (an entry copied under another program's
  name is refused), and the payload's size and checksum match.

Anything else is ignored with a :class:`CacheWarning` and recompiled (and rewritten).  Hits, misses and writes
are logged at DEBUG to logger ``fxla.cache`` (:mod:`fxla.base.logs`), with the entry's file.  Files are written
atomically (a temporary file in the same folder, then ``os.replace``), so a crash or a concurrent writer never
leaves a half-written entry under the final name.  What this does not protect against: someone who can write
files as *you* (the folder's owner) can plant an executable, which is native code; keep the cache folder as
private as your home directory.  See docs/runtime.md ("On-disk executable cache", "Security").
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import tempfile
import warnings
from dataclasses import asdict, dataclass
from typing import Optional, Union

import jax
import jaxlib

from fxla.base.errors import FxlaError
from fxla.base.logs import CACHE as log

MAGIC = b"FXLAEXE3"
_FORMAT = 3     # 3: raw PJRT executable bytes behind a JSON header (no pickle); 2 held a pickled jax Compiled
SUFFIX = ".fxlaexe"
MAX_ENTRY_BYTES = 1 << 30        # an entry larger than this (1 GiB) is not read
_MAX_HEADER_BYTES = 1 << 16


class CacheWarning(UserWarning):
    """A cache entry or folder was unusable (corrupt, truncated, from another program or build, unsafe
    permissions) and was ignored; the program was compiled normally."""


class CacheError(FxlaError):
    """The cache directory cannot be used."""


@dataclass
class CompileStats:
    """Process-wide counters (see :func:`fxla.runtime.compile_stats`)."""

    compiles: int = 0        # XLA compilations actually run
    disk_hits: int = 0       # executables deserialized from a cache directory instead
    disk_misses: int = 0     # lookups that found no (usable) entry
    disk_writes: int = 0     # entries written
    disk_errors: int = 0     # entries ignored because they were corrupt, foreign or unsafe

    def as_dict(self):
        return asdict(self)


@dataclass(frozen=True)
class EntryKey:
    """Everything a cache entry is valid for; stored in the entry and compared on every load."""

    program_sha256: str      # of the StableHLO the entry was compiled from (without source locations)
    fingerprint: str         # platform, device kind, platform version, devices, partitioning, parameter order
    jax: str = jax.__version__
    jaxlib: str = jaxlib.__version__
    format: int = _FORMAT

    @classmethod
    def of(cls, program: Union[str, bytes], fingerprint: str) -> "EntryKey":
        data = program.encode() if isinstance(program, str) else bytes(program)
        return cls(hashlib.sha256(data).hexdigest(), fingerprint)

    def digest(self) -> str:
        """The entry's file name (without :data:`SUFFIX`)."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()


STATS = CompileStats()
_DEFAULT = object()          # get_cache_dir(): the user's cache folder (default_cache_dir()) until set otherwise
_default_dir: object = _DEFAULT


def default_cache_dir() -> str:
    """The user's fxla cache folder, after the XDG base directory convention: ``$XDG_CACHE_HOME/fxla`` when that
    variable holds an absolute path, else ``~/.cache/fxla``."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fxla")


def set_cache_dir(path: Optional[Union[str, os.PathLike]]) -> None:
    """Use ``path`` as the default on-disk executable cache of every later compilation (``None`` turns the disk
    cache off).  Until this is called the default is :func:`default_cache_dir` (on: a second process with the
    same program deserializes it instead of compiling again).

    ``fxla.compile(..., cache_dir=...)`` overrides it per module.
    """
    global _default_dir
    _default_dir = None if path is None else os.fspath(path)


def get_cache_dir() -> Optional[str]:
    """The default on-disk executable cache directory: :func:`set_cache_dir`'s, else :func:`default_cache_dir`
    (``None``: no disk cache)."""
    return default_cache_dir() if _default_dir is _DEFAULT else _default_dir


_warned_default = False


def warn_default_unusable(err: Exception) -> None:
    """The default folder cannot be created: say so once per process and go on without the disk cache."""
    global _warned_default
    if not _warned_default:
        _warned_default = True
        warnings.warn(f"fxla: compiling without the on-disk cache: {err}", CacheWarning, stacklevel=4)


def using_default_dir() -> bool:
    """Whether :func:`get_cache_dir` is the user's folder that nobody chose (a failure to create it is then a
    warning, not an error)."""
    return _default_dir is _DEFAULT


def _unsafe_folder(path: str) -> Optional[str]:
    """Why ``path`` must not be used as a cache folder, or ``None`` when it is safe."""
    try:
        info = os.stat(path)
    except OSError as err:
        return f"it cannot be inspected ({err})"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a directory"
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        return f"it is owned by user id {info.st_uid}, not by you (user id {os.geteuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"it is writable by {'others' if info.st_mode & stat.S_IWOTH else 'its group'} " \
               f"(mode {stat.S_IMODE(info.st_mode):o})"
    return None


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


class DiskCache:
    """A folder of serialized executables; see the module docstring.

    ``usable`` is False when the folder is unsafe (another user's, or writable by group/others): then
    :meth:`load` finds nothing and :meth:`store` writes nothing (warned about once, at construction).
    """

    def __init__(self, path: Union[str, os.PathLike]):
        self.path = os.fspath(path)
        try:
            os.makedirs(self.path, mode=0o700, exist_ok=True)
        except OSError as err:
            raise CacheError(f"cannot use '{self.path}' as an fxla cache directory: {err}\n"
                             f"fix: pass a writable folder as cache_dir") from None
        why = _unsafe_folder(self.path)
        self.usable = why is None
        if not self.usable:
            STATS.disk_errors += 1
            warnings.warn(f"fxla: not using the cache directory {self.path}: {why}; compiling without the "
                          f"disk cache\nwhy: another user could plant executables (native code) there\n"
                          f"fix: use a folder you own with `chmod 700 {self.path}`, or another cache_dir",
                          CacheWarning, stacklevel=4)

    def file(self, key: EntryKey) -> str:
        return os.path.join(self.path, key.digest() + SUFFIX)

    def load(self, key: EntryKey) -> Optional[bytes]:
        """The executable stored under ``key``, or ``None`` (missing, or unusable: warned about, then ignored)."""
        if not self.usable:
            return None
        path = self.file(key)
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            STATS.disk_misses += 1
            if log.isEnabledFor(logging.DEBUG):
                log.debug("on-disk cache miss: no entry %s", path)
            return None
        except OSError as err:   # ELOOP: a symlink
            return self.corrupt(key, f"it cannot be opened as a regular file ({err.strerror or err})")
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                return self.corrupt(key, "it is not a regular file")
            if info.st_size > MAX_ENTRY_BYTES:
                return self.corrupt(key, f"it is larger ({info.st_size} bytes) than fxla reads "
                                         f"({MAX_ENTRY_BYTES} bytes)")
            blob = f.read(info.st_size + 1)
        payload = self._unpack(key, blob)
        if payload is not None and log.isEnabledFor(logging.DEBUG):
            log.debug("on-disk cache hit: %s (%d bytes)", path, len(payload))
        return payload

    def _unpack(self, key: EntryKey, blob: bytes) -> Optional[bytes]:
        head = len(MAGIC) + 8
        if len(blob) < head or blob[:len(MAGIC)] != MAGIC:
            return self.corrupt(key, "it does not start with fxla's header (truncated, from another fxla "
                                     "version, or not an fxla entry)")
        size = int.from_bytes(blob[len(MAGIC):head], "big")
        if size > _MAX_HEADER_BYTES or head + size > len(blob):
            return self.corrupt(key, "its header length is out of range (truncated or modified)")
        try:
            header = json.loads(blob[head:head + size].decode("utf-8"))
            recorded, payload_size, payload_sha = header["key"], header["payload_size"], header["payload_sha256"]
        except (ValueError, KeyError, TypeError, RecursionError):
            return self.corrupt(key, "its header is not fxla's JSON (modified)")
        if recorded != asdict(key):
            return self.corrupt(key, "it was compiled for another program, device or version (its recorded "
                                     "key differs from this program's)")
        payload = blob[head + size:]
        if len(payload) != payload_size or hashlib.sha256(payload).hexdigest() != payload_sha:
            return self.corrupt(key, "its checksum does not match (truncated or modified)")
        return payload

    def corrupt(self, key: EntryKey, why: str) -> None:
        STATS.disk_errors += 1
        STATS.disk_misses += 1
        if log.isEnabledFor(logging.DEBUG):
            log.debug("on-disk cache miss: entry %s ignored: %s", self.file(key), why)
        warnings.warn(f"fxla: ignoring cache entry {self.file(key)}: {why}; recompiling and rewriting it",
                      CacheWarning, stacklevel=3)
        return None

    def store(self, key: EntryKey, payload: bytes) -> None:
        """Write ``payload`` under ``key`` atomically; a failure to write only warns (the cache is optional)."""
        if not self.usable:
            return
        header = json.dumps({"key": asdict(key), "payload_size": len(payload),
                             "payload_sha256": hashlib.sha256(payload).hexdigest()}, sort_keys=True).encode()
        blob = MAGIC + len(header).to_bytes(8, "big") + header + payload
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
        if log.isEnabledFor(logging.DEBUG):
            log.debug("on-disk cache write: %s (%d bytes)", self.file(key), len(blob))

    def entries(self):
        return sorted(n for n in os.listdir(self.path) if n.endswith(SUFFIX) and not n.startswith("."))
