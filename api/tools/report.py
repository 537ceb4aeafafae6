"""The HTML report of ``fxla-dump --format html``: one self-contained page to work in.

:func:`render` turns the text of each stage (what ``fxla-dump`` prints) and the captured graph into a single
HTML file with its CSS and JavaScript inline (report.css, report.js next to this module): it loads nothing from
the network and needs no server (open it as ``file://``).  The page has

* the model's name and a table of contents (the stages with their line counts, the top-level modules);
* the stages in two panes side by side, each with a tab per stage (a button folds them into one pane);
* the ``graph`` stage as the captured graph's listing grouped by module path (the ``nn.Module`` whose
  ``forward`` recorded each node), one collapsible group per module with its type, ``call_module`` nodes with
  the type of the module they call; groups start folded when the graph has more than ``FOLD_ABOVE`` nodes;
* the IR syntax-highlighted (MLIR, HLO, the fx listing, Python), ``loc(...)`` and HLO ``metadata={...}`` left
  out of the displayed lines: they are what links a line to its graph node;
* links: every line that belongs to a graph node (the node's name in the MLIR ``loc("name"(file:line:col))``,
  the last component of HLO's ``op_name``, ``%name :`` in the functional listing, ``name = ...`` in the code)
  carries it; clicking a node or a line highlights that node's lines in every stage, scrolls each pane to the
  first, and shows the node (op, target, module type, module path) and the user's source line with two lines
  of context around it; clicking a module group's ``select`` does the same for every node of the module;
* search: highlights the lines holding the text (case-insensitive) with a count per stage, ``Enter`` steps
  through the hits of the pane last used, ``filter`` hides the other lines.

For the links the MLIR stages must be printed with their locations (``fxla-dump`` does so for ``--format
html``); without them the fxla and stablehlo lines are shown unlinked.
"""
from __future__ import annotations

import html
import importlib.resources
import json
import linecache
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

#: how each stage is read: the highlighter (report.js) and which lines link to which node
STAGE_KINDS = {"graph": "graph", "functional": "fxgraph", "code": "python", "fxla": "mlir",
               "stablehlo": "mlir", "hlo": "hlo"}
STAGE_TITLES = {"graph": "graph", "functional": "functional", "code": "code", "fxla": "fxla",
                "stablehlo": "StableHLO", "hlo": "HLO"}
#: a graph with more nodes than this starts with its module groups folded (the top level open)
FOLD_ABOVE = 300
#: lines of the user's file shown before and after a node's source line
CONTEXT_LINES = 2

_ALIAS = re.compile(r"^#(loc\d*) = loc\((.*)\)\s*$")
_ALIAS_REF = re.compile(r"#(loc\d*)\b")
_NAME_LOC = re.compile(r'"((?:[^"\\]|\\.)*)"\(')
_FILE_LOC = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):\d+')
_FX_NAME = re.compile(r"^\s*%(\w+) :")
_PY_NAME = re.compile(r"^\s*(\w+)\s*=[^=]")
_OP_NAME = re.compile(r'op_name="([^"]*)"')


# -- reading the stages --------------------------------------------------------------------------------------------
def _balanced_end(text: str, start: int, open_ch: str, close_ch: str) -> int:
    """Index just past the bracket closing the one at ``text[start]`` (quoted strings skipped), or ``len(text)``."""
    depth, i, quoted = 0, start, False
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def _cut(line: str, opener: str, open_ch: str, close_ch: str) -> Tuple[str, List[str], str]:
    """``line`` without each ``opener...`` (``opener`` ends with ``open_ch``; up to the balanced closing bracket,
    with the blanks before it), the bodies removed, in order, and what followed the last one."""
    kept, bodies, pos = [], [], 0
    while True:
        at = line.find(opener, pos)
        if at < 0:
            break
        if at > 0 and (line[at - 1].isalnum() or line[at - 1] in "_#."):
            kept.append(line[pos:at + len(opener)])
            pos = at + len(opener)
            continue
        end = _balanced_end(line, at + len(opener) - 1, open_ch, close_ch)
        kept.append(line[pos:at].rstrip(" ,") if opener.startswith("metadata") else line[pos:at].rstrip(" "))
        bodies.append(line[at + len(opener):end - 1])
        pos = end
    kept.append(line[pos:])
    return "".join(kept), bodies, line[pos:]


def _mlir_aliases(text: str) -> Dict[str, str]:
    return {m.group(1): m.group(2) for m in map(_ALIAS.match, text.splitlines()) if m}


def resolve_loc(body: str, aliases: Mapping[str, str]) -> Tuple[Optional[str], Optional[str], Optional[int]]:
    """``(name, file, line)`` of an MLIR location body (what is inside ``loc(...)``), ``#locN`` aliases expanded:
    the first ``NameLoc`` name (fxla names each op's location after its graph node) and the first
    ``file:line:col``; ``None`` for what it does not hold."""
    for _ in range(8):          # aliases refer to earlier aliases; a few levels in practice
        expanded = _ALIAS_REF.sub(lambda m: aliases.get(m.group(1), "unknown"), body)
        if expanded == body:
            break
        body = expanded
    name, file = _NAME_LOC.search(body), _FILE_LOC.search(body)
    return (name.group(1) if name else None, file.group(1) if file else None,
            int(file.group(2)) if file else None)


def _read_mlir(text: str):
    """Displayed lines (alias definitions dropped, ``loc(...)`` cut) and the loc name of each: the loc that ends
    the line, the op's own (a ``func.func`` line ends in ``{``: its locs are the arguments')."""
    aliases = _mlir_aliases(text)
    lines, names = [], []
    for raw in text.splitlines():
        if _ALIAS.match(raw):
            continue
        shown, locs, tail = _cut(raw, "loc(", "(", ")")
        lines.append(shown)
        names.append(resolve_loc(locs[-1], aliases)[0] if locs and not tail.strip() else None)
    return lines, names


def _read_hlo(text: str):
    lines, names = [], []
    for raw in text.splitlines():
        shown, metadata, _ = _cut(raw, "metadata={", "{", "}")
        op_name = _OP_NAME.search(metadata[-1]) if metadata else None
        lines.append(shown)
        names.append(op_name.group(1).rsplit("/", 1)[-1] if op_name else None)
    return lines, names


def _read_by(pattern):
    def read(text: str):
        lines = text.splitlines()
        return lines, [m.group(1) if m else None for m in map(pattern.match, lines)]
    return read


_READERS = {"mlir": _read_mlir, "hlo": _read_hlo, "fxgraph": _read_by(_FX_NAME), "python": _read_by(_PY_NAME)}


# -- the graph -----------------------------------------------------------------------------------------------------
def _type_name(root, path: str) -> str:
    if root is None or not path:
        return ""
    try:
        return type(root.get_submodule(path)).__name__
    except (AttributeError, TypeError):
        return ""


class _Sources:
    """The user's source lines the nodes point at, each once: ``{file, line, col, text, context}``."""

    def __init__(self):
        self.rows: List[Dict[str, Any]] = []
        self._index: Dict[Tuple[str, int], int] = {}

    def add(self, file: Optional[str], line: Optional[int], col: int = 0, text: str = "") -> int:
        if not file or not line:
            return -1
        key = (file, line)
        if key not in self._index:
            lines = linecache.getlines(file)
            first = max(1, line - CONTEXT_LINES)
            context = [[n, lines[n - 1].rstrip("\n")] for n in range(first, min(len(lines), line + CONTEXT_LINES) + 1)]
            if not text and line <= len(lines):
                text = lines[line - 1].rstrip("\n")
            self._index[key] = len(self.rows)
            self.rows.append({"file": file, "line": line, "col": col, "text": text, "context": context})
        return self._index[key]


def _graph_nodes(graph_module, model, sources: _Sources):
    """One record per node of the captured graph, and the module tree over them (see :func:`_module_tree`)."""
    nodes = []
    for node in graph_module.graph.nodes:
        src = node.meta.get("source")
        module_type = _type_name(graph_module, node.target) if node.op == "call_module" else ""
        if node.op == "call_module" and not module_type:
            module_type = _type_name(model, node.target)
        nodes.append({"name": node.name, "op": node.op, "type": module_type,
                      "path": getattr(src, "module_path", "") or "", "text": node.format_node(),
                      "src": sources.add(src.file, src.line, src.col, src.source_line) if src else -1})
    return nodes


def _module_tree(nodes, count: int, model) -> List[Any]:
    """The graph listing grouped by module path: a list of node indices and groups ``{"name", "path", "type",
    "open", "items"}``, nested as the paths are (``blocks.0.attn`` sits in ``blocks.0`` in ``blocks``); a run
    of consecutive nodes of one module is one group."""
    root: List[Any] = []
    stack: List[Tuple[str, List[Any]]] = [("", root)]     # (path, items) of the open groups
    for index in range(count):
        parts = nodes[index]["path"].split(".") if nodes[index]["path"] else []
        depth = 0
        while depth + 1 < len(stack) and depth < len(parts) and stack[depth + 1][0] == ".".join(parts[:depth + 1]):
            depth += 1
        del stack[depth + 1:]
        for level in range(depth, len(parts)):
            path = ".".join(parts[:level + 1])
            group = {"name": parts[level], "path": path, "type": _type_name(model, path),
                     "open": count <= FOLD_ABOVE or level == 0, "items": []}
            stack[-1][1].append(group)
            stack.append((path, group["items"]))
        stack[-1][1].append(index)
    return root


# -- the page ------------------------------------------------------------------------------------------------------
def report_data(texts: Mapping[str, str], stages: Sequence[str], graph_module, model=None, *,
                title: str, subtitle: str = "") -> Dict[str, Any]:
    """What the page shows, as JSON-ready data: ``nodes`` (the captured graph's nodes first, in order, then the
    names only the other stages' links know), ``sources``, ``tree`` (the graph's module groups) and per stage its
    displayed ``lines`` and ``links`` (the node index of each line, -1 for none)."""
    sources = _Sources()
    nodes = _graph_nodes(graph_module, model, sources)
    count = len(nodes)
    index = {n["name"]: i for i, n in enumerate(nodes)}
    read_stages = []
    for stage in stages:
        if stage == "graph":
            read_stages.append({"id": stage, "title": STAGE_TITLES[stage], "kind": "graph",
                                "lines": [n["text"] for n in nodes], "links": list(range(count))})
            continue
        kind = STAGE_KINDS[stage]
        lines, names = _READERS[kind](texts[stage])
        links = []
        for name in names:
            if name is not None and name not in index and kind == "mlir":
                index[name] = len(nodes)       # a node of the lowered graph only (functionalization made it)
                nodes.append({"name": name, "op": "", "type": "", "path": "", "text": "", "src": -1})
            links.append(index.get(name, -1) if name is not None else -1)
        read_stages.append({"id": stage, "title": STAGE_TITLES[stage], "kind": kind, "lines": lines,
                            "links": links})
    _locate_lowered_only(texts, stages, nodes, count, sources)
    return {"title": title, "subtitle": subtitle, "nodes": nodes, "sources": sources.rows,
            "tree": _module_tree(nodes, count, model), "stages": read_stages}


def _locate_lowered_only(texts, stages, nodes, count, sources: _Sources) -> None:
    """The source line of the nodes the captured graph does not have, from their MLIR locations."""
    if len(nodes) == count:
        return
    wanted = {n["name"]: n for n in nodes[count:]}
    for stage in stages:
        if STAGE_KINDS[stage] != "mlir":
            continue
        aliases = _mlir_aliases(texts[stage])
        for body in aliases.values():
            name, file, line = resolve_loc(body, aliases)
            if name in wanted and wanted[name]["src"] < 0:
                wanted[name]["src"] = sources.add(file, line)


def _asset(name: str) -> str:
    return importlib.resources.files("fxla.tools").joinpath(name).read_text(encoding="utf-8")


def _script_json(data) -> str:
    """JSON safe inside ``<script>``: no ``<``, ``>`` or ``&`` that could end the element."""
    return (json.dumps(data, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026"))


def render(texts: Mapping[str, str], stages: Sequence[str], graph_module, model=None, *, title: str,
           subtitle: str = "") -> str:
    """The report as one HTML document (see the module docstring).

    texts:        ``{stage: text}`` as ``fxla-dump`` prints each stage (fxla and stablehlo with their
                  locations for the links; ``graph`` is not read: the listing comes from ``graph_module``)
    stages:       the stages to show, in order (names of ``STAGE_KINDS``)
    graph_module: the captured graph (``CompiledModule.graph_module``)
    model:        the user's model, for the types of the module groups (``None``: groups without types)
    title:        the model's name; ``subtitle``: where it comes from (fxla-dump's spec)
    """
    data = report_data(texts, stages, graph_module, model, title=title, subtitle=subtitle)
    heading = html.escape(title) + (f" <small>{html.escape(subtitle)}</small>" if subtitle else "")
    return "\n".join([
        "<!doctype html>", "<html lang='en'><head><meta charset='utf-8'>",
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'\">",
        f"<title>{html.escape(title)} · fxla report</title>", f"<style>{_asset('report.css')}</style></head>",
        "<body><header><h1>" + heading + "</h1>"
        "<input id='search' type='search' placeholder='search (/), Enter: next hit' autocomplete='off'>"
        "<label><input id='filter' type='checkbox'> filter</label><span id='hits'></span>"
        "<button id='split' type='button'>one pane</button></header>",
        "<div id='main'><nav id='side'><section id='toc'><h2>Contents</h2><ul id='toc-stages'></ul>"
        "<h3>Modules</h3><ul id='toc-modules'></ul></section>"
        "<section id='info'><h2>Selection</h2><p class='hint'>Click a graph node or an IR line.</p></section></nav>"
        "<div id='panes'></div></div>",
        f"<script type='application/json' id='report-data'>{_script_json(data)}</script>",
        f"<script>{_asset('report.js')}</script></body></html>"])


def model_name(model) -> str:
    """What the report calls ``model``: its class name for an ``nn.Module``, its qualified name for a function."""
    import torch

    if isinstance(model, torch.nn.Module):
        return type(model).__name__
    return getattr(model, "__qualname__", None) or type(model).__name__
