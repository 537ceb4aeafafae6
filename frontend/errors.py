"""Errors raised by the fxla frontend (tracing, graph checking, interpretation).

All derive from :class:`fxla.errors.FxlaError` and word their messages with
:func:`fxla.errors.format_message`: what went wrong, the user's
``file:line:col`` and source line, why, then ``fix:``.
"""
from __future__ import annotations

from fxla.errors import FxlaError


class TraceError(FxlaError):
    """Symbolic tracing could not capture the program (e.g. data-dependent control flow)."""


class InterpreterError(FxlaError):
    """Running a graph node failed; ``__cause__`` holds the original exception."""


class GraphError(FxlaError):
    """A graph is malformed (raised by :meth:`Graph.lint` and graph-editing APIs)."""
