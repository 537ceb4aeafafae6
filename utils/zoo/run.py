"""``make zoo``: every zoo model (utils/zoo) through fxla's three routes, compared with eager; writes docs/zoo.md.

    .venv/bin/python -m utils.zoo.run                                  # everything, one model at a time
    .venv/bin/python -m utils.zoo.run --models hf_bert,tv_resnet18     # names, or families: --models timm,core
    .venv/bin/python -m utils.zoo.run --routes compile,export --markdown -   # print the table instead
    .venv/bin/python -m utils.zoo.run --list
    .venv/bin/python -m utils.zoo.run --routes compile,inductor --threads 2 --markdown /tmp/vs_inductor.md
                      # fxla against torch.compile's own compiler: per-model latency and their geometric means

Each model runs in its own worker process (``--worker``): it builds the model, computes eager's output, then runs
each route on a fresh copy (:mod:`utils.zoo.harness`), printing one JSON line per event.  The parent gives the
eager reference ``--build-timeout`` seconds and each route ``--timeout`` seconds; a route that hangs is recorded
as ``timeout``, a worker that dies (a segfault, an abort) as ``crash``, and the model's remaining routes go on in
a new worker.  ``--jobs`` models run at once (default 1: timings are taken in the workers).

The table gives, per model and route: status (``ok``, or ``mismatch`` with what differs -- a wrong answer is a
failure, never a pass -- or the error's class and first line), the largest absolute difference from eager, the
first call (trace + compile + run; for export: export + load + run) and the steady-state time per call as a
multiple of eager's.  Then totals per route and the failures grouped by error.  ``--json`` also writes the raw
results.
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import datetime
import json
import math
import os
import platform
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, Iterable, List, Optional

from .harness import REFERENCE_ROUTES, ROOT, ROUTES, RouteResult, fmt_seconds

MARK = "@@zoo "                       # the prefix of the worker's protocol lines on stdout


# -- the worker: one model, in this process --------------------------------------------------------------------------
def _emit(event: str, **data) -> None:
    sys.stdout.write(MARK + json.dumps({"event": event, **data}) + "\n")
    sys.stdout.flush()


def use_source(source: str) -> None:
    """Import fxla from the checkout ``source`` (its pyproject.toml's package-dir map) instead of the installed
    tree, with a finder put first on ``sys.meta_path`` (utils/install_finder.py's)."""
    sys.path.insert(0, os.path.join(ROOT, "utils"))
    try:
        import install_finder
    finally:
        sys.path.pop(0)
    install_finder.MAPPING.update(install_finder.package_dirs(os.path.abspath(source)))
    install_finder.install()


def fxla_label(source: Optional[str]) -> str:
    """The fxla that ran: the commit of ``source`` (or of this checkout), noting uncommitted changes."""
    where = source or ROOT
    try:
        sha = subprocess.run(["git", "-C", where, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return os.path.abspath(where)
    return f"commit {sha}" + (" with uncommitted changes" if dirty else "")


def worker(name: str, routes: List[str], timing: bool, threads: int = 1) -> int:
    if os.environ.get("FXLA_ZOO_SOURCE"):
        use_source(os.environ["FXLA_ZOO_SOURCE"])
    import warnings
    warnings.filterwarnings("ignore")
    import torch
    # eager on one thread by default: on a loaded machine, torch's OpenMP barriers make multi-threaded eager calls
    # of these small models erratic (a descheduled thread stalls every op), which would make the latency ratios
    # noise; ``--threads`` gives torch (eager and inductor's kernels) as many threads as XLA has on a quiet one
    torch.set_num_threads(threads)
    from fxla.runtime import set_cache_dir
    set_cache_dir(None)                # first-call times are real compiles, not disk-cache hits
    from . import BY_NAME
    from .harness import eager_reference, run_route
    entry = BY_NAME[name]
    try:
        want, note = eager_reference(entry)
    except Exception as exc:  # noqa: BLE001
        _emit("eager_failed", error=f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        return 1
    _emit("ready", note=note)
    for route in routes:
        _emit("start", route=route)
        result = run_route(entry, route, want, timing=timing)
        if note:
            result.notes.append(note)
        _emit("result", result=result.as_dict())
    return 0


# -- the parent: one worker process per model, restarted after a hang or crash ---------------------------------------
class WorkerProcess:
    def __init__(self, name: str, routes: List[str], timing: bool, threads: int = 1):
        self.stderr = tempfile.TemporaryFile(mode="w+")
        cmd = [sys.executable, "-m", "utils.zoo.run", "--worker", name, "--routes", ",".join(routes),
               "--threads", str(threads)]
        if not timing:
            cmd.append("--no-timing")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
                                     start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.events: "queue.Queue[Optional[dict]]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith(MARK):
                try:
                    self.events.put(json.loads(line[len(MARK):]))
                except ValueError:
                    pass
        self.events.put(None)              # end of output: the process is exiting

    def next_event(self, timeout: float) -> Optional[dict]:
        """The next protocol event; ``None`` when the worker exited; raises ``queue.Empty`` on timeout."""
        return self.events.get(timeout=timeout)

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()

    def death(self) -> str:
        code = self.proc.wait()
        self.stderr.seek(0)
        tail = [line.strip() for line in self.stderr.read().splitlines() if line.strip()]
        how = f"signal {-code} ({signal.Signals(-code).name})" if code < 0 else f"exit status {code}"
        return f"worker died with {how}" + (f": {tail[-1][:200]}" if tail else "")

    def close(self):
        self.stderr.close()


def run_model(name: str, routes: List[str], timeout: float, build_timeout: float, timing: bool,
              log=print, threads: int = 1) -> List[RouteResult]:
    results: List[RouteResult] = []
    todo = list(routes)
    while todo:
        w = WorkerProcess(name, todo, timing, threads)
        try:
            try:
                event = w.next_event(build_timeout)
            except queue.Empty:
                w.kill()
                return results + [RouteResult(name, r, "error", "EagerTimeout",
                                              f"building the model and running it eagerly took over "
                                              f"{build_timeout:.0f} s") for r in todo]
            if event is None or event["event"] == "eager_failed":
                msg = event["error"] if event else w.death()
                return results + [RouteResult(name, r, "error", "EagerFailed", msg) for r in todo]
            while todo:
                route = todo[0]
                try:
                    event = w.next_event(60)
                    if event is not None and event["event"] == "start":
                        event = w.next_event(timeout)
                except queue.Empty:
                    w.kill()
                    results.append(RouteResult(name, route, "timeout", "Timeout", f"no result in {timeout:.0f} s"))
                    todo.pop(0)
                    log(_line(results[-1]))
                    break
                if event is None:
                    results.append(RouteResult(name, route, "crash", "WorkerCrash", w.death()))
                    todo.pop(0)
                    log(_line(results[-1]))
                    break
                result = RouteResult(**event["result"])
                results.append(result)
                todo.pop(0)
                log(_line(result))
        finally:
            if w.proc.poll() is None and not todo:
                try:
                    w.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    w.kill()
            w.close()
    return results


def _line(r: RouteResult) -> str:
    what = _status_cell(r) if r.status == "ok" else f"{r.status}: {r.error_class} {r.message}".strip()
    ratio = f"{r.latency_ratio:.2f}x" if r.latency_ratio else ""
    return f"  {r.model:34s} {r.route:8s} {what[:150]}  {fmt_seconds(r.first_call_s)} {ratio}"


# -- the report ------------------------------------------------------------------------------------------------------
def _cell(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    return text.replace("|", "\\|")


def _status_cell(r: RouteResult) -> str:
    if r.status == "ok":
        if r.graphs == 0:
            return _cell(f"ok, but no graph reached fxla (dynamo ran it eagerly; {r.notes[0] if r.notes else ''})")
        if r.graph_breaks:
            return _cell(f"ok ({r.graphs} graphs, {r.graph_breaks} graph breaks; {r.notes[0] if r.notes else ''})")
        return "ok"
    if r.status == "mismatch":
        return _cell(f"**mismatch**: {r.message}")
    return _cell(f"**{r.status}** {r.error_class}: {r.message}")


def _error_cell(r: RouteResult) -> str:
    return "" if r.max_error is None else f"{r.max_error:.1e}"


def failure_key(r: RouteResult) -> str:
    """What a failure is, with the parts that vary by model blurred (node numbers, model class names, parameter
    spellings, counts), so that one cause is one group: ``%all_1`` -> ``%all``, ``%conv_stem.ndim`` -> ``%….ndim``,
    ``of LlamaForCausalLM.forward`` -> ``of <model>.forward``."""
    import re
    msg = r.message
    msg = re.sub(r"%\w+\.(\w+)", r"%….\1", msg)
    msg = re.sub(r"%([A-Za-z_]+?)(?:_\d+)?\b", r"%\1", msg)
    msg = re.sub(r"parameter '.*' of \w+\.forward", "parameter '…' of <model>.forward", msg)
    msg = re.sub(r"\b[A-Z]\w*: the inputs have", "<module>: the inputs have", msg)
    msg = re.sub(r"TreeSpec\(.*", "TreeSpec(…)", msg)
    msg = re.sub(r"\d+ ops?\b", "N op(s)", msg)
    msg = re.sub(r"<fxla-generated-\d+:", "<fxla-generated-N:", msg)
    return f"{r.status} {r.error_class}: {msg[:160]}".strip()


def group_failures(results: Iterable[RouteResult]) -> Dict[str, List[RouteResult]]:
    """Failures grouped by :func:`failure_key`, the largest group first."""
    groups: Dict[str, List[RouteResult]] = collections.defaultdict(list)
    for r in results:
        if r.status != "ok":
            groups[failure_key(r)].append(r)
    return dict(sorted(groups.items(), key=lambda kv: -len(kv[1])))


def markdown(results: List[RouteResult], routes: List[str], families: Dict[str, str], wall_s: float,
             fxla: str = "", jobs: int = 1, threads: int = 1) -> str:
    from importlib import metadata

    def version(package):
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return "not installed"
    models = list(dict.fromkeys(r.model for r in results))
    out = [
        "# The model zoo: every model, every route",
        "",
        "Generated by `make zoo` (`utils/zoo/run.py`); do not edit by hand.  Each model of `utils/zoo/` (built "
        "offline from its library's config class, seeded random weights, called the way its users call it: "
        "padded batches with `attention_mask`, `labels` for a loss, `decoder_input_ids`) runs in eval mode under "
        "`torch.no_grad()` through:",
        "",
        "* **compile**: `fxla.compile(model, concrete_shapes=True)(*args, **kwargs)`;",
        "* **dynamo**: `torch.compile(model, backend=\"fxla\")(*args, **kwargs)`;",
        "* **export**: `fxla.export(model, args, folder, concrete_shapes=True)` then `fxla.load(folder)(*args)` "
        "(keyword arguments passed positionally: export takes a tuple)" + (";" if "inductor" in routes else "."),
        *(["* **inductor** (torch's own compiler, a reference): `torch.compile(model)(*args, **kwargs)`."]
          if "inductor" in routes else []),
        "",
        "**status** is `ok` only when every output tensor matches eager PyTorch: same count, dtypes and shapes, "
        "and `|got - want| <= tol·|want| + tol·max(1, max|want|)` with tol 1e-4 for float32 (1e-2 for "
        "float16/bfloat16; integers exactly).  Anything else is a failure: `mismatch` (a wrong answer), "
        "`error` (the error's class and first line), `timeout` or `crash`.  **max error**: the largest "
        "|got - want| over the floating outputs.  **first call**: trace + compile + run (export: export + load "
        "+ run), the disk cache off.  **latency vs eager**: steady-state time per call over eager's (below 1 is "
        "faster), medians of interleaved rounds, "
        + ("eager on one thread (`torch.set_num_threads(1)`: on a loaded machine torch's OpenMP barriers make "
           "multi-threaded eager erratic)" if threads == 1 else
           f"torch (eager, inductor's kernels) on {threads} threads (`--threads {threads}`)")
        + "; a rough guide, not a benchmark "
        "(`make bench` is that).  A dynamo row says when dynamo handed fxla no graph at all (it runs "
        "`nn.LSTM`/`nn.GRU` eagerly) or split the model at graph breaks.",
        "",
        f"Run {datetime.date.today().isoformat()} (fxla {fxla}) on {platform.machine()}, {os.cpu_count()} CPUs, "
        f"torch {version('torch')}, torchvision {version('torchvision')}, transformers {version('transformers')}, "
        f"timm {version('timm')}; {len(models)} models, "
        f"{wall_s / 60:.0f} min wall-clock with {jobs} model(s) at a time.",
        "",
        "## Totals",
        "",
        "| route | ok | mismatch | error | timeout/crash | of |",
        "|---|---|---|---|---|---|",
    ]
    for route in routes:
        rs = [r for r in results if r.route == route]
        c = collections.Counter(r.status for r in rs)
        out.append(f"| {route} | {c['ok']} | {c['mismatch']} | {c['error']} | {c['timeout'] + c['crash']} | "
                   f"{len(rs)} |")
    fam = collections.defaultdict(lambda: collections.Counter())
    for r in results:
        fam[families.get(r.model, "?")][r.route, r.status == "ok"] += 1
    out += ["", "Per family (ok / models):", "", "| family | " + " | ".join(routes) + " |",
            "|---|" + "---|" * len(routes)]
    for f in sorted(fam):
        cells = [f"{fam[f][r, True]} / {fam[f][r, True] + fam[f][r, False]}" for r in routes]
        out.append(f"| {f} | " + " | ".join(cells) + " |")
    out += latency_summary(results, routes)
    out += ["", "## Every model and route", "",
            "| model | route | status | max error | first call | latency vs eager |", "|---|---|---|---|---|---|"]
    for r in results:
        ratio = f"{r.latency_ratio:.2f}×" if r.latency_ratio else ""
        out.append(f"| {r.model} | {r.route} | {_status_cell(r)} | {_error_cell(r)} | {fmt_seconds(r.first_call_s)} "
                   f"| {ratio} |")
    groups = group_failures(results)
    if groups:
        out += ["", "## Failures grouped by error", "", "| failures | error | where (fxla) | models (route) |",
                "|---|---|---|---|"]
        for key, rs in groups.items():
            wheres = sorted({r.where for r in rs if r.where})
            names = ", ".join(f"{r.model} ({r.route})" for r in rs)
            out.append(f"| {len(rs)} | {_cell(key, 200)} | {_cell(', '.join(wheres[:3]), 120)} | "
                       f"{_cell(names, 400)} |")
    return "\n".join(out) + "\n"


def latency_summary(results: List[RouteResult], routes: List[str]) -> List[str]:
    """The geometric mean of each route's latency vs eager over the models every timed route ran ``ok`` (so the
    routes are compared on the same models), as markdown lines; none when fewer than one route was timed."""
    timed = [r for r in routes if any(x.route == r and x.latency_ratio for x in results)]
    if not timed:
        return []
    ratio = {(r.model, r.route): r.latency_ratio for r in results if r.status == "ok" and r.latency_ratio}
    common = [m for m in dict.fromkeys(r.model for r in results) if all((m, route) in ratio for route in timed)]
    out = ["", f"Latency, geometric mean of *latency vs eager* over the {len(common)} models every timed route ran "
               f"correctly (below 1: faster than eager):", "", "| route | geometric mean | models faster than eager |",
           "|---|---|---|"]
    for route in timed:
        values = [ratio[m, route] for m in common]
        mean = math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")
        out.append(f"| {route} | {mean:.2f}× | {sum(1 for v in values if v < 1)} of {len(values)} |")
    return out


# -- command line ----------------------------------------------------------------------------------------------------
def select(spec: Optional[str]):
    from . import ENTRIES, FAMILIES
    if not spec:
        return list(ENTRIES)
    wanted = [s.strip() for s in spec.split(",") if s.strip()]
    picked = []
    for e in ENTRIES:
        if any(w == e.name or w == e.family or (w in ("hf", "timm", "torchvision", "core") and
                                                e.family.split("-")[0] == w) for w in wanted):
            picked.append(e)
    names = {e.name for e in ENTRIES} | set(FAMILIES) | {"hf"}
    unknown = [w for w in wanted if w not in names]
    if unknown:
        raise SystemExit(f"unknown zoo model or family: {', '.join(unknown)} (see --list)")
    return picked


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", help="comma-separated model names or families (hf, hf-encoder, timm, core, ...)")
    p.add_argument("--routes", default=",".join(ROUTES),
                   help=f"comma-separated subset of {','.join(ROUTES + REFERENCE_ROUTES)} (default: fxla's routes; "
                        f"inductor is torch.compile's own compiler, a latency reference)")
    p.add_argument("--threads", type=int, default=1, help="torch's threads in the workers (eager and inductor; "
                                                          "default 1, see the page's notes)")
    p.add_argument("--jobs", type=int, default=1, help="models run at once (default 1)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per route before it is a timeout")
    p.add_argument("--build-timeout", type=float, default=300, help="seconds for imports, build and eager")
    p.add_argument("--markdown", help="where the table goes ('-': stdout); default docs/zoo.md for a full run "
                                      "(every model and route), stdout for a selection")
    p.add_argument("--json", help="also write the raw results (a JSON list) here")
    p.add_argument("--no-timing", action="store_true", help="skip the steady-state latency measurement")
    p.add_argument("--source", help="run the fxla of this checkout (e.g. a clone at a given commit, its C "
                                    "extension built) instead of the installed one")
    p.add_argument("--from-json", help="write the table from the results a run saved with --json (no run)")
    p.add_argument("--list", action="store_true", help="list the models and exit")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    routes = [r.strip() for r in args.routes.split(",") if r.strip()]
    bad = [r for r in routes if r not in ROUTES + REFERENCE_ROUTES]
    if bad:
        p.error(f"unknown route(s) {', '.join(bad)}: one of {', '.join(ROUTES + REFERENCE_ROUTES)}")
    if args.worker:
        return worker(args.worker, routes, timing=not args.no_timing, threads=args.threads)
    entries = select(args.models)
    if args.list:
        for e in entries:
            print(f"{e.name:34s} {e.family:12s} {e.notes}")
        return 0
    if args.source:
        os.environ["FXLA_ZOO_SOURCE"] = os.path.abspath(args.source)
    if args.markdown is None:
        full = not args.models and routes == list(ROUTES)
        args.markdown = os.path.join(ROOT, "docs", "zoo.md") if full else "-"
    if args.from_json:
        with open(args.from_json, encoding="utf-8") as f:
            saved = json.load(f)
        results = [RouteResult(**r) for r in saved["results"]]
        families = {e.name: e.family for e in select(None)}
        text = markdown(results, routes, families, saved["wall_s"], saved["fxla"], saved.get("jobs", 1),
                        saved.get("threads", 1))
        return _write(text, args.markdown)
    print(f"{len(entries)} models x {len(routes)} routes", flush=True)
    start = time.perf_counter()
    by_model: Dict[str, List[RouteResult]] = {}
    lock = threading.Lock()

    def log(line):
        with lock:
            print(line, flush=True)

    def one(e):
        by_model[e.name] = run_model(e.name, routes, args.timeout, args.build_timeout, not args.no_timing, log,
                                     args.threads)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(one, entries))
    results = [r for e in entries for r in by_model.get(e.name, [])]
    wall_s, label = time.perf_counter() - start, fxla_label(args.source)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"fxla": label, "wall_s": wall_s, "jobs": args.jobs, "threads": args.threads,
                       "results": [r.as_dict() for r in results]}, f, indent=1)
    _write(markdown(results, routes, {e.name: e.family for e in entries}, wall_s, label, args.jobs, args.threads),
           args.markdown)
    counts = collections.Counter((r.route, r.status == "ok") for r in results)
    print("  ".join(f"{r}: {counts[r, True]}/{counts[r, True] + counts[r, False]} ok" for r in routes))
    return 0


def _write(text: str, where: str) -> int:
    if where == "-":
        print(text)
    else:
        with open(where, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
