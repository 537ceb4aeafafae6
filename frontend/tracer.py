"""The :class:`Tracer`: symbolic tracing of ``nn.Module`` s and functions into a :class:`Graph`."""
from __future__ import annotations

import builtins
import contextlib
import enum
import inspect
import itertools
import re
import threading
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

import torch
from torch.utils import _pytree as pytree

from .errors import AutocastError, TraceError
from .graph import Graph
from .node import Argument, Node, Target
from .node import empty_dict_like, map_aggregate, map_arg
from .proxy import Proxy, tracing_isinstance
from .proxy import _isinstance as _real_isinstance
from .shape_prop import (MetaMemo, _as_meta_device, _contains_tensor, call_module_on_meta, data_dependent_op, describe,
                         set_node_meta, to_meta)
from .source import location_of_code, traceback_location, user_frame_location

__all__ = ["Tracer", "symbolic_trace"]

_LITERAL_TYPES = (str, bytes, int, float, bool, complex, type(None), type(Ellipsis), range,
                  torch.dtype, torch.device, torch.layout, torch.memory_format, enum.Enum, type)


#: torch functions taking sizes as varargs (``torch.zeros(n, 4)``).  torch's argument parser rejects a Proxy
#: among several size ints with a plain TypeError before ``__torch_function__`` is consulted, so while tracing
#: these names of the ``torch`` module record the call with the sizes packed into one tuple (which it accepts).
_SIZE_VARARG_FUNCTIONS = (torch.zeros, torch.ones, torch.empty, torch.rand, torch.randn)


_UNSET = object()
#: the submodule name of a root that is itself a leaf (``Tracer().trace(nn.LSTM(...))``): its graph is one
#: ``call_module`` node on ``module`` and its parameters are ``module.<name>`` (like DataParallel's)
LEAF_ROOT = "module"


class AttributeWrite(NamedTuple):
    """``module.attr = value`` in forward, recorded on the node of each traced leaf of ``value`` (its
    ``meta["attribute_writes"]``): ``serial`` orders the assignments (the last of a name wins), ``name`` is the
    qualified attribute name, ``spec`` the value's treespec, ``index`` this leaf's position in it and
    ``constants`` the value's untraced leaves by position."""

    serial: int
    name: str
    spec: Any
    index: int
    constants: Dict[int, Any]


def final_attribute_writes(graph: Graph) -> Dict[str, Tuple[Any, Dict[int, Node], Dict[int, Any]]]:
    """The attributes forward assigns, by qualified name, as the last assignment of each leaves them:
    ``(treespec, {leaf index: node of a traced leaf}, {leaf index: untraced leaf})`` — from the nodes'
    ``meta["attribute_writes"]`` (:class:`AttributeWrite`) and ``graph.meta["attribute_constants"]``."""
    last: Dict[str, Tuple[int, Any, Dict[int, Node], Dict[int, Any]]] = {}
    for node in graph.nodes:
        for w in node.meta.get("attribute_writes", ()):
            seen = last.get(w.name)
            if seen is None or w.serial > seen[0]:
                last[w.name] = (w.serial, w.spec, {w.index: node}, w.constants)
            elif w.serial == seen[0]:
                seen[2][w.index] = node
    for serial, name, value in graph.meta.get("attribute_constants", ()):
        if name not in last or serial > last[name][0]:
            leaves, spec = pytree.tree_flatten(value)
            last[name] = (serial, spec, {}, dict(enumerate(leaves)))
    return {name: entry[1:] for name, entry in last.items()}


def _holds_proxy(value: Any) -> bool:
    """``value`` is a Proxy or a tuple/list/dict holding one."""
    return any(isinstance(leaf, Proxy) for leaf in pytree.tree_leaves(value)) if isinstance(
        value, (tuple, list, dict)) else isinstance(value, Proxy)


def _size_vararg_recorder(fn: Callable, tracer: "Tracer") -> Callable:
    def record(*size, **kwargs):
        if len(size) < 2 or not any(isinstance(s, Proxy) for s in size):
            return fn(*size, **kwargs)
        return tracer.create_proxy("call_function", fn, (tuple(size),), kwargs)
    record.__wrapped__ = fn
    return record


_ISINSTANCE_LOCK = threading.Lock()
_isinstance_users = 0


def _install_isinstance(change: int) -> None:
    """While any trace runs (in any thread), ``builtins.isinstance`` is :func:`proxy.tracing_isinstance`, which
    answers as before for everything but a Proxy."""
    global _isinstance_users
    with _ISINSTANCE_LOCK:
        _isinstance_users += change
        builtins.isinstance = tracing_isinstance if _isinstance_users else _real_isinstance


def _proxy_type_error(e: TypeError, module_path: str) -> TraceError:
    """A TypeError that names fxla's Proxy (a C function wanted a real tensor: ``zlib.crc32(x)``,
    ``memoryview(x)``, ``torch.Tensor.add_(x, 1)``) as a TraceError at the user's line."""
    descriptor = _DESCRIPTOR.match(str(e))
    if descriptor:
        name = descriptor.group(1)
        fix = (f"call it as a method of the tensor: x.{name}(...) instead of torch.Tensor.{name}(x, ...) (or "
               f"the torch function, torch.{name}(x, ...), where there is one)")
    else:
        fix = ("keep the computation in torch operations on the tensor, return the tensor from forward and "
               "use the compiled function's result, or run this part outside the compiled function")
    return TraceError(
        f"a traced tensor was passed where a real tensor or a bytes-like object is needed: {e}",
        where=traceback_location(e.__traceback__, module_path),
        why="while tracing, a tensor is fxla's symbolic stand-in (a Proxy) with no data: it records the "
            "operations torch functions and tensor methods apply to it, but a function that reads the tensor's "
            "memory (the buffer protocol: zlib.crc32, memoryview, hashlib) or an unbound method of the C tensor "
            "class cannot accept it",
        fix=fix)


_DESCRIPTOR = re.compile(r"descriptor '(\w+)' for '[\w.]+' objects doesn't apply")


def _caught_error(err: TraceError, def_loc, module_path: str) -> TraceError:
    """The trace ran to its end although ``err`` was raised in it: the traced code caught it (``try: float(x)
    except Exception: ...``) and went on with a value that does not depend on the data."""
    swallowed = traceback_location(err.__traceback__, module_path, innermost=False)
    return TraceError(
        "tracing raised a TraceError that the traced code caught (a try/except around it), and went on",
        where=swallowed or def_loc,
        why="the except branch ran instead of what eager PyTorch computes from the data, so the graph would "
            "silently compute something else; the error was:\n  " + str(err).replace("\n", "\n  "),
        fix="remove the try/except around the operation, or narrow it so it does not catch fxla errors "
            "(fxla.errors.FxlaError), and fix the error above")


def _check_names(given, params, what: str, kind: str, listed: str, def_loc) -> None:
    """TraceError unless every key of ``given`` (concrete_args / example_inputs) names one of ``params``."""
    unknown = set(given) - {p.name for p in params}
    if unknown:
        raise TraceError(
            f"{what} names {kind} parameter(s) {sorted(unknown)}", where=def_loc,
            why=f"the traced signature has {listed} {[p.name for p in params]}",
            fix=f"use the parameter names of forward() as {what} keys")


class Tracer:
    """Symbolically executes ``forward`` with :class:`Proxy` inputs, recording a :class:`Graph`.

    Subclass and override the hooks to customise tracing:

    * :meth:`is_leaf_module` -- which submodules become opaque ``call_module`` nodes;
    * :meth:`call_module` -- what happens when a submodule is called;
    * :meth:`create_proxy` / :meth:`create_node` / :meth:`create_arg` -- how calls and
      their arguments are recorded.

    While :meth:`trace` runs, ``torch.nn.Module.__call__`` is routed through
    :meth:`call_module` and ``torch.nn.Module.__getattr__`` turns the root's parameters and
    buffers into ``get_attr`` proxies, ``torch.nn.Module.__setattr__`` records a traced value assigned to a
    parameter or buffer as ``copy_`` into it (other attributes forward assigns are recorded to be set after each
    compiled call, and restored after the trace: the user's module is never left holding a Proxy), and ``torch.zeros/ones/empty/rand/randn``
    accept symbolic sizes as varargs (``torch.zeros(x.shape[0], 4)``, recorded as
    ``torch.zeros((getitem, 4))``), ``torch.nn.Module.register_buffer`` refuses a traced value, and
    ``builtins.isinstance`` answers for a Proxy as for its eager value (:func:`proxy.tracing_isinstance`); all
    are restored afterwards, even on error.

    After :meth:`trace`: ``self.graph`` is the graph and ``self.root`` the module its
    ``get_attr``/``call_module`` targets refer to (for a plain function: a fresh
    ``nn.Module`` holding any tensor constants; for a root that is itself a leaf, e.g. ``nn.LSTM``: a fresh
    ``nn.Module`` holding it as ``module``, and the graph is that one ``call_module``).

    ``Tracer(concrete_shapes=True)`` is the shape-specialising mode (see :meth:`trace`'s
    ``example_inputs``): every Proxy carries a *meta value* -- its result computed on
    ``meta`` tensors as the op is recorded -- so ``x.shape``, ``x.size(i)``, ``x.dim()``,
    ``len(x)``, ``x.dtype`` and ``x.device`` are concrete Python values (no node) and Python
    control flow on them just runs.  Tensor *values* stay symbolic: ``if x.sum() > 0`` still
    raises :class:`TraceError`.  The graph is valid for the traced shapes only; they are
    recorded in ``graph.meta['specialization']``.  The default mode is torch.fx-compatible.
    """

    def __init__(self, concrete_shapes: bool = False) -> None:
        self.concrete_shapes = concrete_shapes
        self.graph: Optional[Graph] = None
        self.root: Optional[torch.nn.Module] = None
        self._module_stack: List[str] = []
        self._module_paths: Dict[int, str] = {}
        self._tensor_attrs: Dict[int, Tuple[str, torch.Tensor]] = {}
        self._attr_nodes: Dict[str, Node] = {}
        self._constant_count = 0
        self._autocast_at_start = False           # torch.autocast's state when trace() began
        # concrete_shapes mode
        self._meta_values: Dict[Node, Any] = {}
        self._meta_errors: Dict[Node, str] = {}
        self._speculative: List[Node] = []
        self._computing_meta = False
        self._meta_memo: Optional[MetaMemo] = None
        self.device = torch.device("cpu")
        self._caught: List[TraceError] = []      # TraceErrors raised by proxies during the current trace

    #: True while :meth:`trace` runs the traced code
    tracing = False

    def _note_error(self, err: TraceError) -> TraceError:
        """Remember ``err`` (a :class:`TraceError` about to be raised at the traced code) and return it: a trace
        that completes although one was raised -- the traced code caught it -- fails with it (see :meth:`trace`)."""
        if self.tracing:
            self._caught.append(err)
        return err

    # ---- hooks ----------------------------------------------------------------------------
    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        """Default: torch's own layers (``torch.nn.*`` / ``torch.ao.nn.*``) are leaves,
        containers (Sequential, ModuleList, ModuleDict) and user modules are traced through."""
        mod = type(m).__module__
        is_torch = mod == "torch.nn" or mod.startswith(("torch.nn.", "torch.ao.nn."))
        return is_torch and not isinstance(m, (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict))

    def call_module(self, m: torch.nn.Module, forward: Callable[..., Any], args: Tuple, kwargs: Dict) -> Any:
        """Record a leaf as one ``call_module`` node; run a non-leaf's ``forward`` inline."""
        qualname = self.path_of_module(m)
        if qualname is not None and self.is_leaf_module(m, qualname):
            return self.create_proxy("call_module", qualname, args, kwargs)
        if qualname is None and self.is_leaf_module(m, type(m).__name__):
            raise TraceError(
                f"called a {type(m).__name__} that is not a submodule of the traced module",
                where=user_frame_location(self.module_path),
                why="a leaf module becomes a call_module node naming its qualified path, and this one has none",
                fix="create the module in __init__ and assign it to an attribute (self.name = ...)")
        self._module_stack.append(qualname if qualname is not None else f"<{type(m).__name__}>")
        try:
            return forward(*args, **kwargs)
        finally:
            self._module_stack.pop()

    def create_node(self, kind: str, target: Target, args: Tuple, kwargs: Dict[str, Any],
                    name: Optional[str] = None, type_expr: Optional[Any] = None) -> Node:
        """Insert a node into ``self.graph``, stamping ``meta['source']``."""
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        node.meta["source"] = user_frame_location(self.module_path)
        if torch._C._is_any_autocast_enabled() is not self._autocast_at_start:
            raise self._autocast_error(node)
        if self.concrete_shapes and kind not in ("placeholder", "output"):
            self._record_meta(node)
        return node

    def _autocast_error(self, node: Node) -> AutocastError:
        entered = not self._autocast_at_start
        self.graph.erase_node(node)
        return AutocastError(
            f"forward {'entered' if entered else 'left'} a torch.autocast region, which a traced graph cannot hold",
            where=node.meta["source"],
            why="autocast casts the inputs of ops such as linear, matmul and conv as eager torch runs them; the "
                "graph records the ops without those casts, so it (and a program compiled from it) would compute "
                "in other dtypes than eager",
            fix="cast explicitly instead of autocast: model.to(torch.bfloat16) with x.to(torch.bfloat16), or "
                "y = self.layer(x.to(torch.bfloat16)) where lower precision is wanted; or remove the autocast region")

    def proxy(self, node: Node) -> Proxy:
        """Wrap ``node`` in a :class:`Proxy` of this tracer (override to return a Proxy subclass)."""
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Target, args: Tuple, kwargs: Dict[str, Any],
                     name: Optional[str] = None, type_expr: Optional[Any] = None) -> Proxy:
        """Record ``target(*args, **kwargs)`` and return a Proxy for its result."""
        node = self.create_node(kind, target, self.create_arg(tuple(args)), self.create_arg(dict(kwargs)),
                                name, type_expr)
        if self.concrete_shapes and kind in ("call_function", "call_method") and self._foldable(node):
            value = self._meta_values[node]
            self.graph.erase_node(node)  # a shape-derived Python value: no node, just the value
            return value
        return self.proxy(node)

    # ---- concrete_shapes mode: meta values --------------------------------------------------
    def meta_value(self, p: Proxy) -> Any:
        """The meta value of ``p`` (a meta tensor, or a structure/Python value); raises
        LookupError if it is unknown (not in concrete_shapes mode, or the op failed on meta)."""
        node = p.node
        if node in self._meta_values:
            return self._meta_values[node]
        raise LookupError(self._meta_errors.get(node, "no meta value recorded"))

    def meta_error(self, p: Proxy) -> Optional[str]:
        """Why ``p`` has no meta value (None if it has one or the mode is off)."""
        return self._meta_errors.get(p.node)

    def _foldable(self, node: Node) -> bool:
        from .wrap import wrapper_for
        if node not in self._meta_values or node.is_impure():
            return False
        if node.op == "call_function" and wrapper_for(node.target) is not None:
            return False  # a user leaf stays in the graph
        v = self._meta_values[node]
        return type(v) in (bool, int, float, torch.Size, torch.dtype)

    def _set_meta(self, node: Node, value: Any) -> None:
        self._meta_values[node] = value
        set_node_meta(node, value)

    def _record_meta(self, node: Node) -> None:
        missing: List[Node] = []

        def lookup(n: Node) -> Any:
            if n not in self._meta_values:
                missing.append(n)
                return None
            return self._meta_values[n]
        args, kwargs = map_arg(node.args, lookup), map_arg(node.kwargs, lookup)
        if missing:
            self._meta_errors[node] = (f"its input %{missing[0].name} has no meta value"
                                       + (f" ({self._meta_errors[missing[0]]})" if missing[0] in self._meta_errors else ""))
            return
        args, kwargs = map_aggregate(args, _as_meta_device), map_aggregate(kwargs, _as_meta_device)
        self._computing_meta = True
        try:
            if self._meta_memo is not None:
                value = self._meta_memo.run(node.op, node.target, args, kwargs, self.root.get_submodule,
                                            lambda: self._run_on_meta(node, args, kwargs))
            else:
                value = self._run_on_meta(node, args, kwargs)
        except Exception as e:  # data-dependent shapes (nonzero, x[mask], .item()), non-meta kernels, ...
            op = data_dependent_op(lambda: self._run_on_meta(node, args, kwargs))
            self._meta_errors[node] = (
                f"%{node.name} ({op}) has an output shape or value that depends on the tensor's data, so a "
                f"fixed-shape program cannot compute it (fix that first: torch.where(mask, x, 0) instead of "
                f"x[mask], masked reductions, a fixed-size torch.topk instead of torch.nonzero, a 0-d tensor "
                f"instead of .item())" if op is not None else
                f"running %{node.name} on meta tensors failed: {type(e).__name__}: {e}")
            return
        finally:
            self._computing_meta = False
        self._set_meta(node, value)

    def _run_on_meta(self, node: Node, args: Tuple, kwargs: Dict[str, Any]) -> Any:
        op, target = node.op, node.target
        if op == "get_attr":
            obj = self.root
            for atom in target.split("."):
                obj = getattr(obj, atom)
            return to_meta(obj)
        if op == "call_function":
            return to_meta(target(*args, **kwargs))
        if op == "call_method":
            self_obj, *rest = args
            if target in ("cpu", "cuda") and isinstance(self_obj, torch.Tensor):
                return self_obj
            return to_meta(getattr(self_obj, target)(*rest, **kwargs))
        if op == "output":
            return args[0]
        if op == "call_module":
            return to_meta(call_module_on_meta(self.root.get_submodule(target), args, kwargs))
        raise LookupError(op)

    def create_arg(self, a: Any) -> Argument:
        """Turn a Python value into a node argument (see the Node docstring for what is allowed).

        Proxies become their nodes; the root's parameters, buffers and tensor attributes
        become (cached) ``get_attr`` nodes; other tensors are registered on the root as
        ``_tensor_constant<N>`` and read with ``get_attr``.
        """
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, torch.Tensor):
            return self._tensor_node(a)
        if isinstance(a, torch.Size):
            return a
        if isinstance(a, tuple):
            items = tuple(self.create_arg(e) for e in a)
            return type(a)(*items) if hasattr(a, "_fields") else items
        if isinstance(a, list):
            return [self.create_arg(e) for e in a]
        if isinstance(a, dict):
            out = empty_dict_like(a)           # a ModelOutput stays one (see Node: arguments)
            for k, v in a.items():
                if isinstance(k, Proxy):
                    raise self._arg_error(k, "a symbolic value cannot be a dict key")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, _LITERAL_TYPES):
            return a
        if isinstance(a, torch.nn.Module):
            raise self._arg_error(a, "modules cannot be passed as arguments of traced operations")
        if callable(a):
            return a
        raise self._arg_error(a, "only tensors, Python scalars/strings, dtypes, devices, callables "
                                 "and tuples/lists/dicts of those can appear in a graph")

    def _arg_error(self, a: Any, why: str) -> TraceError:
        return TraceError(f"cannot record an argument of type {type(a).__name__}",
                          where=user_frame_location(self.module_path), why=why,
                          fix="pass such values through concrete_args or hide the call "
                              "inside a function decorated with fxla.frontend.wrap")

    # ---- attributes -----------------------------------------------------------------------
    @property
    def module_path(self) -> str:
        """Qualified name of the module whose forward is executing ("" at the root)."""
        return self._module_stack[-1] if self._module_stack else ""

    def path_of_module(self, mod: torch.nn.Module) -> Optional[str]:
        """Qualified name of ``mod`` inside the root (None if it is not a submodule)."""
        return self._module_paths.get(id(mod))

    def get_attr_proxy(self, qualname: str) -> Proxy:
        """A Proxy reading ``root.<qualname>`` (one get_attr node per qualified name)."""
        node = self._attr_nodes.get(qualname)
        if node is None or node._erased:
            node = self._attr_nodes[qualname] = self.create_node("get_attr", qualname, (), {})
        return self.proxy(node)

    def getattr(self, attr: str, attr_val: Any) -> Any:
        """Called for every ``nn.Module`` attribute lookup that reaches ``__getattr__``."""
        if isinstance(attr_val, torch.Tensor):
            entry = self._tensor_attrs.get(id(attr_val))
            if entry is not None and entry[1] is attr_val:
                return self.get_attr_proxy(entry[0])
        return attr_val

    def _tensor_node(self, t: torch.Tensor) -> Node:
        entry = self._tensor_attrs.get(id(t))
        if entry is None or entry[1] is not t:
            name = f"_tensor_constant{self._constant_count}"
            while hasattr(self.root, name):
                self._constant_count += 1
                name = f"_tensor_constant{self._constant_count}"
            self._constant_count += 1
            self.root.__dict__[name] = t       # (a plain attribute; not through the patched __setattr__)
            entry = self._tensor_attrs[id(t)] = (name, t)
        return self.get_attr_proxy(entry[0]).node

    def _collect_root_state(self) -> None:
        self._module_paths = {}
        self._tensor_attrs = {}
        for name, mod in self.root.named_modules(remove_duplicate=False):
            self._module_paths.setdefault(id(mod), name)
            prefix = f"{name}." if name else ""
            for key, value in vars(mod).items():
                if isinstance(value, torch.Tensor):
                    self._tensor_attrs.setdefault(id(value), (prefix + key, value))
            for store in (mod._parameters, mod._buffers):
                for key, value in store.items():
                    if value is not None:
                        self._tensor_attrs.setdefault(id(value), (prefix + key, value))

    def _assign(self, mod: torch.nn.Module, name: str, value: Any, orig_setattr: Callable, restore: list) -> None:
        """``mod.name = <traced value>`` during tracing (``value`` is a Proxy, or a tuple/list/dict holding some).

        A parameter or buffer (``self.steps += 1`` assigns the in-place result back, ``self.h = self.h * 0.9 +
        x`` a new tensor) is recorded as ``copy_`` into its ``get_attr`` (functionalized like any mutation, so
        later reads see the value and the module's state is written back).  A plain tensor attribute the graph
        reads is a TraceError (its reads are its value at trace time).  Any other attribute is set for the rest
        of the trace and restored afterwards, and the value's nodes carry ``meta["attribute_writes"]`` (an
        :class:`AttributeWrite` per assignment), so that each compiled call sets the attribute to that call's
        value, as eager does."""
        store = mod._parameters if name in mod._parameters else mod._buffers if name in mod._buffers else None
        current = store.get(name) if store is not None else None
        entry = self._tensor_attrs.get(id(current)) if current is not None else None
        if entry is not None and entry[1] is current and isinstance(value, Proxy):
            proxy = self.create_proxy("call_method", "copy_", (self.get_attr_proxy(entry[0]), value), {})
            proxy.node.meta["state_assignment"] = entry[0]
            return
        if store is not None:             # a parameter or buffer that is None (or a non-Proxy structure assigned)
            raise self._note_error(TraceError(
                f"forward assigns a traced value to `{name}`, a {'parameter' if store is mod._parameters else 'buffer'}"
                f" of {type(mod).__name__} that holds {'None' if current is None else type(current).__name__}",
                where=user_frame_location(self.module_path),
                why="a traced write into module state is recorded as a copy into the tensor it holds, and this "
                    "one holds none",
                fix=f"register it with a tensor of the value's shape and dtype (self.register_buffer('{name}', "
                    f"torch.zeros(...))), or keep the value in a plain attribute"))
        plain = mod.__dict__.get(name)
        read = self._tensor_attrs.get(id(plain)) if isinstance(plain, torch.Tensor) else None
        if store is None and read is not None and read[0] in self._attr_nodes:     # the graph reads it
            raise TraceError(
                f"forward assigns a traced value to `{name}`, a plain tensor attribute of "
                f"{type(mod).__name__} (not a parameter or buffer)", where=user_frame_location(self.module_path),
                why="the tracer reads plain tensor attributes as constants, so a value carried from one call to "
                    "the next through one would be read stale",
                fix=f"make it a buffer (self.register_buffer('{name}', tensor), then fxla writes it back each "
                    f"call), or start it as None if forward only stores a result there")
        restore.append((mod, name, mod.__dict__[name] if name in mod.__dict__ else _UNSET))
        orig_setattr(mod, name, value)
        path = self.path_of_module(mod)
        if path is None:                  # a module created inside forward: nothing to set after a call
            return
        leaves, spec = pytree.tree_flatten(value)
        qualname = f"{path}.{name}" if path else name
        constants = {i: leaf for i, leaf in enumerate(leaves) if not isinstance(leaf, Proxy)}
        self._assignments += 1                 # the last assignment of a name wins, whatever the node order
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, Proxy):
                leaf.node.meta.setdefault("attribute_writes", []).append(
                    AttributeWrite(self._assignments, qualname, spec, i, constants))

    def _assign_constant(self, mod: torch.nn.Module, name: str, value: Any, orig_setattr: Callable,
                         restore: list) -> None:
        """``mod.name = value`` with an untraced value (``self.calls = 1``, a size in concrete_shapes mode): set
        for the rest of the trace and restored afterwards, and recorded in ``graph.meta["attribute_constants"]``
        (``(serial, qualified name, value)``) so that each compiled call sets it as eager does.  Modules and
        parameters assigned, and attributes of modules created inside forward, are just set."""
        path = self.path_of_module(mod)
        if path is None or isinstance(value, (torch.nn.Module, torch.nn.Parameter)) or name in mod._parameters \
                or name in mod._buffers or name in mod._modules:
            return orig_setattr(mod, name, value)
        restore.append((mod, name, mod.__dict__[name] if name in mod.__dict__ else _UNSET))
        orig_setattr(mod, name, value)
        self._assignments += 1
        self.graph.meta.setdefault("attribute_constants", []).append(
            (self._assignments, f"{path}.{name}" if path else name, value))

    @contextlib.contextmanager
    def _patch_module_class(self) -> Iterator[None]:
        orig_call, orig_getattr = torch.nn.Module.__call__, torch.nn.Module.__getattr__
        orig_setattr, orig_register = torch.nn.Module.__setattr__, torch.nn.Module.register_buffer
        restore: list = []
        tracer = self

        def module_call(mod, *args, **kwargs):
            if tracer._computing_meta:  # computing a leaf module's meta value: run it for real
                return orig_call(mod, *args, **kwargs)
            return tracer.call_module(mod, lambda *a, **k: orig_call(mod, *a, **k), args, kwargs)

        def module_getattr(mod, attr):
            if tracer._computing_meta:
                return orig_getattr(mod, attr)
            return tracer.getattr(attr, orig_getattr(mod, attr))

        def module_setattr(mod, name, value):
            if tracer._computing_meta:
                return orig_setattr(mod, name, value)
            if not _holds_proxy(value):
                return tracer._assign_constant(mod, name, value, orig_setattr, restore)
            tracer._assign(mod, name, value, orig_setattr, restore)

        torch.nn.Module.__call__, torch.nn.Module.__getattr__ = module_call, module_getattr
        torch.nn.Module.__setattr__ = module_setattr

        def register_buffer(mod, name, tensor, persistent=True):
            if isinstance(tensor, Proxy) and not tracer._computing_meta:
                raise tracer._note_error(TraceError(
                    f"register_buffer('{name}', <traced value>) in forward",
                    where=user_frame_location(tracer.module_path),
                    why="a module's buffers are its state across calls, and a traced value has none outside the "
                        "trace (the module would be left holding fxla's Proxy)",
                    fix=f"register the buffer in __init__ (self.register_buffer('{name}', torch.zeros(...))) and "
                        f"assign it in forward (self.{name} = ...), or keep the value in a plain attribute"))
            return orig_register(mod, name, tensor, persistent)
        torch.nn.Module.register_buffer = register_buffer
        _install_isinstance(+1)
        size_functions = {fn.__name__: fn for fn in _SIZE_VARARG_FUNCTIONS}
        for name, fn in size_functions.items():
            setattr(torch, name, _size_vararg_recorder(fn, tracer))
        try:
            yield
        finally:
            torch.nn.Module.__call__, torch.nn.Module.__getattr__ = orig_call, orig_getattr
            torch.nn.Module.__setattr__, torch.nn.Module.register_buffer = orig_setattr, orig_register
            _install_isinstance(-1)
            for name, fn in size_functions.items():
                setattr(torch, name, fn)
            for mod, name, old in reversed(restore):     # attributes set to traced values: as they were
                if old is _UNSET:
                    mod.__dict__.pop(name, None)
                else:
                    mod.__dict__[name] = old

    # ---- entry point ----------------------------------------------------------------------
    def trace(self, root: Union[torch.nn.Module, Callable[..., Any]],
              concrete_args: Optional[Dict[str, Any]] = None,
              example_inputs: Union[None, Tuple, List, Dict[str, Any]] = None) -> Graph:
        """Trace ``root`` (a module's ``forward`` or a function) into a new :class:`Graph`.

        Each parameter of the signature (after ``self``) becomes a ``placeholder``
        (keeping defaults), unless named in ``concrete_args``: those values are baked in.

        ``example_inputs`` (required in ``concrete_shapes`` mode, refused otherwise): a
        tuple of positional inputs or a dict by parameter name; their shapes/dtypes seed the
        meta values.  Parameters given neither an example input nor a concrete arg are
        baked in at their default (``*args``/``**kwargs`` as empty) -- listed, with the
        input shapes, in ``graph.meta['specialization']``.
        """
        concrete_args = dict(concrete_args or {})
        leaf_root = isinstance(root, torch.nn.Module) and self.is_leaf_module(root, "")
        if leaf_root:           # a torch layer traced on its own: one call_module node, as inside a model
            self.root, fn, bound = torch.nn.Module(), type(root).forward, (root,)
            self.root.add_module(LEAF_ROOT, root)
        elif isinstance(root, torch.nn.Module):
            self.root, fn, bound = root, type(root).forward, (root,)
        else:
            self.root, fn, bound = torch.nn.Module(), root, ()
        self.graph = Graph()
        self._module_stack, self._attr_nodes, self._constant_count, self._assignments = [], {}, 0, 0
        self._meta_values, self._meta_errors, self._speculative = {}, {}, []
        # equal ops on equal meta arguments are computed once per trace (not when a subclass changes how)
        self._meta_memo = MetaMemo() if type(self)._run_on_meta is Tracer._run_on_meta else None
        # the graph holds no autocast regions: a forward that enters (or leaves) one is refused at its first op
        self._autocast_at_start = torch._C._is_any_autocast_enabled()
        self._collect_root_state()

        code = getattr(inspect.unwrap(fn), "__code__", None)
        def_loc = location_of_code(code) if code is not None else None
        params = list(inspect.signature(fn).parameters.values())[len(bound):]
        _check_names(concrete_args, params, "concrete_args", "unknown", "parameters", def_loc)
        examples = self._bind_examples(params, concrete_args, example_inputs, def_loc)
        fixed: Dict[str, Any] = {}
        pos_args: List[Any] = []
        kw_args: Dict[str, Any] = {}
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                if p.name in concrete_args or (self.concrete_shapes and p.name not in examples):
                    value = concrete_args.get(p.name, () if p.kind == p.VAR_POSITIONAL else {})
                    if p.name not in concrete_args:
                        fixed[p.name] = value
                    pos_args.extend(value) if p.kind == p.VAR_POSITIONAL else kw_args.update(value)
                    continue
                raise TraceError(
                    f"cannot trace the variadic parameter '{p}' of {getattr(fn, '__qualname__', fn)}", where=def_loc,
                    why="a traced graph has a fixed number of inputs",
                    fix=f"pass concrete_args={{'{p.name}': {'()' if p.kind == p.VAR_POSITIONAL else '{}'}}} (or its "
                        f"values), or give forward() explicit parameters; a Hugging Face model: "
                        f"fxla.compile(model, concrete_shapes=True, concrete_args={{'use_cache': False}}), which "
                        f"traces per input signature with such parameters fixed at their defaults")
            if p.name in concrete_args:
                value = concrete_args[p.name]
            elif self.concrete_shapes and p.name not in examples:
                if p.default is p.empty:
                    raise TraceError(
                        f"concrete_shapes tracing needs an example input for parameter '{p.name}'", where=def_loc,
                        why="each graph input's meta value is computed from its example input",
                        fix=f"pass example_inputs={{'{p.name}': ...}} (or a value in concrete_args)")
                value = fixed[p.name] = p.default
            else:
                default = p.default
                node = self.create_node("placeholder", p.name, () if default is p.empty else (default,), {})
                node.meta["source"] = def_loc
                if self.concrete_shapes:
                    self._set_meta(node, to_meta(examples[p.name]))
                value = self.proxy(node)
            if p.kind == p.POSITIONAL_ONLY:
                pos_args.append(value)
            else:
                kw_args[p.name] = value

        self._caught, self.tracing = [], True
        try:
            with self._patch_module_class():
                if leaf_root:
                    result = root(*pos_args, **kw_args)        # (through call_module: a leaf)
                    result.node.meta.setdefault("source", def_loc)
                else:
                    result = fn(*bound, *pos_args, **kw_args)
        except TypeError as e:
            if "'Proxy'" not in str(e):
                raise
            raise _proxy_type_error(e, self.module_path) from e
        finally:
            self.tracing = False
        # caught by Python code: its traceback goes on past the frame that raised it.  (torch's C argument parser
        # tries __index__ on a Proxy passed as a size, torch.ones(x.shape), and clears the error before it finds
        # __torch_function__: that one was never seen by Python code.)
        caught = [e for e in self._caught if e.__traceback__ is not None and e.__traceback__.tb_next is not None]
        if caught:
            raise _caught_error(caught[0], def_loc, self.module_path)
        try:
            out_arg = self.create_arg(result)
        except TraceError as e:
            raise TraceError(
                f"forward() returned a value that cannot be a graph output: {str(e).splitlines()[0]}", where=def_loc,
                why="graph outputs are tensors, Python scalars and tuples/lists/dicts of those "
                    "(named tuples, OrderedDicts and Hugging Face ModelOutputs keep their type; other dict "
                    "subclasses become plain dicts)",
                fix="return only such values; a Hugging Face model returns a KV cache object unless "
                    "called with use_cache=False (concrete_args={'use_cache': False})") from None
        out = self.create_node("output", "output", (out_arg,), {})
        out.meta["source"] = def_loc
        if self.concrete_shapes:
            self._record_meta(out)
        for node in reversed(self._speculative):  # getitem nodes made by iterating a Proxy, then unused
            if not node._erased and not node.users and "attribute_writes" not in node.meta:
                self.graph.erase_node(node)
        if self.concrete_shapes:
            self.graph.meta["specialization"] = {
                "inputs": {k: describe(v) if _contains_tensor(v) else v for k, v in examples.items()},
                "fixed": fixed, "device": self.device}
        return self.graph

    def _bind_examples(self, params, concrete_args, example_inputs, def_loc) -> Dict[str, Any]:
        if example_inputs is None:
            if self.concrete_shapes:
                raise TraceError(
                    "concrete_shapes tracing needs example inputs", where=def_loc,
                    why="shapes are made concrete by running each op on meta tensors shaped like the inputs",
                    fix="call tracer.trace(model, example_inputs=(x, ...)) or "
                        "symbolic_trace(model, example_inputs=(x, ...))")
            return {}
        if not self.concrete_shapes:
            raise TraceError(
                "example_inputs given to a Tracer that is not in concrete_shapes mode", where=def_loc,
                why="the default tracer is shape-agnostic (torch.fx-compatible) and takes no example inputs",
                fix="use Tracer(concrete_shapes=True), or symbolic_trace(model, example_inputs=...)")
        free = [p for p in params if p.name not in concrete_args]
        if isinstance(example_inputs, dict):
            examples = dict(example_inputs)
            _check_names(examples, free, "example_inputs", "unknown (or concrete)", "free parameters", def_loc)
        else:
            if not isinstance(example_inputs, (tuple, list)):
                example_inputs = (example_inputs,)
            positional = [p for p in free if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if len(example_inputs) > len(positional):
                raise TraceError(
                    f"{len(example_inputs)} example inputs for {len(positional)} positional parameter(s)",
                    where=def_loc,
                    why=f"the free positional parameters are {[p.name for p in positional]}",
                    fix="pass fewer example inputs, or a dict of them by parameter name")
            examples = {p.name: v for p, v in zip(positional, example_inputs)}
        devices: List[torch.device] = []
        map_aggregate(examples, lambda v: devices.append(v.device) if isinstance(v, torch.Tensor) else v)
        if not devices and isinstance(self.root, torch.nn.Module):
            devices = [t.device for t in itertools.chain(self.root.parameters(), self.root.buffers())][:1]
        self.device = devices[0] if devices else torch.device("cpu")
        return examples


def symbolic_trace(root: Union[torch.nn.Module, Callable[..., Any]],
                   concrete_args: Optional[Dict[str, Any]] = None,
                   example_inputs: Union[None, Tuple, List, Dict[str, Any]] = None,
                   concrete_shapes: Optional[bool] = None):
    """Trace ``root`` and wrap the result in a GraphModule named after ``root``'s class (or function).

    With ``example_inputs`` (a tuple, or a dict by parameter name) the trace is
    shape-specialising (``Tracer(concrete_shapes=True)``): shapes, dtypes and devices are
    concrete while tracing, and the GraphModule is valid for those input shapes only
    (``gm.specialization``).  Without, it is the default torch.fx-compatible trace.
    """
    from .graph_module import GraphModule
    if concrete_shapes is None:
        concrete_shapes = example_inputs is not None
    tracer = Tracer(concrete_shapes=concrete_shapes)
    graph = tracer.trace(root, concrete_args, example_inputs=example_inputs)
    name = type(root).__name__ if isinstance(root, torch.nn.Module) else getattr(root, "__name__", "Function")
    return GraphModule(tracer.root, graph, name)
