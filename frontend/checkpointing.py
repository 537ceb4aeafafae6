"""Activation checkpointing while tracing: a checkpointed function is traced as the plain call it is.

``torch.utils.checkpoint.checkpoint(fn, *args)`` (Hugging Face's ``model.gradient_checkpointing_enable()`` binds
it with ``functools.partial``) computes ``fn(*args)``; it only changes what eager's autograd saves (the
activations inside ``fn`` are recomputed in backward instead).  fxla differentiates the traced program itself, so
its backward never sees eager's saved tensors, and ``fxla.compile(model, remat=True)`` is its own way of trading
compute for memory.  While a trace runs, :func:`traced` makes the three ways into a checkpoint call the
function on the traced values, so its ops become nodes like any other code:

* ``use_reentrant=False``: ``checkpoint`` looks up the module-level ``_checkpoint_without_reentrant_generator``
  when it runs; the replacement does nothing around the call (no saved-tensor hooks, no RNG stash);
* ``use_reentrant=True`` (and ``checkpoint_sequential``): ``CheckpointFunction.apply`` calls the function;
* ``torch.compile(model, backend="fxla")``: dynamo's graph holds ``torch.ops.higher_order.tag_activation_checkpoint
  (body, *args)``, whose call is the body's.

Random ops inside the function draw once, so forward and backward use the same dropout mask, as eager's
recomputation does with ``preserve_rng_state=True`` (the default).  What eager computes differently is refused
(:class:`~fxla.frontend.errors.TraceError`): ``preserve_rng_state=False`` around a random op (eager's backward
draws a second mask, and its gradients are not those of its forward), and a ``context_fn`` other than torch's
default or a selective-checkpoint policy (it runs the function under contexts fxla does not trace).

Hugging Face's ``gradient_checkpointing_enable()`` also hooks the input embeddings with
``output.requires_grad_(True)`` (so that eager's reentrant checkpoints see an input that requires grad).  On a
value the trace computed, that changes no gradient fxla computes (it differentiates with respect to the inputs
and parameters that require grad, through every op), so it is traced as the value itself; on an input or a
parameter (whose flag eager changes for the caller) it is recorded as before.
"""
from __future__ import annotations

import contextlib
import functools
import threading
from typing import Callable, Iterator, Optional

import torch
import torch.utils.checkpoint as _ckpt

from .errors import TraceError
from .node import Node
from .proxy import Proxy
from .source import user_frame_location
from .value_guards import draws

__all__ = ["traced"]

#: the random functions whose ``training=False`` / ``p=0`` call draws nothing (``F.dropout(x, p, self.training)``)
_DROPOUTS = ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")


def _turns_grad_on(kind: str, target, args, kwargs) -> bool:
    """``value.requires_grad_()`` / ``(True)`` of a value the trace computed (see the module docstring)."""
    if kind != "call_method" or target != "requires_grad_" or not args or not isinstance(args[0], Proxy) \
            or args[0].node.op not in ("call_function", "call_method", "call_module"):
        return False
    return (len(args) == 1 and kwargs in ({}, {"requires_grad": True})) or (args[1:] == (True,) and not kwargs)


def _tag_activation_checkpoint() -> Optional[type]:
    try:
        from torch._higher_order_ops.wrap import TagActivationCheckpoint
    except ImportError:           # (a torch without the higher-order op)
        return None
    return TagActivationCheckpoint


def _draws(tracer, node: Node) -> bool:
    """Whether ``node`` draws random numbers (a dropout that is off draws none)."""
    if not draws(tracer.root, node):
        return False
    name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
    if node.op == "call_function" and name in _DROPOUTS:
        p = node.kwargs.get("p", node.args[1] if len(node.args) > 1 else 0.5)
        training = node.kwargs.get("training", node.args[2] if len(node.args) > 2 else True)
        return training is not False and p != 0
    return True


class _Region:
    """The nodes one checkpointed call adds to the trace, and the checks on its arguments."""

    def __init__(self, tracer, preserve_rng_state: bool, context_fn: Callable = _ckpt.noop_context_fn):
        self.tracer = tracer
        self.preserve = preserve_rng_state
        self.start = tracer.graph._root._prev
        if context_fn is not _ckpt.noop_context_fn and not (
                isinstance(context_fn, functools.partial)
                and context_fn.func is _ckpt.create_selective_checkpoint_contexts):
            raise TraceError(
                f"torch.utils.checkpoint.checkpoint(..., context_fn={getattr(context_fn, '__name__', context_fn)!r})"
                " is not supported while fxla traces", where=user_frame_location(tracer.module_path),
                why="fxla traces the checkpointed function as a plain call (its own backward saves or recomputes "
                    "what it needs); a custom context_fn runs the function under context managers whose effect "
                    "fxla cannot trace",
                fix="drop context_fn (a selective-checkpoint policy from "
                    "torch.utils.checkpoint.create_selective_checkpoint_contexts is accepted and ignored), or use "
                    "fxla.compile(model, remat=True) to save memory")

    def close(self) -> None:
        """Refuse a random op inside a checkpoint that does not preserve the RNG state."""
        if self.preserve:
            return
        node = self.start._next
        while node is not self.tracer.graph._root:
            if _draws(self.tracer, node):
                raise TraceError(
                    f"a random op ({node.name}) inside torch.utils.checkpoint.checkpoint(..., "
                    "preserve_rng_state=False)", where=user_frame_location(self.tracer.module_path),
                    why="eager recomputes the checkpointed function in backward with new random numbers (another "
                        "dropout mask), so its gradients are not those of its forward; fxla's program draws once "
                        "and cannot reproduce that",
                    fix="pass preserve_rng_state=True (the default: the recomputation reuses the forward's mask, "
                        "which is what fxla computes), or move the random op out of the checkpointed function")
            node = node._next


@contextlib.contextmanager
def traced(tracer) -> Iterator[None]:
    """Checkpointed calls traced as plain calls (see the module docstring), torch's code restored afterwards."""
    owner = threading.get_ident()
    generator = _ckpt._checkpoint_without_reentrant_generator
    function_class = _ckpt.CheckpointFunction
    own_apply = function_class.__dict__.get("apply")
    hop = _tag_activation_checkpoint()
    hop_call = hop.__dict__.get("__call__") if hop is not None else None

    def tracing() -> bool:
        return not tracer._paused and threading.get_ident() == owner

    own_create_proxy = tracer.__dict__.get("create_proxy")
    create_proxy = tracer.create_proxy

    def create_proxy_unless_grad_on(kind, target, args, kwargs, *rest, **options):
        if tracing() and _turns_grad_on(kind, target, args, kwargs):
            return args[0]
        return create_proxy(kind, target, args, kwargs, *rest, **options)

    def without_reentrant(fn, preserve_rng_state=True, context_fn=_ckpt.noop_context_fn,
                          determinism_check=_ckpt._DEFAULT_DETERMINISM_MODE, debug=False, early_stop=True,
                          *args, **kwargs):
        if not tracing():
            return (yield from generator(fn, preserve_rng_state, context_fn, determinism_check, debug, early_stop,
                                         *args, **kwargs))
        region = _Region(tracer, preserve_rng_state, context_fn)
        yield                             # (checkpoint calls the function here)
        region.close()

    def apply(cls, function, preserve_rng_state, *args):
        if not tracing():
            return torch.autograd.Function.__dict__["apply"].__func__(cls, function, preserve_rng_state, *args)
        region = _Region(tracer, preserve_rng_state)
        out = function(*args)
        region.close()
        return out

    def tag_activation_checkpoint(self, body, *args, **kwargs):
        if not tracing():
            return hop_call(self, body, *args, **kwargs)
        context_fn = getattr(body, "meta", {}).get("_checkpoint_context_fn", _ckpt.noop_context_fn)
        region = _Region(tracer, kwargs.get("preserve_rng_state", True), context_fn)
        out = body(*args)
        region.close()
        return out

    _ckpt._checkpoint_without_reentrant_generator = without_reentrant
    function_class.apply = classmethod(apply)
    tracer.create_proxy = create_proxy_unless_grad_on
    if hop_call is not None:
        hop.__call__ = tag_activation_checkpoint
    try:
        yield
    finally:
        _ckpt._checkpoint_without_reentrant_generator = generator
        if own_apply is not None:
            function_class.apply = own_apply
        else:
            del function_class.apply
        if own_create_proxy is not None:
            tracer.create_proxy = own_create_proxy
        else:
            del tracer.create_proxy
        if hop_call is not None:
            hop.__call__ = hop_call
