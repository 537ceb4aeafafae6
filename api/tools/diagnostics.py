"""Printing fxla/MLIR diagnostics the way mlir-opt does: ``file:line:col: error: message``."""
from __future__ import annotations

import sys

from fxla.dialects.mlir import ir, location_parts


def render(location, message: str, filename: str, severity: str = "error") -> str:
    parts = location_parts(location) if location is not None else None
    if parts is None:
        return f"{filename}: {severity}: {message}"
    file, line, col = parts
    return f"{filename if file in ('-', '') else file}:{line}:{col}: {severity}: {message}"


def mlir_error_lines(err: ir.MLIRError, filename: str):
    lines = []
    for d in err.error_diagnostics:
        lines.append(render(d.location, d.message, filename))
        for note in d.notes:
            lines.append(render(note.location, note.message, filename, "note"))
    return lines or [f"{filename}: error: {err}"]


def emit(lines) -> None:
    for line in lines:
        print(line, file=sys.stderr)
