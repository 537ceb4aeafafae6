"""``split_module``: partition a graph into submodules, one per partition id."""
from __future__ import annotations

import operator
from typing import Any, Callable, Dict, Hashable, List

import torch

from .. import meta as M
from ..errors import PassError
from ..graph import Graph, Namespace
from ..graph_module import GraphModule
from ..node import Node, map_arg
from .attrs import fetch_attr

__all__ = ["split_module"]


class _Partition:
    """The nodes given one partition id, and what flows in and out of them."""

    def __init__(self, pid: Hashable, order: int) -> None:
        self.pid = pid
        self.order = order
        self.name = ""
        self.nodes: List[Node] = []
        self.inputs: Dict[Node, None] = {}   # values defined outside (placeholders, other partitions)
        self.attrs: Dict[Node, None] = {}    # get_attr nodes read (re-created inside)
        self.outputs: Dict[Node, None] = {}  # values read by later partitions or the output
        self.deps: Dict["_Partition", None] = {}


def _topological(partitions: List[_Partition], first_node: Node) -> List[_Partition]:
    done: List[_Partition] = []
    pending = list(partitions)
    while pending:
        ready = next((p for p in pending if all(d in done for d in p.deps)), None)
        if ready is None:
            names = ", ".join(repr(p.pid) for p in pending)
            raise PassError(
                f"split_module: partitions {names} depend on each other in a cycle",
                where=first_node.meta.get(M.SOURCE),
                why="each partition runs as one submodule call, so partition A cannot both feed and read "
                    "partition B",
                fix="make split_callback assign ids so that every partition only reads values of partitions "
                    "that come before it (e.g. ids that never decrease along the graph)")
        pending.remove(ready)
        done.append(ready)
    return done


def _partition_module(part: _Partition, root: torch.nn.Module) -> GraphModule:
    g = Graph()
    env: Dict[Node, Node] = {}
    attrs: Dict[str, Any] = {}
    for inp in part.inputs:
        env[inp] = g.placeholder(inp.name)
        env[inp].meta = dict(inp.meta)
    for a in part.attrs:
        env[a] = g.node_copy(a)
        attrs[a.target] = fetch_attr(root, a.target)
    for n in part.nodes:
        if n.op == "call_module":
            attrs[n.target] = fetch_attr(root, n.target)
        env[n] = g.node_copy(n, lambda x: env[x])
    outs = [env[o] for o in part.outputs]
    out = g.output(outs[0] if len(outs) == 1 else tuple(outs))
    out.meta = {M.SOURCE: part.nodes[-1].meta.get(M.SOURCE)}
    return GraphModule(attrs, g, part.name)


def split_module(gm: GraphModule, root: torch.nn.Module, split_callback: Callable[[Node], Hashable]) -> GraphModule:
    """Split ``gm`` into one submodule per partition (like ``torch.fx.passes.split_module``).

    ``split_callback(node)`` gives the partition id of every ``call_function`` /
    ``call_method`` / ``call_module`` node. Each partition becomes a GraphModule
    ``submod_<id>`` whose inputs are the values it reads from outside (named after their
    nodes) and whose output is the one value later partitions or the graph output read
    from it (a tuple if several; ``None`` if none). ``get_attr`` nodes are copied into every
    partition that reads them; attributes and submodules are taken from ``root`` (by
    reference). The returned top-level module keeps ``gm``'s inputs and calls the
    submodules in dependency order (ties in order of first appearance), unpacking tuples
    with ``getitem`` nodes named after the original values; its outputs equal ``gm``'s.

    Node meta is carried into the partitions; each ``submod_<id>`` call node gets the
    ``source`` of its partition's first node. Raises :class:`PassError` if partitions
    depend on each other cyclically.
    """
    graph = gm.graph
    partitions: Dict[Hashable, _Partition] = {}
    owner: Dict[Node, _Partition] = {}
    for n in graph.nodes:
        if n.op in ("placeholder", "get_attr", "output"):
            continue
        pid = split_callback(n)
        try:
            part = partitions.setdefault(pid, _Partition(pid, len(partitions)))
        except TypeError as e:
            raise PassError(
                f"split_module: split_callback returned the unhashable {type(pid).__name__} for %{n.name}",
                where=n.meta.get(M.SOURCE), why=str(e), fix="return an int or str partition id") from e
        part.nodes.append(n)
        owner[n] = part
    for n, part in owner.items():
        for inp in n.all_input_nodes:
            src = owner.get(inp)
            if inp.op == "get_attr":
                part.attrs.setdefault(inp)
            elif src is not part:
                part.inputs.setdefault(inp)
                if src is not None:
                    src.outputs.setdefault(inp)
                    part.deps.setdefault(src)
    output_node = graph.output_node
    for inp in output_node.all_input_nodes:
        if inp in owner:
            owner[inp].outputs.setdefault(inp)

    ordered = _topological(list(partitions.values()), next(iter(graph.nodes)))
    names = Namespace()
    top = Graph()
    top_attrs: Dict[str, Any] = {}
    env: Dict[Node, Node] = {}
    for n in graph.nodes:
        if n.op == "placeholder":
            env[n] = top.node_copy(n)
    for part in ordered:
        part.name = names.create_name(f"submod_{part.pid}")
        top_attrs[part.name] = _partition_module(part, root)
        call = top.call_module(part.name, tuple(env[i] for i in part.inputs))
        call.meta = {M.SOURCE: part.nodes[0].meta.get(M.SOURCE)}
        outs = list(part.outputs)
        if len(outs) == 1:
            env[outs[0]] = call
        for i, o in enumerate(outs if len(outs) > 1 else ()):
            env[o] = top.create_node("call_function", operator.getitem, (call, i), name=o.name)
            env[o].meta = dict(o.meta)
    for inp in output_node.all_input_nodes:
        if inp.op == "get_attr":
            env[inp] = top.node_copy(inp)
            top_attrs[inp.target] = fetch_attr(root, inp.target)
    result = top.output(map_arg(output_node.args[0], lambda x: env[x]) if output_node.args else None)
    result.meta = dict(output_node.meta)
    top_module = GraphModule(top_attrs, top, type(gm).__name__)
    top_module.training = gm.training
    return top_module
