#!/usr/bin/env python3
"""Draft the FileCheck lines of ``lit_tests/TorchToFxla/*.py`` from what the cases print (like LLVM's
``update_test_checks.py``).

    .venv/bin/python utils/update_torch_op_checks.py lit_tests/TorchToFxla/elementwise.py [--only NAME ...]

Runs each file, splits its output at the ``// case <name>:`` labels that :mod:`fxla.testing` prints, and
replaces the block of ``# CHECK`` comment lines right above each ``@case(...)`` decorator with a draft:
the label, the ``func.func @main`` signature with a named capture per argument, and every fxla op of the
body (at most ``--max-ops``, results and operands as named captures; a body without ops gets ``CHECK-NOT``
plus the ``return``), in the dialect's own syntax as :mod:`fxla.testing` prints it
(:mod:`fxla.dialects.fxla.syntax`: ``%0 = fxla.linear %x, %w, bias %b : ... -> ...``).  The draft is a starting point: review it, keep the lines that prove the torch semantics
(attributes, broadcast and promoted types) and drop the rest.  ``--only`` limits the rewrite to the cases
with those labels (e.g. ``--only torch.add "Tensor.view (infer)"``).
"""
from __future__ import annotations

import argparse
import ast
import pathlib
import re
import subprocess
import sys
from typing import Dict, List, Optional, Tuple

LABEL = re.compile(r"^// (case .+):$")
ARG = re.compile(r"%(arg\d+): (tensor<[^>]*>)( \{fxla\.param = \"([^\"]+)\"\})?")
OP = re.compile(r"^\s*(?:(%[\w#:]+(?:, %[\w#:]+)*) = )?fxla\.(\w+)\b(.*)$")     # the dialect's own syntax
RET = re.compile(r"^\s*return (.*?)( : .*)?$")
VALUE = re.compile(r"%[\w]+(?:#\d+)?")


def run_file(path: pathlib.Path) -> Dict[str, List[str]]:
    """label -> printed lines, in order."""
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        sys.exit(f"error: {path} exited with status {proc.returncode} (see the errors above)\n"
                 f"fix: make every case lower before drafting its checks")
    blocks: Dict[str, List[str]] = {}
    current: Optional[List[str]] = None
    for line in proc.stdout.splitlines():
        m = LABEL.match(line)
        if m:
            current = blocks.setdefault(m.group(1), [])
        elif current is not None:
            current.append(line)
    return blocks


def escape(text: str) -> str:
    """Literal text for a check line: ``[[`` and ``{{`` would start FileCheck variables/regexes."""
    return text.replace("{{", "{{\\{\\{}}").replace("[[", "{{\\[\\[}}")


def input_names(func: ast.FunctionDef, n_args: int) -> List[str]:
    names = [a.arg.upper() for a in func.args.args]
    return names if names else ["X", "Y", "Z"][:n_args]


def use_value(v: re.Match, captures: Dict[str, str]) -> str:
    """An SSA value as a check pattern: its capture if it has one (``%0#1`` -> ``%[[SORT]]#1``), else any value."""
    base, _, index = v.group(0).partition("#")
    if base in captures:
        return f"%[[{captures[base]}]]" + (f"#{index}" if index else "")
    return "%{{.+}}"


def draft(label: str, lines: List[str], names: List[str], max_ops: int) -> List[str]:
    out = [f"# CHECK-LABEL: {label}:"]
    sig = next((ln for ln in lines if "func.func @main" in ln), None)
    if sig is None:
        return out
    captures: Dict[str, str] = {}
    parts = []
    inputs = iter(names)
    for arg, ty, _, param in ARG.findall(sig):
        name = re.sub(r"\W", "_", param.rpartition(".")[2]).upper() if param else next(inputs, f"A{arg[3:]}")
        name = name.lstrip("_") or "C"
        while name in captures.values():
            name += "_"
        captures["%" + arg] = name
        parts.append(f"%[[{name}:.+]]: {ty}" + (f' {{fxla.param = "{param}"}}' if param else ""))
    out.append(f"# CHECK:         func.func @main({', '.join(parts)})")
    body = [ln for ln in lines[lines.index(sig) + 1:] if ln.strip() not in ("}", "")]
    ops = [(m, ln) for ln in body if (m := OP.match(ln))]
    if not ops:
        out.append('# CHECK-NOT:     = fxla.')
    # constant tables (window weights, gather indices) are noise; splats (alpha, bounds, fills) carry semantics
    shown = [(m, ln) for m, ln in ops if m.group(2) != "constant" or "dense<[" not in ln]
    if len(shown) > max_ops:                 # a composite: its first ops and the one producing the result
        def form(m: re.Match) -> str:
            return m.group(2) + VALUE.sub("%", m.group(3))
        skipped = shown[max_ops - 1:-1]
        # the last op only if no skipped op looks the same (the check would match that one first)
        tail = [] if any(form(m) == form(shown[-1][0]) for m, _ in skipped) else shown[-1:]
        shown = shown[:max_ops - 1] + tail
    taken: Dict[str, int] = {}
    for m, ln in shown:
        results, opname, rest = m.group(1), m.group(2), m.group(3)
        rest = VALUE.sub(lambda v: use_value(v, captures), escape(rest))
        if results:
            base = opname.upper()
            taken[base] = taken.get(base, 0) + 1
            name = base if taken[base] == 1 else f"{base}_{taken[base]}"
            for r in re.split(r", ", results):
                captures[r.split(":")[0]] = name
            count = results.split(":")[1] if ":" in results else ""     # %0:2 = ... (a multi-result op)
            out.append(f'# CHECK:         %[[{name}:.+]]{":" + count if count else ""} = fxla.{opname}{rest}')
        else:
            out.append(f'# CHECK:         fxla.{opname}{rest}')
    ret = next((RET.match(ln) for ln in body if RET.match(ln)), None)
    if ret is not None:
        vals = [v.strip() for v in ret.group(1).split(",")]
        last = shown[-1][0].group(1) if shown else None
        if not (len(shown) == len(ops) and last is not None and vals == [last.split(":")[0]]):
            # the result is not simply the last checked op's: say which value is returned
            out.append("# CHECK:         return " + ", ".join(VALUE.sub(lambda v: use_value(v, captures), v)
                                                              for v in vals) + (ret.group(2) or ""))
    return out


def cases_in(source: str) -> List[Tuple[int, ast.FunctionDef]]:
    """(line index of the first decorator, function) for every function decorated with ``@case(...)``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                if isinstance(dec, ast.Call) and getattr(dec.func, "id", None) == "case":
                    found.append((dec.lineno - 1, node))
    return sorted(found, key=lambda item: item[0])


def update(path: pathlib.Path, only: Optional[List[str]], max_ops: int) -> int:
    blocks = run_file(path)
    labels = list(blocks)
    lines = path.read_text().splitlines()
    cases = cases_in("\n".join(lines))
    if len(cases) != len(labels):
        sys.exit(f"error: {path}: {len(cases)} @case decorators but {len(labels)} labels printed\n"
                 f"fix: give every case of one op a distinct variant= (labels must be unique)")
    changed = 0
    for (start, func), label in reversed(list(zip(cases, labels))):
        if only and label[5:] not in only:
            continue
        top = start
        while top > 0 and lines[top - 1].lstrip().startswith("# CHECK"):
            top -= 1
        new = draft(label, blocks[label], input_names(func, 3), max_ops)
        lines[top:start] = new
        changed += 1
    path.write_text("\n".join(lines) + "\n")
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=pathlib.Path)
    parser.add_argument("--only", nargs="*", help="labels (without 'case ') of the cases to rewrite")
    parser.add_argument("--max-ops", type=int, default=3, help="fxla ops checked per case (default 3)")
    args = parser.parse_args(argv)
    for path in args.files:
        print(f"{path}: drafted {update(path, args.only, args.max_ops)} case(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
