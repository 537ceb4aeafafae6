"""``dump_dir=``: every stage of every compiled graph and signature, written to a folder as it is made.

``fxla.compile(model, dump_dir=path)`` and ``torch.compile(model, backend="fxla", options={"dump_dir": path})``
write, under ``path``, one folder per compiled graph (a module, each ``concrete_shapes`` trace, each graph
TorchDynamo hands the backend) and in it one folder per compiled input signature::

    path/Sequential/signature-1/   signature.txt  the inputs and why this signature compiled
                                   graph.txt      the captured graph (torch.fx-style listing)
                                   code.py        Python regenerated from it
                                   functional.txt the graph after functionalization (when it changed anything)
                                   fxla.mlir      the fxla dialect module
                                   stablehlo.mlir verified StableHLO
                                   layout.mlir    the StableHLO after the device layout passes (when they changed it)
                                   hlo.txt        XLA's optimised HLO of the executable
                                   phases.txt     each phase's seconds
    path/Sequential/signature-1/forward-with-residuals/   a call of the signature that records gradients:
                                   gradient.txt   what the program is, of which signature, with respect to what
                                   fxla.mlir      the forward half of the differentiated program (``fxla-opt
                                                  --fxla-vjp``'s ``@forward``: the results, then the residuals)
                                   stablehlo.mlir, layout.mlir, hlo.txt, phases.txt   as above
    path/Sequential/signature-1/backward/          the same for the backward half (``@backward``), made at the
                                                  first backward
    path/Sequential/signature-1/jax-forward-with-residuals/, jax-backward/   the halves lowered for JAX
                                   (``as_jax_function`` under ``jax.grad``): gradient.txt, fxla.mlir,
                                   stablehlo.mlir, phases.txt (JAX compiles them: no HLO here)
    path/dynamo-graph-1/dynamo.txt  the graph as TorchDynamo handed it over (torch.compile only)

A second set of tensors requiring grad (another differentiated program of the same signature) gets fresh
folders (``forward-with-residuals-2``).  Each file is written when its stage ends, so a compile that fails
leaves the stages before the failure.

Safety: fxla never deletes or overwrites a file it did not write.  Every folder is made new (``os.mkdir``; a
name that exists -- a file, a folder, a symlink, from this process or an earlier run -- is skipped for the next
free one: ``Sequential-2``), and every file is created exclusively inside a folder fxla just made, through a
descriptor opened with ``O_NOFOLLOW`` (no symlink is followed out of the dump folder).  Only ``path`` itself
may exist already (it must be a directory).
"""
from __future__ import annotations

import os
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

from fxla.errors import FxlaError

from .pipeline import readable_hlo

__all__ = ["DumpError", "CompileDumps", "GraphDump", "open_dumps", "stage_files"]

#: how many names (``name``, ``name-2``, ...) are tried before giving up
_MAX_TRIES = 10000
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


class DumpError(FxlaError):
    """The ``dump_dir`` folder cannot be used or written (not a directory, no permission, disk full)."""


def open_dumps(path) -> Optional["CompileDumps"]:
    """The dumps of ``dump_dir=path`` (``None``: no dumps)."""
    return None if path is None else CompileDumps(path)


class CompileDumps:
    """The folder ``dump_dir`` names: made if missing (it may exist: fxla then only adds new folders to it)."""

    def __init__(self, path):
        if not isinstance(path, (str, os.PathLike)):
            raise DumpError(f"dump_dir={type(path).__name__} object: it must be a folder path (str or "
                            f"os.PathLike)\nfix: pass dump_dir='fxla-dumps' (or a pathlib.Path)")
        self.path = os.path.abspath(os.fspath(path))
        if os.path.lexists(self.path) and not os.path.isdir(self.path):
            raise DumpError(f"cannot use dump_dir={self.path!r}: it is not a directory\n"
                            f"fix: pass a folder (fxla makes it if it does not exist)")
        try:
            os.makedirs(self.path, exist_ok=True)
        except OSError as err:
            raise DumpError(f"cannot use dump_dir={self.path!r}: {err.strerror or err}\n"
                            f"fix: pass a folder you can write, or a path where one can be made") from None

    def graph(self, name: str) -> "GraphDump":
        """A new folder for one compiled graph, named ``name`` (or ``name-2``, ... if that exists)."""
        return GraphDump(_fresh_folder(self.path, _UNSAFE.sub("_", name) or "graph"))


class GraphDump:
    """The folder of one compiled graph (made new by :meth:`CompileDumps.graph`): its files and one folder per
    compiled signature."""

    def __init__(self, path: str):
        self.path = path

    def write(self, name: str, text: str, folder: Optional[str] = None) -> str:
        """Create ``name`` (a new name: ``name`` or ``<stem>.2<ext>`` ... if it exists) in this graph's folder, or in
        its subfolder ``folder``, holding ``text``; returns its path."""
        where = self.path if folder is None else os.path.join(self.path, folder)
        dir_fd = _open_own_folder(self.path, folder)
        try:
            stem, ext = os.path.splitext(name)
            for i in range(1, _MAX_TRIES):
                candidate = name if i == 1 else f"{stem}.{i}{ext}"
                try:
                    fd = os.open(candidate, _FILE_FLAGS, 0o644, dir_fd=dir_fd)
                except FileExistsError:
                    continue
                except OSError as err:
                    raise _write_error(os.path.join(where, candidate), err) from None
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text if text.endswith("\n") else text + "\n")
                return os.path.join(where, candidate)
        finally:
            os.close(dir_fd)
        raise DumpError(f"no free file name like {name!r} in {where}\nfix: empty the dump folder or use another")

    def signature(self, number: int) -> str:
        """A new subfolder for compiled signature ``number`` (``signature-<n>``, or ``signature-<n>-2`` ...);
        returns its name."""
        return os.path.basename(_fresh_folder(self.path, f"signature-{number}", _open_own_folder(self.path)))

    def subfolder(self, folder: str, name: str) -> str:
        """A new folder ``name`` (or ``name-2`` ...) inside this graph's subfolder ``folder`` (a gradient program
        of a signature: ``signature-1/backward``); returns its path relative to this graph's folder."""
        made = _fresh_folder(os.path.join(self.path, folder), name, _open_own_folder(self.path, folder))
        return os.path.join(folder, os.path.basename(made))


def _fresh_folder(parent: str, name: str, parent_fd: Optional[int] = None) -> str:
    """Make a new folder ``name`` (else ``name-2``, ...) in ``parent``; ``parent_fd``: a descriptor of ``parent``
    when it is a folder fxla made (:func:`_open_own_folder`; closed here)."""
    try:
        for i in range(1, _MAX_TRIES):
            candidate = name if i == 1 else f"{name}-{i}"
            try:
                if parent_fd is None:
                    os.mkdir(os.path.join(parent, candidate), 0o755)
                else:
                    os.mkdir(candidate, 0o755, dir_fd=parent_fd)
            except FileExistsError:
                continue           # (anything there, a symlink included, is left alone)
            except OSError as err:
                raise _write_error(os.path.join(parent, candidate), err) from None
            return os.path.join(parent, candidate)
    finally:
        if parent_fd is not None:
            os.close(parent_fd)
    raise DumpError(f"no free folder name like {name!r} in {parent}\nfix: empty the dump folder or use another")


def _open_own_folder(path: str, folder: Optional[str] = None) -> int:
    """A descriptor of ``path``, a folder fxla made, or of its subfolder ``folder`` (relative, made by fxla too),
    opened one component at a time: refused if any of them is now a symlink (``O_NOFOLLOW``)."""
    where = path
    try:
        fd = os.open(path, _DIR_FLAGS)
        for part in (folder.split(os.sep) if folder else ()):
            where = os.path.join(where, part)
            try:
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            finally:
                os.close(fd)
            fd = inner
        return fd
    except OSError as err:
        raise DumpError(f"cannot write into the dump folder {where}: {err.strerror or err} (fxla made it; it was "
                        f"replaced or removed since)\nfix: leave the dump folder alone while the program "
                        f"compiles") from None


def _write_error(path: str, err: OSError) -> DumpError:
    return DumpError(f"cannot write the dump {path}: {err.strerror or err}\n"
                     f"fix: pass a dump_dir you can write, with space left, or leave dump_dir out")


def _prepared_files(prepared, record) -> List[Tuple[str, str]]:
    files = [("graph.txt", str(prepared.captured.graph)), ("code.py", prepared.captured.code)]
    if prepared.graph_module is not prepared.captured:
        files.append(("functional.txt", str(prepared.graph_module.graph)))
    return files


def _stablehlo_files(module, record) -> List[Tuple[str, str]]:
    record.stablehlo = module.operation.get_asm()
    return [("stablehlo.mlir", record.stablehlo)]


def _layout_files(target, record) -> List[Tuple[str, str]]:
    return [] if target.text == record.stablehlo else [("layout.mlir", target.text)]


#: stage -> the files its result is dumped as (``fxla.pipeline.STAGES``; ``vjp`` makes two programs, and each
#: gradient program's folder gets its own half as ``fxla.mlir``: :meth:`fxla.recompile._Compiling.dump_fxla`)
_STAGE_FILES: Dict[str, Callable[[Any, Any], List[Tuple[str, str]]]] = {
    "prepare": _prepared_files,
    "fxla": lambda program, record: [("fxla.mlir", program.text())],
    "refine": lambda program, record: [("refined.mlir", program.text())],
    "stablehlo": _stablehlo_files,
    "layout": _layout_files,
    "compile": lambda executable, record: [("hlo.txt", readable_hlo(executable.hlo_text()))],
}


def stage_files(stage: str, result, record) -> List[Tuple[str, str]]:
    """The files (name, text) of ``stage``'s ``result`` (see the module docstring); ``record`` (the compile under
    way) keeps the StableHLO text, so ``layout.mlir`` is written only when the device passes changed it."""
    make = _STAGE_FILES.get(stage)
    return [] if make is None else make(result, record)
