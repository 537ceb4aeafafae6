"""Gradients of ``fxla.compile(model, dynamic=...)`` modules: one differentiation for every size of the marked dims.

A call that records gradients (:mod:`fxla.autograd`) needs a forward that also returns residuals and a backward.
For a module with ``dynamic=``, :func:`gradient_for` lowers the traced graph once per *symbolic signature* and
set of tensors that require grad -- on FakeTensors whose marked sizes are symbols, as :mod:`fxla.symbolic` does
for the forward -- and differentiates that polymorphic fxla program while its symbolic state is known
(:func:`fxla.lowering.autodiff.differentiate`: the VJP rules see the symbolic shapes, and the backward reads its
sizes off the forward's tensor inputs it takes).  Each new size then only refines both halves (pipeline stage
``refine``: no trace, lowering or differentiation runs again) and compiles them.

The halves are polymorphic only where every VJP rule on the way keeps the sizes symbolic.  Where one reads a
symbolic size as a number, or a guard the differentiation adds fails for a later call, that call's gradients are
lowered for its shapes alone, as for a module without ``dynamic=`` (logged: "no polymorphic gradient ...").  A
size the differentiation relied on becomes a condition of the gradient programs, checked at every call that
uses them, never assumed.
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

__all__ = ["gradient_for"]


@dataclasses.dataclass
class _PolymorphicGradient:
    """The differentiated polymorphic program of one symbolic signature: its symbols, prepared graph and halves."""

    symbols: SymbolicShapes
    prepared: Any
    diff: Differentiated


def gradient_for(programs: SymbolicPrograms, module, gm, args: Sequence[Any], key: Any,
                 differentiate: Callable[[Any], Differentiated]) -> Optional[Tuple[Differentiated, Any]]:
    """``(the differentiated halves for the call with args, refined to its sizes; the prepared graph)``, from the
    polymorphic gradient program of its symbolic signature (made now if new; ``key``: what else tells gradient
    programs apart -- what requires grad, remat), or ``None`` where this call's gradients are lowered for its
    shapes alone.  ``differentiate(program)`` differentiates a (polymorphic) fxla program as the caller wants."""
    call = programs.signature(module, gm, args, log=False)
    if call.key is None:
        return None
    key = (call.key, key)
    if key in programs.static_gradients:
        return None
    variants = programs.gradients.setdefault(key, [])
    found = next((v for v in variants if v.symbols.violation(call.leaves, call.leaf_names) is None), None)
    if found is None:
        found = _lower(module, gm, call, differentiate)
        if found is None:
            programs.static_gradients.add(key)
            return None
        variants.append(found)
    return _refined(module._pipeline, found, call.leaves), found.prepared


def _lower(module, gm, call, differentiate) -> Optional[_PolymorphicGradient]:
    symbols = SymbolicShapes(call.dims, call.leaves, call.ints)
    fakes = pytree.tree_unflatten(symbols.fake_leaves, call.tree)
    pipeline = module._pipeline
    try:
        prepared = pipeline.prepare(gm, fakes, symbols=symbols)
        program = pipeline.to_fxla(prepared, symbols=symbols)
        with symbols.observing():
            diff = differentiate(program)
    except (FxlaError, NotPolymorphicError, ValueError, TypeError, RuntimeError, AttributeError) as err:
        # an op (its lowering, its shape rule or its VJP rule) that cannot take symbolic sizes yet: this call's
        # gradients are lowered for its shapes alone (which raises what is wrong with them at any shape, if anything)
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        logger.info("%s: no polymorphic gradient for symbolic dims %s (%s): its gradients are lowered for these "
                    "shapes alone", module.__name__, ", ".join(symbols.symbols), first[:300])
        module._phases_abandoned("polymorphic gradient attempt")
        return None
    fixed = symbols.specialized()
    logger.info("%s: gradient programs traced, lowered and differentiated once for symbolic dims %s%s",
                module.__name__, ", ".join(symbols.symbols),
                "" if not fixed else "; fixed by the program: " + ", ".join(f"{n} = {s}" for n, s, _ in fixed))
    return _PolymorphicGradient(symbols, prepared, diff)


def _types(types) -> list:
    return [tuple(ir.RankedTensorType(t).shape) for t in types]


def _refined(pipeline, poly: _PolymorphicGradient, leaves: Sequence[Any]) -> Differentiated:
    """Both halves of ``poly`` refined to the sizes of the call's ``leaves``: the forward to its inputs' shapes,
    the backward to the shapes the refined forward gives its residuals and differentiated results, and to the
    inputs' it reads."""
    diff = poly.diff
    shapes = [tuple(v.shape) for v in leaves if isinstance(v, torch.Tensor)]
    forward = concrete_program(poly.symbols, pipeline.refine(diff.forward, shapes), leaves)
    ftype = ir.FunctionType(ir.TypeAttr(main_function(forward.module).attributes["function_type"]).value)
    with forward.context:
        results, arguments = _types(ftype.results), _types(ftype.inputs)
    saved = results[len(results) - diff.residuals:] if diff.residuals else []
    backward_shapes = saved + [results[i] for i in diff.cotangents] + [arguments[k] for k in diff.inputs]
    backward = pipeline.refine(diff.backward, backward_shapes)
    return dataclasses.replace(diff, forward=forward, backward=backward)
