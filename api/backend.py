"""``torch.compile(model, backend="fxla")``: TorchDynamo hands fxla its FX graphs.

Registered through the ``torch_dynamo_backends`` entry point (see pyproject.toml).  Dynamo captures the
program (splitting it at graph breaks and running the Python between graphs itself); each captured
``torch.fx.GraphModule`` is converted node for node into fxla's own graph IR and compiled with
:func:`fxla.compile`, so everything fxla does — per-signature executables, verified StableHLO, PJRT — applies.
An op fxla cannot lower fails the compilation with fxla's :class:`~fxla.UnsupportedOpError` (dynamo wraps it in
``BackendCompilerFailed``); fxla never silently falls back to eager.
"""
from __future__ import annotations

import re
from typing import Any, List, Optional

import torch

from fxla.compile import CompiledModule
from fxla.frontend import Graph, GraphModule, SourceLocation

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _source_of(fx_node) -> Optional[SourceLocation]:
    """The innermost user frame of dynamo's ``stack_trace`` for the node, if it recorded one."""
    trace = fx_node.meta.get("stack_trace") or ""
    frames = _FRAME.findall(trace)
    lines = [line.strip() for line in trace.splitlines() if line.strip() and not line.strip().startswith("File")]
    if not frames:
        return None
    file, line = frames[-1]
    return SourceLocation(file, int(line), 1, lines[-1] if lines else "", "")


def graph_module_from_fx(fx_gm: torch.fx.GraphModule) -> GraphModule:
    """Convert a ``torch.fx.GraphModule`` into fxla's :class:`GraphModule` (same opcodes, targets and names)."""
    graph = Graph()
    env = {}

    def arg(a):
        # torch.fx keeps args in immutable containers; rebuild plain ones with fxla nodes in place of fx nodes
        if isinstance(a, torch.fx.Node):
            return env[a]
        if isinstance(a, (tuple, list)):
            return type(a)(arg(x) for x in a) if type(a) in (tuple, list) else tuple(arg(x) for x in a)
        if isinstance(a, dict):
            return {k: arg(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(arg(a.start), arg(a.stop), arg(a.step))
        return a

    for node in fx_gm.graph.nodes:
        if node.op == "output":
            graph.output(arg(node.args[0]))
            continue
        new = graph.create_node(node.op, node.target, arg(node.args), arg(node.kwargs), name=node.name)
        new.meta["source"] = _source_of(node)
        env[node] = new
    return GraphModule(fx_gm, graph, class_name="DynamoGraph")


def fxla_backend(gm: torch.fx.GraphModule, example_inputs: List[Any], **options) -> CompiledModule:
    """The TorchDynamo backend: ``torch.compile(model, backend="fxla", options={"device": "cpu"})``."""
    return CompiledModule(graph_module_from_fx(gm), device=options.get("device"))
