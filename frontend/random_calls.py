"""torch's random functions are always recorded while tracing, never run at trace time.

The tracer runs a torch function whose arguments hold no traced value (``torch.rand(3, 4)``, ``torch.randint(0,
10, (5,))``, ``torch.randn(n, 3)`` with sizes a concrete-shape trace knows) for real, and its tensor becomes a
constant of the program: exact for ``torch.zeros``, wrong for a random function, whose eager result differs on
every call.  While a trace runs, :func:`recorded_random_calls` routes the random functions of the ``torch``
module (:data:`RANDOM_FUNCTIONS`) through the tracer: such a call is a ``call_function`` node even with constant
arguments (sizes given as varargs are packed into one tuple, ``torch.rand((3, 4))``), so each call of the compiled
program draws new numbers (fxla's lowering rules draw them with ``fxla.rng``; a random function without a rule is
refused with the other unsupported ops instead of being frozen).  Recording draws nothing from torch's generator.
Calls with a traced argument take the tracer's usual path.  The in-place random fills of a tensor
(``t.uniform_()``, ``t.normal_()``, ``t.bernoulli_(p)``) are refused on a concrete tensor the same way: a tensor
made by a factory call of the trace is traced from that call instead, and the fill recorded on it (computed out of
place by functionalization: ``uniform_(a, b)`` as ``a + (b - a) * rand_like``, ``normal_(m, s)`` as
``m + s * randn_like``, ``bernoulli_(p)`` as ``bernoulli``).
"""
from __future__ import annotations

import contextlib
import inspect
import threading
from typing import Any, Callable, Dict, Iterator, Tuple

import torch

from .node import map_aggregate
from .proxy import Proxy

__all__ = ["RANDOM_FILLS", "RANDOM_FUNCTIONS", "recorded_random_calls"]

#: names of the ``torch`` functions that draw random numbers
RANDOM_FUNCTIONS = ("rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "bernoulli", "normal",
                    "randperm", "multinomial", "poisson")
#: the in-place random fills of ``torch.Tensor``
RANDOM_FILLS = ("uniform_", "normal_", "bernoulli_", "exponential_", "random_", "geometric_", "log_normal_",
                "cauchy_")
#: those that take sizes as varargs (``torch.rand(3, 4)``)
_SIZE_VARARGS = ("rand", "randn")


def _has_proxy(args: Tuple, kwargs: Dict[str, Any]) -> bool:
    found = []
    map_aggregate((args, kwargs), lambda a: found.append(a) if isinstance(a, Proxy) else a)
    return bool(found)


def _recorder(current: Callable, tracer) -> Callable:
    """``current`` (the ``torch`` attribute now: the function, or another patch's wrapper of it) recording its
    calls without traced arguments as nodes of the torch function itself."""
    target = inspect.unwrap(current)
    sizes = target.__name__ in _SIZE_VARARGS

    owner = threading.get_ident()

    def record(*args, **kwargs):
        # running module code for real, a traced call, or another thread's call while this one traces
        if tracer._paused or _has_proxy(args, kwargs) or threading.get_ident() != owner:
            return current(*args, **kwargs)
        if sizes and args and all(isinstance(a, int) for a in args):
            args = (tuple(args),)
        with torch.random.fork_rng(devices=[]):           # (a concrete-shape trace runs it for its meta value)
            return tracer.create_proxy("call_function", target, args, kwargs)
    record.__wrapped__ = target
    return record


def _refiller(current: Callable, tracer) -> Callable:
    """``torch.Tensor.<name>`` (an in-place random fill) refusing a concrete tensor while ``tracer`` traces:
    filled at trace time, its numbers would be the same on every call.  A tensor a factory call of this trace made
    (``torch.empty(3, 4).uniform_()``) is then traced from that call (:mod:`fxla.frontend.factories`), and the
    fill recorded on it."""
    owner = threading.get_ident()

    def refill(self, *args, **kwargs):
        if not tracer._paused and not isinstance(self, Proxy) and threading.get_ident() == owner:
            from .proxy import _untraced_mutation
            raise tracer._note_error(_untraced_mutation(tracer, current.__name__, self, random=True))
        return current(self, *args, **kwargs)
    refill.__wrapped__ = current
    return refill


@contextlib.contextmanager
def recorded_random_calls(tracer) -> Iterator[None]:
    """The ``torch`` module's random functions recorded by ``tracer`` (see the module docstring) and the
    in-place random fills of tensors refused on concrete tensors (:data:`RANDOM_FILLS`), restored afterwards."""
    saved = {name: getattr(torch, name) for name in RANDOM_FUNCTIONS}
    fills = {name: getattr(torch.Tensor, name) for name in RANDOM_FILLS}
    for name, current in saved.items():
        setattr(torch, name, _recorder(current, tracer))
    for name, current in fills.items():
        setattr(torch.Tensor, name, _refiller(current, tracer))
    try:
        yield
    finally:
        for name, current in saved.items():
            setattr(torch, name, current)
        for name, current in fills.items():
            setattr(torch.Tensor, name, current)
