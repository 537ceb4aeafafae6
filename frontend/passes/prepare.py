"""The frontend's last stage: a captured graph made ready to lower, for one set of example inputs.

:func:`prepare_graph` runs shape propagation (every node gets ``tensor_meta``/``value``), rewrites in-place
mutation out of place (:func:`~fxla.frontend.passes.functionalize`) and propagates shapes again over the
rewritten graph.  Its result, :class:`PreparedGraph`, is the contract with the lowering stage: lowering reads
the graph and the three state records below, nothing else of the frontend.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Tuple

from ..graph_module import GraphModule
from ..node import Node
from ..shape_prop import propagate_shapes
from ..tracer import final_attribute_writes
from .functionalize import functionalize

__all__ = ["PreparedGraph", "prepare_graph"]


@dataclass
class PreparedGraph:
    """A graph ready to lower (see the module docstring).

    ``graph_module``: the functional graph (``captured`` itself when the program mutates nothing), every node
    with its shape metadata for ``example_inputs``.  ``captured``: the graph as traced (it has the shape
    metadata too).  ``input_mutations``: tensor argument name -> the node holding its value after the call
    (``x += 1``); ``state_mutations``: parameter/buffer name -> likewise (``self.steps += 1``);
    ``attribute_writes``: qualified attribute name -> ``(treespec, {leaf index: node}, {leaf index: constant})``,
    the plain attributes forward assigns (``self.last = y``, :func:`fxla.frontend.tracer.final_attribute_writes`).
    """

    graph_module: GraphModule
    captured: GraphModule
    example_inputs: Tuple[Any, ...]
    input_mutations: Dict[str, Node] = field(default_factory=dict)
    state_mutations: Dict[str, Node] = field(default_factory=dict)
    attribute_writes: Dict[str, Tuple[Any, Dict[int, Node], Dict[int, Any]]] = field(default_factory=dict)

    @property
    def functionalized(self) -> bool:
        """Whether functionalization rewrote the graph (the program changes inputs or module state in place)."""
        return self.graph_module is not self.captured


def prepare_graph(gm: GraphModule, example_inputs) -> PreparedGraph:
    """Propagate shapes for ``example_inputs`` (tensors or nested tuples/lists/dicts of them) and functionalize;
    raises the frontend's errors (``TraceError``/``DataDependentError`` at the user's line, ``PassError`` for a
    mutation fxla cannot rewrite)."""
    example_inputs = tuple(example_inputs)
    propagate_shapes(gm, *example_inputs)
    functional = functionalize(gm)              # in-place mutation -> out-of-place ops (needs the shapes)
    if functional is not gm:
        propagate_shapes(functional, *example_inputs)
    meta = functional.graph.meta
    return PreparedGraph(functional, gm, example_inputs, dict(meta.get("input_mutations", {})),
                         dict(meta.get("state_mutations", {})), final_attribute_writes(functional.graph))
