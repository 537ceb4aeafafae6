"""The :class:`Transformer`: rebuild a graph node by node, letting subclasses rewrite nodes."""
from __future__ import annotations

import inspect
from typing import Any, Dict, Optional, Tuple

import torch

from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter
from .node import Node, Target
from .proxy import Proxy
from .tracer import Tracer

__all__ = ["Transformer"]


class _ReemitTracer(Tracer):
    """Records into a given graph; new nodes copy the meta of the node being re-emitted."""

    def __init__(self, graph: Graph, root: torch.nn.Module) -> None:
        super().__init__()
        self.graph = graph
        self.root = root
        self.current: Optional[Node] = None
        self._collect_root_state()

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        return True

    def create_node(self, kind: str, target: Target, args: Tuple, kwargs: Dict[str, Any],
                    name: Optional[str] = None, type_expr: Optional[Any] = None) -> Node:
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        if self.current is not None:
            node.meta = dict(self.current.meta)
        return node


class Transformer(Interpreter):
    """Builds a new graph by re-emitting every node of ``module.graph``; returns it from
    :meth:`transform` as a new :class:`GraphModule` over the same root (attributes and
    submodules are shared by reference).

    The Interpreter machinery runs the graph with :class:`Proxy` values instead of concrete
    ones. Each per-opcode method receives the node's ``target`` and its ``args``/``kwargs``
    (inputs already replaced by the Proxies emitted for them) and returns a Proxy for the
    node's value in the new graph. The defaults copy the node unchanged:

    * :meth:`placeholder` -- a placeholder of the same name (and default);
    * :meth:`get_attr`, :meth:`call_function`, :meth:`call_method`, :meth:`call_module` --
      the same operation via ``self.tracer.create_proxy``.

    An override may return any Proxy (or a literal / structure of Proxies), e.g. compute
    ``torch.sigmoid(args[0])`` on the Proxy to record a different op. Every node created
    while a node is being re-emitted gets a copy of that node's ``meta`` (so
    ``meta['source']`` still points at the user's code); the output node copies the old
    output's meta.

    ``self.new_graph`` is the graph under construction and ``self.tracer`` the tracer
    recording into it (its root is ``module``).
    """

    def __init__(self, module: torch.nn.Module, graph: Optional[Graph] = None) -> None:
        super().__init__(module, graph)
        self.new_graph = Graph()
        self.tracer = _ReemitTracer(self.new_graph, module)

    def run_node(self, n: Node) -> Any:
        self.tracer.current = n
        try:
            return super().run_node(n)
        finally:
            self.tracer.current = None

    # ---- one method per opcode, each returning a Proxy in the new graph -----------------------
    def placeholder(self, target: Target, args: Tuple, kwargs: Dict[str, Any]) -> Proxy:
        current = self.tracer.current
        default = args[0] if args else inspect.Parameter.empty
        node = self.new_graph.placeholder(target, current.type if current is not None else None, default=default)
        node.meta = dict(current.meta) if current is not None else {}
        return Proxy(node, self.tracer)

    def get_attr(self, target: Target, args: Tuple, kwargs: Dict[str, Any]) -> Proxy:
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_function(self, target: Target, args: Tuple, kwargs: Dict[str, Any]) -> Any:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target: Target, args: Tuple, kwargs: Dict[str, Any]) -> Any:
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def call_module(self, target: Target, args: Tuple, kwargs: Dict[str, Any]) -> Any:
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    # ---- entry point ----------------------------------------------------------------------
    def transform(self) -> GraphModule:
        """Re-emit every node and return the new :class:`GraphModule`."""
        result = self.run()
        old_output = self.graph.output_node
        new_output = self.new_graph.output(self.tracer.create_arg(result))
        if old_output is not None:
            new_output.meta = dict(old_output.meta)
            new_output.type = old_output.type
        return GraphModule(self.module, self.new_graph, type(self.module).__name__)
