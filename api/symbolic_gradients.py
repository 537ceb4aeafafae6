"""Gradients and training steps of ``dynamic=`` modules: one differentiation for every size of the marked dims.

A call that records gradients (:mod:`fxla.autograd`) needs a forward that also returns residuals and a backward.
For a module with ``dynamic=``, :func:`gradient_for` lowers the traced graph once per *symbolic signature* and
set of tensors that require grad -- on FakeTensors whose marked sizes are symbols, as :mod:`fxla.symbolic` does
for the forward -- and differentiates that polymorphic fxla program while its symbolic state is known
(:func:`fxla.lowering.autodiff.differentiate`: the VJP rules see the symbolic shapes, and the backward reads its
sizes off the forward's tensor inputs it takes).  Each new size then only refines both halves (pipeline stage
``refine``, and StableHLO's shape refinement of each half's polymorphic StableHLO: no trace, lowering or
differentiation runs again) and compiles them.  :func:`step_for` does the same for a whole training step
(``fxla.compile_step(..., dynamic=)``: :func:`fxla.lowering.train_step.build_step` on the polymorphic objective).

A VJP rule that reads a symbolic size as a number fixes it: the size becomes a guard of those programs, checked at
every call (:meth:`~fxla.frontend.symbolic.SymbolicShapes.violation`), and sizes that break it get programs of
their own.  Where a rule (or an op's lowering) has no symbolic form at all, that call's gradients or step are
lowered for its shapes alone, as for a module without ``dynamic=`` (logged: "no polymorphic gradient ...").
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Sequence, Tuple

import torch
from torch.utils import _pytree as pytree

from fxla.base.logs import COMPILE as logger
from fxla.dialects.fxla.symbolic import NotPolymorphicError
from fxla.dialects.mlir import ir
from fxla.errors import FxlaError
from fxla.frontend.symbolic import SymbolicShapes
from fxla.lowering.autodiff import Differentiated
from fxla.lowering.autodiff.transform import main_function

from .symbolic import SymbolicPrograms, concrete_program

__all__ = ["gradient_for", "step_for", "RefinedGradient", "RefinedStep"]


@dataclasses.dataclass
class _Polymorphic:
    """A program derived from the polymorphic program of one symbolic signature (both halves of its gradient, or
    a training step): its symbols, prepared graph, what was derived (``made``) and the polymorphic StableHLO of
    each program in it (``None`` where one has none: it converts per size)."""

    symbols: SymbolicShapes
    prepared: Any
    made: Any
    stablehlo: Tuple[Optional[bytes], ...] = ()


@dataclasses.dataclass
class RefinedGradient:
    """What :func:`gradient_for` gives a call: both halves refined to its sizes (``diff``), the prepared graph
    they come from, and the polymorphic StableHLO of each half (for the ``stablehlo`` stage's refinement)."""

    diff: Differentiated
    prepared: Any
    forward_stablehlo: Optional[bytes]
    backward_stablehlo: Optional[bytes]


@dataclasses.dataclass
class RefinedStep:
    """What :func:`step_for` gives a call: its objective and step program refined to its sizes, what the step's
    builder returned besides the program (``extra``), the prepared graph and the step's polymorphic StableHLO."""

    objective: Any
    program: Any
    extra: Any
    prepared: Any
    stablehlo: Optional[bytes]


#: what is derived (the ``kind`` of :func:`_variant`) -> (its name in the log, the thing it is made of)
_KINDS = {"gradient": ("gradient programs", "gradient"), "step": ("the training step", "training step")}


def _variant(programs: SymbolicPrograms, module, gm, args, kind: str, key, derive):
    """``(the polymorphic variant the call with args uses -- made now if new -- or None, the call's leaves)``;
    ``kind``: a key of :data:`_KINDS`."""
    call = programs.signature(module, gm, args, log=False)
    if call.key is None:
        return None, call.leaves
    key = (call.key, kind, key)
    if key in programs.static_gradients:
        return None, call.leaves
    variants = programs.gradients.setdefault(key, [])
    found = next((v for v in variants if v.symbols.violation(call.leaves, call.leaf_names) is None), None)
    if found is None:
        found = _lower(module, gm, call, derive, kind)
        if found is None:
            programs.static_gradients.add(key)
            return None, call.leaves
        variants.append(found)
    return found, call.leaves


def gradient_for(programs: SymbolicPrograms, module, gm, args: Sequence[Any], key: Any,
                 differentiate: Callable[[Any], Differentiated]) -> Optional[RefinedGradient]:
    """The differentiated halves for the call with ``args``, refined to its sizes from the polymorphic gradient
    program of its symbolic signature (made now if new; ``key``: what else tells gradient programs apart -- what
    requires grad, remat), or ``None`` where this call's gradients are lowered for its shapes alone.
    ``differentiate(program)`` differentiates a (polymorphic) fxla program as the caller wants."""
    def derive(program):
        diff = differentiate(program)
        return diff, (("forward", diff.forward), ("backward", diff.backward))
    found, leaves = _variant(programs, module, gm, args, "gradient", key, derive)
    if found is None:
        return None
    return RefinedGradient(_refined(module._pipeline, found, leaves), found.prepared, *found.stablehlo)


def step_for(programs: SymbolicPrograms, module, gm, args: Sequence[Any], key: Any,
             build: Callable[[Any], Tuple[Any, Any]]) -> Optional[RefinedStep]:
    """A training step (:mod:`fxla.train_step`) for the call with ``args``: ``build(objective)`` makes
    ``(step program, extra)`` from the objective's (polymorphic) fxla program once per symbolic signature and
    ``key``; each call refines the step program to its batch's sizes.  ``None`` where the step is built for the
    call's shapes alone."""
    def derive(objective):
        program, extra = build(objective)
        return (objective, program, extra), (("step", program),)
    found, leaves = _variant(programs, module, gm, args, "step", key, derive)
    if found is None:
        return None
    objective, program, extra = found.made
    pipeline = module._pipeline
    shapes = [tuple(v.shape) for v in leaves if isinstance(v, torch.Tensor)]
    return RefinedStep(concrete_program(found.symbols, objective, leaves), pipeline.refine(program, shapes), extra,
                       found.prepared, found.stablehlo[0])


def _lower(module, gm, call, derive, kind: str) -> Optional[_Polymorphic]:
    what, thing = _KINDS[kind]
    symbols = SymbolicShapes(call.dims, call.leaves, call.ints)
    fakes = pytree.tree_unflatten(symbols.fake_leaves, call.tree)
    pipeline = module._pipeline
    try:
        prepared = pipeline.prepare(gm, fakes, symbols=symbols)
        program = pipeline.to_fxla(prepared, symbols=symbols)
        with symbols.observing():
            made, parts = derive(program)
    except (FxlaError, NotPolymorphicError, ValueError, TypeError, RuntimeError, AttributeError) as err:
        # an op (its lowering, its shape rule or its VJP rule) that cannot take symbolic sizes yet: this call's
        # gradients are lowered for its shapes alone (which raises what is wrong with them at any shape, if anything)
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        logger.info("%s: no polymorphic %s for symbolic dims %s (%s): lowered for these shapes alone",
                    module.__name__, thing, ", ".join(symbols.symbols), first[:300])
        module._phases_abandoned(f"polymorphic {thing} attempt")
        return None
    fixed = symbols.specialized()
    logger.info("%s: %s traced, lowered and differentiated once for symbolic dims %s%s",
                module.__name__, what, ", ".join(symbols.symbols),
                "" if not fixed else "; fixed by the program: " + ", ".join(f"{n} = {s}" for n, s, _ in fixed))
    stablehlo = []
    for name, part in parts:
        made_shlo, why_not = pipeline.polymorphic_stablehlo(part)
        if made_shlo is None:
            logger.info("%s: no polymorphic StableHLO for the %s of %s (%s): each size converts its refined fxla "
                        "program", module.__name__, name, what, why_not)
        stablehlo.append(made_shlo)
    return _Polymorphic(symbols, prepared, made, tuple(stablehlo))


def _types(types) -> list:
    return [tuple(ir.RankedTensorType(t).shape) for t in types]


def _refined(pipeline, poly: _Polymorphic, leaves: Sequence[Any]) -> Differentiated:
    """Both halves of ``poly`` refined to the sizes of the call's ``leaves``: the forward to its inputs' shapes,
    the backward to the shapes the refined forward gives its residuals and differentiated results, and to the
    inputs' it reads."""
    diff = poly.made
    shapes = [tuple(v.shape) for v in leaves if isinstance(v, torch.Tensor)]
    forward = concrete_program(poly.symbols, pipeline.refine(diff.forward, shapes), leaves)
    ftype = ir.FunctionType(ir.TypeAttr(main_function(forward.module).attributes["function_type"]).value)
    with forward.context:
        results, arguments = _types(ftype.results), _types(ftype.inputs)
    saved = results[len(results) - diff.residuals:] if diff.residuals else []
    backward_shapes = saved + [results[i] for i in diff.cotangents] + [arguments[k] for k in diff.inputs]
    backward = pipeline.refine(diff.backward, backward_shapes)
    return dataclasses.replace(diff, forward=forward, backward=backward)
