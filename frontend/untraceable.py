"""Calls a trace records but no program can run: asking autograd for gradients inside the traced code.

``torch.autograd.grad(y, x)`` (a gradient penalty computed in ``forward``), ``torch.autograd.backward`` and
``y.backward()`` on traced values would be recorded as graph nodes, and fail later with a raw error from running
them.  :func:`check_call` refuses them while tracing, at the user's line; fxla's own gradients of a compiled call
(``create_graph=True`` included) do what they were for (docs/training.md, "Gradients of gradients").
"""
from __future__ import annotations

import torch

from .errors import TraceError
from .source import user_frame_location

__all__ = ["check_call"]

_GRADIENT_FUNCTIONS = frozenset({torch.autograd.grad, torch.autograd.backward, torch.Tensor.backward})


def check_call(kind: str, target, module_path: str = "") -> None:
    """Raise :class:`TraceError` when the traced code calls autograd (see the module docstring)."""
    if (kind == "call_function" and target in _GRADIENT_FUNCTIONS) or (kind == "call_method" and target == "backward"):
        raise TraceError(
            "the traced code asks autograd for gradients (torch.autograd.grad, .backward()) of traced values",
            where=user_frame_location(module_path),
            why="a compiled program computes values; gradients of it are fxla's own, taken after the call",
            fix="compute the gradient outside the compiled module: out = fast(x) with x.requires_grad_(), then "
                "torch.autograd.grad(out, x, create_graph=True) (a gradient penalty trains through it)")
