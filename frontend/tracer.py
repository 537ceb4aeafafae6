"""The :class:`Tracer`: symbolic tracing of ``nn.Module`` s and functions into a :class:`Graph`."""
from __future__ import annotations

import contextlib
import enum
import inspect
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

import torch

from fxla.errors import format_message

from .errors import TraceError
from .graph import Graph
from .node import Argument, Node, Target
from .proxy import Proxy
from .source import location_of_code, user_frame_location

__all__ = ["Tracer", "symbolic_trace"]

_LITERAL_TYPES = (str, bytes, int, float, bool, complex, type(None), type(Ellipsis), range,
                  torch.dtype, torch.device, torch.layout, torch.memory_format, enum.Enum, type)


class Tracer:
    """Symbolically executes ``forward`` with :class:`Proxy` inputs, recording a :class:`Graph`.

    Subclass and override the hooks to customise tracing:

    * :meth:`is_leaf_module` -- which submodules become opaque ``call_module`` nodes;
    * :meth:`call_module` -- what happens when a submodule is called;
    * :meth:`create_proxy` / :meth:`create_node` / :meth:`create_arg` -- how calls and
      their arguments are recorded.

    While :meth:`trace` runs, ``torch.nn.Module.__call__`` is routed through
    :meth:`call_module` and ``torch.nn.Module.__getattr__`` turns the root's parameters and
    buffers into ``get_attr`` proxies; both are restored afterwards, even on error.

    After :meth:`trace`: ``self.graph`` is the graph and ``self.root`` the module its
    ``get_attr``/``call_module`` targets refer to (for a plain function: a fresh
    ``nn.Module`` holding any tensor constants).
    """

    def __init__(self) -> None:
        self.graph: Optional[Graph] = None
        self.root: Optional[torch.nn.Module] = None
        self._module_stack: List[str] = []
        self._module_paths: Dict[int, str] = {}
        self._tensor_attrs: Dict[int, Tuple[str, torch.Tensor]] = {}
        self._attr_nodes: Dict[str, Node] = {}
        self._constant_count = 0

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
            raise TraceError(format_message(
                f"called a {type(m).__name__} that is not a submodule of the traced module",
                user_frame_location(self.module_path),
                why="a leaf module becomes a call_module node naming its qualified path, and this one has none",
                fix="create the module in __init__ and assign it to an attribute (self.name = ...)"))
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
        return node

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Target, args: Tuple, kwargs: Dict[str, Any],
                     name: Optional[str] = None, type_expr: Optional[Any] = None) -> Proxy:
        """Record ``target(*args, **kwargs)`` and return a Proxy for its result."""
        node = self.create_node(kind, target, self.create_arg(tuple(args)), self.create_arg(dict(kwargs)),
                                name, type_expr)
        return self.proxy(node)

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
            out = {}
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
        return TraceError(format_message(f"cannot record an argument of type {type(a).__name__}",
                                         user_frame_location(self.module_path), why=why,
                                         fix="pass such values through concrete_args or hide the call "
                                             "inside a function decorated with fxla.frontend.wrap"))

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
            setattr(self.root, name, t)
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

    @contextlib.contextmanager
    def _patch_module_class(self) -> Iterator[None]:
        orig_call, orig_getattr = torch.nn.Module.__call__, torch.nn.Module.__getattr__
        tracer = self

        def module_call(mod, *args, **kwargs):
            return tracer.call_module(mod, lambda *a, **k: orig_call(mod, *a, **k), args, kwargs)

        def module_getattr(mod, attr):
            return tracer.getattr(attr, orig_getattr(mod, attr))

        torch.nn.Module.__call__, torch.nn.Module.__getattr__ = module_call, module_getattr
        try:
            yield
        finally:
            torch.nn.Module.__call__, torch.nn.Module.__getattr__ = orig_call, orig_getattr

    # ---- entry point ----------------------------------------------------------------------
    def trace(self, root: Union[torch.nn.Module, Callable[..., Any]],
              concrete_args: Optional[Dict[str, Any]] = None) -> Graph:
        """Trace ``root`` (a module's ``forward`` or a function) into a new :class:`Graph`.

        Each parameter of the signature (after ``self``) becomes a ``placeholder``
        (keeping defaults), unless named in ``concrete_args``: those values are baked in.
        """
        concrete_args = dict(concrete_args or {})
        if isinstance(root, torch.nn.Module):
            self.root, fn, bound = root, type(root).forward, (root,)
        else:
            self.root, fn, bound = torch.nn.Module(), root, ()
        self.graph = Graph()
        self._module_stack, self._attr_nodes, self._constant_count = [], {}, 0
        self._collect_root_state()

        code = getattr(inspect.unwrap(fn), "__code__", None)
        def_loc = location_of_code(code) if code is not None else None
        params = list(inspect.signature(fn).parameters.values())[len(bound):]
        unknown = set(concrete_args) - {p.name for p in params}
        if unknown:
            raise TraceError(format_message(
                f"concrete_args names unknown parameter(s) {sorted(unknown)}", def_loc,
                why=f"the traced signature has parameters {[p.name for p in params]}",
                fix="use the parameter names of forward() as concrete_args keys"))
        pos_args: List[Any] = []
        kw_args: Dict[str, Any] = {}
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                if p.name in concrete_args:
                    value = concrete_args[p.name]
                    pos_args.extend(value) if p.kind == p.VAR_POSITIONAL else kw_args.update(value)
                    continue
                raise TraceError(format_message(
                    f"cannot trace the variadic parameter '{p}' of {getattr(fn, '__qualname__', fn)}", def_loc,
                    why="a traced graph has a fixed number of inputs",
                    fix=f"give forward() explicit parameters, or pass concrete_args={{'{p.name}': ...}}"))
            if p.name in concrete_args:
                value = concrete_args[p.name]
            else:
                default = p.default
                node = self.create_node("placeholder", p.name, () if default is p.empty else (default,), {})
                node.meta["source"] = def_loc
                value = self.proxy(node)
            if p.kind == p.POSITIONAL_ONLY:
                pos_args.append(value)
            else:
                kw_args[p.name] = value

        with self._patch_module_class():
            result = fn(*bound, *pos_args, **kw_args)
        out = self.create_node("output", "output", (self.create_arg(result),), {})
        out.meta["source"] = def_loc
        return self.graph


def symbolic_trace(root: Union[torch.nn.Module, Callable[..., Any]],
                   concrete_args: Optional[Dict[str, Any]] = None):
    """Trace ``root`` with a default :class:`Tracer` and wrap the result in a GraphModule
    named after ``root``'s class (or function)."""
    from .graph_module import GraphModule
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, torch.nn.Module) else getattr(root, "__name__", "Function")
    return GraphModule(tracer.root, graph, name)
