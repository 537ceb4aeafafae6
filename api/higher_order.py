"""Gradients of gradients through compiled calls: a backward asked with ``create_graph=True``.

``torch.autograd.grad(y, x, create_graph=True)`` (a gradient penalty, a Hessian-vector product, the derivatives
of a physics-informed network) needs gradients that are themselves differentiable.  fxla differentiates its own
backward program for them:

* The call's program, differentiated with ``remat=True`` (:func:`fxla.lowering.autodiff.differentiate`), is a
  backward that reads nothing saved: only the cotangents and the call's own arguments (its tensor inputs, the
  random seed it drew, the parameters).  That backward is an ordinary fxla program.
* It runs as an autograd node of its own (:class:`_ProgramCall`), whose *sources* are the tensors among its
  arguments that require grad: the call's inputs and parameters, and cotangents that have a history themselves.
  Its results are the gradients the first backward returns.
* That node's backward differentiates its program the same way, so a third derivative works like the second.
  Each order is compiled once per compiled signature and set of sources (:class:`Derivatives`), and named in
  the ``fxla.compile`` log as "the derivative of order n".

An op without a VJP rule anywhere on the way raises :class:`~fxla.lowering.autodiff.NotDifferentiableError`
naming it.  The arguments are read at the backward, so a tensor the call's backward reads that was changed in
place since the forward raises :class:`~fxla.autograd.SavedValuesError`, as eager's version counters do; a call
that changes an input or parameter its derivative reads is refused (:class:`~fxla.gradients.GradientError`),
and so are programs lowered per size only from a symbolic one (the derivative is lowered for the call's own
sizes).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from fxla.lowering.autodiff import active_results, differentiable_results
from fxla.lowering.program import FxlaProgram
from fxla.runtime import Executable, from_device, to_device

from .gradients import GradientError
from .pipeline import COMPILING

__all__ = ["Derivatives", "first_derivative"]


@dataclass
class _Order:
    """One compiled derivative program: ``program`` (its ``@main`` arguments: cotangents and the arguments of the
    program it differentiates that it reads, parameters last by name) and its executable (every argument plain)."""

    program: FxlaProgram
    executable: Executable
    inputs: List[int]       # the arguments of the differentiated program it reads, by position
    params: List[str]       # ... and the parameters it reads, by name (after ``inputs``)
    #: per set of its own arguments that require grad: the results that depend on them (the others have none)
    active: Dict[Tuple[bool, ...], List[int]] = field(default_factory=dict)

    def active_for(self, mask: Tuple[bool, ...]) -> List[int]:
        found = self.active.get(mask)
        if found is None:
            found = self.active[mask] = active_results(self.program, [k for k, m in enumerate(mask) if m])
        return found


@dataclass
class Derivatives:
    """The derivative programs of one differentiated signature, compiled at the first backward that needs them:
    keyed by the sources of each order from the first (one mask per order)."""

    module: Any
    compiled: Any
    graph_module: Any                         # the trace the signature was compiled from
    program: Optional[FxlaProgram] = None     # the signature's program (lowered again, for its own sizes)
    prepared: Any = None                      # the graph it was lowered from
    orders: Dict[Tuple, _Order] = field(default_factory=dict)

    def signature_program(self, entry) -> FxlaProgram:
        """The compiled signature ``entry``'s program, lowered again for its own sizes (once)."""
        if self.program is None:
            with COMPILING:
                if self.program is None:
                    pipeline = self.module._pipeline
                    self.prepared = pipeline.prepare(self.graph_module, entry.program_args)
                    self.program = pipeline.to_fxla(self.prepared)
        return self.program

    def order(self, key: Tuple, program: FxlaProgram, mask: Sequence[bool], cotangents: List[int]) -> _Order:
        """The derivative of ``program`` with respect to the arguments ``mask`` marks, through its results
        ``cotangents`` (``key``: per order so far, its sources and which of its results had a cotangent)."""
        found = self.orders.get(key)
        if found is not None:
            return found
        with COMPILING:
            found = self.orders.get(key)
            if found is None:
                found = self.orders[key] = self._compile(program, mask, cotangents, len(key))
        return found

    def _compile(self, program: FxlaProgram, mask: Sequence[bool], cotangents: List[int], order: int) -> _Order:
        module = self.module
        pipeline = module._pipeline
        wrt = [k for k, m in enumerate(mask) if m]
        of = "the program" if order == 1 else f"the derivative of order {order - 1}"
        with module._gradient_compile(self.compiled, f"derivative of order {order}", f"{len(wrt)} argument(s) of {of}",
                                      "a backward with create_graph=True") as record:
            diff = pipeline.differentiate(program, wrt, cotangents, remat=True)
            record.dump_fxla(diff.backward)
            # (a copy is converted to StableHLO: the next order differentiates the fxla program itself)
            part = dataclasses.replace(diff.backward.copy(), param_names=[], params={})
            stages = pipeline.lower_program(part, self.prepared)
            target = pipeline.layout(stages, module.device.platform)
            executable = pipeline.compile(stages, target, module.device, cache_dir=module.cache_dir, gradients=True)
        return _Order(diff.backward, executable, diff.inputs, diff.params)


def first_derivative(derivatives: Derivatives, entry, mask: Tuple[bool, ...], args: List[Any],
                     check: Callable[[List[int]], None], changed: set, cts: Sequence[Optional[torch.Tensor]],
                     float_outputs: List[int]) -> List[torch.Tensor]:
    """The gradients a compiled call's backward returns under ``create_graph=True``, as outputs of a
    :class:`_ProgramNode` (see the module docstring).  ``args``: the call's program arguments (tensor inputs, the
    seed, then each parameter: torch tensors, or device arrays), ``mask`` the sources among its tensors (as the
    call's autograd node has them); ``check(positions)`` raises where one of those arguments changed since the
    forward; ``changed``: the positions the call itself changed in place."""
    program = derivatives.signature_program(entry)
    sources = _source_positions(program, mask)
    given, key = _given(cts, float_outputs, mask, ())
    order = derivatives.order(key, program, [k in sources for k in range(len(args))], given)
    read = _read(order, program, len(args))
    touched = sorted(k for k in read if k in changed)
    if touched:
        raise GradientError(
            f"a gradient of a gradient (create_graph=True) through fxla-compiled {derivatives.module.__name__} "
            f"reads argument(s) {touched} of its program again, which the call changed in place\n"
            f"why: the derivative is computed from the call's arguments, and these no longer hold the values the "
            f"call read\nfix: compute this part eagerly, or leave the in-place change out of the compiled call")
    check(read)
    return _run(derivatives, order, key, args, read, cts, given)


def _given(cts, results: List[int], mask: Tuple[bool, ...], key: Tuple) -> Tuple[List[int], Tuple]:
    """Of a program's float ``results``, those autograd passed a cotangent for (a result the backward does not
    reach has none: the derivative is made without it, so it reads nothing for it, as eager's), and the key of
    the derivative (``key``, the orders so far, with this one's sources ``mask`` and those results)."""
    given = [i for i in results if cts[i] is not None]
    return given, key + ((mask, tuple(given)),)


def _read(order: _Order, program: FxlaProgram, n_args: int) -> List[int]:
    """The arguments of ``program`` (``n_args`` of them, parameters last) that its derivative ``order`` reads."""
    n_plain = n_args - len(program.param_names)
    return list(order.inputs) + [n_plain + program.param_names.index(n) for n in order.params]


def _source_positions(program: FxlaProgram, mask: Sequence[bool]) -> set:
    """The ``@main`` arguments of a signature's program that ``mask`` marks (per tensor input, then per
    parameter; a random program's seed sits between them)."""
    n_tensors = len(mask) - len(program.param_names)
    return {k + (program.random and k >= n_tensors) for k, m in enumerate(mask) if m}


def _run(derivatives: Derivatives, order: _Order, key: Tuple, args: List[Any], read: List[int], cts,
         given: List[int]) -> List[torch.Tensor]:
    """Run ``order`` (a derivative of a program whose arguments are ``args``; it reads those at ``read``) on the
    cotangents ``cts`` of that program's results ``given`` as a :class:`_ProgramNode`; its results, one per source
    of that program."""
    new_args = [cts[i] for i in given] + [args[k] for k in read]
    call = _ProgramCall(derivatives, order, key, new_args)
    sources = [a for a, m in zip(new_args, call.mask) if m]
    return list(_ProgramNode.apply(call, *sources))


def _is_source(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.requires_grad and value.is_floating_point()


class _ProgramCall:
    """One run of a derivative program as an autograd node (:class:`_ProgramNode`): its program's arguments
    (``args``: torch tensors or device arrays) and which of them are sources (``mask``)."""

    def __init__(self, derivatives: Derivatives, order: _Order, key: Tuple, args: List[Any]):
        self.derivatives, self.order, self.key, self.args = derivatives, order, key, args
        self.mask = tuple(_is_source(a) for a in args)

    def forward(self) -> List[torch.Tensor]:
        device = self.derivatives.module.device
        placed = [to_device(a.detach().contiguous() if isinstance(a, torch.Tensor) else a, device)
                  for a in self.args]
        results = self.order.executable(placed, wait=True)
        outputs = [from_device(r).clone() for r in results]      # (own memory: autograd may accumulate in place)
        return outputs

    def backward(self, cts) -> List[Optional[torch.Tensor]]:
        program = self.order.program
        given, key = _given(cts, differentiable_results(program), self.mask, self.key)
        nxt = self.derivatives.order(key, program, self.mask, given)
        return _run(self.derivatives, nxt, key, self.args, _read(nxt, program, len(self.args)), cts, given)


class _ProgramNode(torch.autograd.Function):
    """A :class:`_ProgramCall` as an autograd node: ``forward(ctx, call, *sources)`` runs the derivative program,
    ``backward`` differentiates it once more (see the module docstring)."""

    @staticmethod
    def forward(ctx, call, *sources):
        outputs = call.forward()
        anchor = torch.empty(0)
        anchor.fxla_call = call
        ctx.save_for_backward(anchor)
        ctx.set_materialize_grads(False)    # (a result the backward does not reach: None, see _given)
        # (a result that does not depend on a source has no gradient, as in eager: requires_grad=False)
        active = set(call.order.active_for(call.mask)) if any(call.mask) else set()
        ctx.mark_non_differentiable(*[o for i, o in enumerate(outputs) if i not in active])
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *cts):
        (anchor,) = ctx.saved_tensors
        return (None, *anchor.fxla_call.backward(cts))
