"""``fxla.compile(model, concrete_shapes=True)``: one concrete-shape trace per input signature.

Models that branch on shapes or pass sizes around as Python ints (Hugging Face transformers and many others)
cannot be traced shape-agnostically.  With ``concrete_shapes=True`` nothing is traced at construction; each
new input signature (argument names given, shapes, dtypes, non-tensor values) is traced with
``Tracer(concrete_shapes=True)`` on those inputs, and the resulting shape-specialised GraphModule is compiled
by its own :class:`~fxla.CompiledModule` (with its fast call plans).  All of them share one set of
device-resident parameters.

With ``dynamic=`` too, a signature leaves the marked dims out: its trace runs on FakeTensors whose marked sizes
are symbols (:class:`~fxla.frontend.concrete.ConcreteShapeTracer` with ``symbols``), so sizes stay nodes of the
graph and what the model's Python decided from them (``if seq > 512``) is a guard of the trace.  The trace's
compiled module lowers polymorphically (:mod:`fxla.symbolic`) with the same symbols.  A call whose sizes break a
guard of the trace raises :class:`~fxla.ShapeConstraintError` naming it and its line (named Dims), or is traced
again for its sizes (``dynamic=True``: at most :data:`MAX_VARIANTS` traces per signature).
"""
from __future__ import annotations

import dataclasses
import inspect
import itertools
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch.utils import _pytree as pytree

from fxla.errors import FxlaError
from fxla.frontend import GraphModule, symbolic_trace
from fxla.frontend.errors import TraceError
from fxla.frontend.symbolic import DynamicSpec, SymbolicShapes
from fxla.frontend.value_guards import check_guards, guard_graph, guards_of
from fxla.frontend.remedies import COMPILE, current, spelled_as
from fxla.runtime.buffers import example_tensor, is_array

from .pipeline import COMPILING
from .recompile import log_trace, logger
from .signature import ArgumentError, signature_key
from .symbolic import fixed_dim_error, leaf_names, marked_dims, symbolic_key


class PerShapeTraces:
    """The per-signature traces of a ``concrete_shapes=True`` module named ``name`` (see the module doc):
    ``make(gm)`` makes the compiled module of one trace (sharing the owner's parameter store); at most
    ``max_signatures`` traces are kept, the oldest dropped first (``drop(module)`` is told)."""

    def __init__(self, name: str, fn, concrete_args, make: Callable[..., Any], drop: Callable[[Any], None],
                 max_signatures: int, dynamic: Optional[DynamicSpec] = None):
        self.name = name
        self.dynamic = dynamic
        self.fn = fn
        self.make, self.drop = make, drop
        self.max_signatures = max_signatures
        self.concrete_args = dict(concrete_args or {})
        self.remedies = current(COMPILE)          # what trace errors tell the user to call (fxla.frontend.remedies)
        forward = type(fn).forward if isinstance(fn, torch.nn.Module) else fn
        params = list(inspect.signature(forward).parameters.values())
        if isinstance(fn, torch.nn.Module):
            params = params[1:]                                    # self
        self.signature = inspect.Signature([p for p in params if p.name not in self.concrete_args])
        self.compiled: Dict[Tuple, Any] = {}                       # signature key -> compiled module
        #: mode -> the traces made for callers under no_grad, of signatures whose trace reads the grad mode or
        #: turns it on (fxla.frontend.grad_enables; :meth:`for_no_grad`)
        self.no_grad: Dict[Tuple, "PerShapeTraces"] = {}
        self.static: set = set()          # symbolic signatures whose trace with symbolic sizes failed (dynamic=True)
        if dynamic is not None and not any(p.kind == p.VAR_KEYWORD for p in params):
            dynamic.check_names([p.name for p in self.signature.parameters.values()],
                                "use the names of the model's forward arguments")

    def for_no_grad(self, mode) -> "PerShapeTraces":
        """The traces of ``mode`` made for callers under ``no_grad`` (made empty the first time)."""
        with COMPILING:
            made = self.no_grad.get(mode)
            if made is None:
                made = self.no_grad[mode] = PerShapeTraces(self.name, self.fn, self.concrete_args, self.make,
                                                           self.drop, self.max_signatures, self.dynamic)
                made.remedies = self.remedies
            return made

    def drop_no_grad(self) -> None:
        """Every trace made for callers under ``no_grad`` goes."""
        for made in list(self.no_grad.values()):
            drop_traces(made.compiled, self.drop)
        self.no_grad.clear()

    def bind(self, args, kwargs) -> Dict[str, Any]:
        """The arguments a call gives explicitly, by parameter name, in parameter order."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as err:
            raise ArgumentError(f"{self.name}(): {err}\nfix: call it with the arguments of the model's "
                                f"forward {self.signature}") from None
        return dict(bound.arguments)

    def module_for(self, args, kwargs) -> Tuple[Any, Tuple]:
        """The compiled module of this call's signature (tracing and compiling it if new), and its arguments:
        those the trace reads as inputs (a Python value given as a whole argument -- ``use_cache=False``,
        ``num_steps=3`` -- is a constant of its trace, and part of the signature).  A signature whose trace
        decided data-dependent values has variants: the first whose guards hold for this call's data is used
        (:class:`Variants`); when none does, the call is traced again."""
        given = self.bind(args, kwargs)
        inputs = tuple(v for v in given.values() if not _python_value(v))
        sized = self._sized_call(given, inputs) if self.dynamic is not None else None
        module = self._sized_module(sized, given, inputs) if sized is not None else None
        if module is not None:
            return module, inputs
        key = (tuple(given), signature_key(tuple(given.values())))
        module = self.compiled.get(key)
        if module is None:
            with COMPILING:                       # (another thread may have traced it meanwhile)
                module = self.compiled.get(key) or self._trace(key, given, inputs)
        if isinstance(module, Variants):
            chosen = module.choose(inputs)
            if chosen is None:
                with COMPILING:
                    chosen = module.choose(inputs) or self._trace(key, given, inputs, module)
            module = chosen
        return module, inputs

    def _trace(self, key, given, inputs, variants: Optional["Variants"] = None):
        """Trace the model for the call ``given`` (parameter name -> value; ``inputs``: the values it reads as
        inputs) and make its compiled module (a module whose trace decided data-dependent values becomes a
        variant of ``variants``, or of new ones)."""
        fixed = {k: v for k, v in given.items() if _python_value(v)}
        examples = {k: _example(v) for k, v in given.items() if k not in fixed}
        started = time.perf_counter()
        with spelled_as(self.remedies):
            gm = symbolic_trace(self.fn, concrete_args={**self.concrete_args, **fixed}, example_inputs=examples,
                                value_guards=True)
        log_trace(self.fn, gm.graph, started)
        module = self.make(gm)
        guards = guards_of(gm.graph)
        if guards:
            decided = "; ".join(g.describe() for g in guards[:3]) + (" ..." if len(guards) > 3 else "")
            checker = self._guard_program(gm, f" ({decided})")
            module._trace_reason = (f"the call's data decided data-dependent values otherwise: a new variant of "
                                    f"the signature ({decided})" if variants is not None else
                                    f"a new input signature whose trace decided data-dependent values ({decided})")
            variants = variants if variants is not None else Variants(self.name, self.drop)
            module = variants.add(guards, checker, module, inputs)
            if key in self.compiled:
                return module
            self.compiled[key] = variants
        else:
            self.compiled[key] = module
        self._evict()
        return module

    def _evict(self) -> None:
        """At most ``max_signatures`` signatures: the oldest trace goes (with its variants)."""
        while len(self.compiled) > self.max_signatures:
            _drop_entry(self.compiled.pop(next(iter(self.compiled))), self.drop)

    def _guard_program(self, gm, decided: str, symbols=None):
        """The compiled program that computes the guard values of ``gm``'s trace (``decided``: what they decided,
        for the log; ``symbols``: lowered polymorphically with them)."""
        program = GraphModule(gm, guard_graph(gm.graph), f"{type(gm).__name__}Guards")
        checker = self.make(program) if symbols is None else self.make(program, symbols)   # (make(gm) suffices)
        checker._trace_reason = f"the guard program of a trace that decided data-dependent values{decided}"
        checker._graph_label = "guard program"
        return checker

    # -- dynamic=: traces with symbolic sizes ---------------------------------------------------------------------
    def _sized_call(self, given, inputs) -> Optional["SizedCall"]:
        """The call as a trace with symbolic sizes sees it, or None where no marked dim can be a symbol (sizes 0
        and 1 never are: such a call is traced for its shapes alone)."""
        names = [k for k, v in given.items() if not _python_value(v)]
        spec = self.dynamic.restricted(names)
        leaves, tree, dims, _, small = marked_dims(spec, names, inputs)
        if not dims or small:
            return None
        fixed = tuple((k, type(v), v) for k, v in given.items() if _python_value(v))     # (2 and 2.0 differ)
        key = ("sized", tuple(given), str(tree), fixed, symbolic_key(leaves, dims, {}))
        return SizedCall(key, spec, names, leaves, tree, dims, leaf_names(names, inputs))

    def _sized_module(self, call: "SizedCall", given, inputs):
        """The module of a trace with symbolic sizes for the call (traced now if none fits), or None where such a
        trace failed and the spec is not strict (``dynamic=True``: the signature is traced per shape from then on,
        logged)."""
        if call.key in self.static:
            return None
        variants = self.compiled.get(call.key)
        problem = None
        if variants is not None:
            module, problem = variants.choose(call, inputs)
            if module is not None:
                return module
            if call.spec.strict and problem is not None:
                raise problem
        with COMPILING:
            variants = self.compiled.get(call.key)
            if variants is not None:
                module, problem = variants.choose(call, inputs)
                if module is not None:
                    return module
            try:
                return self._sized_trace(call, given, inputs, problem)
            except TraceError as err:
                if call.spec.strict:
                    raise
                self.static.add(call.key)
                logger.info("%s: no trace with symbolic sizes for %s (%s): traced per shape", self.name,
                            ", ".join(call.names), str(err).splitlines()[0])
                return None

    def _sized_trace(self, call: "SizedCall", given, inputs, problem):
        fixed = {k: v for k, v in given.items() if _python_value(v)}
        symbols = SymbolicShapes(call.dims, call.leaves)
        fakes = dict(zip(call.names, pytree.tree_unflatten(symbols.fake_leaves, call.tree)))
        started = time.perf_counter()
        with spelled_as(self.remedies):
            gm = symbolic_trace(self.fn, concrete_args={**self.concrete_args, **fixed}, example_inputs=fakes,
                                symbols=symbols, value_guards=True, real_inputs=dict(zip(call.names, inputs)))
        log_trace(self.fn, gm.graph, started)
        symbols.traced = len(symbols.env.guards)
        fixed_dims = symbols.specialized()
        if fixed_dims and call.spec.strict:
            raise fixed_dim_error(
                fixed_dims, "the model's Python reads it as the number",
                why="int(), len(), range() or a Python index of a size makes the traced program right for that "
                    "size only",
                fix="keep the size a tensor size in the model (x.size(1), not int(x.size(1))), or leave that dim "
                    "static (drop it from dynamic=)")
        module = self.make(gm, symbols)
        module._trace_reason = (f"sizes that break a guard of the earlier traces ({str(problem).splitlines()[0]})"
                                if problem is not None else "a new input signature (symbolic sizes)")
        guards, checker = guards_of(gm.graph), None
        if guards:               # (data-dependent values decided from this call's data: the program that checks them)
            checker = self._guard_program(gm, "", SymbolicShapes(call.dims, call.leaves))   # (polymorphic too)
            verify_guards(self.name, guards, checker, inputs, lambda: (self.drop(checker), self.drop(module)))
            module.value_guards, module.guard_checker = guards, checker     # (fxla.export writes both)
            module.variant = next(_VARIANT_NUMBERS)                  # (fxla.compile_step keys its programs by it)
        variants = self.compiled.get(call.key)
        if variants is None:
            variants = self.compiled[call.key] = SizeVariants(self.name, self.drop)
        variants.add(_SizedTrace(symbols, module, guards, checker))
        self._evict()
        return module


@dataclasses.dataclass
class SizedCall:
    """A call of a ``dynamic=`` module as its traces with symbolic sizes see it: the symbolic signature ``key``,
    the spec for the arguments given, their ``names``, the flat ``leaves`` of the tensor inputs and their
    ``tree``, the marked ``dims`` (leaf -> {dim: Dim}) and the leaves' names for messages."""

    key: Any
    spec: DynamicSpec
    names: List[str]
    leaves: List[Any]
    tree: Any
    dims: Dict[int, Dict[int, Any]]
    leaf_names: List[str]


@dataclasses.dataclass
class _SizedTrace:
    """One trace with symbolic sizes: its symbols (the first ``symbols.traced`` guards are the trace's: what its
    Python decided from the sizes), its compiled ``module``, and the data-dependent values it decided from the
    call's data with the compiled program that checks them (:mod:`fxla.frontend.value_guards`), if any."""

    symbols: Any
    module: Any
    guards: list
    checker: Any


class SizeVariants:
    """The traces with symbolic sizes of one symbolic signature, most recently used first, at most
    :data:`MAX_VARIANTS` (:class:`_SizedTrace`)."""

    def __init__(self, name: str, drop: Callable[[Any], None]):
        self.name, self.drop = name, drop
        self.items: List[_SizedTrace] = []

    def choose(self, call: SizedCall, inputs):
        """``(the module of the first trace whose size guards and value guards hold for the call, None)``; else
        ``(None, what the most recent trace's size guards say)``, or ``(None, None)`` where some trace's size
        guards hold and the call's data decides otherwise (a new trace, whatever the Dims).  A trace whose
        polymorphic lowering failed (a named Dim's error: nothing was compiled from it) is dropped, so the next
        call is traced again and meets that error, not the guards of a program that never existed."""
        first, sizes_hold = None, False
        for item in list(self.items):
            if getattr(item.module, "_symbolic_failed", False):
                self.items.remove(item)
                self._drop(item)
                continue
            problem = item.symbols.violation(call.leaves, call.leaf_names, guards=item.symbols.traced)
            if problem is not None:
                first = first or problem
                continue
            sizes_hold = True
            if item.guards and check_guards(item.guards, _guard_values(item.checker, inputs)) is not None:
                continue
            return item.module, None
        return None, None if sizes_hold else first

    def add(self, item: _SizedTrace) -> None:
        self.items.insert(0, item)
        if len(self.items) > MAX_VARIANTS:
            self._drop(self.items.pop())
        if len(self.items) > 1:
            logger.info("%s: traced again for sizes or data that break the guards of its other traces (%d traces "
                        "of the signature now)", self.name, len(self.items))

    def drop_all(self) -> None:
        for item in self.items:
            self._drop(item)
        self.items.clear()

    def _drop(self, item: _SizedTrace) -> None:
        self.drop(item.module)
        if item.checker is not None:
            self.drop(item.checker)


class ValueGuardError(FxlaError):
    """A value a trace decided from the call's data (:mod:`fxla.frontend.value_guards`) is not what the compiled
    program computes from the same data."""


class Variants:
    """The traces of one input signature that decided data-dependent values (:mod:`fxla.frontend.value_guards`),
    most recently used first, at most :data:`MAX_VARIANTS`: each is ``(guards, checker, module)``, where the
    checker is the compiled program of the guard values.  :meth:`choose` runs the checkers on a call's inputs and
    returns the module of the first variant whose guards all hold."""

    def __init__(self, name: str, drop: Callable[[Any], None]):
        self.name, self.drop = name, drop
        self.items: List[Tuple[Any, Any, Any]] = []
        self._lock = threading.Lock()

    def choose(self, inputs) -> Any:
        for item in list(self.items):           # (a snapshot: another thread may add or reorder meanwhile)
            guards, checker, module = item
            if check_guards(guards, _guard_values(checker, inputs)) is None:
                with self._lock:                # most recently used first
                    if item in self.items:
                        self.items.remove(item)
                        self.items.insert(0, item)
                return module
        return None

    def add(self, guards, checker, module, inputs) -> Any:
        """A new variant, traced on ``inputs``: its guards must hold for them (else :class:`ValueGuardError`)."""
        verify_guards(self.name, guards, checker, inputs, lambda: self._drop((guards, checker, module)))
        module.value_guards, module.guard_checker = guards, checker     # (fxla.export writes both)
        module.variant = next(_VARIANT_NUMBERS)                  # (fxla.compile_step keys its programs by it)
        self.items.insert(0, (guards, checker, module))
        if len(self.items) > MAX_VARIANTS:
            self._drop(self.items.pop())
        if len(self.items) > 1:
            logger.info("%s: traced again for data-dependent values (%d variants of the signature now): %s",
                        self.name, len(self.items), "; ".join(g.describe() for g in guards))
        return module

    def drop_all(self) -> None:
        for item in self.items:
            self._drop(item)
        self.items.clear()

    def _drop(self, item) -> None:
        """A variant goes: its program and its guard program no longer follow the parameter store."""
        _, checker, module = item
        self.drop(checker)
        self.drop(module)


def verify_guards(name: str, guards, checker, inputs, drop: Callable[[], None]) -> None:
    """A new trace's value guards must hold for the call it was traced on (``inputs``), else the trace is dropped
    and :class:`ValueGuardError` raised."""
    broken = check_guards(guards, _guard_values(checker, inputs))
    if broken is not None:
        drop()
        raise ValueGuardError(
            f"{name}: the value of {broken.describe()} was decided from the call's data by eager PyTorch "
            f"during the trace, and the compiled program computes another from the same data",
            why="fxla runs a program specialised to a data-dependent value only where it recomputes that value "
                "and finds it equal; here eager and the compiled program disagree (rounding, or random numbers)",
            fix="keep the decision in the program (torch.where instead of an `if` on tensor values), or "
                "compute the value outside the compiled function and pass it as a Python argument")


def _drop_entry(entry, drop: Callable[[Any], None]) -> None:
    """One signature's entry of :attr:`PerShapeTraces.compiled` goes: ``drop`` is told of each of its compiled
    modules and guard programs."""
    entry.drop_all() if isinstance(entry, (Variants, SizeVariants)) else drop(entry)


def drop_traces(made: Dict[Tuple, Any], drop: Callable[[Any], None]) -> None:
    """Every trace of the per-shape traces ``made`` (a :attr:`PerShapeTraces.compiled`) goes."""
    for entry in list(made.values()):
        _drop_entry(entry, drop)
    made.clear()


def modules_of(entry) -> List[Any]:
    """The compiled modules of one signature's entry in :attr:`PerShapeTraces.compiled`: the module, or each
    variant's (not their guard programs)."""
    if isinstance(entry, SizeVariants):
        return [item.module for item in entry.items]
    return [module for _, _, module in entry.items] if isinstance(entry, Variants) else [entry]


#: how many data-dependent variants one input signature keeps (least recently used dropped first)
MAX_VARIANTS = 8

#: a number per variant ever made (never reused, unlike ``id()``)
_VARIANT_NUMBERS = itertools.count(1)


def _guard_values(checker, inputs) -> Tuple:
    with torch.no_grad():
        values = checker(*inputs)
    return values if isinstance(values, tuple) else (values,)


def _python_value(value) -> bool:
    """A call argument that is a plain Python value (specialised: its trace sees the value, not a placeholder)."""
    return value is None or isinstance(value, (bool, int, float, str))


def _example(value):
    """A torch example of a call argument (jax arrays are viewed as torch tensors for tracing)."""
    return example_tensor(value) if is_array(value) and not isinstance(value, torch.Tensor) else value
