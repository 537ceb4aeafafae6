"""Source locations: where in the user's program a graph node came from.

The tracer stamps every node with ``node.meta['source']``, a :class:`SourceLocation`
for the innermost stack frame that belongs to the user's code -- not to fxla
itself, not to torch, and not to the ``contextlib``/``functools`` plumbing that
sits between them.  Part of layer 0 (:mod:`fxla.base`): imports nothing of fxla.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import linecache
import os
import sys
from dataclasses import dataclass
from types import CodeType, FrameType, TracebackType
from typing import Dict, Optional, Tuple

__all__ = ["SourceLocation", "user_frame", "user_frame_location", "location_of_code", "location_at",
           "is_internal_file", "internal_dirs", "traceback_location"]


@dataclass(frozen=True)
class SourceLocation:
    """A position in user source code.

    file:        path of the source file (as in ``code.co_filename``)
    line:        1-based line number
    col:         1-based column of the expression that produced the node (1 if unknown)
    source_line: text of that line (no trailing newline; "" if unavailable)
    module_path: qualified name of the ``nn.Module`` whose ``forward`` was executing
                 when the node was recorded ("" for the root module / plain functions)
    """

    file: str
    line: int
    col: int
    source_line: str
    module_path: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def _norm(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


# Which code is fxla's own, computed from what is loaded rather than from folder names: the folders of the
# ``fxla`` package and of every loaded ``fxla.*`` package (an editable install maps each stage to its own
# top-level folder, an installed wheel puts them all under one), torch's folder, and the contextlib/functools
# files.  Recomputed when the set of loaded modules changes (a new fxla package can only appear then).
_INTERNAL_FILES = frozenset(_norm(m.__file__) for m in (contextlib, functools))
_internal_dirs: Tuple[str, ...] = ()
_internal_cache: Dict[str, bool] = {}
_modules_seen = -1


def _loaded_internal_dirs() -> Tuple[str, ...]:
    dirs = set()
    for name, module in dict(sys.modules).items():
        if name == "fxla" or name.startswith("fxla.") or name == "torch":
            for path in getattr(module, "__path__", None) or ():
                dirs.add(_norm(path) + os.sep)
    return tuple(sorted(dirs))


def internal_dirs() -> Tuple[str, ...]:
    """The folders whose frames are fxla's or torch's own (normalised, each ending in a separator)."""
    global _internal_dirs, _modules_seen
    if len(sys.modules) != _modules_seen:
        _modules_seen = len(sys.modules)
        dirs = _loaded_internal_dirs()
        if dirs != _internal_dirs:
            _internal_dirs = dirs
            _internal_cache.clear()
    return _internal_dirs


def is_internal_file(filename: str) -> bool:
    """True if frames from ``filename`` are fxla/torch/stdlib plumbing rather than user code."""
    if len(sys.modules) != _modules_seen:
        internal_dirs()
    cached = _internal_cache.get(filename)
    if cached is None:
        if filename.startswith("<") and filename.endswith(">"):
            cached = filename.startswith("<frozen ")
        else:
            path = _norm(filename)
            cached = path in _INTERNAL_FILES or path.startswith(_internal_dirs)
        _internal_cache[filename] = cached
    return cached


def _source_line(filename: str, line: int) -> str:
    return linecache.getline(filename, line).rstrip("\n")


def _frame_location(frame: FrameType, module_path: str, lasti: Optional[int] = None,
                    lineno: Optional[int] = None) -> SourceLocation:
    code = frame.f_code
    lasti = frame.f_lasti if lasti is None else lasti
    line, col = frame.f_lineno if lineno is None else lineno, 1
    if lasti >= 0 and hasattr(code, "co_positions"):
        pos = next(itertools.islice(code.co_positions(), lasti // 2, None), None)
        if pos is not None:
            p_line, _, p_col, _ = pos
            if p_line is not None:
                line = p_line
            if p_col is not None:
                col = p_col + 1
    line = line or code.co_firstlineno
    return SourceLocation(code.co_filename, line, col, _source_line(code.co_filename, line), module_path)


def user_frame_location(module_path: str = "", frame: Optional[FrameType] = None) -> Optional[SourceLocation]:
    """Location of the innermost user frame on the current stack (or above ``frame``).

    Returns None if every frame is internal (should not happen in practice).
    """
    f = user_frame(frame if frame is not None else sys._getframe(1))
    return _frame_location(f, module_path) if f is not None else None


def user_frame(frame: FrameType) -> Optional[FrameType]:
    """The innermost frame at or above ``frame`` that is user code (None if every one is internal)."""
    while frame is not None and is_internal_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def traceback_location(tb: Optional[TracebackType], module_path: str = "",
                       innermost: bool = True) -> Optional[SourceLocation]:
    """Where an exception passed through user code: the innermost user frame of traceback ``tb`` (where it was
    raised, as far as user code goes), or with ``innermost=False`` the traceback's first frame -- for a caught
    exception, the frame that caught it (when a library caught it: the user code that called that library)."""
    if tb is None:
        return None
    if not innermost:                 # the catching frame, or the user code that called the library that caught it
        frame = tb.tb_frame
        if is_internal_file(frame.f_code.co_filename):
            return user_frame_location(module_path, frame)
        return _frame_location(frame, module_path, tb.tb_lasti, tb.tb_lineno)
    found = None
    while tb is not None:
        if not is_internal_file(tb.tb_frame.f_code.co_filename):
            found = tb
        tb = tb.tb_next
    return _frame_location(found.tb_frame, module_path, found.tb_lasti, found.tb_lineno) if found else None


def location_at(file: str, line: int, module_path: str = "") -> SourceLocation:
    """Location of a whole line (column 1): for call sites recorded as just ``(file, line)``."""
    return SourceLocation(file, line, 1, _source_line(file, line), module_path)


def location_of_code(code: CodeType, module_path: str = "") -> SourceLocation:
    """Location of the ``def`` line of a code object (used for placeholders and outputs)."""
    line = code.co_firstlineno
    text = _source_line(code.co_filename, line)
    col = len(text) - len(text.lstrip()) + 1 if text else 1
    return SourceLocation(code.co_filename, line, col, text, module_path)
