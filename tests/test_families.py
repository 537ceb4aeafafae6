"""One op-family vocabulary: every fxla op lives in the same family in the dialect, the patterns and the lit tree.

``fxla.dialects.fxla.ops.FAMILIES`` names the families.  An op of family ``<family>`` has its ``OpDef`` in
``dialects/fxla/ops_<family>.py`` (listed in ``<FAMILY>_OPS``), its StableHLO pattern in
``lowering/patterns/<family>.py`` and at least one FileCheck case in
``lit_tests/Conversion/FxlaToStablehlo/<family>.mlir`` (running them is lit's job; this test only reads them).
The checklist for adding an op is in docs/tutorial.md ("Add an fxla op").
"""
from __future__ import annotations

import importlib
import pathlib
import re

from fxla.dialects.fxla import ops
from fxla.lowering.patterns import PATTERNS

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIT_DIR = ROOT / "lit_tests" / "Conversion" / "FxlaToStablehlo"
LABEL = re.compile(r"^// CHECK-LABEL: func\.func @(\w+)$", re.M)
OP_USE = re.compile(r'"(fxla\.\w+)"\(')
RUN_LINE = "// RUN: fxla-opt %s --split-input-file --convert-fxla-to-stablehlo -o %t"


def _family_of():
    found = {}
    for family, family_ops in ops.FAMILIES.items():
        for op in family_ops:
            found.setdefault(op, []).append(family)
    return found


def _cases(family: str):
    """(label, fxla op names used) per case of ``<family>.mlir``; comments are not uses."""
    text = (LIT_DIR / f"{family}.mlir").read_text()
    cases = []
    for chunk in text.split("\n// -----\n"):
        labels = LABEL.findall(chunk)
        code = "\n".join(line for line in chunk.splitlines() if not line.lstrip().startswith("//"))
        cases.append((labels, set(OP_USE.findall(code))))
    return cases


def _pattern_module(op) -> str:
    fn = PATTERNS[op]
    return getattr(fn, "func", fn).__module__            # functools.partial: the function it binds


def test_every_op_belongs_to_exactly_one_family():
    family_of = _family_of()
    twice = sorted(f"{op.name}: {', '.join(f)}" for op, f in family_of.items() if len(f) > 1)
    assert not twice, f"ops listed in several families: {twice}\nfix: list each op in one <FAMILY>_OPS tuple"
    assert set(family_of) == set(ops.ALL_OPS) and len(ops.ALL_OPS) == len(family_of)
    assert not set(ops.LEGACY_BY_NAME.values()) & set(ops.ALL_OPS), "a legacy spelling is in ALL_OPS"


def test_each_opdef_is_defined_in_its_family_file():
    wrong = []
    for family, family_ops in ops.FAMILIES.items():
        module = importlib.import_module(f"fxla.dialects.fxla.ops_{family}")
        assert getattr(module, f"{family.upper()}_OPS") is family_ops, family
        for op in family_ops:
            if getattr(module, op.mnemonic, None) is not op:
                wrong.append(f"{op.name} (family {family})")
    assert not wrong, (f"not defined as ops_<family>.<mnemonic>: {wrong}\n"
                       f"fix: define the OpDef in dialects/fxla/ops_<family>.py under its mnemonic")


def test_ops_module_reexports_every_op():
    missing = [op.name for op in ops.ALL_OPS if getattr(ops, op.mnemonic, None) is not op]
    missing += [op.name for op in ops.LEGACY_BY_NAME.values() if getattr(ops, op.mnemonic, None) is not op]
    assert not missing, (f"ops.<mnemonic> is not the op for: {missing}\n"
                         f"fix: import it by name in dialects/fxla/ops.py (rules and patterns use ops.<name>)")


def test_no_stray_family_files():
    families = set(ops.FAMILIES)
    op_files = {p.stem[len("ops_"):] for p in (ROOT / "dialects" / "fxla").glob("ops_*.py")}
    pattern_files = {p.stem for p in (ROOT / "lowering" / "patterns").glob("*.py")} - {"__init__", "builder"}
    lit_files = {p.stem for p in LIT_DIR.glob("*.mlir")}
    assert op_files == families, f"dialects/fxla/ops_*.py vs families: {sorted(op_files ^ families)}"
    assert pattern_files == families, f"lowering/patterns/*.py vs families: {sorted(pattern_files ^ families)}"
    assert lit_files == families, f"{LIT_DIR.name}/*.mlir vs families: {sorted(lit_files ^ families)}"


def test_each_pattern_is_in_its_family_file():
    wrong = []
    for op, (family,) in _family_of().items():
        if op not in PATTERNS:
            wrong.append(f"{op.name}: no pattern")
        elif _pattern_module(op) != f"fxla.lowering.patterns.{family}":
            wrong.append(f"{op.name}: in {_pattern_module(op)}, family {family}")
    for op in ops.LEGACY_BY_NAME.values():
        if op not in PATTERNS:
            wrong.append(f"{op.name} (legacy): no pattern")
    assert not wrong, f"{wrong}\nfix: register the op's pattern with @pattern(ops.<name>) in lowering/patterns/<family>.py"


def test_each_op_has_a_conversion_case_in_its_family_file():
    missing = []
    for family, family_ops in ops.FAMILIES.items():
        used = set().union(*(names for _, names in _cases(family)))
        missing += [f"{op.name} -> {family}.mlir" for op in family_ops if op.name not in used]
    legacy_used = set().union(*(names for family in ops.FAMILIES for _, names in _cases(family)))
    missing += [f"{name} (legacy)" for name in ops.LEGACY_BY_NAME if name not in legacy_used]
    assert not missing, (f"ops without a FileCheck case of fxla -> StableHLO: {missing}\n"
                         f"fix: add a case (func.func, CHECK-LABEL, CHECKs) to {LIT_DIR.relative_to(ROOT)}/<family>.mlir")


def test_conversion_cases_have_unique_labels():
    seen = {}
    for family in ops.FAMILIES:
        path = LIT_DIR / f"{family}.mlir"
        assert path.read_text().startswith(RUN_LINE), f"{path.name}: first line must be the RUN line"
        for labels, names in _cases(family):
            assert len(labels) == 1, f"{path.name}: a case needs exactly one CHECK-LABEL, got {labels}"
            assert names, f"{path.name}: case {labels[0]} uses no fxla op"
            seen.setdefault(labels[0], []).append(path.name)
    dupes = {label: files for label, files in seen.items() if len(files) > 1}
    assert not dupes, f"labels used twice: {dupes}\nfix: give each case its own function name"
