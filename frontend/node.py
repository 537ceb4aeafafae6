"""The :class:`Node`: one operation of a :class:`~fxla.frontend.graph.Graph`.

Also provides :func:`map_arg` / :func:`map_aggregate`, the helpers for walking the
nested argument structures (tuples, lists, dicts, slices) that nodes hold, and
:func:`empty_dict_like` / :func:`build_dict`, which keep the dict subclasses arguments may be.
"""
from __future__ import annotations

import builtins
import collections
import operator
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch.utils import _pytree as pytree

from fxla.base.shown import abbreviate

from .names import qualified_name

__all__ = ["Node", "OPCODES", "CALL_OPCODES", "map_arg", "map_aggregate", "kept_dict_type", "empty_dict_like", "build_dict",
           "Argument", "Target"]

#: The six opcodes of the IR (see :class:`Node`).
OPCODES = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")
#: The opcodes of the nodes that compute (calls).
CALL_OPCODES = ("call_function", "call_method", "call_module")

Argument = Any
Target = Any

# In-place Python operators: never dead even if their result is unused.
_IMPURE_FUNCTIONS = frozenset({
    operator.setitem, operator.delitem, operator.iadd, operator.isub, operator.imul,
    operator.itruediv, operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul,
    operator.iand, operator.ior, operator.ixor, operator.ilshift, operator.irshift,
    builtins.print, torch._assert,
})


_AGGREGATES = (tuple, list, dict, slice)


def kept_dict_type(cls: type) -> bool:
    """Whether arguments keep dicts of type ``cls``: a dict subclass torch's pytree flattens (``OrderedDict``,
    ``defaultdict``, Hugging Face ``ModelOutput`` classes: registered, so a program's output spec keeps the type
    and a compiled call returns it); a subclass pytree does not know would be one opaque leaf."""
    return cls is not dict and isinstance(cls, type) and issubclass(cls, dict) and cls in pytree.SUPPORTED_NODES


def empty_dict_like(a: dict) -> dict:
    """An empty dict of ``a``'s type when arguments keep it (:func:`kept_dict_type`), else a plain ``dict``."""
    cls = type(a)
    if not kept_dict_type(cls):
        return {}
    try:
        return cls(a.default_factory) if isinstance(a, collections.defaultdict) else cls()
    except Exception:                     # a constructor that needs arguments: keep the items, as a dict
        return {}


def build_dict(cls: type, items: dict) -> dict:
    """A ``cls`` holding ``items`` (what generated code calls to rebuild a kept dict subclass; item by item,
    since a ``ModelOutput`` refuses ``update``)."""
    out = cls()
    for k, v in items.items():
        out[k] = v
    return out


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """Apply ``fn`` to every leaf of ``a``, rebuilding tuples, lists, dicts and slices.

    Named tuples and struct sequences (``torch.return_types.max`` …) keep their type;
    ``torch.Size`` stays a ``torch.Size`` when all of its mapped elements are still ints (or SymInts).
    """
    # fast paths for the exact built-in containers (what almost every node's args are); leaves are mapped
    # in place, subclasses and slices take the general path below -- same results, same order of fn calls
    ta = type(a)
    if ta is tuple:
        return tuple([map_aggregate(e, fn) if isinstance(e, _AGGREGATES) else fn(e) for e in a])
    if ta is list:
        return [map_aggregate(e, fn) if isinstance(e, _AGGREGATES) else fn(e) for e in a]
    if ta is dict:
        return {k: map_aggregate(v, fn) if isinstance(v, _AGGREGATES) else fn(v) for k, v in a.items()}
    if isinstance(a, tuple):
        t = tuple(map_aggregate(e, fn) for e in a)
        if isinstance(a, torch.Size):
            return torch.Size(t) if all(type(e) is int or type(e) is torch.SymInt for e in t) else t
        if hasattr(a, "_fields"):
            return type(a)(*t)
        return type(a)(t) if hasattr(type(a), "n_sequence_fields") else t
    if isinstance(a, list):
        return [map_aggregate(e, fn) for e in a]
    if isinstance(a, dict):
        out = empty_dict_like(a)
        for k, v in a.items():
            out[k] = map_aggregate(v, fn)
        return out
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable[["Node"], Argument]) -> Argument:
    """Apply ``fn`` to every :class:`Node` inside the nested argument ``a``."""
    ta = type(a)
    if ta is tuple:                  # fast path: a flat tuple of nodes and literals (most nodes' args)
        return tuple([fn(e) if isinstance(e, Node) else (map_arg(e, fn) if isinstance(e, _AGGREGATES) else e)
                      for e in a])
    if ta is dict:
        return {k: fn(v) if isinstance(v, Node) else (map_arg(v, fn) if isinstance(v, _AGGREGATES) else v)
                for k, v in a.items()}
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _target_str(target: Target) -> str:
    if isinstance(target, str):
        return target
    dotted = qualified_name(target)
    if dotted is not None:
        return dotted
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or repr(target)
    return f"{module}.{name}" if module and module != "builtins" else name


def _format_arg(a: Argument) -> str:
    if isinstance(a, Node):
        return f"%{a.name}"
    if isinstance(a, tuple) and not isinstance(a, torch.Size):
        inner = ", ".join(_format_arg(e) for e in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(_format_arg(e) for e in a) + "]"
    if isinstance(a, dict):
        body = "{" + ", ".join(f"{k!r}: {_format_arg(v)}" for k, v in a.items()) + "}"
        return body if type(a) is dict else f"{type(a).__name__}({body})"
    if isinstance(a, slice):
        return f"slice({_format_arg(a.start)}, {_format_arg(a.stop)}, {_format_arg(a.step)})"
    if callable(a) and not isinstance(a, torch.nn.Module):
        return _target_str(a)
    return repr(a)


def _short_arg(a: Any) -> Optional[str]:
    """:func:`abbreviate`'s text for the atoms of a node argument, as :func:`_format_arg` writes them (None:
    its default)."""
    if isinstance(a, Node):
        return f"%{a.name}"
    if isinstance(a, (torch.Size, slice)) or (callable(a) and not isinstance(a, torch.nn.Module)):
        return _format_arg(a)
    return None


class Node:
    """One operation in a :class:`Graph` (the IR is in SSA form; a node *is* its value).

    Fields:

    * ``graph``  -- the owning graph.
    * ``name``   -- unique (within the graph) identifier, a valid Python name.
    * ``op``     -- one of the six opcodes:

      ================  =========================================  ==============================
      op                target                                     args / kwargs
      ================  =========================================  ==============================
      ``placeholder``   parameter name (``'x'``, ``'*args'``)      ``args`` = ``(default,)`` or ``()``
      ``get_attr``      qualified attribute name (``'fc1.weight'``) empty
      ``call_function`` the Python callable (``torch.relu``,       the call's arguments
                        ``operator.add``)
      ``call_method``   method name (``'view'``)                   ``args[0]`` is ``self``
      ``call_module``   qualified submodule name (``'layers.0'``)  the call's arguments
      ``output``        ``'output'``                               ``args`` = ``(result,)``; result
                                                                   may be a nested tuple/list/dict
      ================  =========================================  ==============================

    * ``args`` / ``kwargs`` -- arguments; nested tuples/lists/dicts/slices of Nodes
      and literals (numbers, str, None, Ellipsis, dtypes, devices, torch.Size, callables).
      Named tuples keep their type, and so do the dict subclasses torch's pytree knows
      (``OrderedDict``, ``ModelOutput``: see :func:`empty_dict_like`); other dict subclasses are
      plain dicts.
    * ``meta``   -- a dict (:class:`~fxla.frontend.meta.NodeMeta`) whose known keys are a contract between
      stages (each a constant of :mod:`fxla.frontend.meta`; :meth:`Graph.lint` checks their types); other
      keys are free-form:

      - ``"source"`` (``SOURCE``) -- the :class:`~fxla.frontend.source.SourceLocation` of the user's line that
        made the node (or ``None``); the tracer stamps every node;
      - ``"tensor_meta"`` (``TENSOR_META``) -- shape propagation (and the concrete-shapes tracer): a
        ``TensorMeta`` (shape, dtype), or a tuple/list/dict of them for a structured value;
      - ``"value"`` (``VALUE``) -- the same, for a value holding no tensor: the Python value itself (a size,
        a dtype);
      - ``"attribute_writes"`` (``ATTRIBUTE_WRITES``) -- the tracer's state capture: a list of
        :class:`~fxla.frontend.meta.AttributeWrite`, forward assigned this value to a module attribute;
      - ``"state_assignment"`` (``STATE_ASSIGNMENT``) -- the tracer's state capture: on a ``copy_`` node,
        the qualified name of the parameter or buffer forward assigned (``self.h = ...``);
      - ``"functionalized"`` (``FUNCTIONALIZED``) -- functionalization: ``True`` on a value it made.
      - ``"grad_disabled"`` (``GRAD_DISABLED``) -- the tracer: ``True`` on a call made with grad mode off
        (``torch.no_grad()`` in forward, :mod:`fxla.frontend.passes.grad_mode`).
      - ``"replaces"`` (``REPLACES``) -- functionalization, under grad mode off: the value an in-place change's
        new value replaces (read and removed by :mod:`~fxla.frontend.passes.grad_mode`).
      - ``"state_reads"`` (``STATE_READS``) -- functionalization: on a ``call_module``, its parameters/buffers
        forward changed before the call -> their values then (what the lowering reads).
      - ``"class_assumed"`` (``CLASS_ASSUMED``) -- the tracer, on a placeholder whose class the model's own
        ``isinstance`` asked in a shape-agnostic trace: the class taken (a tensor), checked against each call's
        value before it is compiled (``prepare_graph``).
    * ``type``   -- optional Python type annotation of the value.

    Use-lists: every node knows ``all_input_nodes`` (nodes it reads) and ``users``
    (dict ``Node -> None`` of nodes reading it). Assigning ``args``/``kwargs`` keeps both
    in sync. Nodes form a doubly linked list (``prev``/``next``) in graph order.
    """

    def __init__(self, graph, name: str, op: str, target: Target, args: Tuple = (),
                 kwargs: Optional[Dict[str, Any]] = None, type: Optional[Any] = None) -> None:
        if op not in OPCODES and op != "root":
            raise ValueError(f"unknown opcode {op!r}; expected one of {OPCODES}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.type = type
        self.meta: Dict[str, Any] = {}
        self.users: Dict[Node, None] = {}
        self._input_nodes: Dict[Node, None] = {}
        self._args: Tuple = ()
        self._kwargs: Dict[str, Any] = {}
        self._prev: Node = self
        self._next: Node = self
        self._erased = False
        self._update_args_kwargs(tuple(args), dict(kwargs or {}))

    # ---- arguments and use-lists -------------------------------------------------------
    @property
    def args(self) -> Tuple:
        """The positional arguments (a tuple); assigning them updates the use-lists."""
        return self._args

    @args.setter
    def args(self, value) -> None:
        self._update_args_kwargs(tuple(value), self._kwargs)

    @property
    def kwargs(self) -> Dict[str, Any]:
        """The keyword arguments (a dict); assigning them updates the use-lists."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value) -> None:
        self._update_args_kwargs(self._args, dict(value))

    def update_arg(self, idx: int, arg: Any) -> None:
        """Set positional argument ``idx`` (use-lists updated)."""
        args = list(self._args)
        args[idx] = arg
        self.args = args

    def insert_arg(self, idx: int, arg: Any) -> None:
        """Insert ``arg`` before positional argument ``idx`` (use-lists updated)."""
        args = list(self._args)
        args.insert(idx, arg)
        self.args = args

    def update_kwarg(self, key: str, arg: Any) -> None:
        """Set keyword argument ``key`` (use-lists updated)."""
        self.kwargs = {**self._kwargs, key: arg}

    @property
    def all_input_nodes(self) -> List["Node"]:
        """Nodes read by this node, in first-use order, without duplicates."""
        return list(self._input_nodes)

    def _update_args_kwargs(self, new_args: Tuple, new_kwargs: Dict[str, Any]) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        self._args = map_arg(new_args, self._collect_input)
        self._kwargs = map_arg(new_kwargs, self._collect_input)
        for new in self._input_nodes:
            new.users.setdefault(self)

    def _collect_input(self, n: "Node") -> "Node":
        self._input_nodes.setdefault(n)
        return n

    def replace_input_with(self, old: "Node", new: "Node") -> None:
        """Make this node read ``new`` wherever it read ``old``."""
        swap = lambda n: new if n is old else n  # noqa: E731
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, replace_with: "Node",
                              delete_user_cb: Callable[["Node"], bool] = lambda user: True) -> List["Node"]:
        """Redirect every user of this node to ``replace_with``; returns the users changed."""
        changed = [u for u in list(self.users) if delete_user_cb(u)]
        for user in changed:
            user.replace_input_with(self, replace_with)
        return changed

    # ---- position in the graph's linked list -------------------------------------------
    @property
    def next(self) -> "Node":
        """The next node in graph order (the graph's sentinel root if this is the last)."""
        return self._next

    @property
    def prev(self) -> "Node":
        """The previous node in graph order (the graph's sentinel root if this is the first)."""
        return self._prev

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    def prepend(self, x: "Node") -> None:
        """Move/insert node ``x`` immediately before this node."""
        if x is self:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: "Node") -> None:
        """Move/insert node ``x`` immediately after this node."""
        self._next.prepend(x)

    # ---- properties ---------------------------------------------------------------------
    def is_impure(self) -> bool:
        """True if the node has side effects and must survive dead-code elimination."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            name = getattr(self.target, "__name__", "")
            in_place = (name.endswith("_") and not name.endswith("__")
                        and getattr(self.target, "__module__", None) not in ("_operator", "operator"))
            return self.target in _IMPURE_FUNCTIONS or in_place
        if self.op == "call_method":
            return self.target.endswith("_") and not self.target.endswith("__")
        return False

    def format_node(self, abbreviated: bool = False) -> str:
        """fx-style one-line description, e.g.
        ``%relu : [num_users=1] = call_function[target=torch.relu](args = (%x,), kwargs = {})``.
        ``abbreviated``: for an error message, long constant arguments cut short (a list shows its first items
        and how many more, see :func:`fxla.base.shown.abbreviate`)."""
        fmt = (lambda a: abbreviate(a, _short_arg)) if abbreviated else _format_arg
        head = f"%{self.name} : [num_users={len(self.users)}] = "
        if self.op == "placeholder":
            default = f" = {fmt(self.args[0])}" if self.args else ""
            return f"{head}placeholder[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"{head}get_attr[target={self.target}]"
        if self.op == "output":
            return f"return {fmt(self.args[0]) if self.args else 'None'}"
        return (f"{head}{self.op}[target={_target_str(self.target)}]"
                f"(args = {fmt(self.args)}, kwargs = {fmt(self.kwargs)})")

    def __repr__(self) -> str:
        return self.name
