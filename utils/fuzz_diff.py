#!/usr/bin/env python3
"""Differential fuzzer: random small torch programs, run eagerly and through ``fxla.compile``, compared.

    .venv/bin/python utils/fuzz_diff.py --seed 0 --seconds 60      # or --iterations 200; -v prints each program

Each program is Python source (``def f(a, b): ...``) of 1-6 statements drawn from a curated set of lowered ops
(elementwise, reductions, shape/view ops, indexing, matmul, in-place ops and mutation through views), over
inputs of every dtype (bool, int32/int64, float16/bfloat16/float32/float64), with size-0/size-1 dims, 0-d
scalars, NaN/inf values and non-contiguous layouts (transposed, step-sliced, expanded, storage offset).
Statements are chosen by running them eagerly while the program grows, so most programs are valid torch.

For every program: eager on clones of the inputs, then the compiled function's first call and a second call
(the fast call path) with fresh inputs of the same signature.  Outputs are compared by shape, dtype and
value (exact for ints/bools; dtype-aware tolerances for floats; NaN positions equal), and so are the inputs
after the call (in-place effects).  Outcomes:

* **finding**: a mismatch, an exception from fxla that is not an :class:`fxla.errors.FxlaError` where eager
  succeeds, fxla succeeding where eager raises, or a case running past the time limit;
* **refusal** (counted, not a finding): fxla raising an ``FxlaError`` where eager succeeds;
* **known**: a finding matching :data:`KNOWN` (bugs of issue #16 being fixed; the list is to be emptied).

Findings are minimized (statements dropped, layouts made contiguous, special values removed while the same
kind of failure remains) and printed as self-contained reproducers; the exit status is 1 if any remain.
"""
from __future__ import annotations

import argparse
import dataclasses
import linecache
import math
import random
import re
import signal
import sys
import time
import warnings
from typing import Callable, List, Optional, Sequence, Tuple

import torch

FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
DTYPES = (torch.bool, torch.int32, torch.int64) + FLOATS
LAYOUTS = ("contiguous", "transposed", "strided", "expanded", "offset")
CASE_SECONDS = 60

# ---------------------------------------------------------------------------------------------------------
# Op templates: `{x}` / `{y}` are variables of the program, `{d}` a dim of `{x}`; a template that assigns
# nothing (in-place) is written as a statement and `{x}` is treated as the statement's result.

UNARY = [
    "-{x}", "torch.abs({x})", "torch.exp({x})", "torch.log({x})", "torch.sqrt({x})", "torch.sin({x})",
    "torch.tanh({x})", "torch.sigmoid({x})", "torch.relu({x})", "torch.floor({x})", "torch.ceil({x})",
    "torch.round({x})", "torch.sign({x})", "torch.logical_not({x})", "torch.bitwise_not({x})",
    "torch.reciprocal({x})", "{x}.float()", "{x}.to(torch.int64)", "{x}.to(torch.bfloat16)",
    "{x}.to(torch.float16)", "{x}.bool()", "torch.clamp({x}, -1, 1)", "{x} * 2", "{x} + 1.5", "{x} / 3",
    "{x} // 2", "{x} % 3", "{x} ** 2", "torch.isnan({x})", "torch.nan_to_num({x})", "{x} > 0",
    "torch.where({x} > 0, {x}, 0)", "torch.square({x})", "torch.rsqrt({x})", "torch.erf({x})",
]
BINARY = [
    "{x} + {y}", "{x} - {y}", "{x} * {y}", "{x} / {y}", "{x} // {y}", "{x} % {y}", "{x} ** {y}",
    "torch.maximum({x}, {y})", "torch.minimum({x}, {y})", "torch.where({x} > 0, {x}, {y})", "{x} == {y}",
    "{x} < {y}", "{x} & {y}", "{x} | {y}", "torch.add({x}, {y}, alpha=2)", "torch.sub({x}, {y}, alpha=2)",
    "torch.atan2({x}, {y})", "{x} @ {y}", "torch.matmul({x}, {y})", "torch.mm({x}, {y})",
    "torch.bmm({x}, {y})", "torch.cat([{x}, {y}], {d})", "torch.stack([{x}, {y}])",
    "torch.masked_fill({x}, {y} > 0, 1)", "{x}.copy_({y})", "{x}.add_({y})", "{x}.mul_({y})",
    "{x}[0] = {y}", "torch.lerp({x}, {y}, 0.5)",
]
REDUCE = [
    "{x}.sum()", "{x}.sum({d})", "{x}.sum({d}, keepdim=True)", "{x}.mean({d})", "{x}.amax({d})",
    "{x}.amin({d})", "{x}.prod({d})", "{x}.argmax({d})", "{x}.argmin()", "{x}.any({d})", "{x}.all()",
    "torch.cumsum({x}, {d})", "torch.cumprod({x}, {d})", "torch.logsumexp({x}, {d})",
    "torch.softmax({x}, {d})", "{x}.var({d})", "{x}.std()", "{x}.max({d}).values", "{x}.min({d}).indices",
    "{x}.max()", "torch.norm({x})",
]
SHAPE = [
    "{x}.reshape(-1)", "{x}.view(-1)", "{x}.flatten()", "{x}.transpose(0, -1)", "{x}.unsqueeze(0)",
    "{x}.squeeze()", "{x}.t()", "{x}[1:]", "{x}[::2]", "{x}[..., 0]", "{x}[-1]", "{x}.narrow({d}, 0, 1)",
    "{x}.expand(2, {shape})", "torch.broadcast_to({x}, (3, {shape}))", "{x}.chunk(2)[0]",
    "{x}.split(1)[0]", "{x}.unbind(0)[0]", "{x}.contiguous()", "torch.flip({x}, [{d}])",
    "torch.roll({x}, 1, {d})", "{x}.repeat(2, {ones})", "torch.movedim({x}, 0, -1)",
    "{x}.permute({perm})", "{x}.clone()", "{x}.view({shape})", "{x}.mT",
]
INDEX = [
    "{x}.index_select({d}, torch.tensor([0, 0]))", "torch.gather({x}, {d}, torch.zeros_like({x}, "
    "dtype=torch.int64))", "{x}[torch.tensor([0, -1])]", "{x}[{x} > 0]", "{x}[:, 0]", "{x}[None]",
    "torch.where({x} != 0)[0]", "{x}.masked_fill({x} > 0, 7)", "torch.tril({x})", "torch.topk({x}, 1).values",
    "torch.sort({x}, {d}).values", "{x}.flip(0)[0]",
]
INPLACE = [
    "{x}.add_(1)", "{x}.mul_(2)", "{x}.clamp_(-1, 1)", "{x}.zero_()", "{x}.fill_(3)", "{x}[0] = 1",
    "{x}.relu_()", "{x}.masked_fill_({x} > 0, 0)", "{x}.neg_()", "{x}[..., ::2] = 5", "{x}.sub_(1)",
    "{x}.div_(2)", "{x}.unsqueeze_(0)", "{x}.t_()", "{x}.exp_()",
]
# A view, then a mutation through it; the base is what the statement yields.
VIEW_MUTATE = [
    "{x}[0].add_(1)", "{x}.view(-1)[0:1].fill_(2)", "{x}.transpose(0, -1).mul_(3)", "{x}[::2].zero_()",
    "{x}.chunk(2)[0].add_(1)", "{x}.split(1)[-1].mul_(2)", "{x}.unbind(0)[0].fill_(4)",
    "{x}.narrow(0, 0, 1).neg_()", "{x}.unsqueeze(0)[0].sub_(1)", "{x}[1:][0:1].add_(5)",
    "torch.broadcast_to({x}, (2, {shape}))[0].add_(1)", "{x}.diagonal().fill_(9)",
]
GROUPS = [(UNARY, 4), (BINARY, 4), (REDUCE, 3), (SHAPE, 3), (INDEX, 2), (INPLACE, 2), (VIEW_MUTATE, 2)]
ASSIGNMENT = re.compile(r"^[^=]*\]\s*=\s[^=]")

# ---------------------------------------------------------------------------------------------------------
# Known bugs (issue #16, being fixed elsewhere).  Each entry: (label, predicate(case, finding)).  A finding
# matching one is counted as known, not reported.  EMPTY THIS LIST as the bugs are fixed.


def _src(case) -> str:
    return "\n".join(case.body)


def _has_inplace(case) -> bool:
    return bool(re.search(r"\w_\(|\]\s*=\s[^=]|\.copy_\(", _src(case)))


def _has_low_float(case) -> bool:
    return any(spec.dtype in (torch.float16, torch.bfloat16) for spec in case.inputs) or \
        bool(re.search(r"bfloat16|float16", _src(case)))


def _has_negative_zero(case) -> bool:
    return any(isinstance(v, float) and v == 0 and math.copysign(1.0, v) < 0
               for values in (case.values, case.values2) for vs in values for v in vs)


def _has_zero_size(case) -> bool:
    return any(0 in spec.shape for spec in case.inputs)


def _dead_error(case) -> bool:
    """Eager raises in a statement whose result nothing uses (fxla drops dead ops, so it cannot raise)."""
    env = {f"a{i}": t for i, t in enumerate(case.make_inputs())}
    for i, stmt in enumerate(case.body):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(stmt, {"torch": torch}, env)  # noqa: S102 (source generated here)
        except Exception:                                  # noqa: BLE001
            target = re.match(r"(v\d+) = ", stmt)
            later = "\n".join(case.body[i + 1:] + case.outputs)
            return bool(target) and not re.search(rf"\b{target.group(1)}\b", later)
    return False


KNOWN: List[Tuple[str, Callable]] = [
    # Differences fxla documents (docs/ops.md, Numerics): torch's own CPU result is implementation-defined there.
    ("DOCUMENTED: float NaN/inf/out-of-range cast to an integer dtype (torch: C++ undefined behaviour, INT_MIN "
     "on this CPU; fxla saturates, NaN -> 0)",
     lambda c, f: f.kind == "mismatch" and any(spec.special for spec in c.inputs)
     and bool(re.search(r"to\(torch\.int|copy_|\.long\(|\.int\(", _src(c)))),
    ("DOCUMENTED: integer division by zero (torch raises; a compiled program does not inspect values)",
     lambda c, f: f.kind == "missing-error" and "ZeroDivisionError" in f.detail),
    ("DOCUMENTED: integer overflow in ** (C++ undefined behaviour in torch)",
     lambda c, f: f.kind == "mismatch" and "**" in _src(c) and not any(spec.dtype.is_floating_point
                                                                          for spec in c.inputs)),
    ("DOCUMENTED: the sign of a zero from relu/clamp/max/min (XLA's max(-0.0, 0.0) may be +0.0)",
     lambda c, f: f.kind == "mismatch" and _has_negative_zero(c)
     and bool(re.search(r"relu|clamp|max|min", _src(c)))),
    ("DOCUMENTED: bool / bool 0 / 0 (torch's own CPU result is nan or 0 depending on the kernel path)",
     lambda c, f: f.kind == "mismatch" and "/" in _src(c) and any(spec.dtype == torch.bool for spec in c.inputs)),
    # Open (reported on issue #16): eager raises in an op whose result is unused; fxla drops the dead op.
    ("OPEN: eager raises in an op whose result is unused; fxla drops the dead op and returns",
     lambda c, f: f.kind == "missing-error" and _dead_error(c)),
]

# ---------------------------------------------------------------------------------------------------------
# Inputs


@dataclasses.dataclass
class InputSpec:
    shape: Tuple[int, ...]
    dtype: torch.dtype
    layout: str = "contiguous"
    special: bool = False           # NaN/inf among the values (floats)


def _values(spec: InputSpec, rng: random.Random) -> list:
    n = max(1, math.prod(spec.shape), math.prod(spec.shape[1:]))    # the expanded layout's base too
    if spec.dtype == torch.bool:
        return [rng.random() < 0.5 for _ in range(n)]
    if not spec.dtype.is_floating_point:
        return [rng.randint(-5, 5) for _ in range(n)]
    vals = [round(rng.uniform(-3, 3), 2) for _ in range(n)]
    if spec.special:
        for _ in range(max(1, n // 4)):
            vals[rng.randrange(n)] = rng.choice([math.nan, math.inf, -math.inf, 0.0, -0.0])
    return vals


def _literal(v) -> str:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return repr(v)


def input_source(spec: InputSpec, values: list) -> str:
    """Python source building the input (``nan``/``inf`` from ``math``): the layout applied to a base."""
    dt = str(spec.dtype)
    shape = spec.shape
    data = "[" + ", ".join(_literal(v) for v in values) + "]"
    layout = spec.layout if len(shape) >= 1 else "contiguous"
    if layout == "transposed" and len(shape) < 2:
        layout = "contiguous"
    numel = math.prod(shape)
    if layout == "transposed":
        base = shape[:-2] + (shape[-1], shape[-2])
        return f"torch.tensor({data}, dtype={dt})[:{numel}].reshape({base}).transpose(-1, -2)"
    if layout == "strided":    # every other element of a base twice as long in dim 0
        base = (2 * shape[0],) + shape[1:]
        return (f"torch.tensor({data} * 2, dtype={dt})[:{2 * numel}].reshape({base})[::2]"
                if numel else f"torch.zeros({base}, dtype={dt})[::2]")
    if layout == "expanded":   # dim 0 broadcast from size 1
        base = (1,) + shape[1:]
        n0 = math.prod(base)
        return f"torch.tensor({data}, dtype={dt})[:{n0}].reshape({base}).expand({shape})"
    if layout == "offset":     # storage offset 1
        return f"torch.tensor([0] + {data}, dtype={dt})[1:{numel + 1}].reshape({shape})"
    return f"torch.tensor({data}, dtype={dt})[:{numel}].reshape({shape})"


def _build(src: str) -> torch.Tensor:
    return eval(src, {"torch": torch, "nan": math.nan, "inf": math.inf})  # noqa: S307 (our own source)


def random_spec(rng: random.Random) -> InputSpec:
    rank = rng.choice([0, 1, 2, 2, 3, 3])
    shape = tuple(rng.choice([0, 1, 2, 3, 3, 4]) if rng.random() < 0.15 else rng.choice([1, 2, 3, 4])
                  for _ in range(rank))
    dtype = rng.choice(DTYPES + (torch.float32,) * 3 + (torch.int64,))
    return InputSpec(shape, dtype, rng.choice(LAYOUTS) if rank else "contiguous",
                     dtype.is_floating_point and rng.random() < 0.3)


# ---------------------------------------------------------------------------------------------------------
# Programs


@dataclasses.dataclass
class Case:
    inputs: List[InputSpec]
    body: List[str]                  # statements of f
    outputs: List[str]               # variables returned
    values: List[list]               # first-call input values
    values2: List[list]              # second-call input values

    def function_source(self) -> str:
        args = ", ".join(f"a{i}" for i in range(len(self.inputs)))
        lines = [f"def f({args}):"] + [f"    {s}" for s in self.body]
        lines.append(f"    return ({', '.join(self.outputs)},)")
        return "\n".join(lines) + "\n"

    def make_inputs(self, second=False) -> List[torch.Tensor]:
        vals = self.values2 if second else self.values
        return [_build(input_source(spec, v)) for spec, v in zip(self.inputs, vals)]

    def reproducer(self, finding) -> str:
        inputs1 = ",\n    ".join(input_source(s, v) for s, v in zip(self.inputs, self.values))
        inputs2 = ",\n    ".join(input_source(s, v) for s, v in zip(self.inputs, self.values2))
        detail = finding.detail.replace("\n", "\n# ")
        return (f"# fxla fuzz_diff finding ({finding.kind}): {detail}\n"
                "import torch, fxla\nfrom math import nan, inf\n\n"
                f"{self.function_source()}\n"
                f"def inputs():\n    return [\n    {inputs1}]\n\n"
                f"def inputs2():\n    return [\n    {inputs2}]\n\n"
                "eager_in, fx_in = inputs(), inputs()\n"
                "print('eager:', f(*eager_in), eager_in)\n"
                "fast = fxla.compile(f)\n"
                "print('fxla: ', fast(*fx_in), fx_in)\n"
                "eager_in, fx_in = inputs2(), inputs2()\n"
                "print('eager (2nd):', f(*eager_in), eager_in)\n"
                "print('fxla (2nd): ', fast(*fx_in), fx_in)\n")


_COUNTER = [0]


def compile_source(source: str) -> Callable:
    """Define ``f`` from source under a fake file name that ``linecache`` knows (so locations resolve)."""
    _COUNTER[0] += 1
    name = f"<fuzz_diff_{_COUNTER[0]}>"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    namespace = {"torch": torch}
    exec(compile(source, name, "exec"), namespace)  # noqa: S102 (source generated here)
    return namespace["f"]


def _fill(template: str, x: str, y: str, xval) -> str:
    """The statement: a template with concrete dims and sizes (symbolic shapes in Python are not the point)."""
    d, shape = 0, tuple(xval.shape)
    if xval.dim():
        d = random.choice(range(-xval.dim(), xval.dim()))
    return template.format(x=x, y=y, d=d, shape=", ".join(map(str, shape)),
                           ones=", ".join("1" * max(0, len(shape) - 1)),
                           perm=", ".join(str(i) for i in reversed(range(len(shape)))))


def generate(rng: random.Random, groups=GROUPS) -> Case:
    """A random program whose statements run eagerly (an invalid one is kept now and then)."""
    specs = [random_spec(rng) for _ in range(rng.choice([1, 1, 2, 2, 3]))]
    if len(specs) > 1 and rng.random() < 0.5:           # same shapes make binary ops valid more often
        for s in specs[1:]:
            s.shape = specs[0].shape
    values = [_values(s, rng) for s in specs]
    values2 = [_values(s, rng) for s in specs]
    env = {f"a{i}": _build(input_source(s, v)) for i, (s, v) in enumerate(zip(specs, values))}
    names = list(env)
    body: List[str] = []
    groups = [g for g, w in groups for _ in range(w)]
    for _ in range(rng.randint(1, 6)):
        for _attempt in range(12):
            template = rng.choice(rng.choice(groups))
            x, y = rng.choice(names), rng.choice(names)
            random.seed(rng.random())
            stmt_expr = _fill(template, x, y, env[x])
            inplace_stmt = bool(ASSIGNMENT.match(stmt_expr)) or template in VIEW_MUTATE
            target = x if inplace_stmt else f"v{len(body)}"
            stmt = stmt_expr if inplace_stmt else f"{target} = {stmt_expr}"
            trial = dict(env)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    exec(stmt, {"torch": torch}, trial)  # noqa: S102
            except Exception:
                if rng.random() < 0.05:                  # keep a few programs eager rejects
                    body.append(stmt)
                    return _finish(specs, body, [target if target in env else names[-1]], values, values2)
                continue
            if not isinstance(trial.get(target), torch.Tensor):
                continue
            env = trial
            if target not in names:
                names.append(target)
            body.append(stmt)
            break
    outputs = [n for n in names[-2:] if not n.startswith("a")] or [names[-1]]
    return _finish(specs, body, outputs, values, values2)


def _finish(specs, body, outputs, values, values2) -> Case:
    return Case(specs, body, outputs, values, values2)


# ---------------------------------------------------------------------------------------------------------
# Running and comparing


@dataclasses.dataclass
class Finding:
    kind: str       # mismatch | crash | missing-error | timeout
    detail: str


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _tolerance(dtype) -> Tuple[float, float]:
    return {torch.float16: (1e-2, 1e-2), torch.bfloat16: (3e-2, 3e-2), torch.float32: (1e-4, 1e-5),
            torch.float64: (1e-7, 1e-9)}.get(dtype, (0.0, 0.0))


def compare(what: str, expected, actual) -> Optional[str]:
    """None if ``actual`` matches ``expected`` (tensors, or tuples of them), else why not."""
    if isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)) or len(actual) != len(expected):
            return f"{what}: expected {len(expected)} values, got {type(actual).__name__}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            why = compare(f"{what}[{i}]", e, a)
            if why:
                return why
        return None
    if not isinstance(expected, torch.Tensor):
        return None if expected == actual else f"{what}: expected {expected!r}, got {actual!r}"
    if not isinstance(actual, torch.Tensor):
        return f"{what}: expected a tensor, got {type(actual).__name__}"
    if expected.dtype != actual.dtype:
        return f"{what}: dtype {actual.dtype}, eager {expected.dtype}"
    if expected.shape != actual.shape:
        return f"{what}: shape {tuple(actual.shape)}, eager {tuple(expected.shape)}"
    e, a = expected.detach().cpu(), actual.detach().cpu()
    if not e.dtype.is_floating_point:
        if not torch.equal(e, a):
            return f"{what}: values differ\n  eager {e.tolist()}\n  fxla  {a.tolist()}"
        return None
    if not torch.equal(e.isnan(), a.isnan()):
        return f"{what}: NaN positions differ\n  eager {e.tolist()}\n  fxla  {a.tolist()}"
    rtol, atol = _tolerance(e.dtype)
    e64, a64 = e.double().nan_to_num(0.0), a.double().nan_to_num(0.0)
    finite = e64.isfinite()
    if not torch.equal(e64[~finite], a64[~finite]) or \
            not torch.allclose(e64[finite], a64[finite], rtol=rtol, atol=atol):
        return f"{what}: values differ ({e.dtype})\n  eager {e.tolist()}\n  fxla  {a.tolist()}"
    return None


def _eager(fn, inputs):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*inputs), None
    except Exception as exc:                              # noqa: BLE001 (eager's refusal is data here)
        return None, exc


def run_case(case: Case, compile_fn=None) -> Tuple[str, Optional[Finding]]:
    """Outcome of one program: ('ok' | 'refused' | 'eager-error' | 'finding', finding)."""
    import fxla
    from fxla.errors import FxlaError
    compile_fn = compile_fn or fxla.compile
    fn = compile_source(case.function_source())
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_SECONDS)
    try:
        fast = compile_fn(fn)
        for call in (1, 2):
            eager_in = case.make_inputs(second=call == 2)
            fx_in = case.make_inputs(second=call == 2)
            expected, eager_exc = _eager(fn, eager_in)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    actual = fast(*fx_in)
            except FxlaError as exc:
                if eager_exc is not None:
                    return "eager-error", None
                return "refused", Finding("refusal", f"call {call}: {type(exc).__name__}: {_first(exc)}")
            except _Timeout:
                raise
            except Exception as exc:                       # noqa: BLE001
                if eager_exc is not None:
                    return "eager-error", None
                return "finding", Finding("crash", f"call {call}: {type(exc).__name__}: {_first(exc)}")
            if eager_exc is not None:
                return "finding", Finding("missing-error", f"call {call}: eager raised "
                                          f"{type(eager_exc).__name__}: {_first(eager_exc)}; fxla returned")
            why = compare(f"call {call} output", expected, actual) or \
                compare(f"call {call} inputs after the call", eager_in, fx_in)
            if why:
                return "finding", Finding("mismatch", why)
        return "ok", None
    except _Timeout:
        return "finding", Finding("timeout", f"ran past {CASE_SECONDS} s")
    except FxlaError as exc:
        return "refused", Finding("refusal", f"{type(exc).__name__}: {_first(exc)}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _first(exc) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""


def known_label(case: Case, finding: Finding) -> Optional[str]:
    for label, matches in KNOWN:
        if matches(case, finding):
            return label
    return None


def minimize(case: Case, finding: Finding, compile_fn=None) -> Tuple[Case, Finding]:
    """Drop statements, make layouts contiguous, drop NaN/inf while the same kind of finding remains."""
    def still(candidate):
        try:
            outcome, f = run_case(candidate, compile_fn)
        except Exception:                                  # noqa: BLE001
            return None
        return f if outcome == "finding" and f.kind == finding.kind else None

    changed = True
    while changed:
        changed = False
        for i in range(len(case.body)):
            body = case.body[:i] + case.body[i + 1:]
            if not body:
                continue
            defined = {m.group(1) for m in (re.match(r"(v\d+) = ", s) for s in body) if m}
            outputs = [o for o in case.outputs if o in defined or o.startswith("a")]
            if not outputs:
                last = re.match(r"(v\d+) = ", body[-1])
                outputs = [last.group(1)] if last else ["a0"]
            cand = dataclasses.replace(case, body=body, outputs=outputs)
            f = still(cand)
            if f:
                case, finding, changed = cand, f, True
                break
    for i, spec in enumerate(case.inputs):
        for simpler in (dataclasses.replace(spec, layout="contiguous"), dataclasses.replace(spec, special=False)):
            if simpler == spec:
                continue
            inputs = list(case.inputs)
            inputs[i] = simpler
            values = list(case.values)
            values2 = list(case.values2)
            if simpler.special != spec.special:
                values[i] = [0.5 if isinstance(v, float) and not math.isfinite(v) else v for v in values[i]]
                values2[i] = [0.5 if isinstance(v, float) and not math.isfinite(v) else v for v in values2[i]]
            cand = dataclasses.replace(case, inputs=inputs, values=values, values2=values2)
            f = still(cand)
            if f:
                case, finding, spec = cand, f, simpler
    return case, finding


@dataclasses.dataclass
class Report:
    programs: int = 0
    ok: int = 0
    eager_errors: int = 0
    refusals: List[str] = dataclasses.field(default_factory=list)
    known: dict = dataclasses.field(default_factory=dict)
    findings: List[Tuple[Case, Finding]] = dataclasses.field(default_factory=list)

    def summary(self) -> str:
        return (f"{self.programs} programs: {self.ok} matched eager, {self.eager_errors} raised in both, "
                f"{len(self.refusals)} refused by fxla (FxlaError), "
                f"{sum(self.known.values())} known findings {dict(self.known)}, {len(self.findings)} new findings")


def fuzz(seed: int, iterations: Optional[int] = None, seconds: Optional[float] = None, compile_fn=None,
         do_minimize=True, verbose=False, out=sys.stdout, known=True, groups=GROUPS) -> Report:
    """Run programs until ``iterations`` or ``seconds`` run out; print each new finding's reproducer to ``out``."""
    rng = random.Random(seed)
    report = Report()
    deadline = time.monotonic() + seconds if seconds else None
    seen = set()
    while (iterations is None or report.programs < iterations) and \
            (deadline is None or time.monotonic() < deadline):
        case = generate(rng, groups)
        report.programs += 1
        if verbose:
            print(f"--- program {report.programs}\n{case.function_source()}", file=out, flush=True)
        try:
            outcome, finding = run_case(case, compile_fn)
        except Exception as exc:                           # noqa: BLE001 (a fuzzer bug is a finding too)
            outcome, finding = "finding", Finding("crash", f"{type(exc).__name__}: {_first(exc)}")
        if outcome == "ok":
            report.ok += 1
        elif outcome == "eager-error":
            report.eager_errors += 1
        elif outcome == "refused":
            report.refusals.append(finding.detail)
        else:
            label = known_label(case, finding) if known else None
            if label:
                report.known[label] = report.known.get(label, 0) + 1
                continue
            if do_minimize:
                case, finding = minimize(case, finding, compile_fn)
            key = (finding.kind, re.sub(r"\[.*|\d+", "", finding.detail.splitlines()[0]),
                   tuple(re.sub(r"v\d+|a\d", "_", s) for s in case.body))
            if key in seen:
                continue
            seen.add(key)
            report.findings.append((case, finding))
            print(f"=== finding {len(report.findings)} ({finding.kind})\n{case.reproducer(finding)}",
                  file=out, flush=True)
    return report


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--iterations", type=int)
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--no-minimize", action="store_true")
    parser.add_argument("--no-known", action="store_true", help="report the KNOWN bugs' findings too")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.iterations is None and args.seconds is None:
        args.iterations = 100
    report = fuzz(args.seed, args.iterations, args.seconds, do_minimize=not args.no_minimize,
                  verbose=args.verbose, known=not args.no_known)
    print(report.summary())
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
