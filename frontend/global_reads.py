"""The plain Python values a model's code reads from module globals and closures, found in its bytecode.

A trace reads a global (``SCALE = 2.0`` used in ``forward``) or a closure variable (a ``loss_fn`` defined in
``main()`` reading ``beta``, which the training loop reassigns) once, when it runs, and bakes the value into the
graph, as it does with a module's plain attributes (:mod:`fxla.frontend.attribute_reads`).  Those attributes are
watched; so are these: :func:`plain_reads` lists, for each function whose reads are watched
(:func:`traced_functions`), the globals its code loads (``LOAD_GLOBAL``, nested functions and comprehensions
included) and the closure variables it reads whose value is plain data (numbers, strings, booleans, ``None``, and
tuples and small lists of them), and the plain values it reaches from a global or a closure variable through
attributes, constant keys and constant indices (``CONFIG.beta``, ``HP["beta"]``, ``HP.get("beta")``,
``cfg.train.lr``, ``LR[0]``, ``Config.beta`` of a class, ``getattr(CONFIG, "beta")``, and through a local variable
assigned once: ``cfg = CONFIG.train; cfg.lr``): such a chain is looked up again before every call and
only its end value counts, so replacing ``cfg.train`` by an object with another ``lr`` is seen, and a change
elsewhere in ``HP`` or an equal config object made anew is not a change.  :class:`fxla.modes.ModeWatch` reads
them before each call, and a call after one changed runs the trace of the new value, as for an attribute.

The functions watched are those a trace starts from (every module class's ``forward``, ``fxla.compile_step``'s
``loss_fn``, a compiled function) and, in the user's own code (not the standard library, an installed package or
fxla; code typed at a prompt counts as the user's), the functions they name through a global, a closure variable
or a user module's attribute (``helper(x)``, ``utils.helper(x)``; decorated ones through ``__wrapped__``) and the
methods, static methods and properties of the model's classes they reach as ``self.<name>``, :data:`MAX_DEPTH`
calls deep and at most :data:`MAX_FUNCTIONS` of them.  Not seen: globals that library code reads (a Hugging Face
helper's module constants are constants), values read through a variable key (``HP[name]``) or
``getattr`` with a computed name, through a local variable assigned more than once or on a branch (``cfg = A if
flag else B``), and functions reached other than through a name (a function held in an attribute, ``self.fn =
helper``) or as ``self.<name>``.
"""
from __future__ import annotations

import builtins
import collections
import dis
import functools
import inspect
import os
import sysconfig
import types
from typing import Any, Callable, Iterator, List, Tuple

import torch

from .source import is_internal_file

__all__ = ["plain_reads", "traced_functions", "is_plain", "instructions", "cell_value", "ABSENT", "MAX_DEPTH",
           "MAX_FUNCTIONS"]

#: how many calls deep the user's functions are followed from one a trace starts from
MAX_DEPTH = 16
#: at most this many functions are followed per model
MAX_FUNCTIONS = 256

_SCALARS = (bool, int, float, complex, str, bytes)
#: what a read of a value that is not there gives (a global not defined, an empty cell, a missing key)
ABSENT = type("Absent", (), {"__repr__": lambda self: "(not set)", "__slots__": ()})()


def is_plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is plain data a trace bakes in (and compares by value)."""
    if value is None or isinstance(value, _SCALARS):
        return True
    return depth < 2 and type(value) in (tuple, list) and len(value) <= 64 and \
        all(is_plain(v, depth + 1) for v in value)


def _function(fn: Any) -> Any:
    """The Python function behind ``fn`` (a bound method, a ``functools.partial``, a static or class method, a
    property's getter, a callable object), or None."""
    for _ in range(8):
        if isinstance(fn, types.FunctionType):
            return fn
        if isinstance(fn, (types.MethodType, staticmethod, classmethod)):
            fn = fn.__func__
        elif isinstance(fn, functools.partial):
            fn = fn.func
        elif isinstance(fn, property):
            fn = fn.fget
        elif isinstance(fn, functools.cached_property):
            fn = fn.func
        elif callable(fn) and not isinstance(fn, type) and isinstance(
                inspect.getattr_static(type(fn), "__call__", None), types.FunctionType):
            fn = type(fn).__call__
        else:
            return None
    return None


def _unwrapped(fn: Any) -> Iterator[types.FunctionType]:
    """``fn``'s Python function and those of what it wraps (``functools.wraps``' ``__wrapped__``), each once."""
    for _ in range(8):
        plain = _function(fn)
        if plain is not None:
            yield plain
        try:
            fn = inspect.getattr_static(fn, "__wrapped__")
        except AttributeError:
            return


@functools.lru_cache(maxsize=4096)
def instructions(code: types.CodeType) -> Tuple[dis.Instruction, ...]:
    """``code``'s bytecode instructions (read once per code object)."""
    return tuple(dis.get_instructions(code))


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """``code`` and the code of the functions and comprehensions nested in it."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _chains(code: types.CodeType) -> Iterator[Tuple[str, str, Tuple[Any, ...]]]:
    """``(kind, name, steps)`` of each global (``"global"``) or closure variable (``"cell"``) the code loads, with
    the attributes (``LOAD_ATTR``, ``LOAD_METHOD``: a str step; ``getattr(x, "name"[, default])``: ``("getattr",
    name)``) and constant subscripts (``LOAD_CONST k; BINARY_SUBSCR``: ``("key", k)``) read from it right after,
    also through a local variable assigned it once on a straight path (``cfg = CONFIG.train; cfg.lr``; not a
    parameter, not ``A if flag else B``; in nested code too, a comprehension's); nested code included."""
    parts = list(_codes(code))
    stores = collections.Counter(op.argval for part in parts for op in instructions(part)
                                 if op.opname in ("STORE_FAST", "STORE_DEREF", "DELETE_FAST", "DELETE_DEREF"))
    cells: dict = {}                                # (aliases held in cells: read by nested code)
    for part in parts:
        ins = instructions(part)
        arguments = set(part.co_varnames[:_argument_count(part)])
        aliases: dict = {}
        for i, op in enumerate(ins):
            root = _root(op, aliases, cells)
            if root is None:
                continue
            steps, j = _steps(ins, i + 1)
            if j < len(ins) and ins[j].opname in ("STORE_FAST", "STORE_DEREF") and stores[ins[j].argval] == 1 \
                    and ins[j].argval not in arguments and not any(x.is_jump_target for x in ins[i + 1:j + 1]):
                (aliases if ins[j].opname == "STORE_FAST" else cells)[ins[j].argval] = \
                    (root[0], root[1], root[2] + steps)                          # (a local alias)
            yield root[0], root[1], root[2] + steps
            if op.opname == "LOAD_GLOBAL" and op.argval == "getattr" and i + 1 < len(ins):
                yield from _getattr_chain(ins, i + 1, aliases, cells)


def _argument_count(code: types.CodeType) -> int:
    return code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) + \
        bool(code.co_flags & inspect.CO_VARKEYWORDS)


def _getattr_chain(ins, i: int, aliases: dict, cells: dict) -> Iterator[Tuple[str, str, Tuple[Any, ...]]]:
    """The chain of ``getattr(<chain>, "name")`` or ``getattr(<chain>, "name", <constant>)`` whose object is loaded
    at instruction ``i`` (after ``LOAD_GLOBAL getattr``), if the call is written so."""
    inner = _root(ins[i], aliases, cells)
    if inner is None:
        return
    steps, j = _steps(ins, i + 1)
    if j < len(ins) and ins[j].opname == "LOAD_CONST" and type(ins[j].argval) is str:
        end = j + 2 if j + 1 < len(ins) and ins[j + 1].opname == "LOAD_CONST" else j + 1
        if end < len(ins) and ins[end].opname in ("PRECALL", "CALL", "CALL_FUNCTION"):
            yield inner[0], inner[1], inner[2] + steps + (("getattr", ins[j].argval),)


def _root(op: dis.Instruction, aliases: dict, cells: dict):
    """``(kind, name, steps)`` where ``op`` loads a global, a closure variable or a local alias of one, else None."""
    if op.opname in ("LOAD_DEREF", "LOAD_CLASSDEREF") and op.argval in cells:
        return cells[op.argval]
    if op.opname in ("LOAD_GLOBAL", "LOAD_DEREF", "LOAD_CLASSDEREF"):
        return ("global" if op.opname == "LOAD_GLOBAL" else "cell"), op.argval, ()
    return aliases.get(op.argval) if op.opname == "LOAD_FAST" else None


def _steps(ins: Tuple[dis.Instruction, ...], j: int) -> Tuple[Tuple[Any, ...], int]:
    """The attribute and constant-subscript steps from instruction ``j`` on (see :func:`_chains`), and where they
    end."""
    steps: list = []
    while j < len(ins) and len(steps) < 4:
        if ins[j].opname == "LOAD_METHOD" and ins[j].argval == "get" and j + 1 < len(ins) and \
                ins[j + 1].opname == "LOAD_CONST" and type(ins[j + 1].argval) in (str, int):
            steps.append(("get", ins[j + 1].argval))           # (d.get("k") / d.get("k", default))
            return tuple(steps), len(ins)
        if ins[j].opname in ("LOAD_ATTR", "LOAD_METHOD"):
            steps.append(ins[j].argval)
            j += 1
        elif (ins[j].opname == "LOAD_CONST" and j + 1 < len(ins) and ins[j + 1].opname == "BINARY_SUBSCR"
              and type(ins[j].argval) in (str, int)):
            steps.append(("key", ins[j].argval))
            j += 2
        else:
            break
    return tuple(steps), j


def _step(value: Any, step: Any) -> Any:
    """``value``'s attribute or constant item ``step``, ``ABSENT`` where it has none (or reading it fails); a
    library module's attributes are not read (constants)."""
    try:
        if isinstance(step, tuple) and step[0] == "getattr":
            return _step(value, step[1])
        if isinstance(step, tuple):
            key = step[1]
            if isinstance(value, dict):             # (OrderedDict, a dict subclass: its items, not its __getitem__)
                return dict.get(value, key, ABSENT)
            if type(value) in (list, tuple) and type(key) is int and -len(value) <= key < len(value):
                return value[key]
            return ABSENT
        if isinstance(value, types.ModuleType) and not _user_module(value):
            return ABSENT
        return getattr(value, step, ABSENT)
    except Exception:  # noqa: BLE001  (a __getattr__ that raises something else: not followed)
        return ABSENT


def _resolve(root: Callable[[], Any], steps: Tuple[Any, ...]) -> Any:
    """The value at the end of a chain now: ``root()``, then each step (``ABSENT`` once a link is missing)."""
    value = root()
    for step in steps:
        if value is ABSENT:
            break
        value = _step(value, step)
    return value


def cell_value(cell: Any) -> Any:
    """A closure cell's contents, or :data:`ABSENT`."""
    try:
        return cell.cell_contents
    except ValueError:                  # (an empty cell: not assigned yet)
        return ABSENT


def _roots(fn: types.FunctionType):
    """``(kind, name) -> (holder, read())``: where ``fn``'s globals and closure variables live."""
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    globals_ = fn.__globals__

    def root(kind: str, name: str):
        if kind == "cell":
            cell = cells.get(name)
            return None if cell is None else (cell, functools.partial(cell_value, cell))
        return globals_, functools.partial(globals_.get, name, ABSENT)
    return root


def plain_reads(fn: Any) -> List[Tuple[str, Any, Any, str]]:
    """``(kind, holder, key, label)`` of each plain value ``fn``'s code reads (see the module docstring):
    ``("global", globals dict, name, ...)``, ``("cell", cell, name, ...)`` or, for a chain of attributes and keys,
    ``("chain", read(), (holder, name, steps), ...)`` (``read()``: the chain's end value now); ``label`` names it
    for messages (the function's module and qualified name, then the chain)."""
    fn = _function(fn)
    if fn is None:
        return []
    where = f"{fn.__module__}.{fn.__qualname__}" if fn.__module__ not in (None, "__main__") else fn.__qualname__
    root_of = _roots(fn)
    found, seen = [], set()
    user = _user_file(fn.__code__.co_filename)      # (library code: its plain globals and cells, no chains)
    for kind, name, steps in _chains(fn.__code__):
        steps = steps if user else ()
        root = root_of(kind, name)
        if root is None:
            continue
        holder, read = root
        value, used = read(), ()
        if value is ABSENT and kind == "global" and name in vars(builtins):
            continue                    # (a builtin: range, len)
        for step in steps:              # (up to the first plain value: what the code computes with)
            if value is ABSENT or is_plain(value):
                break
            value, used = _step(value, step), used + (step,)
        if user and isinstance(value, torch.nn.Module):     # (CRIT(x): the
            forward = _function(inspect.getattr_static(type(value), "forward", None))    # self.eps its forward reads)
            steps = [used + (a,) for a in dict.fromkeys(_self_names(forward))] if forward is not None else []
            found.extend(_module_reads(holder, name, read, steps, value, where, kind, seen))
            continue
        if value is not ABSENT and not is_plain(value) or (value is ABSENT and used and
                                                            used[-1][0] not in ("get", "getattr")):
            continue    # (not plain data; a chain whose link is missing now: only d.get("k"), getattr(o, "k", d))
        found.extend(_watch(kind, holder, name, read, used, where, seen))
    return found


def _module_reads(holder, name, read, chains, module, where, kind, seen) -> Iterator[Tuple[str, Any, Any, str]]:
    """The chain watches of the plain attributes a module reached from a global or a closure variable (not part of
    the model: nothing else watches it) reads as ``self.<attr>`` in its forward."""
    for used in chains:
        value = _step(module, used[-1])
        if value is not ABSENT and is_plain(value):
            yield from _watch(kind, holder, name, read, used, where, seen)


def _watch(kind, holder, name, read, used, where, seen) -> Iterator[Tuple[str, Any, Any, str]]:
    """The watch of the value at ``used`` from the global or closure variable ``name`` (in ``holder``; ``read()``
    gives it now), labelled for messages; nothing when ``seen`` has it already."""
    key = (id(holder), name, used)
    if key in seen:
        return
    seen.add(key)
    text = name + "".join(f".{s[1]}" if isinstance(s, tuple) and s[0] == "getattr" else f"[{s[1]!r}]"
                          if isinstance(s, tuple) else f".{s}" for s in used)
    label = f"{where}: {'global' if kind == 'global' else 'closure variable'} {text}"
    yield ("chain", functools.partial(_resolve, read, used), (holder, name, used), label) if used else \
        (kind, holder, name, label)


@functools.lru_cache(maxsize=None)
def _stdlib_dirs() -> Tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple(os.path.join(os.path.realpath(paths[k]), "") for k in ("stdlib", "platstdlib") if k in paths)


@functools.lru_cache(maxsize=4096)
def _user_file(filename: str) -> bool:
    """Whether ``filename`` is the user's code: not fxla's or torch's (:func:`~fxla.base.source.is_internal_file`),
    the standard library or an installed package (any ``site-packages`` / ``dist-packages`` folder); code typed at a
    prompt (``<stdin>``, ``<ipython-input-1>``) is, Python's frozen modules and generated graph code are not."""
    if filename.startswith("<"):        # (not Python's frozen modules, nor fxla's and torch.fx's generated code)
        return not filename.startswith(("<frozen", "<fxla-generated", "<eval_with_key"))
    path = os.path.realpath(filename)
    return not is_internal_file(filename) and not path.startswith(_stdlib_dirs()) and \
        not any(part in ("site-packages", "dist-packages") for part in path.split(os.sep))


def _user_module(module: types.ModuleType) -> bool:
    return _user_file(getattr(module, "__file__", None) or "<module>")


def _named(fn: types.FunctionType) -> Iterator[Any]:
    """What ``fn`` names through a global or a closure variable, and the attributes of those that are user modules
    (``utils.helper``)."""
    root_of = _roots(fn)
    for kind, name, steps in dict.fromkeys(_chains(fn.__code__)):
        root = root_of(kind, name)
        value = root[1]() if root is not None else ABSENT
        if isinstance(value, types.ModuleType) and steps and isinstance(steps[0], str):
            value = _step(value, steps[0])
        elif isinstance(value, type) and issubclass(value, torch.autograd.Function) and steps[:1] == ("apply",):
            value = inspect.getattr_static(value, "forward", ABSENT)              # (Fn.apply: its forward)
        elif isinstance(value, type) and steps and isinstance(steps[0], str):      # (Helper.scale: a static method)
            value = inspect.getattr_static(value, steps[0], ABSENT)
        if isinstance(value, torch.nn.Module):          # (a module instance called: its forward)
            value = inspect.getattr_static(type(value), "forward", ABSENT)
        if value is not ABSENT:
            yield value


def _self_names(fn: types.FunctionType) -> Iterator[str]:
    """The attributes ``fn`` reads of its first argument (``self.<name>``), nested code included."""
    code = fn.__code__
    if not code.co_argcount:
        return
    first = code.co_varnames[0]
    for part in _codes(code):
        ins = instructions(part)
        for i, op in enumerate(ins[:-1]):
            if op.opname in ("LOAD_FAST", "LOAD_DEREF") and op.argval == first and \
                    ins[i + 1].opname in ("LOAD_ATTR", "LOAD_METHOD"):
                yield ins[i + 1].argval


def _callees(fn: types.FunctionType, classes) -> Iterator[types.FunctionType]:
    """The user's functions ``fn`` names (see :func:`_named`) and the methods of ``classes`` it reaches as
    ``self.<name>``, unwrapped."""
    candidates = list(_named(fn))
    for name in dict.fromkeys(_self_names(fn)):
        for cls in classes:
            try:
                candidates.append(inspect.getattr_static(cls, name))
            except AttributeError:
                continue
    for value in candidates:
        if isinstance(value, type):
            continue
        for plain in _unwrapped(value):
            if _user_file(plain.__code__.co_filename):
                yield plain


def _followed(starts: List[Callable], classes) -> List[Callable]:
    """``starts`` and the user's functions they reach (see the module docstring), each once."""
    functions: dict = {}
    layer = list(starts)
    for _ in range(MAX_DEPTH + 1):
        after = []
        for fn in layer:
            plain = _function(fn)
            key = plain if plain is not None else fn
            if key in functions or len(functions) >= MAX_FUNCTIONS:
                continue
            functions[key] = fn
            if plain is not None and _user_file(plain.__code__.co_filename):
                after.extend(_callees(plain, classes))
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
