#!/usr/bin/env python3
"""Sweep of the op cases of ``tests/test_ops_*.py``: which of them run from one polymorphic program.

For every case (its first dtype, its own sample sizes) the case's function is compiled with
``fxla.compile(fn, dynamic=True)`` and called at the case's sizes, then once more at grown sizes; each result is
compared with eager PyTorch (``assert_matches`` of ``tests/test_ops.py``, at the case's tolerance), and the case is
put in one class:

  a   both sizes ran from one polymorphic program whose polymorphic StableHLO refined to each size
  a1  like a, but only the case's own sizes ran: eager (or a static fxla compile) refused every growth tried
  b   one polymorphic fxla program, but its StableHLO is converted per size (reason)
  c   a second polymorphic program was lowered for the grown sizes (a dim was fixed, or a guard broke)
  d   no polymorphic program: compiled per size (reason)
  d0  no dim of size >= 2 to make symbolic
  e   wrong result against eager (sizes, max error)
  f   crash, exception or timeout

Growths, tried in this order; the first that eager accepts is used, and its label is recorded:

  all       every input except index and permutation inputs: each dim of size >= 2 grown by one
  every     like all, index inputs too (their values stay in range)
  float     the floating-point inputs only
  first     the first input only
  not1      like all, but dim 1 (channels) kept; also first-not1, every-not1, notlast, every-notlast
  last      only the last dim; also every-last
  dimK      only dim K; also every-dimK

A growth that eager accepts but whose grown call fails in fxla is passed over for the next one when a *static*
``fxla.compile`` at those sizes fails too (fxla cannot run those sizes at all: not a polymorphism problem); at
most six growths are tried.  Random ops are compared by value: the random cases of the tests are built so that
their values do not depend on the draw.

Run from anywhere (each test file runs in worker processes of its own; results are appended per case, so an
interrupted run resumes where it stopped)::

    nice -n 10 .venv/bin/python utils/polymorphic_sweep.py run [--jobs 2] [--only test_ops_shape,...] [--out DIR]
    .venv/bin/python utils/polymorphic_sweep.py report [--out DIR]        # the summary, on stdout
    .venv/bin/python utils/polymorphic_sweep.py case test_ops_shape 3     # one case, in this process, as JSON

Results: ``DIR/<test file>.jsonl``, one JSON object a case (DIR defaults to /tmp/fxla-polymorphic-sweep); delete
the folder to start over.  A whole run takes 3-6 minutes with two jobs on a 2-core machine.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
DEFAULT_OUT = "/tmp/fxla-polymorphic-sweep"
CASE_TIMEOUT = 240          # seconds one attempt of a case may take (SIGALRM inside the worker)
STALL_TIMEOUT = 420         # seconds without a new result before the parent kills the worker
MAX_GROWTHS = 6


# ---------------------------------------------------------------------------------------------------------------
# worker: runs the cases of one test file
# ---------------------------------------------------------------------------------------------------------------
class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        try:
            self.lines.append(f"{record.name}: {record.getMessage()}")
        except Exception:  # noqa: BLE001
            self.lines.append(f"{record.name}: <unformattable {record.msg!r}>")


def _setup():
    """Import paths and settings as the test suite has them; returns the handler that captures fxla's log."""
    sys.path.insert(0, str(TESTS))
    from fxla.runtime import set_cache_dir
    set_cache_dir(None)         # every call must really lower and compile, never load an earlier run's program
    # as tests/conftest.py: torchvision (a CUDA build) imports only with its operator schemas defined
    sys.path.insert(0, str(ROOT / "utils"))
    try:
        import importlib.util
        from torchvision_cpu import import_torchvision
        if importlib.util.find_spec("torchvision") is not None:
            import_torchvision()
    finally:
        sys.path.pop(0)
    capture = _Capture()
    logger = logging.getLogger("fxla")
    logger.setLevel(logging.INFO)
    logger.addHandler(capture)
    logging.getLogger("fxla.cache").setLevel(logging.WARNING)
    return capture


def _growths(case, dtype):
    """``[(label, [grown shape, or None where an input keeps its shape])]``, in order of preference."""
    specs = case.inputs

    def value_input(k, s):
        return s.kind not in ("index", "perm")

    def every_input(k, s):          # a permutation input only while it still fits its range
        return s.kind != "perm" or (len(s.shape) and s.shape[0] + 1 <= (s.high or 0))

    def float_input(k, s):
        return (s.dtype or dtype).is_floating_point

    def first_input(k, s):
        return k == 0

    def grow(selected, dim_ok):
        shapes = []
        for k, s in enumerate(specs):
            new = tuple(d + 1 if d >= 2 and dim_ok(i, len(s.shape)) else d for i, d in enumerate(s.shape)) \
                if selected(k, s) else s.shape
            shapes.append(new if new != s.shape else None)
        return shapes

    def any_dim(i, n):
        return True

    def not_dim1(i, n):
        return i != 1

    def not_last(i, n):
        return i != n - 1

    def only_last(i, n):
        return i == n - 1

    candidates = [("all", grow(value_input, any_dim)),
                  ("every", grow(every_input, any_dim)),
                  ("float", grow(float_input, any_dim)),
                  ("first", grow(first_input, any_dim)),
                  ("not1", grow(value_input, not_dim1)),
                  ("first-not1", grow(first_input, not_dim1)),
                  ("every-not1", grow(every_input, not_dim1)),
                  ("notlast", grow(value_input, not_last)),
                  ("every-notlast", grow(every_input, not_last)),
                  ("last", grow(value_input, only_last)),
                  ("every-last", grow(every_input, only_last))]
    for d in range(max((len(s.shape) for s in specs), default=0)):
        candidates.append((f"dim{d}", grow(value_input, lambda i, n, d=d: i == d)))
        candidates.append((f"every-dim{d}", grow(every_input, lambda i, n, d=d: i == d)))
    seen, out = set(), []
    for label, shapes in candidates:
        key = tuple(shapes)
        if all(x is None for x in shapes) or key in seen:
            continue
        seen.add(key)
        out.append((label, shapes))
    return out


def grown_inputs(case, dtype, shapes):
    """The case's inputs at ``shapes`` (one of :func:`_growths`): an input that keeps its shape is the case's own
    (seed 0, as the op tests make it), the grown ones new values (one generator, seed 1)."""
    import torch
    from test_ops import make
    gen = torch.Generator().manual_seed(1)
    return tuple(make(spec, dtype, torch.Generator().manual_seed(0)) if shape is None else
                 make(type(spec)(shape, spec.dtype, spec.kind, spec.high), dtype, gen)
                 for spec, shape in zip(case.inputs, shapes))


def _max_err(got, want):
    """Per output leaf, how it differs from eager (empty when it does not)."""
    import torch
    from torch.utils import _pytree as pytree
    worst = []
    for i, (a, b) in enumerate(zip(pytree.tree_leaves(got), pytree.tree_leaves(want))):
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
            worst.append((i, f"{type(a).__name__} vs {type(b).__name__}"))
        elif a.shape != b.shape:
            worst.append((i, f"shape {tuple(a.shape)} vs eager {tuple(b.shape)}"))
        elif a.dtype != b.dtype:
            worst.append((i, f"dtype {a.dtype} vs eager {b.dtype}"))
        elif a.numel() == 0:
            continue
        elif b.dtype.is_floating_point or b.dtype.is_complex:
            diff = (a.double() - b.double()).abs()
            diff = torch.where(a.isnan() & b.isnan(), torch.zeros_like(diff), diff)
            diff = torch.nan_to_num(diff, nan=float("inf"))     # NaN on one side only
            m = diff.max().item()
            if m > 0:
                worst.append((i, f"max abs err {m:.4g} (|eager| max {b.abs().max().item():.4g})"))
        else:
            n = (a != b).sum().item()
            if n:
                worst.append((i, f"{n}/{a.numel()} elements differ"))
    return "; ".join(f"out{i}: {text}" for i, text in worst)


def _compare(got, want, dtype, tol):
    """None if ``got`` matches eager's ``want`` as the op tests require, else what differs."""
    from test_ops import assert_matches
    try:
        assert_matches(got, want, dtype, tol)
        return None
    except AssertionError as err:
        first = str(err).strip().splitlines()
        return (_max_err(got, want) or "") + " | " + " ".join(first[:3])[:300]


#: the exceptions raised inside the symbolic pipeline stages (filled by _patch_pipeline)
POLY_ERRORS = []


def _patch_pipeline():
    """Record the full exception (and its last frames in fxla) of every polymorphic ``prepare``/``to_fxla``: the
    log keeps only its first line."""
    from fxla.pipeline import Pipeline
    root = f"{ROOT}/"

    def wrap(name):
        original = getattr(Pipeline, name)

        def patched(self, *args, **kwargs):
            try:
                return original(self, *args, **kwargs)
            except Exception as err:  # noqa: BLE001
                if kwargs.get("symbols") is not None:
                    frames = [f for f in traceback.extract_tb(err.__traceback__)
                              if f.filename.startswith(root) and "/.venv/" not in f.filename]
                    cause = err.__cause__ or err.__context__
                    POLY_ERRORS.append({
                        "stage": name, "type": type(err).__name__, "text": str(err)[:2500],
                        "cause": f"{type(cause).__name__}: {str(cause)[:1500]}" if cause is not None else None,
                        "frames": [f"{f.filename[len(root):]}:{f.lineno} {f.name}" for f in frames[-6:]],
                    })
                raise
        setattr(Pipeline, name, patched)
    for name in ("prepare", "to_fxla"):
        wrap(name)


def _leaves(compiled, args):
    from torch.utils import _pytree as pytree
    from fxla.runtime.buffers import example_tensor, is_array
    from fxla.symbolic import leaf_names
    names = [n.target for n in compiled.graph_module.graph.nodes if n.op == "placeholder"]
    leaves = [example_tensor(v) if is_array(v) else v for v in pytree.tree_leaves(tuple(args))]
    return leaves, leaf_names(names, args)


def _attempt(case, dtype, fn, inputs, want, grown, rec):
    """One dynamic compile, called at the case's sizes, then (given ``grown``) at the grown ones; fills ``rec``.
    Returns the exception of the grown call, if it raised."""
    import torch
    import fxla
    if signal.getsignal(signal.SIGALRM) is _timeout:      # (in a worker: each attempt gets the full time)
        signal.alarm(CASE_TIMEOUT)
    stage = "compile"
    try:
        compiled = fxla.compile(fn, dynamic=True)
        stage = "call1"
        torch.manual_seed(0)
        bad = _compare(compiled(*(x.clone() for x in inputs)), want, dtype, case.tol)
        if bad:
            rec["flags"].append("e")
            rec["wrong1"] = bad
        dynamic = compiled._dynamic
        rec["lowerings1"] = dynamic.lowerings
        rec["static1"] = len(dynamic.static)
        first = [p for variants in dynamic.programs.values() for p in variants]
        if grown is not None:
            stage = "call2"
            _, grown_inputs, grown_want = grown
            if first:       # which guard of the first program the grown sizes break, if any
                try:
                    problem = first[0].symbols.violation(*_leaves(compiled, grown_inputs))
                    if problem is not None:
                        rec["violation"] = str(problem).splitlines()[0][:600]
                except Exception as err:  # noqa: BLE001
                    rec["violation"] = f"(could not compute: {type(err).__name__}: {err})"
            torch.manual_seed(0)
            bad = _compare(compiled(*(x.clone() for x in grown_inputs)), grown_want, dtype, case.tol)
            if bad:
                rec["flags"].append("e")
                rec["wrong2"] = bad
        programs = [p for variants in dynamic.programs.values() for p in variants]
        rec["lowerings"] = dynamic.lowerings
        rec["static"] = len(dynamic.static)
        rec["programs"] = len(programs)
        rec["poly_stablehlo"] = [p.stablehlo is not None for p in programs]
        return None
    except Exception as err:  # noqa: BLE001
        rec["flags"].append("f")
        rec["stage"] = stage
        rec["error"] = f"{type(err).__name__}: {str(err)[:1500]}"
        rec["traceback"] = "".join(traceback.format_exception(type(err), err, err.__traceback__)[-6:])[-3000:]
        return err if stage == "call2" else None


def _static_fails(fn, args):
    """The error of a plain (static) ``fxla.compile`` called with ``args``, or None."""
    import torch
    import fxla
    try:
        torch.manual_seed(0)
        fxla.compile(fn)(*(x.clone() for x in args))
        return None
    except Exception as err:  # noqa: BLE001
        return f"{type(err).__name__}: {str(err).splitlines()[0][:300] if str(err) else ''}"


def _first_line(err):
    return f"{type(err).__name__}: {str(err).splitlines()[0][:120] if str(err) else ''}"


def run_case(case, dtype, capture):
    """The record of one case: what ran, its class and the reasons."""
    import torch
    from test_ops import _build, make

    base = {"name": case.name, "dtype": str(dtype).replace("torch.", ""), "module": case.module,
            "shapes": [list(s.shape) for s in case.inputs]}
    gen = torch.Generator().manual_seed(0)      # (the inputs of the op tests)
    inputs = tuple(make(spec, dtype, gen) for spec in case.inputs)
    fn = _build(case, dtype)
    torch.manual_seed(0)
    with torch.no_grad():
        want = fn(*(x.clone() for x in inputs))

    candidates, passed_over = [], []        # the growths eager accepts; why the others were passed over
    for label, shapes in _growths(case, dtype):
        args = grown_inputs(case, dtype, shapes)
        try:
            torch.manual_seed(0)
            with torch.no_grad():
                grown_want = fn(*(x.clone() for x in args))
        except Exception as err:  # noqa: BLE001
            passed_over.append(f"{label}: {_first_line(err)}")
            continue
        candidates.append((label, args, grown_want))

    def attempt(grown):
        rec = dict(base, flags=[], growth_tried=list(passed_over))
        if grown is not None:
            rec["growth"] = grown[0]
            rec["grown_shapes"] = [list(a.shape) for a in grown[1]]
        capture.lines.clear()
        POLY_ERRORS.clear()
        grown_error = _attempt(case, dtype, fn, inputs, want, grown, rec)
        rec["poly_errors"] = list(POLY_ERRORS)
        rec["log"] = [line[:1500] for line in capture.lines[:40]]
        return rec, grown_error

    for grown in candidates[:MAX_GROWTHS] or [None]:
        rec, grown_error = attempt(grown)
        if grown_error is None:
            break
        static = _static_fails(fn, grown[1])
        if static is None:
            rec["static_ok_at_grown"] = True
            break
        passed_over.append(f"{grown[0]} {rec['grown_shapes']}: a static compile fails too: {static}")
    else:
        # fxla cannot run any grown sizes eager accepts, even statically: classify on the case's own sizes
        rec, _ = attempt(None)
    if "grown_shapes" not in rec:
        rec["flags"].append("n")
    classify(rec)
    return rec


def _fixed_summary(text):
    """'x_0 = 2 (by %unfold at f.py:18), x_1 = 3 (by %unfold at f.py:18)' -> 'x_0=2, x_1=3 by %unfold@f.py:18'."""
    groups = {}
    for name, size, op, at in re.findall(r"(\w+) = (\d+)(?: \(by (%\S+)(?: at [^)]*?([\w.]+:\d+))?\))?", text):
        op = f"{op}@{at}" if at else op
        groups.setdefault(op or "?", []).append(f"{name}={size}")
    return "; ".join(f"{', '.join(v)} by {k}" for k, v in groups.items())


def classify(rec):
    """Set ``rec["class"]`` and ``rec["reasons"]`` from what the attempt recorded and logged."""
    log = rec["log"]

    def lines_with(needle):
        return [line for line in log if needle in line]
    no_poly = lines_with("no polymorphic program for symbolic dims")
    no_shlo = lines_with("no polymorphic StableHLO for program")
    no_refine = lines_with("does not refine to")
    fixed = lines_with("fixed by the program")
    small = lines_with("not symbolic (sizes 0 and 1 never are)")
    if "e" in rec["flags"]:          # (first: a wrong result is reported even when a later call crashed)
        cls = "e"
    elif "f" in rec["flags"]:
        cls = "f"
    elif rec.get("static", 0) or no_poly:
        cls = "d"
    elif rec.get("programs", 0) == 0:
        cls = "d0"
    elif rec.get("lowerings", 0) >= 2:
        cls = "c"
    elif not all(rec.get("poly_stablehlo", [True])) or no_shlo or no_refine:
        cls = "b"
    else:
        cls = "a1" if "n" in rec["flags"] else "a"
    reasons = []
    if "f" in rec["flags"] and rec.get("error"):
        reasons.append(f"[{rec.get('stage')}] {rec['error'].splitlines()[0][:400]}")
    if cls == "c" and rec.get("violation"):
        reasons.append("grown sizes break a guard of program #1: " + rec["violation"])
    for e in rec.get("poly_errors", [])[:1]:
        text = e["text"].strip().splitlines()
        detail = " / ".join(x.strip() for x in text[1:4] if x.strip())
        reasons.append(f"poly {e['stage']} {e['type']}: {text[0][:200] if text else ''}"
                       + (f" [{detail[:300]}]" if detail else "")
                       + (f" cause: {e['cause'][:300]}" if e.get("cause") else "")
                       + f" @ {e['frames'][-2:]}")
    for line in no_poly:
        reasons.append("no-poly: " + line.split("): compiled for these shapes alone")[0].split(" (", 1)[-1])
    for line in no_shlo:
        reasons.append("no-poly-stablehlo: " + line.split("(", 1)[-1].rsplit("): each size", 1)[0])
    for line in no_refine:
        reasons.append("no-refine: " + line.split(": ", 1)[-1])
    for line in fixed[:1]:
        reasons.append("fixed: " + _fixed_summary(line.split("fixed by the program: ", 1)[-1]))
    if cls == "d0":
        reasons.append("no dim >= 2 in any tensor input (nothing symbolic)" + (f"; {small[0]}" if small else ""))
    if cls == "e":
        for key, sizes in (("wrong1", rec["shapes"]), ("wrong2", rec.get("grown_shapes"))):
            if key in rec:
                reasons.insert(0, f"WRONG at {sizes}: {rec[key]}")
    rec["class"] = cls
    rec["reasons"] = reasons


def _timeout(*_):
    raise TimeoutError(f"an attempt took more than {CASE_TIMEOUT} s")


def _grad_case(case, capture):
    from polymorphic_grad_cases import run_grad_case
    from test_ops import _build, make
    return run_grad_case(case, capture, _growths, grown_inputs, make, _build)


def worker(stem, start, out, grad=False):
    """Run the cases of ``tests/<stem>.py`` from index ``start`` on, appending each record to its results file
    (``grad``: their gradients, utils/polymorphic_grad_cases.py)."""
    capture = _setup()
    _patch_pipeline()
    import importlib
    cases = importlib.import_module(stem).CASES

    signal.signal(signal.SIGALRM, _timeout)
    with open(out / f"{stem}.jsonl", "a") as f:
        for i in range(start, len(cases)):
            case = cases[i]
            print(f"START {i} {case.name}", file=sys.stderr, flush=True)
            t0 = time.time()
            signal.alarm(CASE_TIMEOUT)
            try:
                rec = run_case(case, case.dtypes[0], capture) if not grad else _grad_case(case, capture)
            except Exception as err:  # noqa: BLE001  (building the case, or eager at the case's own sizes)
                rec = {"name": case.name, "dtype": str(case.dtypes[0]).replace("torch.", ""), "class": "f",
                       "flags": ["f"], "reasons": [f"[setup/eager] {type(err).__name__}: {str(err)[:300]}"],
                       "traceback": traceback.format_exc()[-2000:], "log": capture.lines[:20]}
            finally:
                signal.alarm(0)
            rec["file"], rec["index"], rec["seconds"] = stem, i, round(time.time() - t0, 2)
            f.write(json.dumps(rec, default=str) + "\n")
            f.flush()


# ---------------------------------------------------------------------------------------------------------------
# parent: one worker process at a time per test file, restarted after a case that kills or hangs it
# ---------------------------------------------------------------------------------------------------------------
def _records(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _next_index(path):
    done = _records(path)
    return max(r["index"] for r in done) + 1 if done else 0


def _case_count(stem) -> int:
    sys.path.insert(0, str(TESTS))
    import importlib
    return len(importlib.import_module(stem).CASES)


def run_file(stem, out, python, grad=False, count=None):
    count = _case_count(stem) if count is None else count
    path, errors = out / f"{stem}.jsonl", out / f"{stem}.stderr"
    while (start := _next_index(path)) < count:
        with open(errors, "a") as errlog:
            proc = subprocess.Popen([python, __file__, "worker", stem, str(start), "--out", str(out)] +
                                    (["--grad"] if grad else []),
                                    stdout=errlog, stderr=errlog, start_new_session=True)
            last_change, written = time.time(), len(_records(path))
            while proc.poll() is None:
                time.sleep(2)
                now = len(_records(path))
                if now != written:
                    last_change, written = time.time(), now
                elif time.time() - last_change > STALL_TIMEOUT:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        failed = _next_index(path)
        if failed >= count:
            return
        # the worker died or hung on case `failed`: record it as a crash and go on after it
        tail = errors.read_text()[-1500:].strip().splitlines()[-1:]
        with open(path, "a") as f:
            f.write(json.dumps({"file": stem, "index": failed, "name": f"<case {failed}>", "class": "f",
                                "flags": ["f"], "reasons": [f"worker died/hung (rc {proc.returncode}): {tail}"],
                                "log": []}) + "\n")


def run(args):
    import concurrent.futures
    args.out.mkdir(parents=True, exist_ok=True)
    stems = [p.stem for p in sorted(TESTS.glob("test_ops_*.py"))]
    if args.only:
        wanted = [pathlib.Path(name).stem for name in args.only.split(",")]
        unknown = sorted(set(wanted) - set(stems))
        if unknown:
            sys.exit(f"no such op test file: {', '.join(unknown)} (known: {', '.join(stems)})")
        stems = [s for s in stems if s in wanted]
    counts = {stem: _case_count(stem) for stem in stems}   # (imported here: two threads importing the test
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:       # modules at once raced on fxla's)
        for stem, _ in zip(stems, pool.map(lambda s: run_file(s, args.out, args.python, args.grad, counts[s]),
                                           stems)):
            print("done", stem, flush=True)


def _name_only(rec):
    """Whether program #1 fixed every dim it marked symbolic (polymorphic in name only)."""
    lines = [line for line in rec.get("log", []) if "polymorphic program #1 traced" in line]
    if not lines:
        return False
    marked = lines[0].split("symbolic dims", 1)[1].split("; fixed", 1)[0]
    dims = re.findall(r"(\w+) \(\w+(?:\[\d+\])?\.size\(\d+\)\)", marked)
    fixed = re.findall(r"(\w+) = \d+", lines[0].split("fixed by the program: ", 1)[1]) \
        if "fixed by the program" in lines[0] else []
    return bool(dims) and set(dims) <= set(fixed)


def report(args):
    recs = [r for p in sorted(args.out.glob("*.jsonl")) for r in _records(p)]
    if not recs:
        sys.exit(f"no results under {args.out}: run first")
    counts = Counter(r["class"] for r in recs)
    print(f"{len(recs)} cases:", ", ".join(f"{k}={counts[k]}" for k in sorted(counts)))
    no_growth = [r for r in recs if "n" in r.get("flags", [])]
    print(f"  of which without a grown call (eager or a static compile refused every growth): {len(no_growth)}")
    print("  growth used:", dict(Counter(r.get("growth", "-") for r in recs)))
    for cls in ("e", "f", "d", "d0", "r", "c", "b", "a1"):
        chosen = [r for r in recs if r["class"] == cls]
        if chosen:
            print(f"\n== class {cls} ({len(chosen)})")
        for r in chosen:
            grown = f" grown={r['grown_shapes']}({r.get('growth')})" if r.get("grown_shapes") else " (no grown call)"
            print(f"{r['file']}[{r['index']}] {r['name']} {r.get('dtype')} {r.get('shapes')}{grown}: "
                  f"{' || '.join(r.get('reasons', []))}")
    name_only = [r for r in recs if _name_only(r)]
    if name_only:
        print(f"\n== every marked dim fixed by program #1 (polymorphic in name only) ({len(name_only)})")
        for r in name_only:
            print(f"  {r['class']:3} {r['file']}[{r['index']}] {r['name']}")
    fixed_a = [r for r in recs if r["class"] == "a" and any(x.startswith("fixed:") for x in r.get("reasons", []))]
    if fixed_a:
        print(f"\n== class a, but with dims fixed by the program ({len(fixed_a)})")
        for r in fixed_a:
            print(f"{r['file']}[{r['index']}] {r['name']} {r.get('shapes')}: {' || '.join(r['reasons'])}")
    if no_growth:
        print(f"\n== no grown call ({len(no_growth)})")
        for r in no_growth:
            print(f"{r['file']}[{r['index']}] {r['name']} {r.get('shapes')} class {r['class']}: "
                  f"{' | '.join(r.get('growth_tried', []))[:300]}")


def one_case(args):
    capture = _setup()
    _patch_pipeline()
    import importlib
    case = importlib.import_module(pathlib.Path(args.file).stem).CASES[args.index]
    rec = run_case(case, case.dtypes[0], capture) if not args.grad else _grad_case(case, capture)
    print(json.dumps(rec, indent=1, default=str))


def main(argv=None):
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--out", type=pathlib.Path, default=pathlib.Path(DEFAULT_OUT),
                        help=f"results folder (default {DEFAULT_OUT})")
    common.add_argument("--grad", action="store_true",
                        help="sweep the cases' gradients instead (utils/polymorphic_grad_cases.py; use its own --out)")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", parents=[common], help="run the cases not yet in the results folder")
    p.add_argument("--jobs", type=int, default=2, help="test files run at once (default 2)")
    p.add_argument("--only", help="comma-separated test files, e.g. test_ops_shape,test_ops_nn")
    p.add_argument("--python", default=sys.executable, help="the interpreter of the workers (default: this one)")
    sub.add_parser("report", parents=[common], help="summary of the results folder")
    p = sub.add_parser("case", parents=[common], help="run one case in this process and print its record")
    p.add_argument("file", help="test file, e.g. test_ops_shape")
    p.add_argument("index", type=int, help="index into its CASES")
    p = sub.add_parser("worker", parents=[common], help="(internal) run the cases of one file")
    p.add_argument("stem")
    p.add_argument("start", type=int)
    args = parser.parse_args(argv)
    if args.command == "run":
        run(args)
    elif args.command == "report":
        report(args)
    elif args.command == "case":
        one_case(args)
    else:
        worker(args.stem, args.start, args.out, args.grad)


if __name__ == "__main__":
    main()
