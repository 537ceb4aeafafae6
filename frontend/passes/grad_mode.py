"""Grad mode inside a graph: what ``torch.no_grad()`` in ``forward`` means for gradients.

A region of ``forward`` under ``torch.no_grad()`` (or ``torch.set_grad_enabled(False)``) computes values with no
history: eager gives them ``requires_grad=False``, so no gradient flows back through them (a distillation
teacher, an EMA target, a momentum encoder), and parameters used only there get no gradient.  A graph marks
such a region with ``call_function`` nodes of ``torch._C._set_grad_enabled(mode)``: dynamo's graphs hold them,
and fxla's tracer records them (:mod:`fxla.frontend.tracer` patches ``torch._C._set_grad_enabled`` while it
traces).

:func:`apply_grad_mode` removes the markers and, where a value made inside a region is used outside it (by a
node made with grad enabled, or as an output), inserts ``torch.Tensor.detach`` on that edge: the values that
leave the region carry no history, as eager's.  A tuple made inside and indexed outside is detached after the
``getitem``.  Regions are read in graph order, the mode at the graph's start being enabled (dynamo compiles a
graph for the grad mode of its call, and fxla needs gradients only there).  It runs after functionalization
(:func:`fxla.frontend.passes.prepare.prepare_graph`), so an in-place change made in a region (an EMA buffer's
``mul_``) and read after it is such an edge too.

A parameter used only inside a region gets a zero gradient from fxla's autograd node where eager's is ``None``
(docs/training.md).
"""
from __future__ import annotations

import operator
from typing import Dict

import torch

from .. import meta as M
from ..graph_module import GraphModule
from ..node import Node
from ..shape_prop import TensorMeta

__all__ = ["apply_grad_mode", "GRAD_MODE_TARGET"]

#: the marker's target, as dynamo's graphs and fxla's tracer write it
GRAD_MODE_TARGET = torch._C._set_grad_enabled


def _is_marker(node: Node) -> bool:
    return node.op == "call_function" and node.target is GRAD_MODE_TARGET


def apply_grad_mode(gm: GraphModule) -> bool:
    """Detach the values that leave a ``no_grad`` region of ``gm``'s graph and remove the markers (see the module
    docstring); whether the graph changed."""
    graph = gm.graph
    markers = [n for n in graph.nodes if _is_marker(n)]
    if not markers:
        return False
    disabled: Dict[Node, bool] = {}
    enabled = True
    for node in list(graph.nodes):
        if _is_marker(node):
            enabled = bool(node.args[0])
        elif node.op in ("call_function", "call_method", "call_module"):
            disabled[node] = not enabled
    for node in [n for n, off in disabled.items() if off]:
        users = [u for u in node.users if not disabled.get(u, False)]
        if not users:
            continue
        if isinstance(node.meta.get(M.TENSOR_META), TensorMeta):
            _detach_uses(graph, node, users)
        else:                                   # (a tuple: detach what is taken out of it outside the region)
            for user in users:
                if user.op == "call_function" and user.target is operator.getitem:
                    _detach_uses(graph, user, list(user.users))
    for marker in markers:
        graph.erase_node(marker)
    gm.recompile()
    return True


def _detach_uses(graph, node: Node, users) -> None:
    """Give ``users`` ``node.detach()`` in place of ``node``."""
    with graph.inserting_after(node):
        detached = graph.call_method("detach", (node,))
    detached.meta.update(node.meta)
    for user in users:
        user.replace_input_with(node, detached)
