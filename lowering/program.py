"""What lowering hands on: the fxla program of one input signature, and the layout of its results.

:class:`FxlaProgram` is the contract between lowering and its callers (the pipeline, export, the runtime call
path): the fxla module plus how a call's Python values map onto the program's arguments and results.  The
results of a program come in one order, :class:`ResultLayout`, which every caller splits the same way.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import torch

from fxla.dialects.fxla.syntax import print_module
from fxla.dialects.mlir import ir

from .value_checks import ValueCheck, raise_failed

__all__ = ["FxlaProgram", "WrittenAttribute", "ResultLayout", "Results", "draw_seed"]


@dataclass
class WrittenAttribute:
    """A module attribute forward assigns (``self.last = y``, ``self.cache = (k, v)``): its qualified ``name``,
    the value's pytree ``spec`` and, per leaf, ``None`` where the leaf is the next program result or the
    leaf itself where it is not a tensor (a constant, or a value shape propagation knows)."""

    name: str
    spec: Any
    leaves: List[Any]


class Results(NamedTuple):
    """A program's results, split by :meth:`ResultLayout.split`."""

    outputs: Sequence[Any]       # the tensor leaves of the output structure, in order
    inputs: Sequence[Any]        # the new values of the mutated tensor inputs (``x += 1``)
    state: Sequence[Any]         # the new values of the mutated parameters/buffers (``self.steps += 1``)
    attributes: Sequence[Any]    # the tensor leaves of the written attributes (``self.last = y``)


@dataclass(frozen=True)
class ResultLayout:
    """The order of a program's results: ``outputs`` tensor outputs, then one new value per mutated input
    (``inputs``), per mutated parameter/buffer (``state``), then the ``attributes`` tensor leaves of the written
    attributes, then, where the program checks its data (``checks``: its
    :class:`~fxla.lowering.value_checks.ValueCheck` objects), its check code.  A compiled module and a loaded
    artifact both split results with :meth:`split`, which raises where a check failed."""

    outputs: int
    inputs: int = 0
    state: int = 0
    attributes: int = 0
    checks: Tuple[ValueCheck, ...] = ()

    @property
    def mutates(self) -> bool:
        """Whether a call changes anything besides returning outputs (inputs, module state, attributes)."""
        return bool(self.inputs or self.state or self.attributes)

    def split(self, results: Sequence[Any], name: Optional[str] = None) -> Results:
        """``results`` (a program's, in order) as outputs, changed inputs, changed state and attribute leaves,
        after reading the check code (:class:`~fxla.lowering.value_checks.ValueCheckError` where a check failed;
        ``name``: the module's, for the message)."""
        if len(results) != self.outputs + self.inputs + self.state + self.attributes + bool(self.checks):
            raise ValueError(f"a program with result layout {self} returned {len(results)} results")
        if self.checks:
            raise_failed(self.checks, results[-1], name)
        a = self.outputs
        b = a + self.inputs
        c = b + self.state
        return Results(results[:a], results[a:b], results[b:c], results[c:c + self.attributes])


@dataclass
class FxlaProgram:
    """A graph lowered to the fxla dialect, plus what the runtime needs to call it.

    ``input_spec``/``output_spec`` are pytree specs of the call's inputs/outputs; ``input_static`` holds the
    non-tensor input leaves the program was specialised to (``None`` at tensor positions);
    ``output_static`` likewise for the outputs.  ``param_names`` are the qualified names of the parameters
    and buffers appended to the arguments, ``params`` their tensors.  ``mutated_inputs`` are the argument
    numbers of the tensor inputs the program changes in place (``x += 1``; see
    :func:`fxla.frontend.passes.functionalize`): their new values are the results right after the outputs,
    and the caller writes them back.  ``mutated_params`` likewise names the parameters and buffers the program
    changes (``self.steps += 1``): their new values are the results after those.  ``written_attributes`` are
    the plain module attributes forward assigns (``self.last = y``): their values are the last results, leaf by
    leaf (see :class:`WrittenAttribute`), and the caller sets the attributes.  :attr:`layout` is that order.
    ``rng_seed`` is the argument number of the program's random seed when it draws random numbers (dropout in
    training mode, ``torch.rand`` ...; ``None`` otherwise): a ``tensor<2xi64>`` right after the tensor inputs and
    before the parameters, which the caller fills with a fresh seed from torch's default generator per call
    (:func:`draw_seed`).
    """

    module: ir.Module
    context: ir.Context
    input_spec: Any
    input_static: List[Any]
    output_spec: Any
    output_static: List[Any]
    param_names: List[str]
    params: Dict[str, torch.Tensor] = field(repr=False)
    mutated_inputs: List[int] = field(default_factory=list)
    mutated_params: List[str] = field(default_factory=list)
    written_attributes: List[WrittenAttribute] = field(default_factory=list)
    rng_seed: Optional[int] = None
    #: tensor inputs whose values index a dim (:func:`fxla.lowering.index_bounds.input_index_checks`): each call
    #: checks them before running (set when the program is converted to StableHLO)
    input_checks: List[Any] = field(default_factory=list)
    #: the conditions on its data the program checks (:mod:`fxla.lowering.value_checks`): its last result is then
    #: their check code
    value_checks: List[ValueCheck] = field(default_factory=list)
    #: a polymorphic program's symbolic state (:class:`fxla.lowering.symbolic.SymbolicLowering`: its symbols, and
    #: the symbolic shape of each value with ``?`` dims), which :func:`fxla.lowering.autodiff.differentiate` needs
    #: to differentiate it symbolically; ``None`` for static programs and for programs derived from one
    symbolic: Any = field(default=None, repr=False, compare=False)
    #: the mutated inputs changed only under ``torch.no_grad()`` in forward (eager allows that on a tensor that
    #: requires grad, and records no history for it: fxla.frontend.passes.grad_mode)
    quiet_inputs: List[int] = field(default_factory=list)
    #: which inputs and parameters each tensor output has history from in eager's autograd graph
    #: (:class:`fxla.frontend.passes.history.Histories`; ``None``: not known, each from every one)
    histories: Any = field(default=None, repr=False, compare=False)
    #: the outputs eager returns as views of an input or of another output, made again after each call
    #: (:class:`fxla.frontend.passes.output_views.OutputView`)
    output_views: List[Any] = field(default_factory=list, repr=False, compare=False)

    @property
    def random(self) -> bool:
        """Whether the program draws random numbers (takes a seed per call: :attr:`rng_seed`)."""
        return self.rng_seed is not None

    def copy(self) -> "FxlaProgram":
        """This program with a copy of its module (converting a program to StableHLO changes its module in place:
        a caller that needs the fxla form afterwards converts a copy)."""
        with self.context:
            module = ir.Module.parse(self.module.operation.get_asm(enable_debug_info=True))
        return dataclasses.replace(self, module=module)

    def text(self, debug_info: bool = False) -> str:
        """The fxla module as text (with source locations if ``debug_info``): fxla ops in the dialect's own
        syntax (:mod:`fxla.dialects.fxla.syntax`), which ``fxla-opt`` reads back."""
        return print_module(self.module, debug_info=debug_info)

    @property
    def layout(self) -> ResultLayout:
        """The order of the program's results (see :class:`ResultLayout`)."""
        return ResultLayout(sum(v is None for v in self.output_static), len(self.mutated_inputs),
                            len(self.mutated_params),
                            sum(leaf is None for w in self.written_attributes for leaf in w.leaves),
                            tuple(self.value_checks))

    def result_roles(self) -> List[str]:
        """One role per result, in order: ``output``, ``input:<argument number>``, ``param:<name>``,
        ``attribute:<name>``, ``check`` (what an exported artifact records on its ``@main``)."""
        return (["output"] * self.layout.outputs + [f"input:{k}" for k in self.mutated_inputs]
                + [f"param:{n}" for n in self.mutated_params]
                + [f"attribute:{w.name}" for w in self.written_attributes for v in w.leaves if v is None]
                + ["check"] * bool(self.value_checks))


def draw_seed() -> torch.Tensor:
    """A fresh random seed for one call of a program that draws random numbers (:attr:`FxlaProgram.rng_seed`):
    two 64-bit words from torch's default generator, so ``torch.manual_seed(s)`` makes a run reproducible and
    consecutive calls draw different numbers, as eager's random ops do."""
    words = torch.randint(0, 1 << 32, (4,), dtype=torch.int64)
    high, low = words[0::2], words[1::2]
    return (high << 32) | low
