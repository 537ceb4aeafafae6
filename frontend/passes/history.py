"""Which inputs and parameters each output of a prepared graph has history from, as eager's autograd graph has it.

After ``loss.backward()`` eager leaves ``.grad`` of a tensor that requires grad ``None`` when the tensor is in the
autograd graph of no tensor the backward went through: a head whose output the loss ignores, a parameter used only
in a comparison or under ``torch.no_grad()``.  A tensor in that graph gets a gradient, zeros included (a value
overwritten whole, ``h[:] = 0``, keeps its history in eager).  An optimizer treats the two differently (weight decay
moves a parameter whose gradient is zeros and skips one whose gradient is ``None``), so fxla's autograd node gives
``None`` where eager would, from :func:`output_histories` (read on the graph, not on the lowered program, where
``h[:] = 0`` is a constant and an empty slice is gone).

A value has the history of every tensor it is computed from, except where eager records none:

* ``detach()``, ``.data``, and the ops that read only a tensor's shape (``zeros_like``, ``x.new_zeros`` ...);
* a result that is not floating point (a comparison, ``argmax``, ``sort``'s indices);
* a value made in a ``torch.no_grad()`` region (:mod:`~fxla.frontend.passes.grad_mode`), and
  ``keep_history(new, before)`` has ``before``'s history alone.

An in-place change's new value (``node.meta["replaces"]``, functionalization) also keeps the history of the value it
replaced, as eager's ``CopySlices`` / in-place nodes do.  A leaf module's call has its own parameters' history too.
Anything else is taken to carry history (at worst a zero gradient where eager's is ``None``, never the reverse).
"""
from __future__ import annotations

import operator
from typing import Any, Dict, FrozenSet, List, NamedTuple, Optional, Set, Tuple

import torch
from torch.utils import _pytree as pytree

from .. import meta as M
from ..graph_module import GraphModule
from ..node import Node
from ..shape_prop import TensorMeta
from ..custom_functions import custom_function_output
from .grad_mode import keep_history, regions

__all__ = ["output_histories", "Histories", "Source", "input_source", "source_argument"]

#: a tensor that may require grad: ``("input", placeholder name)``, ``("input", "name[k]")`` for the ``k``-th tensor
#: (pytree order) of a list, tuple or dict argument, or ``("param", qualified name)``
Source = Tuple[str, str]


def input_source(name: str, leaf: Optional[int] = None) -> Source:
    """The source of tensor argument ``name``, or of the ``leaf``-th tensor of a structured argument."""
    return ("input", name if leaf is None else f"{name}[{leaf}]")


def source_argument(source: Source) -> str:
    """The argument (placeholder) name of an ``"input"`` source."""
    return source[1].partition("[")[0]


class _Leaf(NamedTuple):
    """One tensor of a structured argument: its source."""

    source: Source


def _numbered(meta, name: str, count: List[int]):
    """``meta``'s structure with each tensor a :class:`_Leaf` of its own source (pytree order)."""
    if isinstance(meta, TensorMeta):
        count[0] += 1
        return _Leaf(input_source(name, count[0] - 1))
    if isinstance(meta, (tuple, list)):
        return [_numbered(m, name, count) for m in meta]
    if isinstance(meta, dict):
        return {k: _numbered(m, name, count) for k, m in meta.items()}
    return None


def _all_sources(structure) -> FrozenSet[Source]:
    if isinstance(structure, _Leaf):
        return frozenset({structure.source})
    parts = structure.values() if isinstance(structure, dict) else structure if isinstance(structure, (tuple, list)) \
        else ()
    return frozenset().union(*(_all_sources(p) for p in parts))


def _part(structures: Dict[Node, Any], node: Node):
    """``x[key]`` of a structured argument (or of a part of one) with a constant key: that part, or ``None``."""
    if node.op != "call_function" or node.target is not operator.getitem or len(node.args) != 2 \
            or node.args[0] not in structures or isinstance(node.args[1], Node):
        return None
    try:
        part = structures[node.args[0]][node.args[1]]
    except (KeyError, IndexError, TypeError):
        return None
    return part if isinstance(part, (_Leaf, tuple, list, dict)) else None

_SHAPE_ONLY_FUNCTIONS = frozenset({torch.zeros_like, torch.ones_like, torch.empty_like, torch.full_like,
                                   torch.rand_like, torch.randn_like, torch.randint_like, torch.detach,
                                   torch.Tensor.detach})
_SHAPE_ONLY_METHODS = frozenset({"detach", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"})
_NONE: FrozenSet[Source] = frozenset()


def _float(meta) -> bool:
    return isinstance(meta, TensorMeta) and (meta.dtype.is_floating_point or meta.dtype.is_complex)


def _no_history(node: Node) -> bool:
    if node.op == "call_method":
        return node.target in _SHAPE_ONLY_METHODS
    if node.op == "call_function":
        return node.target in _SHAPE_ONLY_FUNCTIONS or (node.target is getattr and node.args[1:2] == ("data",))
    return False


def _in_custom_functions(gm: GraphModule) -> Set[Node]:
    """The nodes made in a custom ``torch.autograd.Function``'s forward (grad mode is off there, and its output has
    the history of the Function's inputs): those made with grad mode off that lead to a ``custom_function_output``
    through such nodes (one pass, last node first)."""
    found: Set[Node] = set()
    for node in reversed(gm.graph.nodes):
        if node.meta.get(M.GRAD_DISABLED) and any(
                u in found or (u.op == "call_function" and u.target is custom_function_output) for u in node.users):
            found.add(node)
    return found


def _module_sources(gm: GraphModule, node: Node) -> FrozenSet[Source]:
    return frozenset(("param", f"{node.target}.{name}") for name, _ in gm.get_submodule(node.target).named_parameters())


def _histories(gm: GraphModule) -> Tuple[Dict[Node, FrozenSet[Source]], FrozenSet[Source]]:
    """Each node's history, and every source the graph reads."""
    found: Dict[Node, FrozenSet[Source]] = {}
    known = set()
    off = regions(gm)
    in_function = _in_custom_functions(gm) if off else set()
    structures: Dict[Node, Any] = {}           # structured arguments (and their parts): each tensor's source
    for node in gm.graph.nodes:
        meta = node.meta.get(M.TENSOR_META)
        if node.op == "placeholder":
            if isinstance(meta, (tuple, list, dict)):
                structures[node] = _numbered(meta, node.target, [0])
                found[node] = _all_sources(structures[node])
            else:
                found[node] = frozenset({input_source(node.target)})
            known |= found[node]
            continue
        part = _part(structures, node)
        if part is not None:                    # xs[0], d["a"]: that tensor's own source
            if not isinstance(part, _Leaf):
                structures[node] = part
            found[node] = _all_sources(part)
            continue
        if node.op == "get_attr":
            found[node] = frozenset({("param", node.target)})
            known |= found[node]
            continue
        own = _module_sources(gm, node) if node.op == "call_module" else _NONE   # (a layer's own parameters)
        known |= own
        if node.op == "output" or _no_history(node) or (off.get(node) and node not in in_function):
            found[node] = _NONE                 # (made in a no_grad region: none)
            continue
        reads = node.all_input_nodes
        if node.op == "call_function" and node.target is keep_history:
            reads = node.all_input_nodes[1:]
        history = set().union(*(found.get(n, _NONE) for n in reads))
        replaced = node.meta.get(M.REPLACES)
        if isinstance(replaced, Node):
            history |= found.get(replaced, _NONE)
        history |= own
        history = history.union(*(found.get(n, _NONE) for n in node.meta.get(M.STATE_READS, {}).values()))
        if isinstance(meta, TensorMeta) and not _float(meta):
            history = set()
        elif meta is None and M.VALUE in node.meta:         # (a number, a size, `.item()`: no history)
            history = set()
        found[node] = frozenset(history)
    return found, frozenset(known)


def _leaves(meta, history: FrozenSet[Source], out: List[FrozenSet[Source]]) -> None:
    """The tensor results a value of ``meta``'s structure lowers to, in order, each with its history."""
    if isinstance(meta, TensorMeta):
        out.append(history if _float(meta) else _NONE)
    elif isinstance(meta, (tuple, list)):
        for part in meta:
            _leaves(part, history, out)
    elif isinstance(meta, dict):
        for part in meta.values():
            _leaves(part, history, out)


class Histories(NamedTuple):
    """``outputs``: per tensor result of the program a graph lowers to (its outputs in order, before any
    written-back state), the sources it has history from; ``known``: every source the graph reads."""

    outputs: List[FrozenSet[Source]]
    known: FrozenSet[Source]
    #: per attribute forward assigns (qualified name): the sources its traced leaves have history from
    attributes: Dict[str, FrozenSet[Source]] = {}
    #: per input forward changes in place (placeholder name): the sources its new value has history from
    inputs: Dict[str, FrozenSet[Source]] = {}

    def reached(self, source: Source, results: int) -> FrozenSet[int]:
        """The numbers of the results ``source`` has history in, of a program with ``results`` tensor outputs:
        all of them where the graph does not say (a source it does not name, outputs that do not match)."""
        if source not in self.known or len(self.outputs) != results:
            return frozenset(range(results))
        return frozenset(i for i, history in enumerate(self.outputs) if source in history)


def output_histories(gm: GraphModule, attribute_writes=None) -> Histories:
    """The sources each tensor output of ``gm`` (and each attribute in ``attribute_writes``:
    :func:`fxla.frontend.tracer.final_attribute_writes`) has history from (see the module docstring and
    :class:`Histories`)."""
    found, known = _histories(gm)
    attributes = {name: frozenset().union(*(found.get(n, _NONE) for n in nodes.values()))
                  for name, (_, nodes, _) in (attribute_writes or {}).items()}
    output = next((n for n in gm.graph.nodes if n.op == "output"), None)
    leaves: List[FrozenSet[Source]] = []
    for leaf in pytree.tree_leaves(output.args[0] if output is not None and output.args else ()):
        if isinstance(leaf, Node):
            _leaves(leaf.meta.get(M.TENSOR_META), found[leaf], leaves)
    inputs = {name: found.get(node, _NONE) for name, node in gm.graph.meta.get(M.INPUT_MUTATIONS, {}).items()}
    return Histories(leaves, known, attributes, inputs)
