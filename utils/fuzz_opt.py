#!/usr/bin/env python3
"""Fuzzer for ``fxla-opt``: mutated lit inputs must give output or diagnostics, never a crash.

    .venv/bin/python utils/fuzz_opt.py --seed 0 --seconds 600        # or --iterations 2000; -v prints each case

Inputs are the ``.mlir`` files under ``lit_tests/``.  Each case takes one and applies 1-3 seeded mutations:
byte flips, token deletion and duplication, truncation, non-UTF-8 bytes, regions/types/attributes nested
hundreds to tens of thousands deep, huge integers, attributes of other element types (``array<bf16>``,
``array<f8E4M3FN>`` ...), then runs ``fxla-opt`` on it with a random pass list.  Promises checked:

* the exit status is 0 or 1 (no signal, no other status);
* no Python traceback on stderr and no exception out of ``main``;
* no hang: each case finishes within ``--timeout`` seconds.

Cases run in-process in a worker subprocess, in batches: the worker records each case before running it, so a
worker killed by a signal or stopped for running past the limit names the case that did it, and a fresh worker
resumes after it.  Findings are printed with the seed and index that reproduce them (``--only INDEX``) and saved
under ``--out``; the exit status is 1 if there are any.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from typing import List, NamedTuple, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PASSES = ["convert-fxla-to-stablehlo", "verify-fxla", "fxla-fold-constants", "fxla-dce", "fxla-pool-layout", "fxla-channels-last",
          "fxla-param-layout", "canonicalize", "cse", "symbol-dce", "inline"]
BAD_ELEMS = ["bf16", "f16", "f8E4M3FN", "f8E5M2", "i1", "i8", "f32", "f64", "index", "complex<f32>", "none"]
HUGE = ["9223372036854775807", "9223372036854775808", "-9223372036854775809", "1" + "0" * 40, "-1", "0",
        "4294967296", "0x7fffffffffffffff", "1e308", "nan"]
_TOKEN = re.compile(rb'"(?:[^"\\\n]|\\.)*"|[%@#^!]?[\w.$-]+|\S')
_NUMBER = re.compile(rb"(?<![\w.])-?\d+(?![\w.])")
_ARRAY_ELEM = re.compile(rb"array<(\w+)")


class Case(NamedTuple):
    index: int
    source: str
    mutations: List[str]
    data: bytes
    args: List[str]


def lit_inputs() -> List[str]:
    found = []
    for base, _, names in os.walk(os.path.join(ROOT, "lit_tests")):
        found += [os.path.join(base, n) for n in names if n.endswith(".mlir")]
    return sorted(found)


# ---------------------------------------------------------------------------------------------------------------
# mutations: each takes (rng, data) and returns new bytes
# ---------------------------------------------------------------------------------------------------------------
def _flip(rng, data):
    if not data:
        return data
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
    return bytes(buf)


def _tokens(data):
    return [m.span() for m in _TOKEN.finditer(data)]


def _delete_token(rng, data):
    spans = _tokens(data)
    if not spans:
        return data
    a, b = spans[rng.randrange(len(spans))]
    return data[:a] + data[b:]


def _duplicate_token(rng, data):
    spans = _tokens(data)
    if not spans:
        return data
    a, b = spans[rng.randrange(len(spans))]
    return data[:b] + b" " + data[a:b] + data[b:]


def _truncate(rng, data):
    return data[:rng.randrange(len(data) + 1)]


def _non_utf8(rng, data):
    at = rng.randrange(len(data) + 1)
    junk = bytes(rng.choice([0x80, 0xbf, 0xc0, 0xc3, 0xe9, 0xed, 0xf5, 0xfe, 0xff]) for _ in range(rng.randint(1, 3)))
    return data[:at] + junk + data[at:]


def _depth(rng):
    return rng.choice([50, 400, 999, 1001, 3000, 20000, 60000])


def _deep_regions(rng, data):
    n = _depth(rng) // 2
    if rng.random() < 0.5:      # registered: the passes run over it
        body = "scf.execute_region {\n" * n + "scf.yield\n" + "}\nscf.yield\n" * (n - 1) + "}\n"
    else:
        body = '"x.op"() ({\n' * n + '"x.end"() : () -> ()\n' + "}) : () -> ()\n" * n
    return data + ("\nfunc.func @deep_regions() {\n" + body + "return\n}\n").encode()


def _deep_type(rng, data):
    n = _depth(rng)
    t = "tuple<" * n + "tensor<2xf32>" + ">" * n
    return data + f"\nfunc.func @deep_type(%a: {t}) -> {t} {{\n  return %a : {t}\n}}\n".encode()


def _deep_attr(rng, data):
    n = _depth(rng)
    opener, closer = rng.choice([("[", "]"), ("{a = ", "}"), ("array<i64: ", ">")][:2])
    return data + f"\nfunc.func @deep_attr() attributes {{x = {opener * n}1{closer * n}}} {{\n  return\n}}\n".encode()


def _huge_int(rng, data):
    spans = [m.span() for m in _NUMBER.finditer(data)]
    if not spans:
        return data
    a, b = spans[rng.randrange(len(spans))]
    return data[:a] + rng.choice(HUGE).encode() + data[b:]


def _bad_dtype(rng, data):
    spans = [m.span(1) for m in _ARRAY_ELEM.finditer(data)]
    if not spans:
        return data.replace(b"i64", rng.choice(BAD_ELEMS).encode(), 1)
    a, b = spans[rng.randrange(len(spans))]
    return data[:a] + rng.choice(BAD_ELEMS).encode() + data[b:]


MUTATIONS = {"flip": _flip, "delete-token": _delete_token, "duplicate-token": _duplicate_token,
             "truncate": _truncate, "non-utf8": _non_utf8, "deep-regions": _deep_regions, "deep-type": _deep_type,
             "deep-attr": _deep_attr, "huge-int": _huge_int, "bad-dtype": _bad_dtype}


def make_case(seed: int, index: int, inputs: List[str]) -> Case:
    """Case ``index`` of the run seeded ``seed`` (a function of both alone: ``--only`` rebuilds it)."""
    rng = random.Random(f"{seed}:{index}")
    source = rng.choice(inputs)
    with open(source, "rb") as fh:
        data = fh.read()
    names = [rng.choice(sorted(MUTATIONS)) for _ in range(rng.randint(1, 3))]
    for name in names:
        data = MUTATIONS[name](rng, data)
    args = ["--split-input-file"] if rng.random() < 0.7 else []
    passes = [rng.choice(PASSES) for _ in range(rng.randint(0, 4))]
    if passes and rng.random() < 0.3:
        args.append("--pass-pipeline=" + ",".join(passes))
    else:
        args += [f"--{p}" for p in passes]
    if rng.random() < 0.2:
        args.append("--mlir-print-debuginfo")
    return Case(index, os.path.relpath(source, ROOT), names, data, args)


# ---------------------------------------------------------------------------------------------------------------
# the worker: runs cases in-process, logging each start and result to a file the parent reads
# ---------------------------------------------------------------------------------------------------------------
def worker(batch_dir: str, target: str = "fxla.tools.opt:main") -> None:
    import importlib

    module, _, name = target.partition(":")
    main = getattr(importlib.import_module(module), name)
    with open(os.path.join(batch_dir, "cases.json")) as fh:
        cases = json.load(fh)
    log = open(os.path.join(batch_dir, "log"), "a", buffering=1)
    for entry in cases:
        log.write(json.dumps({"start": entry["index"]}) + "\n")
        err, out = io.StringIO(), io.StringIO()
        problem = None
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                status = main([entry["path"]] + entry["args"])
        except SystemExit as exc:            # argparse rejecting the arguments
            status = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # noqa: BLE001  (a finding)
            status, problem = None, f"exception out of main: {type(exc).__name__}: {exc}"
        stderr = err.getvalue()
        if problem is None and status not in (0, 1):
            problem = f"exit status {status}"
        if problem is None and "Traceback" in stderr:
            problem = "Python traceback on stderr"
        log.write(json.dumps({"done": entry["index"], "problem": problem, "stderr": stderr[-2000:]}) + "\n")


class Finding(NamedTuple):
    case: Case
    problem: str
    stderr: str


def run_batch(cases: List[Case], workdir: str, timeout: float, target: str = "fxla.tools.opt:main",
              env: Optional[dict] = None) -> List[Finding]:
    """Run ``cases`` in worker processes; a worker that dies or hangs is replaced after the case it was on.

    ``target`` (``module:function``, called like ``fxla-opt``'s ``main(argv)``) is what the workers run."""
    findings: List[Finding] = []
    pending = list(cases)
    while pending:
        batch_dir = tempfile.mkdtemp(dir=workdir)
        entries = []
        for case in pending:
            path = os.path.join(batch_dir, f"case{case.index}.mlir")
            with open(path, "wb") as fh:
                fh.write(case.data)
            entries.append({"index": case.index, "path": path, "args": case.args})
        with open(os.path.join(batch_dir, "cases.json"), "w") as fh:
            json.dump(entries, fh)
        log_path = os.path.join(batch_dir, "log")
        open(log_path, "w").close()
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", batch_dir, "--target",
                                 target], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=env)
        by_index = {c.index: c for c in pending}
        done, current, started_at, hung = set(), None, time.monotonic(), False
        while True:
            exited = proc.poll() is not None
            with open(log_path) as fh:
                lines = [json.loads(line) for line in fh if line.endswith("\n")]
            for rec in lines:
                if "start" in rec and rec["start"] not in done and rec["start"] != current:
                    current, started_at = rec["start"], time.monotonic()
                if "done" in rec and rec["done"] not in done:
                    done.add(rec["done"])
                    if rec["problem"]:
                        findings.append(Finding(by_index[rec["done"]], rec["problem"], rec["stderr"]))
            if exited:
                break
            # the first case also pays for importing fxla and jaxlib
            limit = timeout + (30 if not done else 0)
            if time.monotonic() - started_at > limit:
                proc.kill()
                proc.wait()
                hung = True
                break
            time.sleep(0.05)
        stderr = proc.stderr.read().decode("utf-8", "replace")
        proc.stderr.close()
        if current is not None and current not in done:
            why = f"no result within {timeout:.0f} s (hang)" if hung else f"worker died (exit status {proc.returncode})"
            findings.append(Finding(by_index[current], why, stderr[-2000:]))
            done.add(current)
        elif proc.returncode not in (0, None) and not hung and len(done) < len(pending):
            raise RuntimeError(f"fuzz worker failed before its first case:\n{stderr[-3000:]}")
        pending = [c for c in pending if c.index not in done]
    return findings


def report(finding: Finding, seed: int, out: Optional[str]) -> str:
    c = finding.case
    text = (f"FINDING case {c.index} (seed {seed}): {finding.problem}\n  input: {c.source} mutated by "
            f"{', '.join(c.mutations)}\n  fxla-opt CASE.mlir {' '.join(c.args)}\n  reproduce: .venv/bin/python "
            f"utils/fuzz_opt.py --seed {seed} --only {c.index}\n  stderr tail:\n    "
            + "\n    ".join(finding.stderr.strip().splitlines()[-8:]))
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, f"seed{seed}-case{c.index}.mlir"), "wb") as fh:
            fh.write(c.data)
    return text


def fuzz(seed: int, iterations: Optional[int], seconds: Optional[float], timeout: float = 20.0,
         batch: int = 40, verbose: bool = False, only: Optional[int] = None, out: Optional[str] = None):
    """Run the fuzzer; returns ``(cases run, findings)``."""
    inputs = lit_inputs()
    deadline = time.monotonic() + seconds if seconds else None
    findings: List[Finding] = []
    index, ran = (only if only is not None else 0), 0
    with tempfile.TemporaryDirectory(prefix="fuzz-opt-") as workdir:
        while True:
            if only is not None and ran:
                break
            if iterations is not None and ran >= iterations:
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
            n = 1 if only is not None else batch
            if iterations is not None:
                n = min(n, iterations - ran)
            cases = [make_case(seed, i, inputs) for i in range(index, index + n)]
            if verbose:
                for c in cases:
                    print(f"case {c.index}: {c.source} {c.mutations} {' '.join(c.args)}", file=sys.stderr)
            found = run_batch(cases, workdir, timeout)
            for f in found:
                print(report(f, seed, out), file=sys.stderr)
            findings += found
            index, ran = index + n, ran + n
    return ran, findings


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--iterations", type=int, default=None, help="number of cases")
    p.add_argument("--seconds", type=float, default=None, help="time budget (default: 200 iterations)")
    p.add_argument("--timeout", type=float, default=20.0, help="seconds one case may take")
    p.add_argument("--batch", type=int, default=40, help="cases per worker process")
    p.add_argument("--only", type=int, default=None, help="run just this case index (a reproducer)")
    p.add_argument("--out", default=None, help="save the inputs of findings in this folder")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--target", default="fxla.tools.opt:main", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.worker, args.target)
        return 0
    iterations = args.iterations if args.iterations is not None or args.seconds else 200
    ran, findings = fuzz(args.seed, iterations, args.seconds, args.timeout, args.batch, args.verbose, args.only,
                         args.out)
    print(f"fuzz_opt: {ran} cases, {len(findings)} finding(s) (seed {args.seed})", file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
