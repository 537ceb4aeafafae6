"""Tensors the traced code makes from constants (``torch.zeros(2, 3)``, ``torch.arange(8)``), and changes in place
with a traced value later.

While tracing, a call of a torch factory function with no traced argument runs at trace time: its tensor is a
constant of the program, and every later use of it that involves no traced value is evaluated at trace time too
(``buf[:, :4]``, ``buf.sum()``).  That is exact for a tensor that never changes.  One that the code then changes
in place with a traced value -- ``buf[0] = x``, ``buf.index_copy_(2, pos, k)`` (a Hugging Face static KV cache
made on its first call), ``buf.copy_(x)`` -- must be traced from its creation on, or its later uses would read
its trace-time contents.  The tracer does not know that when the factory runs, so:

* each factory call of a trace (:data:`FACTORIES`, the ones with a lowering rule) is numbered in call order, and
  the tensor it made is remembered (:class:`FactoryCalls`);
* an in-place change of a concrete tensor with a traced value raises :class:`UntracedMutation`, naming the call
  that made the tensor (or the tensor it is a view of) when a factory did;
* :meth:`fxla.frontend.Tracer.trace` then traces again, with that call recorded as a graph node (a traced value,
  so the change is recorded as well, and :func:`fxla.frontend.passes.functionalize` rewrites it out of place).

The second trace checks that the numbered call is the same function (traced Python that makes its tensors in
another order on a second run is refused with a :class:`TraceError`).  A tensor made otherwise (``torch.zeros(3)
+ 1``, ``torch.tensor([...])``) is still refused with the error's fix.  (The functions also take sizes as varargs
with a traced size among them, ``torch.zeros(x.shape[0], 4)``, which torch's argument parser would reject: the
call is recorded with the sizes packed into one tuple; so are the tensor methods :data:`SIZE_VARARG_METHODS` of a
concrete tensor, ``torch.tensor(idx).expand(x.shape[0], 3)``.)
"""
from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

import torch

from .errors import TraceError
from .node import map_aggregate
from .proxy import Proxy, UntracedMutation
from .source import user_frame_location

__all__ = ["FACTORIES", "FactoryCalls", "UntracedMutation", "patched_factories"]

#: torch factory functions fxla lowers (lowering/rules/creation.py): their calls can be recorded as nodes
FACTORIES = (torch.zeros, torch.ones, torch.empty, torch.full, torch.arange, torch.eye, torch.linspace,
             torch.logspace, torch.zeros_like, torch.ones_like, torch.empty_like, torch.full_like)

#: torch functions taking sizes as varargs (``torch.zeros(n, 4)``).  torch's argument parser rejects a Proxy among
#: several size ints with a plain TypeError before ``__torch_function__`` is consulted, so while tracing these
#: names of the ``torch`` module record the call with the sizes packed into one tuple (which it accepts).
SIZE_VARARGS = (torch.zeros, torch.ones, torch.empty, torch.rand, torch.randn)
#: the ``torch.Tensor`` methods whose parser does the same (``t.expand(x.shape[0], 3)`` of a concrete ``t``): while
#: tracing, a call of one with a traced size is recorded as the method, several sizes packed into one tuple
SIZE_VARARG_METHODS = ("expand", "new_zeros", "new_ones", "new_empty")


class FactoryCalls:
    """The factory calls of one trace, numbered in call order.  ``promoted`` maps the numbers of the calls to record
    as graph nodes to their function (kept across the traces of one :meth:`~fxla.frontend.Tracer.trace`)."""

    def __init__(self, promoted: Dict[int, Callable]) -> None:
        self.promoted = promoted
        self.count = 0
        self._made: Dict[int, Tuple[torch.Tensor, int, Callable]] = {}   # id(tensor) -> (tensor, number, function)

    def number(self) -> int:
        """The next call's number.  Every factory call is numbered, also one with a traced argument (a node
        anyway), so that tracing a promoted tensor -- which makes calls that take it traced -- numbers the calls
        after it as before."""
        number, self.count = self.count, self.count + 1
        return number

    def call(self, tracer, number: int, fn: Callable, args: Tuple, kwargs: Dict[str, Any]) -> Any:
        """Run (or, when promoted, record) call ``number``, ``fn(*args, **kwargs)`` with no traced argument."""
        expected = self.promoted.get(number)
        if expected is not None:
            if expected is not fn:
                raise TraceError(
                    f"factory call number {number} of the trace is torch.{fn.__name__}, but on the first trace it "
                    f"was torch.{expected.__name__}", where=user_frame_location(tracer.module_path),
                    why="a tensor made from constants and changed in place with a traced value is traced from its "
                        "creation, found by tracing twice: the traced Python made its tensors in another order",
                    fix="make the tensor from a traced value (x.new_zeros(3, 4), torch.zeros_like(x)), or make the "
                        "traced code deterministic")
            return tracer.create_proxy("call_function", fn, args, kwargs)
        out = fn(*args, **kwargs)
        if isinstance(out, torch.Tensor):
            self._made[id(out)] = (out, number, fn)
        return out

    def origin(self, t: torch.Tensor) -> Tuple[Optional[int], Optional[Callable]]:
        """The number and function of the factory call of this trace that made ``t`` (or the tensor ``t`` is a view
        of), or ``(None, None)``."""
        for candidate in (t, t._base):
            entry = self._made.get(id(candidate)) if candidate is not None else None
            if entry is not None and entry[0] is candidate:
                return entry[1], entry[2]
        return None, None


def _has_proxy(args: Tuple, kwargs: Dict[str, Any]) -> bool:
    found = []
    map_aggregate((args, kwargs), lambda a: found.append(a) if isinstance(a, Proxy) else a)
    return bool(found)


def _recorder(fn: Callable, tracer, calls: FactoryCalls, thread: int) -> Callable:
    counted = fn in FACTORIES
    sizes = fn in SIZE_VARARGS

    @functools.wraps(fn)
    def record(*args, **kwargs):
        # (the tracer runs module code for real -- a meta value --, or another thread calls torch: its own call)
        if tracer._paused or threading.get_ident() != thread:
            return fn(*args, **kwargs)
        number = calls.number() if counted else None
        if _has_proxy(args, kwargs):
            if sizes and len(args) >= 2 and any(isinstance(s, Proxy) for s in args):
                return tracer.create_proxy("call_function", fn, (tuple(args),), kwargs)
            return fn(*args, **kwargs)      # (through Proxy.__torch_function__: a node)
        return calls.call(tracer, number, fn, args, kwargs) if counted else fn(*args, **kwargs)
    return record


def _packing(method: Callable, tracer, thread: int) -> Callable:
    """``method`` of a concrete tensor recording its call with a traced size (see :data:`SIZE_VARARG_METHODS`) as
    ``__torch_function__`` records a tensor method (torch would hand it this wrapper as the method)."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        if tracer._paused or threading.get_ident() != thread or not _has_proxy(args, kwargs):
            return method(self, *args, **kwargs)
        return tracer.create_proxy("call_method", method.__name__, (self, *_packed(args)), kwargs)
    return call


def _packed(args: Tuple) -> Tuple:
    return (tuple(args),) if len(args) >= 2 else args


@contextlib.contextmanager
def patched_factories(tracer, calls: FactoryCalls) -> Iterator[None]:
    """The ``torch`` module's factory functions routed through ``calls`` (and the size-vararg ones, and
    :data:`SIZE_VARARG_METHODS`, packing traced sizes), restored afterwards."""
    functions = {fn.__name__: fn for fn in (*FACTORIES, *SIZE_VARARGS)}
    thread = threading.get_ident()
    for name, fn in functions.items():
        setattr(torch, name, _recorder(fn, tracer, calls, thread))
    methods = {name: torch.Tensor.__dict__.get(name) for name in SIZE_VARARG_METHODS}
    torch.overrides.is_tensor_method_or_property(torch.Tensor.expand)  # (torch's cache of them: made before)
    for name in methods:
        setattr(torch.Tensor, name, _packing(getattr(torch.Tensor, name), tracer, thread))
    try:
        yield
    finally:
        for name, fn in functions.items():
            setattr(torch, name, fn)
        for name, method in methods.items():
            if method is None:
                delattr(torch.Tensor, name)
            else:
                setattr(torch.Tensor, name, method)
