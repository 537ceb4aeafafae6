"""Every op object of ``fxla.lowering.RULES`` has a FileCheck case in ``lit_tests/TorchToFxla/``.

A case prints ``// case <name>:`` (or ``// case <name> (<variant>):``) through :mod:`fxla.testing`, where
``<name>`` is the op's public spelling as :func:`fxla.lowering.coverage` lists it, and checks it with
``# CHECK-LABEL: case <name>:``.  Running the files is lit's job (``lit -sv lit_tests/TorchToFxla``; fxla.testing
fails a case whose traced graph does not call the op it names); this test only reads them, so a new rule
without a lit case fails here, fast.
"""
from __future__ import annotations

import pathlib
import re

import pytest

import fxla.lowering

LIT_DIR = pathlib.Path(__file__).resolve().parent.parent / "lit_tests" / "TorchToFxla"
LABEL = re.compile(r"^# CHECK-LABEL: case (\S+?)(?: \(([^)]*)\))?:$", re.M)
DECORATOR = re.compile(r"^@case\(", re.M)


def _files():
    files = sorted(LIT_DIR.glob("*.py"))
    assert files, f"no lit files in {LIT_DIR}"
    return files


def _labels():
    """op name -> ['file.py', ...] (one entry per case)."""
    found = {}
    for path in _files():
        for m in LABEL.finditer(path.read_text()):
            found.setdefault(m.group(1), []).append(path.name)
    return found


def _rule_names():
    return {name for names in fxla.lowering.coverage().values() for name in names}


def test_every_rule_has_a_lit_case():
    missing = sorted(_rule_names() - set(_labels()))
    assert not missing, (
        f"{len(missing)} op(s) of fxla.lowering.RULES have no FileCheck case in {LIT_DIR}: {', '.join(missing)}\n"
        f"fix: add an @case(<op>, <example inputs>) to the file of its family, then draft its checks with "
        f"`.venv/bin/python utils/update_torch_op_checks.py <file> --only <name>` and review them")


def test_every_lit_case_names_a_rule():
    unknown = sorted(set(_labels()) - _rule_names())
    assert not unknown, (f"lit cases label ops that are not in fxla.lowering.coverage(): {', '.join(unknown)}\n"
                         f"fix: label a case with the op's public name (fxla.testing.op_name(op))")


def test_each_case_has_one_unique_label():
    for path in _files():
        text = path.read_text()
        assert text.startswith("# RUN: %python %s | FileCheck %s"), f"{path.name}: first line must be the RUN line"
        labels = [(m.group(1), m.group(2)) for m in LABEL.finditer(text)]
        decorators = len(DECORATOR.findall(text))
        assert len(labels) == decorators, (f"{path.name}: {decorators} @case decorators but {len(labels)} "
                                           f"CHECK-LABEL lines\nfix: give every case its CHECK-LABEL")
        dupes = sorted({f"{n} ({v})" if v else n for n, v in labels if labels.count((n, v)) > 1})
        assert not dupes, f"{path.name}: labels used twice: {dupes}\nfix: tell the cases apart with variant="


@pytest.mark.slow
def test_a_failing_case_is_reported_and_fails_the_file(tmp_path):
    """fxla.testing never skips silently: a case naming an op its graph does not call prints an error instead of
    IR, the next case still runs, and the process exits with status 1."""
    import subprocess
    import sys
    script = tmp_path / "cases.py"
    script.write_text("import torch\nfrom fxla.testing import case, t\n\n"
                      "@case(torch.sub, t(3))\ndef wrong_op(x):\n    return torch.add(x, 1)\n\n"
                      "@case(torch.nn.ReLU, t(3))\ndef relu():\n    return torch.nn.ReLU()\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "// case torch.sub:\n// error: CaseError: the traced graph has no torch.sub node (it has: torch.add)" \
        in proc.stdout
    assert '// case torch.nn.ReLU:\nmodule {' in proc.stdout and '= fxla.relu %arg0 : tensor<3xf32> -> tensor<3xf32>' in proc.stdout
    assert "case torch.sub (cases.py:4) failed" in proc.stderr
    assert "1 case(s) failed: case torch.sub" in proc.stderr
