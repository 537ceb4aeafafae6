"""The plain Python values a model's code reads from module globals and closures, found in its bytecode.

A trace reads a global (``SCALE = 2.0`` used in ``forward``) or a closure variable (a ``loss_fn`` defined in
``main()`` reading ``beta``, which the training loop reassigns) once, when it runs, and bakes the value into the
graph, as it does with a module's plain attributes (:mod:`fxla.frontend.attribute_reads`).  Those attributes are
watched; so are these: :func:`plain_reads` lists, for each function a trace runs from (every module's
``forward``, ``fxla.compile_step``'s ``loss_fn``: :func:`traced_functions`), the globals its code loads
(``LOAD_GLOBAL``, nested functions and comprehensions included) and the closure cells it reads whose value is
plain data (numbers, strings, booleans, ``None``, and tuples of them); :class:`fxla.modes.ModeWatch` reads them
before each call, and a call after one changed runs the trace of the new value, as for an attribute.

Not seen: globals read by other functions forward calls (helpers in other modules), and plain values reached
through a global object (``CONFIG.beta``: an attribute of an object that is not a module).
"""
from __future__ import annotations

import dis
import functools
import types
from typing import Any, Callable, Iterator, List, Tuple

import torch

__all__ = ["plain_reads", "traced_functions", "is_plain"]

_SCALARS = (bool, int, float, complex, str, bytes)
_ABSENT = object()


def is_plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is plain data a trace bakes in (and compares by value)."""
    if value is None or isinstance(value, _SCALARS):
        return True
    return depth < 2 and type(value) is tuple and len(value) <= 16 and all(is_plain(v, depth + 1) for v in value)


def _function(fn: Any) -> Any:
    """The Python function behind ``fn`` (a bound method, a ``functools.partial``, a callable object), or None."""
    for _ in range(8):
        if isinstance(fn, types.FunctionType):
            return fn
        if isinstance(fn, types.MethodType):
            fn = fn.__func__
        elif isinstance(fn, functools.partial):
            fn = fn.func
        elif callable(fn) and not isinstance(fn, type) and isinstance(getattr(type(fn), "__call__", None),
                                                                       types.FunctionType):
            fn = type(fn).__call__
        else:
            return None
    return None


def _global_names(code: types.CodeType) -> Iterator[str]:
    for ins in dis.get_instructions(code):
        if ins.opname == "LOAD_GLOBAL":
            yield ins.argval
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _global_names(const)


def plain_reads(fn: Any) -> List[Tuple[str, Any, str, str]]:
    """``(kind, holder, key, label)`` of each plain value ``fn``'s code reads (see the module docstring):
    ``("global", fn.__globals__, name, ...)`` or ``("cell", cell, name, ...)``; ``label`` names it for messages."""
    fn = _function(fn)
    if fn is None:
        return []
    where = getattr(fn, "__qualname__", fn.__name__)
    found, seen = [], set()
    for name in _global_names(fn.__code__):
        value = fn.__globals__.get(name, _ABSENT)
        if name not in seen and value is not _ABSENT and is_plain(value):
            seen.add(name)
            found.append(("global", fn.__globals__, name, f"{where}: global {name}"))
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:                  # (an empty cell: not assigned yet)
            continue
        if is_plain(value):
            found.append(("cell", cell, name, f"{where}: closure variable {name}"))
    return found



def traced_functions(root: Any) -> List[Callable]:
    """The functions a trace of ``root`` starts from: each module class's ``forward`` (once per class; not torch's
    own layers), and the functions a module lists in its ``_fxla_traced_functions`` attribute
    (``fxla.compile_step``'s loss).  A function root is listed too, but a compiled function has no watch before
    its calls (:class:`fxla.modes.ModeWatch` runs for modules), so its globals are not followed (docs/tracing.md)."""
    if not isinstance(root, torch.nn.Module):
        return [root]
    functions, classes = [], set()
    for m in root.modules():
        if type(m) not in classes:
            classes.add(type(m))
            if not type(m).__module__.startswith("torch."):         # (torch's layers read no user globals)
                functions.append(type(m).forward)
        functions.extend(vars(m).get("_fxla_traced_functions", ()))
    return functions
