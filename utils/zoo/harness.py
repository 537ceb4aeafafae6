"""Running one zoo model through one of fxla's routes and judging it against eager PyTorch (the oracle).

The routes, each given a freshly built copy of the model (same seeded weights) and called exactly as eager is:

* ``compile``: ``fxla.compile(model, concrete_shapes=True)`` then ``fast(*args, **kwargs)``;
* ``dynamo``: ``torch.compile(model, backend="fxla")`` then ``compiled(*args, **kwargs)``;
* ``export``: ``fxla.export(model, args, folder, concrete_shapes=True)`` then ``fxla.load(folder)(*args)`` -- export
  takes a tuple, so
  keyword arguments are passed positionally (the forward's parameters up to the last one given, the others at
  their defaults: :meth:`Case.positional`);
* ``inductor`` (a reference route, only when asked for): ``torch.compile(model)``, torch's own compiler, judged and
  timed the same way, so fxla's latency can be compared with it.

:func:`run_route` returns a :class:`RouteResult`: ``status`` is ``"ok"`` only when every tensor of the output
matches eager (same count, dtypes and shapes, values within :func:`tolerance`); a numerical or structural
difference is ``"mismatch"``, never a pass; an exception is ``"error"`` with its class and the first line of its
message (the fxla error inside dynamo's ``BackendCompilerFailed`` is the one reported).
"""
from __future__ import annotations

import copy
import dataclasses
import math
import os
import shutil
import statistics
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

import torch

from .registry import Case, Entry

ROUTES = ("compile", "dynamo", "export")
#: routes through other compilers, run only when asked for (``--routes compile,inductor``): the latency baseline
REFERENCE_ROUTES = ("inductor",)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass
class RouteResult:
    model: str
    route: str
    status: str                         # ok | mismatch | error | timeout | crash
    error_class: str = ""
    message: str = ""                   # first line of the error, or what did not match
    where: str = ""                     # deepest frame in fxla's own code (file:line), for grouping failures
    max_error: Optional[float] = None   # max |got - want| over every floating output
    first_call_s: Optional[float] = None
    eager_s: Optional[float] = None     # steady-state median per call
    compiled_s: Optional[float] = None
    graphs: Optional[int] = None        # dynamo: graphs handed to fxla
    graph_breaks: Optional[int] = None  # dynamo: graph breaks (the first reason is in notes)
    notes: List[str] = field(default_factory=list)

    def as_dict(self):
        return dataclasses.asdict(self)

    @property
    def latency_ratio(self) -> Optional[float]:
        if self.eager_s and self.compiled_s:
            return self.compiled_s / self.eager_s
        return None


# -- comparing outputs -----------------------------------------------------------------------------------------------
def tensor_leaves(value, _depth: int = 0) -> List[torch.Tensor]:
    """Every tensor of an output in order: through dicts (Hugging Face ``ModelOutput``), tuples, lists, named
    tuples, dataclasses and other objects holding tensors (a KV cache), depth-first."""
    if _depth > 12 or value is None:
        return []
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensor_leaves(v, _depth + 1)]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in tensor_leaves(v, _depth + 1)]
    if isinstance(value, (str, bytes, int, float, bool, complex, torch.dtype, torch.device, torch.nn.Module)):
        return []
    if dataclasses.is_dataclass(value):
        return [t for f in dataclasses.fields(value) for t in tensor_leaves(getattr(value, f.name), _depth + 1)]
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict):
        return [t for k, v in attrs.items() if not k.startswith("_") for t in tensor_leaves(v, _depth + 1)]
    return []


def tolerance(dtype: torch.dtype) -> Optional[float]:
    """Relative tolerance of a floating dtype (``None``: compared exactly).  A value passes when
    ``|got - want| <= tol * |want| + tol * max(1, max|want|)``."""
    if dtype in (torch.float16, torch.bfloat16, torch.complex32):
        return 1e-2
    if dtype.is_floating_point or dtype.is_complex:
        return 1e-4
    return None


def compare(got, want) -> Tuple[bool, str, Optional[float]]:
    """``(matches, what differs, max abs error)`` between a route's output and eager's."""
    g, w = tensor_leaves(got), tensor_leaves(want)
    if not w:
        return False, "eager returned no tensor", None
    if len(g) != len(w):
        return False, f"{len(g)} output tensors, eager has {len(w)}", None
    worst, problems = 0.0, []
    for i, (a, b) in enumerate(zip(g, w)):
        a = a.detach().cpu() if isinstance(a, torch.Tensor) else torch.as_tensor(a)
        b = b.detach().cpu()
        if a.dtype != b.dtype or a.shape != b.shape:
            problems.append(f"output {i}: {a.dtype}{list(a.shape)}, eager {b.dtype}{list(b.shape)}")
            continue
        tol = tolerance(b.dtype)
        if tol is None:
            if not torch.equal(a, b):
                problems.append(f"output {i}: {int((a != b).sum())} of {b.numel()} values differ")
            continue
        if b.numel() == 0:
            continue
        a64, b64 = a.to(torch.complex128 if b.is_complex() else torch.float64), \
            b.to(torch.complex128 if b.is_complex() else torch.float64)
        same_special = (torch.isnan(a64) & torch.isnan(b64)) | ((a64 == b64) & ~torch.isfinite(b64))
        finite = torch.isfinite(b64)
        scale = max(1.0, float(b64[finite].abs().max())) if finite.any() else 1.0
        err = (a64 - b64).abs()
        err = torch.where(same_special, torch.zeros_like(err), err)
        bad = (~(err <= tol * b64.abs() + tol * scale) | ~finite) & ~same_special   # nan/inf: exactly
        finite_err = err[torch.isfinite(err)]
        if finite_err.numel():
            worst = max(worst, float(finite_err.max()))
        if bad.any():
            problems.append(f"output {i}{list(b.shape)}: {int(bad.sum())} of {b.numel()} values off by up to "
                            f"{float(err[bad].max()):.3g} (tolerance {tol:g} relative to max {scale:.3g})")
    return not problems, "; ".join(problems[:3]), worst


# -- errors ----------------------------------------------------------------------------------------------------------
def _root_error(exc: BaseException) -> BaseException:
    """The error a user would read: dynamo's ``BackendCompilerFailed`` (and other wrappers) unwrapped."""
    seen = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = getattr(exc, "inner_exception", None)
        if isinstance(inner, BaseException):
            exc = inner
            continue
        if type(exc).__module__.startswith("torch._dynamo") and isinstance(exc.__cause__, BaseException):
            exc = exc.__cause__
            continue
        break
    return exc


def _fxla_frame(exc: BaseException) -> str:
    """``path:line`` (relative to the repository) of the deepest traceback frame in fxla's own folders."""
    root = os.environ.get("FXLA_ZOO_SOURCE") or ROOT        # run.py --source: fxla from another checkout
    own = tuple(os.path.join(root, d) + os.sep for d in ("api", "base", "frontend", "dialects", "lowering",
                                                         "runtime"))
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.startswith(own):
            where = f"{os.path.relpath(frame.filename, root)}:{frame.lineno}"
    return where


def describe_error(result: RouteResult, exc: BaseException) -> None:
    root = _root_error(exc)
    result.status = "error"
    result.error_class = type(root).__name__
    lines = [line for line in str(root).strip().splitlines() if line.strip()]
    # the first line; a first line that announces a list ("cannot lower 1 op of this program:") with its first item
    result.message = " ".join(line.strip() for line in lines[:2]) if lines and lines[0].rstrip().endswith(":") \
        else (lines[0].strip() if lines else "")
    result.where = _fxla_frame(root) or _fxla_frame(exc)


# -- the routes ------------------------------------------------------------------------------------------------------
def _call(fn: Callable, args, kwargs):
    return fn(*copy.deepcopy(args), **copy.deepcopy(kwargs))


class Route:
    """``prepare(case)`` returns ``(callable, args, kwargs)``: what to call, timed from ``prepare`` through the
    first call (for export: export, load and the first call)."""

    def __init__(self, folder: str):
        self.folder = folder

    def compile(self, case: Case):
        import fxla
        return fxla.compile(case.model, concrete_shapes=True), case.args, case.kwargs

    def dynamo(self, case: Case):
        import fxla  # noqa: F401  (registers the backend through its entry point)
        return torch.compile(case.model, backend="fxla"), case.args, case.kwargs

    def inductor(self, case: Case):
        """torch.compile's default backend (a reference, not fxla)."""
        return torch.compile(case.model), case.args, case.kwargs

    def export(self, case: Case):
        import fxla
        args = case.positional()
        path = os.path.join(self.folder, "artifact")
        fxla.export(case.model, copy.deepcopy(args), path, concrete_shapes=True)
        return fxla.load(path), args, {}


def _dynamo_counts(result: RouteResult) -> None:
    """How many graphs dynamo handed to fxla, and its graph breaks (a model it runs eagerly reaches no fxla)."""
    counters = torch._dynamo.utils.counters
    result.graphs = int(counters["stats"]["unique_graphs"])
    breaks = counters["graph_break"]
    result.graph_breaks = int(sum(breaks.values()))
    if breaks:
        reason = next(iter(breaks)).strip().splitlines()[0]
        result.notes.append(f"graph break: {reason}")


def measure_steady(fns, args_kwargs, budget_s: float = 1.5, rounds: int = 15) -> List[float]:
    """Median seconds per call of each function, alternating between them round by round (so load from other
    processes hits all alike); each round makes one untimed call, then times a block of calls of about 50 ms (so
    no sample pays for waking one runtime's thread pool after the other's)."""
    blocks = []
    for fn, (a, k) in zip(fns, args_kwargs):
        t0 = time.perf_counter()
        fn(*a, **k)
        blocks.append(max(1, min(20, int(0.05 / max(time.perf_counter() - t0, 1e-6)))))
    samples = [[] for _ in fns]
    start = time.perf_counter()
    for r in range(rounds):
        for i, (fn, (a, k)) in enumerate(zip(fns, args_kwargs)):
            fn(*a, **k)
            t0 = time.perf_counter()
            for _ in range(blocks[i]):
                fn(*a, **k)
            samples[i].append((time.perf_counter() - t0) / blocks[i])
        if r >= 4 and time.perf_counter() - start > budget_s:
            break
    return [statistics.median(s) for s in samples]


def eager_reference(entry: Entry):
    """Build the model and call it eagerly twice (under ``torch.no_grad``): the reference output, and whether
    eager itself is deterministic on these inputs."""
    case = entry.build()
    with torch.no_grad():
        want = _call(case.model, case.args, case.kwargs)
        again = _call(case.model, case.args, case.kwargs)
    same, why, _ = compare(again, want)
    return want, (None if same else f"eager is not deterministic: {why}")


def run_route(entry: Entry, route: str, want, timing: bool = True) -> RouteResult:
    """Build a fresh copy of ``entry``'s model, compile it by ``route``, call it as eager was called, compare."""
    result = RouteResult(entry.name, route, "error")
    folder = tempfile.mkdtemp(prefix=f"fxla-zoo-{entry.name}-")
    try:
        case = entry.build()
        eager_model = entry.build().model
        with torch.no_grad():
            if route == "dynamo":
                torch._dynamo.utils.counters.clear()
            t0 = time.perf_counter()
            fn, args, kwargs = getattr(Route(folder), route)(case)
            got = _call(fn, args, kwargs)
            result.first_call_s = time.perf_counter() - t0
            if route == "dynamo":
                _dynamo_counts(result)
            ok, why, worst = compare(got, want)
            result.max_error = worst
            if not ok:
                result.status, result.message = "mismatch", why
                return result
            result.status = "ok"
            if timing:
                result.compiled_s, result.eager_s = measure_steady(
                    [fn, eager_model], [(args, kwargs), (case.args, case.kwargs)])
    except Exception as exc:  # noqa: BLE001 -- every failure is a result to record
        describe_error(result, exc)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if route in ("dynamo", "inductor"):
            torch._dynamo.reset()
    return result


def fmt_seconds(s: Optional[float]) -> str:
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return ""
    return f"{s * 1e3:.0f} ms" if s < 1 else f"{s:.1f} s"
