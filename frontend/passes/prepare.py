"""The frontend's last stage: a captured graph made ready to lower, for one set of example inputs.

:func:`prepare_graph` runs shape propagation (every node gets ``tensor_meta``/``value``), rewrites in-place
mutation out of place (:func:`~fxla.frontend.passes.functionalize`) and propagates shapes again over the
rewritten graph, and makes the ``torch.no_grad()`` regions of forward explicit
(:func:`~fxla.frontend.passes.grad_mode.apply_grad_mode`).  Its result, :class:`PreparedGraph`, is the contract
with the lowering stage: lowering reads the graph and the three state records below, nothing else of the
frontend.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import torch

from fxla.base.shown import abbreviate

from .. import meta as M
from ..errors import TraceError
from ..graph_module import GraphModule
from ..node import Node
from ..shape_prop import propagate_shapes
from ..tracer import final_attribute_writes
from .functionalize import functionalize
from .grad_mode import apply_grad_mode, has_regions, mark_quiet_mutations
from .history import Histories, output_histories
from .output_views import OutputView, output_views

__all__ = ["PreparedGraph", "prepare_graph"]


@dataclass
class PreparedGraph:
    """A graph ready to lower (see the module docstring).

    ``graph_module``: the functional graph (``captured`` itself when the program mutates nothing and holds no
    ``torch.no_grad()`` region), every node
    with its shape metadata for ``example_inputs``.  ``captured``: the graph as traced (it has the shape
    metadata too).  ``input_mutations``: tensor argument name -> the node holding its value after the call
    (``x += 1``); ``state_mutations``: parameter/buffer name -> likewise (``self.steps += 1``);
    ``attribute_writes``: qualified attribute name -> ``(treespec, {leaf index: node}, {leaf index: constant})``,
    the plain attributes forward assigns (``self.last = y``, :func:`fxla.frontend.tracer.final_attribute_writes`).
    ``histories``: per tensor output, the inputs and parameters it has history from in eager's autograd graph
    (:func:`~fxla.frontend.passes.history.output_histories`).  ``output_views``: the outputs eager returns as
    views of an input or of another output, and how to make each again after the call
    (:func:`~fxla.frontend.passes.output_views.output_views`).
    """

    graph_module: GraphModule
    captured: GraphModule
    example_inputs: Tuple[Any, ...]
    input_mutations: Dict[str, Node] = field(default_factory=dict)
    state_mutations: Dict[str, Node] = field(default_factory=dict)
    attribute_writes: Dict[str, Tuple[Any, Dict[int, Node], Dict[int, Any]]] = field(default_factory=dict)
    histories: Optional[Histories] = None
    output_views: List[OutputView] = field(default_factory=list)

    @property
    def functionalized(self) -> bool:
        """Whether the graph was rewritten: the program changes inputs or module state in place, or holds a
        ``torch.no_grad()`` region."""
        return self.graph_module is not self.captured


def prepare_graph(gm: GraphModule, example_inputs) -> PreparedGraph:
    """Propagate shapes for ``example_inputs`` (tensors or nested tuples/lists/dicts of them) and functionalize;
    raises the frontend's errors (``TraceError``/``DataDependentError`` at the user's line, ``PassError`` for a
    mutation fxla cannot rewrite)."""
    example_inputs = tuple(example_inputs)
    check_assumed_classes(gm, example_inputs)
    propagate_shapes(gm, *example_inputs)
    views = output_views(gm)                    # (on the graph as traced: the user's views and bases)
    functional = functionalize(gm)              # in-place mutation -> out-of-place ops (needs the shapes)
    if functional is not gm:
        propagate_shapes(functional, *example_inputs)
    if has_regions(functional):                 # torch.no_grad() in forward: what leaves a region has no history
        if functional is gm:
            functional = GraphModule(gm, gm.graph.copy(), class_name=type(gm).__name__)
        apply_grad_mode(functional)
    mark_quiet_mutations(functional)            # (inputs changed under no_grad or through detach() alone)
    attributes = final_attribute_writes(functional.graph)
    histories = output_histories(functional, attributes)
    for node in functional.graph.nodes:        # (read by the two passes above; a Node in meta is not kept)
        node.meta.pop(M.REPLACES, None)
    meta = functional.graph.meta
    return PreparedGraph(functional, gm, example_inputs, dict(meta.get("input_mutations", {})),
                         dict(meta.get("state_mutations", {})), attributes, histories, views)


def check_assumed_classes(gm: GraphModule, example_inputs) -> None:
    """Raise :class:`TraceError` where the call's value of an input answers one of the ``isinstance`` checks the
    model's code made of it while tracing otherwise than the traced tensor did (``node.meta[CLASS_ASSUMED]``:
    ``isinstance(w, float)`` with ``w`` a shape-agnostic input, a tensor): the branch that took is baked into
    the graph, and eager would take the other for this value (a float, a dict)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, node in enumerate(placeholders):
        assumed = node.meta.get(M.CLASS_ASSUMED)
        if assumed is None:
            continue
        value = example_inputs[i] if i < len(example_inputs) else node.args[0] if node.args else None
        if isinstance(value, torch.Tensor) or all(isinstance(value, cls) == answer for cls, answer in
                                                  assumed.decisions):
            continue        # (a tensor -- fake ones too -- was answered for; else every check as eager's for it)
        remedies = assumed.remedies
        fix = f"{remedies.concrete_args}, or {remedies.concrete_shapes}" if remedies.concrete_args else \
            remedies.concrete_shapes
        raise TraceError(
            f"forward checked the class of its input {node.target!r} (isinstance) while tracing, when the "
            f"shape-agnostic trace took it for a {assumed.cls.__module__}.{assumed.cls.__qualname__}; this call "
            f"gives it {abbreviate(value)} ({type(value).__name__}; passed, or its default)",
            where=assumed.where,
            why="why: the branch the check took is part of the graph, and eager would take the one for this "
                "value",
            fix=f"{fix}, which makes plain Python arguments constants of the trace")
