"""The compile pipeline: the one owner of fxla's stages, run in order by every caller.

=========  ===================================================  ==========================================
stage      what it does                                          result
=========  ===================================================  ==========================================
prepare    shape propagation, functionalization (frontend)      :class:`~fxla.frontend.passes.prepare.PreparedGraph`
fxla       one lowering rule per node, fxla's verifier          :class:`~fxla.lowering.FxlaProgram`
vjp        (gradients only) forward + residuals, and backward   :class:`~fxla.lowering.autodiff.Differentiated`
stablehlo  fxla -> StableHLO patterns, MLIR's verifier          verified StableHLO (:class:`Stages`)
layout     device layout passes (single device: pool, params)   :class:`Target`
compile    PJRT compile (or the on-disk cache)                  :class:`~fxla.runtime.Executable`
=========  ===================================================  ==========================================

``fxla.compile`` (per input signature), ``fxla.export``, ``fxla-dump`` and ``fxla.testing`` all run these
methods of :class:`Pipeline`; none spells the stages out itself.  Observers see each stage's result and wall
time (``fxla-dump -v``); ``print_ir_after_all`` prints the IR after every pass of the StableHLO stage.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import torch
from torch.utils import _pytree as pytree

from fxla.frontend import GraphModule
from fxla.frontend.passes.prepare import PreparedGraph, prepare_graph
from fxla.lowering import FxlaProgram, lower_to_fxla, lower_to_stablehlo, verify_stablehlo
from fxla.lowering.autodiff import Differentiated, differentiate
from fxla.lowering.passes import device_layouts
from fxla.lowering.precision import full_precision_pass
from fxla.runtime import Executable, compile_stablehlo
from fxla.runtime.buffers import example_tensor, is_array

__all__ = ["COMPILING", "STAGES", "Pipeline", "Stages", "Target", "Observer"]

#: Tracing, lowering and compiling take this lock (one at a time per process: they write shared graph metadata,
#: and tracing patches torch's module classes); calls of compiled signatures run concurrently without it.
COMPILING = threading.RLock()

#: the stages, in order (see the module docstring)
STAGES = ("prepare", "fxla", "vjp", "stablehlo", "layout", "compile")

#: ``observer(stage, result, seconds)``: called after each stage with its result and wall time
Observer = Callable[[str, Any, float], None]


@dataclass
class Stages:
    """The IR of every stage for one input signature (what ``fxla-dump`` prints)."""

    graph: str          # the captured graph (torch.fx-style listing)
    code: str           # Python regenerated from the graph
    fxla: str           # the fxla dialect module
    stablehlo: str      # verified StableHLO
    stablehlo_debug: str  # the same with source locations (what is compiled, so XLA's HLO keeps them)
    program: FxlaProgram
    prepared: Optional[PreparedGraph] = field(default=None, repr=False)   # the graph that was lowered


@dataclass
class Target:
    """The StableHLO compiled for one device: ``text`` (without source locations: the cache key and what is
    exported), ``debug_text`` (with them: what XLA compiles) and ``layouts``, ``{parameter: permutation}`` for
    the parameters the layout passes store permuted (the caller uploads them so)."""

    text: str
    debug_text: str
    layouts: Dict[str, Tuple[int, ...]] = field(default_factory=dict)


class Pipeline:
    """fxla's compile pipeline (see the module docstring): one method per stage, each reporting to the
    ``observers``.  Holds no state between calls; a caller makes one per compilation or keeps one."""

    def __init__(self, *, observers: Sequence[Observer] = (), print_ir_after_all: bool = False):
        self.observers = list(observers)
        self.print_ir_after_all = print_ir_after_all

    def _stage(self, name: str, fn, *args, **kwargs):
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        for observer in self.observers:
            observer(name, result, time.perf_counter() - start)
        return result

    # -- the stages ----------------------------------------------------------------------------------------------
    def prepare(self, gm: GraphModule, example_inputs) -> PreparedGraph:
        """Stage ``prepare``: shapes for ``example_inputs`` (torch tensors, ``jax.Array``\\ s viewed as torch
        examples, or nested tuples/lists/dicts of them) and out-of-place mutation.  torch's random state is left
        as it was (shape propagation may run a random factory, ``torch.randn(n, 3)``, for its shape): compiling on
        a first call must not change what ``torch.manual_seed`` makes of the numbers drawn afterwards."""
        examples = pytree.tree_map(lambda v: example_tensor(v) if is_array(v) else v, tuple(example_inputs))
        with torch.random.fork_rng(devices=[]):
            return self._stage("prepare", prepare_graph, gm, examples)

    def to_fxla(self, prepared: PreparedGraph) -> FxlaProgram:
        """Stage ``fxla``: the prepared graph as an fxla-dialect program (verified by fxla's verifier)."""
        return self._stage("fxla", lower_to_fxla, prepared)

    def to_stablehlo(self, program: FxlaProgram):
        """Stage ``stablehlo``: the fxla program converted and verified by MLIR (a new module; source locations
        kept)."""
        return self._stage("stablehlo", lower_to_stablehlo, program.module,
                           print_ir_after_all=self.print_ir_after_all)

    def differentiate(self, program: FxlaProgram, wrt: Sequence[int], cotangents: Sequence[int], *,
                      remat: bool = False) -> Differentiated:
        """Stage ``vjp`` (calls that need gradients): ``program`` (fxla dialect, not yet converted) as a forward that
        also returns residuals and a backward (:func:`fxla.lowering.autodiff.differentiate`)."""
        return self._stage("vjp", differentiate, program, wrt, cotangents, remat=remat)

    def lower_program(self, program: FxlaProgram, prepared: PreparedGraph) -> Stages:
        """Stage ``stablehlo`` for a program derived from ``prepared``'s (a half of a differentiated program):
        its :class:`Stages`."""
        fxla_text = program.text()
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
        """Stage ``layout``: the device passes (:func:`fxla.lowering.passes.device_layouts`: ``fxla-grouped-conv``
        and ``fxla-pool-layout`` on a CPU device, ``fxla-full-precision`` on any other, ``fxla-param-layout``) on a
        fresh copy of the verified StableHLO.  A ``partitioned`` program (the SPMD partitioner lays it out) gets
        ``fxla-full-precision`` alone, off the CPU."""
        return self._stage("layout", self._layout, stages, platform, partitioned)

    @staticmethod
    def _layout(stages: Stages, platform: str, partitioned: bool) -> Target:
        if partitioned and platform == "cpu":
            return Target(stages.stablehlo, stages.stablehlo_debug)
        module = verify_stablehlo(stages.stablehlo_debug)
        if partitioned:
            changed, layouts = bool(full_precision_pass(module)), {}
        else:
            changed, layouts = device_layouts(module, stages.program.param_names, platform)
        if not changed:
            return Target(stages.stablehlo, stages.stablehlo_debug)
        return Target(module.operation.get_asm(), module.operation.get_asm(enable_debug_info=True), layouts)

    def compile(self, stages: Stages, target: Target, device, *, partitioning=None,
                cache_dir: Optional[str] = None, donate: Sequence[int] = ()) -> Executable:
        """Stage ``compile``: PJRT's executable of ``target`` for ``device`` (or ``partitioning``'s mesh),
        from the on-disk cache when it holds one (keyed on the text without source locations); ``donate``: the
        arguments whose buffers a call consumes (:func:`fxla.runtime.compile_stablehlo`)."""
        return self._stage("compile", compile_stablehlo, target.debug_text, device, partitioning=partitioning,
                           cache_dir=cache_dir, cache_text=target.text,
                           n_params=len(stages.program.param_names), donate=donate)
