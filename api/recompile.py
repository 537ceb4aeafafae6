"""Control over compiles: what a compiled module compiles, when, why, and a warning when it compiles too often.

Every new input signature of a :class:`fxla.CompiledModule` (new shapes, dtypes or non-tensor values) is
lowered and compiled once.  :class:`CompileControl` (a base of ``CompiledModule``) adds:

* a log through the standard ``logging`` module, logger ``fxla.compile`` (:mod:`fxla.base.logs`): one INFO
  record per compiled signature -- the module, the signature's number, the new signature, why it compiled (the
  first call; which inputs changed from the previous signature, old -> new; the same inputs as an earlier
  signature that was dropped from the in-memory cache, or compiled for another mode), the seconds spent and each
  phase's share -- so ``logging.basicConfig(level=logging.INFO)`` (or
  ``logging.getLogger("fxla").setLevel(logging.INFO)``) shows every recompile and its cause;
* one :class:`RecompileWarning` per module when it compiles more than ``recompile_budget`` signatures
  (default :data:`RECOMPILE_BUDGET`; ``fast.recompile_budget = n`` changes it, ``None`` turns it off), naming
  the fixes (pad to a few sizes, mark shapes static);
* ``fast.precompile(*signatures)``: compile a list of example inputs ahead of the first calls (serving);
* ``dump_dir=``: each compiled signature's stages written to a folder as they are made (:mod:`fxla.dumps`);
* the gradient programs of a signature (:mod:`fxla.autograd`: the forward with residuals a call that records
  gradients runs, the backward compiled at its first backward, and the halves ``as_jax_function`` lowers for
  ``jax.grad``) each get an INFO record of their own -- which program, of which signature number, with respect
  to which tensors, why, the seconds and phases -- and a folder of their own inside the signature's
  (:meth:`CompileControl._gradient_compile`).  They do not count as signatures (nor against the budget).

A ``concrete_shapes=True`` module and its per-signature traces share one :class:`CompileHistory` (numbers,
reasons, budget and dumps count across traces).  Compiled signatures are bounded by ``max_signatures`` (least
recently used dropped: :mod:`fxla.params`).
"""
from __future__ import annotations

import contextlib
import logging
import time
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from fxla.base.logs import CACHE, COMPILE as logger, PHASES

from .dumps import GraphDump, open_dumps, stage_files
from .pipeline import phase_detail
from .signature import describe_value

__all__ = ["RECOMPILE_BUDGET", "RecompileWarning", "CompileControl", "CompileHistory", "CompiledSignature", "logger",
           "log_trace", "phase_observer"]

#: how many input signatures a module compiles before fxla warns (``fast.recompile_budget``)
RECOMPILE_BUDGET = 8
#: how many changed inputs a record names (then how many more)
_SHOWN_CHANGES = 4
#: the stages whose files a gradient program's folder gets (``prepare`` and ``fxla`` are the signature's own, in
#: its folder; the program's half of ``vjp`` is written by :meth:`_Compiling.dump_fxla`)
_GRADIENT_STAGES = frozenset({"stablehlo", "layout", "compile"})


def log_trace(fn, graph, started: float) -> None:
    """The ``fxla.phases`` record (DEBUG) of a trace of ``fn`` into ``graph`` that began at ``started``."""
    if PHASES.isEnabledFor(logging.DEBUG):
        name = getattr(fn, "__name__", type(fn).__name__)      # (a module's class, a function's own name)
        PHASES.debug("%s: trace took %.3f s (%d nodes)", name, time.perf_counter() - started, len(graph.nodes))


def phase_observer(module: "CompileControl"):
    """The pipeline observer of ``module`` (its :meth:`CompileControl._phase_done`), holding it weakly (a compiled
    module's pipeline must not keep the module alive)."""
    ref = weakref.ref(module)

    def observe(stage: str, result, seconds: float) -> None:
        alive = ref()
        if alive is not None:
            alive._phase_done(stage, result, seconds)
    return observe


#: a name a signature has no input for: a call gave None to it (fxla.none_inputs), or it is a constant of its trace
_ABSENT = "None/constant"


class RecompileWarning(UserWarning):
    """A compiled module compiled more input signatures than its ``recompile_budget``."""


class CompileHistory:
    """What a compiled module (with its ``concrete_shapes`` traces) has compiled: the count, the latest
    signature, every signature's inputs by mode, and the dumps of ``dump_dir`` (``None``: none)."""

    def __init__(self, dump_dir=None):
        self.compiles = 0
        self.budget: Optional[int] = RECOMPILE_BUDGET    # (shared by a module's concrete_shapes traces)
        self.budget_warned = False
        self.previous: Optional[Tuple[int, Tuple[Tuple[str, str], ...]]] = None   # (number, inputs) of the latest
        #: (mode, inputs, log name) -> the signature number (the log name tells a guard program from its model's)
        self.seen: Dict[Any, int] = {}
        self.dumps = open_dumps(dump_dir)
        #: (the compile count then, what happened) when a trace last changed the model's structure, or a hook was
        #: registered or removed: every program compiled until then was dropped (fxla.compile's _drop_programs)
        self.restructured: Optional[Tuple[int, str]] = None


@dataclass
class CompiledSignature:
    """A compiled signature's number and its ``dump_dir`` folder (``dump`` ``None``: no dumps), kept on its entry
    (``Entry.compiled``) for the gradient programs compiled for it later."""

    number: int
    dump: Optional[GraphDump] = None
    folder: str = ""


@dataclass
class _Compiling:
    """The compile under way: its number, inputs, why, the phases done, and where its stages are dumped
    (``stages``: the stages whose files are dumped, ``None``: all)."""

    number: int
    described: str
    reason: str
    phases: List[Tuple[str, float, str]] = field(default_factory=list)
    dump: Optional[GraphDump] = None
    folder: str = ""
    stablehlo: str = ""
    stages: Optional[frozenset] = None

    def dump_fxla(self, program) -> None:
        """Dump ``program`` (a gradient program's half of the differentiated program) as ``fxla.mlir``."""
        if self.dump is not None:
            self.dump.write("fxla.mlir", program.text(), self.folder)


class CompileControl:
    """The compile log, the recompile budget, ``precompile`` and the dumps of a compiled module (see the module
    docstring).  The module provides ``__name__``, ``_describe_call(args)``, ``_binding``, ``_modes``,
    ``max_signatures``, ``_history`` (a :class:`CompileHistory`), ``_signatures`` and ``_entry(args)``, calls
    :meth:`_compile_started` and :meth:`_log_compile` around each compile and gives its pipeline
    :func:`phase_observer`."""

    @property
    def recompile_budget(self) -> Optional[int]:
        """How many signatures the module (with its ``concrete_shapes`` traces) compiles before fxla warns."""
        return self._history.budget

    @recompile_budget.setter
    def recompile_budget(self, budget: Optional[int]) -> None:
        self._history.budget = budget
    #: set by the torch.compile backend: which dynamo graph this module is (in the log)
    _graph_label: Optional[str] = None
    _graph_dump: Optional[GraphDump] = None      # this graph's folder in dump_dir (made at its first dump)
    _compiling: Optional[_Compiling] = None
    #: set by fxla.per_shape for the traces of data-dependent variants and their guard programs: why their
    #: first signature compiles (the inputs alone would read as a signature dropped from the cache)
    _trace_reason: Optional[str] = None

    @property
    def _compiles(self) -> int:
        return self._history.compiles

    @property
    def _log_name(self) -> str:
        return self.__name__ if self._graph_label is None else f"{self.__name__} ({self._graph_label})"

    def _inputs(self, args) -> Tuple[Tuple[str, str], ...]:
        return tuple((node.target, describe_value(value)) for node, value in zip(self._binding.placeholders, args))

    def _why(self, inputs, mode) -> str:
        """Why the signature ``inputs`` compiles in ``mode`` (see the module docstring)."""
        if self._trace_reason is not None and not self._signatures.entries:
            return self._trace_reason
        history = self._history
        earlier = history.seen.get((mode, inputs, self._log_name))
        if earlier is not None and history.restructured is not None and earlier <= history.restructured[0]:
            return f"the same inputs as signature #{earlier}, which was dropped when {history.restructured[1]}"
        if earlier is not None:
            return (f"the same inputs as signature #{earlier}, which was dropped from the in-memory cache "
                    f"(max_signatures={self.max_signatures})"
                    + ("" if self._modes.watch.modules else ", or traced again for another mode: train()/eval(), "
                       "a plain value it reads, the caller's grad mode"))
        other = next(((m, n) for (m, seen, name), n in history.seen.items()
                      if seen == inputs and name == self._log_name), None)
        if other is not None:
            return (f"{self._modes.watch.describe_change(other[0], mode)}: each mode compiles its own signatures; "
                    f"signature #{other[1]} has these inputs in the other mode")
        if history.previous is None:
            return "the first call"
        number, previous = history.previous
        old, new = dict(previous), dict(inputs)
        changed = [f"{name} {old.get(name, _ABSENT)} -> {new.get(name, _ABSENT)}"
                   for name in dict.fromkeys([*old, *new]) if old.get(name) != new.get(name)]
        more = len(changed) - _SHOWN_CHANGES
        shown = changed[:_SHOWN_CHANGES] + ([f"and {more} more"] if more > 0 else [])
        return f"changed from signature #{number}: " + ("; ".join(shown) or "no input (another trace)")

    def _compile_started(self, args) -> float:
        """A compile of ``args``' signature begins: its number, reason and (``dump_dir``) folder are fixed now."""
        history = self._history
        inputs, mode = self._inputs(args), self._modes.mode
        number, reason = history.compiles + 1, self._why(inputs, mode)
        history.seen[(mode, inputs, self._log_name)] = number
        history.previous = (number, inputs)
        record = self._compiling = _Compiling(number, self._describe_call(args), reason)
        if history.dumps is not None:
            if self._graph_dump is None:
                self._graph_dump = history.dumps.graph(self.__name__)
            record.dump, record.folder = self._graph_dump, self._graph_dump.signature(number)
            record.dump.write("signature.txt", f"{self._log_name}: input signature #{number}\ninputs: "
                                               f"{record.described}\nwhy compiled: {reason}", record.folder)
        return time.perf_counter()

    def _phases_abandoned(self, what: str) -> None:
        """The phases so far of the compile under way made nothing it uses (``what``: a polymorphic lowering that
        failed, before this call's shapes are lowered on their own): they count as one phase named ``what``, and
        the lowering that follows is this compile's own."""
        record = self._compiling
        if record is not None and record.phases:
            record.phases[:] = [(what, sum(t for _, t, _ in record.phases), "")]

    def _phase_done(self, stage: str, result, seconds: float) -> None:
        """The pipeline's observer: note the phase of the compile under way, and dump what it made."""
        record = self._compiling
        if record is None:
            return
        if stage == "prepare" and any(done == "prepare" for done, _, _ in record.phases):
            self._compiling = None        # a lowering that is not this compile's (the compile before it failed)
            return
        record.phases.append((stage, seconds, phase_detail(stage, result)))
        if record.dump is not None and (record.stages is None or stage in record.stages):
            for name, text in stage_files(stage, result, record):
                record.dump.write(name, text, record.folder)

    def _log_compile(self, args, started: float) -> CompiledSignature:
        """Log the signature ``args`` just compiled (since ``started``) and warn once past the budget; returns its
        number and dump folder."""
        history, record = self._history, self._compiling
        self._compiling = None
        history.compiles += 1
        seconds = time.perf_counter() - started
        phases = _phases_done(record, seconds)
        if logger.isEnabledFor(logging.INFO):
            logger.info("%s: compiled input signature #%d (%s) in %.2f s; why: %s; phases: %s", self._log_name,
                        history.compiles, self._describe_call(args), seconds,
                        record.reason if record else "?", phases)
        if CACHE.isEnabledFor(logging.DEBUG):
            CACHE.debug("%s: in-memory cache miss: compiled input signature #%d", self._log_name, history.compiles)
        budget = self.recompile_budget
        if budget is not None and history.compiles > budget and not history.budget_warned:
            history.budget_warned = True
            warnings.warn(RecompileWarning(
                f"{self.__name__} has compiled {history.compiles} input signatures (more than its recompile_budget "
                f"of {budget}); the latest was ({self._describe_call(args)}), compiled because: "
                f"{record.reason if record else '?'}\nwhy: every new shape, dtype or "
                f"non-tensor argument is lowered and compiled once, which costs far more than a call\nfix: pad "
                f"inputs to a few sizes (buckets; with an attention mask for the padding), pass changing Python "
                f"numbers as 0-d tensors, or precompile the sizes you serve with fast.precompile(...); see the "
                f"'fxla.compile' log (logging.INFO) for every compile and why, and set fast.recompile_budget to "
                f"change the budget"), stacklevel=4)
        if record is None or record.dump is None:
            return CompiledSignature(history.compiles)
        return CompiledSignature(history.compiles, record.dump, record.folder)

    @contextlib.contextmanager
    def _gradient_compile(self, signature: Optional[CompiledSignature], what: str, sources: str, why: str, *,
                          verb: str = "compiled"):
        """The compile of one gradient program of ``signature`` (``what``: ``"forward with residuals"``,
        ``"backward"`` ...; ``sources``: the tensors it differentiates with respect to; ``why``: what made it
        compile now), inside the ``with`` block: the phases the block runs through the module's pipeline are
        noted and dumped (``stablehlo``, ``layout``, ``compile``) in a new folder in the signature's folder, named
        after ``what`` (lower case, hyphens: ``forward-with-residuals``); the block dumps the program's own half
        of the differentiated program with the yielded record's ``dump_fxla``.  When the block ends without an
        error: one ``fxla.compile`` INFO record (``verb`` the program ``what`` for input signature ``#n``) and
        ``phases.txt``; on an error, neither (the stages dumped so far stay)."""
        number = signature.number if signature is not None else 0     # (0: a signature whose compile record failed)
        record = _Compiling(number, sources, why, stages=_GRADIENT_STAGES)
        if signature is not None and signature.dump is not None:
            record.dump = signature.dump
            record.folder = signature.dump.subfolder(signature.folder, what.lower().replace(" ", "-"))
            record.dump.write("gradient.txt", f"{self._log_name}: {what} for input signature #{number}\n"
                                              f"gradients of: {sources}\nwhy compiled: {why}", record.folder)
        outer, self._compiling = self._compiling, record
        started = time.perf_counter()
        try:
            yield record
        finally:
            self._compiling = outer
        seconds = time.perf_counter() - started
        phases = _phases_done(record, seconds)
        if logger.isEnabledFor(logging.INFO):
            logger.info("%s: %s the %s for input signature #%d (gradients of %s) in %.2f s; why: %s; phases: %s",
                        self._log_name, verb, what, number, sources, seconds, why, phases)

    def precompile(self, *signatures: Any) -> int:
        """Compile each of ``signatures`` (a tuple of example inputs, as a call takes them, or one tensor) now,
        ahead of the calls that would; returns how many were new."""
        new = 0
        for example in signatures:
            args = example if isinstance(example, tuple) else (example,)
            before = self._compiles
            self.executable_for(*args)
            new += self._compiles - before
        return new


def _phases_done(record: Optional[_Compiling], seconds: float) -> str:
    """The phases of the compile ``record`` (which took ``seconds``) as its log record lists them; also written
    to its dump folder (``phases.txt``)."""
    if record is None:
        return "none"
    if record.dump is not None:
        record.dump.write("phases.txt", f"total {seconds:.3f} s\n" + "\n".join(
            f"{stage} {t:.3f} s ({detail})" for stage, t, detail in record.phases), record.folder)
    return ", ".join(f"{stage} {t:.3f} s" + (f" ({detail})" if stage == "compile" else "")
                     for stage, t, detail in record.phases) or "none"
