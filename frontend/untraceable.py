"""Calls a trace records but no program can run: asking autograd for gradients inside the traced code, and
registering gradient hooks on traced tensors (``h.register_hook(...)``: there is no autograd graph to hook).

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
_HOOK_METHODS = frozenset({"register_hook", "register_post_accumulate_grad_hook"})


def check_call(kind: str, target, module_path: str = "") -> None:
    """Raise :class:`TraceError` when the traced code calls autograd (see the module docstring)."""
    if kind == "call_method" and target in _HOOK_METHODS:
        raise TraceError(
            f"the traced code registers a gradient hook on a traced tensor (Tensor.{target})",
            where=user_frame_location(module_path),
            why="a compiled program has no autograd graph to hook: the backward of a compiled call is fxla's own, "
                "taken as a whole after the call, so the hook would never run",
            fix="register the hook on the compiled call's output or input (out = fast(x); out.register_hook(...)), "
                "or write the gradient change into forward's arithmetic (a gradient reversal with weight a: "
                "h.detach() * (1 + a) - h * a has h's value and -a times its gradient)")
    if (kind == "call_function" and target in _GRADIENT_FUNCTIONS) or (kind == "call_method" and target == "backward"):
        raise TraceError(
            "the traced code asks autograd for gradients (torch.autograd.grad, .backward()) of traced values",
            where=user_frame_location(module_path),
            why="a compiled program computes values; gradients of it are fxla's own, taken after the call",
            fix="compute the gradient outside the compiled module: out = fast(x) with x.requires_grad_(), then "
                "torch.autograd.grad(out, x, create_graph=True) (a gradient penalty trains through it)")
