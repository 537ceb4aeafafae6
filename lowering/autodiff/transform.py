"""Reverse-mode differentiation of an fxla program: a forward that also returns residuals, and a backward.

:func:`differentiate` reads the ``@main`` of an :class:`~fxla.lowering.FxlaProgram` once, in order, to find
the *active* values (floating-point values that depend on an argument being differentiated), then walks its ops
in reverse, calling each active op's VJP rule (:mod:`.registry`) with the cotangent accumulated for its results
so far.  The rules emit fxla ops into a new function, ``@main`` of the backward module; a forward value a rule
uses becomes

* an argument of the backward, when it is an argument of ``@main`` (an input or a parameter: the caller still
  holds it, nothing is saved);
* a copy of its op, when it is an ``fxla.constant`` (or, with ``remat=True``, any op: recomputed in the
  backward from the arguments, nothing saved);
* otherwise a *residual*: an extra result of the forward and an argument of the backward.

Rules receive every operand and result of their op; the backward is cleaned of dead ops before its arguments
are fixed, so only what a rule really used is saved.  The backward is ordinary fxla IR: verified, lowered to
StableHLO and compiled like any program (``fxla-opt --fxla-vjp`` prints both halves).

The backward's arguments come in one order: the residuals, the cotangents (one per differentiated result),
the inputs it reads, then the parameters it reads (last, as in every fxla program, so parameter layouts
apply).  Its results are the gradients of the differentiated arguments, in order; an argument the result does
not depend on gets zeros.
"""
from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from torch.utils import _pytree as pytree

from fxla.dialects.fxla import ops, sig_of
from fxla.dialects.fxla import symbolic
from fxla.dialects.fxla.opdef import sig_of_elem, type_cache, value_sig
from fxla.dialects.fxla.symbolic import NotPolymorphicError, is_result_slot, sym_slots
from fxla.dialects.fxla.types import is_float
from fxla.dialects.mlir import func, ir

from ..fold import dead_code_elimination
from ..symbolic import same_symbolic_shape
from ..program import FxlaProgram
from .context import VJPContext
from .registry import NON_DIFFERENTIABLE, VJP_RULES, ZERO_GRADIENT, NotDifferentiableError

__all__ = ["Differentiated", "differentiate", "differentiable_args", "differentiable_results", "active_results"]

_PLACEHOLDER = "builtin.unrealized_conversion_cast"
_DETACH = ops.detach.name
_KEEP_HISTORY = ops.keep_history.name


@dataclass
class Differentiated:
    """The two programs :func:`differentiate` makes (see the module docstring).

    ``forward`` returns the original program's results followed by ``residuals`` saved values; ``backward``
    takes (residuals, one cotangent per ``cotangents`` entry, the original arguments ``inputs``, the
    parameters ``params``) and returns the gradients of the original arguments ``wrt``, in order.
    """

    forward: FxlaProgram
    backward: FxlaProgram
    residuals: int
    cotangents: List[int]
    wrt: List[int]
    inputs: List[int]
    params: List[str]
    #: the results of the original program that depend on an argument in ``wrt`` (the others have no gradient:
    #: torch gives such outputs ``requires_grad=False``)
    active_results: List[int] = dataclasses.field(default_factory=list)


def _is_float_value(value: ir.Value) -> bool:
    return isinstance(value.type.maybe_downcast(), ir.RankedTensorType) and is_float(sig_of_elem(value.type))


def differentiable_args(program: FxlaProgram) -> List[int]:
    """The argument numbers of ``program``'s ``@main`` with a floating-point element type."""
    block = main_function(program.module).regions[0].blocks[0]
    return [a.arg_number for a in block.arguments if _is_float_value(a)]


def differentiable_results(program: FxlaProgram) -> List[int]:
    """The result numbers of ``program``'s ``@main`` with a floating-point element type."""
    ret = list(main_function(program.module).regions[0].blocks[0].operations)[-1]
    return [i for i, v in enumerate(ret.operands) if _is_float_value(v)]


def active_results(program: FxlaProgram, wrt: Sequence[int], *, through_comparisons: bool = False) -> List[int]:
    """The result numbers of ``program``'s ``@main`` that depend on its arguments ``wrt`` through float values
    (the others have no gradient: torch gives them ``requires_grad=False``).  ``through_comparisons``: through any
    op but a ``detach`` (a derivative program: eager's backward formulas take their inputs themselves, so the
    gradient of a ReLU, ``where(x > 0, ct, 0)``, requires grad as eager's does)."""
    with program.context:
        block = main_function(program.module).regions[0].blocks[0]
        body = list(block.operations)
        if through_comparisons:
            active = {block.arguments[k] for k in wrt}
            for op in body[:-1]:
                if op.name != _DETACH and any(v in active for v in _carrying(op)):
                    active.update(op.results)
        else:
            active = _active(block, body[:-1], wrt)
        return [i for i, v in enumerate(body[-1].operands) if v in active]


def main_function(module: ir.Module) -> ir.Operation:
    for op in module.body.operations:
        if op.operation.name == "func.func":
            return op.operation
    raise NotDifferentiableError("the module has no function to differentiate\nfix: pass an fxla program")


def _where(op: ir.Operation) -> str:
    return str(op.location)


class _Backward:
    """The backward function under construction: imports forward values and accumulates cotangents."""

    def __init__(self, block: ir.Block, n_inputs: int, remat: bool):
        self.block = block
        self.n_inputs = n_inputs
        self.remat = remat
        self.imported: Dict[ir.Value, ir.Value] = {}
        self.placeholders: Dict[ir.Value, ir.Operation] = {}   # forward value -> its placeholder op
        self.residuals: List[ir.Value] = []                   # forward values saved, in first-use order
        self.ct: Dict[ir.Value, ir.Value] = {}

    def _placeholder(self, value: ir.Value) -> ir.Value:
        op = ir.Operation.create(_PLACEHOLDER, results=[value.type], operands=[])
        self.placeholders[value] = op
        _same_symbolic(value, op.result)
        return op.result

    def value(self, value: Optional[ir.Value]) -> Optional[ir.Value]:
        """The forward ``value`` as a value of the backward (see the module docstring)."""
        if value is None:
            return None
        if isinstance(value, list):
            return [self.value(v) for v in value]
        found = self.imported.get(value)
        if found is not None:
            return found
        owner = value.owner
        if isinstance(owner, ir.Block):
            made = self._placeholder(value)
        elif owner.name == _DETACH and _straight_through(owner) is not None and self.remat:
            # (recomputed in a derivative: a second derivative through it is refused, see _straight_through)
            made = ops.no_gradient(self.value(owner.operands[0]), loc=owner.location,
                                   **_second_order_refusal(_straight_through(owner)))
            _same_symbolic(value, made)
        elif owner.name == "fxla.constant" or self.remat:
            copy = ir.Operation.create(owner.name, results=[r.type for r in owner.results],
                                       operands=[self.value(v) for v in owner.operands],
                                       attributes={n: owner.attributes[n] for n in owner.attributes},
                                       loc=owner.location)
            for r, c in zip(owner.results, copy.results):
                self.imported[r] = c
                _same_symbolic(r, c)
            scope = symbolic.current()
            if scope is not None and owner.results and owner.results[0] in scope.attrs:
                scope.attrs[copy.results[0]] = scope.attrs[owner.results[0]]
            return self.imported[value]
        else:
            made = self._placeholder(value)
            self.residuals.append(value)
        self.imported[value] = made
        return made

    def accumulate(self, value: ir.Value, ct: ir.Value, ctx: VJPContext) -> None:
        old = self.ct.get(value)
        self.ct[value] = ct if old is None else ctx.emit(ops.add, old, ct)


def _straight_through(op: ir.Operation) -> Optional[str]:
    """The torch op an ``fxla.detach`` gives the exact first derivative of by a straight-through term
    (``x.detach() + (x - x.detach()) * g``: its ``first_order`` attribute), else ``None``.  Such a term has the right
    first derivative and a wrong (zero) second one, so where a derivative of the program would differentiate
    through it again -- a backward that recomputes it (it becomes ``fxla.no_gradient``), or a gradient of the
    forward's residuals (``higher=True``) -- fxla refuses rather than return that zero."""
    if "first_order" not in op.attributes:
        return None
    return ir.StringAttr(op.attributes["first_order"]).value


def _second_order_refusal(op_name: str) -> Dict[str, str]:
    return {"op": f"the first derivative of {op_name}",
            "reason": f"fxla computes {op_name}'s first derivative exactly (torch's formula, through a "
                      f"straight-through term), and has no second derivative for it yet"}


def _same_symbolic(value: ir.Value, other: ir.Value) -> None:
    """``other`` (a value of the backward standing for the forward's ``value``) has ``value``'s symbolic shape."""
    scope = symbolic.current()
    if scope is not None and value in scope.sigs:
        scope.sigs[other] = scope.sigs[value]


def _symbolic_attrs(op: ir.Operation, attrs: Dict) -> Dict:
    """The attributes of ``op`` with its symbolic sizes (the IR holds ``?`` there: ``fxla.sym``) as the symbols
    they are, while a polymorphic program is differentiated."""
    slots = [slot for slot in sym_slots(op) if not is_result_slot(slot)]
    if not slots:
        return attrs
    scope = symbolic.current()
    found = scope.attrs.get(op.results[0]) if scope is not None and len(op.results) else None
    if found is None:
        raise NotPolymorphicError(f"{op.name} has symbolic attributes {slots} and no record of their sizes")
    return dict(found)


def _active(block: ir.Block, body: Sequence[ir.Operation], wrt: Sequence[int], higher: bool = False) -> set:
    active = {block.arguments[k] for k in wrt}
    for op in body:
        # (no history after a detach, as torch's: the result requires no grad; but a straight-through one passes
        # the history on where the program's results are differentiated again, to refuse: _straight_through)
        if op.name == _DETACH and not (higher and _straight_through(op) is not None):
            continue
        if any(v in active for v in _carrying(op)):
            active.update(r for r in op.results if _is_float_value(r))
    return active


def _carrying(op: ir.Operation):
    """The operands whose history ``op``'s results carry: all, but a ``keep_history``'s ``history`` alone."""
    return op.operands[1:] if op.name == _KEEP_HISTORY else op.operands


def _check(op, rule_out, operands) -> None:
    for value, ct in zip(operands, rule_out):
        if ct is not None and value is not None and ct.type != value.type:
            if symbolic.current() is not None:
                # a polymorphic program: a ? dim of one may be a static dim of the other where the symbol is fixed
                # (a guard of the program, checked at every call); anything else is not the operand's shape
                want = value_sig(value)
                if want is not None and same_symbolic_shape(ct, want):
                    continue
                raise NotPolymorphicError(f"the VJP rule of {op.name} gave a {ct.type} cotangent for a {value.type} "
                                          f"operand at {_where(op)}")
            raise NotDifferentiableError(
                f"internal error: the VJP rule of {op.name} gave a {ct.type} cotangent for a {value.type} operand\n"
                f"  at {_where(op)}\nfix: report this as an fxla bug")


def _apply_rule(op: ir.Operation, bwd: _Backward, ctx: VJPContext, active: set) -> None:
    opdef = ops.lookup(op.name)
    cts = [bwd.ct.get(r) for r in op.results]
    if all(c is None for c in cts) or not any(v in active for v in op.operands):
        return
    if opdef is ops.detach and _straight_through(op) is not None:      # (higher=True: see _straight_through)
        refusal = _second_order_refusal(_straight_through(op))
        raise NotDifferentiableError(f"cannot differentiate {refusal['op']}\n  at {_where(op)}\nwhy: "
                                     f"{refusal['reason']}\nfix: compute this part under torch.no_grad() or on "
                                     f"detached tensors, or take the higher derivative with eager PyTorch")
    if opdef in ZERO_GRADIENT:
        return
    rule = VJP_RULES.get(opdef)
    if rule is None:
        reason = NON_DIFFERENTIABLE.get(opdef)
        why = (f"a gradient was asked through this op, and {reason}" if reason is not None else
               "a gradient was asked through this op, and fxla differentiates only ops with a VJP rule")
        raise NotDifferentiableError(
            f"cannot differentiate {op.name}: fxla has no gradient for it\n  at {_where(op)}\n"
            f"why: {why}\n"
            f"fix: compute this part under torch.no_grad() or on detached tensors (x.detach()), or run the "
            f"backward with eager PyTorch")
    operands, attrs = opdef.read(op)
    attrs = _symbolic_attrs(op, attrs)
    flat = operands[0] if opdef.is_variadic else operands
    with ctx.loc:
        mapped = [bwd.value(v) for v in flat]
        results = [bwd.value(r) for r in op.results]
        if len(op.results) == 1:
            ct, result = cts[0], results[0]
        else:
            ct, result = tuple(cts), tuple(results)
        args = [mapped] if opdef.is_variadic else mapped
        out = rule(ctx, ct, *args, result=result, **attrs)
    out = list(out) if not opdef.is_variadic else list(out[0] if len(out) == 1 and isinstance(out[0], list)
                                                          else out)
    if len(out) != len(flat):
        raise NotDifferentiableError(f"internal error: the VJP rule of {op.name} gave {len(out)} cotangents for "
                                     f"{len(flat)} operands\nfix: report this as an fxla bug")
    _check(op, out, flat)
    for value, g in zip(flat, out):
        if g is not None and value in active:
            bwd.accumulate(value, g, ctx)


def differentiate(program: FxlaProgram, wrt: Sequence[int], cotangents: Sequence[int], *,
                  remat: bool = False, higher: bool = False) -> Differentiated:
    """Differentiate ``program``: gradients of its ``@main`` arguments ``wrt`` (argument numbers, floating
    point) through its results ``cotangents`` (result numbers, floating point).  See the module docstring.
    ``higher``: the program's results carry derivatives already (a forward that saves residuals, a derivative), so
    this is a derivative of a higher order: a straight-through first derivative is refused where it is reached."""
    wrt, cotangents = list(wrt), list(cotangents)
    with program.context, ir.Location.unknown(), type_cache():
        main = main_function(program.module)
        block = main.regions[0].blocks[0]
        body = list(block.operations)
        ret, body = body[-1], body[:-1]
        results = list(ret.operands)
        n_inputs = len(block.arguments) - len(program.param_names)
        bad = [k for k in wrt if not _is_float_value(block.arguments[k])]
        if bad:
            raise NotDifferentiableError(f"arguments {bad} are not floating point: only floating-point tensors have "
                                         f"gradients\nfix: differentiate with respect to float tensors")
        active = _active(block, body, wrt, higher)

        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get([], []))
            bblock = fn.add_entry_block()
        bwd = _Backward(bblock, n_inputs, remat)
        ctx = VJPContext()
        ct_values = []
        # a polymorphic program: the backward is built over the same symbols, its sizes read off the forward's
        # arguments it takes as inputs
        scope = contextlib.nullcontext() if program.symbolic is None else \
            symbolic.symbolic_scope(program.symbolic.derived(ctx, bwd.value, bblock))
        with ir.InsertionPoint(bblock), scope:
            for i in cotangents:
                value = results[i]
                placeholder = ir.Operation.create(_PLACEHOLDER, results=[value.type], operands=[]).result
                _same_symbolic(value, placeholder)
                ct_values.append(placeholder)
                if value in active:
                    bwd.accumulate(value, placeholder, ctx)
            for op in reversed(body):
                ctx.op, ctx.loc = op, op.location
                _apply_rule(op, bwd, ctx, active)
            ctx.loc = ir.Location.unknown()
            with ctx.loc:
                grads = [bwd.ct.get(block.arguments[k]) or ctx.zeros_like(block.arguments[k]) for k in wrt]
                grads = [g if g.type == block.arguments[k].type else
                         ctx.convert(g, sig_of_elem(block.arguments[k].type)) for g, k in zip(grads, wrt)]
            func.ReturnOp(grads)
        dead_code_elimination(module)
        used = {v: op for v, op in bwd.placeholders.items() if next(iter(op.result.uses), None) is not None}
        residuals = [v for v in bwd.residuals if v in used]
        arg_values = [block.arguments[k] for k in range(len(block.arguments)) if block.arguments[k] in used]
        inputs = [a.arg_number for a in arg_values if a.arg_number < n_inputs]
        params = [a.arg_number for a in arg_values if a.arg_number >= n_inputs]
        order = residuals + [None] * len(ct_values) + [block.arguments[k] for k in inputs + params]
        grad_types = [g.type for g in grads]       # (a gradient may be a placeholder, erased below: the identity's)
        cts = iter(ct_values)
        for value in order:
            placeholder = next(cts) if value is None else used[value].result
            arg = bblock.add_argument(placeholder.type, ir.Location.unknown())
            placeholder.replace_all_uses_with(arg)
        for op in list(bwd.placeholders.values()) + [c.owner for c in ct_values]:
            op.erase()
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
            [a.type for a in bblock.arguments], grad_types))
        param_names = [program.param_names[k - n_inputs] for k in params]
        n_plain = len(bblock.arguments) - len(params)
        fn.attributes["arg_attrs"] = ir.ArrayAttr.get(
            [ir.DictAttr.get({}) for _ in range(n_plain)] +
            [ir.DictAttr.get({"fxla.param": ir.StringAttr.get(n)}) for n in param_names])
        forward = _forward_module(program, main, body, residuals)
    n_args = len(order)
    backward = FxlaProgram(module, program.context, pytree.tree_flatten([0] * n_args)[1], [None] * n_args,
                           pytree.tree_flatten([0] * len(wrt))[1], [None] * len(wrt), param_names,
                           {n: program.params[n] for n in param_names})
    return Differentiated(dataclasses.replace(program, module=forward, symbolic=None), backward, len(residuals),
                          cotangents, wrt, inputs, param_names, [i for i, v in enumerate(results) if v in active])


def _forward_module(program: FxlaProgram, main: ir.Operation, body, residuals: List[ir.Value]) -> ir.Module:
    """A copy of ``program``'s module whose ``@main`` also returns ``residuals`` (values of the original)."""
    position = {}
    for i, op in enumerate(body):
        for j, r in enumerate(op.results):
            position[r] = (i, j)
    module = ir.Module.parse(program.module.operation.get_asm(enable_debug_info=True))
    copy = main_function(module)
    cblock = copy.regions[0].blocks[0]
    cbody = list(cblock.operations)
    ret = cbody[-1]
    values = list(ret.operands)
    for r in residuals:
        i, j = position[r]
        values.append(cbody[i].results[j])
    with ir.InsertionPoint(ret), ret.location:
        func.ReturnOp(values)
    ret.erase()
    ftype = ir.FunctionType(ir.TypeAttr(copy.attributes["function_type"]).value)
    copy.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(ftype.inputs, [v.type for v in values]))
    return module


def vjp_pass(root: ir.Operation) -> None:
    """``fxla-opt --fxla-vjp``: replace the module's ``@main`` by ``@forward`` (its results, then the residuals)
    and ``@backward`` (residuals, cotangents, inputs, parameters -> gradients) with respect to every
    floating-point argument, through every floating-point result."""
    module = ir.Module.parse(root.get_asm(enable_debug_info=True), context=root.context)
    main = main_function(module)
    block = main.regions[0].blocks[0]
    names = []
    if "arg_attrs" in main.attributes:
        for attrs in ir.ArrayAttr(main.attributes["arg_attrs"]):
            d = ir.DictAttr(attrs)
            if "fxla.param" in d:
                names.append(ir.StringAttr(d["fxla.param"]).value)
    results = list(list(block.operations)[-1].operands)
    program = FxlaProgram(module, root.context, None, [], None, [], names, {n: None for n in names})
    wrt = differentiable_args(program)
    d = differentiate(program, wrt, [i for i, r in enumerate(results) if _is_float_value(r)])
    body = root.regions[0].blocks[0]
    for op in list(body.operations):
        op.erase()
    for name, part in (("forward", d.forward.module), ("backward", d.backward.module)):
        fn = main_function(part)
        fn.attributes["sym_name"] = ir.StringAttr.get(name)
        fn.move_before(body.operations[0]) if len(body.operations) else body.append(fn)
    # (forward first)
    ops_now = list(body.operations)
    if ops_now and ir.StringAttr(ops_now[0].attributes["sym_name"]).value == "backward":
        ops_now[1].move_before(ops_now[0])
