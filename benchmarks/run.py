"""fxla's benchmarks (``make bench``; not part of CI).  Everything is measured in this one run, on this machine.

For each model and batch size: the median time per call of fxla, torch eager, torch.compile (inductor) and the
same model hand-written in JAX under jax.jit where there is one (not for torchvision's conv nets: n/a), with the
ratios against fxla (every baseline's output is first checked against eager torch).  Then: per-call dispatch
overhead against jax.jit on a tiny function, trace time against torch.fx, trace+lower time against XLA's compile
time, lowering time against graph size, depthwise convolutions alone (eager, fxla, XLA's grouped convolution and
the same convolution as shifted slices in JAX), and whether each target of issues #6 and #19 is met.  Last, the
"training" section (benchmarks/training.py): training steps per second and peak memory of eager, inductor,
fxla.compile_step and hand-written JAX, with issue #22's targets.  The "shapes" section (benchmarks/shapes.py):
changing shapes -- a variable-length BERT serving loop, generate() with the static and the dynamic cache, trace +
lower once vs per shape -- against eager, inductor and jax.jit, with issue #21's targets.  The "distributed"
section (benchmarks/distributed.py), after "training": a data-parallel training step of the MLP on 1 process
against 2 processes on this machine (and 1 process with 2 devices), with the scaling efficiency (~2 min; --quick
~1 min).  The "first" section (benchmarks/first_result.py): a fresh process's first result of a tiny MLP, fxla
against jax.jit, and fxla's first call on real models, with issue #19's item-4 targets (~6 min; --quick ~20 s).

    .venv/bin/python benchmarks/run.py                       # everything (~25 min on 2 cores; training +15 min)
    .venv/bin/python benchmarks/run.py --quick               # small models, fewer repetitions (<1 min; training +4 min)
    .venv/bin/python benchmarks/run.py --models gpt2,bert --batches 1
    .venv/bin/python benchmarks/run.py --models convnets --no-inductor --skip dispatch,trace,scaling,depthwise
    .venv/bin/python benchmarks/run.py --models mobilenet_v2 --batches 1 --skip dispatch,trace,scaling
    .venv/bin/python benchmarks/run.py --markdown docs/performance.md   # also write the results there
    .venv/bin/python benchmarks/run.py --models resnet18 --dump-hlo /tmp/hlo  # fxla's and jax's optimised HLO
"""
from __future__ import annotations

import argparse
import collections
import datetime
import gc
import math
import os
import platform
import re
import statistics
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import jax
import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fxla  # noqa: E402
import jax_models as jm  # noqa: E402
import models  # noqa: E402
import shapes  # noqa: E402
import distributed  # noqa: E402
import first_result  # noqa: E402
from report import Report, load_average as _load, machine_busy as busy  # noqa: E402
import torch_models as tm  # noqa: E402
import training  # noqa: E402
from fxla.lowering import lower_to_fxla, lower_to_stablehlo  # noqa: E402
from fxla.runtime import compile_stablehlo, resolve_device  # noqa: E402
from fxla.runtime.buffers import to_device  # noqa: E402

RTOL = 1e-4                 # outputs must match eager torch: |got - want| <= RTOL * |want| + RTOL * max(1, max|want|)
MIN_SAMPLES = 5
#: idle seconds before each function's block of calls (:func:`measure`): torch's OpenMP workers (libgomp)
#: spin-wait for a few ms after a parallel region, taking a core from the next contender's thread pool (fxla's
#: ConvNeXt-Tiny call right after an eager call: 76 instead of 56 ms on 2 cores; after 5 ms idle: 56 ms)
GAP_S = 0.02


# -- output: stdout, and the same lines for --markdown -------------------------------------------------------------
out = Report()


def _us(seconds: float) -> str:
    if seconds != seconds:           # nan
        return "n/a"
    if seconds >= 0.1:
        return f"{seconds * 1e3:.0f} ms"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def _ms(seconds: float) -> str:
    if seconds != seconds:
        return "n/a"
    return f"{seconds:.2f} s" if seconds >= 10 else f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _ratio(num: float, den: float) -> str:
    return "n/a" if num != num or den != den else f"{num / den:.2f}"


def _mark(ok: Optional[bool]) -> str:
    return "n/a" if ok is None else ("✓" if ok else "✗")


# -- timing --------------------------------------------------------------------------------------------------------
def measure(fns: Dict[str, Callable[[], object]], repeat: int, budget_s: float, warmup: int = 2,
            inner: int = 1, cpu: Optional[Dict[str, float]] = None) -> Dict[str, float]:
    """Median wall-clock seconds per call of each function.

    Rounds alternate between the functions, so load from other processes on the machine hits all of them
    alike; within a round each function runs a block of consecutive calls (about 0.2 s of them; for calls under
    20 ms the block starts with one untimed call) after :data:`GAP_S` idle seconds, so no sample pays for the
    switch from one runtime's thread pool to another's (torch's OpenMP workers spin for a few ms after each
    parallel region).  Stops after ``repeat`` rounds, or after ``budget_s`` seconds once ``MIN_SAMPLES`` rounds
    are done.  ``inner``: calls per sample.  ``cpu``: filled with the median CPU time per call (all threads of
    this process), which other processes' load inflates much less than wall-clock time."""
    block = {}
    for name, fn in fns.items():
        for _ in range(warmup - 1):
            fn()
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        est = (time.perf_counter() - t0) / inner
        block[name] = (max(1, min(50, int(0.2 / max(est * inner, 1e-9)))), est < 0.02)
    samples: Dict[str, List[float]] = {k: [] for k in fns}
    cpu_samples: Dict[str, List[float]] = {k: [] for k in fns}
    start = time.perf_counter()
    for r in range(repeat):
        for name, fn in fns.items():
            n, untimed = block[name]
            time.sleep(GAP_S)
            if untimed:
                fn()
            for _ in range(n):
                c0, t0 = time.process_time(), time.perf_counter()
                for _ in range(inner):
                    fn()
                samples[name].append((time.perf_counter() - t0) / inner)
                cpu_samples[name].append((time.process_time() - c0) / inner)
        if r + 1 >= MIN_SAMPLES and time.perf_counter() - start > budget_s:
            break
    if cpu is not None:
        cpu.update({k: statistics.median(v) for k, v in cpu_samples.items()})
    return {k: statistics.median(v) for k, v in samples.items()}


def once(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def close(got: np.ndarray, want: np.ndarray) -> bool:
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=RTOL, atol=RTOL * scale))


def max_err(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got.astype(np.float64) - want).max()) if got.shape == want.shape else float("inf")


# -- the models ----------------------------------------------------------------------------------------------------
def _example_model(factory):
    return lambda: factory()[0]


@dataclass
class Spec:
    key: str
    name: str
    build: Callable[[], torch.nn.Module]
    make_input: Callable[[int], torch.Tensor]          # batch -> the one input tensor
    describe: Callable[[int], str]                     # batch -> shape text for the table
    jax_fn: Optional[Callable] = None                  # the model hand-written in JAX (None: none, jax.jit n/a)
    jax_params: Optional[Callable] = None              # torch model -> params pytree
    jax_input: Callable = lambda x: jax.numpy.asarray(x.numpy())
    hf: bool = False                                   # trace with concrete shapes (example_inputs)
    jax_note: str = ""


def _seq(batch):
    return 64 if batch == 1 else 16


def _img(batch):
    return 224 if batch == 1 else 112


def _ids(vocab):
    def make(batch):
        g = torch.Generator().manual_seed(batch)
        return torch.randint(0, vocab, (batch, _seq(batch)), generator=g)
    return make


def _randn(*shape):
    def make(batch):
        g = torch.Generator().manual_seed(batch)
        return torch.randn((batch,) + shape, generator=g)
    return make


def _resnet_input(batch):
    g = torch.Generator().manual_seed(batch)
    return torch.randn(batch, 3, _img(batch), _img(batch), generator=g)


def _torchvision(key: str, name: str, constructor: str) -> Spec:
    """One of torchvision's conv nets (issue #19): 224x224 images at every batch size, no hand-written JAX."""
    return Spec(key, name, tm.torchvision_model(constructor), _randn(3, 224, 224), lambda b: f"[{b}, 3, 224, 224]")


SPECS = [
    Spec("mlp", "MLP", _example_model(models.mlp), _randn(64), lambda b: f"[{b}, 64]", jm.mlp, jm.params_of),
    Spec("cnn", "small CNN", _example_model(models.small_cnn), _randn(3, 16, 16), lambda b: f"[{b}, 3, 16, 16]",
         jm.small_cnn, jm.params_of),
    Spec("encoder", "encoder block", _example_model(models.encoder_block), _randn(16, 64),
         lambda b: f"[{b}, 16, 64]", jm.encoder_block, jm.params_of),
    Spec("resnet18", "ResNet-18", tm.resnet18, _resnet_input, lambda b: f"[{b}, 3, {_img(b)}, {_img(b)}]",
         jm.resnet18, jm.resnet18_params, jm.resnet18_input, jax_note="NHWC"),
    _torchvision("mobilenet_v2", "MobileNetV2", "mobilenet_v2"),
    _torchvision("efficientnet_b0", "EfficientNet-B0", "efficientnet_b0"),
    _torchvision("convnext_tiny", "ConvNeXt-Tiny", "convnext_tiny"),
    _torchvision("regnet_y_400mf", "RegNetY-400MF", "regnet_y_400mf"),
    _torchvision("shufflenet_v2", "ShuffleNetV2", "shufflenet_v2_x1_0"),
    Spec("gpt2", "GPT-2 small", tm.gpt2_small, _ids(50257), lambda b: f"ids [{b}, {_seq(b)}]", jm.gpt2,
         jm.gpt2_params, jm.ids_input, hf=True),
    Spec("bert", "BERT-base", tm.bert_base, _ids(30522), lambda b: f"ids [{b}, {_seq(b)}]", jm.bert,
         jm.bert_params, jm.ids_input, hf=True),
]
BY_KEY = {s.key: s for s in SPECS}
QUICK_MODELS = ["mlp", "cnn", "encoder"]
#: --models names that stand for several models
GROUPS = {"convnets": ["resnet18", "mobilenet_v2", "efficientnet_b0", "convnext_tiny", "regnet_y_400mf",
                       "shufflenet_v2"]}
#: issue #19's conv nets: each at most 1.0x eager's time at every batch size (and ResNet-18 at batch 1)
CONVNETS_19 = GROUPS["convnets"][1:]


def fxla_compile(spec: Spec, model, x, **options):
    if spec.hf:     # shape-dependent Python in HF forwards: trace with concrete shapes, then compile the graph
        return fxla.compile(fxla.symbolic_trace(model, example_inputs={"input_ids": x}), **options)
    return fxla.compile(model, **options)


# -- run time --------------------------------------------------------------------------------------------------------
@dataclass
class Row:
    spec: Spec
    batch: int
    times: Dict[str, float]
    cpu: Dict[str, float]
    ok: Dict[str, Optional[bool]]
    errs: Dict[str, float] = field(default_factory=dict)
    failure: str = ""                                  # why fxla could not compile or run the model ("": it did)


def _hlo_summary(text: str) -> Dict[str, int]:
    """Opcode counts of an optimised HLO module (entry and fused computations)."""
    counts = collections.Counter()
    for line in text.splitlines():
        m = re.match(r"\s*(?:ROOT\s+)?%?[\w.-]+\s*=\s*(.*)", line)
        op = m and re.search(r"(?<![\w.-])([a-z][a-z0-9-]*)\(", m.group(1))
        if op:
            counts[op.group(1)] += 1
    return counts


def _dump_hlo(directory: str, spec: Spec, batch: int, fast, x, jitted, params, xj) -> str:
    os.makedirs(directory, exist_ok=True)
    fxla_text = fast.executable_for(x).hlo_text()
    jax_text = jitted.lower(params, xj).compile().as_text() if jitted else ""
    base = os.path.join(directory, f"{spec.key}_b{batch}")
    for suffix, text in (("fxla", fxla_text), ("jax", jax_text)):
        if text:
            with open(f"{base}.{suffix}.hlo.txt", "w") as f:
                f.write(text)
    if not jitted:
        return "no hand-written JAX; fxla: " + ", ".join(f"{k} {n}" for k, n in sorted(_hlo_summary(fxla_text).items()))
    a, b = _hlo_summary(fxla_text), _hlo_summary(jax_text)
    keys = sorted(k for k in set(a) | set(b) if a[k] != b[k])
    return ", ".join(f"{k} {a[k]}/{b[k]}" for k in keys) or "same opcode counts"


def _try_fxla(spec: Spec, model, x):
    """``(compiled, "")``, or ``(None, why)`` where fxla refuses the model: the run goes on without its row."""
    try:
        fast = fxla_compile(spec, model, x)
        with torch.no_grad():
            fast(x)
        return fast, ""
    except fxla.FxlaError as err:
        return None, f"{type(err).__name__}: {str(err).splitlines()[0]}"


def bench_models(specs: List[Spec], batches: List[int], repeat: int, budget_s: float, inductor: bool,
                 dump_hlo: Optional[str]) -> List[Row]:
    rows: List[Row] = []
    hlo_notes = []
    for spec in specs:
        model = spec.build().eval()
        params = spec.jax_params(model) if spec.jax_fn else None
        for batch in batches:
            x = spec.make_input(batch)
            with torch.no_grad():
                want = model(x).numpy()
            xj = spec.jax_input(x) if spec.jax_fn else None
            jitted = jax.jit(spec.jax_fn) if spec.jax_fn else None
            fns = {"eager": lambda: model(x)}
            got = {}
            fast, failure = _try_fxla(spec, model, x)
            if fast:
                fns["fxla"] = lambda: fast(x)
                with torch.no_grad():       # (as everything timed: outputs that require grad refuse .numpy())
                    got["fxla"] = fast(x).numpy()
                    first = min(once(lambda: fast(x)) for _ in range(3))     # (one call can be a stray slow one)
            else:
                out(f"> **{spec.name} batch {batch}: fxla fails** ({failure})")
            if jitted:
                fns["jax"] = lambda: jitted(params, xj).block_until_ready()
                got["jax"] = np.asarray(jitted(params, xj))
            if inductor:
                torch._dynamo.reset()
                compiled = torch.compile(model, dynamic=False)
                with torch.no_grad():
                    got["inductor"] = compiled(x).numpy()
                fns["inductor"] = lambda: compiled(x)
            if fast and first < SAME_IO_BELOW_S:
                # Short calls: the torch-in/torch-out conversion is a visible part of them, so fxla is also timed
                # the way jax.jit is called — device arrays in, device arrays out (output="jax").
                fast_dev = fxla_compile(spec, model, x, output="jax")
                x_dev = to_device(x, resolve_device(None))
                fns["fxla_dev"] = lambda: fast_dev(x_dev).block_until_ready()
                got["fxla_dev"] = np.asarray(fast_dev(x_dev))
            ok = {k: close(v, want) for k, v in got.items()}
            errs = {k: max_err(v, want) for k, v in got.items()}
            for k, good in ok.items():
                if not good:
                    out(f"> **{spec.name} batch {batch}: {k} does not match eager** (max |Δ| {errs[k]:.2e})")
            cpu: Dict[str, float] = {}
            time.sleep(0.5)                 # let threads busy from the compiles above go idle
            with torch.no_grad():
                times = measure(fns, repeat, budget_s, cpu=cpu)
            for k in ("inductor", "fxla_dev", "jax", "fxla"):
                times.setdefault(k, float("nan"))
                cpu.setdefault(k, float("nan"))
                ok.setdefault(k, False if k == "fxla" else None)
            rows.append(Row(spec, batch, times, cpu, ok, errs, failure))
            if dump_hlo and fast:
                hlo_notes.append(f"{spec.name} batch {batch}: " +
                                 _dump_hlo(dump_hlo, spec, batch, fast, x, jitted, params, xj))
            print(f"  [{spec.name} batch {batch}: " + ", ".join(f"{k} {_us(v)}" for k, v in times.items()) + "]",
                  file=sys.stderr, flush=True)
            del fast, jitted, fns
            fast_dev = None
            torch._dynamo.reset()
        del model, params
    out("## Run time per call (median); ratios are baseline time / fxla time (> 1: fxla faster)\n")
    header = ["model", "batch", "input", "fxla", "eager", "torch.compile", "jax.jit", "vs eager", "vs inductor",
              "vs jax", "vs jax, CPU time", "fxla, device arrays", "vs jax, same I/O",
              "matches eager (fxla / inductor / jax)"]
    table = []
    for r in rows:
        t = r.times
        note = f" ({r.spec.jax_note})" if r.spec.jax_note else ""
        table.append([r.spec.name, str(r.batch), r.spec.describe(r.batch), _us(t["fxla"]), _us(t["eager"]),
                      _us(t["inductor"]), _us(t["jax"]) + note, _ratio(t["eager"], t["fxla"]),
                      _ratio(t["inductor"], t["fxla"]), _ratio(t["jax"], t["fxla"]),
                      _ratio(r.cpu["jax"], r.cpu["fxla"]), _us(t["fxla_dev"]), _ratio(t["jax"], t["fxla_dev"]),
                      " / ".join(_mark(r.ok[k]) for k in ("fxla", "inductor", "jax"))])
    out.table(header, table)
    if dump_hlo:
        out(f"\nOptimised HLO written to {dump_hlo}/<model>_b<batch>.{{fxla,jax}}.hlo.txt; opcodes whose counts "
            f"differ (fxla/jax):\n")
        for note in hlo_notes:
            out(f"* {note}")
    return rows


# -- dispatch --------------------------------------------------------------------------------------------------------
def bench_dispatch(repeat: int) -> Dict[str, float]:
    """Per-call overhead on a tiny function, in like-for-like pairs:

    * device arrays in and out — fxla ``output="jax"`` with jax arrays; jax.jit with jax arrays (the dispatch
      target's pair: both are JAX's C++ dispatch of a compiled program);
    * torch tensors in and out — fxla; jax.jit behind the thinnest zero-copy torch bridge a user could write,
      ``torch.from_numpy(np.asarray(jitted(x.numpy())))`` (its output is a read-only buffer torch warns about;
      fxla's is a private writable view);
    * host data in and out — jax.jit with a reused numpy array in and ``np.asarray`` out, for scale: no
      torch↔numpy conversion at all;
    * torch tensors in, device arrays out — fxla ``output="jax"`` with torch tensors; ``jitted(x.numpy())``."""
    def fn(t):
        return t + 1

    x = torch.randn(4)
    xn = x.numpy()
    xj = jax.numpy.asarray(xn)
    fast = fxla.compile(fn)
    fast_jax = fxla.compile(fn, output="jax")
    jitted = jax.jit(fn)

    def bridge():
        return torch.from_numpy(np.asarray(jitted(x.numpy())))

    assert close(fast(x).numpy(), xn + 1) and close(np.asarray(fast_jax(xj)), xn + 1)
    assert close(np.asarray(jitted(xn)), xn + 1)
    with warnings.catch_warnings():       # torch warns (once per process) about the bridge's read-only buffer
        warnings.simplefilter("ignore", UserWarning)
        assert close(bridge().numpy(), xn + 1)
    times = measure({"fxla": lambda: fast(x),
                     "jax_bridge": bridge,
                     "jax_host": lambda: np.asarray(jitted(xn)),
                     "fxla_jax": lambda: fast_jax(xj).block_until_ready(),
                     "jax": lambda: jitted(xj).block_until_ready(),
                     "fxla_torch_jax": lambda: fast_jax(x).block_until_ready(),
                     "jax_torch_jax": lambda: jitted(x.numpy()).block_until_ready(),
                     "eager": lambda: fn(x)}, repeat=repeat, budget_s=10.0, warmup=200, inner=200)
    out("\n## Dispatch overhead on a tiny function (x + 1, 4 float32 elements), median per call\n")
    out.table(["caller", "per call", "ratio"], [
        ["fxla `output=\"jax\"`, jax.Array in / out", _us(times["fxla_jax"]),
         _ratio(times["fxla_jax"], times["jax"]) + " / jax.jit device"],
        ["jax.jit, jax.Array in / out (device ↔ device)", _us(times["jax"]), "1.00"],
        ["fxla, torch in / torch out", _us(times["fxla"]), _ratio(times["fxla"], times["jax_bridge"])
         + " / jax.jit + torch bridge; " + _ratio(times["fxla"], times["jax_host"]) + " / jax.jit host"],
        ["jax.jit behind a zero-copy torch bridge, torch in / torch out", _us(times["jax_bridge"]), "1.00"],
        ["jax.jit, numpy in / `np.asarray` out (host ↔ host, no torch)", _us(times["jax_host"]),
         _ratio(times["jax_host"], times["jax_bridge"]) + " / jax.jit + torch bridge"],
        ["fxla `output=\"jax\"`, torch in / jax.Array out", _us(times["fxla_torch_jax"]),
         _ratio(times["fxla_torch_jax"], times["jax_torch_jax"]) + " / jax.jit, torch in by `x.numpy()`; "
         + _ratio(times["fxla_torch_jax"], times["jax_host"]) + " / jax.jit host"],
        ["jax.jit, torch in by `x.numpy()` / jax.Array out", _us(times["jax_torch_jax"]), "1.00"],
        ["torch eager (no compiler, for scale)", _us(times["eager"]), _ratio(times["eager"], times["jax"])
         + " / jax.jit device"]])
    return times


# -- trace, lower, compile --------------------------------------------------------------------------------------------
def _fx_error(model) -> str:
    try:
        torch.fx.symbolic_trace(model)
    except Exception as err:  # noqa: BLE001  (torch.fx fails on shape-dependent control flow)
        return f"{type(err).__name__}: {str(err).splitlines()[0][:70]}"
    return ""


def _hf_fx_note() -> str:
    try:
        import transformers.utils.fx  # noqa: F401
    except ImportError:
        return "transformers " + __import__("transformers").__version__ + " has no transformers.utils.fx"
    return ""


def bench_trace_and_compile(specs: List[Spec]) -> List[dict]:
    results = []
    notes = []
    for spec in specs:
        model = spec.build().eval()
        x = spec.make_input(1)
        if spec.hf:
            trace = lambda: fxla.symbolic_trace(model, example_inputs={"input_ids": x})  # noqa: E731
        else:
            trace = lambda: fxla.symbolic_trace(model)  # noqa: E731
        why = _fx_error(model)
        fns = {"fxla": trace} if why else {"fxla": trace, "fx": lambda: torch.fx.symbolic_trace(model)}
        t = measure(fns, repeat=5 if spec.hf else 15, budget_s=10.0, warmup=1)
        t_trace, t_fx = t["fxla"], t.get("fx", float("nan"))
        if why:
            notes.append(f"{spec.name}: torch.fx.symbolic_trace fails ({why})"
                         + (f"; {_hf_fx_note()}" if spec.hf and _hf_fx_note() else ""))
        gm = trace()
        nodes = len(list(gm.graph.nodes))
        lower_to_fxla(gm, (x,))                          # warm torch's meta kernels once
        start = time.perf_counter()
        program = lower_to_fxla(gm, (x,))
        t_lower = time.perf_counter() - start
        start = time.perf_counter()
        stablehlo = lower_to_stablehlo(program.module)
        text = stablehlo.operation.get_asm(enable_debug_info=True)
        t_conv = time.perf_counter() - start
        t_xla = once(lambda: compile_stablehlo(text, resolve_device("cpu"), cache_dir=None))
        t_jax_lower = t_jax_compile = float("nan")
        if spec.jax_fn:
            params = spec.jax_params(model)
            xj = spec.jax_input(x)
            jitted = jax.jit(lambda p, v: spec.jax_fn(p, v))     # a new function: no cached trace/lowering/exe
            start = time.perf_counter()
            lowered = jitted.lower(params, xj)
            t_jax_lower = time.perf_counter() - start
            t_jax_compile = once(lowered.compile)
            del params
        results.append(dict(spec=spec, nodes=nodes, trace=t_trace, fx=t_fx, lower=t_lower, conv=t_conv, xla=t_xla,
                            jax_lower=t_jax_lower, jax_compile=t_jax_compile))
        del model
    out("\n## Trace, lower and compile times (batch 1)\n")
    out("fxla's tracer against torch.fx's `symbolic_trace` (HF models: fxla traces with concrete shapes, "
        "`example_inputs=`); then lowering the graph to verified StableHLO against XLA compiling it, and the same "
        "two phases for the hand-written JAX model (`jax.jit(f).lower`, `.compile()`).\n")
    out.table(["model", "graph nodes", "fxla trace", "torch.fx trace", "fxla / fx", "lower to fxla",
               "fxla → StableHLO", "trace + lower", "XLA compile", "(trace + lower) / XLA", "jax lower",
               "jax XLA compile"],
              [[r["spec"].name, str(r["nodes"]), _ms(r["trace"]), _ms(r["fx"]), _ratio(r["trace"], r["fx"]),
                _ms(r["lower"]), _ms(r["conv"]), _ms(r["trace"] + r["lower"] + r["conv"]), _ms(r["xla"]),
                _ratio(r["trace"] + r["lower"] + r["conv"], r["xla"]), _ms(r["jax_lower"]), _ms(r["jax_compile"])]
               for r in results])
    for note in notes:
        out(f"\n* {note}")
    return results


# -- lowering time against graph size ----------------------------------------------------------------------------------
def _chain(n_ops: int):
    def fn(x):
        for i in range(n_ops):
            x = x * 1.0001 if i % 2 else x + 0.25
        return x
    return fn


def bench_scaling(sizes: List[int]) -> List[dict]:
    results = []
    x = torch.randn(16)
    lower_to_fxla(fxla.symbolic_trace(_chain(4)), (x,))
    for n in sizes:
        fn = _chain(n - 2)                                   # + placeholder + output
        start = time.perf_counter()
        gm = fxla.symbolic_trace(fn)
        t_trace = time.perf_counter() - start
        nodes = len(list(gm.graph.nodes))
        gc.collect()
        c0, start = time.process_time(), time.perf_counter()
        program = lower_to_fxla(gm, (x,))
        t_lower = time.perf_counter() - start
        start = time.perf_counter()
        lower_to_stablehlo(program.module)
        t_conv = time.perf_counter() - start
        results.append(dict(nodes=nodes, trace=t_trace, lower=t_lower, conv=t_conv, cpu=time.process_time() - c0))
        del gm, program
    out("\n## Lowering time against graph size (a chain of elementwise ops on a [16] tensor)\n")
    out.table(["graph nodes", "trace", "lower to fxla", "fxla → StableHLO", "lowering per node",
               "lowering CPU time per node"],
              [[str(r["nodes"]), _ms(r["trace"]), _ms(r["lower"]), _ms(r["conv"]),
                _us((r["lower"] + r["conv"]) / r["nodes"]), _us(r["cpu"] / r["nodes"])] for r in results])
    if len(results) >= 2:
        a, b = results[0], results[-1]
        span = math.log(b["nodes"] / a["nodes"])
        exponent = math.log((b["lower"] + b["conv"]) / (a["lower"] + a["conv"])) / span
        cpu_exponent = math.log(b["cpu"] / a["cpu"]) / span
        out(f"\nLowering time grows as nodes^{exponent:.2f} (wall clock) and nodes^{cpu_exponent:.2f} (CPU time) "
            f"from {a['nodes']} to {b['nodes']} nodes (1.00 = linear).")
        for r in results:
            r["exponent"], r["cpu_exponent"] = exponent, cpu_exponent
    return results


# -- depthwise convolutions alone ------------------------------------------------------------------------------------
#: issue #19's table: (input shape [N, C, H, W], kernel size); stride 1, "same" padding, one filter per channel
DEPTHWISE_CASES = [((1, 32, 112, 112), 3), ((1, 144, 56, 56), 3), ((1, 96, 56, 56), 7), ((8, 96, 56, 56), 3)]


def _shifted_slices(x, w, pad):
    """Depthwise convolution (NCHW, weight [C, 1, K, K]) as a sum of K*K shifted slices times per-channel weights:
    the elementwise formulation XLA CPU fuses well (issue #19)."""
    k = w.shape[-1]
    h, wd = x.shape[2], x.shape[3]
    xp = jax.numpy.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    acc = None
    for i in range(k):
        for j in range(k):
            term = xp[:, :, i:i + h, j:j + wd] * w[None, :, 0, i, j, None, None]
            acc = term if acc is None else acc + term
    return acc


def bench_depthwise(cases, repeat: int, budget_s: float) -> List[dict]:
    """Median time of one depthwise ``nn.Conv2d(C, C, K, padding=K // 2, groups=C, bias=False)`` per case: torch
    eager, ``fxla.compile`` of that module (whatever fxla lowers it to today), XLA's grouped convolution
    (``lax.conv_general_dilated(feature_group_count=C)`` under jax.jit, NCHW and NHWC) and the shifted-slices
    formulation under jax.jit."""
    lax = jax.lax
    results = []
    for shape, k in cases:
        c, pad = shape[1], k // 2
        torch.manual_seed(0)
        conv = torch.nn.Conv2d(c, c, k, padding=pad, groups=c, bias=False).eval()
        x = torch.randn(shape)
        with torch.no_grad():
            want = conv(x).numpy()
        fast = fxla.compile(conv)
        w = jax.numpy.asarray(conv.weight.detach().numpy())                  # [C, 1, K, K] (OIHW)
        xj = jax.numpy.asarray(x.numpy())
        xj_nhwc = jax.numpy.asarray(x.numpy().transpose(0, 2, 3, 1))
        w_hwio = jax.numpy.asarray(conv.weight.detach().numpy().transpose(2, 3, 1, 0))   # [K, K, 1, C]
        padding = [(pad, pad), (pad, pad)]
        nchw = jax.jit(lambda v, f: lax.conv_general_dilated(v, f, (1, 1), padding, feature_group_count=c,
                                                             dimension_numbers=("NCHW", "OIHW", "NCHW")))
        nhwc = jax.jit(lambda v, f: lax.conv_general_dilated(v, f, (1, 1), padding, feature_group_count=c,
                                                             dimension_numbers=("NHWC", "HWIO", "NHWC")))
        slices = jax.jit(lambda v, f: _shifted_slices(v, f, pad))
        with torch.no_grad():
            got = {"fxla": fast(x).numpy(), "xla_nchw": np.asarray(nchw(xj, w)),
                   "xla_nhwc": np.asarray(nhwc(xj_nhwc, w_hwio)).transpose(0, 3, 1, 2),
                   "slices": np.asarray(slices(xj, w))}
        ok = {name: close(v, want) for name, v in got.items()}
        for name, good in ok.items():
            if not good:
                out(f"> **depthwise {list(shape)} {k}x{k}: {name} does not match eager** "
                    f"(max |Δ| {max_err(got[name], want):.2e})")
        fns = {"eager": lambda: conv(x), "fxla": lambda: fast(x),
               "xla_nchw": lambda: nchw(xj, w).block_until_ready(),
               "xla_nhwc": lambda: nhwc(xj_nhwc, w_hwio).block_until_ready(),
               "slices": lambda: slices(xj, w).block_until_ready()}
        time.sleep(0.5)
        with torch.no_grad():
            times = measure(fns, repeat, budget_s)
        results.append(dict(shape=shape, k=k, times=times, ok=ok))
        print(f"  [depthwise {list(shape)} {k}x{k}: " + ", ".join(f"{n} {_us(v)}" for n, v in times.items()) + "]",
              file=sys.stderr, flush=True)
        del fast, nchw, nhwc, slices
    out("\n## Depthwise convolutions alone (stride 1, same padding, no bias), median per call\n")
    out("The cause of issue #19: XLA CPU's grouped convolution (`lax.conv_general_dilated(feature_group_count=C)` "
        "under jax.jit) against the same convolution written as a sum of K×K shifted slices times per-channel "
        "weights (jax.jit), torch eager, and `fxla.compile` of the `nn.Conv2d(groups=C)` (torch in / torch out).\n")
    out.table(["input, kernel", "torch eager", "fxla", "XLA conv NCHW", "XLA conv NHWC", "shifted slices NCHW",
               "fxla / eager", "matches eager (fxla / XLA NCHW / NHWC / slices)"],
              [[f"{list(r['shape'])}, {r['k']}x{r['k']}", _us(r["times"]["eager"]), _us(r["times"]["fxla"]),
                _us(r["times"]["xla_nchw"]), _us(r["times"]["xla_nhwc"]), _us(r["times"]["slices"]),
                _ratio(r["times"]["fxla"], r["times"]["eager"]),
                " / ".join(_mark(r["ok"][n]) for n in ("fxla", "xla_nchw", "xla_nhwc", "slices"))]
               for r in results])
    return results


# -- targets -----------------------------------------------------------------------------------------------------------
SAME_IO_BELOW_S = 0.005      # fxla calls shorter than this are also timed with device arrays in and out
BUSY_NOTE = ("the machine was busy (load average above the core count) during this run: torch's eager and "
             "inductor timings (OpenMP thread teams) degrade far more under oversubscription than XLA's; "
             "fxla-vs-jax.jit ratios stay meaningful, ratios against torch do not")


def report_targets(rows, dispatch, traces, scaling, was_busy: bool) -> None:
    out("\n## Issue #6 targets (measured in this run)\n")
    if was_busy:
        out(f"> **Note:** {BUSY_NOTE}.\n")
    lines = []
    # like for like: where fxla was also timed with device arrays in and out (short calls), that time
    pairs = [(r, (r.times["fxla_dev"] if r.ok["fxla_dev"] else r.times["fxla"]) / r.times["jax"])
             for r in rows if r.ok["jax"] and r.ok["fxla"]]
    if pairs:
        worst = max(pairs, key=lambda p: p[1])
        met = sum(1 for _, q in pairs if q <= 1.05)
        cpu_worst = max((r.cpu["fxla_dev"] if r.ok["fxla_dev"] else r.cpu["fxla"]) / r.cpu["jax"] for r, _ in pairs)
        big = [(r, q) for r, q in pairs if r.times["jax"] > 0.01]
        big_text = ""
        if big and len(big) < len(pairs):
            big_worst = max(big, key=lambda p: p[1])
            big_text = (f"; calls over 10 ms: {sum(1 for _, q in big if q <= 1.05)} of {len(big)}, worst "
                        f"{big_worst[0].spec.name} batch {big_worst[0].batch}: {big_worst[1]:.2f}×")
        lines.append([f"run time ≤ 1.05× hand-written JAX (fxla / jax.jit, each model × batch; calls under "
                      f"{SAME_IO_BELOW_S * 1e3:.0f} ms: both with device arrays in and out)",
                      f"{met} of {len(pairs)} rows; worst {worst[0].spec.name} batch {worst[0].batch}: "
                      f"{worst[1]:.2f}× (CPU time: worst {cpu_worst:.2f}×){big_text}", _mark(met == len(pairs))])
    gpt = [r for r in rows if r.spec.key == "gpt2" and r.batch == 1]
    if gpt:
        speed = gpt[0].times["eager"] / gpt[0].times["fxla"]
        lines.append(["≥ 1.5× faster than eager, GPT-2 small batch 1", f"{speed:.2f}× eager's speed"
                      + (" (machine busy: not reliable)" if was_busy else ""),
                      _mark(speed >= 1.5 and gpt[0].ok["fxla"]) + ("?" if was_busy else "")])
    if dispatch:
        qj, qb = dispatch["fxla_jax"] / dispatch["jax"], dispatch["fxla"] / dispatch["jax_bridge"]
        qh = dispatch["fxla"] / dispatch["jax_host"]
        qt = dispatch["fxla_torch_jax"] / dispatch["jax_torch_jax"]
        lines.append(["dispatch overhead ≤ 1.2× jax.jit (tiny function)",
                      f"device ↔ device (jax arrays) {qj:.2f}×; torch ↔ torch {qb:.2f}× jax.jit behind a torch "
                      f"bridge ({qh:.2f}× jax.jit on numpy, which converts nothing); torch in, jax arrays out "
                      f"{qt:.2f}× jax.jit on `x.numpy()`",
                      _mark(qj <= 1.2) + " / " + _mark(qb <= 1.2) + " / " + _mark(qt <= 1.2)])
    traced = [r for r in traces if r["fx"] == r["fx"]]
    if traced:
        worst = max(traced, key=lambda r: r["trace"] / r["fx"])
        met = sum(1 for r in traced if r["trace"] <= r["fx"])
        lines.append(["trace time ≤ torch.fx's", f"{met} of {len(traced)} models torch.fx traces; worst "
                      f"{worst['spec'].name}: {worst['trace'] / worst['fx']:.2f}×", _mark(met == len(traced))])
    if scaling and "exponent" in scaling[0]:
        e, ec = scaling[0]["exponent"], scaling[0]["cpu_exponent"]
        lines.append([f"lowering time linear in nodes ({scaling[0]['nodes']}–{scaling[-1]['nodes']}; exponent "
                      f"≤ 1.15)", f"nodes^{e:.2f} wall clock, nodes^{ec:.2f} CPU time",
                      _mark(e <= 1.15) + " / " + _mark(ec <= 1.15)])
    if lines:
        out.table(["target", "measured", "met"], lines)
    else:
        out("None of issue #6's targets was measured in this run.")
    report_targets_19(rows, was_busy)


def _vs_eager(r: Row) -> float:
    """fxla's time / eager's (≤ 1: fxla at least as fast); inf where fxla's output does not match eager."""
    return r.times["fxla"] / r.times["eager"] if r.ok["fxla"] else float("inf")


def _worst_vs_eager(rows: List[Row]) -> str:
    worst = max(rows, key=_vs_eager)
    q = _vs_eager(worst)
    why = "fxla fails" if worst.failure else "does not match eager"
    return f"worst {worst.spec.name} batch {worst.batch}: " + (why if q == float("inf") else f"{q:.2f}× eager's time")


def report_targets_19(rows: List[Row], was_busy: bool) -> None:
    """Issue #19's conv-net targets, where this run measured those models (fxla's time / eager's, ≤ 1.0)."""
    lines = []
    nets = [r for r in rows if r.spec.key in CONVNETS_19]
    caveat = " (machine busy: not reliable)" if was_busy else ""
    if nets:
        met = sum(1 for r in nets if _vs_eager(r) <= 1.0)
        names = ", ".join(BY_KEY[k].name for k in CONVNETS_19)
        lines.append([f"each conv net ({names}) at most 1.0× eager's time, each batch",
                      f"{met} of {len(nets)} rows; {_worst_vs_eager(nets)}{caveat}",
                      _mark(met == len(nets)) + ("?" if was_busy else "")])
    resnet = [r for r in rows if r.spec.key == "resnet18" and r.batch == 1]
    if resnet:
        lines.append(["ResNet-18 batch 1 at most 1.0× eager's time",
                      f"{_ratio(resnet[0].times['fxla'], resnet[0].times['eager'])}× eager's time "
                      f"({_us(resnet[0].times['fxla'])} vs {_us(resnet[0].times['eager'])}){caveat}",
                      _mark(_vs_eager(resnet[0]) <= 1.0) + ("?" if was_busy else "")])
    if lines:
        out("\n## Issue #19 targets (measured in this run)\n")
        out.table(["target", "measured", "met"], lines)


# -- main --------------------------------------------------------------------------------------------------------------
def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(next(line.split()[1] for line in f if line.startswith("MemTotal")))
        mem = f", {kb / 2 ** 20:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return f"{os.cpu_count()} CPU cores ({cpu}){mem}"


def write_markdown(path: str, text: str) -> None:
    """Replace the block between the BEGIN/END markers of ``path`` (or write the whole file)."""
    begin, end = "<!-- benchmarks/run.py: BEGIN -->", "<!-- benchmarks/run.py: END -->"
    block = f"{begin}\n{text.rstrip()}\n{end}\n"
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
        if begin in old and end in old:
            block = old[:old.index(begin)] + block.rstrip("\n") + old[old.index(end) + len(end):]
    with open(path, "w") as f:
        f.write(block)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help=f"models {','.join(QUICK_MODELS)}, fewer repetitions, no inductor, graphs up to 10k "
                             f"nodes, the first depthwise case (< 1 min)")
    parser.add_argument("--models", help=f"comma-separated subset of {','.join(BY_KEY)}, or a group: "
                                         + "; ".join(f"{g} = {','.join(ks)}" for g, ks in GROUPS.items())
                                         + f" (default: all; --quick: {','.join(QUICK_MODELS)})")
    parser.add_argument("--batches", default="1,32", help="comma-separated batch sizes (default 1,32)")
    parser.add_argument("--repeat", type=int, help="timed rounds per measurement (default 30; --quick 10)")
    parser.add_argument("--budget", type=float, help="seconds per measurement after which timing stops once "
                                                     f"{MIN_SAMPLES} rounds are in (default 20; --quick 3)")
    parser.add_argument("--no-inductor", action="store_true", help="skip torch.compile (slow to compile)")
    parser.add_argument("--sizes", help="graph sizes for the lowering-scaling table (default 1000,10000,100000; "
                                        "--quick 1000,10000)")
    parser.add_argument("--skip", default="", help="comma-separated sections to skip: "
                                                   "run,dispatch,trace,scaling,depthwise,first,shapes,"
                                                   "training,distributed")
    parser.add_argument("--markdown", metavar="PATH", help="also write the results as markdown to PATH (between "
                                                          "BEGIN/END markers if the file has them)")
    parser.add_argument("--dump-hlo", metavar="DIR", help="write fxla's and jax.jit's optimised HLO per model")
    args = parser.parse_args(argv)
    # compile times are measured as a first compile: not from fxla's on-disk cache (on by default)
    fxla.runtime.set_cache_dir(None)
    keys = args.models.split(",") if args.models else (QUICK_MODELS if args.quick else list(BY_KEY))
    keys = list(dict.fromkeys(k for key in keys for k in GROUPS.get(key, [key])))    # groups expanded, in order
    unknown = [k for k in keys if k not in BY_KEY]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; choose from {','.join(BY_KEY)} or {','.join(GROUPS)}")
    specs = [BY_KEY[k] for k in keys]
    batches = [int(b) for b in args.batches.split(",")]
    repeat = args.repeat or (10 if args.quick else 30)
    budget = args.budget if args.budget is not None else (3.0 if args.quick else 20.0)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else \
        ([1_000, 10_000] if args.quick else [1_000, 10_000, 100_000])
    skip = set(filter(None, args.skip.split(",")))
    inductor = not (args.quick or args.no_inductor)

    torch.set_num_threads(os.cpu_count())
    warnings.filterwarnings("ignore")
    started = time.perf_counter()
    load_start = _load()
    out("## Set-up\n")
    command = " ".join(["benchmarks/run.py"] + list(argv if argv is not None else sys.argv[1:]))
    out(f"* {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, `{command}`")
    out(f"* {machine()}, {platform.system()} {platform.release()}, Python {platform.python_version()}")
    import transformers
    torchvision = tm.import_torchvision()
    out(f"* torch {torch.__version__}, jax/jaxlib {jax.__version__}, transformers {transformers.__version__}, "
        f"torchvision {torchvision.__version__}; fxla device {resolve_device()}")
    out(f"* threads: torch intra-op {torch.get_num_threads()} (`torch.set_num_threads(os.cpu_count())`), "
        f"inter-op {torch.get_num_interop_threads()}; fxla and jax.jit share jaxlib's PJRT CPU client (XLA's "
        f"default: one intra-op thread per core)")
    out(f"* float32, eval mode, `torch.no_grad()`; every number is the median of the calls timed in up to "
        f"{repeat} rounds that alternate between the contenders (each runs ~0.2 s of consecutive calls per round; "
        f"{MIN_SAMPLES} rounds at least, at most {budget:.0f} s per measurement) after 2 warm-up calls; outputs "
        f"checked against eager at rtol {RTOL:g} first")
    rows, dispatch, traces, scaling = [], None, [], []
    out()
    was_busy = busy()
    if "run" not in skip:
        rows = bench_models(specs, batches, repeat, budget, inductor, args.dump_hlo)
        was_busy = was_busy or busy()
    if "dispatch" not in skip:
        dispatch = bench_dispatch(repeat=max(repeat, 15))
    if "trace" not in skip:
        traces = bench_trace_and_compile(specs)
    if "scaling" not in skip:
        scaling = bench_scaling(sizes)
    if "depthwise" not in skip:
        bench_depthwise(DEPTHWISE_CASES[:1] if args.quick else DEPTHWISE_CASES, repeat, budget)
    report_targets(rows, dispatch, traces, scaling, was_busy or busy())
    if "first" not in skip:           # (in fresh processes: a first result is a new process's)
        first_result.bench_first_result(out, quick=args.quick)
    if "shapes" not in skip:
        shapes.bench_shapes(out, quick=args.quick, inductor=inductor, was_busy=was_busy)
    if "training" not in skip:        # (in subprocesses: each contender's peak memory is its own)
        training.bench_training(out, quick=args.quick, inductor=inductor, was_busy=was_busy)
    if "distributed" not in skip:     # (in subprocesses: 1 and 2 processes, joined on a loopback port)
        distributed.bench_distributed(out, quick=args.quick, was_busy=was_busy)
    out(f"\nWhole run: {time.perf_counter() - started:.0f} s; load average (1/5/15 min) {load_start} at the start, "
        f"{_load()} at the end.")
    if args.markdown:
        write_markdown(args.markdown, "\n".join(out.lines))
        print(f"\nwrote {args.markdown}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
