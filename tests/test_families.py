"""One op-family vocabulary: every fxla op lives in the same family in the dialect, the patterns and the lit tree.

``fxla.dialects.fxla.ops.FAMILIES`` names the families.  An op of family ``<family>`` has its ``OpDef`` in
``dialects/fxla/ops_<family>.py`` (listed in ``<FAMILY>_OPS``), its StableHLO pattern in
``lowering/patterns/<family>.py`` and at least one FileCheck case in
``lit_tests/Conversion/FxlaToStablehlo/<family>.mlir`` (running them is lit's job; this test only reads them).
The checklist for adding an op is in docs/tutorial.md ("Add an fxla op").

The torch side uses the same word: the rules of family ``<family>`` live in ``lowering/rules/<family>.py``, their
numeric cases (against eager) in ``tests/test_ops_<family>.py`` and their FileCheck cases (torch -> fxla) in
``lit_tests/TorchToFxla/<family>.py``; a few tiny families share their closest family's files
(:data:`SHARED_TEST_FILES`).  A rule's family is the module that defines it (a module rule declared with
``register_module`` has the family of the op it forwards to); a numeric case's family is that of its first key.
"""
from __future__ import annotations

import functools
import importlib
import pathlib
import re

from fxla.dialects.fxla import ops
from fxla.lowering.patterns import PATTERNS

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIT_DIR = ROOT / "lit_tests" / "Conversion" / "FxlaToStablehlo"
RULES_DIR = ROOT / "lowering" / "rules"
TORCH_LIT_DIR = ROOT / "lit_tests" / "TorchToFxla"
TESTS_DIR = ROOT / "tests"
TORCH_LABEL = re.compile(r"^# CHECK-LABEL: case (\S+?)(?: \(([^)]*)\))?:$", re.M)

#: rule family -> the family whose test and lit files hold its cases (tiny families next to their closest one)
SHARED_TEST_FILES = {"ctc": "losses"}
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


# -- the torch side: lowering/rules/<family>.py, tests/test_ops_<family>.py, lit_tests/TorchToFxla/<family>.py --
def _rule_families():
    return {p.stem for p in RULES_DIR.glob("*.py")} - {"__init__"}


def _files_of(family: str) -> str:
    return SHARED_TEST_FILES.get(family, family)


def _rule_family(key) -> str:
    """The family of the rule of ``key``: the ``lowering/rules/<family>.py`` that defines it."""
    from fxla.lowering import RULES
    rule = RULES[key]
    while True:
        if isinstance(rule, functools.partial):
            rule = rule.func
        elif hasattr(rule, "forwards_to"):                 # registry.register_module: the op it forwards to
            rule = RULES[rule.forwards_to]
        else:
            break
    module = rule.__module__
    assert module.startswith("fxla.lowering.rules."), f"the rule of {key} is defined in {module}"
    return module.rsplit(".", 1)[1]


def _case_tables():
    """test_ops_<name>.py -> its CASES (the numeric cases of tests/test_ops.py's harness)."""
    return {path.stem[len("test_ops_"):]: importlib.import_module(path.stem).CASES
            for path in sorted(TESTS_DIR.glob("test_ops_*.py"))}


def test_shared_test_files_name_families():
    families = _rule_families()
    assert set(SHARED_TEST_FILES) <= families, sorted(set(SHARED_TEST_FILES) - families)
    assert set(SHARED_TEST_FILES.values()) <= families - set(SHARED_TEST_FILES)


def test_every_rule_family_has_its_test_file_and_lit_file_and_no_stray_ones():
    expected = {_files_of(family) for family in _rule_families()}
    tests = {path.stem[len("test_ops_"):] for path in TESTS_DIR.glob("test_ops_*.py")}
    lits = {path.stem for path in TORCH_LIT_DIR.glob("*.py")}
    assert tests == expected, (f"tests/test_ops_<family>.py vs lowering/rules/: missing {sorted(expected - tests)}, "
                               f"stray {sorted(tests - expected)}\nfix: name the file after its rule family "
                               f"(or list a tiny family in SHARED_TEST_FILES)")
    assert lits == expected, (f"{TORCH_LIT_DIR.relative_to(ROOT)}/<family>.py vs lowering/rules/: missing "
                              f"{sorted(expected - lits)}, stray {sorted(lits - expected)}\nfix: name the file after "
                              f"its rule family (or list a tiny family in SHARED_TEST_FILES)")


def test_each_numeric_case_is_in_its_family_file():
    from fxla.lowering.registry import _label
    wrong = [f"{case.name} ({_label(case.keys[0])}, family {_rule_family(case.keys[0])}) in test_ops_{name}.py"
             for name, cases in _case_tables().items() for case in cases
             if _files_of(_rule_family(case.keys[0])) != name]
    assert not wrong, (f"numeric cases outside their family's file: {wrong}\nfix: move the case to "
                       f"tests/test_ops_<family>.py of its first key's rule")


def test_each_lit_case_is_in_its_family_file():
    from fxla.lowering import RULES
    from fxla.lowering.registry import _label
    family_of = {_label(key): _rule_family(key) for key in RULES}
    wrong = []
    for path in sorted(TORCH_LIT_DIR.glob("*.py")):
        for m in TORCH_LABEL.finditer(path.read_text()):
            family = family_of.get(m.group(1))
            if family is not None and _files_of(family) != path.stem:
                wrong.append(f"case {m.group(1)} (family {family}) in {path.name}")
    assert not wrong, (f"lit cases outside their family's file: {wrong}\nfix: move the case (its CHECK lines and "
                       f"function) to {TORCH_LIT_DIR.relative_to(ROOT)}/<family>.py")
