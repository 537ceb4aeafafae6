"""Reverse-mode automatic differentiation of fxla programs (``fxla-opt --fxla-vjp``).

fxla differentiates its own IR, as JAX keeps a rule per primitive: one VJP rule per fxla op
(:mod:`.registry`, rules in this package's family modules, named like the op families), and
:func:`differentiate`, which turns a program into a forward that also returns the residuals it must save and a
backward program, both ordinary fxla IR (verified, lowered to StableHLO and compiled like any program).  Every
route uses it: ``fxla.compile`` with autograd, the ``torch.compile`` backend, ``as_jax_function`` under
``jax.grad``.  docs/training.md describes it.
"""
from __future__ import annotations

from . import elementwise, indexing, linalg, nn, pool, recurrent, reduce, scan, shape  # noqa: F401  (the rule table)
from .context import VJPContext
from .registry import (NON_DIFFERENTIABLE, VJP_RULES, ZERO_GRADIENT, NotDifferentiableError, non_differentiable,
                       vjp_rule, zero_gradient)
from .transform import Differentiated, active_results, differentiable_args, differentiable_results, differentiate

__all__ = ["VJPContext", "VJP_RULES", "ZERO_GRADIENT", "NON_DIFFERENTIABLE", "NotDifferentiableError", "vjp_rule",
           "zero_gradient", "non_differentiable",
           "Differentiated", "active_results", "differentiable_args", "differentiable_results", "differentiate"]
