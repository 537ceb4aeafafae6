"""``torch._check(cond, message)`` (and ``_check_index``, ``_check_value`` ... : every ``torch._check_with``) on a
traced condition.

Eager reads ``torch._check(x.shape[1] % 2 == 0, ...)`` as ``if not cond: raise RuntimeError(message())``; torch's
own function takes a ``bool`` or a ``SymBool`` and raised a raw ``TypeError`` (or, for a sized value of a
concrete-shapes trace, an ``AttributeError`` from ``expect_true``) on a traced one.  While fxla traces, a traced
condition is decided as that ``if`` is (``bool(cond)``): a concrete-shapes trace with symbolic dims keeps it as a
guard on the sizes, checked before each call; a shape-agnostic trace refuses it as control flow on a traced value,
with the fix that error names.  A condition that holds nowhere raises eager's error, with its message, while
tracing.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import torch

from .proxy import Proxy

__all__ = ["traced"]


@contextlib.contextmanager
def traced(tracer) -> Iterator[None]:
    """While ``tracer`` traces: ``torch._check_with`` decides a traced condition as a branch would."""
    original = torch._check_with

    def check_with(error_type, cond, message=None):
        if isinstance(cond, Proxy) and cond._tensor_meta() is not None:
            cond = torch.zeros(())          # (a tensor condition: torch's own TypeError, as eager's)
        elif isinstance(cond, Proxy):
            cond = bool(cond)               # (a guard, or the tracer's control-flow error at the user's line)
        return original(error_type, cond, message)

    torch._check_with = check_with
    try:
        yield
    finally:
        torch._check_with = original
