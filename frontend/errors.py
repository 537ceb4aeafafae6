"""Errors raised by the fxla frontend (tracing, graph checking, interpretation).

All derive from :class:`fxla.base.errors.FxlaError` (public as ``fxla.FxlaError``) and are
raised with their message's parts as fields -- ``TraceError(what, where=loc, why=..., fix=...)``:
what went wrong, the user's ``file:line:col`` and source line, why, then ``fix:``.
"""
from __future__ import annotations

from fxla.base.errors import FxlaError


class TraceError(FxlaError):
    """Symbolic tracing could not capture the program (e.g. data-dependent control flow)."""


class InterpreterError(FxlaError):
    """Running a graph node failed; ``__cause__`` holds the original exception."""


class DataDependentError(TraceError, InterpreterError):
    """An op whose output shape (``torch.nonzero``, ``x[mask]``, ``torch.unique``) or Python value
    (``.item()``) depends on tensor values, which a fixed-shape compiled program cannot hold; raised by shape
    propagation (:class:`fxla.frontend.shape_prop.ShapeProp`) at the op's source line."""


class GraphError(FxlaError):
    """A graph is malformed (raised by :meth:`Graph.lint` and graph-editing APIs)."""


class SerializationError(FxlaError):
    """Saving or loading a GraphModule failed (unsupported content, or a missing, truncated or
    tampered file); ``__cause__`` holds the underlying exception when there is one."""


class PassError(FxlaError):
    """A graph pass (``fxla.frontend.passes``) cannot be applied to the given graph or arguments."""


class AutocastError(FxlaError):
    """``torch.autocast`` would change dtypes that a traced graph or a compiled program cannot follow: a forward
    that enters or leaves an autocast region while being traced, or a compiled module called under autocast."""


class SpecializationError(FxlaError):
    """A shape-specialised graph (a ``concrete_shapes`` trace) was given inputs of other shapes, dtypes or
    values than it was traced for; running it would silently compute with the traced ones."""
