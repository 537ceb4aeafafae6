"""Several-process benchmark (issue #23, item 7): data-parallel training step throughput of the MLP of
benchmarks/training.py on 1 process against 2 processes on this machine, with the scaling efficiency.  Part of
``make bench`` (the "distributed" section of benchmarks/run.py); also runs alone::

    .venv/bin/python benchmarks/distributed.py                   # global batches 128 and 512 (~1.5 min)
    .venv/bin/python benchmarks/distributed.py --quick           # fewer steps, global batch 128 only (smoke test)
    .venv/bin/python benchmarks/distributed.py --markdown docs/performance.md   # between this file's markers

Configurations, each in its own process(es), with the same global batch and the same (seeded) weights:

1. ``single``: 1 process, 1 device: ``fxla.compile_step`` without a mesh (the baseline);
2. ``devices2``: 1 process, 2 CPU devices (``jax_num_cpu_devices``), data parallel over ``fxla.Mesh({"data": 2})``;
3. ``procs2``: 2 processes x 1 device, data parallel over a mesh across the processes, each process passing only
   its own half of every batch through ``fxla.distributed.from_local`` (the multi-host input path);
4. ``procs2_global``: the same 2 processes, each passing the whole global batch as a torch tensor (every call
   then compares a digest of that data across the processes).

The 2 processes of a configuration join through a coordinator on a free 127.0.0.1 port.  The parent drives every
process over stdin / stdout (``--worker``), as benchmarks/training.py does: each configuration is set up (first
step: trace and compile included; its loss must equal the baseline's within ``LOSS_RTOL`` or the configuration
is an error and is not timed) and runs its untimed steps, one configuration after the other; then all are timed
together in alternating rounds, so that load from other processes on the machine hits them alike.  The 2
processes of a configuration run the same steps in lockstep (the collectives wait for each other): its step
time is process 0's, its CPU time the sum of both processes'.  Every process is bounded by timeouts (the
parent's, and an alarm in the process itself) and killed when it runs out of them.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import signal
import socket
import statistics
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

from report import WorkerProcess, serve_steps, write_section  # noqa: E402
from report import load_average as _load, machine_busy as _busy, seconds_text as _s  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

LOSS_RTOL = 1e-4           # first-step loss of every configuration against the baseline's
BATCHES = [128, 512]       # global batches (--quick: the first)
ROUND_S = 0.25             # each configuration runs about this many seconds of steps per round
TIMED_BUDGET_S = 5.0       # timed steps go on past MIN_TIMED until this many seconds (or MAX_TIMED steps)
MIN_TIMED, MAX_TIMED, UNTIMED = 20, 200, 5
QUICK = dict(budget=1.0, least=5, most=40, untimed=2)
SETUP_TIMEOUT_S = 300.0    # a configuration's set-up (imports, initialize, compile, untimed steps), per process
COORDINATION_TIMEOUT_S = 120   # fxla.distributed.initialize(timeout=): start-up and each call's agreement
WORKER_ALARM_S = 1800      # a worker process ends itself (SIGALRM) after this long, whatever happens
MESSAGE = "DISTRIBUTED-WORKER "
BUSY_OTHERS_CORES = 0.5    # other processes using more cores than this while timing: the run was busy


@dataclass
class Config:
    key: str
    label: str
    processes: int
    devices: int            # per process
    local: bool = False     # each process passes its own rows (from_local), not the global batch


CONFIGS = [
    Config("single", "1 process × 1 device (baseline)", 1, 1),
    Config("devices2", "1 process × 2 devices, data parallel", 1, 2),
    Config("procs2", "2 processes × 1 device, each its own half (`from_local`)", 2, 1, local=True),
    Config("procs2_global", "2 processes × 1 device, global batch as a torch tensor (digest checked)", 2, 1),
]
BY_KEY = {c.key: c for c in CONFIGS}
DESCRIBE = "MLP 784-1024-1024-10, ReLU, cross-entropy, SGD lr 0.01 momentum 0.9 (benchmarks/training.py's)"


# -- a worker process -----------------------------------------------------------------------------------------------
def _say(tag: str, **payload) -> None:
    print(MESSAGE + json.dumps(dict(payload, tag=tag)), flush=True)


def _memory() -> dict:
    return {"peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}


def _first_line(err: BaseException) -> str:
    return f"{type(err).__name__}: {(str(err).strip().splitlines() or [''])[0][:300]}"


def worker(key: str, batch: int, rank: int, port: int, untimed: int, expect: Optional[float]) -> None:
    """One process of configuration ``key``: build the model and the step, run ``untimed`` steps (the first
    one's loss checked against ``expect``, rtol ``LOSS_RTOL``), say ``ready``; then run each ``step N`` read
    from stdin, saying ``times`` (wall and CPU seconds, losses); on ``done`` (or end of input) say ``result``
    (peak RSS).  A failure says ``result`` with the error."""
    signal.alarm(WORKER_ALARM_S)                  # (SIGALRM's default action ends the process)
    config = BY_KEY[key]
    try:
        if config.processes > 1:
            import fxla
            fxla.distributed.initialize(f"127.0.0.1:{port}", config.processes, rank,
                                        local_device_count=config.devices, timeout=COORDINATION_TIMEOUT_S,
                                        bind_address=f"127.0.0.1:{port}")
        elif config.devices > 1:
            import jax                            # before anything starts jax's devices
            jax.config.update("jax_num_cpu_devices", config.devices)
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        import fxla
        torch.set_num_threads(os.cpu_count())
        fxla.runtime.set_cache_dir(None)          # the first step pays a first compile, not a cache hit
        torch.manual_seed(0)                      # the same weights in every process and configuration
        model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                              nn.Linear(1024, 10))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        g = torch.Generator().manual_seed(1)
        x, y = torch.randn(batch, 784, generator=g), torch.randint(0, 10, (batch,), generator=g)

        def loss_fn(m, xb, yb):
            return F.cross_entropy(m(xb), yb)

        shard = {"xb": ("data", None), "yb": ("data",)}
        if config.processes > 1:
            mesh = fxla.distributed.mesh({"data": config.processes * config.devices})
        elif config.devices > 1:
            mesh = fxla.Mesh({"data": config.devices})
        else:
            mesh = None
        compiled = (fxla.compile_step(model, optimizer, loss_fn, mesh=mesh, shard=shard) if mesh is not None
                    else fxla.compile_step(model, optimizer, loss_fn))
        if config.local:
            rows = slice(rank * batch // config.processes, (rank + 1) * batch // config.processes)
            xl, yl = x[rows].contiguous(), y[rows].contiguous()
            from_local = fxla.distributed.from_local

            def step():                           # each step places this process's rows anew
                return compiled(from_local(xl, mesh, ("data", None)), from_local(yl, mesh, ("data",))).item()
        else:
            def step():
                return compiled(x, y).item()

        losses, times = [], []
        for _ in range(untimed):
            t0 = time.perf_counter()
            losses.append(step())
            times.append(time.perf_counter() - t0)
            if len(losses) == 1 and expect is not None and not abs(losses[0] - expect) <= LOSS_RTOL * abs(expect):
                raise AssertionError(f"first-step loss {losses[0]:.6f} differs from the baseline's {expect:.6f} "
                                     f"(rtol {LOSS_RTOL:g}): not timed")
        _say("ready", losses=losses, times=times)
        serve_steps(step, _say)
        if config.processes > 1:
            fxla.distributed.shutdown()           # (waits for the other process: both leave together)
    except Exception as err:                      # a configuration that fails is a row with its error
        traceback.print_exc()                     # (on stderr: the parent shows its last line where it fails)
        return _say("result", error=_first_line(err), **_memory())
    _say("result", **_memory())


# -- the parent's end ------------------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Group:
    """The process(es) of one configuration at one global batch; ``row`` collects the results."""

    def __init__(self, config: Config, batch: int, untimed: int, expect: Optional[float]):
        self.config = config
        port = _free_port() if config.processes > 1 else 0
        env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1")
        self.procs = []
        for rank in range(config.processes):
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", config.key, "--batch", str(batch),
                   "--rank", str(rank), "--port", str(port), "--untimed", str(untimed)]
            if expect is not None:
                cmd += ["--expect", repr(expect)]
            self.procs.append(WorkerProcess(cmd, MESSAGE, env))
        self.row: Dict[str, object] = {"key": config.key, "batch": batch, "losses": [], "checked": expect is not None,
                                       "wall": [[] for _ in self.procs], "cpu": [[] for _ in self.procs]}
        self.estimate = 1.0

    @property
    def alive(self) -> bool:
        return all(p.alive for p in self.procs)

    def _fail(self) -> None:
        """One process failed: end the others (they would wait for it in a collective) and keep the first
        error (a worker's own error message over 'the worker exited')."""
        for p in self.procs:
            if p.alive:
                p.kill()
        errors = [p.result.get("error") for p in self.procs if p.result.get("error")]
        errors += [f"process {i}: {p.error}" for i, p in enumerate(self.procs) if p.error]
        self.row.setdefault("error", errors[0] if errors else "failed")
        self.row["stderr_tail"] = "\n".join(f"process {i}: " + "\n".join(p.stderr_text().strip().splitlines()[-15:])
                                            for i, p in enumerate(self.procs))

    def _gather(self, timeout_s: float, final: bool = False) -> Optional[List[dict]]:
        """Each process's next message; None where one failed (an error, an exit, a timeout: then the others,
        which would wait for it, are ended too).  ``final``: the ``result`` message is the expected answer."""
        deadline = time.monotonic() + timeout_s
        messages = []
        for p in self.procs:
            message = p.receive(deadline)
            messages.append(message)
            if message is None or message.get("error") or (not p.alive and not final):
                self._fail()
                return None
        return messages

    def ready(self, timeout_s: float) -> bool:
        messages = self._gather(timeout_s)
        if messages is None:
            return False
        first = messages[0]
        self.row.update(losses=first["losses"], first_s=[m["times"][0] for m in messages])
        times = first["times"]
        self.estimate = statistics.median(times[1:] or times)
        return True

    def steps(self, n: int) -> None:
        for p in self.procs:
            p.send(f"step {n}\n")
        messages = self._gather(max(120.0, 20 * n * self.estimate))
        if messages is not None:
            for i, m in enumerate(messages):
                self.row["wall"][i] += m["wall"]
                self.row["cpu"][i] += m["cpu"]
            self.row["later_losses"] = self.row.get("later_losses", []) + messages[0]["losses"]

    def timed(self) -> int:
        return len(self.row["wall"][0])

    def enough(self, least: int, budget: float, most: int) -> bool:
        wall = self.row["wall"][0]
        return not self.alive or (len(wall) >= least and (sum(wall) >= budget or len(wall) >= most))

    def finish(self, timeout_s: float = 120.0) -> dict:
        if self.alive:
            for p in self.procs:
                p.send("done\n")
            self._gather(timeout_s, final=True)
        for p in self.procs:
            if p.alive or p.proc.poll() is None:
                p.kill()
        wall, cpu = self.row.pop("wall"), self.row.pop("cpu")
        self.row["peak_kib"] = [p.result.get("peak_kib") for p in self.procs]
        self.row["timed"] = len(wall[0])
        self.row["step_s"] = [statistics.median(w) if w else None for w in wall]
        if all(cpu) and len({len(c) for c in cpu}) == 1:           # per step, all processes' CPU time summed
            self.row["cpu_s"] = statistics.median([sum(c) for c in zip(*cpu)])
            self.row["cpu_each_s"] = [statistics.median(c) for c in cpu]
        stderr = "\n".join(p.stderr_text() for p in self.procs)
        self.row["warnings"] = sorted({line.strip()[:200] for line in stderr.splitlines()
                                       if "warn" in line.lower() or "error" in line.lower()})[:5]
        return self.row


def _machine_busy_ticks() -> int:
    """CPU time (clock ticks) the whole machine spent busy since boot, every process (steal time excluded)."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in f.readline().split()[1:8])
    return user + nice + system + irq + softirq


def _process_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])          # utime + stime (all threads)


def _others_cores(groups: List[_Group], run: Callable[[], None]) -> Optional[float]:
    """Run ``run()`` and return how many cores, on average, the machine's other processes used meanwhile: the
    machine's busy CPU time minus this process's and the workers' (the load average counts the benchmark's own
    processes too, which keep both cores busy)."""
    pids = [os.getpid()] + [p.proc.pid for g in groups for p in g.procs if p.alive]
    try:
        before, ours = _machine_busy_ticks(), sum(_process_ticks(pid) for pid in pids)
    except (OSError, ValueError, IndexError):
        run()
        return None
    t0 = time.monotonic()
    run()
    try:
        busy = _machine_busy_ticks() - before
        ours = sum(_process_ticks(pid) for pid in pids) - ours
    except (OSError, ValueError, IndexError):     # (a worker that ended meanwhile: no measure)
        return None
    return max(0.0, (busy - ours) / os.sysconf("SC_CLK_TCK") / max(time.monotonic() - t0, 1e-9))


def _time_round_robin(groups: List[_Group], least: int, budget: float, most: int) -> None:
    while True:
        pending = [g for g in groups if not g.enough(least, budget, most)]
        if not pending:
            return
        for g in pending:
            g.steps(max(1, min(most - g.timed(), int(ROUND_S / max(g.estimate, 1e-6)))))


def _bench_batch(batch: int, quick: bool, timeout_s: float, configs: List[Config]) -> List[dict]:
    """Every configuration at global batch ``batch``: the baseline first (its first-step loss is the others'
    oracle), each set up in turn, then all timed together in rounds."""
    steps = QUICK if quick else dict(budget=TIMED_BUDGET_S, least=MIN_TIMED, most=MAX_TIMED, untimed=UNTIMED)
    groups: List[_Group] = []
    skipped: List[dict] = []
    expect = None
    try:
        for config in configs:
            if config.key != "single" and expect is None:
                skipped.append({"key": config.key, "batch": batch, "error": "not run: the baseline failed"})
                continue
            g = _Group(config, batch, steps["untimed"], expect)
            groups.append(g)
            if g.ready(timeout_s) and config.key == "single":
                expect = g.row["losses"][0]
                g.row["checked"] = True
            print(f"  [distributed batch {batch} {config.key}: "
                  + (g.row.get("error") or f"first step {_s(g.row['first_s'][0])}") + "]", file=sys.stderr, flush=True)
        live = [g for g in groups if g.alive]
        others = _others_cores(live, lambda: _time_round_robin(live, steps["least"], steps["budget"], steps["most"]))
        results = [g.finish() for g in groups] + skipped
        for r in results:
            r["others_cores"] = others
    finally:                                      # never leave a process behind
        for g in groups:
            for p in g.procs:
                if p.proc.poll() is None:
                    p.kill()
    for r in results:
        print(f"  [distributed batch {batch} {r['key']}: " + (r.get("error") or f"{_s(r['step_s'][0])} per step")
              + "]", file=sys.stderr, flush=True)
        if r.get("stderr_tail"):                  # (a failure: the end of its processes' stderr)
            print("    " + r["stderr_tail"].replace("\n", "\n    "), file=sys.stderr, flush=True)
    return results


# -- the section ------------------------------------------------------------------------------------------------------
def _mib(kib) -> str:
    return "n/a" if kib is None else f"{kib / 1024:.0f}"


def bench_distributed(out, quick: bool = False, batches: Optional[List[int]] = None,
                      configs: Optional[List[str]] = None, timeout_s: Optional[float] = None,
                      was_busy: bool = False) -> List[dict]:
    """Measure every configuration at every global batch, print the tables through ``out`` (a
    benchmarks/report.py ``Report``) and return the rows."""
    batches = batches or (BATCHES[:1] if quick else BATCHES)
    chosen = [BY_KEY["single"]] + [c for c in CONFIGS if c.key != "single" and (not configs or c.key in configs)]
    timeout_s = timeout_s or SETUP_TIMEOUT_S
    load_start = _load()
    busy = was_busy or _busy()                    # (before this section's own processes add to the load)
    results = []
    for batch in batches:
        results += _bench_batch(batch, quick, timeout_s, chosen)
    report(out, results, quick, busy, load_start)
    return results


def _later_delta(r: dict, base: Optional[dict]) -> str:
    """Largest relative difference of the losses after the first (after updates) from the baseline's."""
    if r["key"] == "single":
        return "—"
    if not base or r.get("error"):
        return "n/a"
    a = r.get("losses", [])[1:] + r.get("later_losses", [])
    b = base.get("losses", [])[1:] + base.get("later_losses", [])
    pairs = list(zip(a, b))
    return f"{max(abs(p - q) / abs(q) for p, q in pairs):.1e}" if pairs else "n/a"


def _samples_per_s(r: Optional[dict]) -> Optional[float]:
    if not r or r.get("error") or not r.get("step_s") or not r["step_s"][0]:
        return None
    return r["batch"] / r["step_s"][0]


def report(out, results: List[dict], quick: bool, was_busy: bool, load_start: str = "") -> None:
    steps = QUICK if quick else dict(budget=TIMED_BUDGET_S, least=MIN_TIMED, most=MAX_TIMED, untimed=UNTIMED)
    cores = os.cpu_count()
    out("\n## Several processes (issue #23): data-parallel training step, 1 process against 2\n")
    out(f"* {DESCRIBE}; one fixed synthetic batch (seeded), the same initial weights in every process; "
        f"`fxla.compile_step`, its loss on the host at the end of each step")
    out("* configurations: " + "; ".join(f"**{c.key}**: {c.label}" for c in CONFIGS)
        + ". Data parallel: `shard={\"xb\": (\"data\", None), \"yb\": (\"data\",)}` over a `data` mesh axis of 2 "
          "devices; the gradients are summed by an all-reduce inside the step program (across the 2 processes: "
          "gloo over TCP on 127.0.0.1). The 2-process configurations join through `fxla.distributed.initialize` "
          "(coordinator on a free loopback port); each call compares the program and the torch inputs' data "
          "digests across the processes through the coordination service (docs/distributed.md)")
    out(f"* each configuration in its own process(es), set up one after the other ({steps['untimed']} untimed "
        f"steps; first step: trace and compile included), then all timed together in alternating rounds "
        f"(~{ROUND_S:g} s of steps each) to at least {steps['least']} steps and {steps['budget']:g} s (at most "
        f"{steps['most']}); step time: the median of process 0's timed steps (the 2 processes run in lockstep; "
        f"process 1's is given where it differs by over 5 %); CPU time: the median per step of all the "
        f"configuration's processes together (all threads); peak RSS: `ru_maxrss` of each process (MiB)")
    out(f"* correctness gate: each configuration's first-step loss equals the baseline's at rtol {LOSS_RTOL:g} "
        f"before any step is timed; 'later Δ': largest relative difference from the baseline's loss over the "
        f"later steps (after updates)")
    out(f"* {cores} CPU cores: each process's XLA CPU client sizes its thread pool to all of them, so the 2 "
        f"processes (and the 2 devices of one process) share the same {cores} cores")
    others = {r["batch"]: r.get("others_cores") for r in results}
    known = {b: c for b, c in others.items() if c is not None}
    if known:
        out("* other processes on the machine during the timed rounds (the machine's busy CPU time less this "
            "benchmark's processes', per second): " + ", ".join(f"global batch {b}: {c:.2f} cores" for b, c in
                                                               known.items()))
    if was_busy or any(c > BUSY_OTHERS_CORES for c in known.values()):
        out(f"\n> **Note:** the machine was busy during this run (load average above the core count at the start, "
            f"or other processes using over {BUSY_OTHERS_CORES:g} cores while the steps were timed): timings are "
            f"noisy.\n")
    out()
    by = {(r["batch"], r["key"]): r for r in results}
    rows = []
    for r in results:
        err = r.get("error")
        step = r.get("step_s") or [None]
        st = step[0]
        step_text = f"{_s(st)} ({r['timed']})" if st else "n/a"
        if len(step) > 1 and st and step[1] and abs(step[1] - st) > 0.05 * st:
            step_text += f"; process 1: {_s(step[1])}"
        cpu = _s(r.get("cpu_s")) if r.get("cpu_s") else "n/a"
        if r.get("cpu_each_s") and len(r["cpu_each_s"]) > 1:
            cpu += " (" + " + ".join(_s(c) for c in r["cpu_each_s"]) + ")"
        sps = _samples_per_s(r)
        first = r.get("first_s") or []
        rows.append([str(r["batch"]), f"**{r['key']}**: {BY_KEY[r['key']].label}",
                     " / ".join(_s(f) for f in first) or "n/a", step_text,
                     f"{1 / st:.1f}" if st else "n/a", f"{sps:.0f}" if sps else "n/a", cpu,
                     f"{r['losses'][0]:.5f}" if r.get("losses") else "n/a",
                     _later_delta(r, by.get((r["batch"], "single"))),
                     " / ".join(_mib(k) for k in r.get("peak_kib") or []) or "n/a",
                     f"**error**: {err}" if err else "✓" if r.get("checked") else "not checked"])
    out.table(["global batch", "configuration", "first step (per process)", "step (median of n)", "steps/s",
               "samples/s", "CPU time per step", "loss, step 1", "later Δ", "peak RSS, MiB", "status"], rows)
    out("\n## Several processes (issue #23): scaling on this machine\n")
    out(f"Scaling efficiency: samples/s of 2 processes ÷ (2 × samples/s of 1 process). On this {cores}-core machine "
        f"it cannot reach 1: both processes' XLA thread pools run on the same {cores} cores the single process "
        f"already uses (its CPU time ÷ step time: the cores it keeps busy), so the second process adds no "
        f"hardware, only a second half-batch to overlap; with 1 process on all {cores} cores, 2 processes at best "
        f"match its samples/s, an efficiency of 0.5. The ratio "
        f"against 1 process × 2 devices (the same partitioned program on the same cores, its all-reduce inside "
        f"one process) isolates what going through gloo/TCP and the coordination service's per-call checks "
        f"costs; the last column is the per-call digest of a global torch batch against each process's own "
        f"rows through `from_local`.\n")
    lines = []
    for batch in sorted({r["batch"] for r in results}):
        one, dev2, two, glob = (_samples_per_s(by.get((batch, k))) for k in ("single", "devices2", "procs2",
                                                                              "procs2_global"))
        base = by.get((batch, "single")) or {}
        busy_cores = base["cpu_s"] / base["step_s"][0] if one and base.get("cpu_s") else None
        lines.append([str(batch), f"{busy_cores:.1f}" if busy_cores else "n/a",
                      f"{two / (2 * one):.2f} ({two / one:.2f}× 1 process's samples/s)" if one and two else "n/a",
                      f"{two / dev2:.2f}" if two and dev2 else "n/a",
                      f"{dev2 / one:.2f}" if one and dev2 else "n/a",
                      f"{glob / two:.2f}" if glob and two else "n/a"])
    out.table(["global batch", "cores 1 process keeps busy", "scaling efficiency, 2 processes (procs2)",
               "2 processes ÷ 1 process × 2 devices (samples/s)", "1 process × 2 devices ÷ 1 device",
               "global torch batch ÷ `from_local` (2 processes)"], lines)
    warned = sorted({w for r in results for w in r.get("warnings", [])})
    if warned:
        out("\nWarnings and errors on the workers' stderr: " + "; ".join(f"`{w}`" for w in warned[:6]))
    if load_start:
        out(f"\nLoad average (1/5/15 min) {load_start} at the start of this section, {_load()} at the end.")


# -- standalone --------------------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help=f"global batch {BATCHES[0]} only, {QUICK['untimed']} untimed steps, "
                             f"~{QUICK['budget']:g} s timed per configuration")
    parser.add_argument("--batches", help=f"comma-separated global batches (default {','.join(map(str, BATCHES))}; "
                                          f"each split in 2)")
    parser.add_argument("--configs", help=f"comma-separated subset of {','.join(BY_KEY)} (single always runs: "
                                          f"it is the baseline)")
    parser.add_argument("--markdown", metavar="PATH", help="also write the tables into PATH, between the "
                                                          "benchmarks/distributed.py BEGIN/END markers")
    parser.add_argument("--worker", metavar="CONFIG", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--rank", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--untimed", type=int, default=UNTIMED, help=argparse.SUPPRESS)
    parser.add_argument("--expect", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.batch, args.rank, args.port, args.untimed, args.expect)
        return 0
    batches = [int(b) for b in args.batches.split(",")] if args.batches else None
    if batches and any(b < 2 or b % 2 for b in batches):
        parser.error("each global batch must be even (it is split over 2 devices)")
    configs = args.configs.split(",") if args.configs else None
    if configs and any(c not in BY_KEY for c in configs):
        parser.error(f"unknown configuration(s) {[c for c in configs if c not in BY_KEY]}; choose from {list(BY_KEY)}")
    sys.path.insert(0, HERE)
    from report import Report
    out = Report()
    started = time.perf_counter()
    import jax
    import torch
    out(f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, `benchmarks/distributed.py "
        f"{' '.join(sys.argv[1:] if argv is None else argv)}`, {os.cpu_count()} CPU cores, torch {torch.__version__}, "
        f"jax {jax.__version__}.")
    bench_distributed(out, quick=args.quick, batches=batches, configs=configs)
    out(f"\nSeveral-processes section: {time.perf_counter() - started:.0f} s.")
    if args.markdown:
        write_section(args.markdown, "\n".join(out.lines), "benchmarks/distributed.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
