"""``replace_pattern``: rewrite every occurrence of a pattern subgraph with a replacement."""
from __future__ import annotations

import copy
from typing import Any, Callable, Dict, List, NamedTuple, Union

import torch

from .. import meta as M
from ..errors import PassError
from ..graph import Graph
from ..graph_module import GraphModule
from ..node import Node, map_aggregate, map_arg
from ..source import user_frame_location
from ..tracer import symbolic_trace
from .attrs import fetch_attr, fresh_attr_name, has_attr, set_attr
from .matcher import InternalMatch, SubgraphMatcher

__all__ = ["Match", "replace_pattern"]

Pattern = Union[Callable[..., Any], torch.nn.Module, GraphModule, Graph]


class Match(NamedTuple):
    """A replaced occurrence: ``anchor`` is the graph node the pattern's (first) returned
    value matched; ``nodes_map`` maps pattern nodes to the graph nodes (or literals) they
    matched. The matched nodes are no longer in the graph."""

    anchor: Node
    nodes_map: Dict[Node, Any]


def _as_graph_module(obj: Pattern, role: str) -> GraphModule:
    if isinstance(obj, GraphModule):
        return obj
    if isinstance(obj, Graph):
        return GraphModule(obj.owning_module or torch.nn.Module(), copy.deepcopy(obj))
    if isinstance(obj, torch.nn.Module) or callable(obj):
        return symbolic_trace(obj)
    raise PassError(f"replace_pattern: the {role} is a {type(obj).__name__}",
                    where=user_frame_location(), why="it must be traceable",
                    fix=f"pass the {role} as a function, an nn.Module, a GraphModule or a Graph")


def _returned(graph: Graph) -> List[Any]:
    values: List[Any] = []
    map_aggregate(graph.output_node.args, values.append)
    return values


def _install_targets(gm: GraphModule, replacement: GraphModule) -> Dict[Node, str]:
    """Copy what the replacement's get_attr/call_module nodes read into ``gm``; returns the
    target each such replacement node gets in ``gm``."""
    targets: Dict[Node, str] = {}
    for rn in replacement.graph.nodes:
        if rn.op not in ("get_attr", "call_module"):
            continue
        value = fetch_attr(replacement, rn.target)
        if has_attr(gm, rn.target) and fetch_attr(gm, rn.target) is value:
            targets[rn] = rn.target
            continue
        name = fresh_attr_name(gm, rn.target)
        set_attr(gm, name, value)
        targets[rn] = name
    return targets


def _insertion_point(graph: Graph, m: InternalMatch) -> Node:
    """The first user of the matched results (or, if they are unused, the node after the match)."""
    users = {u for n in m.returning_nodes for u in n.users}
    matched = set(m.internal_nodes())
    last = None
    for n in graph.nodes:
        if n in users:
            return n
        last = n if n in matched else last
    return last.next


def replace_pattern(gm: GraphModule, pattern: Pattern, replacement: Pattern) -> List[Match]:
    """Replace every non-overlapping occurrence of ``pattern`` in ``gm.graph`` with
    ``replacement``, then recompile ``gm``; returns the matches (like
    ``torch.fx.subgraph_rewriter.replace_pattern``).

    ``pattern`` and ``replacement`` are traced with fxla's tracer (or used as given if they
    are GraphModules/Graphs). Matching is described in :class:`SubgraphMatcher`. The
    replacement's inputs are bound positionally to the pattern's placeholders, and the
    values it returns replace the values the pattern returns, in order. Replacement nodes
    are inserted before the first user of the matched values; they take ``meta['source']``
    from the node the pattern's first returned value matched (other meta, such as stale
    ``tensor_meta``, is not carried). Attributes and submodules the replacement reads are
    copied into ``gm`` (under fresh names if taken).
    """
    pattern_gm = _as_graph_module(pattern, "pattern")
    replacement_gm = _as_graph_module(replacement, "replacement")
    matcher = SubgraphMatcher(pattern_gm.graph)
    rep_placeholders = [n for n in replacement_gm.graph.nodes if n.op == "placeholder"]
    rep_returned = _returned(replacement_gm.graph)
    if len(rep_placeholders) != len(matcher.placeholders) or len(rep_returned) != len(matcher.returning):
        raise PassError(
            f"replace_pattern: the replacement takes {len(rep_placeholders)} input(s) and returns "
            f"{len(rep_returned)} value(s), the pattern {len(matcher.placeholders)} and {len(matcher.returning)}",
            where=user_frame_location(), why="replacement inputs bind positionally to the pattern's inputs, and its "
                        "results replace the pattern's results in order",
            fix="give pattern and replacement the same signature and the same number of returned values")

    matches: List[InternalMatch] = matcher.match(gm.graph)
    if not matches:
        return []
    graph = gm.graph
    targets = _install_targets(gm, replacement_gm)
    changed: Dict[Node, Any] = {}  # returning node of an earlier match -> its replacement value
    for m in matches:
        env: Dict[Node, Any] = {}
        for i, (rp, pp) in enumerate(zip(rep_placeholders, matcher.placeholders)):
            bound = m.nodes_map[pp]
            if isinstance(bound, Node) and bound in changed:  # produced by an earlier replacement
                bound = m.nodes_map[pp] = m.placeholder_nodes[i] = changed[bound]
            env[rp] = bound
        source = m.anchor.meta.get(M.SOURCE)
        with graph.inserting_before(_insertion_point(graph, m)):
            for rn in replacement_gm.graph.nodes:
                if rn.op in ("placeholder", "output"):
                    continue
                new = env[rn] = graph.node_copy(rn, lambda x: env[x])
                new.target = targets.get(rn, rn.target)
                new.meta = {M.SOURCE: source}
        for old, value in zip(m.returning_nodes, rep_returned):
            new_value = map_arg(value, lambda x: env[x])
            old.replace_all_uses_with(new_value)
            changed[old] = new_value
        for pn in reversed(matcher.internal):
            graph.erase_node(m.nodes_map[pn])
    gm.recompile()
    return [Match(m.anchor, m.nodes_map) for m in matches]
