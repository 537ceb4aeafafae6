"""The one exception hierarchy of fxla.

Every error fxla raises on bad user input derives from :class:`FxlaError`.  Messages follow one shape::

    <what went wrong>
      at <file>:<line>:<col>
        <source line>
    <why>
    fix: <what to do>

:func:`format_message` builds that text so every stage words its errors the same way.
"""
from __future__ import annotations

from typing import Iterable, Optional


class FxlaError(Exception):
    """Base class of every error fxla raises."""


def format_location(loc) -> str:
    """Render a source location (anything with ``file``, ``line``, ``col`` and ``source_line``)."""
    if loc is None:
        return "  at <unknown location>"
    text = f"  at {loc.file}:{loc.line}:{loc.col}"
    if getattr(loc, "module_path", None):
        text += f" (in module '{loc.module_path}')"
    if getattr(loc, "source_line", None):
        text += f"\n      {loc.source_line.strip()}"
    return text


def format_message(what: str, loc=None, why: Optional[str] = None, fix: Optional[str] = None,
                   locations: Iterable = ()) -> str:
    """Build an error message in fxla's house style (see the module docstring)."""
    parts = [what]
    if loc is not None:
        parts.append(format_location(loc))
    for extra in locations:
        parts.append(format_location(extra))
    if why:
        parts.append(why)
    if fix:
        parts.append(f"fix: {fix}")
    return "\n".join(parts)
