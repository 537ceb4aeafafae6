"""Custom ``torch.autograd.Function``\\ s while tracing: their ``forward`` is traced, their ``backward`` is not.

``MyFunction.apply(x)`` on a traced tensor cannot run for real (torch's ``Function.apply`` hands the Proxy to C
code).  While a trace runs, :func:`traced_custom_functions` makes ``apply`` with a traced argument run the
function's ``forward`` on the Proxies (with a context object that records nothing: ``save_for_backward`` and
the marks are no-ops), so the forward's ops become nodes like any other code.  Each tensor it returns then passes
through :func:`custom_function_output`, a node whose lowering is ``fxla.no_gradient``: the function's own
``backward`` is Python code fxla never sees, and it need not be the derivative of the forward (a straight-through
estimator is not), so a gradient asked through it is refused with the function's name instead of being computed
from the forward's ops.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

import torch

from .node import map_aggregate
from .proxy import Proxy

__all__ = ["custom_function_output", "traced_custom_functions"]


def custom_function_output(x: torch.Tensor, name: str) -> torch.Tensor:
    """``x`` (a tensor a custom autograd Function returned) as it is; a gradient through it is refused."""
    return x


class _NoContext:
    """What a custom Function's ``forward`` gets as ``ctx`` while traced: saving and marking are no-ops (the
    backward is never run), attributes are kept."""

    needs_input_grad = ()
    materialize_grads = True

    def save_for_backward(self, *tensors: Any) -> None:
        pass

    def save_for_forward(self, *tensors: Any) -> None:
        pass

    def mark_dirty(self, *tensors: Any) -> None:
        pass

    def mark_non_differentiable(self, *tensors: Any) -> None:
        pass

    def set_materialize_grads(self, value: bool) -> None:
        pass


def _has_proxy(value: Any) -> bool:
    found = []
    map_aggregate(value, lambda a: found.append(a) if isinstance(a, Proxy) else a)
    return bool(found)


def _new_style(cls) -> bool:
    """``forward(*args)`` plus ``setup_context`` (torch >= 2.0), instead of ``forward(ctx, *args)``."""
    return getattr(cls, "setup_context", None) is not getattr(torch.autograd.function._SingleLevelFunction,
                                                             "setup_context", None)


@contextlib.contextmanager
def traced_custom_functions(tracer) -> Iterator[None]:
    """``torch.autograd.Function.apply`` tracing ``forward`` for calls with a traced argument (see the module
    docstring), restored afterwards."""
    function = torch.autograd.Function
    original = function.__dict__["apply"]
    owner = threading.get_ident()

    def apply(cls, *args, **kwargs):
        if tracer._paused or threading.get_ident() != owner or not _has_proxy((args, kwargs)):
            return original.__func__(cls, *args, **kwargs)
        ctx = _NoContext()
        if _new_style(cls):
            out = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, out)
        else:
            out = cls.forward(ctx, *args, **kwargs)
        name = f"{cls.__module__}.{cls.__qualname__}"
        return map_aggregate(out, lambda o: tracer.create_proxy("call_function", custom_function_output, (o, name),
                                                                {}) if isinstance(o, Proxy) else o)
    function.apply = classmethod(apply)
    try:
        yield
    finally:
        function.apply = original
