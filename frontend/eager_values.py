"""Tensors the traced code computed eagerly from tensors that require grad, refused as constants.

A trace records the operations on :class:`~fxla.frontend.Proxy` values.  Code that reaches the root's
parameters as real tensors -- ``self.parameters()``, ``named_parameters()``, ``buffers()`` yield the tensors
themselves, not the ``get_attr`` proxies that attribute reads give -- runs its torch ops eagerly while tracing,
and a result that meets a traced value would be frozen into the program as a ``_tensor_constant``: its value the
one at trace time (stale after an optimizer step or an in-place change) and no gradient to the parameters.  The
usual case is an L2 penalty, ``sum(p.pow(2).sum() for p in model.parameters())``, in a loss function or forward.
Such a tensor has autograd history (the tracer traces with grad mode on), so :func:`check_constant` refuses any
tensor with a ``grad_fn`` that would become a constant, with a :class:`~fxla.frontend.TraceError` at the user's
line.  A frozen parameter (``requires_grad=False``) read so gives no history, and is a constant of the trace.
"""
from __future__ import annotations

import torch

from .errors import TraceError
from .source import user_frame_location

__all__ = ["check_constant"]


def check_constant(t: torch.Tensor, module_path: str = "") -> None:
    """Raise :class:`TraceError` when ``t``, about to become a constant of the trace, was computed with autograd
    history (from parameters or other tensors that require grad) while tracing."""
    if t.grad_fn is None:
        return
    raise TraceError(
        "a tensor computed eagerly from tensors that require grad (the model's parameters read through "
        "self.parameters() / named_parameters(), say) meets a traced value",
        where=user_frame_location(module_path),
        why="parameters reached that way are the real tensors, not traced reads, so their ops ran while tracing "
            "and the result would be a constant of the program: its value frozen at trace time and no gradient to "
            "the parameters",
        fix="read each parameter through its module attribute, which is traced: "
            "[m.get_parameter(name) for name, _ in m.named_parameters()] (an L2 penalty: sum(p.pow(2).sum() for p "
            "in those)), or use the optimizer's weight_decay")
