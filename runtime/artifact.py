"""Portable artifact directories: StableHLO portable bytecode + JSON metadata + opaque data files.

Layout of an artifact directory::

    metadata.json        {"format": "fxla.artifact", "version": 1, ..., "files": {name: {sha256, size}}}
    program.mlirbc       StableHLO portable artifact (stablehlo.serialize_portable_artifact_str)
    <other files>        e.g. weights.bin (written by the API layer; opaque here)

The directory is written under a temporary name next to ``path`` and renamed into place, so a reader never
sees half an artifact.  :func:`read_artifact` checks the format, every listed file's size and SHA-256, and
raises :class:`ArtifactError` (with ``fix:``) on anything missing, truncated or modified.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from typing import Dict, Tuple

from fxla.errors import FxlaError

FORMAT = "fxla.artifact"
VERSION = 1
METADATA = "metadata.json"
PROGRAM = "program.mlirbc"


class ArtifactError(FxlaError):
    """An artifact directory that cannot be written or loaded."""


def _bad(path: str, what: str, fix: str = "re-export the model with fxla.export") -> ArtifactError:
    return ArtifactError(f"cannot load the fxla artifact at '{path}': {what}\nfix: {fix}")


def portable_bytecode(text: str) -> Tuple[bytes, str]:
    """StableHLO ``text`` as a portable artifact (and the StableHLO version it targets)."""
    from jax.interpreters import mlir as jax_mlir
    from jaxlib.mlir.dialects import stablehlo

    version = stablehlo.get_current_version()
    with jax_mlir.make_ir_context():
        return stablehlo.serialize_portable_artifact_str(text, version), version


def write_artifact(path, metadata: dict, files: Dict[str, bytes]) -> None:
    """Write ``files`` (name -> bytes, including :data:`PROGRAM`) and ``metadata`` (plus hashes) to ``path``.

    An existing artifact at ``path`` is replaced; any other existing file or non-empty folder is refused.
    """
    path = os.path.abspath(os.fspath(path))
    if os.path.exists(path):
        if not os.path.isdir(path) or (os.listdir(path) and not os.path.exists(os.path.join(path, METADATA))):
            raise ArtifactError(f"cannot export to '{path}': it exists and is not an fxla artifact\n"
                                f"fix: choose a new path or remove it")
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    meta = dict(metadata, format=FORMAT, version=VERSION,
                files={name: {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
                       for name, data in files.items()})
    tmp = tempfile.mkdtemp(prefix=".fxla-export-", dir=parent)
    try:
        for name, data in files.items():
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
        with open(os.path.join(tmp, METADATA), "w") as f:
            json.dump(meta, f, indent=1, allow_nan=False)
        if os.path.exists(path):
            old = tempfile.mkdtemp(prefix=".fxla-old-", dir=parent)
            os.replace(path, os.path.join(old, "a"))
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def read_artifact(path) -> Tuple[dict, Dict[str, bytes]]:
    """``(metadata, files)`` of the artifact at ``path``, every file checked against its recorded hash."""
    path = os.fspath(path)
    meta_file = os.path.join(path, METADATA)
    if not os.path.isfile(meta_file):
        raise _bad(path, f"there is no {METADATA} (not an artifact directory, or an incomplete copy)",
                   "pass the folder fxla.export wrote")
    try:
        with open(meta_file, "rb") as f:
            meta = json.loads(f.read().decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise _bad(path, f"{METADATA} is not valid JSON ({err})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise _bad(path, f"{METADATA} does not describe an {FORMAT}")
    if meta.get("version") != VERSION:
        raise _bad(path, f"it has format version {meta.get('version')!r}; this fxla reads version {VERSION}",
                   "export it again with this version of fxla")
    listed = meta.get("files")
    if not isinstance(listed, dict) or PROGRAM not in listed:
        raise _bad(path, f"{METADATA} lists no {PROGRAM}")
    files = {}
    for name, entry in listed.items():
        if not isinstance(name, str) or os.path.basename(name) != name or name in (METADATA, "", ".", ".."):
            raise _bad(path, f"{METADATA} lists a bad file name {name!r}")
        file = os.path.join(path, name)
        try:
            with open(file, "rb") as f:
                data = f.read()
        except OSError as err:
            raise _bad(path, f"{name} cannot be read ({err.strerror})") from None
        if not isinstance(entry, dict) or len(data) != entry.get("size"):
            raise _bad(path, f"{name} has {len(data)} bytes but {METADATA} records {entry.get('size')!r} "
                             f"(truncated or replaced)")
        if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
            raise _bad(path, f"{name} does not match the SHA-256 in {METADATA} (modified or corrupt)")
        files[name] = data
    return meta, files
