"""The grad mode as forward sees it while it is traced: the caller's mode it reads, and where it turns grad on.

**The caller's mode.** A trace is made for a caller's grad mode, :func:`caller_grad` (``True`` unless a trace is
made inside :func:`assuming` ``(False)``): the tracer runs forward with grad mode set to it (forward's own
``torch.no_grad()`` regions are recorded: :mod:`fxla.frontend.passes.grad_mode`).  The graph of a trace made for
an enabled caller serves a caller under ``torch.no_grad()`` too -- unless forward *reads* the mode
(``torch.is_grad_enabled()``: a branch, ``set_grad_enabled(torch.is_grad_enabled())``, Hugging Face's ``use_cache``
under gradient checkpointing), which such a graph answered with the trace's ``True``.  The tracer notes the first
read by the model's code as ``graph.meta[GRAD_MODE_READ]`` (``GradModeRead(enabled, where)``);
:mod:`fxla.modes` then makes the caller's grad mode part of the module's mode, so a call under ``no_grad`` runs a
trace made for it (:func:`assuming` ``(False)``), where every read answers as eager's.

**Forward turning grad on.** A region that turns grad mode *on* inside forward changes nothing for an enabled
caller, but eager gives its results a history when the caller runs under ``torch.no_grad()`` (an energy model's
forces, an inner adversarial step), and a compiled call under ``no_grad`` runs forward only.  The tracer notes the
first such switch as ``graph.meta[GRAD_ENABLED_AT]`` (the user's line); a compiled call under ``no_grad`` whose
inputs or parameters require grad is then refused (:func:`fxla.autograd.check_grad_enabled_regions`) rather than
run without the region's gradients.

Seen as such a switch, wherever it is (also inside forward's own ``no_grad`` region, where eager's region has a
history too): ``torch.enable_grad()`` (a ``with`` block or a decorator), ``torch.set_grad_enabled(True)`` with the
constant ``True`` written in the call (a ``with`` block or a plain call) and its decorator form with ``True``, and
``torch._C._set_grad_enabled(True)`` called directly (as dynamo's graphs switch a region on) where grad mode is on
(where it is off it is the end of a ``no_grad`` region: dynamo's graphs restore the mode so).  A value that follows
the caller's own mode (``set_grad_enabled(torch.is_grad_enabled())``, a mode saved before a ``no_grad`` block) is a
read of the mode: the trace a ``no_grad`` call runs has it off.  Not seen: ``set_grad_enabled(flag)`` with another
value computed at run time, a flag (refusing it would refuse calls whose outputs eager gives no history: a region
whose result is used only under ``no_grad`` again), and ``is_grad_enabled`` imported by name before the trace
(``from torch import is_grad_enabled``).
"""
from __future__ import annotations

import contextlib
import sys
import threading
import types
from typing import Iterator

import torch
import torch.autograd.grad_mode
import torch.utils._contextlib

from . import meta as M
from .global_reads import instructions
from .source import is_internal_file, user_frame_location

__all__ = ["recorded", "caller_grad", "assuming", "GRAD_MODE"]

#: the name the caller's grad mode is watched under where a trace read it (fxla.frontend.state_capture.
#: watched_attributes)
GRAD_MODE = "torch.is_grad_enabled()"

_CALLER = threading.local()


def caller_grad() -> bool:
    """The caller's grad mode the traces made now assume (``True`` outside :func:`assuming`)."""
    return getattr(_CALLER, "grad", True)


@contextlib.contextmanager
def assuming(grad: bool) -> Iterator[None]:
    """Traces made in this block (by this thread) are made for a caller whose grad mode is ``grad``."""
    before = caller_grad()
    _CALLER.grad = bool(grad)
    try:
        yield
    finally:
        _CALLER.grad = before


@contextlib.contextmanager
def recorded(tracer) -> Iterator[None]:
    """While ``tracer`` traces: note in its graph's meta the first read of the grad mode by forward's code and where
    forward first turns grad mode on (see the module docstring; ``__enter__`` is looked up when the ``with`` runs,
    ``torch.is_grad_enabled`` when it is called)."""
    original, set_mode, set_init = _ENABLE_GRAD.__enter__, torch._C._set_grad_enabled, _SET_GRAD.__init__
    is_enabled, caller = torch._C.is_grad_enabled, caller_grad()
    thread = threading.get_ident()

    def tracing() -> bool:
        return not tracer._paused and threading.get_ident() == thread

    def note(frame) -> None:
        if M.GRAD_ENABLED_AT not in tracer.graph.meta and tracing() and _switched_by_user(frame):
            tracer.graph.meta[M.GRAD_ENABLED_AT] = user_frame_location(tracer.module_path)

    def read() -> bool:
        if M.GRAD_MODE_READ not in tracer.graph.meta and tracing() and \
                not is_internal_file(sys._getframe(1).f_code.co_filename):
            tracer.graph.meta[M.GRAD_MODE_READ] = M.GradModeRead(caller, user_frame_location(tracer.module_path))
        return is_enabled()

    def enter(self):
        note(sys._getframe(1))
        return original(self)

    def set_grad_enabled(mode):         # (called directly: dynamo's graphs switch grad mode so, not by torch's
        frame = sys._getframe(1)        # context managers, whose calls come from their own file)
        if mode and is_enabled() and frame.f_code.co_filename not in _SWITCH_FILES:
            note(frame)
        return set_mode(mode)

    def init(self, mode):               # (set_grad_enabled(True) written so in forward, or its decorator's clone;
        frame = sys._getframe(1)        # not no_grad's exit restoring the mode before it)
        if mode is True and (frame.f_code is _CLONE or _passes_true(frame.f_code, frame.f_lasti)):
            note(frame)
        return set_init(self, mode)

    _ENABLE_GRAD.__enter__, torch._C._set_grad_enabled, _SET_GRAD.__init__ = enter, set_grad_enabled, init
    torch.is_grad_enabled = torch._C.is_grad_enabled = read
    try:
        yield
    finally:
        _ENABLE_GRAD.__enter__, torch._C._set_grad_enabled, _SET_GRAD.__init__ = original, set_mode, set_init
        torch.is_grad_enabled = torch._C.is_grad_enabled = is_enabled


_ENABLE_GRAD = torch.autograd.grad_mode.enable_grad
_SET_GRAD = torch.autograd.grad_mode.set_grad_enabled
_CLONE = _SET_GRAD.clone.__code__


def _passes_true(code: types.CodeType, last: int) -> bool:
    """Whether the call ``code`` is making at offset ``last`` gets the constant ``True`` as its last argument."""
    before = None
    for ins in instructions(code):
        if ins.offset >= last:
            break
        if ins.opname not in ("PRECALL", "KW_NAMES", "PUSH_NULL"):
            before = ins
    return before is not None and before.opname == "LOAD_CONST" and before.argval is True


#: the files of torch's grad-mode switches (the context managers, their decorator form) and contextlib
_SWITCH_FILES = frozenset(m.__file__ for m in (torch.autograd.grad_mode, torch.utils._contextlib, contextlib))


def _switched_by_user(frame) -> bool:
    """Whether the switch setting grad mode from ``frame`` was made by the model's code (not by torch's or fxla's
    own code running inside forward)."""
    while frame is not None and frame.f_code.co_filename in _SWITCH_FILES:
        decorated = getattr(frame.f_locals.get("func"), "__code__", None) \
            if frame.f_code.co_name == "decorate_context" else None
        if decorated is not None:       # (a decorator form: the function it decorates, forward itself maybe)
            return not is_internal_file(decorated.co_filename)
        frame = frame.f_back
    return frame is not None and not is_internal_file(frame.f_code.co_filename)
