"""The table of VJP rules: one per differentiable fxla op, keyed by its ``OpDef`` (as the lowering tables are).

A rule is ``rule(ctx, ct, *operands, result, **attrs)``, JAX's convention: ``ctx`` (a
:class:`~fxla.lowering.autodiff.context.VJPContext`) first, then the cotangent of the op's result, the op's
operands positionally (``None`` for an absent optional operand; a list for a variadic one), and keyword-only the
op's ``result`` and its attributes (as Python values, defaults filled in).  An op with several results gets
``ct`` and ``result`` as tuples, with ``None`` for a result whose cotangent is zero.  The rule returns one
cotangent per operand (a list of them for a variadic operand), each of exactly the operand's type, or ``None``
where the operand gets no gradient (an integer index, a zero gradient).

Ops in :data:`ZERO_GRADIENT` have a zero gradient everywhere it exists (``floor``, ``sign``: torch's
convention); ops whose results are never floating point (comparisons, ``argmax``) need no entry at all.  Any
other op reached by a gradient without a rule raises :class:`NotDifferentiableError`.
"""
from __future__ import annotations

from typing import Callable, Dict, Set

from fxla.dialects.fxla.opdef import OpDef

from ..errors import LoweringError

__all__ = ["VJP_RULES", "ZERO_GRADIENT", "NON_DIFFERENTIABLE", "vjp_rule", "zero_gradient", "non_differentiable",
           "NotDifferentiableError"]

#: OpDef -> its VJP rule (filled by the family modules of this package)
VJP_RULES: Dict[OpDef, Callable] = {}
#: ops with a zero gradient (torch returns zeros through them, it does not refuse)
ZERO_GRADIENT: Set[OpDef] = set()
#: ops through which no gradient is ever asked or given, with the reason (integer/boolean results, no operands,
#: or no derivative in torch either: a gradient asked through one raises NotDifferentiableError with the reason)
NON_DIFFERENTIABLE: Dict[OpDef, str] = {}


class NotDifferentiableError(LoweringError):
    """A gradient was asked through an op fxla cannot differentiate (no VJP rule)."""


def vjp_rule(*opdefs: OpDef):
    """Register the decorated function as the VJP rule of ``opdefs``."""
    def register(fn):
        for opdef in opdefs:
            if opdef in VJP_RULES or opdef in ZERO_GRADIENT:
                raise ValueError(f"{opdef.name} has a VJP rule already")
            VJP_RULES[opdef] = fn
        return fn
    return register


def zero_gradient(*opdefs: OpDef) -> None:
    """Declare ``opdefs`` to have a zero gradient with respect to every operand."""
    for opdef in opdefs:
        if opdef in VJP_RULES:
            raise ValueError(f"{opdef.name} has a VJP rule already")
        ZERO_GRADIENT.add(opdef)


def non_differentiable(reason: str, *opdefs: OpDef) -> None:
    """Declare that no gradient goes through ``opdefs``, and why."""
    for opdef in opdefs:
        if opdef in VJP_RULES or opdef in ZERO_GRADIENT:
            raise ValueError(f"{opdef.name} has a VJP rule already")
        NON_DIFFERENTIABLE[opdef] = reason


def _builtin() -> None:
    from fxla.dialects.fxla import ops
    zero_gradient(ops.detach)        # what it is for: the gradient stops here
    zero_gradient(ops.dim_size)      # a size (of a symbolic dim) does not depend on the tensor's values
    non_differentiable("its result is boolean", ops.eq, ops.ne, ops.lt, ops.le, ops.gt, ops.ge, ops.logical_not,
                       ops.logical_and, ops.logical_or, ops.logical_xor, ops.any, ops.all)
    non_differentiable("it takes integer or boolean operands only", ops.bitwise_not, ops.bitwise_and,
                       ops.bitwise_or, ops.bitwise_xor)
    non_differentiable("its result is an index (integer)", ops.argmax, ops.argmin)
    non_differentiable("it has no operands (a constant, a range, random numbers)", ops.constant, ops.arange)
    non_differentiable("its values are random draws from an integer seed (torch.rand has no gradient either)",
                       ops.rng)
    non_differentiable("torch has no derivative for floor_divide either ('derivative for floor_divide is not "
                       "implemented')", ops.floor_divide)

    @vjp_rule(ops.no_gradient)
    def _refuse(ctx, ct, x, *, result, op, reason):
        if reason:
            what, why = f"fxla has no gradient for {op} yet", reason
        else:
            what, why = "torch has no derivative for it either", (
                f"eager PyTorch raises 'derivative for {op} is not implemented' for this backward, and fxla "
                f"computes what eager computes")
        raise NotDifferentiableError(
            f"cannot differentiate {op}: {what}\n  at {ctx.loc}\nwhy: {why}\n"
            f"fix: compute this part under torch.no_grad() or on detached tensors")


_builtin()
