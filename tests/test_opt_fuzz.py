"""A short, seeded run of utils/fuzz_opt.py (the fxla-opt fuzzer): mutated lit inputs -- flipped bytes, deleted
and duplicated tokens, truncation, non-UTF-8 bytes, deep nesting, huge integers, attributes of other element
types, random pass lists -- give output or diagnostics with exit status 0 or 1: no signal, no traceback, no hang.

Longer runs: ``.venv/bin/python utils/fuzz_opt.py --seed N --seconds 600``."""
from __future__ import annotations

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _fuzz_opt():
    spec = importlib.util.spec_from_file_location("fuzz_opt", os.path.join(ROOT, "utils", "fuzz_opt.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fuzzer_cases_are_reproducible_and_mutated():
    fuzz = _fuzz_opt()
    inputs = fuzz.lit_inputs()
    assert len(inputs) > 10
    a, b = fuzz.make_case(7, 3, inputs), fuzz.make_case(7, 3, inputs)
    assert a == b and a.mutations
    with open(os.path.join(ROOT, a.source), "rb") as fh:
        original = fh.read()
    cases = [fuzz.make_case(7, i, inputs) for i in range(40)]
    assert sum(c.data != open(os.path.join(ROOT, c.source), "rb").read() for c in cases) >= 30
    assert {m for c in cases for m in c.mutations} == set(fuzz.MUTATIONS)
    assert a.data != original or a.mutations


@pytest.mark.slow
def test_fuzzer_reports_signals_tracebacks_statuses_and_hangs(tmp_path):
    # the harness itself, on a stand-in for fxla-opt's main that misbehaves as the input says
    fuzz = _fuzz_opt()
    (tmp_path / "fake_opt.py").write_text(
        "import os, signal, sys, time\n"
        "def main(argv):\n"
        "    what = open(argv[0]).read()\n"
        "    if what == 'segv': os.kill(os.getpid(), signal.SIGSEGV)\n"
        "    if what == 'raise': raise KeyError('boom')\n"
        "    if what == 'traceback': print('Traceback (most recent call last):', file=sys.stderr)\n"
        "    if what == 'hang': time.sleep(600)\n"
        "    return {'status': 3}.get(what, 1 if what == 'bad' else 0)\n")
    kinds = ["ok", "segv", "bad", "raise", "ok", "traceback", "status", "hang", "ok"]
    cases = [fuzz.Case(i, "x", ["m"], k.encode(), []) for i, k in enumerate(kinds)]
    env = dict(os.environ, PYTHONPATH=str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    found = fuzz.run_batch(cases, str(tmp_path), timeout=3, target="fake_opt:main", env=env)
    problems = {f.case.index: f.problem for f in found}
    assert sorted(problems) == [1, 3, 5, 6, 7], problems
    assert "exit status -11" in problems[1] and "KeyError" in problems[3] and "traceback" in problems[5]
    assert problems[6] == "exit status 3" and "hang" in problems[7]


@pytest.mark.slow
def test_short_seeded_fuzz_run_finds_nothing():
    fuzz = _fuzz_opt()
    ran, findings = fuzz.fuzz(seed=20261204, iterations=400, seconds=None, timeout=60, batch=50)
    assert ran == 400
    assert not findings, "\n\n".join(fuzz.report(f, 20261204, None) for f in findings)
