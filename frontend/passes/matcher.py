"""The :class:`SubgraphMatcher`: find the occurrences of a pattern graph inside a graph."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Set

import torch

from .. import meta as M
from ..errors import PassError
from ..graph import Graph
from ..node import Node, map_aggregate
from .attrs import fetch_attr

__all__ = ["SubgraphMatcher", "InternalMatch"]


@dataclass
class InternalMatch:
    """One occurrence of the pattern.

    * ``nodes_map`` -- pattern node -> graph node, for every pattern node that takes part;
      a pattern placeholder may map to a literal argument instead of a node;
    * ``placeholder_nodes`` -- what each pattern placeholder matched, in placeholder order;
    * ``returning_nodes`` -- the graph nodes matched by the pattern's returned nodes, in
      the order the pattern returns them;
    * ``anchor`` -- the first returning node.
    """

    nodes_map: Dict[Node, Any]
    placeholder_nodes: List[Any] = field(default_factory=list)
    returning_nodes: List[Node] = field(default_factory=list)

    @property
    def anchor(self) -> Node:
        """The first returning node of the match."""
        return self.returning_nodes[0]

    def internal_nodes(self) -> List[Node]:
        """The graph nodes matched by the pattern's non-placeholder nodes."""
        return [gn for pn, gn in self.nodes_map.items() if pn.op != "placeholder"]


class _State:
    def __init__(self) -> None:
        self.map: Dict[Node, Any] = {}
        self.used: Set[Node] = set()

    def copy(self) -> "_State":
        s = _State()
        s.map, s.used = dict(self.map), set(self.used)
        return s


def _same_literal(p: Any, g: Any) -> bool:
    if type(p) is not type(g):
        return False
    if isinstance(p, float) and math.isnan(p):
        return math.isnan(g)
    return bool(p == g)


class SubgraphMatcher:
    """Matches ``pattern`` (a traced Graph) against other graphs.

    Matching starts from the nodes the pattern returns (the *anchors*) and walks their
    arguments backwards. A pattern node matches a graph node with the same ``op`` and
    ``target`` (``get_attr`` nodes match when both read tensors) whose arguments match
    position by position: nodes recursively, containers element-wise, literals by type and
    equality. Pattern placeholders are wildcards that match any node or literal,
    consistently (one placeholder, one value). A match is kept only if it is
    self-contained: nodes other than the returning ones have no users outside the match.

    :meth:`match` returns non-overlapping matches in graph order of their anchors
    (earlier matches win).
    """

    def __init__(self, pattern: Graph) -> None:
        self.pattern = pattern
        out = pattern.output_node
        returned: List[Any] = []
        map_aggregate(out.args, returned.append)
        if not returned or not all(isinstance(n, Node) and n.op != "placeholder" for n in returned):
            raise PassError(
                "the pattern must return only values it computes", where=out.meta.get(M.SOURCE),
                why="matching starts from the values the pattern returns; literals and unchanged inputs "
                    "cannot anchor a match",
                fix="return the pattern's result tensor(s), e.g. `return torch.relu(x)`")
        self.returning: List[Node] = list(dict.fromkeys(returned))
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]
        self.internal = self._reachable()
        for p in self.placeholders:
            if p not in self.internal and p not in self.returning:
                raise PassError(
                    f"pattern parameter {p.target!r} is not used by the pattern", where=p.meta.get(M.SOURCE),
                    why="every pattern input must be matched to a value of the graph",
                    fix="remove the unused parameter from the pattern (and the replacement)")
        self.internal = [n for n in self.internal if n.op != "placeholder"]

    def _reachable(self) -> List[Node]:
        seen: Dict[Node, None] = {}
        stack = list(self.returning)
        while stack:
            n = stack.pop()
            if n not in seen:
                seen[n] = None
                stack.extend(n.all_input_nodes)
        return [n for n in self.pattern.nodes if n in seen]

    # ---- node equality ----------------------------------------------------------------------
    def _nodes_equal(self, pn: Node, gn: Node) -> bool:
        if pn.op != gn.op:
            return False
        if pn.op == "get_attr":
            try:
                pv = fetch_attr(pn.graph.owning_module, pn.target)
                gv = fetch_attr(gn.graph.owning_module, gn.target)
            except AttributeError:
                return False
            return isinstance(pv, torch.Tensor) and isinstance(gv, torch.Tensor)
        return pn.target == gn.target

    def _match_node(self, pn: Node, gn: Any, s: _State) -> bool:
        if pn in s.map:
            bound = s.map[pn]
            return bound is gn if isinstance(bound, Node) or isinstance(gn, Node) else _same_literal(bound, gn)
        if pn.op == "placeholder":
            s.map[pn] = gn
            return True
        if not isinstance(gn, Node) or gn in s.used or not self._nodes_equal(pn, gn):
            return False
        s.map[pn] = gn
        s.used.add(gn)
        return self._match_args(pn.args, gn.args, s) and self._match_args(pn.kwargs, gn.kwargs, s)

    def _match_args(self, pa: Any, ga: Any, s: _State) -> bool:
        if isinstance(pa, Node):
            return self._match_node(pa, ga, s)
        if isinstance(ga, Node) or type(pa) is not type(ga):
            return False
        if isinstance(pa, (tuple, list)):
            return len(pa) == len(ga) and all(self._match_args(p, g, s) for p, g in zip(pa, ga))
        if isinstance(pa, dict):
            return pa.keys() == ga.keys() and all(self._match_args(pa[k], ga[k], s) for k in pa)
        if isinstance(pa, slice):
            return all(self._match_args(getattr(pa, a), getattr(ga, a), s) for a in ("start", "stop", "step"))
        return _same_literal(pa, ga)

    # ---- search -----------------------------------------------------------------------------
    def _contained(self, s: _State) -> bool:
        internal = {s.map[pn] for pn in self.internal}
        if len(internal) != len(self.internal) or any(s.map.get(p) in internal for p in self.placeholders):
            return False
        returning = {s.map[pn] for pn in self.returning}
        return all(set(gn.users) <= internal for gn in internal - returning)

    def _search(self, i: int, s: _State, candidates: List[List[Node]]) -> Iterator[_State]:
        if i == len(self.returning):
            if all(pn in s.map for pn in self.internal) and self._contained(s):
                yield s
            return
        pn = self.returning[i]
        if pn in s.map:
            yield from self._search(i + 1, s, candidates)
            return
        for gn in candidates[i]:
            attempt = s.copy()
            if self._match_node(pn, gn, attempt):
                yield from self._search(i + 1, attempt, candidates)

    def match(self, graph: Graph) -> List[InternalMatch]:
        """All non-overlapping matches of the pattern in ``graph``."""
        graph_nodes = [n for n in graph.nodes if n.op != "output"]
        candidates = [[gn for gn in graph_nodes if pn.op == "placeholder" or self._nodes_equal(pn, gn)]
                      for pn in self.returning]
        matches: List[InternalMatch] = []
        taken: Set[Node] = set()
        for first in candidates[0]:
            start = _State()
            if not self._match_node(self.returning[0], first, start):
                continue
            for s in self._search(1, start, candidates):
                nodes = {s.map[pn] for pn in self.internal}
                if nodes & taken:
                    continue
                taken |= nodes
                matches.append(InternalMatch(
                    nodes_map=s.map, placeholder_nodes=[s.map[p] for p in self.placeholders],
                    returning_nodes=[s.map[pn] for pn in self.returning]))
                break
        return matches
