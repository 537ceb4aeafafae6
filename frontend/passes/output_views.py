"""Which outputs of a traced program are, in eager, views of (or the very tensor of) an input or another output.

Eager PyTorch returns memory it shares: ``return x`` is the caller's tensor itself, ``return x[1:]`` a view of it,
``return v, v[:, :2]`` two tensors of one storage, ``x.add_(1); return x`` the input it changed.  A write into such
an output afterwards (``w.add_(1)``, or the Python dynamo runs after a graph break) changes the input or the other
output too.  A compiled program returns new buffers, so fxla makes each such output again after the call, from the
tensor eager shares it with: :func:`output_views` finds them on the graph as traced (before functionalization: the
views, in-place results and their bases are the user's), and each :class:`OutputView` holds a small
:class:`~fxla.frontend.GraphModule` that replays, in eager, the view ops between the base and the output (an
in-place op on the way is the tensor it changed: the call has written its new value back by then).  Replaying in
eager makes exactly eager's result: a view where eager makes one, a copy where eager copies (``reshape`` of a
non-contiguous input), autograd history included.

An output is replayed when its chain of views (:func:`fxla.frontend.passes.aliasing.view_sources`) reaches, one
source at a time, a placeholder or another output's node (the nearest one on the way).  Outputs that are views of a
value the program makes and does not return are left as the program's buffers (their aliasing is between two
outputs that are views of one hidden tensor: see docs/tracing.md), as are views of parameters and buffers and
results viewing several tensors (``broadcast_tensors``).  The arguments of the ops replayed are constants, sizes
computed from the inputs (``x.size(0)``, ``s0 * 2``), or a tensor whose shape alone is read (``view_as(y)``:
an empty tensor of ``y``'s static shape stands in); any other argument makes the program fail to prepare with a
:class:`PassError` (fix: return a ``.clone()``), never a silently unshared output.
"""
from __future__ import annotations

import functools
import itertools
import operator
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch.utils import _pytree as pytree

from .. import meta as M
from ..errors import PassError
from ..graph import Graph
from ..graph_module import GraphModule
from ..node import Node
from ..shape_prop import TensorMeta
from ..view_recipes import from_each_base, recipe_nodes, storage_groups
from .aliasing import view_sources
from .functionalize import mutated_base

__all__ = ["OutputView", "output_views"]

#: ops that read only the shape (and dtype) of their tensor argument: view methods, size reads
SHAPE_READS = frozenset({"view_as", "expand_as", "reshape_as", "type_as", "size", "dim", "numel", "nelement",
                         torch.Tensor.view_as, torch.Tensor.expand_as, torch.Tensor.reshape_as, torch.Tensor.type_as,
                         torch.Tensor.size, torch.Tensor.dim, torch.numel, torch.ops.aten.sym_size.int,
                         torch.ops.aten.sym_numel.default, torch.broadcast_tensors, torch.meshgrid,
                         torch.atleast_1d, torch.atleast_2d, torch.atleast_3d, torch._VF.atleast_1d,
                         torch._VF.atleast_2d, torch._VF.atleast_3d})
#: ``x.<name>`` attributes that read only the shape (and dtype)
SHAPE_ATTRIBUTES = frozenset({"shape", "ndim", "dtype"})


def _reads_shape(node: Optional[Node]) -> bool:
    if node is None:
        return False
    if node.op == "call_function" and node.target is getattr:
        return node.args[1] in SHAPE_ATTRIBUTES
    return node.target in SHAPE_READS


@dataclass(frozen=True)
class OutputView:
    """Output leaf ``leaf`` (in the pytree order of forward's return value, ``None`` taking no place, a node one
    leaf: lowering numbers them per program output, :func:`fxla.lowering.to_fxla`) is, in eager,
    made from ``base`` by views: ``("input", n)``, the call's argument ``n`` (placeholder order, whole: a dict
    argument's entry is replayed as ``args[n]["key"]``), or ``("output", k)``, output leaf ``k``.  ``replay``:
    ``replay(base, *(args[n] for n in reads))`` is the output; ``None`` when it is the base itself."""

    leaf: int
    base: Tuple[str, int]
    replay: Optional[GraphModule] = None
    reads: Tuple[int, ...] = ()
    #: the tensor of a tuple returned whole (``return x.chunk(2)``: one leaf as traced, a result per part)
    part: Optional[int] = None


def _output_leaves(gm: GraphModule) -> List[Any]:
    out = gm.graph.output_node
    if out is None:
        return []
    return pytree.tree_leaves(pytree.tree_map(lambda v: () if v is None else v, out.args[0]))


def _source(gm: GraphModule, node: Node, previous: Optional[Node]) -> Optional[Node]:
    """The one tensor node ``node`` is a view of or changed in place, or ``None``; ``previous``: the node of the
    chain made from ``node`` (``broadcast_tensors(a, b)[0]`` is a view of ``a`` alone)."""
    sources = view_sources(gm, node)
    if len(sources) == 1:
        return sources[0]
    if len(sources) > 1 and previous is not None and previous.op == "call_function" \
            and previous.target is operator.getitem and isinstance(previous.args[1], int) \
            and 0 <= previous.args[1] < len(sources):
        return sources[previous.args[1]]
    return None if sources else mutated_base(gm, node)


def _chain(gm: GraphModule, node: Node, outputs: Dict[Node, int], leaf: int):
    """``(base, steps)``: the placeholder or other output node ``node`` is made from, and the nodes between them
    (nearest the base first); ``None`` when the chain reaches neither."""
    steps: List[Node] = []
    current = node
    while True:
        if outputs.get(current, leaf) != leaf:  # (another output: ``leaf`` is numbered for ``node`` alone)
            return current, steps[::-1]
        if current.op == "placeholder":
            return current, steps[::-1]
        source = _source(gm, current, steps[-1] if steps else None)
        if source is None:
            return None
        steps.append(current)
        current = source


class _Replay:
    """Builds the GraphModule that replays ``steps`` from a base (see :class:`OutputView`)."""

    def __init__(self, gm: GraphModule, placeholders: Dict[Node, int], base: Node, leaf: int):
        self.gm, self.placeholders, self.leaf = gm, placeholders, leaf
        self.graph = Graph()
        self.env: Dict[Node, Any] = {base: self.graph.placeholder("base")}
        self.reads: List[int] = []
        self.consumer: Optional[Node] = None

    def _arg(self, node: Node):
        if node in self.env:
            return self.env[node]
        if node.op == "placeholder":
            self.reads.append(self.placeholders[node])
            self.env[node] = self.graph.placeholder(f"arg{len(self.reads)}")
            return self.env[node]
        if node.op == "get_attr":
            self.env[node] = self.graph.node_copy(node)
            return self.env[node]
        meta = node.meta.get(M.TENSOR_META)
        if isinstance(meta, TensorMeta):            # a tensor read for its shape (view_as, expand_as): stands in
            if not _reads_shape(self.consumer) or not all(isinstance(d, int) for d in meta.shape):
                raise self._refused(node)
            self.env[node] = self.graph.call_function(_shape_only, (tuple(meta.shape), meta.dtype))
            return self.env[node]
        if node.op not in ("call_function", "call_method") or M.TENSOR_META in node.meta:
            raise self._refused(node)
        consumer, self.consumer = self.consumer, node
        self.env[node] = self.graph.node_copy(node, self._arg)      # a size: x.size(0), s0 * 2
        self.consumer = consumer
        return self.env[node]

    def _refused(self, node: Node) -> PassError:
        return PassError(f"output {self.leaf} of forward is, in eager, a view of an input or of another output, and "
                         f"the view reads '{node.name}', which fxla cannot compute again after the call",
                         where=node.meta.get(M.SOURCE),
                         why="a compiled program returns new memory; fxla makes such an output again as a view of "
                             "the tensor it shares memory with, so that writing into one changes the other, as in "
                             "eager",
                         fix="return a copy (`.clone()`) of that output, or make the view from sizes and constants")

    def step(self, node: Node, source: Node) -> None:
        if mutated_base(self.gm, node) is source and not view_sources(self.gm, node):
            self.env[node] = self.env[source]       # an in-place change: the call wrote it back
            return
        self.consumer = node
        self.env[node] = self.graph.node_copy(node, self._arg)

    def build(self, last: Node) -> GraphModule:
        self.graph.output(self.env[last])
        return GraphModule(self.gm, self.graph, class_name="OutputView")


def _shape_only(shape, dtype) -> torch.Tensor:
    """A tensor of ``shape``/``dtype`` with one element in memory: what ``view_as``/``expand_as`` read."""
    return torch.empty((), dtype=dtype).expand(shape)


def _constant_views(gm: GraphModule, leaves: List[Any]) -> List[OutputView]:
    """Outputs that are tensors the tracer computed (``get_attr`` constants: a graph with no inputs, as dynamo
    hands over ``v = torch.zeros(3, 8); return v, v[:, :4]``) and views of another such output."""
    constants = {k: functools.reduce(lambda owner, name: getattr(owner, name, None), leaf.target.split("."), gm)
                 for k, leaf in enumerate(leaves) if isinstance(leaf, Node) and leaf.op == "get_attr"}
    found = []
    for members in storage_groups(constants.items()):
        for k, recipes in itertools.islice(from_each_base(constants, members, members), 1):
            for j, recipe in recipes:
                graph = Graph()
                graph.output(recipe_nodes(graph, graph.placeholder("base"), recipe))
                found.append(OutputView(j, ("output", k), GraphModule(torch.nn.Module(), graph, "OutputView")))
    return found


def output_views(gm: GraphModule) -> List[OutputView]:
    """The outputs of ``gm`` (as traced, shapes propagated) that eager returns as views of an input or of another
    output, with how to make each again (see the module docstring)."""
    leaves = _output_leaves(gm)
    outputs: Dict[Node, int] = {}
    for k, leaf in enumerate(leaves):
        if isinstance(leaf, Node) and isinstance(leaf.meta.get(M.TENSOR_META), TensorMeta):
            outputs.setdefault(leaf, k)
    placeholders = {n: i for i, n in enumerate(gm.graph.find_nodes("placeholder"))}
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    found: List[OutputView] = _constant_views(gm, leaves)
    made = {v.leaf for v in found}
    for k, leaf in sorted(((k, leaf) for k, leaf in enumerate(leaves) if outputs.get(leaf) is not None),
                          key=lambda kv: (order[kv[1]], kv[0])):
        chain = None if k in made else _chain(gm, leaf, outputs, k)
        if chain is None:
            continue
        base, steps = chain
        where = _where(base, outputs, placeholders, k)
        if not steps:
            found.append(OutputView(k, where))
            continue
        replay = _replayed(gm, placeholders, base, steps, k)
        found.append(OutputView(k, where, replay.build(steps[-1]), tuple(replay.reads)))
    found += _part_views(gm, leaves, outputs, placeholders)
    return found                                # (a base's own output comes before the outputs made from it)


def _where(base: Node, outputs: Dict[Node, int], placeholders: Dict[Node, int], leaf: int) -> Tuple[str, int]:
    """:attr:`OutputView.base` of output ``leaf`` made from the node ``base``: another output, else an input."""
    return ("output", outputs[base]) if outputs.get(base, leaf) != leaf else ("input", placeholders[base])


def _replayed(gm: GraphModule, placeholders: Dict[Node, int], base: Node, steps: List[Node], leaf: int) -> _Replay:
    replay = _Replay(gm, placeholders, base, leaf)
    previous = base
    for node in steps:
        replay.step(node, previous)
        previous = node
    return replay


def _part_views(gm: GraphModule, leaves: List[Any], outputs: Dict[Node, int],
                placeholders: Dict[Node, int]) -> List[OutputView]:
    """The parts of a tuple returned whole that a view op made (``return x.chunk(2)``, ``torch.unbind(x)``): each
    part a view of the input (or output) the op viewed."""
    found = []
    for k, leaf in enumerate(leaves):
        meta = leaf.meta.get(M.TENSOR_META) if isinstance(leaf, Node) else None
        if not isinstance(meta, (tuple, list)) or not meta or not all(isinstance(m, TensorMeta) for m in meta) \
                or len(view_sources(gm, leaf)) != 1:
            continue
        chain = _chain(gm, leaf, outputs, k)
        if chain is None:
            continue
        base, steps = chain
        where = _where(base, outputs, placeholders, k)
        for part in range(len(meta)):
            replay = _replayed(gm, placeholders, base, steps, k)
            replay.env[leaf] = replay.graph.call_function(operator.getitem, (replay.env[leaf], part))
            found.append(OutputView(k, where, replay.build(leaf), tuple(replay.reads), part))
    return found
