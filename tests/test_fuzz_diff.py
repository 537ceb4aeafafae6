"""The differential fuzzer (utils/fuzz_diff.py): it finds planted bugs, and a seeded run finds nothing new."""
import importlib.util
import io
import pathlib
import sys

import pytest
import torch

import fxla.lowering.to_fxla  # noqa: F401  (fills the rule table)
from fxla.lowering.registry import RULES

ROOT = pathlib.Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("fuzz_diff", ROOT / "utils" / "fuzz_diff.py")
fuzz_diff = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("fuzz_diff", fuzz_diff)
_spec.loader.exec_module(fuzz_diff)


def _case(body, outputs, specs, values):
    return fuzz_diff.Case(specs, body, outputs, values, values)


F32 = fuzz_diff.InputSpec((2, 3), torch.float32)


@pytest.fixture
def abs_is_negated(monkeypatch):
    """A planted lowering bug: torch.abs lowers to -abs(x)."""
    original, neg = RULES[torch.abs], RULES[torch.neg]
    monkeypatch.setitem(RULES, torch.abs, lambda ctx, x, **kw: neg(ctx, original(ctx, x, **kw)))


def test_planted_wrong_value_is_a_mismatch(abs_is_negated):
    case = _case(["v0 = torch.abs(a0)"], ["v0"], [F32], [[1.0, -2.0, 3.0, -4.0, 0.5, -0.5]])
    outcome, finding = fuzz_diff.run_case(case)
    assert outcome == "finding" and finding.kind == "mismatch", (outcome, finding)
    repro = case.reproducer(finding)
    assert "def f(a0):" in repro and "torch.abs(a0)" in repro and "fxla.compile(f)" in repro


def test_correct_program_passes():
    case = _case(["v0 = torch.abs(a0)", "a0.add_(1)"], ["v0"], [F32], [[1.0, -2.0, 3.0, -4.0, 0.5, -0.5]])
    assert fuzz_diff.run_case(case) == ("ok", None)


@pytest.mark.slow
def test_fuzz_loop_finds_and_minimizes_planted_bug(abs_is_negated):
    out = io.StringIO()
    groups = [(["torch.abs({x})", "{x} + 1.5", "torch.relu({x})"], 1)]
    report = fuzz_diff.fuzz(0, iterations=15, out=out, groups=groups, known=False)
    assert report.findings, report.summary()
    case, finding = report.findings[0]
    assert finding.kind in ("mismatch", "crash")
    assert any("torch.abs" in s for s in case.body)
    assert "=== finding 1" in out.getvalue()


def test_inplace_effect_on_input_is_compared(monkeypatch):
    """A wrong value written back to an input (not returned) is found too."""
    original, neg = RULES[torch.abs], RULES[torch.neg]
    monkeypatch.setitem(RULES, torch.abs, lambda ctx, x, **kw: neg(ctx, original(ctx, x, **kw)))
    case = _case(["a0.copy_(torch.abs(a0))", "v1 = a0.sum()"], ["v1"], [F32], [[1.0, -2.0, 3.0, -4.0, 5.0, 6.0]])
    outcome, finding = fuzz_diff.run_case(case)
    assert outcome == "finding" and finding.kind == "mismatch"


def test_compare_is_dtype_aware():
    assert fuzz_diff.compare("x", torch.tensor([1, 2]), torch.tensor([1, 3]))
    assert fuzz_diff.compare("x", torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64))
    assert fuzz_diff.compare("x", torch.tensor([float("nan"), 1.0]), torch.tensor([1.0, 1.0]))
    assert fuzz_diff.compare("x", torch.tensor([float("inf")]), torch.tensor([-float("inf")]))
    assert fuzz_diff.compare("x", torch.tensor([1.0]), torch.tensor([1.001])) is not None
    assert fuzz_diff.compare("x", torch.tensor([1.0], dtype=torch.bfloat16),
                             torch.tensor([1.0078125], dtype=torch.bfloat16)) is None
    assert fuzz_diff.compare("x", torch.tensor([float("nan"), float("inf")]),
                             torch.tensor([float("nan"), float("inf")])) is None


def test_error_in_both_is_not_a_finding():
    """Eager raises and fxla raises too: not a finding."""
    case = _case(["v0 = a0 @ a0"], ["v0"], [F32], [[1.0] * 6])
    outcome, _ = fuzz_diff.run_case(case)
    assert outcome == "eager-error"


def test_known_list_labels_findings():
    special = fuzz_diff.InputSpec((2, 3), torch.float32, special=True)
    case = _case(["v0 = a0.to(torch.int64)"], ["v0"], [special], [[float("nan")] * 6])
    assert fuzz_diff.known_label(case, fuzz_diff.Finding("mismatch", "")).startswith("DOCUMENTED: float NaN")
    plain = _case(["v0 = a0.to(torch.int64)"], ["v0"], [F32], [[1.0] * 6])
    assert fuzz_diff.known_label(plain, fuzz_diff.Finding("mismatch", "")) is None


def test_input_layouts_build_what_they_say():
    for layout, contiguous in (("contiguous", True), ("transposed", False), ("strided", False),
                               ("expanded", False), ("offset", True)):
        spec = fuzz_diff.InputSpec((3, 2), torch.float32, layout)
        t = fuzz_diff._build(fuzz_diff.input_source(spec, [float(i) for i in range(6)]))
        assert t.shape == (3, 2) and t.is_contiguous() == contiguous, layout
        if layout == "offset":
            assert t.storage_offset() == 1


@pytest.mark.slow
def test_seeded_run_finds_nothing_new():
    """About a minute or two on a 2-core machine: every program matches eager, raises as eager does, is a
    clear FxlaError refusal, or is a KNOWN bug."""
    out = io.StringIO()
    report = fuzz_diff.fuzz(0, iterations=400, seconds=100, out=out)
    assert report.programs >= 20
    assert not report.findings, report.summary() + "\n" + out.getvalue()


def test_dead_op_error_is_labelled():
    """Eager raising in an op whose result is unused is a labelled class of its own (fxla drops dead ops)."""
    spec = fuzz_diff.InputSpec((2, 3), torch.bool)
    dead = _case(["v0 = a0 > 0", "v1 = torch.round(v0)"], ["v0"], [spec], [[True] * 6])
    live = _case(["v0 = a0 > 0", "v1 = torch.round(v0)"], ["v1"], [spec], [[True] * 6])
    assert fuzz_diff._dead_error(dead) and not fuzz_diff._dead_error(live)
