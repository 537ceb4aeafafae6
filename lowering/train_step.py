"""A whole training step as one fxla program: forward, loss, backward, gradient clipping and the optimizer
update (or, for a micro-step of gradient accumulation, the gradients added to accumulators).

:func:`build_step` takes the *objective* program (a model and loss lowered to the fxla dialect; its first
output is the 0-d loss), differentiates it (:func:`fxla.lowering.autodiff.differentiate`) with respect to the
trainable parameters through the loss (cotangent 1), and inlines both halves into one ``@main`` followed by the
update rule of :mod:`fxla.lowering.optim`.  The program's arguments and results come in the order of
:class:`StepLayout`; it has no ``fxla.param`` arguments (parameters are inputs *and* results, so they keep their
logical layout) and its StableHLO is verified and compiled like any program.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from torch.utils import _pytree as pytree

from fxla.dialects.fxla import ops, sig_of, verify_module
from fxla.dialects.fxla.opdef import type_cache
from fxla.dialects.fxla.types import is_float, promote_pair
from fxla.dialects.mlir import func, ir

from .autodiff.context import VJPContext
from .autodiff.transform import differentiate, main_function
from .errors import LoweringError
from .emit import compute_elem
from .optim import UpdateRule
from .program import FxlaProgram

__all__ = ["StepLayout", "build_step"]


@dataclass
class StepLayout:
    """The arguments and results of a step program, in order.

    Arguments: the batch tensors (``n_batch``), the frozen parameters and buffers (``frozen``), the trainable
    parameters (``trainable``), per trainable parameter its optimizer state tensors (its rule's ``state``), the
    accumulated gradients (``accumulators``: one per trainable parameter, when the step adds to them), the
    scalar packs (``scalar_packs``: one 1-d argument per element type of the trainable parameters, holding the
    scalars of its rule (``scalars``, in order) of each parameter it names, in order: one argument where a
    scalar per parameter would be dozens, each a transfer and a dispatch check per call), then ``max_norm``
    (0-d, ``clip_dtype``) when gradients are clipped.
    Results: the objective's outputs (``n_outputs``: the loss first), the new values of the buffers it changes
    (``changed_buffers``), then either the new trainable parameters and their new state (an update) or the new
    accumulators (a micro-step), then the check code where the objective checks its data (``value_checks``).
    ``clip_only``: frozen parameters differentiated only for the clipping norm (the model's parameters outside
    the optimizer), which have accumulators too (after the trainable ones: :attr:`differentiated`).
    """

    n_batch: int
    frozen: List[str]
    trainable: List[str]
    rules: Optional[Dict[str, UpdateRule]]     # per trainable parameter; None: a micro-step
    accumulators: bool
    clip: bool
    n_outputs: int
    changed_buffers: List[str] = field(default_factory=list)
    scalar_packs: List[List[str]] = field(default_factory=list)     # per pack, the trainable parameters it holds
    #: the objective's value checks (:mod:`fxla.lowering.value_checks`): the step's last result is then their
    #: check code, and where it is not 0 the step's other state results are the values it was given
    value_checks: Tuple[Any, ...] = ()
    clip_only: List[str] = field(default_factory=list)
    clip_dtype: str = "f32"                  # the element type of ``max_norm`` (f64 for float64 gradients)

    @property
    def differentiated(self) -> List[str]:
        """The parameters whose gradients the step computes (and accumulates): the trainable, then ``clip_only``."""
        return self.trainable + self.clip_only


def _kept(ctx: VJPContext, code: ir.Value, new: Sequence[ir.Value], old: Sequence[ir.Value]) -> List[ir.Value]:
    """``new`` where the check ``code`` is 0 (every value check held), else ``old``: a step whose data failed a
    check (:mod:`fxla.lowering.value_checks`) raises after its call, and leaves the model and the optimizer as
    they were, as eager's failed forward would."""
    ok = ctx.emit(ops.eq, code, ctx.convert(ctx.tensor(0), "i32"))
    return [ctx.emit(ops.where, ok, n, o) for n, o in zip(new, old)]


def _inline(fn: ir.Operation, args: Sequence[ir.Value]) -> List[ir.Value]:
    """Copy the body of the (region-free) function ``fn`` at the insertion point, its arguments bound to
    ``args``; return the values it returns."""
    block = fn.regions[0].blocks[0]
    env: Dict[ir.Value, ir.Value] = dict(zip(block.arguments, args))
    operations = list(block.operations)
    for op in operations[:-1]:
        copy = ir.Operation.create(op.name, results=[r.type for r in op.results],
                                   operands=[env[v] for v in op.operands],
                                   attributes={n: op.attributes[n] for n in op.attributes}, loc=op.location)
        env.update(zip(op.results, copy.results))
    return [env[v] for v in operations[-1].operands]


def _promoted(elems: Sequence[str]) -> str:
    """torch's promotion of floating element types (f16 with bf16: f32)."""
    return functools.reduce(promote_pair, elems)


def _norm(ctx: VJPContext, g: ir.Value) -> ir.Value:
    """``torch.linalg.vector_norm(g)``: accumulated in float32 for f16/bf16 (torch's opmath), in g's type."""
    elem = ctx.sig(g).elem
    acc = compute_elem(elem)
    g = ctx.convert(g, acc)
    squares = ctx.emit(ops.sum, ctx.emit(ops.mul, g, g), dims=(), keepdim=False)
    return ctx.convert(ctx.emit(ops.sqrt, squares), elem)


def clip_dtype(elems: Sequence[str]) -> str:
    """The element type of the clipping's ``max_norm`` argument for gradients of ``elems``."""
    return compute_elem(_promoted(list(elems))) if elems else "f32"


def _clip(ctx: VJPContext, grads: List[ir.Value], counted: Sequence[bool], max_norm: ir.Value) -> List[ir.Value]:
    """``torch.nn.utils.clip_grad_norm_(params, max_norm)`` over the gradients ``counted`` says, as torch computes
    it: each gradient's 2-norm in its own type, the 2-norm of those stacked (in their promoted type), then
    ``clamp(reciprocal(total + 1e-6) * max_norm, max=1)``, each op in that type (float32 opmath for f16/bf16),
    and every counted gradient times it (``g.mul_(coef)``: in their promoted type, rounded to g's)."""
    chosen = [g for g, c in zip(grads, counted) if c]
    if not chosen:                    # (eager: no gradients, nothing clipped)
        return grads
    elem = _promoted([ctx.sig(g).elem for g in chosen])
    acc = compute_elem(elem)

    def rounded(v):                   # one torch op on 0-d `elem` tensors: computed in acc, rounded to elem
        return ctx.convert(ctx.convert(v, elem), acc)
    stacked = ctx.emit(ops.concat, [ctx.reshape(ctx.convert(_norm(ctx, g), elem), (1,)) for g in chosen], dim=0)
    total = ctx.convert(_norm(ctx, stacked), acc)
    total = rounded(ctx.emit(ops.add, total, ctx.tensor(1e-6, like=total)))
    coef = rounded(ctx.emit(ops.div, ctx.tensor(1.0, like=total), total))          # max_norm / t: reciprocal(t) * ..
    coef = rounded(ctx.emit(ops.mul, coef, ctx.convert(max_norm, acc)))
    coef = ctx.convert(ctx.emit(ops.minimum, coef, ctx.tensor(1.0, like=coef)), elem)
    out = []
    for g, c in zip(grads, counted):
        if c:
            e = ctx.sig(g).elem
            both = _promoted([e, elem])
            g = ctx.convert(ctx.emit(ops.mul, ctx.convert(g, both), ctx.convert(coef, both)), e)
        out.append(g)
    return out


def _unpack(ctx: VJPContext, packs: Sequence[ir.Value], members: List[List[str]],
            scalar_names: Dict[str, Sequence[str]]) -> Dict[str, Dict[str, ir.Value]]:
    """The 0-d scalars of each parameter (name -> scalar name -> value) sliced out of the scalar packs (see
    :class:`StepLayout`); XLA fuses each slice into the update that reads it."""
    scalars: Dict[str, Dict[str, ir.Value]] = {}
    for pack, names in zip(packs, members):
        offset = 0
        for n in names:
            scalars[n] = {}
            for s in scalar_names[n]:
                one = ctx.emit(ops.slice, pack, start=[offset], limit=[offset + 1], stride=[1])
                scalars[n][s] = ctx.reshape(one, ())
                offset += 1
    return scalars


def build_step(objective: FxlaProgram, trainable: Sequence[str], rules: Optional[Dict[str, UpdateRule]], *,
               accumulators: bool = False, clip: bool = False, tied: Optional[Dict[str, str]] = None,
               clip_only: Sequence[str] = (), unclipped: Sequence[str] = ()) -> tuple:
    """The step program of ``objective`` (see the module docstring) and its :class:`StepLayout`.  ``rules``:
    the update of each trainable parameter (``None``: a micro-step that only adds the gradients to the
    accumulators, which it then needs).  ``tied``: parameter names of the objective that are another name of the
    same tensor (tied weights: a language model's embedding and output layer) -> the name the step uses for it;
    the step takes it once and updates it with the sum of both gradients, as autograd accumulates them.
    ``clip_only``: frozen parameters whose gradients count in the clipping norm (and are accumulated);
    ``unclipped``: trainable parameters whose gradients neither count nor are clipped (not the model's)."""
    if rules is None and not accumulators:
        raise ValueError("a step without an update must accumulate")
    if objective.mutated_inputs or objective.written_attributes:
        raise LoweringError("a training step cannot change its inputs in place or assign module attributes\n"
                            "fix: compute new tensors in the model instead of changing its inputs/attributes")
    trainable, clip_only = list(trainable), list(clip_only)
    tied = dict(tied or {})
    names = objective.param_names
    canonical = [n for n in names if n not in tied]
    missing = [n for n in trainable + clip_only if n not in names]
    if missing:
        raise LoweringError(f"internal error: trainable parameters {missing} are not read by the objective\n"
                            "fix: report this as an fxla bug")
    with objective.context, ir.Location.unknown(), type_cache():
        main = main_function(objective.module)
        block = main.regions[0].blocks[0]
        n_args = len(block.arguments)
        n_batch = n_args - len(names)
        results = list(list(block.operations)[-1].operands)
        loss_sig = sig_of(results[0].type) if results else None
        if loss_sig is None or loss_sig.shape != () or not is_float(loss_sig.elem):
            raise LoweringError("the training objective must return a 0-d floating-point loss first\n"
                                "fix: return the loss (e.g. F.cross_entropy(model(x), y)) from the loss function")
        param_arg = {n: n_batch + i for i, n in enumerate(names)}
        differentiated = trainable + clip_only
        wrt_names = [n for n in names if tied.get(n, n) in differentiated]
        diff = differentiate(objective, [param_arg[n] for n in wrt_names], [0])
        frozen = [n for n in canonical if n not in trainable]
        layout = StepLayout(n_batch, frozen, trainable, rules, accumulators, clip, objective.layout.outputs,
                            list(objective.mutated_params), value_checks=tuple(objective.value_checks),
                            clip_only=clip_only)

        types = [a.type for a in block.arguments]
        layout.clip_dtype = clip_dtype([sig_of(types[param_arg[n]]).elem for n in differentiated
                                        if n not in unclipped])
        arg_types = types[:n_batch] + [types[param_arg[n]] for n in frozen] + [types[param_arg[n]] for n in trainable]
        state_names = {n: rules[n].state if rules is not None else () for n in trainable}
        scalar_names = {n: rules[n].scalars if rules is not None else () for n in trainable}
        for n in trainable:
            arg_types += [types[param_arg[n]]] * len(state_names[n])
        if accumulators:
            arg_types += [types[param_arg[n]] for n in differentiated]
        packs: Dict[str, List[str]] = {}               # element type -> the parameters whose scalars it holds
        pack_types: Dict[str, ir.Type] = {}
        for n in trainable:
            if scalar_names[n]:
                # (f16/bf16: float32 scalars, as torch's opmath; a pack per parameter type all the same, since the
                # scalars torch rounds are rounded to that type: api.train_step._packs)
                elem = sig_of(types[param_arg[n]]).elem
                packs.setdefault(elem, []).append(n)
                pack_types[elem] = ir.RankedTensorType(types[param_arg[n]]).element_type \
                    if compute_elem(elem) == elem else ir.F32Type.get()
        layout.scalar_packs = list(packs.values())
        for elem, members in packs.items():
            arg_types.append(ir.RankedTensorType.get([sum(len(scalar_names[n]) for n in members)], pack_types[elem]))
        if clip:
            arg_types.append(ir.RankedTensorType.get([], ir.F64Type.get() if layout.clip_dtype == "f64"
                                                     else ir.F32Type.get()))

        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get(arg_types, []))
            entry = fn.add_entry_block()
        args = iter(entry.arguments)
        batch = [next(args) for _ in range(n_batch)]
        values = {n: next(args) for n in frozen}
        values.update({n: next(args) for n in trainable})
        state = {n: {s: next(args) for s in state_names[n]} for n in trainable}
        acc = {n: next(args) for n in differentiated} if accumulators else {}
        pack_args = [next(args) for _ in packs]
        max_norm = next(args) if clip else None
        original = batch + [values[tied.get(n, n)] for n in names]

        ctx = VJPContext()
        with ir.InsertionPoint(entry):
            forward = _inline(main_function(diff.forward.module), original)
            n_res = diff.residuals
            outputs, residuals = forward[:len(forward) - n_res], forward[len(forward) - n_res:]
            code = outputs.pop() if objective.value_checks else None    # (the objective's check code: last)
            with ir.Location.unknown() as loc:
                ctx.loc = loc
                one = ctx.convert(ctx.tensor(1.0), loss_sig.elem)
            backward_args = residuals + [one] + [original[k] for k in diff.inputs] + \
                [values[tied.get(n, n)] for n in diff.params]
            partial = _inline(main_function(diff.backward.module), backward_args)
            with ir.Location.unknown() as loc:
                ctx.loc = loc
                summed: Dict[str, ir.Value] = {}
                for n, g in zip(wrt_names, partial):         # (tied names: their gradients add up)
                    key = tied.get(n, n)
                    summed[key] = g if key not in summed else ctx.emit(ops.add, summed[key], g)
                grads = [summed[n] for n in differentiated]
                if accumulators:
                    grads = [ctx.emit(ops.add, acc[n], g) for n, g in zip(differentiated, grads)]
                returned = list(outputs)
                if code is not None:      # a failed check keeps every state the step donates as it was
                    returned[layout.n_outputs:] = _kept(ctx, code, returned[layout.n_outputs:],
                                                        [values[n] for n in layout.changed_buffers])
                if rules is None:
                    returned += grads if code is None or not accumulators else \
                        _kept(ctx, code, grads, [acc[n] for n in differentiated])
                else:
                    if clip:
                        grads = _clip(ctx, grads, [n not in unclipped for n in differentiated], max_norm)
                    scalars = _unpack(ctx, pack_args, layout.scalar_packs, scalar_names)
                    new_params, new_states = [], []
                    for n, g in zip(trainable, grads):
                        p, s = rules[n].emit(ctx, values[n], g, state[n], scalars[n])
                        new_params.append(p)
                        new_states += [s[k] for k in state_names[n]]
                    if code is not None:
                        new_params = _kept(ctx, code, new_params, [values[n] for n in trainable])
                        new_states = _kept(ctx, code, new_states,
                                           [state[n][k] for n in trainable for k in state_names[n]])
                    returned += new_params + new_states
                if code is not None:
                    returned.append(code)
            func.ReturnOp(returned)
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(arg_types, [v.type for v in returned]))
        if objective.symbolic is None:      # (a polymorphic step is verified once refined, as every such program)
            verify_module(module)
    n = len(arg_types)
    program = FxlaProgram(module, objective.context, pytree.tree_flatten([0] * n)[1], [None] * n,
                          pytree.tree_flatten([0] * len(returned))[1], [None] * len(returned), [], {})
    return program, layout
