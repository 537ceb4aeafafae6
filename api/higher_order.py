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

What is refused rather than computed differently from eager:

* an op without a VJP rule on the way, or a straight-through first derivative (``binary_cross_entropy``'s)
  differentiated again: :class:`~fxla.lowering.autodiff.NotDifferentiableError` naming it;
* an argument a derivative reads again that changed since it was read -- in place (its version counter) or
  rebound (``p.data = ...``: another storage) -- at any order: :class:`~fxla.gradients.SavedValuesError` (the
  plain backward reads the forward's own buffers; a derivative reads the tensors again);
* an input or parameter the call itself changes in place, where a derivative reads it
  (:class:`~fxla.gradients.GradientError`).

The sources of each node are fixed when its forward ran, as eager's graph: the call's inputs and parameters that
required grad then (a parameter unfrozen afterwards gets no gradient), and the cotangents that require grad.  A
result requires grad where it depends on a source through any op but a ``detach`` (the gradient of a ReLU
depends on its input through a comparison, and requires grad as eager's does).  The derivatives are lowered for
each call's own sizes, also under ``dynamic=``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from fxla.lowering.autodiff import active_results, differentiable_results
from fxla.lowering.program import FxlaProgram
from fxla.runtime import Executable, from_device, to_device

from .gradients import GradientError, SavedValuesError, refuse_vmap
from .pipeline import COMPILING

__all__ = ["Argument", "Derivatives", "first_derivative", "hold", "source_positions", "stamp"]


@dataclass
class _Order:
    """One compiled derivative program: ``program`` (its ``@main`` arguments: cotangents and the arguments of the
    program it differentiates that it reads, parameters last by name) and its executable (every argument plain)."""

    program: FxlaProgram
    executable: Executable
    inputs: List[int]       # the arguments of the differentiated program it reads, by position
    params: List[str]       # ... and the parameters it reads, by name (after ``inputs``)
    #: per set of its own arguments that are sources: the results that depend on them (the others have none)
    dependent: Dict[Tuple[bool, ...], List[int]] = field(default_factory=dict)
    #: per set of candidate sources: those some result depends on (:meth:`live_sources`)
    live: Dict[Tuple[bool, ...], Tuple[bool, ...]] = field(default_factory=dict)

    def dependent_on(self, mask: Tuple[bool, ...]) -> List[int]:
        found = self.dependent.get(mask)
        if found is None:
            found = self.dependent[mask] = active_results(self.program, [k for k, m in enumerate(mask) if m],
                                                          through_comparisons=True)
        return found

    def live_sources(self, mask: Tuple[bool, ...]) -> Tuple[bool, ...]:
        """``mask`` without the arguments no result depends on but through a detach (a parameter the forward read
        under ``torch.no_grad()``: no source, so its ``.grad`` stays None, as eager's, not zeros); once per mask."""
        found = self.live.get(mask)
        if found is None:
            found = self.live[mask] = tuple(
                m and bool(self.dependent_on(tuple(i == k for i in range(len(mask))))) for k, m in enumerate(mask))
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
            diff = pipeline.differentiate(program, wrt, cotangents, remat=True, higher=order > 1)
            record.dump_fxla(diff.backward)
            # (a copy is converted to StableHLO: the next order differentiates the fxla program itself)
            part = dataclasses.replace(diff.backward.copy(), param_names=[], params={})
            stages = pipeline.lower_program(part, self.prepared)
            target = pipeline.layout(stages, module.device.platform)
            executable = pipeline.compile(stages, target, module.device, cache_dir=module.cache_dir, gradients=True)
        return _Order(diff.backward, executable, diff.inputs, diff.params)


@dataclass
class Argument:
    """One argument of a derivative program: its value (a torch tensor, or a device array: a random seed), what
    errors call it, whether it may be a source of the node (it required grad when it was first read, or is a
    cotangent), and its stamp when it was read (:func:`stamp`)."""

    value: Any
    name: str
    eligible: bool
    stamp: Any


def stamp(value: Any) -> Any:
    """What tells whether a tensor still holds what was read: its version counter (``None`` for an inference
    tensor) and its data pointer (``p.data = ...`` rebinds it without a version change); ``None`` for a device
    array (immutable)."""
    if not isinstance(value, torch.Tensor):
        return None
    return (None if value.is_inference() else value._version, value.data_ptr())


def _check(arguments: Sequence[Argument], module_name: str) -> None:
    """Raise :class:`SavedValuesError` where an argument no longer holds what was read (see :func:`stamp`)."""
    for a in arguments:
        now = stamp(a.value)
        if now == a.stamp:
            continue
        t = a.value
        how = f"is at version {now[0]}; expected version {a.stamp[0]} instead" if now[0] != a.stamp[0] else \
            "was rebound to other memory (.data = ...)"
        raise SavedValuesError(
            f"one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"{a.name} ({str(t.dtype).replace('torch.', '')}{list(t.shape)}) of fxla-compiled {module_name} {how}",
            why="why: a gradient with create_graph=True is fxla's derivative of the call, computed again from the "
                "call's inputs and parameters (and the gradients passed in), which must still hold what the "
                "forward read; this one changed since (an optimizer step, p.mul_(0.5), x.add_(1), p.data = ...)",
            fix="run every backward through the graph before changing them (optimizer.step() after the last "
                "backward), or run the forward again after the change")


def first_derivative(derivatives: Derivatives, entry, mask: Tuple[bool, ...], arguments: List[Argument],
                     changed: set, cts: Sequence[Optional[torch.Tensor]],
                     float_outputs: List[int]) -> List[torch.Tensor]:
    """The gradients a compiled call's backward returns under ``create_graph=True``, as outputs of a
    :class:`_ProgramNode` (see the module docstring).  ``arguments``: the call's program arguments (tensor inputs,
    the seed, then each parameter) as its forward read them; ``mask`` the sources among its tensors (as the call's
    autograd node has them); ``changed``: the positions the call itself changed in place."""
    program = derivatives.signature_program(entry)
    sources = source_positions(program, mask)
    given, key = _given(cts, float_outputs, mask, ())
    order = derivatives.order(key, program, [k in sources for k in range(len(arguments))], given)
    read = _read(order, program, len(arguments))
    touched = sorted(arguments[k].name for k in read if k in changed)
    if touched:
        raise GradientError(
            f"a gradient of a gradient (create_graph=True) through fxla-compiled {derivatives.module.__name__} "
            f"reads {', '.join(touched)} again, which the call changed in place\n"
            f"why: the derivative is computed from the call's arguments, and these no longer hold the values the "
            f"call read\nfix: compute this part eagerly, or leave the in-place change out of the compiled call")
    return _run(derivatives, order, key, arguments, read, cts, given, "the compiled call")


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


def source_positions(program: FxlaProgram, mask: Sequence[bool]) -> set:
    """The ``@main`` arguments of a signature's program that ``mask`` marks (per tensor input, then per
    parameter; a random program's seed sits between them)."""
    n_tensors = len(mask) - len(program.param_names)
    return {k + (program.random and k >= n_tensors) for k, m in enumerate(mask) if m}


def _run(derivatives: Derivatives, order: _Order, key: Tuple, arguments: List[Argument], read: List[int], cts,
         given: List[int], of: str) -> List[torch.Tensor]:
    """Run ``order`` (a derivative of a program whose arguments are ``arguments``; it reads those at ``read``) on
    the cotangents ``cts`` of that program's results ``given`` (``of``: what the results are of, for errors) as a
    :class:`_ProgramNode`; its results, one per source of that program."""
    _check([arguments[k] for k in read], derivatives.module.__name__)
    new = [Argument(cts[i], f"the gradient passed for result {i} of {of}", True, stamp(cts[i])) for i in given] + \
        [arguments[k] for k in read]
    call = _ProgramCall(derivatives, order, key, new)
    sources = [a.value for a, m in zip(new, call.mask) if m]
    return list(_ProgramNode.apply(call, *sources))


def _is_source(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.requires_grad and value.is_floating_point()


class _ProgramCall:
    """One run of a derivative program as an autograd node (:class:`_ProgramNode`): its program's ``arguments``
    and which of them are sources (``mask``: eligible, and requiring grad now)."""

    def __init__(self, derivatives: Derivatives, order: _Order, key: Tuple, arguments: List[Argument]):
        self.derivatives, self.order, self.key, self.arguments = derivatives, order, key, arguments
        self.mask = order.live_sources(tuple(a.eligible and _is_source(a.value) for a in arguments))

    def forward(self) -> List[torch.Tensor]:
        device = self.derivatives.module.device
        placed = [to_device(a.value.detach().contiguous() if isinstance(a.value, torch.Tensor) else a.value, device)
                  for a in self.arguments]
        results = self.order.executable(placed, wait=True)
        return [from_device(r).clone() for r in results]      # (own memory: autograd may accumulate in place)

    def backward(self, cts) -> List[Optional[torch.Tensor]]:
        program = self.order.program
        given, key = _given(cts, differentiable_results(program), self.mask, self.key)
        nxt = self.derivatives.order(key, program, self.mask, given)
        # (an argument that was no source here is none of the next order's either: eager recorded no history)
        arguments = [dataclasses.replace(a, eligible=m) for a, m in zip(self.arguments, self.mask)]
        return _run(self.derivatives, nxt, key, arguments, _read(nxt, program, len(arguments)), cts, given,
                    f"the derivative of order {len(self.key)}")


def hold(ctx, call) -> None:
    """Make ``call`` (the state of one autograd node's run) live as long as torch keeps the node's saved values:
    the node saves one empty tensor, the *anchor*, whose attribute ``fxla_call`` is the only reference to it
    (``ctx.saved_tensors[0].fxla_call`` in the backward).  Cotangents of results the backward does not reach come
    in as ``None`` (see :func:`_given`), not zeros."""
    anchor = torch.empty(0)
    anchor.fxla_call = call
    ctx.save_for_backward(anchor)
    ctx.set_materialize_grads(False)


class _ProgramNode(torch.autograd.Function):
    """A :class:`_ProgramCall` as an autograd node: ``forward(ctx, call, *sources)`` runs the derivative program,
    ``backward`` differentiates it once more (see the module docstring)."""

    @staticmethod
    def forward(ctx, call, *sources):
        outputs = call.forward()
        hold(ctx, call)
        # (a result that depends on no source has no gradient, as in eager: requires_grad=False)
        active = set(call.order.dependent_on(call.mask)) if any(call.mask) else set()
        ctx.mark_non_differentiable(*[o for i, o in enumerate(outputs) if i not in active])
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *cts):
        (anchor,) = ctx.saved_tensors
        call = anchor.fxla_call
        refuse_vmap(cts, call.derivatives.module.__name__)
        return (None, *call.backward(cts))
