"""Turn StableHLO interpreter tests (third_party/stablehlo_interpret) into programs PJRT can run.

Each chunk's ``check.expect_eq_const %v, dense<…> : T`` (or ``expect_almost_eq_const``) becomes two results of
``@main``: the computed ``%v`` and a ``stablehlo.constant`` holding the expectation, so one execution yields
both and the test compares them.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import List

SUITE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "third_party",
                     "stablehlo_interpret")
_CHECK = re.compile(r"^(\s*)check\.(expect_eq_const|expect_almost_eq_const)\s+(%[\w#]+)\s*,\s*(.*?)\s*:\s*(\S.*)$")
_FUNC = re.compile(r"^func\.func\s+@(\w+)\(\)\s*\{\s*$")


@dataclass
class Case:
    id: str
    text: str
    exact: List[bool]     # one per checked value: expect_eq (True) or expect_almost_eq (False)


def _rewrite(chunk: str, name_hint: str):
    lines = chunk.splitlines()
    funcs = [i for i, line in enumerate(lines) if line.startswith("func.func")]
    entry = next((i for i in funcs if _FUNC.match(lines[i])), None)
    if entry is None:
        return None
    name = _FUNC.match(lines[entry]).group(1)
    end = next(i for i in range(entry + 1, len(lines)) if lines[i].startswith("}"))
    body, results, types, exact = [], [], [], []
    for line in lines[entry + 1:end]:
        m = _CHECK.match(line)
        if m:
            indent, kind, value, literal, typ = m.groups()
            expected = f"%fxla_expected{len(results)}"
            body.append(f"{indent}{expected} = stablehlo.constant {literal} : {typ}")
            results += [value, expected]
            types += [typ, typ]
            exact.append(kind == "expect_eq_const")
        elif line.strip() in ("func.return", "return"):
            continue
        else:
            body.append(line)
    if not results:
        return None
    header = f"func.func @main() -> ({', '.join(types)}) {{"
    ret = f"  func.return {', '.join(results)} : {', '.join(types)}"
    others = [line for j, line in enumerate(lines) if not entry <= j <= end]
    text = "\n".join(others + [header] + body + [ret, "}"])
    return Case(f"{name_hint}:{name}", text, exact)


def load_cases() -> List[Case]:
    cases = []
    for fname in sorted(os.listdir(SUITE)):
        if not fname.endswith(".mlir"):
            continue
        with open(os.path.join(SUITE, fname), encoding="utf-8") as fh:
            chunks = fh.read().split("// -----")
        for chunk in chunks:
            chunk = "\n".join(line for line in chunk.splitlines() if not line.startswith("// RUN"))
            case = _rewrite(chunk.strip() + "\n", fname[:-5])
            if case is not None:
                cases.append(case)
    return cases
