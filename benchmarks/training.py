"""Training benchmark (issue #22, item 7): training steps per second and peak memory of an MLP, ResNet-18 and
GPT-2 small, for eager torch, torch.compile (inductor), ``fxla.compile_step`` and the same step hand-written in
JAX (benchmarks/jax_training.py), all measured in one run.  Part of ``make bench`` (the "training" section of
benchmarks/run.py); also runs alone::

    .venv/bin/python benchmarks/training.py                    # full sizes (~20-40 min on 2 busy cores)
    .venv/bin/python benchmarks/training.py --quick            # small ResNet and GPT-2, no inductor (smoke test)
    .venv/bin/python benchmarks/training.py --models gpt2 --contenders eager,fxla
    .venv/bin/python benchmarks/training.py --markdown docs/performance.md   # between this file's markers

Every (model, contender) runs in its own subprocess (``--worker``), so that each one's peak resident memory
(``ru_maxrss``, compiles included) is its own; an idle worker (the same imports, no model) gives the baseline.
Each worker builds the model from the same seed and the same batch and runs its untimed steps; a model's
contenders are set up one after the other, then timed together in alternating rounds (about ``ROUND_S`` of steps
each, as benchmarks/run.py alternates its contenders), so that load from other processes on the machine hits
them alike.  Every step runs on the same batch and ends when its loss is on the host (for JAX, when the whole new
state is ready).  Eager is set up first: its losses are the oracle.  A contender's first-step loss (the initial
weights' loss) must equal eager's within ``LOSS_RTOL`` before any step is timed, or its row is an error; the
largest relative difference of its later losses (after updates) is reported beside it.  With ResNet-18, the
section ends with what bounds its step: its convolutions alone, as XLA and as eager PyTorch run them
(benchmarks/conv_bound.py, in its own process after the steps).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional
from report import WorkerProcess, serve_steps, write_section  # noqa: E402
from report import machine_busy as _busy, seconds_text as _s  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CONTENDERS = ["eager", "inductor", "fxla", "fxla_keep", "jax"]
LABELS = {"eager": "torch eager", "inductor": "torch.compile (inductor)", "fxla": "fxla.compile_step",
          "fxla_keep": "fxla.compile_step, `fxla.runtime.keep_host_memory()`", "jax": "hand-written JAX"}
FXLA_ROUTES = ("fxla", "fxla_keep")    # (the second keeps the step's host memory from step to step)
LOSS_RTOL = 1e-4           # first-step loss of every contender against eager's
TIMED_BUDGET_S = 5.0       # timed steps go on past a model's minimum until this many seconds are spent (at most
MAX_TIMED = 200            # MAX_TIMED steps): fast steps get many samples, slow ones their minimum


@dataclass
class Model:
    """One benchmark model: ``build(quick) -> (model, make_optimizer, loss_fn, batch, describe)``;
    ``jax(model, batch) -> (JaxStep, jax batch)``; ``steps(quick) -> (untimed steps, least timed steps)``."""
    key: str
    name: str
    build: Callable
    jax: Callable
    steps: Callable[[bool], tuple]
    fxla_options: Callable[[bool], dict] = lambda quick: {}


# -- the models (built inside the workers) --------------------------------------------------------------------------
def _gen():
    import torch
    return torch.Generator().manual_seed(1)


def _cross_entropy(model, x, y):
    import torch.nn.functional as F
    return F.cross_entropy(model(x), y)


def _sgd(model):
    import torch
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def _sgd_jax():
    import jax_training as jt
    return jt.sgd_momentum(lr=0.01, momentum=0.9)


def _mlp(quick):
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    g = _gen()
    batch = (torch.randn(128, 784, generator=g), torch.randint(0, 10, (128,), generator=g))
    return model, _sgd, _cross_entropy, batch, "784-1024-1024-10, ReLU, batch 128, SGD momentum 0.9"


def _mlp_jax(model, batch):
    import jax.numpy as jnp
    import jax_training as jt
    x, y = batch
    return jt.mlp_step(model, _sgd_jax()), (jnp.asarray(x.numpy()), jnp.asarray(y.numpy().astype("int32")))


def _resnet18(quick):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "utils"))
    from torchvision_cpu import import_torchvision
    torchvision = import_torchvision()
    torch.manual_seed(0)
    classes, b, size = (10, 4, 64) if quick else (1000, 32, 112)
    model = torchvision.models.resnet18(num_classes=classes).train()
    g = _gen()
    batch = (torch.randn(b, 3, size, size, generator=g), torch.randint(0, classes, (b,), generator=g))
    return (model, _sgd, _cross_entropy, batch,
            f"torchvision, batch {b}, {size}x{size}, {classes} classes, BatchNorm in training mode, SGD momentum 0.9")


def _resnet18_jax(model, batch):
    import jax.numpy as jnp
    import jax_training as jt
    x, y = batch
    return (jt.resnet18_step(model, _sgd_jax()),
            (jnp.asarray(x.numpy().transpose(0, 2, 3, 1)), jnp.asarray(y.numpy().astype("int32"))))


def _adamw(model):
    import torch
    return torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)


def _lm_loss(model, ids):
    return model(input_ids=ids, labels=ids, use_cache=False).loss


def _gpt2(quick):
    import torch
    import transformers
    transformers.logging.set_verbosity_error()
    size = dict(n_layer=2, n_embd=64, n_head=2, vocab_size=512, n_positions=64) if quick else {}
    config = transformers.GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **size)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).train()
    model.loss_type = "ForCausalLM"      # (what it is; unset, HF warns once in the loss: a graph break in dynamo)
    b, s = (2, 32) if quick else (8, 128)
    ids = torch.randint(0, config.vocab_size, (b, s), generator=_gen())
    what = "GPT2LMHeadModel " + ("(2 layers, 64 wide)" if quick else "default config (12 layers, 768 wide)")
    return model, _adamw, _lm_loss, (ids,), f"{what}, dropout 0, batch {b}, {s} tokens, labels=ids, AdamW"


def _gpt2_jax(model, batch):
    import jax.numpy as jnp
    import jax_training as jt
    (ids,) = batch
    return jt.gpt2_step(model, jt.adamw(lr=1e-4, weight_decay=0.01)), (jnp.asarray(ids.numpy().astype("int32")),)


MODELS = [
    Model("mlp", "MLP", _mlp, _mlp_jax, lambda quick: (3, 5) if quick else (5, 20)),
    Model("resnet18", "ResNet-18", _resnet18, _resnet18_jax, lambda quick: (2, 3) if quick else (2, 5)),
    Model("gpt2", "GPT-2 small", _gpt2, _gpt2_jax, lambda quick: (2, 3),
          lambda quick: {"concrete_shapes": True}),
]
BY_KEY = {m.key: m for m in MODELS}


# -- a worker: one model, one contender, driven by the parent over stdin / stdout -----------------------------------
MESSAGE = "TRAINING-WORKER "      # the prefix of the worker's protocol lines on stdout (other output is ignored)
ROUND_S = 0.25                    # each contender runs about this many seconds of steps per round
MEMORY_MARGIN_KIB = 512 * 1024


def _rss_now_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def _step_function(spec: Model, contender: str, quick: bool):
    """``(describe, step)``: ``step()`` runs one training step of ``contender`` and returns its loss (a float,
    once every output of the step is ready)."""
    import torch
    if contender not in CONTENDERS:
        raise ValueError(f"unknown contender {contender!r}: one of {CONTENDERS}")
    model, make_optimizer, loss_fn, batch, describe = spec.build(quick)
    if contender == "jax":
        step, jbatch = spec.jax(model, batch)
        del model                                 # (the JAX step holds its own copy of the weights)
        return describe, lambda: step.block(step(*jbatch))
    optimizer = make_optimizer(model)
    if contender in FXLA_ROUTES:
        import fxla
        compiled = fxla.compile_step(model, optimizer, loss_fn, **spec.fxla_options(quick))
        return describe, lambda: compiled(*batch).item()
    forward = loss_fn
    if contender == "inductor":
        forward = torch.compile(lambda m, *b: loss_fn(m, *b), dynamic=False)

    def eager_step():
        optimizer.zero_grad()
        loss = forward(model, *batch)
        loss.backward()
        optimizer.step()
        return loss.item()
    return describe, eager_step


def _say(tag: str, **payload) -> None:
    print(MESSAGE + json.dumps(dict(payload, tag=tag)), flush=True)


def _memory() -> dict:
    return {"peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "rss_kib": _rss_now_kib()}


def worker(key: str, contender: str, quick: bool, expect: Optional[float]) -> None:
    """The worker process of ``contender`` on model ``key``: set up its step and run the untimed steps, the first
    one's loss checked against ``expect`` (eager's; rtol ``LOSS_RTOL``), then say ``ready``; run each ``step N``
    read from stdin, saying ``times`` (wall and CPU seconds, losses) after each; on ``done`` say ``result`` (peak
    and current RSS).  A failure says ``result`` with the error; the ``idle`` contender only imports."""
    import jax  # noqa: F401  (every worker imports the same modules: the idle worker's memory is the baseline)
    import torch
    import transformers  # noqa: F401
    import fxla
    if contender == "fxla_keep":                  # (first: before anything starts JAX's CPU client)
        fxla.runtime.keep_host_memory()
    sys.path.insert(0, os.path.join(ROOT, "utils"))
    from torchvision_cpu import import_torchvision
    import_torchvision()
    torch.set_num_threads(os.cpu_count())
    fxla.runtime.set_cache_dir(None)              # the first step pays a first compile, not a cache hit
    if contender == "idle":
        return _say("result", **_memory())
    spec = BY_KEY[key]
    try:
        describe, step = _step_function(spec, contender, quick)
        losses, times = [], []
        for _ in range(spec.steps(quick)[0]):
            t0 = time.perf_counter()
            losses.append(step())
            times.append(time.perf_counter() - t0)
            if len(losses) == 1 and expect is not None and not abs(losses[0] - expect) <= LOSS_RTOL * abs(expect):
                raise AssertionError(f"first-step loss {losses[0]:.6f} differs from eager's {expect:.6f} "
                                     f"(rtol {LOSS_RTOL:g}): not timed")
        _say("ready", describe=describe, losses=losses, times=times)
        serve_steps(step, _say)
    except Exception as err:                      # a contender that fails is a row with its error, not a crash
        return _say("result", error=f"{type(err).__name__}: {(str(err).strip().splitlines() or [''])[0][:300]}",
                    **_memory())
    _say("result", **_memory())


class _Worker(WorkerProcess):
    """The parent's end of a :func:`worker` subprocess; ``row`` collects its results (a crash, a timeout or an
    error is the row's ``error``)."""

    def __init__(self, key: str, contender: str, quick: bool, expect: Optional[float], group: int = 0):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", key, contender] + (["--quick"] if quick else [])
        if expect is not None:
            cmd += ["--expect", repr(expect)]
        self.row: Dict[str, object] = {"key": key, "contender": contender, "losses": [], "wall": [], "cpu": [],
                                       "group": group, "checked": expect is not None or contender == "eager"}
        super().__init__(cmd, MESSAGE)
        self.estimate = 1.0                       # seconds per step, from the untimed steps

    def _receive(self, timeout_s: float) -> Optional[dict]:
        message = self.receive(time.monotonic() + timeout_s, late=f"no answer within {timeout_s:.0f} s")
        if self.error is not None:
            self.row.setdefault("error", self.error)
        elif message is not None and message is self.result:
            self.row.update(message)
        return message

    def ready(self, timeout_s: float) -> bool:
        """Wait for the set-up and untimed steps; False where the worker failed (the row has the error)."""
        message = self._receive(timeout_s)
        if not self.alive or message is None:
            return False
        times = message["times"]
        self.row.update(describe=message["describe"], losses=message["losses"], first_s=times[0])
        self.estimate = statistics.median(times[1:] or times)
        return True

    def steps(self, n: int) -> None:
        self.send(f"step {n}\n")
        message = self._receive(max(600.0, 20 * n * self.estimate))
        if self.alive and message is not None:
            for k in ("wall", "cpu", "losses"):
                self.row[k] += message[k]

    def enough(self, least: int) -> bool:
        wall = self.row["wall"]
        return not self.alive or (len(wall) >= least and (sum(wall) >= TIMED_BUDGET_S or len(wall) >= MAX_TIMED))

    def finish(self) -> dict:
        """Close the worker and summarise its row; a second call (a group closed early for memory, then every row
        at the end) returns the same row."""
        if "timed" in self.row:
            return self.row
        if self.alive:
            self.send("done\n")
            self._receive(600.0)
        wall, cpu = self.row.pop("wall"), self.row.pop("cpu")
        self.row.update(timed=len(wall), step_s=statistics.median(wall) if wall else None,
                        cpu_s=statistics.median(cpu) if cpu else None)
        return self.row


def _available_kib() -> int:
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("MemAvailable"))


def _peak_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))


def _time_round_robin(workers: List[_Worker], least: int) -> None:
    """Time the live workers' steps in alternating rounds (about ``ROUND_S`` seconds of steps each), so that load
    from other processes on the machine hits them alike, until each has ``least`` steps and ``TIMED_BUDGET_S``
    seconds of them (or ``MAX_TIMED`` steps)."""
    while True:
        pending = [w for w in workers if not w.enough(least)]
        if not pending:
            return
        for w in pending:
            w.steps(max(1, min(MAX_TIMED - len(w.row["wall"]), int(ROUND_S / max(w.estimate, 1e-6)))))


def _bench_model(key: str, names: List[str], quick: bool, timeout_s: float) -> List[dict]:
    """Every contender of ``names`` on model ``key``: eager first (its first-step loss is the others' oracle; it
    always runs), each set up in turn, then all timed together in rounds.  Where memory runs short for the next
    contender, those set up so far are timed and closed first (their ``group`` differs)."""
    spec = BY_KEY[key]
    live: List[_Worker] = []
    rows: List[_Worker] = []
    expect, group = None, 0
    for contender in ["eager"] + [c for c in names if c != "eager"]:
        peaks = [_peak_of(w.proc.pid) for w in live if w.alive]
        if peaks and _available_kib() < 1.25 * max(peaks) + MEMORY_MARGIN_KIB:
            _time_round_robin(live, spec.steps(quick)[1])
            for w in live:
                w.finish()
            live, group = [], group + 1
        w = _Worker(key, contender, quick, expect, group)
        if w.ready(timeout_s):
            if contender == "eager":
                expect = w.row["losses"][0]
            live.append(w)
        if contender in names:
            rows.append(w)
        elif w.alive:
            w.finish()
            live.remove(w)
    _time_round_robin(live, spec.steps(quick)[1])
    results = [w.finish() for w in rows]
    for r in results:
        print(f"  [training {key} {r['contender']}: " + (r.get("error") or f"{_s(r.get('step_s'))} per step") + "]",
              file=sys.stderr, flush=True)
    return results


# -- the section ---------------------------------------------------------------------------------------------------
def bench_training(out, quick: bool = False, inductor: bool = True, models: Optional[List[str]] = None,
                   contenders: Optional[List[str]] = None, timeout_s: Optional[float] = None,
                   was_busy: bool = False) -> List[dict]:
    """Measure every model × contender, print the tables through ``out`` (benchmarks/run.py's ``Report``) and
    return the workers' results."""
    names = [c for c in (contenders or CONTENDERS) if inductor or c != "inductor"]
    timeout_s = timeout_s or (600.0 if quick else 3600.0)
    idle = _Worker("-", "idle", quick, None)
    idle._receive(timeout_s)
    results = []
    for key in models or list(BY_KEY):
        results += _bench_model(key, names, quick, timeout_s)
    bound = _conv_bound(quick, timeout_s) if "resnet18" in (models or list(BY_KEY)) else None
    report(out, results, idle.row, quick, was_busy or _busy(), bound)
    return results


def _conv_bound(quick: bool, timeout_s: float) -> dict:
    """benchmarks/conv_bound.py in its own process, after the models' workers: ResNet-18's convolutions alone, as
    XLA and as eager PyTorch run them (its result, or ``{"error": ...}``)."""
    command = [sys.executable, os.path.join(HERE, "conv_bound.py"), "--json"] + (["--quick"] if quick else [])
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:g} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"error": (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]}
    try:
        return json.loads(lines[-1])
    except ValueError:
        return {"error": f"its last line is not its JSON result: {lines[-1][:200]}"}


def _mib(kib) -> str:
    return "n/a" if kib is None else f"{kib / 1024:.0f} MiB"


def _later_delta(r: dict, eager: Optional[dict]) -> str:
    """Largest relative difference of losses 2..n from eager's (after optimizer updates)."""
    if r["contender"] == "eager" or not eager or not eager.get("losses") or len(r.get("losses", [])) < 2:
        return "—" if r["contender"] == "eager" else "n/a"
    pairs = list(zip(r["losses"][1:], eager["losses"][1:]))
    return f"{max(abs(a - b) / abs(b) for a, b in pairs):.1e}" if pairs else "n/a"


def report(out, results: List[dict], idle: dict, quick: bool, was_busy: bool, bound: Optional[dict] = None) -> None:
    out("\n## Training steps (issue #22): steps per second and peak memory\n")
    described = {r["key"]: r["describe"] for r in results if r.get("describe")}
    for key, text in described.items():
        out(f"* {BY_KEY[key].name}: {text}")
    out("* each contender in its own process; a model's contenders are set up one after the other, then timed "
        f"together in alternating rounds (~{ROUND_S:g} s of steps each); steps on one fixed batch, each ending with "
        "its loss on the host; step time: the median of the timed steps after the untimed ones (untimed + least "
        "timed: " + ", ".join(f"{m.name} {m.steps(quick)[0]} + {m.steps(quick)[1]}" for m in MODELS
                             if m.key in described)
        + f"; timing goes on to {TIMED_BUDGET_S:g} s or {MAX_TIMED} steps); first step: trace and compile included. "
        f"Peak RSS: `ru_maxrss` (compiles included; inductor's compile workers are other processes, not counted); "
        f"an idle worker (same imports, no model): {_mib(idle.get('peak_kib'))}"
        + (f" ({idle['error']})" if idle.get("error") else ""))
    out("* torch.compile: `torch.compile` of the loss function (forward + loss; backward through AOTAutograd), eager "
        "optimizer step; JAX: `jax.jit` of `jax.value_and_grad` + the optimizer in `jnp`, state donated; fxla: "
        "`fxla.compile_step` (forward, backward and update as one program; on the CPU parameters and optimizer "
        "state are donated to it and the torch tensors rebound to views of the results, docs/training.md); "
        "fxla with `fxla.runtime.keep_host_memory()` (called first in its worker): the same step, the process "
        "keeping its freed host memory from step to step instead of mapping and page-faulting XLA's temporaries "
        "afresh each step (docs/training.md)")
    out(f"* correctness gate: each contender's first-step loss equals eager's at rtol {LOSS_RTOL:g} before any step "
        f"is timed; 'later Δ': largest relative difference from eager's loss over the steps after an update")
    apart = sorted({BY_KEY[r["key"]].name for r in results if r.get("group")})
    if apart:
        out(f"* timed in separate groups (not enough memory to hold all contenders at once): {', '.join(apart)}; "
            f"the 'group' of a row is in the status column")
    if was_busy:
        out("\n> **Note:** the machine was busy (load average above the core count) during this run: timings are "
            "noisy, ratios against torch (OpenMP thread teams) especially.\n")
    out()
    by = {(r["key"], r["contender"]): r for r in results}
    rows = []
    for r in results:
        fx = by.get((r["key"], "fxla"), {}).get("step_s")
        st = r.get("step_s")
        err = r.get("error")
        first_loss = f"{r['losses'][0]:.5f}" if r.get("losses") else "n/a"
        rows.append([BY_KEY[r["key"]].name, LABELS[r["contender"]], _s(r.get("first_s")),
                     f"{_s(st)} ({r['timed']})" if st else "n/a",
                     f"{1 / st:.2f}" if st else "n/a", _s(r.get("cpu_s")),
                     f"{st / fx:.2f}" if st and fx else "n/a", first_loss,
                     _later_delta(r, by.get((r["key"], "eager"))),
                     _mib(r.get("peak_kib")), _mib(r.get("rss_kib")),
                     f"**error**: {err}" if err else "✓" if r.get("checked") else "not checked (eager failed)"
                     + (f" (group {r['group']})" if r.get("group") else "")])
    out.table(["model", "contender", "first step", "step (median of n)", "steps/s", "CPU time per step",
               "time / fxla's", "loss, step 1", "later Δ", "peak RSS", "RSS at end", "status"], rows)
    if bound is not None:
        report_conv_bound(out, bound)
    report_targets_22(out, by, was_busy, quick, bound)


CONV_PARTS = (("forward", "forward"), ("input_grad", "input gradient"), ("weight_grad", "weight gradient"))


def report_conv_bound(out, bound: dict) -> None:
    """The table of benchmarks/conv_bound.py's measurement: each convolution form of ResNet-18, XLA against
    eager PyTorch, and the sums over the model."""
    out("\n## What bounds ResNet-18's training step: XLA CPU's convolutions alone\n")
    if bound.get("error"):
        out(f"benchmarks/conv_bound.py failed: {bound['error']}")
        return
    out("* benchmarks/conv_bound.py (its own process, after the steps above): each of ResNet-18's convolution forms "
        "at the step's shapes timed alone (median of 5): XLA as it compiles them for fxla's step (`jax.jit` of "
        "`lax.conv_general_dilated`, NCHW/OIHW, the gradients by `jax.vjp`, fxla's XLA options for programs "
        "with a backward pass) and eager PyTorch (`F.conv2d`, `torch.nn.grad.conv2d_input` / `conv2d_weight`, "
        f"oneDNN, {bound.get('threads')} threads); in brackets, not counted: the stem's input gradient (the step "
        "computes none) and convolutions whose kernel overhangs the input (fxla computes them as im2col and a "
        "dot)\n")
    ms = lambda s: f"{s * 1e3:.1f} ms"    # noqa: E731
    rows = [[f"{list(r['input'])} * {list(r['weight'])}, stride {r['stride']}", str(r["count"])]
            + [f"{ms(r['xla'][k])} / {ms(r['torch'][k])}" if not (k == "input_grad" and r["first"] or
                                                                  r["overhangs"]) else
               f"({ms(r['xla'][k])} / {ms(r['torch'][k])})" for k, _ in CONV_PARTS] for r in bound["rows"]]
    totals = bound["totals"]
    rows.append(["**the model (× count)**", str(sum(r["count"] for r in bound["rows"]))]
                + [f"**{ms(totals['xla'][k])} / {ms(totals['torch'][k])}**" for k, _ in CONV_PARTS])
    out.table(["input * kernel", "count"] + [f"{label}: XLA / eager" for _, label in CONV_PARTS], rows)
    out(f"\nXLA's convolutions alone: {ms(sum(totals['xla'].values()))} per step; eager's: "
        f"{ms(sum(totals['torch'].values()))}.")


def report_targets_22(out, by: Dict[tuple, dict], was_busy: bool, quick: bool = False,
                      bound: Optional[dict] = None) -> None:
    """Issue #22's training targets: fxla's step time ≤ 1.05× hand-written JAX's on every model; faster than
    eager on GPT-2 small and ResNet-18."""
    def ratio(key, other, what="step_s", route="fxla"):
        a, b = by.get((key, route), {}), by.get((key, other), {})
        return a[what] / b[what] if a.get(what) and b.get(what) else None
    caveat = " (machine busy: not reliable)" if was_busy else ""
    lines = []
    for route in FXLA_ROUTES:
        who = "fxla" if route == "fxla" else "fxla with keep_host_memory()"
        keys = [k for k in BY_KEY if (k, "jax") in by and (k, route) in by]
        if keys:
            qs = {k: ratio(k, "jax", route=route) for k in keys}
            met = sum(1 for q in qs.values() if q is not None and q <= 1.05)
            text = "; ".join(f"{BY_KEY[k].name} " + (f"{q:.2f}× (CPU time {ratio(k, 'jax', 'cpu_s', route):.2f}×)"
                                                      if q is not None else "n/a (error)") for k, q in qs.items())
            lines.append([f"{who}: step time ≤ 1.05× hand-written JAX's, every model", f"{met} of {len(keys)}: "
                          f"{text}", "✓" if met == len(keys) == len(BY_KEY) else "✗"])
        for key in ("gpt2", "resnet18"):
            if (key, "eager") in by and (key, route) in by:
                q = ratio(key, "eager", route=route)
                why = ""
                if key == "resnet18" and bound and not bound.get("error") and by[(key, "eager")].get("step_s"):
                    convs = sum(bound["totals"]["xla"].values())
                    why = (f"; XLA's convolutions alone take {_s(convs)} per step, "
                           f"{convs / by[(key, 'eager')]['step_s']:.2f}× eager's whole step (table above)")
                lines.append([f"{who} faster than eager, {BY_KEY[key].name}",
                              (f"{1 / q:.2f}× eager's speed" if q else "n/a (error)") + why + caveat,
                              ("✓" if q and q < 1 else "✗") + ("?" if was_busy else "")])
    if lines:
        out("\n## Issue #22 training targets (measured in this run)\n")
        if quick:
            out("> **--quick**: small ResNet-18 and GPT-2, not the sizes the targets are set for.\n")
        out.table(["target", "measured", "met"], lines)


# -- standalone --------------------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--quick", action="store_true", help="small ResNet-18 (10 classes, batch 4, 64x64) and "
                                                             "GPT-2 (2 layers, 64 wide), no inductor")
    parser.add_argument("--models", help=f"comma-separated subset of {','.join(BY_KEY)}")
    parser.add_argument("--contenders", help=f"comma-separated subset of {','.join(CONTENDERS)} (eager always "
                                             f"runs: it is the oracle)")
    parser.add_argument("--no-inductor", action="store_true")
    parser.add_argument("--markdown", metavar="PATH", help="also write the tables into PATH, between the "
                                                          "benchmarks/training.py BEGIN/END markers")
    parser.add_argument("--worker", nargs=2, metavar=("MODEL", "CONTENDER"), help=argparse.SUPPRESS)
    parser.add_argument("--expect", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        sys.path.insert(0, HERE)
        worker(*args.worker, quick=args.quick, expect=args.expect)
        return 0
    models = args.models.split(",") if args.models else None
    contenders = args.contenders.split(",") if args.contenders else None
    for name, chosen, allowed in (("model", models, BY_KEY), ("contender", contenders, CONTENDERS)):
        if chosen and any(c not in allowed for c in chosen):
            parser.error(f"unknown {name}(s) {[c for c in chosen if c not in allowed]}; choose from {list(allowed)}")
    from report import Report
    out = Report()
    started = time.perf_counter()
    import jax
    import torch
    out(f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, `benchmarks/training.py "
        f"{' '.join(sys.argv[1:] if argv is None else argv)}`, {os.cpu_count()} CPU cores, torch {torch.__version__}, "
        f"jax {jax.__version__}; load average {'/'.join(f'{v:.1f}' for v in os.getloadavg())} at the start.")
    bench_training(out, quick=args.quick, inductor=not (args.quick or args.no_inductor), models=models,
                   contenders=contenders)
    out(f"\nTraining section: {time.perf_counter() - started:.0f} s; load average "
        f"{'/'.join(f'{v:.1f}' for v in os.getloadavg())} at the end.")
    if args.markdown:
        write_section(args.markdown, "\n".join(out.lines), "benchmarks/training.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
