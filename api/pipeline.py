"""The compile pipeline: the one owner of fxla's stages, run in order by every caller.

=========  ===================================================  ==========================================
stage      what it does                                          result
=========  ===================================================  ==========================================
prepare    shape propagation, functionalization (frontend)      :class:`~fxla.frontend.passes.prepare.PreparedGraph`
fxla       one lowering rule per node, fxla's verifier          :class:`~fxla.lowering.FxlaProgram`
refine     (symbolic dims only) the polymorphic program made    :class:`~fxla.lowering.FxlaProgram`
           static for one call's sizes, fxla's verifier
vjp        (gradients only) forward + residuals, and backward   :class:`~fxla.lowering.autodiff.Differentiated`
stablehlo  fxla -> StableHLO patterns, MLIR's verifier          verified StableHLO (:class:`Stages`)
layout     device layout passes (single device: pool, params)   :class:`Target`
compile    PJRT compile (or the on-disk cache)                  :class:`~fxla.runtime.Executable`
=========  ===================================================  ==========================================

``fxla.compile`` (per input signature), ``fxla.export``, ``fxla-dump`` and ``fxla.testing`` all run these
methods of :class:`Pipeline`; none spells the stages out itself.  Observers see each stage's result and wall
time (``fxla-dump -v``), and logger ``fxla.phases`` records each at DEBUG (:mod:`fxla.base.logs`);
``print_ir_after_all`` prints the IR after every pass to stderr: functionalization,
the lowering to fxla, each pass of the StableHLO stage and each device layout pass (fxla ops in the
dialect's own syntax).
"""
from __future__ import annotations

import io
import re
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import torch
from torch.utils import _pytree as pytree

from fxla.base.logs import PHASES
from fxla.errors import FxlaError
from fxla.frontend import GraphModule
from fxla.frontend.tracer import TRACING
from fxla.frontend.passes.prepare import PreparedGraph, prepare_graph
from fxla.lowering import FxlaProgram, lower_to_fxla, lower_to_stablehlo, verify_stablehlo
from fxla.lowering.errors import LoweringError
from fxla.lowering.autodiff import Differentiated, differentiate
from fxla.lowering.dot_rows import largest_dot_rows
from fxla.lowering.passes import device_layouts, lower_polymorphic_to_stablehlo, print_ir_after
from fxla.lowering.index_bounds import input_index_checks
from fxla.lowering.precision import full_precision_pass
from fxla.lowering.refine import refine, refine_stablehlo_like
from fxla.runtime import Executable, compile_stablehlo
from fxla.runtime.executable import GRADIENT_XLA_OPTIONS, forward_xla_options
from fxla.runtime.buffers import example_tensor, is_array

__all__ = ["COMPILING", "STAGES", "Pipeline", "Stages", "StagesError", "Target", "Observer", "readable_hlo"]

#: Tracing, lowering and compiling take this lock (one at a time per process: they write shared graph metadata,
#: and tracing patches torch's module classes); calls of compiled signatures run concurrently without it.  It is
#: the tracer's own lock (:data:`fxla.frontend.tracer.TRACING`), which every trace takes, user traces included:
#: one lock, so a compile and a trace in two threads cannot each hold one and wait for the other.
COMPILING = TRACING

#: the stages, in order (see the module docstring)
STAGES = ("prepare", "fxla", "refine", "vjp", "stablehlo", "layout", "compile")

#: ``observer(stage, result, seconds)``: called after each stage with its result and wall time
Observer = Callable[[str, Any, float], None]

#: what each stage does, as the ``fxla.phases`` log says it
_PHASE_WORK = {"prepare": "shape propagation, functionalization", "fxla": "lowering to the fxla dialect, verifier",
               "refine": "polymorphic program refined to the call's sizes, verifier",
               "vjp": "differentiation", "stablehlo": "conversion to StableHLO, MLIR verifier",
               "layout": "device layout passes"}


def phase_detail(stage: str, result) -> str:
    """What the ``fxla.phases`` record of ``stage`` says besides its time: the work it covers, and for
    ``compile`` whether XLA compiled or the on-disk cache held the executable."""
    if stage == "compile":
        return "executable from the on-disk cache" if getattr(result, "from_cache", False) else "XLA compile"
    if stage == "prepare":
        return f"{_PHASE_WORK[stage]}; {len(result.graph_module.graph.nodes)} nodes"
    return _PHASE_WORK.get(stage, stage)


@dataclass
class Stages:
    """The IR of every stage for one input signature (what ``CompiledModule.lower`` returns and ``fxla-dump``
    prints); :attr:`hlo` is XLA's optimised HLO of the signature's executable."""

    #: the captured graph (torch.fx-style listing)
    graph: str
    #: Python regenerated from the graph
    code: str
    #: the fxla dialect module
    fxla: str
    #: the verified StableHLO
    stablehlo: str
    #: the same with source locations (what is compiled, so XLA's HLO keeps them)
    stablehlo_debug: str
    #: the lowered program (:class:`~fxla.lowering.FxlaProgram`)
    program: FxlaProgram
    #: the graph that was lowered (in-place ops rewritten)
    prepared: Optional[PreparedGraph] = field(default=None, repr=False)
    #: the compiled executable, once the ``compile`` stage ran for these stages (or :attr:`hlo` was read)
    executable: Optional[Executable] = field(default=None, repr=False)
    #: how to compile this signature when :attr:`hlo` is read first (``CompiledModule.lower`` sets it)
    compile_for_hlo: Optional[Callable[[], Executable]] = field(default=None, repr=False, compare=False)

    @property
    def hlo(self) -> str:
        """XLA's optimised HLO of the executable compiled for this signature (what ``executable_for(x).hlo_text()``
        gives, after fxla's device layout passes) without XLA's FileNames/FunctionNames/FileLocations/StackFrames
        tables: each instruction's ``stack_frame_id`` is written as the ``source_file``/``source_line`` of its frame
        (:func:`readable_hlo`).  Compiles the signature on first access if no ``compile`` stage ran for it yet
        (from the on-disk cache when it holds it); raises :class:`StagesError` for stages nothing can compile
        (made by :meth:`Pipeline.lower` alone)."""
        if self.executable is None:
            if self.compile_for_hlo is None:
                raise StagesError("these Stages were lowered without a device: there is no executable to read "
                                  "the HLO of\nfix: use CompiledModule.lower(*inputs).hlo, or run "
                                  "Pipeline.layout and Pipeline.compile on them first")
            self.executable = self.compile_for_hlo()
        return readable_hlo(self.executable.hlo_text())


class StagesError(FxlaError):
    """A stage's IR was asked of :class:`Stages` that never ran it (``hlo`` of stages nothing compiled)."""


#: XLA's tables of source locations after the ``HloModule`` line (``FileNames`` ... ``StackFrames``)
_HLO_TABLE = re.compile(r"^(FileNames|FunctionNames|FileLocations|StackFrames)\n((?:\d+ .*\n?)*)\n*", re.M)
_TABLE_ROW = re.compile(r"^(\d+) (.*)$", re.M)
_FIELD = re.compile(r"(\w+)=(\d+)")
_FRAME_REF = re.compile(r" stack_frame_id=(\d+)")


def readable_hlo(text: str) -> str:
    """XLA's HLO text without the FileNames/FunctionNames/FileLocations/StackFrames tables it prints after the
    ``HloModule`` line (dozens of lines, mostly fxla's own call stack).  The HLO itself is kept: each
    instruction's ``metadata={... stack_frame_id=N}`` names the frame's source instead,
    ``source_file="models.py" source_line=25`` (XLA's OpMetadata fields)."""
    tables = {m.group(1): dict(_TABLE_ROW.findall(m.group(2))) for m in _HLO_TABLE.finditer(text)}
    if not tables:
        return text
    files, locations, frames = (tables.get(k, {}) for k in ("FileNames", "FileLocations", "StackFrames"))

    def source(match) -> str:
        frame = dict(_FIELD.findall(frames.get(match.group(1), "")))
        location = dict(_FIELD.findall(locations.get(frame.get("file_location_id", ""), "")))
        name = files.get(location.get("file_name_id", ""))
        if name is None or "line" not in location:
            return ""
        return f" source_file={name} source_line={location['line']}"    # (file names are printed quoted)

    return _FRAME_REF.sub(source, _HLO_TABLE.sub("", text))


@dataclass
class Target:
    """The StableHLO compiled for one device: ``text`` (without source locations: the cache key and what is
    exported), ``debug_text`` (with them: what XLA compiles), ``layouts``, ``{parameter: permutation}`` for
    the parameters the layout passes store permuted (the caller uploads them so), and for a CPU device
    ``dot_rows``, the rows of its largest matrix product (:func:`fxla.lowering.dot_rows.largest_dot_rows`: what
    picks the dot kernels, :func:`fxla.runtime.executable.forward_xla_options`)."""

    text: str
    debug_text: str
    layouts: Dict[str, Tuple[int, ...]] = field(default_factory=dict)
    dot_rows: Optional[int] = None


def device_target(text: str, debug_text: str, param_names: Sequence[str], platform: str, *,
                  partitioned: bool = False, printed: Optional[Callable[[str, Any], None]] = None,
                  fixed: Sequence[str] = ()) -> Target:
    """The :class:`Target` of the verified StableHLO ``text`` (``debug_text``: the same with source locations) for
    a ``platform`` device: the device passes (:func:`fxla.lowering.passes.device_layouts`) on a fresh parse, the
    trailing arguments ``param_names`` being the parameters.  A ``partitioned`` program (the SPMD partitioner lays
    it out) gets ``fxla-full-precision`` alone, off the CPU.  ``printed(pass, module)`` after each pass; ``fixed``:
    parameters that keep torch's layout.  What :meth:`Pipeline.layout` and :func:`fxla.load` run."""
    if partitioned and platform == "cpu":
        return Target(text, debug_text)
    module = verify_stablehlo(debug_text)
    after = None if printed is None else (lambda name: printed(name, module))
    if partitioned:
        changed, layouts = bool(full_precision_pass(module)), {}
        if after is not None:
            after("fxla-full-precision")
    else:
        small_dots = forward_xla_options(largest_dot_rows(module)) is not None if platform == "cpu" else False
        changed, layouts = device_layouts(module, param_names, platform, after_pass=after, small_dots=small_dots,
                                          fixed=fixed)
    rows = largest_dot_rows(module) if platform == "cpu" and not partitioned else None
    if not changed:
        return Target(text, debug_text, dot_rows=rows)
    return Target(module.operation.get_asm(), module.operation.get_asm(enable_debug_info=True), layouts, rows)


class Pipeline:
    """fxla's compile pipeline (see the module docstring): one method per stage, each reporting to the
    ``observers``.  Holds no state between calls; a caller makes one per compilation or keeps one."""

    def __init__(self, *, observers: Sequence[Observer] = (), print_ir_after_all: bool = False, name: str = ""):
        self.observers = list(observers)
        self.print_ir_after_all = print_ir_after_all
        self.name = name              # what the ``fxla.phases`` log calls the program (the compiled module's name)

    def _stage(self, name: str, fn, *args, **kwargs):
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        seconds = time.perf_counter() - start
        if PHASES.isEnabledFor(logging.DEBUG):
            PHASES.debug("%s: %s took %.3f s (%s)", self.name or "program", name, seconds, phase_detail(name, result))
        for observer in self.observers:
            observer(name, result, seconds)
        return result

    # -- the stages ----------------------------------------------------------------------------------------------
    def prepare(self, gm: GraphModule, example_inputs, symbols=None) -> PreparedGraph:
        """Stage ``prepare``: shapes for ``example_inputs`` (torch tensors, ``jax.Array``\\ s viewed as torch
        examples, or nested tuples/lists/dicts of them) and out-of-place mutation.  torch's random state is left
        as it was (shape propagation may run a random factory, ``torch.randn(n, 3)``, for its shape): compiling on
        a first call must not change what ``torch.manual_seed`` makes of the numbers drawn afterwards."""
        examples = pytree.tree_map(lambda v: example_tensor(v) if is_array(v) else v, tuple(example_inputs))
        with torch.random.fork_rng(devices=[]):
            if symbols is None:
                prepared = self._stage("prepare", prepare_graph, gm, examples)
            else:                    # (``symbols``' fake inputs: sizes are symbols; fxla.frontend.symbolic)
                with symbols.tracing():
                    prepared = self._stage("prepare", prepare_graph, gm, examples)
        if self.print_ir_after_all:
            note = "" if prepared.functionalized else " (no in-place ops, no no_grad region: the captured graph)"
            self._print_ir(f"functionalize{note}", str(prepared.graph_module.graph))
        return prepared

    def to_fxla(self, prepared: PreparedGraph, symbols=None) -> FxlaProgram:
        """Stage ``fxla``: the prepared graph as an fxla-dialect program (verified by fxla's verifier); with
        ``symbols`` (:class:`fxla.frontend.symbolic.SymbolicShapes`) a polymorphic one (verified once refined)."""
        program = self._stage("fxla", lower_to_fxla, prepared, symbols=symbols)
        if self.print_ir_after_all:
            self._print_ir("lower-to-fxla", program.text())
        return program

    def refine(self, program: FxlaProgram, shapes) -> FxlaProgram:
        """Stage ``refine``: the polymorphic ``program`` made static for tensor inputs of ``shapes``
        (:func:`fxla.lowering.refine.refine`)."""
        refined = self._stage("refine", refine, program, shapes)
        if self.print_ir_after_all:
            self._print_ir("fxla-refine", refined.text())
        return refined

    def polymorphic_stablehlo(self, program: FxlaProgram) -> Tuple[Optional[bytes], Optional[str]]:
        """The polymorphic StableHLO of the polymorphic ``program`` (MLIR bytecode; made once per polymorphic
        program, :func:`fxla.lowering.passes.lower_polymorphic_to_stablehlo`), or ``(None, why not)`` where an op
        has no polymorphic StableHLO form yet: each size then converts its refined fxla program instead."""
        start = time.perf_counter()
        try:
            module = lower_polymorphic_to_stablehlo(program.module)
        except Exception as err:  # noqa: BLE001  (a pattern without a polymorphic form: TypeError, MLIR's errors)
            cause = getattr(err, "cause", None) or err           # (a PassFailure: the pattern's diagnostic)
            lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
            if len(lines) > 1 and lines[0].endswith(":"):       # ("Failure while executing pass pipeline:")
                lines = [f"{lines[0]} {lines[1]}"]
            return None, (lines[0] if lines else type(err).__name__)[:300]
        buffer = io.BytesIO()
        module.operation.write_bytecode(buffer)
        PHASES.debug("%s: polymorphic stablehlo took %.3f s", self.name or "program", time.perf_counter() - start)
        return buffer.getvalue(), None

    def refine_stablehlo(self, polymorphic: bytes, program: FxlaProgram):
        """Stage ``stablehlo`` of a size of a polymorphic program: its polymorphic StableHLO (``polymorphic``)
        refined by StableHLO's shape refinement to the argument types of ``program`` (the polymorphic fxla program
        refined to the same sizes, which gives the calls' index checks and fxla's index-bound check;
        :func:`fxla.lowering.refine.refine_stablehlo_like`)."""
        program.input_checks = input_index_checks(program.module, sum(v is None for v in program.input_static))
        return self._stage("stablehlo", refine_stablehlo_like, polymorphic, program.module)

    def to_stablehlo(self, program: FxlaProgram):
        """Stage ``stablehlo``: the fxla program converted and verified by MLIR (a new module; source locations
        kept).  Records the tensor inputs each call must check as indices (``program.input_checks``)."""
        program.input_checks = input_index_checks(program.module, sum(v is None for v in program.input_static))
        return self._stage("stablehlo", lower_to_stablehlo, program.module,
                           print_ir_after_all=self.print_ir_after_all)

    def differentiate(self, program: FxlaProgram, wrt: Sequence[int], cotangents: Sequence[int], *,
                      remat: bool = False, higher: bool = False) -> Differentiated:
        """Stage ``vjp`` (calls that need gradients): ``program`` (fxla dialect, not yet converted) as a forward that
        also returns residuals and a backward (:func:`fxla.lowering.autodiff.differentiate`; ``higher``: a
        derivative of a higher order)."""
        return self._stage("vjp", differentiate, program, wrt, cotangents, remat=remat, higher=higher)

    def lower_program(self, program: FxlaProgram, prepared: PreparedGraph,
                      polymorphic: Optional[bytes] = None) -> Stages:
        """Stage ``stablehlo`` for a program derived from ``prepared``'s (a half of a differentiated program):
        its :class:`Stages`.  ``polymorphic``: the polymorphic StableHLO ``program`` was refined from (its fxla
        form refined to the same sizes), refined by StableHLO's shape refinement instead of converting ``program``
        -- which it still does where that refinement cannot take these sizes (the same program either way)."""
        fxla_text = program.text()
        stablehlo = None
        if polymorphic is not None:
            try:
                stablehlo = self.refine_stablehlo(polymorphic, program)
            except LoweringError as err:
                PHASES.debug("%s: the polymorphic StableHLO does not refine (%s): converting the refined program",
                             self.name or "program", str(err).splitlines()[0][:200])
        if stablehlo is None:
            stablehlo = self.to_stablehlo(program)
        gm = prepared.graph_module
        return Stages(str(gm.graph), gm.code, fxla_text, stablehlo.operation.get_asm(),
                      stablehlo.operation.get_asm(enable_debug_info=True), program, prepared)

    def lower(self, gm: GraphModule, example_inputs) -> Stages:
        """Stages ``prepare``, ``fxla`` and ``stablehlo``: the IR of each for ``example_inputs``."""
        prepared = self.prepare(gm, example_inputs)
        program = self.to_fxla(prepared)
        fxla_text = program.text()
        stablehlo = self.to_stablehlo(program)
        return Stages(str(gm.graph), gm.code, fxla_text, stablehlo.operation.get_asm(),
                      stablehlo.operation.get_asm(enable_debug_info=True), program, prepared)

    def layout(self, stages: Stages, platform: str, *, partitioned: bool = False) -> Target:
        """Stage ``layout``: the device passes (:func:`fxla.lowering.passes.device_layouts`: ``fxla-grouped-conv``,
        ``fxla-pool-layout`` and ``fxla-channels-last`` on a CPU device, ``fxla-full-precision`` on any other,
        ``fxla-param-layout``) on a fresh copy of the verified StableHLO.  A ``partitioned`` program (the SPMD
        partitioner lays it out) gets ``fxla-full-precision`` alone, off the CPU."""
        return self._stage("layout", self._layout, stages, platform, partitioned)

    def _layout(self, stages: Stages, platform: str, partitioned: bool) -> Target:
        printed = None
        if self.print_ir_after_all:
            printed = lambda name, module: self._print_ir(name, module.operation.get_asm())  # noqa: E731
        return device_target(stages.stablehlo, stages.stablehlo_debug, stages.program.param_names, platform,
                             partitioned=partitioned, printed=printed)

    def compile(self, stages: Stages, target: Target, device, *, partitioning=None,
                cache_dir: Optional[str] = None, donate: Sequence[int] = (), gradients: bool = False) -> Executable:
        """Stage ``compile``: PJRT's executable of ``target`` for ``device`` (or ``partitioning``'s mesh),
        from the on-disk cache when it holds one (keyed on the text without source locations); ``donate``: the
        arguments whose buffers a call consumes (:func:`fxla.runtime.compile_stablehlo`); ``gradients``: a
        program of a backward pass (a training step, autograd's forward and backward), compiled with
        :data:`~fxla.runtime.executable.GRADIENT_XLA_OPTIONS`; any other with the options its matrix products
        pick (:func:`~fxla.runtime.executable.forward_xla_options`).  The executable is also kept as
        ``stages.executable`` (:attr:`Stages.hlo`)."""
        stages.executable = self._stage("compile", compile_stablehlo, target.debug_text, device,
                                        partitioning=partitioning, cache_dir=cache_dir, cache_text=target.text,
                                        n_params=len(stages.program.param_names), donate=donate,
                                        xla_options=GRADIENT_XLA_OPTIONS if gradients else forward_xla_options(
                                            target.dot_rows))
        return stages.executable

    @staticmethod
    def _print_ir(after: str, text: str) -> None:
        """``print_ir_after_all`` for a stage or pass outside :func:`~fxla.lowering.passes.run_pipeline` (the
        same banner)."""
        print_ir_after(after, text)
