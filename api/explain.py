"""``fxla.explain(model, *example_args, **example_kwargs)``: everything that stands between a model and compiling.

``fxla.compile`` stops at the first problem it meets; :func:`explain` goes on and reports them all, as rows of
an :class:`Explanation` (``str()`` of it is a table: kind, location, detail, fix).  It runs the routes a user
would, in order, and notes which one works:

1. **tracing** -- ``fxla.compile(model)`` (one shape-agnostic trace); when it stops at an untraceable line (a
   ``TraceError``: ``if x.shape[0] > 1``, ``int(t)``...), ``fxla.compile(model, concrete_shapes=True)`` (a trace
   per input signature, with concrete shapes); each stop is a row ``untraceable`` at the user's ``file:line``,
   saying whether concrete shapes get past it.  Any other exception raised while a route traces the model is
   caught too: one the model's own code raises (``assert x.dim() == 2``, ``raise ValueError(...)`` on a size)
   is a row ``model error`` with its type and message at the user's ``file:line`` (the innermost frame of the
   user's code in its traceback); one raised by fxla's own code (the innermost frame that is not torch's is
   fxla's) is a row ``internal error``: a bug in fxla, to report (the row keeps the exception,
   ``Problem.error``);
2. **shapes** -- the traced graph is run on ``meta`` tensors node by node (:func:`survey_shapes`), without
   stopping: every op whose output shape or Python value depends on the data (``torch.nonzero``, ``x[mask]``,
   ``.item()``) is a row ``data-dependent shape``; the walk goes on past it with a stand-in value (the op run
   on a tensor of ones of its inputs' shapes), so later problems are still found; an op that fails for these
   inputs is a row ``shape error`` (the nodes that need its value are then not checked), or ``model error`` when
   the exception passed through the user's code (an ``@fxla.wrap`` function, a leaf module);
3. **in-place ops** -- functionalization (a mutation fxla cannot rewrite is a row ``in-place mutation``; any
   other exception there is fxla's, an ``internal error``);
4. **ops** -- every node is looked up in the lowering registry (``fxla.lowering.RULES``): each op without a
   rule is a row ``unsupported op`` at its line (all of them, not the first);
5. **lowering** -- when nothing above blocks, the graph is lowered to verified StableHLO (timed), and with
   ``compile=True`` compiled by XLA for the device (timed); a failure is a row ``lowering error`` (an exception
   that is no fxla error: ``internal error``);
6. **signature** -- rows ``recompiles`` (not blocking) say what a compiled program is specialised to: the
   shape and dtype of each tensor input (fxla has no dynamic dims: a new batch size or sequence length compiles
   a new program), each Python number passed as an argument (each new value compiles), each list, tuple or dict
   of Python values (its structure and every value in it are constants: another length or value compiles),
   other Python values (``use_cache=False``: each value compiles its own program), the module's mode.

The kinds, in the order the table lists them: :data:`KINDS`.

The compile time is measured where it was run and estimated otherwise (:class:`CompileTime` says which): from
the graph's size, with per-node costs measured on fxla's CPU compiles of GPT-2, ResNet and MobileNet graphs.

Nothing of the model changes: its parameters are read (as meta tensors, and once for a stand-in), never written.
"""
from __future__ import annotations

import os
import textwrap
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch.utils import _pytree as pytree

from fxla.errors import FxlaError
from fxla.frontend import GraphModule, TraceError
from fxla.frontend import meta as M
from fxla.frontend.errors import DataDependentError
from fxla.frontend.interpreter import Interpreter
from fxla.frontend.passes.functionalize import functionalize, mutated_base
from fxla.frontend.shape_prop import ShapeProp, set_node_meta, to_meta
from fxla.frontend.source import internal_dirs, is_internal_file, location_at, traceback_location
from fxla.lowering import RULES
from fxla.lowering.registry import describe, op_key
from fxla.lowering.to_fxla import is_static

from .pipeline import COMPILING, Pipeline
from .signature import ArgumentError, CallBinding, describe_value

__all__ = ["explain", "Explanation", "Problem", "CompileTime", "survey_shapes", "KINDS"]

#: the kinds of rows, in the order the table lists them (each described in the module docstring: ``option`` an
#: option or model fxla.compile refuses, ``model error`` an exception the model's own code raised, ``internal
#: error`` one fxla's own code raised -- a bug in fxla --; ``recompiles`` rows never block)
KINDS = ("option", "untraceable", "model error", "data-dependent shape", "data-dependent value", "shape error",
         "in-place mutation", "unsupported op", "lowering error", "internal error", "recompiles")

#: Per-node costs of an estimate, measured with fxla.compile's stages on CPU (2 cores; GPT-2 with 2-12 layers,
#: ResNet-18/50, MobileNet-v2; graphs of 70-500 nodes): tracing and lowering took 0.2-0.9 ms per graph node,
#: XLA's compile 1.7-9 ms per graph node (0.7-1.3 ms per StableHLO op), plus ~0.1 s per program.
TRACE_LOWER_S_PER_NODE = 0.6e-3
XLA_S_PER_NODE = 3e-3
XLA_S_PER_STABLEHLO_OP = 1e-3
FIXED_S = 0.1


@dataclass(frozen=True)
class Problem:
    """One row of an :class:`Explanation`: ``kind`` (one of :data:`KINDS`), ``where`` (the user's source
    location, a :class:`fxla.frontend.SourceLocation`, or None), ``detail``, ``fix``, whether it blocks
    compiling (``blocking``: not for ``recompiles`` rows, nor for a line that stops only plain
    ``fxla.compile(model)`` when ``concrete_shapes=True`` gets past it), and for a ``model error`` or an
    ``internal error`` row the exception itself (``error``, with its traceback; else None)."""

    kind: str
    where: Any
    detail: str
    fix: str
    blocking: bool = True
    error: Optional[BaseException] = field(default=None, compare=False, repr=False)

    @property
    def location(self) -> str:
        """``file:line`` (relative to the working directory when under it; from the package for an installed
    package's file), or ``-``."""
        return _short_location(self.where)


@dataclass(frozen=True)
class CompileTime:
    """How long compiling takes: ``seconds`` in all, ``measured`` (True: every stage was run and timed here;
    False: some part is an estimate) and ``how`` (which parts were timed and which estimated, in words)."""

    seconds: float
    measured: bool
    how: str


@dataclass
class Explanation:
    """What :func:`explain` found for one model and its example inputs.

    ``model``: its name.  ``route``: the call that traces it (``"fxla.compile(model)"`` or
    ``"fxla.compile(model, concrete_shapes=True)"``), or None when neither does.  ``problems``: the rows, in
    :data:`KINDS` order.  ``nodes``: the captured graph's op nodes (0 when nothing was traced).  ``lowered``:
    whether it lowered to verified StableHLO.  ``compiled``: whether XLA compiled it (``compile=True``).
    ``compile_time``: a :class:`CompileTime`.  ``compiles``: nothing blocks (and the lowering ran).
    ``str(explanation)`` is the table; ``to_dict()`` the same as plain data (``fxla-explain --json``).
    """

    model: str
    route: Optional[str] = None
    problems: List[Problem] = field(default_factory=list)
    nodes: int = 0
    lowered: bool = False
    compiled: bool = False
    compile_time: Optional[CompileTime] = None

    @property
    def blocking(self) -> List[Problem]:
        """The rows that block compiling."""
        return [p for p in self.problems if p.blocking]

    @property
    def compiles(self) -> bool:
        """A route traces the model, it lowered to verified StableHLO, and no row blocks."""
        return self.route is not None and self.lowered and not self.blocking

    def of_kind(self, kind: str) -> List[Problem]:
        """The rows of ``kind`` (one of :data:`KINDS`), in table order."""
        return [p for p in self.problems if p.kind == kind]

    def to_dict(self) -> Dict[str, Any]:
        """The report as JSON-ready data: the fields above, ``compiles``, and each row's ``kind``,
        ``location``, ``blocking``, ``detail`` and ``fix``."""
        return {"model": self.model, "route": self.route, "compiles": self.compiles, "nodes": self.nodes,
                "lowered": self.lowered, "compiled": self.compiled,
                "compile_time": None if self.compile_time is None else
                {"seconds": self.compile_time.seconds, "measured": self.compile_time.measured,
                 "how": self.compile_time.how},
                "problems": [{"kind": p.kind, "location": p.location, "blocking": p.blocking, "detail": p.detail,
                              "fix": p.fix} for p in self.problems]}

    def table(self, width: int = 120) -> str:
        """The report: a summary line, the rows as a table of ``width`` columns, the route and compile time."""
        n = len(self.blocking)
        head = (f"fxla.explain({self.model}): " + ("compiles" if self.compiles else
                f"{n} problem{'s' * (n != 1)} block{'s' * (n == 1)} compiling" if n else "does not compile"))
        rows = [(p.kind, p.location, p.detail, p.fix or "-") for p in self.problems]
        lines = [head, ""] + (_render_table(("kind", "location", "detail", "fix"), rows, width) if rows else [])
        lines.append(f"route: {self.route or 'none traces the model'}" + (f" ({self.nodes} graph nodes)"
                                                                        if self.nodes else ""))
        if self.compile_time is not None:
            lines.append(f"compile time: {_seconds(self.compile_time.seconds)} ({self.compile_time.how})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _seconds(s: float) -> str:
    return f"{s * 1e3:.0f} ms" if s < 1 else f"{s:.1f} s"


def _short_location(where) -> str:
    if where is None or not hasattr(where, "file"):
        return "-"
    path = where.file
    _, installed, inside = path.rpartition(f"{os.sep}site-packages{os.sep}")
    if installed:
        path = inside
    elif os.path.isabs(path):
        rel = os.path.relpath(path)
        path = rel if not rel.startswith("..") else path
    return f"{path}:{where.line}"


def _render_table(headers: Sequence[str], rows: Sequence[Tuple[str, ...]], width: int) -> List[str]:
    """``rows`` under ``headers``, each cell wrapped to its column (a location broken after a slash); the kind and
    location columns as wide as their longest entry (at most 30), detail and fix sharing the rest 3:2."""
    fixed = [min(max(len(h), *(len(r[i]) for r in rows)), 30) for i, h in enumerate(headers[:2])]
    rest = max(width - sum(fixed) - 3 * 3, 40)
    widths = fixed + [rest * 3 // 5, rest - rest * 3 // 5]
    rule = "-+-".join("-" * w for w in widths)
    out = [" | ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(), rule]
    for row in rows:
        cells = [_wrap_path(text, w) if i == 1 else
                 textwrap.wrap(text, w, break_long_words=True, break_on_hyphens=False) or [""]
                 for i, (text, w) in enumerate(zip(row, widths))]
        for i in range(max(len(c) for c in cells)):
            out.append(" | ".join((c[i] if i < len(c) else "").ljust(w) for c, w in zip(cells, widths)).rstrip())
        out.append(rule)
    return out


def _wrap_path(path: str, width: int) -> List[str]:
    """``path`` in lines of at most ``width`` characters, broken after a ``/`` where it can be."""
    lines = [""]
    for part in path.replace("/", "/\n").split("\n"):
        while len(part) > width:                       # (a part longer than the column)
            lines.append(part[:width])
            part = part[width:]
        if len(lines[-1]) + len(part) > width:
            lines.append("")
        lines[-1] += part
    return [line for line in lines if line]


# -- shapes ---------------------------------------------------------------------------------------------------------
@dataclass
class ShapeSurvey:
    """What :func:`survey_shapes` found: the data-dependent nodes (with their error), the nodes that failed
    (with theirs), the nodes not run because an input of theirs has no value, and the values it computed."""

    data_dependent: List[Tuple[Any, DataDependentError]] = field(default_factory=list)
    failed: List[Tuple[Any, Exception]] = field(default_factory=list)
    skipped: List[Any] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not (self.data_dependent or self.failed or self.skipped)


class _Survey(ShapeProp):
    """Shape propagation that does not stop (see :func:`survey_shapes`)."""

    def survey(self, *args) -> ShapeSurvey:
        found = ShapeSurvey()
        stand_ins = set()
        self.env = {}
        self.args_iter = iter(to_meta(args))
        for node in self.graph.nodes:
            if any(n not in self.env for n in node.all_input_nodes):
                found.skipped.append(node)
                continue
            try:
                self.env[node] = self.run_node(node)
            except DataDependentError as err:
                found.data_dependent.append((node, err))
                value = self._stand_in(node)
                if value is not None:
                    self.env[node] = value
                    stand_ins.add(node)
            except Exception as err:  # noqa: BLE001  (any op's failure on these shapes is a row of the report)
                if any(n in stand_ins for n in node.all_input_nodes):
                    found.skipped.append(node)      # a consequence of a stand-in value, not of the program
                else:
                    found.failed.append((node, err))
                continue
            if any(n in stand_ins for n in node.all_input_nodes):
                stand_ins.add(node)
        return found

    def _stand_in(self, node):
        """The node's value computed for real on tensors of ones of its inputs' shapes (meta afterwards), or
        None when that fails too."""
        args, kwargs = self.fetch_args_kwargs_from_env(node)
        ones = lambda v: torch.ones(v.shape, dtype=v.dtype) if isinstance(v, torch.Tensor) else v  # noqa: E731
        args, kwargs = pytree.tree_map(ones, (args, kwargs))
        try:
            with torch.no_grad():
                value = _EAGER[node.op](self, node.target, args, kwargs)
        except Exception:  # noqa: BLE001  (then the nodes that need it are reported as not checked)
            return None
        value = to_meta(value)
        set_node_meta(node, value)
        return value


#: how the stand-in of a data-dependent node runs: eagerly, as the plain Interpreter does
_EAGER = {"call_function": Interpreter.call_function, "call_method": Interpreter.call_method,
          "call_module": Interpreter.call_module}


def survey_shapes(gm: GraphModule, *example_inputs) -> ShapeSurvey:
    """Run ``gm`` on meta tensors of ``example_inputs``' shapes node by node, recording each node's shape (as shape
    propagation does) and going on past failures: a data-dependent op (``torch.nonzero``, ``x[mask]``,
    ``.item()``) is recorded with its :class:`~fxla.frontend.errors.DataDependentError` and replaced by its value
    on tensors of ones (so what follows is still checked); any other failure is recorded, and the nodes that need
    its value are skipped."""
    with COMPILING, torch.random.fork_rng(devices=[]):
        return _Survey(gm).survey(*example_inputs)


# -- the routes -----------------------------------------------------------------------------------------------------
def _first_line(text: str) -> str:
    return text.split("\n", 1)[0]


_ROUTE = "fxla.compile(model)"
_CONCRETE_ROUTE = "fxla.compile(model, concrete_shapes=True)"


def _trace(model, args, kwargs, concrete_args, device, report: Explanation):
    """``(graph, its arguments in placeholder order, the call's arguments by name, seconds)`` of the first route
    that traces ``model`` (see the module docstring), or None when none does; a row for each stop.  A stop is a
    TraceError, any other exception the model's code raises while traced (``model error``) or one fxla's code
    raises (``internal error``): each route's stop is caught, never passed on."""
    import fxla
    from .per_shape import PerShapeTraces

    start = time.perf_counter()
    try:
        compiled = fxla.compile(model, device=device, concrete_args=concrete_args)
    except TraceError as err:
        first = err
    except FxlaError as err:      # the model or an option fxla.compile refuses (a meta-device model...)
        report.problems.append(Problem("option", getattr(err, "where", None), err.what, err.fix or ""))
        return None
    except Exception as err:  # noqa: BLE001  (the model's own exception, or fxla's: a row, see _stop)
        first = err
    else:
        gm = compiled.graph_module
        binding = CallBinding(report.model, [n for n in gm.graph.nodes if n.op == "placeholder"])
        values = binding.bind(tuple(args), dict(kwargs))
        report.route = _ROUTE
        return gm, values, dict(zip(binding.names, values)), time.perf_counter() - start
    start = time.perf_counter()
    try:
        traces = PerShapeTraces(report.model, model, concrete_args, lambda gm: gm, lambda _: None, 1)
        gm, values = traces.module_for(tuple(args), dict(kwargs))
    except ArgumentError:         # (the example inputs do not fit the forward: explain's own error)
        raise
    except Exception as err:  # noqa: BLE001  (a TraceError, the model's own exception, or fxla's: a row)
        report.problems.extend(_stop_rows(_stop(first), _stop(err)))
        return None
    row = _stop(first)
    report.problems.append(Problem(
        row.kind, row.where, f"{_ROUTE} stops here: {row.detail}; {_CONCRETE_ROUTE} gets past it",
        f"compile with {_CONCRETE_ROUTE} (a trace per input signature)"
        + ("; and please report the bug in fxla.compile(model) (Problem.error holds the exception)"
           if row.kind == "internal error" else ""), blocking=False, error=row.error))
    report.route = _CONCRETE_ROUTE
    report.problems.extend(_guard_rows(getattr(gm, "value_guards", None) or ()))
    return gm, values, traces.bind(tuple(args), dict(kwargs)), time.perf_counter() - start


def _stop(err: Exception) -> Problem:
    """The row of the exception a route stopped at: an fxla error (a TraceError...) is ``untraceable``, any other
    exception a ``model error`` or an ``internal error`` (:func:`_exception_row`)."""
    if isinstance(err, FxlaError):
        return Problem("untraceable", getattr(err, "where", None), _first_line(err.what), err.fix or "")
    return _exception_row(err)


def _stop_rows(first: Problem, second: Problem) -> List[Problem]:
    """The rows when both routes stop: ``first`` (plain ``fxla.compile(model)``) says where the concrete-shapes
    route stops, in words or -- when elsewhere or for another reason -- as a second row."""
    same = (first.kind, first.location, _first_line(first.detail)) == \
        (second.kind, second.location, _first_line(second.detail))
    at = ("here too" if same else "at this line too, for another reason" if first.location == second.location
          else "elsewhere")
    rows = [Problem(first.kind, first.where,
                    f"{first.detail}; {_CONCRETE_ROUTE} stops {at}"
                    + ("" if same else " (the row 'with concrete_shapes=True')"), first.fix, error=first.error)]
    if not same:
        rows.append(Problem(second.kind, second.where, f"with concrete_shapes=True: {second.detail}", second.fix,
                            error=second.error))
    return rows


# -- exceptions: the model's own or fxla's --------------------------------------------------------------------------
def _raised_in_fxla(err: BaseException) -> Optional[Any]:
    """Where fxla's own code raised ``err``: the location (a SourceLocation) of the innermost frame of its
    traceback that belongs to fxla, when no frame of the user's code (:func:`fxla.frontend.source.
    is_internal_file`) comes after it -- torch's frames are looked through, as the user's or fxla's code called
    them --, else None (the user's code raised it, or torch did for it)."""
    torch_dirs = tuple(os.path.normcase(os.path.realpath(p)) + os.sep for p in torch.__path__)
    fxla_dirs = tuple(d for d in internal_dirs() if d not in torch_dirs)
    found = None
    tb = err.__traceback__
    while tb is not None:
        file = tb.tb_frame.f_code.co_filename
        if not is_internal_file(file):
            found = None                                    # the user's code
        elif os.path.normcase(os.path.realpath(file)).startswith(fxla_dirs):
            found = tb                                      # fxla's
        tb = tb.tb_next
    return None if found is None else location_at(found.tb_frame.f_code.co_filename, found.tb_lineno)


_REPORT_FIX = ("a bug in fxla, not in the model: please report it with the model and this row (Problem.error holds "
               "the exception and its traceback; fxla-explain prints it)")


def _exception_row(err: Exception) -> Problem:
    """The row of ``err``, an exception that is no fxla error, raised while fxla ran the model's code (tracing
    it): an ``internal error`` when fxla's own code raised it (:func:`_raised_in_fxla`: a bug in fxla), else a
    ``model error``; either at the innermost frame of the user's code in its traceback, keeping ``err``."""
    where = traceback_location(err.__traceback__)
    what = _exception_text(err, where)
    inside = _raised_in_fxla(err)
    if inside is not None:
        return Problem("internal error", where, f"fxla failed in its own code ({_short_location(inside)}): {what}",
                       _REPORT_FIX, error=err)
    return Problem("model error", where, f"the model raised {what}",
                   "fxla runs the model's Python code (to trace it; @fxla.wrap functions and leaf modules also on "
                   "meta tensors, for their shapes), and this line raised for these example inputs: check that the "
                   "model accepts them (call it on them in eager PyTorch to compare), or change the line", error=err)


def _internal_row(err: Exception, during: str) -> Problem:
    """The ``internal error`` row of ``err``, raised by fxla (or by JAX/XLA for it) ``during`` a stage in which no
    code of the user's runs (functionalization, lowering, XLA's compile)."""
    inside = _raised_in_fxla(err)
    return Problem("internal error", None,
                   f"fxla failed {during}" + (f" ({_short_location(inside)})" if inside is not None else "")
                   + f": {_exception_text(err)}", _REPORT_FIX, error=err)


def _exception_text(err: BaseException, where=None) -> str:
    """``Type: first line of the message`` (at most 300 characters), then for an ``assert`` or an exception
    without a message the source line of ``where`` in backticks."""
    text = _first_line(str(err).strip())
    what = type(err).__name__ + (f": {text}" if text else "")
    what = what if len(what) <= 300 else what[:297] + "..."
    if where is not None and where.source_line and (not text or isinstance(err, AssertionError)):
        what += f" (`{where.source_line.strip()}`)"
    return what


def _guard_rows(guards) -> List[Problem]:
    """A row per data-dependent value the concrete_shapes trace decided from the example's data (value guards,
    fxla.frontend.value_guards): not blocking; fxla.compile checks them per call, an exported artifact too."""
    rows = []
    for g in guards:
        shape = g.what != "value"
        detail = (f"{g.what} selects {g.expected} elements here" if shape else
                  f"the code reads a tensor's value as a Python {g.kind} ({g.expected!r})")
        rows.append(Problem(
            "data-dependent shape" if shape else "data-dependent value", g.where,
            f"{detail}: fxla.compile decides it from each call's data and checks it before every call (traced "
            f"again when the data decides otherwise); an exported artifact checks it and refuses other data",
            "fixed-size code (torch.where(mask, x, 0), masked reductions, a fixed-size torch.topk) for one program "
            "for all data, and for export", blocking=False))
    return rows


# -- the checks -----------------------------------------------------------------------------------------------------
def _shape_rows(survey: ShapeSurvey) -> List[Problem]:
    rows = [Problem("data-dependent shape", err.where, err.what, err.fix or "")
            for _, err in survey.data_dependent]
    for node, err in survey.failed:
        if not isinstance(err, FxlaError) and traceback_location(err.__traceback__) is not None:
            row = _exception_row(err)            # (raised in the user's code: an @fxla.wrap function, a leaf module)
            rows.append(Problem(row.kind, row.where, f"%{node.name}, run on meta tensors: {row.detail}", row.fix,
                                error=err))
            continue
        what = _first_line(getattr(err, "what", None) or f"{type(err).__name__}: {err}")
        rows.append(Problem("shape error", node.meta.get(M.SOURCE),
                            f"%{node.name} fails for these inputs: {what}"
                            + (f" ({len(survey.skipped)} later nodes need its value and were not checked)"
                               if survey.skipped else ""),
                            getattr(err, "fix", None) or "check the shapes and dtypes this line receives"))
    return rows


def _unsupported_rows(gm: GraphModule, survey: ShapeSurvey, functional: bool) -> List[Problem]:
    """Every op node of ``gm`` without a lowering rule (fxla.lowering.RULES), at its source line.  Left out: nodes
    already reported as data-dependent, nodes the survey could not run (their value may be a plain size, which
    needs no rule), and -- in a graph that could not be made functional -- the in-place ops, which
    functionalization rewrites."""
    left_out = {node.name for node, _ in survey.data_dependent} | {node.name for node in survey.skipped}
    rows = []
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method", "call_module") or node.name in left_out:
            continue
        if is_static(node) or (not functional and mutated_base(gm, node) is not None):
            continue
        key = op_key(node, gm)
        if key not in RULES:
            what = describe(key, node) if key is not None else f"method Tensor.{node.target}"
            rows.append(Problem("unsupported op", node.meta.get(M.SOURCE), f"fxla has no lowering rule for {what}",
                                "rewrite it with supported ops (fxla.lowering.coverage(), docs/ops.md) or add a rule "
                                "with @fxla.lowering.register(<op>)"))
    return rows


def _functional(gm: GraphModule, survey: ShapeSurvey, rows: List[Problem]) -> Optional[GraphModule]:
    """``gm`` with in-place ops rewritten (what the lowering checks), or None when that cannot run: a mutation fxla
    cannot rewrite (a row) or nodes without shapes (functionalization needs every node's)."""
    if not survey.complete:
        return None
    try:
        return functionalize(gm)
    except FxlaError as err:
        rows.append(Problem("in-place mutation", getattr(err, "where", None), _first_line(err.what),
                            err.fix or ""))
    except Exception as err:  # noqa: BLE001  (no user code runs here: fxla's own failure, a row)
        rows.append(_internal_row(err, "functionalizing the graph"))
    return None


def _signature_rows(model, named: Dict[str, Any], where, concrete: bool) -> List[Problem]:
    """What a compiled program is specialised to, argument by argument (``named``: the call's arguments by
    parameter name; ``where``: the location of the forward's ``def``), see the module docstring."""
    rows, flags = [], []
    new = f"{'traces and ' if concrete else ''}compiles a new program"
    for name, value in named.items():
        leaves = pytree.tree_leaves(value)
        numbers = [leaf for leaf in leaves if isinstance(leaf, (int, float)) and not isinstance(leaf, bool)]
        structure = isinstance(value, (list, tuple, dict)) and not isinstance(value, torch.Size)
        shown = describe_value(value)
        if any(isinstance(leaf, torch.Tensor) for leaf in leaves):
            rows.append(Problem(
                "recompiles", where,
                f"{name} = {shown}: no dynamic dims: another shape (batch size, sequence length, image size) or "
                f"dtype {new}" + (f"; and the Python numbers in it are constants of the program: another value "
                                  f"{new}" if numbers else ""),
                "pad or bucket inputs to a few fixed shapes (each signature compiles once and stays cached, "
                "max_signatures=64)" + ("; pass the numbers that change between calls as tensors" if numbers
                                        else ""), blocking=False))
        elif structure and numbers:
            kind = next(k.__name__ for k in (dict, list, tuple) if isinstance(value, k))
            flat = isinstance(value, (list, tuple)) and len(numbers) == len(leaves)
            as_tensor = (f"torch.tensor({shown})" if flat and shown == repr(value) else
                         f"torch.tensor({name})" if flat else "tensors (in the same structure)")
            rows.append(Problem(
                "recompiles", where,
                f"{name} = {shown}: a Python {kind}, part of the signature: its structure "
                f"({'keys' if isinstance(value, dict) else 'length'}) and every value in it are constants of "
                f"the program, so another {'key' if isinstance(value, dict) else 'length'} or value {new}",
                f"pass the numbers as {as_tensor} if they change between calls, or bind it with "
                f"concrete_args={{'{name}': ...}} if it never changes", blocking=False))
        elif numbers:
            rows.append(Problem(
                "recompiles", where,
                f"{name} = {shown}: a Python number is a constant of the program, so each new value {new}",
                f"pass it as a tensor (torch.tensor({numbers[0]!r})) if it changes between calls, or bind it with "
                f"concrete_args={{'{name}': {numbers[0]!r}}} if it never does", blocking=False))
        else:
            flags.append(f"{name} = {shown}")
    if flags:
        rows.append(Problem("recompiles", where, f"{', '.join(flags)}: part of the signature: another value "
                            f"{'traces and ' if concrete else ''}compiles its own program", "-", blocking=False))
    if isinstance(model, torch.nn.Module) and model.training:
        rows.append(Problem("recompiles", None,
                            f"{type(model).__name__} is in training mode: model.eval() / model.train() each trace "
                            f"and compile their own programs (dropout, batch-norm statistics differ)",
                            "call model.eval() before compiling for inference", blocking=False))
    return rows


def _graph_nodes(gm: GraphModule) -> int:
    return sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module"))


# -- explain --------------------------------------------------------------------------------------------------------
def explain(model, *example_args, compile: bool = False, device=None, concrete_args=None,  # noqa: A002
            **example_kwargs) -> Explanation:
    """Report everything that stands between ``model`` (an ``nn.Module`` or function) and compiling it for these
    example inputs, without stopping at the first problem (the checks and their order: the module docstring).

    ``example_args`` / ``example_kwargs``: a call's arguments, as the model takes them (a forward parameter named
    ``compile``, ``device`` or ``concrete_args`` is passed positionally).  ``compile=True``: when nothing blocks,
    also compile with XLA for ``device`` and report the real time (otherwise the lowering is run and timed, and
    XLA's share estimated).  ``device``, ``concrete_args``: as for :func:`fxla.compile`.

    Returns an :class:`Explanation`; ``print(fxla.explain(model, x))`` shows the table.  Raises
    :class:`fxla.OptionError` when ``model`` is not callable and :class:`fxla.ArgumentError` when the example
    inputs do not fit its signature; every problem of the model itself is a row of the report.
    """
    from .compile import OptionError, not_callable

    if not callable(model):
        raise OptionError(not_callable(model, "fxla.explain", "fxla.explain(model, *inputs)"))
    from fxla.runtime import resolve_device

    resolve_device(device)          # (a bad device is an error here; starting JAX's backends is not tracing time)
    name = type(model).__name__ if isinstance(model, torch.nn.Module) else getattr(model, "__name__", "fn")
    report = Explanation(name)
    traced = _trace(model, example_args, example_kwargs, concrete_args, device, report)
    if traced is None:
        return _sorted(report)
    gm, values, named, trace_s = traced
    concrete = report.route != "fxla.compile(model)"
    report.nodes = _graph_nodes(gm)
    survey = survey_shapes(gm, *values)
    report.problems += _shape_rows(survey)
    functional = _functional(gm, survey, report.problems)
    report.problems += _unsupported_rows(functional or gm, survey, functional is not None)
    if not report.blocking:
        _lower(report, gm, values, compile, device, trace_s)
    else:
        report.compile_time = _estimate(report.nodes, trace_s)
    forward = next((n.meta.get(M.SOURCE) for n in gm.graph.nodes if n.op == "placeholder"), None)
    forward = None if forward is None or is_internal_file(forward.file) else forward     # (nn.Sequential...)
    report.problems += _signature_rows(model, named, forward, concrete)
    return _sorted(report)


def _sorted(report: Explanation) -> Explanation:
    report.problems.sort(key=lambda p: KINDS.index(p.kind))       # (stable: each kind keeps its graph order)
    return report


def _estimate(nodes: int, trace_s: float) -> CompileTime:
    rest = FIXED_S + nodes * (TRACE_LOWER_S_PER_NODE + XLA_S_PER_NODE)
    return CompileTime(trace_s + rest, False,
                       f"tracing {_seconds(trace_s)} measured; lowering and XLA estimated: {nodes} graph nodes x "
                       f"~{(TRACE_LOWER_S_PER_NODE + XLA_S_PER_NODE) * 1e3:.1f} ms (measured per-node cost on CPU), "
                       f"rough to 2x")


def _lower(report: Explanation, gm: GraphModule, values, compile: bool, device, trace_s: float) -> None:  # noqa: A002
    """Lower (and with ``compile``, compile) for ``values``, timing each stage; a failure is a row."""
    from fxla.runtime import resolve_device

    times: Dict[str, float] = {}
    pipeline = Pipeline(observers=[lambda stage, _result, seconds: times.__setitem__(stage, seconds)])
    try:
        with COMPILING:
            stages = pipeline.lower(gm, values)
            report.lowered = True
            if compile:
                target_device = resolve_device(device)
                target = pipeline.layout(stages, target_device.platform)
                executable = pipeline.compile(stages, target, target_device)
                report.compiled = True
    except FxlaError as err:
        report.problems.append(Problem("lowering error", getattr(err, "where", None), _first_line(err.what),
                                       err.fix or ""))
        report.compile_time = _estimate(report.nodes, trace_s)
        return
    except Exception as err:  # noqa: BLE001  (no user code runs here: fxla's own failure, a row)
        report.problems.append(_internal_row(err, "compiling the graph" if report.lowered else "lowering the graph"))
        report.compile_time = _estimate(report.nodes, trace_s)
        return
    lower_s = times.get("prepare", 0.0) + times.get("fxla", 0.0) + times.get("stablehlo", 0.0)
    if compile:
        xla_s = times.get("layout", 0.0) + times.get("compile", 0.0)
        cached = " (loaded from the on-disk cache: a fresh compile takes longer)" if executable.from_cache else ""
        report.compile_time = CompileTime(trace_s + lower_s + xla_s, True,
                                          f"measured: tracing {_seconds(trace_s)}, lowering {_seconds(lower_s)}, "
                                          f"XLA compile for {target_device.platform} {_seconds(xla_s)}{cached}")
        return
    ops = sum(1 for line in stages.stablehlo.splitlines() if "stablehlo." in line)
    xla_s = FIXED_S + ops * XLA_S_PER_STABLEHLO_OP
    report.compile_time = CompileTime(
        trace_s + lower_s + xla_s, False,
        f"tracing {_seconds(trace_s)} and lowering {_seconds(lower_s)} measured; XLA compile estimated at "
        f"{_seconds(xla_s)} ({ops} StableHLO ops x ~{XLA_S_PER_STABLEHLO_OP * 1e3:.0f} ms, measured per-op cost on "
        f"CPU, rough to 2x; compile=True / --compile times it)")
