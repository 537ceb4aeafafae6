"""Graphviz rendering of a :class:`Graph`: DOT text, and SVG through the ``dot`` binary."""
from __future__ import annotations

import shutil
import subprocess
from typing import Any, List

from .. import meta as M
from ..errors import PassError
from ..graph import Graph
from ..node import Node, _target_str
from ..shape_prop import TensorMeta
from ..source import user_frame_location

__all__ = ["graph_to_dot", "graph_to_svg"]

#: Fill colour per opcode.
OP_COLORS = {"placeholder": "#cfe2f3", "get_attr": "#eeeeee", "call_function": "#fff2cc",
             "call_method": "#fce5cd", "call_module": "#d9ead3", "output": "#f4cccc"}
_MAX_LINE = 80


def _quote(text: str) -> str:
    """A DOT double-quoted string; ``\\n`` in ``text`` becomes a line break."""
    lines = [line if len(line) <= _MAX_LINE else line[:_MAX_LINE - 3] + "..." for line in text.split("\n")]
    return '"' + "\\n".join(line.replace("\\", "\\\\").replace('"', '\\"') for line in lines) + '"'


def describe_meta(tm: Any) -> str:
    """``float32[2, 3]`` for a TensorMeta; the same structure for tuples/lists/dicts of them."""
    if isinstance(tm, TensorMeta):
        return f"{str(tm.dtype).rpartition('.')[2]}[{', '.join(map(str, tm.shape))}]"
    if isinstance(tm, (tuple, list)):
        inner = ", ".join(describe_meta(t) for t in tm)
        return f"({inner})" if isinstance(tm, tuple) else f"[{inner}]"
    if isinstance(tm, dict):
        return "{" + ", ".join(f"{k}: {describe_meta(v)}" for k, v in tm.items()) + "}"
    return "-"


def _label(n: Node) -> str:
    parts = [n.name, n.op if n.op in ("placeholder", "output") else f"{n.op}: {_target_str(n.target)}"]
    if M.TENSOR_META in n.meta:
        parts.append(describe_meta(n.meta[M.TENSOR_META]))
    return "\n".join(parts)


def graph_to_dot(graph: Graph, name: str = "graph") -> str:
    """Graphviz DOT text for ``graph``: one box per node (labelled with its name, opcode,
    target and -- if shape propagation ran -- ``dtype[shape]`` from ``meta['tensor_meta']``),
    coloured by opcode, and one edge per use (producer -> user) in argument order."""
    lines: List[str] = [f"digraph {_quote(name)} {{", "  rankdir=TB;",
                        '  node [shape=box, style="rounded,filled", fontname="monospace", fontsize=10];']
    for n in graph.nodes:
        lines.append(f"  {_quote(n.name)} [label={_quote(_label(n))}, fillcolor={_quote(OP_COLORS[n.op])}];")
    for n in graph.nodes:
        for inp in n.all_input_nodes:
            lines.append(f"  {_quote(inp.name)} -> {_quote(n.name)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def graph_to_svg(graph: Graph, name: str = "graph", timeout: float = 60.0) -> str:
    """SVG text of :func:`graph_to_dot`, rendered by Graphviz's ``dot`` binary.

    Raises :class:`PassError` if ``dot`` is not installed or fails.
    """
    dot = shutil.which("dot")
    if dot is None:
        raise PassError(
            "graph_to_svg: the Graphviz `dot` program is not installed", where=user_frame_location(),
            why="SVG rendering runs `dot -Tsvg`, and no `dot` is on PATH",
            fix="install Graphviz (`apt-get install graphviz`, `brew install graphviz` or `conda install "
                "graphviz`), or use graph_to_dot(graph) and render the DOT text elsewhere")
    try:
        done = subprocess.run([dot, "-Tsvg"], input=graph_to_dot(graph, name).encode(), capture_output=True,
                              timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PassError("graph_to_svg: running `dot` failed", where=user_frame_location(),
                        why=f"{type(e).__name__}: {e}",
                        fix="check the Graphviz installation (`dot -V`)") from e
    if done.returncode != 0:
        raise PassError(
            f"graph_to_svg: `dot` exited with status {done.returncode}", where=user_frame_location(),
            why=done.stderr.decode(errors="replace").strip() or "no error output",
            fix="check the Graphviz installation (`dot -V`); render graph_to_dot(graph) by hand to see the error")
    return done.stdout.decode()
