"""Gradients: what a compiled call's torch outputs say to autograd when fxla cannot differentiate the call.

A call that needs gradients is differentiated by fxla (:mod:`fxla.autograd`).  Where it cannot be — a loaded
artifact (forward only), a sharded program, an op without a gradient, an in-place change of an input that
requires grad — the outputs must still not look like constants: eager torch, called with grad mode on and an
input or parameter that requires grad, returns outputs that require grad, and a plain result would let a loss
that adds it to other terms train silently without its contribution.  :class:`GradientGuard` gives such a call's
floating-point outputs ``requires_grad`` and a ``grad_fn`` whose backward raises :class:`GradientError` — naming
the call site, what required grad and why fxla could not differentiate it — so everything eager allows up to the
backward still works (``y.requires_grad``, ``y.detach()``) and a backward fails loudly instead of returning
wrong gradients.

Calls under ``torch.no_grad()`` / ``torch.inference_mode()``, or where nothing requires grad, get the plain
outputs, and only those take fxla's fastest call path (as with eager torch, inference is fastest there).
"""
from __future__ import annotations

import sys
from typing import Any, List, Mapping, Optional, Sequence

import torch
from torch.autograd import forward_ad

from fxla.errors import FxlaError, format_location, format_message
from fxla.frontend.source import location_at, user_frame, user_frame_location

from .autocast import check_not_autocast

_SHOWN = 4          # sources of gradient named in the message (more: the first 3, and a count)


class GradientError(FxlaError):
    """A backward pass reached the outputs of a compiled (forward-only) program."""


def _has_storage(t: torch.Tensor) -> bool:
    """False for the batched tensors of torch's vmap (``torch.autograd.functional``'s ``vectorize=True``)."""
    try:
        t.data_ptr()
    except RuntimeError:
        return False
    return True


def refuse_vmap(cts: Sequence[Any], name: str) -> None:
    """A backward under ``vmap`` (``jacobian`` / ``hessian`` with ``vectorize=True``) hands batched cotangents, which
    no compiled program takes: a clear error instead of torch's raw batching or storage error."""
    if any(ct is not None and (torch._C._functorch.is_batchedtensor(ct) or not _has_storage(ct)) for ct in cts):
        raise GradientError(
            f"a backward through fxla-compiled {name} was run under torch.vmap (jacobian/hessian with "
            f"vectorize=True, or torch.autograd.grad with is_grads_batched=True)\nwhy: the compiled backward "
            f"takes one cotangent per output, not a batch of them\nfix: pass vectorize=False (the default) or "
            f"is_grads_batched=False and loop over the rows: one backward per row")


class SavedValuesError(GradientError, RuntimeError):
    """A backward through an fxla-compiled call found the values its forward saved already freed (a second
    backward without ``retain_graph=True``), or a parameter or input it reads changed in place since the forward.
    Eager raises a ``RuntimeError`` in both cases; this is one too."""


class _ForwardOnly(torch.autograd.Function):
    """Identity on the tensors ``outputs``, recorded as a function of ``anchor`` (a tensor that requires grad);
    its backward raises ``GradientError(message())``.  ``outputs`` is a list, not tensor arguments: autograd
    would return tensor arguments as views, which refuse in-place changes that eager's outputs allow; these
    tensors get the history themselves."""

    @staticmethod
    def forward(ctx, message, anchor, outputs):
        ctx.message = message
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *grads):
        raise GradientError(ctx.message())


def _call_site():
    """(file, line) of the innermost frame outside fxla and torch: where the user called the compiled module
    (the line alone, kept until a backward asks: a full location would read the column on every call)."""
    frame = user_frame(sys._getframe(2))
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else None


class GradientGuard:
    """The autograd behaviour of one compiled module's torch outputs (see the module docstring).

    ``name``: the module's name in messages; ``params``: the parameters and buffers its programs read (name ->
    tensor), checked for ``requires_grad`` at each call that runs with grad mode on.
    """

    def __init__(self, name: str, params: Mapping[str, Any], reason: Optional[str] = None):
        self.name = name
        #: why calls are not differentiated (set by fxla.autograd; ``None``: the program is forward-only)
        self.reason = reason
        self.params = [(n, p) for n, p in params.items() if isinstance(p, torch.Tensor)]

    def params_may_require_grad(self) -> bool:
        """Whether the program reads a floating-point parameter (one that requires grad now, or may later: a
        frozen layer unfrozen for fine-tuning); the C shortcut of a call plan then looks at grad mode."""
        return any(p.is_floating_point() for _, p in self.params)

    def __call__(self, inputs: Sequence[Any], outputs: List[Any]) -> List[Any]:
        """``outputs`` (a call's flat results), its floating-point tensors made to require grad through a
        backward that raises :class:`GradientError` when grad mode is on and one of ``inputs`` (the call's flat
        inputs) or a parameter requires grad; else ``outputs`` themselves."""
        if not torch.is_grad_enabled():
            return outputs
        sources = [(f"input {i}", t) for i, t in enumerate(inputs) if isinstance(t, torch.Tensor) and t.requires_grad]
        sources += [(n, p) for n, p in self.params if p.requires_grad]
        if not sources:
            return outputs
        chosen = [i for i, o in enumerate(outputs)
                  if isinstance(o, torch.Tensor) and (o.is_floating_point() or o.is_complex())]
        if not chosen:
            return outputs
        site, names, reason = _call_site(), [n for n, _ in sources], self.reason
        guarded = _ForwardOnly.apply(lambda: self._message(site, names, reason), sources[0][1],
                                     [outputs[i] for i in chosen])
        outputs = list(outputs)
        for i, value in zip(chosen, guarded):
            outputs[i] = value
        return outputs

    def _message(self, site, names: List[str], reason: Optional[str]) -> str:
        shown = ", ".join(names) if len(names) <= _SHOWN else ", ".join(names[:_SHOWN - 1]) + \
            f" and {len(names) - _SHOWN + 1} more"
        where = format_location(location_at(*site) if site else None)
        if reason is None:
            what, cause = "it is a forward-only program", "the program records no operations for autograd"
        else:
            what, cause = "fxla cannot differentiate this call", "fxla could not differentiate it: " + \
                reason.replace("\n", "\n    ")
        return (f"backward through the outputs of fxla-compiled {self.name}: {what}\n"
                f"{where}\n"
                f"why: that call ran with grad mode on and {shown} required grad, so its outputs require grad as "
                f"eager torch's would, but {cause}\n"
                f"fix: compute these gradients with the eager model (or torch.compile's default backend); if no "
                f"gradient through this call is wanted, call it under torch.no_grad() or "
                f"torch.inference_mode(), or pass x.detach() / freeze the model with model.requires_grad_(False)")


def guard_for(name: str, params: Optional[Mapping[str, Any]], output: str) -> Optional[GradientGuard]:
    """The guard of a module's calls, or ``None`` when its outputs are not torch tensors (``output="jax"``:
    jax arrays have no autograd)."""
    return GradientGuard(name, params or {}) if output == "torch" else None


_functorch_stack = torch._C._functorch.peek_interpreter_stack      # (torch 2.13: the transforms' stack, or None)


def check_reverse_mode(name: str, tensors: Sequence[Any]) -> None:
    """Raise :class:`GradientError` for a call made under forward-mode AD with a dual tensor among ``tensors``
    (``torch.autograd.forward_ad``) or inside a ``torch.func`` transform (``jvp``, ``jacfwd``, ``vmap``, ``grad``):
    fxla differentiates its programs in reverse mode only, and torch would get the outputs without a tangent (or
    batch) -- a silent wrong answer.  Cheap when neither is active (a module global and one C call)."""
    why = None
    if forward_ad._current_level >= 0 and any(
            isinstance(t, torch.Tensor) and forward_ad.unpack_dual(t).tangent is not None for t in tensors):
        why = ("why: it was given a dual tensor (torch.autograd.forward_ad): fxla differentiates its programs in "
               "reverse mode only, so the outputs would come back without a tangent")
    elif _functorch_stack() is not None:
        why = ("why: it runs inside a torch.func transform (jvp, jacfwd, vmap, grad ...), whose wrapped tensors a "
               "compiled program cannot take: it would get their plain values, without the transform's tangents or "
               "batch")
    if why is not None:
        raise GradientError(format_message(
            f"{name} cannot run under forward-mode automatic differentiation or a torch.func transform",
            user_frame_location(), why=why,
            fix="use reverse mode (loss.backward(), torch.autograd.grad, torch.autograd.functional.jacobian / "
                "hvp), or call the model eagerly inside the transform"))


def check_torch_call(name: str, tensors: Sequence[Any]) -> None:
    """What a compiled call given torch tensors cannot follow, refused before it runs: ``torch.autocast``
    (:func:`fxla.autocast.check_not_autocast`), then forward-mode AD and ``torch.func`` transforms
    (:func:`check_reverse_mode`)."""
    check_not_autocast(name)
    check_reverse_mode(name, tensors)
