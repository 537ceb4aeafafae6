"""The plain Python values a model's code reads from module globals and closures, found in its bytecode.

A trace reads a global (``SCALE = 2.0`` used in ``forward``) or a closure variable (a ``loss_fn`` defined in
``main()`` reading ``beta``, which the training loop reassigns) once, when it runs, and bakes the value into the
graph, as it does with a module's plain attributes (:mod:`fxla.frontend.attribute_reads`).  Those attributes are
watched; so are these: :func:`plain_reads` lists, for each function whose reads are watched
(:func:`traced_functions`), the globals its code loads (``LOAD_GLOBAL``, nested functions and comprehensions
included) and the closure cells it reads whose value is plain data (numbers, strings, booleans, ``None``, and
tuples of them), and the plain values it reaches from a global through attributes and constant keys
(``CONFIG.beta``, ``HP["beta"]``, ``cfg.train.lr``: every link is watched, an object by identity);
:class:`fxla.modes.ModeWatch` reads them before each call, and a call after one changed runs the trace of the new
value, as for an attribute.

The functions watched are those a trace starts from (every module class's ``forward``, ``fxla.compile_step``'s
``loss_fn``, a compiled function) and, in the user's own code (not the standard library, an installed package or
fxla), the methods of the user's module classes and the functions they name through a global (``helper(x)``,
``utils.helper(x)``), :data:`MAX_DEPTH` calls deep.  Not seen: globals that library code reads (a Hugging Face
helper's module constants are constants), a class attribute changed on the class (``Config.beta = 2`` where the
object has no ``beta`` of its own), values read through ``getattr``, a variable key or a local alias.
"""
from __future__ import annotations

import dis
import functools
import os
import sys
import sysconfig
import types
from typing import Any, Callable, Iterator, List, Tuple

import torch

__all__ = ["plain_reads", "traced_functions", "is_plain", "MAX_DEPTH"]

#: how many calls deep the user's functions are followed from one a trace starts from
MAX_DEPTH = 4
#: at most this many functions are followed per model
MAX_FUNCTIONS = 256

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




def _global_chains(code: types.CodeType) -> Iterator[Tuple[Any, ...]]:
    """``(global name, step, ...)`` for each global the code loads, with the attributes (``LOAD_ATTR``,
    ``LOAD_METHOD``: a str step) and constant subscripts (``LOAD_CONST k; BINARY_SUBSCR``: ``("key", k)``) read
    from it right after."""
    ins = list(dis.get_instructions(code))
    for i, op in enumerate(ins):
        if op.opname != "LOAD_GLOBAL":
            continue
        chain, j = [op.argval], i + 1
        while j < len(ins) and len(chain) < 4:
            if ins[j].opname in ("LOAD_ATTR", "LOAD_METHOD"):
                chain.append(ins[j].argval)
                j += 1
            elif (ins[j].opname == "LOAD_CONST" and j + 1 < len(ins) and ins[j + 1].opname == "BINARY_SUBSCR"
                  and isinstance(ins[j].argval, (str, int))):
                chain.append(("key", ins[j].argval))
                j += 2
            else:
                break
        yield tuple(chain)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _global_chains(const)


def _link(value: Any, step: Any):
    """``(holder dict, key, value)``: one step of a chain from ``value``; None where it is not followed."""
    if isinstance(step, tuple):
        return (value, step[1], value[step[1]]) if type(value) is dict and step[1] in value else None
    if isinstance(value, type) or isinstance(value, types.ModuleType) and not _user_module(value):
        return None                 # (a class's attributes live in a mappingproxy; a library's: constants)
    holder = getattr(value, "__dict__", None)
    return (holder, step, holder[step]) if type(holder) is dict and step in holder else None


def _chain_reads(fn: types.FunctionType, where: str) -> Iterator[Tuple[str, Any, Any, str]]:
    """The watches of ``fn``'s global chains that end at plain data: ``("global", holder, key, label)`` per link."""
    for chain in dict.fromkeys(_global_chains(fn.__code__)):
        value = fn.__globals__.get(chain[0], _ABSENT)
        links, text = [(fn.__globals__, chain[0], chain[0])], chain[0]
        for step in chain[1:]:
            if value is _ABSENT or is_plain(value):
                break
            found = _link(value, step)
            if found is None:
                break
            holder, key, value = found
            text += f"[{key!r}]" if isinstance(step, tuple) else f".{key}"
            links.append((holder, key, text))
        if value is not _ABSENT and is_plain(value):
            for holder, key, shown in links:
                yield "global", holder, key, f"{where}: global {shown}"


def plain_reads(fn: Any) -> List[Tuple[str, Any, Any, str]]:
    """``(kind, holder, key, label)`` of each plain value ``fn``'s code reads (see the module docstring):
    ``("global", holder dict, key, ...)`` (a global, or a link of a chain from one) or ``("cell", cell, name,
    ...)``; ``label`` names it for messages."""
    fn = _function(fn)
    if fn is None:
        return []
    where = getattr(fn, "__qualname__", fn.__name__)
    found, seen = [], set()
    for read in _chain_reads(fn, where):
        if (id(read[1]), read[2]) not in seen:
            seen.add((id(read[1]), read[2]))
            found.append(read)
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:                  # (an empty cell: not assigned yet)
            continue
        if is_plain(value):
            found.append(("cell", cell, name, f"{where}: closure variable {name}"))
    return found


@functools.lru_cache(maxsize=None)
def _library_dirs() -> Tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # (fxla's own packages)
    dirs.update(os.path.join(here, d) for d in ("api", "frontend", "lowering", "runtime", "dialects", "base"))
    return tuple(os.path.join(os.path.realpath(d), "") for d in dirs)


@functools.lru_cache(maxsize=4096)
def _user_file(filename: str) -> bool:
    """Whether ``filename`` is the user's code (not the standard library, an installed package or fxla)."""
    return not filename.startswith("<") and not os.path.realpath(filename).startswith(_library_dirs())


def _user_module(module: types.ModuleType) -> bool:
    return _user_file(getattr(module, "__file__", None) or "<>")


def _callees(fn: types.FunctionType) -> Iterator[types.FunctionType]:
    """The user's functions ``fn`` names through a global, or an attribute of a global module of the user's."""
    for chain in dict.fromkeys(_global_chains(fn.__code__)):
        value = fn.__globals__.get(chain[0])
        if isinstance(value, types.ModuleType) and len(chain) > 1 and isinstance(chain[1], str) \
                and _user_module(value):
            value = getattr(value, chain[1], None)
        callee = _function(value) if callable(value) and not isinstance(value, type) else None
        if callee is not None and _user_file(callee.__code__.co_filename):
            yield callee


def _methods(cls: type) -> Iterator[types.FunctionType]:
    """The functions the user's classes in ``cls``'s MRO define (not dunder methods: ``__init__`` runs before)."""
    for klass in cls.__mro__:
        module = sys.modules.get(klass.__module__)
        if module is not None and _user_module(module):
            yield from (f for name, f in vars(klass).items() if isinstance(f, types.FunctionType)
                        and not name.startswith("__") and _user_file(f.__code__.co_filename))


def _followed(starts: List[Callable], classes) -> List[Callable]:
    """``starts``, the methods of ``classes`` and the user's functions they call (module docstring), each once."""
    functions: dict = {}
    layer = list(starts) + [f for cls in classes for f in _methods(cls)]
    for _ in range(MAX_DEPTH + 1):
        after = []
        for fn in layer:
            plain = _function(fn)
            key = plain if plain is not None else fn
            if key in functions or len(functions) >= MAX_FUNCTIONS:
                continue
            functions[key] = fn
            if plain is not None and _user_file(plain.__code__.co_filename):
                after.extend(_callees(plain))
        layer = after
    return list(functions.values())


def traced_functions(root: Any) -> List[Callable]:
    """The functions whose reads are watched for a trace of ``root`` (see the module docstring): each module
    class's ``forward`` (once per class; not torch's own layers), the functions a module lists in its
    ``_fxla_traced_functions`` attribute (``fxla.compile_step``'s loss), a function root, and the user's code
    they reach."""
    if not isinstance(root, torch.nn.Module):
        return _followed([root], ())
    functions, classes = [], {}
    for m in root.modules():
        if type(m) not in classes:
            classes[type(m)] = None
            if not type(m).__module__.startswith("torch."):         # (torch's layers read no user globals)
                functions.append(type(m).forward)
        functions.extend(vars(m).get("_fxla_traced_functions", ()))
    return _followed(functions, [c for c in classes if not c.__module__.startswith("torch.")])
