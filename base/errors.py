"""The one exception hierarchy of fxla.

Every error fxla raises on bad user input derives from :class:`FxlaError`.  Messages follow one shape::

    <what went wrong>
      at <file>:<line>:<col>
        <source line>
    <why>
    fix: <what to do>

An error stores those parts as fields (``FxlaError(what, where=loc, why=..., fix=...)``) and renders the text
from them, so every stage words its errors the same way; :func:`format_message` renders the same text
without an error object.
"""
from __future__ import annotations

from typing import Iterable, List, Optional, Tuple

__all__ = ["FxlaError", "format_message", "format_location", "split_message"]

_FIX = "\nfix: "
_AT = "  at "
_SOURCE_INDENT = "      "


def format_location(loc) -> str:
    """Render a source location (anything with ``file``, ``line``, ``col`` and ``source_line``; a string is
    taken as already rendered)."""
    if isinstance(loc, str):
        return loc
    if loc is None:
        return "  at <unknown location>"
    text = f"  at {loc.file}:{loc.line}:{loc.col}"
    if getattr(loc, "module_path", None):
        text += f" (in module '{loc.module_path}')"
    if getattr(loc, "source_line", None):
        text += f"\n      {loc.source_line.strip()}"
    return text


def _render(what: str, where, locations: Iterable, why: Optional[str], context: Iterable[str],
            fix: Optional[str]) -> str:
    parts = [what]
    if where is not None:
        parts.append(format_location(where))
    parts.extend(format_location(extra) for extra in locations)
    if why is not None:
        parts.append(why)
    parts.extend(context)
    if fix is not None:
        parts.append(f"fix: {fix}")
    return "\n".join(parts)


def format_message(what: str, loc=None, why: Optional[str] = None, fix: Optional[str] = None,
                   locations: Iterable = ()) -> str:
    """Build an error message in fxla's house style (see the module docstring); empty ``why``/``fix`` are left
    out.  ``str(FxlaError(what, where=loc, why=why, fix=fix, locations=locations))`` is the same text."""
    return _render(what, loc, tuple(locations), why or None, (), fix or None)


def split_message(text: str) -> Tuple[str, Optional[str], Optional[str], Optional[str]]:
    """``(what, where, why, fix)`` of a message written as one string in the house format, such that
    rendering the parts gives ``text`` back exactly.

    ``what`` is the first line; ``where`` the ``  at file:line:col`` lines right after it (each optionally
    followed by its indented source line), as text; ``fix`` what follows the last ``"\\nfix: "``; ``why``
    everything in between (a line starting ``why:`` keeps its label).  Missing parts are None.
    """
    cut = text.rfind(_FIX)
    body, fix = (text[:cut], text[cut + len(_FIX):]) if cut >= 0 else (text, None)
    lines = body.split("\n")
    i = 1
    while i < len(lines) and lines[i].startswith(_AT):
        i += 1
        if i < len(lines) and lines[i].startswith(_SOURCE_INDENT):
            i += 1
    where = "\n".join(lines[1:i]) if i > 1 else None
    why = "\n".join(lines[i:]) if i < len(lines) else None
    return lines[0], where, why, fix


class FxlaError(Exception):
    """Base class of every error fxla raises.

    ``FxlaError(what, *, where=None, why=None, fix=None, locations=())`` -- the error's parts, each kept as an
    attribute of the same name:

    what:       what went wrong (one line, or more)
    where:      the user's source location (a :class:`fxla.base.source.SourceLocation`, anything with
                ``file``/``line``/``col``/``source_line``, or already rendered ``  at ...`` text), or None
    locations:  further locations, rendered after ``where``
    why:        why fxla cannot do it, or None
    fix:        what the user can do about it (rendered after ``fix: ``), or None
    context:    lines added later with :meth:`add_context` (e.g. which call was being compiled); they are
                rendered after ``why`` and before the ``fix:`` line

    ``str(err)`` (and ``err.args[0]``) is the message in the house format of :mod:`fxla.base.errors`,
    re-rendered whenever a part is assigned; assign parts, not ``args``.

    Compatibility path: an error raised with one pre-formatted string and no keyword (``XError(text)``, how
    fxla's errors were written before the fields existed) is split once, here, by :func:`split_message`, so
    ``err.why``/``err.fix`` work for every error and ``str(err) == text`` still holds exactly; ``where`` is
    then the rendered ``at`` lines.  Any other arguments (none, several, not a string) are kept as
    :class:`Exception` keeps them, and ``what`` is their text.
    """

    _PARTS = frozenset({"what", "where", "locations", "why", "context", "fix"})

    what: str
    where: object
    locations: Tuple
    why: Optional[str]
    context: Tuple[str, ...]
    fix: Optional[str]

    def __init__(self, *args, where=None, why: Optional[str] = None, fix: Optional[str] = None,
                 locations: Iterable = ()):
        locations = tuple(locations)
        fields = where is not None or why is not None or fix is not None or bool(locations)
        if len(args) == 1 and isinstance(args[0], str):
            what = args[0]
            if not fields:
                what, where, why, fix = split_message(what)
        elif not args:
            what = ""
        else:
            what = str(args[0]) if len(args) == 1 else str(args)
        super().__init__(what)
        parts = self.__dict__
        parts.update(what=what, where=where, locations=locations, context=())
        parts.update(why=why if not fields else why or None, fix=fix if not fields else fix or None)
        self.args = (self.render(),)

    def __setattr__(self, name: str, value) -> None:
        super().__setattr__(name, value)
        if name in self._PARTS and "context" in self.__dict__:
            self.args = (self.render(),)

    def render(self) -> str:
        """The message in the house format, from the error's parts."""
        return _render(self.what, self.where, self.locations, self.why, self.context, self.fix)

    def add_context(self, text: str) -> "FxlaError":
        """Add ``text`` as a line of the message just before the ``fix:`` line (at the end if there is none),
        e.g. ``err.add_context("while compiling Net for inputs (x=float32[2, 7])")``; returns the error."""
        self.context = (*self.context, text)
        return self
