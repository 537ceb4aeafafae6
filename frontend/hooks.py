"""Forward hooks while tracing: a torch layer fxla records whole (one ``call_module`` node) with its hooks around it.

Eager's ``module(x)`` runs the forward pre-hooks (global ones first, then the module's), ``forward``, then the
forward hooks, each of which may replace the arguments or the result.  A layer fxla lowers whole would skip them
(its node runs ``forward`` alone), so :func:`call_with_hooks` runs them on the traced values around the node: what
they compute is traced like the rest of forward (a hook that returns ``out * 2`` doubles the node's result).  A
pre-hook that assigns the layer a traced tensor (``nn.utils.spectral_norm`` and the old ``nn.utils.weight_norm``
compute the weight ``forward`` reads) makes the layer traced through instead, so ``forward`` reads that tensor.

A hook runs once, while tracing, not at every call: side effects of its own (appending the output to a Python list
to collect features) happen then, with traced values.  ``torch.compile(model, backend="fxla")`` runs them per call
(TorchDynamo handles hooks itself).
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Dict, Tuple

import torch
from torch.nn.modules import module as _module

from .proxy import Proxy

__all__ = ["hooked", "call_with_hooks", "call_layer", "calling_hooks", "inline", "traced_through"]


def hooked(m: torch.nn.Module) -> bool:
    """Whether calling ``m`` runs forward hooks or pre-hooks (its own or global ones)."""
    return bool(m._forward_pre_hooks or m._forward_hooks or _module._global_forward_pre_hooks
                or _module._global_forward_hooks)


def call_with_hooks(m: torch.nn.Module, args: Tuple, kwargs: Dict, leaf: Callable[..., Any],
                    through: Callable[..., Any]) -> Any:
    """``m(*args, **kwargs)`` as eager runs it, hooks included, with ``leaf(*args, **kwargs)`` (the ``call_module``
    node) as its forward, or ``through(*args, **kwargs)`` (its forward traced inline) when a pre-hook assigned it a
    traced tensor (see the module docstring)."""
    for hook_id, hook in (*_module._global_forward_pre_hooks.items(), *m._forward_pre_hooks.items()):
        if hook_id in m._forward_pre_hooks_with_kwargs:
            result = hook(m, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), but "
                                       f"got {result}.")
                args, kwargs = result
        else:
            result = hook(m, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
    assigned = any(isinstance(v, Proxy) for v in vars(m).values())
    out = (through if assigned else leaf)(*args, **kwargs)
    for hook_id, hook in (*_module._global_forward_hooks.items(), *m._forward_hooks.items()):
        if hook_id in m._forward_hooks_with_kwargs or hook_id in _module._global_forward_hooks_with_kwargs:
            result = hook(m, args, kwargs, out)
        else:
            result = hook(m, args, out)
        if result is not None:
            out = result
    return out


def call_layer(tracer, m: torch.nn.Module, qualname: str, args: Tuple, kwargs: Dict) -> Any:
    """The tracer's call of ``m``, a layer it records whole at ``qualname``: its ``call_module`` node, with its hooks
    around it (:func:`call_with_hooks`).  A graph fxla traced holds its layers' hooks already; a layer with hooks
    traced alone (the root itself) is traced through."""
    from .graph_module import GraphModule
    leaf = lambda *a, **k: tracer.create_proxy("call_module", qualname, a, k)     # noqa: E731
    if not hooked(m) or isinstance(tracer.root, GraphModule):
        return leaf(*args, **kwargs)
    through = lambda *a, **k: inline(tracer, m, qualname, a, k)     # noqa: E731
    return call_with_hooks(m, args, kwargs, through if m is tracer.root else leaf, through)


def calling_hooks(root: torch.nn.Module, forward: Callable) -> Callable:
    """``forward``, or for a root with forward hooks a function of its signature that calls the module as eager's
    ``model(x)`` does: hooks, then forward."""
    if not hooked(root):
        return forward

    signature = inspect.signature(forward)

    @functools.wraps(forward)
    def call(self, *args, **kwargs):     # (the tracer passes inputs by name: the hooks see them as eager's do)
        bound = signature.bind(self, *args, **kwargs)
        return torch.nn.Module.__call__(self, *bound.args[1:], **bound.kwargs)
    return call


def traced_through(m: torch.nn.Module) -> bool:
    """Whether a leaf layer the traced module does not hold can be traced through (its forward run inline): one
    with no parameters or buffers (``loss_fct = nn.CrossEntropyLoss()`` made in ``forward``, as Hugging Face
    models do), or a loss whose parameters are frozen (``nn.CrossEntropyLoss(weight=w)`` in a ``loss_fn``
    closure: its class-weight buffer is read as the tensors of a closure are)."""
    if next(iter(m.parameters()), None) is None and next(iter(m.buffers()), None) is None:
        return True
    return isinstance(m, torch.nn.modules.loss._Loss) and not any(p.requires_grad for p in m.parameters())


def inline(tracer, m: torch.nn.Module, qualname, args: Tuple, kwargs: Dict, forward=None) -> Any:
    """The tracer runs ``forward`` (default: ``m``'s own, without hooks) inline, under ``m``'s name."""
    tracer._module_stack.append(qualname if qualname is not None else f"<{type(m).__name__}>")
    try:
        return forward(*args, **kwargs) if forward is not None else type(m).forward(m, *args, **kwargs)
    finally:
        tracer._module_stack.pop()
