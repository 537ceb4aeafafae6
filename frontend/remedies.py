"""How trace errors phrase their ``fix:``: in the words of the call the user made, the remedy that fits first.

A :class:`~fxla.frontend.TraceError` for a value a trace cannot know (``if x.sum() > 0``, ``len(x)``,
``int(x.size(0))``) names what to do instead, and that depends on two things:

* **The entry point.**  ``fxla.symbolic_trace`` takes shapes as ``example_inputs=(...)``, ``fxla.compile`` as
  ``concrete_shapes=True``; ``fxla.export`` and ``fxla.compile_step`` have their own signatures.  A
  :class:`Remedies` holds one entry point's spellings (:data:`SYMBOLIC_TRACE`, :data:`COMPILE`,
  :data:`COMPILE_DYNAMIC`, :data:`EXPORT`, :data:`COMPILE_STEP`); the entry point traces inside
  :func:`spelled_as` and the errors read :func:`current` (``fxla.symbolic_trace``'s when no entry point set one).
* **The value.**  One computed from tensor sizes alone (``x.size(0)``, ``x.shape[-1] // 2``, ``x.dim()``, and
  ``len()`` or iteration of a tensor) is known when tracing with concrete shapes, so that remedy comes first
  (:func:`sizes_only`; ``torch.where`` is left out: there is no data to select by).  For one computed from tensor data concrete shapes would not help: the remedies for data
  come first (``torch.where`` first for a truth value), and concrete shapes is named last, for the case the
  check could not see through (a value from a custom leaf, say).
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Iterator, List, Optional

import torch

from .node import Node

__all__ = ["Remedies", "SYMBOLIC_TRACE", "COMPILE", "COMPILE_DYNAMIC", "EXPORT", "COMPILE_STEP", "spelled_as",
           "current", "sizes_only", "unknown_value_fix", "argument_fix"]


@dataclass(frozen=True)
class Remedies:
    """One entry point's spelling of the remedies (each a phrase that names the code to write).

    ``concrete_shapes``: trace with the inputs' shapes known; ``concrete_args``: bake an argument in as a
    constant (``None``: the entry point has no such option); ``wrap``: make a function one call of the graph;
    ``leaf``: make a module one call of the graph."""

    concrete_shapes: str
    concrete_args: Optional[str]
    wrap: str
    leaf: str


SYMBOLIC_TRACE = Remedies(
    concrete_shapes="trace with concrete shapes: `fxla.symbolic_trace(model, example_inputs=(...))`",
    concrete_args="pass the value as a constant with `fxla.symbolic_trace(model, concrete_args={...})`",
    wrap="move this code into a function decorated with `@fxla.wrap` (recorded as one call)",
    leaf="mark the module that contains it as a leaf (a `fxla.Tracer` subclass overriding `is_leaf_module`)")

#: ``fxla.compile``: a wrapped function or a leaf module is then an op that needs a lowering rule
COMPILE = Remedies(
    concrete_shapes="compile with concrete shapes: `fxla.compile(model, concrete_shapes=True)` (one trace per "
                    "input signature)",
    concrete_args="pass the value as a constant with `fxla.compile(model, concrete_args={...})`",
    wrap="move this code into a function decorated with `@fxla.wrap` and give it a lowering rule "
         "(`@fxla.lowering.register(fn)`)",
    leaf="mark the module that contains it as a leaf with a lowering rule (`fxla.compile(model, "
         "tracer=MyTracer())`, `MyTracer` overriding `fxla.Tracer.is_leaf_module`)")

#: ``fxla.compile(model, dynamic=...)``: a model that needs concrete shapes keeps its symbolic dims with a
#: concrete-shapes trace whose marked sizes are symbols
COMPILE_DYNAMIC = Remedies(
    concrete_shapes="trace with the call's shapes known and the marked dims symbolic: `fxla.compile(model, "
                    "concrete_shapes=True, dynamic=...)` (what the model's Python decides from a size is checked "
                    "per call), or get symbolic graphs through dynamo: `torch.compile(model, backend=\"fxla\", "
                    "dynamic=True)`",
    concrete_args=COMPILE.concrete_args, wrap=COMPILE.wrap, leaf=COMPILE.leaf)

EXPORT = Remedies(
    concrete_shapes="export with concrete shapes: `fxla.export(model, example_inputs, path, "
                    "concrete_shapes=True)`",
    concrete_args="pass the value as a constant with `fxla.export(model, example_inputs, path, "
                  "concrete_args={...})`",
    wrap=COMPILE.wrap,
    leaf="mark the module that contains it as a leaf with a lowering rule (override "
         "`fxla.Tracer.is_leaf_module`)")

COMPILE_STEP = Remedies(
    concrete_shapes="compile the step with concrete shapes: `fxla.compile_step(model, optimizer, loss_fn, "
                    "concrete_shapes=True)`",
    concrete_args=None,
    wrap=COMPILE.wrap,
    leaf=EXPORT.leaf)

_CURRENT: contextvars.ContextVar[Optional[Remedies]] = contextvars.ContextVar("fxla_remedies", default=None)


@contextlib.contextmanager
def spelled_as(remedies: Remedies) -> Iterator[None]:
    """Trace errors raised inside speak ``remedies`` -- unless an outer ``spelled_as`` is active: the call the
    user made (``fxla.export``, which compiles through ``fxla.compile``'s machinery) wins."""
    token = _CURRENT.set(remedies) if _CURRENT.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _CURRENT.reset(token)


def current(default: Remedies = SYMBOLIC_TRACE) -> Remedies:
    """The remedies of the innermost active :func:`spelled_as` (the outermost call's), else ``default``."""
    found = _CURRENT.get()
    return default if found is None else found


#: tensor methods and attributes that read a size (their result depends on the shape alone)
_SIZE_METHODS = frozenset({"size", "dim", "ndimension", "numel", "nelement"})
_SIZE_ATTRS = frozenset({"shape", "ndim"})
_SIZE_FUNCTIONS = frozenset({torch.numel, torch.Tensor.size, torch.Tensor.dim})
#: where Python's arithmetic on numbers lives (``s * 2``, ``s // 4``, ``s > 3``, ``shape[0]``, ``math.ceil(s)``)
_ARITHMETIC_MODULES = frozenset({"_operator", "operator", "math", "builtins"})


def _reads_size(node: Node) -> bool:
    if node.op == "call_method":
        return node.target in _SIZE_METHODS
    if node.op != "call_function":
        return False
    if node.target is getattr:
        return len(node.args) > 1 and node.args[1] in _SIZE_ATTRS
    try:
        return node.target in _SIZE_FUNCTIONS
    except TypeError:                   # an unhashable callable
        return False


def sizes_only(node: Node) -> bool:
    """Whether ``node``'s value is computed from tensor sizes alone: size reads (``x.size(0)``, ``x.shape``,
    ``x.dim()``, ``x.numel()``) and Python arithmetic on them."""
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n in seen or _reads_size(n):
            continue
        seen.add(n)
        if not _arithmetic(n):
            return False              # a placeholder, a tensor op, a module: the value depends on data
        stack.extend(n.all_input_nodes)
    return True


def _arithmetic(node: Node) -> bool:
    """A call of Python's number arithmetic (``operator``, ``math`` or a builtin), which keeps sizes sizes."""
    return node.op == "call_function" and node.target is not getattr \
        and getattr(node.target, "__module__", None) in _ARITHMETIC_MODULES


def _listed(remedies: List[str]) -> str:
    return remedies[0] if len(remedies) == 1 else ", ".join(remedies[:-1]) + ", or " + remedies[-1]


def unknown_value_fix(*, sizes: bool, truth: bool, concrete_shapes_mode: bool) -> str:
    """The ``fix:`` of a request for a concrete value the trace does not have, in :func:`current`'s words, the
    remedy that fits first (see the module docstring): ``sizes``, the value comes from tensor sizes alone
    (:func:`sizes_only`, or the length of a tensor); ``truth``, a truth value was asked for (``if``, ``while``).
    In a concrete-shapes trace sizes are known already, so the value depends on data and the concrete-shapes
    remedy is left out."""
    r = current()
    where = "replace data-dependent branching with `torch.where` (both sides computed, one kept per element)"
    others = [remedy for remedy in (r.concrete_args, r.wrap, r.leaf) if remedy]
    if sizes and not concrete_shapes_mode:
        return (f"the value comes from tensor sizes only, which a trace with concrete shapes knows: "
                f"{_listed([r.concrete_shapes, *others])}")
    data = [where, *others] if truth else [*others, where]
    if concrete_shapes_mode:
        return _listed(data)
    return _listed([*data, f"if it depends only on shapes, {r.concrete_shapes}"])


def argument_fix() -> str:
    """The ``fix:`` of a value the graph cannot hold as an argument, in :func:`current`'s words."""
    r = current()
    return _listed([remedy for remedy in (r.concrete_args, r.wrap) if remedy])
