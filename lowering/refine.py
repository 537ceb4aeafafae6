"""Shape refinement: a polymorphic fxla program made static for the sizes of one call.

A polymorphic program (:mod:`fxla.dialects.fxla.symbolic`) has ``?`` dims and computes its symbolic sizes with
``fxla.dim_size`` and ``tensor<i64>`` arithmetic.  :func:`refine` copies it, gives the function's tensor
arguments the call's static types, and walks the ops in order:

* ``fxla.dim_size`` of a (now static) operand becomes an ``fxla.constant``;
* the size arithmetic on known sizes is evaluated (the op stays, its value is known);
* an op with size operands (``fxla.sym``: symbolic attributes, ``?`` result dims) is rebuilt with the evaluated
  sizes in its attributes and without the size operands;
* every other op's result types are inferred again from the op table (element types kept).

Size ops nothing uses any more are removed, and the static program is checked by fxla's verifier.  The result
is an ordinary :class:`~fxla.lowering.FxlaProgram`: the rest of the pipeline (StableHLO, layout passes, XLA) does
not know it came from a polymorphic one.  Refining costs a copy and one walk over the ops: no tracing, shape
propagation or lowering rule runs again.
"""
from __future__ import annotations

import dataclasses
import io
from typing import Dict, Sequence

import numpy as np

from fxla.dialects.fxla import ANY_ELEM, Sig, ops, sig_of, type_of, verify_module, VerificationError
from fxla.dialects.fxla.opdef import sig_of_elem, type_cache
from fxla.dialects.fxla.ops import lookup
from fxla.dialects.fxla.symbolic import is_result_slot, set_slot, sym_slots
from fxla.dialects.mlir import ir, strict_context

from .errors import LoweringError
from .program import FxlaProgram

__all__ = ["refine", "refine_module", "refine_stablehlo", "refine_stablehlo_like"]

#: the size arithmetic (on ``tensor<i64>`` operands whose values are known), evaluated as Python does
_ARITHMETIC = {ops.add: lambda a, b: a + b, ops.sub: lambda a, b: a - b, ops.mul: lambda a, b: a * b,
               ops.floor_divide: lambda a, b: a // b, ops.remainder: lambda a, b: a % b,
               ops.maximum: max, ops.minimum: min, ops.neg: lambda a: -a}
#: ops removed when nothing uses them after refinement (sizes and their arithmetic)
_SIZE_OPS = frozenset(op.name for op in (*_ARITHMETIC, ops.constant, ops.dim_size))


def _error(what: str) -> LoweringError:
    return LoweringError(f"internal error: refining a polymorphic program: {what}\n"
                         f"fix: report this as an fxla bug, with the model that triggers it")


def refine(program: FxlaProgram, shapes: Sequence[Sequence[int]]) -> FxlaProgram:
    """``program`` (polymorphic) made static for tensor inputs of ``shapes`` (one per tensor input, in order)."""
    return dataclasses.replace(program, module=refine_module(program.module, program.context, shapes))


def refine_module(polymorphic: ir.Module, context: ir.Context, shapes: Sequence[Sequence[int]]) -> ir.Module:
    """A static copy of the polymorphic fxla module ``polymorphic`` (in ``context``) for tensor inputs of
    ``shapes``; ``polymorphic`` itself is unchanged."""
    text = polymorphic.operation.get_asm(print_generic_op_form=True, enable_debug_info=True)
    with context, ir.Location.unknown(), type_cache():
        module = ir.Module.parse(text)
        fn = next(op for op in module.body.operations if op.operation.name == "func.func")
        block = fn.regions[0].blocks[0]
        for arg, shape in zip(block.arguments, shapes):
            if not ir.ShapedType(arg.type).has_static_shape:
                arg.set_type(type_of(Sig(tuple(int(d) for d in shape), sig_of_elem(arg.type))))
        known: Dict[ir.Value, int] = {}
        returned = None
        for op in list(block.operations):
            if op.operation.name == "func.return":
                returned = op
                continue
            _refine_op(op.operation, known)
        for op in reversed(list(block.operations)):
            if op.operation.name in _SIZE_OPS and all(not list(r.uses) for r in op.operation.results):
                op.operation.erase()
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
            [a.type for a in block.arguments], [v.type for v in returned.operation.operands]))
        try:
            verify_module(module)
        except VerificationError as err:
            raise _error(f"the refined program is invalid:\n{err}") from None
    return module


def _refine_op(op: ir.Operation, known: Dict[ir.Value, int]) -> None:
    opdef = lookup(op.name)
    if opdef is None:
        raise _error(f"unknown op {op.name}")
    slots = sym_slots(op)
    operands, attrs = opdef.read(op)
    if slots:
        for slot, size in zip(slots, list(op.operands)[len(op.operands) - len(slots):]):
            if is_result_slot(slot):
                continue                       # (a result dim's size: the result types are inferred below)
            if size not in known:
                raise _error(f"a size operand of {op.name} is not known after refinement")
            set_slot(attrs, slot, known[size])
    if opdef is ops.dim_size:
        shape = sig_of(operands[0].type).shape
        with ir.InsertionPoint(op), op.location:
            value = ops.constant(value=ir.DenseElementsAttr.get(np.asarray(shape[attrs["dim"]], dtype=np.int64)))
        op.results[0].replace_all_uses_with(value)
        op.erase()
        known[value] = int(shape[attrs["dim"]])
        return
    if opdef is ops.constant:
        if not list(op.operands) and sig_of(op.results[0].type) == Sig((), "i64"):
            known[op.results[0]] = int(ir.DenseIntElementsAttr(op.attributes["value"])[0])
        return
    fold = _ARITHMETIC.get(opdef)
    if fold is not None and all(v in known for v in operands):
        known[op.results[0]] = fold(*(known[v] for v in operands))
    static = all(ir.ShapedType(t).has_static_shape for t in op.results.types)
    if static and not slots:
        return
    sigs = [[sig_of(v.type) for v in operands[0]]] if opdef.is_variadic else \
        [None if v is None else sig_of(v.type) for v in operands]
    inferred = opdef.infer(sigs, attrs)
    types = [type_of(Sig(s.shape, sig_of_elem(t) if s.elem == ANY_ELEM else s.elem))
             for s, t in zip(inferred, op.results.types)]
    if not slots:
        for result, t in zip(op.results, types):
            result.set_type(t)
        return
    with ir.InsertionPoint(op):
        new = opdef.build(operands, attrs, types, op.location)
    for old, value in zip(op.results, new.results):
        old.replace_all_uses_with(value)
    op.erase()


def refine_stablehlo(polymorphic: bytes, shapes: Sequence[Sequence[int]]) -> ir.Module:
    """Polymorphic StableHLO (MLIR bytecode, :func:`fxla.lowering.passes.lower_polymorphic_to_stablehlo`) made
    static for tensor inputs of ``shapes`` by StableHLO's own shape refinement (jaxlib's
    ``refine_polymorphic_shapes``, what ``jax.export`` runs): ``main``'s ``?`` argument dims are set, every other
    ``?`` is inferred from them, the dynamic ops become static ones.  Returns the static module, verified by MLIR in
    a strict context; raises :class:`LoweringError` where the sizes do not fit the program."""
    from fxla.base.jax_private import refine_polymorphic_shapes
    from .to_stablehlo import verify_stablehlo
    with strict_context(), ir.Location.unknown():
        module = ir.Module.parse(polymorphic)
        fn = _main(module)
        block = fn.regions[0].blocks[0]
        if len(shapes) != len(block.arguments):
            raise _error(f"{len(shapes)} input shapes for {len(block.arguments)} arguments")
        for arg, shape in zip(block.arguments, shapes):
            t = ir.RankedTensorType(arg.type)
            if t.rank != len(shape) or any(not t.is_dynamic_dim(i) and t.get_dim_size(i) != int(n)
                                           for i, n in enumerate(shape)):
                raise LoweringError(f"input shape {tuple(shape)} does not fit the program's argument type {t}")
            arg.set_type(ir.RankedTensorType.get([int(n) for n in shape], t.element_type))
        returned = list(block.operations)[-1]
        # (a result that is an argument itself now has its static type; the others stay ? until refinement)
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
            [a.type for a in block.arguments], [v.type for v in returned.operands]))
        buffer = io.BytesIO()
        module.operation.write_bytecode(buffer)
    try:
        refined = refine_polymorphic_shapes(buffer.getvalue())
    except Exception as err:  # noqa: BLE001  (jaxlib raises its own error types)
        raise LoweringError(f"StableHLO shape refinement failed for input shapes {[tuple(s) for s in shapes]}: "
                            f"{str(err).strip()[:500]}") from None
    return verify_stablehlo(refined)


def refine_stablehlo_like(polymorphic: bytes, refined: ir.Module) -> ir.Module:
    """:func:`refine_stablehlo` to the argument types of ``refined`` -- the polymorphic fxla program refined to the
    same sizes (:func:`refine_module`) -- whose index bounds are checked, as :func:`fxla.lowering.lower_to_stablehlo`
    checks them; the two refinements must agree on every result type (else :class:`LoweringError`)."""
    from .index_bounds import check_index_bounds
    check_index_bounds(refined)
    fn = _main(refined)
    module = refine_stablehlo(polymorphic, [tuple(ir.RankedTensorType(a.type).shape)
                                            for a in fn.regions[0].blocks[0].arguments])
    want, got = _result_types(fn), _result_types(_main(module))
    if got != want:
        raise LoweringError(f"the refined StableHLO returns {got}, the refined fxla program {want}")
    return module


def _main(module: ir.Module):
    return next(op for op in module.body.operations if op.operation.name == "func.func"
                and ir.StringAttr(op.attributes["sym_name"]).value == "main")


def _result_types(fn) -> list:
    return [str(t) for t in ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).results]
