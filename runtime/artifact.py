"""Portable artifact directories: StableHLO portable bytecode + JSON metadata + opaque data files.

Layout of an artifact directory::

    metadata.json        {"format": "fxla.artifact", "version": 3, ..., "files": {name: {sha256, size}},
                          "metadata_sha256": the SHA-256 of the rest of it (:func:`metadata_digest`)}
    program.mlirbc       StableHLO portable artifact (stablehlo.serialize_portable_artifact_str)
    <other files>        e.g. weights.bin (written by the API layer; opaque here)

Writing never deletes or overwrites what fxla did not write: the artifact is written under a temporary name next
to ``path`` and renamed into place; an existing folder is replaced only when it is an fxla artifact (its
``metadata.json`` says so and it holds nothing but the files that metadata lists) and the caller passed
``overwrite=True``, and then only those files are removed.  Reading opens only regular files inside the folder
(no symlinks, FIFOs or devices), never more bytes than recorded, and checks the format, every listed file's size
and SHA-256; anything else is an :class:`ArtifactError` (with ``fix:``).  ``metadata.json`` itself (the Dims and
constraints of a polymorphic program, the guards, every spec) is bound to those hashes by its own digest
(:func:`check_metadata_digest`, which the loader calls once it has checked every field, so a malformed field gets
its own message first).  The hashes detect corruption and accidental edits, not a malicious author: loading an
artifact runs its program (see docs/runtime.md, Security).

The program's ``@main`` carries the role of every argument and result (``fxla.role``: ``input``,
``param:<name>``, ``output``, ``input:<k>``, ``attribute:<name>``; :func:`annotate_roles`), so a loader takes
the program's own interface, not the metadata, as the source of truth (:func:`program_interface`).
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from fxla.base.errors import FxlaError

FORMAT = "fxla.artifact"
VERSION = 3            # 3: metadata_sha256; 2: roles on @main, fxla's own structure encoding (1: torch's treespecs)
METADATA = "metadata.json"
DIGEST = "metadata_sha256"
PROGRAM = "program.mlirbc"
MAX_METADATA_BYTES = 16 << 20
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


class ArtifactError(FxlaError):
    """An artifact directory that cannot be written or loaded."""


def _bad(path: str, what: str, fix: str = "re-export the model with fxla.export") -> ArtifactError:
    return ArtifactError(f"cannot load the fxla artifact at '{path}': {what}\nfix: {fix}")


def metadata_digest(meta: dict) -> str:
    """The SHA-256 of ``meta`` (as read back from JSON) without its :data:`DIGEST` entry, in a canonical form (sorted
    keys, no spaces, ASCII): what :data:`DIGEST` records."""
    body = {k: v for k, v in meta.items() if k != DIGEST}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def check_metadata_digest(path, meta: dict) -> None:
    """Raise :class:`ArtifactError` unless ``meta`` (the artifact at ``path``'s metadata, every field already
    checked by the loader) is what export wrote: its :data:`DIGEST` is that of the rest."""
    recorded = meta.get(DIGEST)
    if not isinstance(recorded, str):
        raise _bad(os.fspath(path), f"{METADATA} records no {DIGEST} (not written by fxla.export, or edited)")
    try:
        digest = metadata_digest(meta)
    except (TypeError, ValueError, RecursionError):
        digest = None
    if digest != recorded:
        raise _bad(os.fspath(path), f"{METADATA} was modified after export (its content does not match its "
                                    f"{DIGEST})\nwhy: it holds what the program relies on (shapes, Dims and their "
                                    f"constraints, guards); an edited copy could run inputs the program was not "
                                    f"made for")


def portable_bytecode(text: str) -> Tuple[bytes, str]:
    """StableHLO ``text`` as a portable artifact (and the StableHLO version it targets)."""
    from jax.interpreters import mlir as jax_mlir
    from jaxlib.mlir.dialects import stablehlo

    version = stablehlo.get_current_version()
    with jax_mlir.make_ir_context():
        return stablehlo.serialize_portable_artifact_str(text, version), version


def _main(module):
    from jaxlib.mlir import ir
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
            return op
    return None


def annotate_roles(text: str, arg_roles: Sequence[str], result_roles: Sequence[str]) -> str:
    """``text`` with ``fxla.role`` on every argument and result of ``@main`` (see the module docstring)."""
    from jax.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir

    with jax_mlir.make_ir_context():
        module = ir.Module.parse(text)
        main = _main(module)

        def roles(name, values):
            old = ir.ArrayAttr(main.attributes[name]) if name in main.attributes else None
            dicts = []
            for i, role in enumerate(values):
                entries = {a.name: a.attr for a in ir.DictAttr(old[i])} if old is not None else {}
                entries["fxla.role"] = ir.StringAttr.get(role)
                dicts.append(ir.DictAttr.get(entries))
            main.attributes[name] = ir.ArrayAttr.get(dicts)
        roles("arg_attrs", arg_roles)
        roles("res_attrs", result_roles)
        return str(module)


class ProgramInterface(NamedTuple):
    """What an artifact's program itself says it takes and returns."""

    text: str                                   # StableHLO text (for compiling)
    arg_types: List[Tuple[Tuple[int, ...], str]]   # (shape, MLIR element type) per argument
    result_types: List[Tuple[Tuple[int, ...], str]]
    arg_roles: List[Optional[str]]
    result_roles: List[Optional[str]]


def parse_program(data: bytes):
    """``data`` (a StableHLO portable artifact) as an MLIR module in a fresh context: ``(ctx, module)``.

    Only MLIR bytecode (what :func:`fxla.export` writes) is accepted, and it is read by
    :func:`fxla.dialects.mlir.read_untrusted_bytecode`: on a large stack, nesting bounded (crafted text or a
    deeply nested type would otherwise crash MLIR's recursive reader)."""
    from jax.interpreters import mlir as jax_mlir
    from jaxlib.mlir.dialects import stablehlo

    from fxla.dialects.mlir import read_untrusted_bytecode

    ctx = jax_mlir.make_ir_context()
    module, _ = read_untrusted_bytecode(data, lambda raw: stablehlo.deserialize_portable_artifact(ctx, raw))
    return ctx, module


def program_interface(path: str, data: bytes) -> ProgramInterface:
    """The interface of the program in ``data`` (the artifact at ``path``'s :data:`PROGRAM`)."""
    from jaxlib.mlir import ir

    from .sharding import signature_of
    try:
        ctx, module = parse_program(data)
    except ArtifactError:
        raise
    except Exception as err:  # noqa: BLE001  (MLIR raises ValueError/MLIRError with its diagnostics)
        raise _bad(path, f"{PROGRAM} is not a StableHLO portable artifact ({str(err).strip()[:300]})") from None
    with ctx:
        main = _main(module)
        if main is None:
            raise _bad(path, f"{PROGRAM} has no @main function")

        def roles(name, n):
            if name not in main.attributes:
                return [None] * n
            out = []
            for d in ir.ArrayAttr(main.attributes[name]):
                d = ir.DictAttr(d)
                out.append(ir.StringAttr(d["fxla.role"]).value if "fxla.role" in d else None)
            return out
        text = module.operation.get_asm(enable_debug_info=False)
        ins, outs = signature_of(text)
        return ProgramInterface(text, list(ins), list(outs), roles("arg_attrs", len(ins)),
                                roles("res_attrs", len(outs)))


# ---------------------------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------------------------
def _existing_artifact(path: str) -> Tuple[Optional[List[str]], str]:
    """``(the files of the fxla artifact at path, "")`` (an existing folder), or ``(None, why it is not one)``: its
    metadata.json must say so and the folder must hold exactly the listed files and metadata.json."""
    not_fxla = "it is a non-empty folder that is not an fxla artifact"
    try:
        meta = json.loads(_read_file(path, METADATA, MAX_METADATA_BYTES).decode())
    except (ArtifactError, ValueError, RecursionError):
        return None, not_fxla
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or not isinstance(meta.get("files"), dict):
        return None, not_fxla
    names = sorted([METADATA, *meta["files"]])
    present = sorted(os.listdir(path))
    extra = [n for n in present if n not in names]
    if extra:
        shown = ", ".join(extra[:3]) + (f" and {len(extra) - 3} more" if len(extra) > 3 else "")
        return None, (f"it holds an fxla artifact, but also {shown}, which export did not write (a folder with "
                      f"files of yours is not an fxla artifact export may replace)")
    if present != names or not all(os.path.isfile(os.path.join(path, n)) and
                                   not os.path.islink(os.path.join(path, n)) for n in names):
        return None, "it is an fxla artifact with missing or replaced files (a symlink or a folder in their place)"
    return names, ""


def write_artifact(path, metadata: dict, files: Dict[str, bytes], *, overwrite: bool = False) -> None:
    """Write ``files`` (name -> bytes, including :data:`PROGRAM`) and ``metadata`` (plus hashes) to ``path``.

    ``path`` must not exist, or be an empty folder, or (with ``overwrite=True``) an fxla artifact, which is then
    replaced atomically; anything else is refused with :class:`ArtifactError` and left untouched.
    """
    path = os.path.abspath(os.fspath(path))
    old_files = None
    if os.path.lexists(path):
        if os.path.islink(path) or not os.path.isdir(path):
            raise ArtifactError(f"cannot export to '{path}': it exists and is not a folder\n"
                                f"fix: choose a new path")
        if os.listdir(path):
            old_files, why_not = _existing_artifact(path)
            if old_files is None:
                raise ArtifactError(f"cannot export to '{path}': {why_not}\nwhy: export never deletes or "
                                    f"overwrites files it did not write\n"
                                    f"fix: choose a new path (or an empty folder)")
            if not overwrite:
                raise ArtifactError(f"cannot export to '{path}': an fxla artifact is already there\n"
                                    f"fix: pass overwrite=True to replace it, or choose a new path")
    parent = os.path.dirname(path)
    meta = dict(metadata, format=FORMAT, version=VERSION,
                files={name: {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
                       for name, data in files.items()})
    meta = json.loads(json.dumps(meta, allow_nan=False))        # (as a loader reads it back: the digest's input)
    meta[DIGEST] = metadata_digest(meta)
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".fxla-export-", dir=parent)
    except OSError as err:      # (a file on the way, no permission, a read-only file system)
        reason = err.strerror or str(err)
        above = parent
        while not os.path.lexists(above) and os.path.dirname(above) != above:
            above = os.path.dirname(above)
        if os.path.lexists(above) and not os.path.isdir(above):
            reason = f"'{above}' is a file, not a folder"
        raise ArtifactError(f"cannot export to '{path}': its folder '{parent}' cannot be made or written "
                            f"({reason})\nwhy: export writes the artifact next to its path first, then renames it "
                            f"into place\nfix: choose a path under a folder you can write") from None
    written = [*files, METADATA]
    try:
        for name, data in files.items():
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
        with open(os.path.join(tmp, METADATA), "w") as f:
            json.dump(meta, f, indent=1, allow_nan=False)
        if old_files is None:
            os.replace(tmp, path)        # onto a missing path or an empty folder: atomic
            return
        old = tempfile.mkdtemp(prefix=".fxla-old-", dir=parent)
        os.replace(path, os.path.join(old, "a"))
        os.replace(tmp, path)
        _remove(os.path.join(old, "a"), old_files)
        _remove(old, [])
    except BaseException as err:
        if os.path.isdir(tmp):
            _remove(tmp, [n for n in written if os.path.exists(os.path.join(tmp, n))])
        if isinstance(err, OSError):        # (a full disk, a folder that vanished or changed meanwhile)
            raise ArtifactError(f"cannot export to '{path}': writing failed ({err.strerror or err})\nfix: check "
                                f"the free space and permissions there, or choose another path") from None
        raise


def _remove(folder: str, names: Sequence[str]) -> None:
    """Remove the files ``names`` fxla wrote in ``folder``, then the folder if that left it empty."""
    for name in names:
        os.unlink(os.path.join(folder, name))
    try:
        os.rmdir(folder)
    except OSError:      # something else appeared there: leave it
        pass


# ---------------------------------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------------------------------
def _read_file(path: str, name: str, limit: int) -> bytes:
    """The bytes of regular file ``name`` in folder ``path``, at most ``limit`` bytes (else ArtifactError)."""
    try:
        fd = os.open(os.path.join(path, name), _READ_FLAGS)
    except FileNotFoundError:
        raise _bad(path, f"{name} cannot be read: it is missing (an incomplete copy)",
                   "copy the whole folder fxla.export wrote") from None
    except OSError as err:   # ELOOP: a symlink
        raise _bad(path, f"{name} cannot be opened as a regular file inside the artifact "
                         f"({err.strerror or err})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _bad(path, f"{name} is not a regular file")
        if info.st_size > limit:
            raise _bad(path, f"{name} has {info.st_size} bytes, more than recorded ({limit})")
        return f.read(info.st_size + 1)     # (a file that grows meanwhile then fails the size check)


def read_artifact(path) -> Tuple[dict, Dict[str, bytes]]:
    """``(metadata, files)`` of the artifact at ``path``, every file checked against its recorded hash."""
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise _bad(path, "it is not a folder", "pass the folder fxla.export wrote")
    if not os.path.lexists(os.path.join(path, METADATA)):
        raise _bad(path, f"there is no {METADATA} (not an artifact directory, or an incomplete copy)",
                   "pass the folder fxla.export wrote")
    raw = _read_file(path, METADATA, MAX_METADATA_BYTES)
    try:
        meta = json.loads(raw.decode())
    except (UnicodeDecodeError, ValueError) as err:
        raise _bad(path, f"{METADATA} is not valid JSON ({err})") from None
    except RecursionError:
        raise _bad(path, f"{METADATA} is nested too deeply to be fxla's") from None
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
        if (not isinstance(name, str) or os.path.basename(name) != name or name.startswith(".")
                or name == METADATA or "\0" in name):
            raise _bad(path, f"{METADATA} lists a bad file name {name!r}")
        size = entry.get("size") if isinstance(entry, dict) else None
        if not isinstance(size, int) or isinstance(size, bool) or size < 0 or \
                not isinstance(entry.get("sha256"), str):
            raise _bad(path, f"{METADATA} records no valid size and sha256 for {name}")
        data = _read_file(path, name, size)
        if len(data) != size:
            raise _bad(path, f"{name} has {len(data)} bytes but {METADATA} records {size} (truncated or replaced)")
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise _bad(path, f"{name} does not match the SHA-256 in {METADATA} (modified or corrupt)")
        files[name] = data
    return meta, files
