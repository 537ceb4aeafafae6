"""Changing shapes (issue #21, item 6): what a variable-length serving loop, ``generate()`` and a set of sequence
lengths cost through fxla's symbolic dims against torch eager, ``torch.compile`` (inductor) and ``jax.jit``, all
measured in one run.  Part of ``make bench`` (the "shapes" section of benchmarks/run.py); also runs alone::

    .venv/bin/python benchmarks/shapes.py               # BERT-base 50 calls, GPT-2 small 128 tokens (~15-25 min)
    .venv/bin/python benchmarks/shapes.py --quick       # 2-layer models, 10 calls, 16 tokens (a few minutes)
    .venv/bin/python benchmarks/shapes.py --no-inductor --skip generate,tiny

Three parts:

(a) **Serving loop.**  ``transformers.BertModel(BertConfig())`` (random weights, eval, ``torch.no_grad()``)
    called with ``input_ids`` + ``attention_mask`` of batch 1 and random lengths (fixed seed).  The total wall time
    of the loop, compiles included (the "cold" column), of the same loop again (every length seen once: a
    dynamo graph made for the first length alone may leave one to compile) and the mean call of a third loop (the
    "warm" column), for: eager; ``torch.compile(model, dynamic=True)`` (inductor); ``torch.compile(model,
    backend="fxla")`` (dynamo's automatic dynamic shapes: fxla gets one symbolic graph); ``fxla.compile(model,
    dynamic={"input_ids": {1: seq}, "attention_mask": {1: seq}})`` (one shared ``fxla.Dim``; "not supported" with
    the error when fxla's tracer cannot take the model); ``fxla.bucketed(torch.compile(model, backend="fxla"),
    sizes=(32, 64, 128, 256, 512), pad={"input_ids": (1, 0), "attention_mask": (1, 0)})`` (lengths padded up to
    a few sizes, outputs sliced back; each bucket's first call also runs the unpadded inputs once, its check;
    sizes 16..128 with --quick); and ``jax.jit`` of the same BERT hand-written in JAX
    (:func:`jax_bert`: benchmarks/jax_models.py's BERT plus the attention mask and the pooler; ``jax.jit``
    compiles once per length).  Every output is checked against eager's.
(b) **generate().**  ``GPT2LMHeadModel(GPT2Config())``, a prompt of 8 tokens, greedy, ``eos_token_id = None``:
    with the static cache (``cache_implementation="static"``) for eager, inductor (``model.forward =
    torch.compile(model.forward)``) and fxla (``model.forward = torch.compile(model.forward, backend="fxla")``,
    tests/test_generate.py's recipe); time to first token and per-token latency of the first generate (compiles
    included) and of a second one (warm), and the compiles; then the default dynamic cache through fxla (and
    eager, for reference).  Tokens are compared with eager's.  Then the issue's "tiny GPT-2 and tiny LLaMA"
    (tests/test_generate.py's 2-layer, width-64, vocabulary-128 configurations; part "tiny"), static cache: eager,
    fxla and inductor, the same measurements; and what bounds the issue's target there (fxla per token under
    0.5x eager's): the floor, HF's generate loop and dynamo through a backend that computes nothing (its graphs
    return their first call's outputs), and fxla's decode call alone and its XLA program alone, each timed in
    a loop on a captured decode step.
(c) **Trace + lower once vs per shape.**  10 distinct sequence lengths through an ``nn.TransformerEncoder``
    (``fxla.compile`` without ``dynamic=``, with a ``Dim``, with ``dynamic=True``) and a 4-layer BERT
    (``torch.compile(backend="fxla")`` with ``dynamic=False``, automatic, ``dynamic=True``; ``fxla.compile`` with
    ``concrete_shapes=True``, without and with a ``Dim``): the seconds of each
    fxla stage (logger ``fxla.phases``), summed over the lengths and per length.

Honest timings: every contender gets a fresh fxla on-disk cache folder (``fxla.runtime.set_cache_dir`` of a new
temporary folder, so nothing is read from an earlier run or contender; ``disk_hits`` is reported), a fresh
inductor cache folder and a reset dynamo.  ``--quick``: 10 calls of lengths 8..128 on a 2-layer BERT, 16 tokens
on a 2-layer GPT-2 and 16 on the tiny models, 2-layer models in (c).
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import copy
import datetime
import gc
import logging
import os
import random
import re
import statistics
import sys
import tempfile
import time
import types
import warnings
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _path in (os.path.join(ROOT, "utils"), HERE):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import fxla  # noqa: E402
import jax_models as jm  # noqa: E402
from report import Report, load_average as _load, machine_busy as _busy, median_seconds  # noqa: E402

RTOL = 1e-4          # outputs against eager's: |got - want| <= RTOL * |want| + RTOL * max(1, max|want|)
SEED = 0
PROMPT = 8           # (b): prompt tokens


# -- output ----------------------------------------------------------------------------------------------------------
def _s(seconds: float) -> str:
    """Seconds for a table: ``12.3 s``, ``456 ms``, ``7.89 ms``, ``n/a``."""
    if seconds is None or seconds != seconds:
        return "n/a"
    if seconds >= 1:
        return f"{seconds:.2f} s" if seconds < 100 else f"{seconds:.0f} s"
    if seconds >= 0.1:
        return f"{seconds * 1e3:.0f} ms"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} µs"


def _mark(ok: Optional[bool]) -> str:
    return "n/a" if ok is None else ("✓" if ok else "✗")


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


def _close(got, want) -> (bool, float):
    """(within tolerance, max abs error) of ``got`` against eager's ``want`` (numpy arrays)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return False, float("inf")
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    err = float(np.abs(got - want).max()) if want.size else 0.0
    return bool(np.allclose(got, want, rtol=RTOL, atol=RTOL * scale)), err


# -- what fxla logs: stage times and lowerings ------------------------------------------------------------------------
class FxlaLog(logging.Handler):
    """Collects ``fxla.phases`` (DEBUG: ``<name>: <stage> took X s (...)``) and ``fxla.compile`` (INFO: polymorphic
    lowerings, sizes compiled on their own) while it is attached (:func:`listening`)."""

    STAGE = re.compile(r": (\w+) took (\d+(?:\.\d+)?) s")

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.stages: Dict[str, List[float]] = collections.defaultdict(list)
        self.polymorphic = 0          # polymorphic programs lowered ("polymorphic program #n traced and lowered once")
        self.fixed = 0                # ... of which the program fixed a symbolic dim ("fixed by the program: s = n")
        self.fixed_notes: List[str] = []
        self.alone = 0                # calls compiled for their shapes alone (a size-1 dim, no polymorphic program)

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if record.name == "fxla.phases":
            m = self.STAGE.search(msg)
            if m:
                self.stages[m.group(1)].append(float(m.group(2)))
        elif record.name == "fxla.compile":
            if "polymorphic program #" in msg:
                self.polymorphic += 1
                if "fixed by the program" in msg:
                    self.fixed += 1
                    self.fixed_notes.append(msg.split("fixed by the program: ", 1)[1])
            elif "compiled for these shapes alone" in msg:
                self.alone += 1

    def total(self, *stages: str) -> float:
        return sum(sum(self.stages.get(s, [])) for s in stages)

    def count(self, stage: str) -> int:
        return len(self.stages.get(stage, []))

    @property
    def lowerings(self) -> int:
        """fxla lowerings of any kind (each runs stage ``fxla`` once: polymorphic or for one shape)."""
        return self.count("fxla")


@contextlib.contextmanager
def listening():
    """An :class:`FxlaLog` attached to ``fxla.phases`` (DEBUG) and ``fxla.compile`` (INFO) for the block; the
    loggers' levels and propagation are put back afterwards (nothing is printed by it)."""
    handler = FxlaLog()
    saved = []
    for name, level in (("fxla.phases", logging.DEBUG), ("fxla.compile", logging.INFO)):
        logger = logging.getLogger(name)
        saved.append((logger, logger.level, logger.propagate))
        logger.setLevel(level)
        logger.propagate = False          # (records stop here: an application's root handler prints none of them)
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger, level, propagate in saved:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate


@contextlib.contextmanager
def fresh_caches():
    """For one contender: a new, empty fxla on-disk cache folder and inductor cache folder (nothing from an earlier
    run or contender), a reset dynamo with cleared counters, and a large dynamo recompile limit (a specialising
    ``dynamic=False`` sees 10+ lengths).  Everything is put back afterwards."""
    from torch._inductor.runtime.cache_dir_utils import temporary_cache_dir
    old_dir = fxla.runtime.get_cache_dir()
    old_limit = torch._dynamo.config.recompile_limit
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    torch._dynamo.config.recompile_limit = 1024
    with tempfile.TemporaryDirectory(prefix="fxla-bench-shapes-") as tmp:
        fxla.runtime.set_cache_dir(os.path.join(tmp, "fxla"))
        try:
            with temporary_cache_dir(os.path.join(tmp, "inductor")):
                yield os.path.join(tmp, "fxla")
        finally:
            torch._dynamo.reset()
            torch._dynamo.config.recompile_limit = old_limit
            fxla.runtime.set_cache_dir(old_dir)
            gc.collect()


def _stats() -> Dict[str, int]:
    return dict(fxla.runtime.compile_stats())


def _delta(before: Dict[str, int], key: str) -> int:
    return _stats()[key] - before[key]


def _dynamo_graphs() -> int:
    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


def fxla_commit() -> str:
    """The checkout's commit (and whether tracked files differ from it): fxla changes quickly."""
    import subprocess
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "diff", "--quiet", "HEAD", "--"], timeout=10).returncode != 0
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + (" with uncommitted changes" if dirty else "")


def _transformers():
    from torchvision_cpu import import_torchvision        # (the index's torchvision is a CUDA build)
    import_torchvision()
    import transformers
    transformers.logging.set_verbosity_error()
    return transformers


# -- (a) the serving loop ----------------------------------------------------------------------------------------------
def jax_bert(p, ids, mask, heads=12, eps=1e-12):
    """benchmarks/jax_models.py's BERT (``bert_params``) with ``attention_mask`` (a large negative bias on masked
    keys, as transformers does) and BertModel's pooler (tanh of a dense layer on the first token):
    ``(last_hidden_state, pooler_output)``, the FLOPs of ``BertModel(BertConfig())``."""
    b, s = ids.shape
    x = jm._ln(p["emb_ln"], p["word"][ids] + p["pos"][:s] + p["type0"], eps)
    bias = (1.0 - mask[:, None, None, :].astype(x.dtype)) * jnp.finfo(x.dtype).min
    d = x.shape[-1]
    for lp in p["layers"]:
        q, k, v = (jm._apply_dense(lp[n], x).reshape(b, s, heads, d // heads) for n in ("q", "k", "v"))
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) * (1.0 / np.sqrt(d // heads)) + bias
        att = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v).reshape(b, s, d)
        x = jm._ln(lp["attn_ln"], x + jm._apply_dense(lp["attn_out"], att), eps)
        h = jax.nn.gelu(jm._apply_dense(lp["inter"], x), approximate=False)
        x = jm._ln(lp["out_ln"], x + jm._apply_dense(lp["out"], h), eps)
    return x, jnp.tanh(jm._apply_dense(p["pooler"], x[:, 0]))


def jax_bert_params(model) -> dict:
    params = jm.bert_params(types.SimpleNamespace(model=model))
    params["pooler"] = jm._dense(model.state_dict(), "pooler.dense")
    return params


def _hidden(y) -> torch.Tensor:
    """The last hidden state of a BertModel output (a ModelOutput, a tuple or a dict)."""
    if hasattr(y, "last_hidden_state"):
        return y.last_hidden_state
    if isinstance(y, dict):
        return y["last_hidden_state"]
    return y[0]


@dataclass
class Served:
    name: str
    cold: float = float("nan")           # the loop, compiles included
    second: float = float("nan")         # the loop again (every length seen once: what is left to compile)
    warm: float = float("nan")           # the loop a third time
    first: float = float("nan")          # the first call (compiles included)
    compiles: str = ""
    ok: Optional[bool] = None
    err: float = float("nan")
    note: str = ""
    load: str = ""


def _serve(name: str, call: Callable, inputs, want, count: Optional[Callable[[], int]] = None,
           describe: Callable[[], str] = lambda: "", as_numpy: Callable = lambda y: _hidden(y).numpy()) -> Served:
    """The loop over ``inputs`` three times (cold, second, warm); every output of the cold loop checked against
    ``want``.  ``count``: the contender's compile counter (its compiles in the cold and in the second loop are
    reported); ``describe``: the rest of the compiles cell."""
    row = Served(name, load=_load())
    outs = []
    base = count() if count else 0
    start = time.perf_counter()
    for i, (ids, mask) in enumerate(inputs):
        outs.append(call(ids, mask))
        if i == 0:
            row.first = time.perf_counter() - start
    row.cold = time.perf_counter() - start
    cold = count() - base if count else 0
    start = time.perf_counter()
    for ids, mask in inputs:
        call(ids, mask)
    row.second = time.perf_counter() - start
    again = count() - base - cold if count else 0
    start = time.perf_counter()
    for ids, mask in inputs:
        call(ids, mask)
    row.warm = time.perf_counter() - start
    late = count() - base - cold - again if count else 0
    if count:
        row.compiles = f"**{cold}**" + (f" (+{again} in the second loop)" if again else "") + \
            (f" (+{late} in the third loop)" if late else "") + describe()
    else:
        row.compiles = "—"
    if want is not None:
        results = [_close(as_numpy(y), w) for y, w in zip(outs, want)]
        row.ok, row.err = all(r[0] for r in results), max(r[1] for r in results)
    row.load += f" → {_load()}"
    return row


def bench_serving(out, quick: bool = False, inductor: bool = True, calls: Optional[int] = None) -> List[Served]:
    """(a): see the module docstring.  Returns the rows (also printed through ``out``)."""
    transformers = _transformers()
    layers = 2 if quick else 12
    calls = calls or (10 if quick else 50)
    lo, hi = (8, 128) if quick else (8, 512)
    rng = random.Random(SEED)
    lengths = [rng.randint(lo, hi) for _ in range(calls)]
    g = torch.Generator().manual_seed(SEED)
    config = transformers.BertConfig(num_hidden_layers=layers)
    inputs = [(torch.randint(0, config.vocab_size, (1, n), generator=g), torch.ones(1, n, dtype=torch.long))
              for n in lengths]
    torch.manual_seed(SEED)
    model = transformers.BertModel(config).eval()
    what = "BERT-base" if not quick else f"BERT ({layers} layers, BERT-base width)"
    out(f"\n## Changing shapes (issue #21): a serving loop of {what}\n")
    out(f"* `transformers.BertModel(BertConfig({'' if not quick else f'num_hidden_layers={layers}'}))`, random "
        f"weights, eval, `torch.no_grad()`; {calls} calls, batch 1, `input_ids` + `attention_mask` (all ones), "
        f"sequence lengths drawn uniformly from {lo}..{hi} (seed {SEED}): {len(set(lengths))} distinct, "
        f"{min(lengths)}..{max(lengths)}, mean {statistics.mean(lengths):.0f}")
    out("* **cold**: the whole loop, every compile included (a fresh process's first pass; fxla's on-disk cache "
        "and inductor's cache each a new empty folder per contender); *first call*: the cold loop's first call; "
        "*second loop*: the same calls again (every length seen once; what compiles there is counted); **warm**: "
        "the same calls a third time, total / calls")
    rows: List[Served] = []
    want = None
    with torch.no_grad():
        with fresh_caches():
            eager = _serve("torch eager", lambda ids, mask: model(input_ids=ids, attention_mask=mask), inputs,
                           None)
            # (the oracle: the same calls once more, outputs kept)
            want = [_hidden(model(input_ids=ids, attention_mask=mask)).numpy() for ids, mask in inputs]
            eager.ok, eager.err = True, 0.0
            rows.append(eager)

        with fresh_caches(), listening() as log:
            before, graphs = _stats(), _dynamo_graphs()
            compiled = torch.compile(model, backend="fxla")
            rows.append(_serve(
                'fxla: `torch.compile(model, backend="fxla")`',
                lambda ids, mask: compiled(input_ids=ids, attention_mask=mask), inputs, want,
                lambda: _stats()["compiles"],
                lambda: (f" XLA compiles; {_dynamo_graphs() - graphs} dynamo graphs, {log.lowerings} fxla lowerings "
                         f"({log.polymorphic} polymorphic"
                         + (f", {log.fixed} of them with the length fixed by the program" if log.fixed else "")
                         + f"); disk hits {_delta(before, 'disk_hits')}")))
            rows[-1].note = _fixed_note(log)
            compiled = None      # (freed before the next contender)

        with fresh_caches() as cache, listening() as log:
            seq = fxla.Dim("seq", max=512)
            dynamic = {"input_ids": {1: seq}, "attention_mask": {1: seq}}
            label = 'fxla: `fxla.compile(model, dynamic={"input_ids": {1: seq}, "attention_mask": {1: seq}})`'
            before = _stats()
            try:
                fast = fxla.compile(model, dynamic=dynamic, cache_dir=cache)
                row = _serve(label, lambda ids, mask: fast(input_ids=ids, attention_mask=mask), inputs, want,
                             lambda: _stats()["compiles"],
                             lambda: (f" XLA compiles; {log.lowerings} fxla lowerings ({fast._dynamic.lowerings} "
                                      f"polymorphic); disk hits {_delta(before, 'disk_hits')}"))
                fast = None
            except Exception as err:      # noqa: BLE001  (reported in the table: the tracer cannot take the model)
                row = Served(label, compiles="—", note=f"not supported: {_first_line(err)}", load=_load())
            rows.append(row)

        with fresh_caches(), listening() as log:
            sizes = (16, 32, 64, 128) if quick else (32, 64, 128, 256, 512)
            label = (f'fxla: `fxla.bucketed(torch.compile(model, backend="fxla"), sizes={sizes}, '
                     f'pad={{"input_ids": (1, 0), "attention_mask": (1, 0)}}, check="bucket")`')
            before, graphs = _stats(), _dynamo_graphs()
            compiled = torch.compile(model, backend="fxla")
            serve = fxla.bucketed(compiled, sizes=sizes, pad={"input_ids": (1, 0), "attention_mask": (1, 0)},
                                  check="bucket")
            try:
                row = _serve(
                    label, lambda ids, mask: serve(input_ids=ids, attention_mask=mask), inputs, want,
                    lambda: _stats()["compiles"],
                    lambda: (f" XLA compiles; {_dynamo_graphs() - graphs} dynamo graphs, {log.lowerings} fxla "
                             f"lowerings ({log.polymorphic} polymorphic); buckets used {sorted(serve.plans)} (each "
                             f"bucket's first call also runs the unpadded inputs once: its check); disk hits "
                             f"{_delta(before, 'disk_hits')}"))
            except Exception as err:      # noqa: BLE001  (reported in the table: fxla.BucketError or another failure)
                row = Served(label, compiles="—", note=f"fails: {_first_line(err)}", load=_load())
            rows.append(row)
            compiled = serve = None

        if inductor:
            with fresh_caches():
                compiled = torch.compile(model, dynamic=True)
                rows.append(_serve("torch.compile (inductor), `dynamic=True`",
                                   lambda ids, mask: compiled(input_ids=ids, attention_mask=mask), inputs, want,
                                   _dynamo_graphs, lambda: " dynamo graphs compiled by inductor"))
                compiled = None

        params = jax_bert_params(model)
        jitted = jax.jit(jax_bert)

        def call_jax(ids, mask):
            y = jitted(params, jnp.asarray(ids.numpy().astype(np.int32)), jnp.asarray(mask.numpy().astype(np.int32)))
            return jax.block_until_ready(y)

        rows.append(_serve("`jax.jit` of hand-written JAX BERT (recompiles per length)", call_jax, inputs, want,
                           jitted._cache_size, lambda: " XLA compiles (one per distinct length)",
                           as_numpy=lambda y: np.asarray(y[0])))
        params = jitted = None
    out()
    out.table(["contender", "cold: total (compiles included)", "first call", "second loop: total",
               "warm: per call", "compiles: cold loop (+ later)", "matches eager (max abs err)", "load avg"],
              [[r.name, _s(r.cold), _s(r.first), _s(r.second), _s(r.warm / calls), r.compiles,
                f"{_mark(r.ok)} ({r.err:.1e})" if r.ok is not None else "n/a", r.load] for r in rows])
    for r in rows:
        if r.note:
            out(f"\n* {r.name}: {r.note}")
    done = [r for r in rows if r.cold == r.cold]
    if done:
        best = min(done, key=lambda r: r.cold)
        out(f"\n**Fastest cold loop: {best.name}** ({_s(best.cold)}); fastest warm loop: "
            f"{min(done, key=lambda r: r.warm).name} ({_s(min(r.warm for r in done))}).")
    bad = [r for r in rows if r.ok is False]
    for r in bad:
        out(f"\n> **MISMATCH:** {r.name}'s outputs differ from eager's (max abs error {r.err:.2e}).")
    return rows


def _fixed_note(log: FxlaLog) -> str:
    if not log.fixed:
        return ""
    first = re.sub(r"\S*/site-packages/", "", log.fixed_notes[0])
    return (f"{log.fixed} of the {log.polymorphic} polymorphic lowerings had the sequence length fixed by the "
            f"program (fxla's log, the first: \"fixed by the program: {first}\"), so each new length was traced "
            f"and lowered again")


# -- (b) generate ------------------------------------------------------------------------------------------------------
class _Clock:
    """A ``generate(streamer=...)`` that notes the time of every ``put``: the prompt first, then each new token."""

    def __init__(self):
        self.times: List[float] = []

    def put(self, value) -> None:
        self.times.append(time.perf_counter())

    def end(self) -> None:
        pass


@dataclass
class Generated:
    name: str
    cold_ttft: float = float("nan")
    cold_total: float = float("nan")
    warm_ttft: float = float("nan")
    warm_token: float = float("nan")       # median time between tokens of the second generate
    warm_total: float = float("nan")
    compiles: str = ""
    xla_compiles: Optional[int] = None
    tokens_ok: Optional[bool] = None
    first_diff: str = ""
    error: str = ""
    load: str = ""
    #: fxla rows of the tiny models: (fxla's decode call alone, its XLA program alone), seconds, timed in a loop
    decode_call: Optional[tuple] = None


def _generate(model, ids, new_tokens: int, static: bool):
    clock = _Clock()
    kwargs = dict(cache_implementation="static") if static else {}
    start = time.perf_counter()
    tokens = model.generate(ids, max_new_tokens=new_tokens, do_sample=False, streamer=clock, **kwargs)
    end = time.perf_counter()
    ttft = clock.times[1] - start if len(clock.times) > 1 else float("nan")
    gaps = [b - a for a, b in zip(clock.times[1:], clock.times[2:])]
    return tokens, ttft, (statistics.median(gaps) if gaps else float("nan")), end - start


def _compare_tokens(row: Generated, got, want) -> None:
    if want is None:
        return
    row.tokens_ok = got.shape == want.shape and bool(torch.equal(got, want))
    if not row.tokens_ok and got.shape == want.shape:
        k = int((got != want).nonzero()[0, 1])
        row.first_diff = f"first differs at position {k} (token {k - PROMPT + 1} of the generated)"


def _generate_row(name: str, pristine, ids, new_tokens: int, wrap: Optional[Callable], static: bool,
                  counter: str, want) -> (Generated, Optional[torch.Tensor]):
    """One contender of (b): two greedy generates on its own copy of ``pristine`` with fresh caches, ``wrap``
    applied to ``model.forward``; ``counter``: "eager", "fxla" or "inductor" (what the compiles cell counts).
    The tokens are compared with ``want`` (eager's; ``None`` for the eager static-cache row itself, which compares
    with its own).  Returns the row and the first generate's tokens (``None`` when it failed)."""
    row = Generated(name, load=_load())
    model = copy.deepcopy(pristine)
    with fresh_caches(), listening() as log, torch.no_grad():
        before, graphs = _stats(), _dynamo_graphs()
        try:
            if wrap is not None:
                model.forward = wrap(model.forward)
            tokens, row.cold_ttft, _, row.cold_total = _generate(model, ids, new_tokens, static)
            again, row.warm_ttft, row.warm_token, row.warm_total = _generate(model, ids, new_tokens, static)
        except Exception as err:     # noqa: BLE001  (reported in the table)
            row.error = _first_line(err)
            row.load += f" → {_load()}"
            return row, None
        if counter == "fxla":
            row.xla_compiles = _delta(before, "compiles")
            row.compiles = (f"{row.xla_compiles} XLA compiles, {_dynamo_graphs() - graphs} dynamo graphs, "
                            f"{log.lowerings} fxla lowerings ({log.polymorphic} polymorphic); disk hits "
                            f"{_delta(before, 'disk_hits')}")
        elif counter == "inductor":
            row.compiles = f"{_dynamo_graphs() - graphs} dynamo graphs (inductor)"
        else:
            row.compiles = "—"
    if want is None and counter == "eager" and static:
        want = tokens
    _compare_tokens(row, tokens, want)
    if row.tokens_ok is not False and want is not None and not torch.equal(again, tokens):
        row.tokens_ok, row.first_diff = False, "the second generate's tokens differ from the first's"
    row.load += f" → {_load()}"
    del model
    gc.collect()
    return row, tokens


GENERATE_HEADER = ["contender", "cold: first token", "cold: total", "warm: first token", "warm: per token",
                   "warm: total", "compiles (both generates)", "tokens = eager's (static)", "load avg"]


def _generate_table(out, rows: List[Generated]) -> None:
    out.table(GENERATE_HEADER,
              [[r.name] + ([f"fails: {r.error}"] + [""] * 7 if r.error else
                           [_s(r.cold_ttft), _s(r.cold_total), _s(r.warm_ttft), _s(r.warm_token), _s(r.warm_total),
                            r.compiles, _mark(r.tokens_ok) + (f" ({r.first_diff})" if r.first_diff else "")])
               + [r.load] for r in rows])
    for r in rows:
        if r.tokens_ok is False:
            out(f"\n> **MISMATCH:** {r.name}: the tokens differ from eager's: {r.first_diff}.")


def bench_generate(out, quick: bool = False, inductor: bool = True) -> List[Generated]:
    """(b): see the module docstring.  Returns the rows (also printed through ``out``)."""
    transformers = _transformers()
    layers = 2 if quick else 12
    new_tokens = 16 if quick else 128
    torch.manual_seed(SEED)
    config = transformers.GPT2Config(n_layer=layers)
    pristine = transformers.GPT2LMHeadModel(config).eval()
    pristine.generation_config.eos_token_id = None       # every run generates all its tokens
    pristine.generation_config.pad_token_id = 0
    ids = torch.randint(0, config.vocab_size, (1, PROMPT), generator=torch.Generator().manual_seed(SEED))
    what = "GPT-2 small" if not quick else f"GPT-2 ({layers} layers, GPT-2 small width)"
    out(f"\n## Changing shapes (issue #21): greedy `generate()` of {new_tokens} tokens, {what}\n")
    out(f"* `GPT2LMHeadModel(GPT2Config({'' if not quick else f'n_layer={layers}'}))`, random weights, a prompt of "
        f"{PROMPT} tokens, `do_sample=False`, `eos_token_id = None`, `pad_token_id = 0`; each contender on its own "
        f"copy of the model, fresh caches (fxla on disk, inductor, dynamo)")
    out("* **cold**: the first `generate` (compiles included); **warm**: a second `generate` with the same "
        "prompt; *first token*: from the call to the first new token (a streamer notes each token's time); "
        "*per token*: the median time between two new tokens")
    rows: List[Generated] = []
    want = None

    def run(name: str, wrap: Optional[Callable], static: bool, counter: str) -> Generated:
        nonlocal want
        row, tokens = _generate_row(name, pristine, ids, new_tokens, wrap, static, counter, want)
        if want is None and counter == "eager" and static:
            want = tokens
        return row

    rows.append(run("torch eager, static cache", None, True, "eager"))
    rows.append(run('fxla: `model.forward = torch.compile(model.forward, backend="fxla")`, static cache',
                    lambda f: torch.compile(f, backend="fxla"), True, "fxla"))
    if inductor:
        rows.append(run("torch.compile (inductor): `model.forward = torch.compile(model.forward)`, static cache",
                        lambda f: torch.compile(f), True, "inductor"))
    rows.append(run("torch eager, dynamic cache (default)", None, False, "eager"))
    rows.append(run('fxla: `torch.compile(model.forward, backend="fxla")`, dynamic cache (default)',
                    lambda f: torch.compile(f, backend="fxla"), False, "fxla"))
    out()
    _generate_table(out, rows)
    done = [r for r in rows if not r.error and r.warm_token == r.warm_token]
    if done:
        best = min(done, key=lambda r: r.warm_token)
        out(f"\n**Lowest warm per-token latency: {best.name}** ({_s(best.warm_token)}); fastest cold generate: "
            f"{min(done, key=lambda r: r.cold_total).name} ({_s(min(r.cold_total for r in done))}).")
    return rows


TINY_VOCAB = 128


def _tiny_models(transformers) -> Dict[str, Callable]:
    """The issue's "tiny GPT-2 and tiny LLaMA" (tests/test_generate.py's configurations)."""
    return {
        "tiny GPT-2": lambda: transformers.GPT2LMHeadModel(transformers.GPT2Config(
            n_layer=2, n_embd=64, n_head=4, vocab_size=TINY_VOCAB, n_positions=256, bos_token_id=0,
            eos_token_id=None)),
        "tiny LLaMA": lambda: transformers.LlamaForCausalLM(transformers.LlamaConfig(
            hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, intermediate_size=128,
            vocab_size=TINY_VOCAB, bos_token_id=0, eos_token_id=None, pad_token_id=0)),
    }


def bench_generate_tiny(out, quick: bool = False, inductor: bool = True) -> Dict[str, List[Generated]]:
    """(b), the issue's tiny models: see the module docstring.  Returns {model: rows} (also printed)."""
    transformers = _transformers()
    new_tokens = 16 if quick else 128
    out(f"\n## Changing shapes (issue #21): greedy `generate()` of {new_tokens} tokens, tiny GPT-2 and tiny LLaMA, "
        f"static cache\n")
    out("* tests/test_generate.py's models: `GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=128, "
        "n_positions=256)` and `LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, "
        f"num_key_value_heads=4, intermediate_size=128, vocab_size=128)`, random weights, a prompt of {PROMPT} "
        "tokens, `do_sample=False`, `eos_token_id = None`, `pad_token_id = 0`, `cache_implementation=\"static\"`; "
        "columns as in the table above")
    result: Dict[str, List[Generated]] = {}
    table: List[Generated] = []
    for model_name, build in _tiny_models(transformers).items():
        torch.manual_seed(SEED)
        pristine = build().eval()
        pristine.generation_config.eos_token_id = None
        pristine.generation_config.pad_token_id = 0
        ids = torch.randint(0, TINY_VOCAB, (1, PROMPT), generator=torch.Generator().manual_seed(SEED))
        rows: List[Generated] = []
        eager, want = _generate_row(f"{model_name}: torch eager", pristine, ids, new_tokens, None, True, "eager",
                                    None)
        rows.append(eager)
        rows.append(_generate_row(f'{model_name}: fxla, `model.forward = torch.compile(model.forward, '
                                  f'backend="fxla")`', pristine, ids, new_tokens,
                                  lambda f: torch.compile(f, backend="fxla"), True, "fxla", want)[0])
        if inductor:
            rows.append(_generate_row(f"{model_name}: torch.compile (inductor), `model.forward = "
                                      f"torch.compile(model.forward)`", pristine, ids, new_tokens,
                                      lambda f: torch.compile(f), True, "inductor", want)[0])
        decode = _DecodeCall()
        rows.append(_generate_row(f"{model_name}: the floor: HF's generate loop and dynamo, no model computed (a "
                                  f"backend whose graphs return their first call's outputs; other tokens)",
                                  pristine, ids, new_tokens, lambda f: torch.compile(f, backend=_no_compute), True,
                                  "floor", None)[0])
        fx = next(r for r in rows if ": fxla" in r.name)
        if not fx.error:      # fxla's decode call alone: the same recipe once more, its decode graph captured
            _generate_row(model_name, pristine, ids, 2, lambda f: torch.compile(f, backend=decode.backend), True,
                          "fxla", None)
            fx.decode_call = decode.timed()
        result[model_name] = rows
        table.extend(rows)
        del pristine
        gc.collect()
    out()
    _generate_table(out, table)
    return result


def _no_compute(gm, example_inputs):
    """A dynamo backend that computes nothing: each graph runs once, then returns those outputs on every call
    (what HF's generate loop and dynamo's guards cost per token, without any model)."""
    outputs = gm(*example_inputs)
    return lambda *args: outputs


class _DecodeCall:
    """A dynamo backend that compiles through fxla and keeps the graph of most inputs (the decode step: the
    prefill graph has fewer, its cache being made inside) with its last call's inputs, to time that call alone."""

    def __init__(self):
        self.graphs: Dict[int, list] = {}

    def backend(self, gm, example_inputs):
        from fxla.backend import fxla_backend
        compiled = fxla_backend(gm, example_inputs)
        slot = self.graphs[len(example_inputs)] = [compiled, None, ()]

        def call(*args):
            # (the static cache counts its length in 0-d tensors the decode step advances in place,
            # ``cumulative_length``: their values before this call, so that a timed call can write here again)
            slot[1:] = [args, [(a, a.clone()) for a in args if isinstance(a, torch.Tensor) and a.dim() == 0]]
            return compiled(*args)
        return call

    def timed(self, calls: int = 300) -> Optional[tuple]:
        """(median seconds of the decode graph's fxla call, of its XLA program alone on the same device buffers),
        each over ``calls`` calls in a loop (the static cache is written at the same position each time)."""
        compiled, args, counters = self.graphs[max(self.graphs)] if self.graphs else (None, None, ())
        if args is None:
            return None
        outer, inner, inner_args = compiled, compiled, args
        if hasattr(compiled, "weights"):      # (fxla.backend_weights.DynamoCall: the parameters held)
            inner, inner_args = compiled.compiled, compiled._rest(args)
        if not hasattr(inner, "_entry"):
            return None
        import jax

        def again():                          # (every call writes the same position of the cache)
            for counter, start in counters:
                counter.copy_(start)
            return outer(*args)
        with torch.no_grad():
            entry = inner._entry(inner_args)
            device_args = [jax.device_put(a) if not isinstance(a, jax.Array) else a
                           for a in inner._device_args(entry, list(inner_args))]

            return (median_seconds(again, calls, warmup=20),
                    median_seconds(lambda: entry.executable(device_args, wait=True), calls, warmup=20))


# -- (c) trace + lower once vs per shape -------------------------------------------------------------------------------
@dataclass
class Lowered:
    name: str
    shapes: int = 0
    wall: float = float("nan")
    lowerings: int = 0
    polymorphic: int = 0
    stages: Dict[str, float] = field(default_factory=dict)
    compiles: int = 0
    ok: Optional[bool] = None
    error: str = ""
    note: str = ""


STAGE_GROUPS = [("trace", ("trace",)), ("prepare + fxla", ("prepare", "fxla")), ("refine", ("refine",)),
                ("stablehlo + layout", ("stablehlo", "layout")), ("compile (XLA)", ("compile",))]


def _lowered(name: str, lengths: List[int], make: Callable, call: Callable, eager: Callable) -> Lowered:
    row = Lowered(name, shapes=len(lengths))
    with fresh_caches() as cache, listening() as log, torch.no_grad():
        before = _stats()
        try:
            start = time.perf_counter()
            target = make(cache)
            outs = [call(target, n) for n in lengths]
            row.wall = time.perf_counter() - start
        except Exception as err:      # noqa: BLE001  (reported in the table)
            row.error = _first_line(err)
            return row
        row.ok = all(_close(outs[i].numpy(), eager(n).numpy())[0] for i, n in ((0, lengths[0]), (-1, lengths[-1])))
        row.lowerings, row.polymorphic = log.lowerings, log.polymorphic
        row.stages = {label: log.total(*stages) for label, stages in STAGE_GROUPS}
        row.compiles = _delta(before, "compiles")
        if log.fixed:
            row.note = _fixed_note(log)
        if log.alone:
            row.note = (row.note + "; " if row.note else "") + \
                f"{log.alone} calls compiled for their shapes alone (a dim of size 1 is never symbolic)"
    return row


def bench_lowering(out, quick: bool = False) -> List[Lowered]:
    """(c): see the module docstring.  Returns the rows (also printed through ``out``)."""
    transformers = _transformers()
    rng = random.Random(SEED + 1)
    lengths = rng.sample(range(16, 257), 10)
    layers, width = (2, 256) if quick else (4, 512)
    out(f"\n## Changing shapes (issue #21): trace + lower once vs per shape ({len(lengths)} sequence lengths)\n")
    out(f"* lengths {', '.join(map(str, lengths))}, batch 1, one call each; seconds of each fxla stage as the "
        f"`fxla.phases` log reports them, summed over the {len(lengths)} lengths (per length in brackets); "
        f"*other*: the rest of the wall time (dynamo, fxla's call path, uploads, the runs themselves)")
    torch.manual_seed(SEED)
    layer = torch.nn.TransformerEncoderLayer(d_model=width, nhead=8, dim_feedforward=4 * width, dropout=0.0,
                                             batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False).eval()
    xs = {n: torch.randn(1, n, width, generator=torch.Generator().manual_seed(n)) for n in lengths}
    enc_name = f"`nn.TransformerEncoder` ({layers} layers, d_model {width}, 8 heads)"
    torch.manual_seed(SEED)
    bert_layers = 2 if quick else 4
    bert = transformers.BertModel(transformers.BertConfig(num_hidden_layers=bert_layers)).eval()
    ids = {n: torch.randint(0, 30522, (1, n), generator=torch.Generator().manual_seed(n)) for n in lengths}
    bert_name = f"BERT ({bert_layers} layers, BERT-base width)"

    def bert_call(c, n):
        return _hidden(c(input_ids=ids[n], attention_mask=torch.ones_like(ids[n])))

    def bert_eager(n):
        return _hidden(bert(input_ids=ids[n], attention_mask=torch.ones_like(ids[n])))

    rows = [
        _lowered(f"{enc_name}: `fxla.compile(model)` (per shape)", lengths,
                 lambda cache: fxla.compile(encoder, cache_dir=cache), lambda c, n: c(xs[n]), lambda n: encoder(xs[n])),
        _lowered(f'{enc_name}: `fxla.compile(model, dynamic={{"src": {{1: fxla.Dim("seq", max=512)}}}})`', lengths,
                 lambda cache: fxla.compile(encoder, dynamic={"src": {1: fxla.Dim("seq", max=512)}}, cache_dir=cache),
                 lambda c, n: c(xs[n]), lambda n: encoder(xs[n])),
        _lowered(f"{enc_name}: `fxla.compile(model, dynamic=True)`", lengths,
                 lambda cache: fxla.compile(encoder, dynamic=True, cache_dir=cache), lambda c, n: c(xs[n]),
                 lambda n: encoder(xs[n])),
        _lowered(f'{bert_name}: `torch.compile(model, backend="fxla", dynamic=False)` (per shape)', lengths,
                 lambda cache: torch.compile(bert, backend="fxla", dynamic=False), bert_call, bert_eager),
        _lowered(f'{bert_name}: `torch.compile(model, backend="fxla")` (automatic dynamic)', lengths,
                 lambda cache: torch.compile(bert, backend="fxla"), bert_call, bert_eager),
        _lowered(f'{bert_name}: `torch.compile(model, backend="fxla", dynamic=True)`', lengths,
                 lambda cache: torch.compile(bert, backend="fxla", dynamic=True), bert_call, bert_eager),
        _lowered(f"{bert_name}: `fxla.compile(model, concrete_shapes=True)` (per shape)", lengths,
                 lambda cache: fxla.compile(bert, concrete_shapes=True, cache_dir=cache), bert_call, bert_eager),
        _lowered(f"{bert_name}: `fxla.compile(model, concrete_shapes=True, dynamic={{...: {{1: seq}}}})`", lengths,
                 lambda cache: fxla.compile(bert, concrete_shapes=True, cache_dir=cache, dynamic={
                     "input_ids": {1: fxla.Dim("seq", max=512)}, "attention_mask": {1: fxla.Dim("seq", max=512)}}),
                 bert_call, bert_eager),
    ]
    out()
    header = ["route", "lowerings (polymorphic)"] + [label for label, _ in STAGE_GROUPS] + \
        ["other", "total", "XLA compiles", "matches eager"]
    table = []
    for r in rows:
        if r.error:
            table.append([r.name, f"fails: {r.error}"] + [""] * (len(header) - 2))
            continue
        cells = [f"{_s(r.stages[label])} ({_s(r.stages[label] / r.shapes)})" for label, _ in STAGE_GROUPS]
        other = r.wall - sum(r.stages.values())
        table.append([r.name, f"{r.lowerings} ({r.polymorphic})"] + cells +
                     [f"{_s(other)} ({_s(other / r.shapes)})", f"{_s(r.wall)} ({_s(r.wall / r.shapes)})",
                      str(r.compiles), _mark(r.ok)])
    out.table(header, table)
    for r in rows:
        if r.note:
            out(f"\n* {r.name}: {r.note}")
    for group in (rows[:3], rows[3:]):
        done = [r for r in group if not r.error]
        if done:
            best = min(done, key=lambda r: r.stages["trace"] + r.stages["prepare + fxla"])
            fastest = min(done, key=lambda r: r.wall)
            out(f"\n**Least trace + lower time: {best.name}** "
                f"({_s(best.stages['trace'] + best.stages['prepare + fxla'])}); least total: {fastest.name} "
                f"({_s(fastest.wall)}).")
    return rows


# -- targets and the section -------------------------------------------------------------------------------------------
def report_targets(out, served: List[Served], generated: List[Generated], was_busy: bool, quick: bool,
                   tiny: Optional[Dict[str, List[Generated]]] = None) -> None:
    lines = []
    if served:
        fx = [r for r in served if r.name.startswith("fxla") and r.cold == r.cold and r.ok is not False]
        others = {"inductor": [r for r in served if "inductor" in r.name and r.cold == r.cold],
                  "jax.jit": [r for r in served if "jax.jit" in r.name and r.cold == r.cold]}
        if fx:
            best = min(fx, key=lambda r: r.cold)
            parts, met = [], []
            for name, rs in others.items():
                if rs:
                    parts.append(f"{name} {_s(rs[0].cold)} ({best.cold / rs[0].cold:.2f}×)")
                    met.append(best.cold < rs[0].cold)
                else:
                    parts.append(f"{name} not measured")
            lines.append(["(a) serving loop: fxla's total (cold, compiles included) below inductor's and jax.jit's",
                          f"fxla {_s(best.cold)} ({best.name.split(': ', 1)[-1]}) vs " + ", ".join(parts),
                          _mark(all(met)) if len(met) == 2 else (_mark(all(met)) + " (partly measured)"
                                                                 if met else "n/a")])
    if generated:
        by = {("eager" if r.name.startswith("torch eager, static") else "fxla" if r.name.startswith("fxla") and
               "static" in r.name else "inductor" if "inductor" in r.name else r.name): r for r in generated}
        fx = by.get("fxla")
        if fx is not None and not fx.error:
            parts, met = [], []
            for name in ("eager", "inductor"):
                r = by.get(name)
                if r is not None and not r.error:
                    parts.append(f"{name} {_s(r.warm_token)}")
                    met.append(fx.warm_token < r.warm_token)
                else:
                    parts.append(f"{name} not measured")
            ok = all(met) and fx.tokens_ok is not False
            lines.append(["(b) generate, static cache: fxla's per-token latency (warm) below eager's and inductor's",
                          f"fxla {_s(fx.warm_token)} vs " + ", ".join(parts)
                          + ("" if fx.tokens_ok is not False else "; tokens differ from eager's"),
                          _mark(ok) if len(met) == 2 else (_mark(ok) + " (partly measured)" if met else "n/a")])
            lines.append(["(b) generate, static cache: at most 3 XLA compiles", f"{fx.xla_compiles}",
                          _mark(fx.xla_compiles is not None and fx.xla_compiles <= 3)])
    if tiny:
        parts, met = [], []
        for model_name, rows in tiny.items():
            eager = next((r for r in rows if r.name.endswith("torch eager")), None)
            fx = next((r for r in rows if ": fxla" in r.name), None)
            if fx is None or fx.error or eager is None or eager.error:
                parts.append(f"{model_name}: " + (f"fxla fails ({fx.error})" if fx is not None and fx.error else
                                                  "not measured"))
                met.append(False)
                continue
            ratio = fx.warm_token / eager.warm_token
            parts.append(f"{model_name}: fxla {_s(fx.warm_token)} vs eager {_s(eager.warm_token)} ({ratio:.2f}×), "
                         f"{fx.xla_compiles} XLA compiles, tokens = eager's {_mark(fx.tokens_ok)}")
            floor = next((r for r in rows if ": the floor" in r.name and not r.error), None)
            if floor is not None:
                parts[-1] += (f"; the budget, 0.5× eager's: {_s(eager.warm_token / 2)}, of which HF's loop and "
                              f"dynamo take {_s(floor.warm_token)} with no model computed")
                if fx.decode_call:
                    parts[-1] += (f", leaving {_s(eager.warm_token / 2 - floor.warm_token)} for a decode step "
                                  f"whose fxla call alone takes {_s(fx.decode_call[0])} in a loop (its XLA "
                                  f"program {_s(fx.decode_call[1])})")
            met.append(ratio < 0.5 and fx.xla_compiles is not None and fx.xla_compiles <= 3
                       and fx.tokens_ok is True)
        lines.append(["(b) tiny GPT-2 / tiny LLaMA: fxla warm per-token < 0.5× eager's, at most 3 compiles "
                      "(and eager's tokens)", "; ".join(parts), _mark(all(met)) if met else "n/a"])
    if lines:
        out("\n## Issue #21 targets, changing shapes (measured in this run)\n")
        if quick:
            out("> **--quick**: 2-layer models and short loops, not the sizes the targets are set for.\n")
        if was_busy:
            out("> **Note:** the machine was busy (load average above the core count) during this run: torch's "
                "timings degrade more than XLA's under oversubscription.\n")
        out.table(["target", "measured", "met"], lines)


PARTS = ("serving", "generate", "tiny", "lowering")


def bench_shapes(out, quick: bool = False, inductor: bool = True, skip=(), was_busy: bool = False) -> None:
    """The whole section (benchmarks/run.py's "shapes"): (a), (b), (c) and the targets, through ``out``."""
    started = time.perf_counter()
    load = _load()
    out(f"\n*Changing shapes (benchmarks/shapes.py): fxla at commit {fxla_commit()}; every contender with fresh "
        f"caches (fxla's on-disk cache, inductor's, dynamo); load average {load} at the start.*")
    served = bench_serving(out, quick=quick, inductor=inductor) if "serving" not in skip else []
    was_busy = was_busy or _busy()
    generated = bench_generate(out, quick=quick, inductor=inductor) if "generate" not in skip else []
    was_busy = was_busy or _busy()
    tiny = bench_generate_tiny(out, quick=quick, inductor=inductor) if "tiny" not in skip else {}
    was_busy = was_busy or _busy()
    if "lowering" not in skip:
        bench_lowering(out, quick=quick)
    report_targets(out, served, generated, was_busy or _busy(), quick, tiny)
    out(f"\nShapes section: {time.perf_counter() - started:.0f} s; load average (1/5/15 min) {load} at the start, "
        f"{_load()} at the end ({os.cpu_count()} cores).")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--quick", action="store_true", help="2-layer models, 10 calls of lengths 8..128, 16 tokens")
    parser.add_argument("--no-inductor", action="store_true", help="skip torch.compile's inductor (slow to compile)")
    parser.add_argument("--skip", default="", help=f"comma-separated parts to skip: {','.join(PARTS)}")
    args = parser.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    if skip - set(PARTS):
        parser.error(f"unknown part(s) {sorted(skip - set(PARTS))}; choose from {','.join(PARTS)}")
    torch.set_num_threads(os.cpu_count())
    warnings.filterwarnings("ignore")
    out = Report()
    transformers = _transformers()
    command = " ".join(["benchmarks/shapes.py"] + list(argv if argv is not None else sys.argv[1:]))
    out(f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, `{command}`, {os.cpu_count()} CPU "
        f"cores, torch {torch.__version__} ({torch.get_num_threads()} threads), jax {jax.__version__}, transformers "
        f"{transformers.__version__}; fxla device {fxla.runtime.resolve_device()}")
    bench_shapes(out, quick=args.quick, inductor=not args.no_inductor, skip=skip)
    return 0


if __name__ == "__main__":
    sys.exit(main())
