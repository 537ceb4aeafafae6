"""Forward's own ``torch.enable_grad()`` at the caller's level, noted while tracing.

A trace runs with grad mode on, whatever the caller's mode (forward's own ``torch.no_grad()`` regions are
recorded: :mod:`fxla.frontend.passes.grad_mode`).  A region that turns grad mode *on* inside forward changes
nothing then, but eager gives its results a history even when the caller runs under ``torch.no_grad()``
(an energy model's forces, an inner adversarial step), and a compiled call under ``no_grad`` runs forward
only.  The tracer notes the first such switch as ``graph.meta[GRAD_ENABLED_AT]`` (the user's line); a compiled
call under ``no_grad`` whose inputs or parameters require grad is then refused
(:func:`fxla.autograd.check_grad_enabled_regions`) rather than run without the region's gradients.

Seen: ``torch.enable_grad()`` (a ``with`` block or a decorator), ``torch.set_grad_enabled(True)`` with the constant
``True`` written in the call (a ``with`` block or a plain call; the same switch), and
``torch._C._set_grad_enabled(True)`` called directly (as dynamo's graphs switch a region on), where grad mode is
on, i.e. where the caller's mode rules (inside forward's own ``no_grad`` region it is a region of its own, which
the trace already records right). Not seen: ``torch.set_grad_enabled(mode)`` with a value computed at run time,
which mostly follows a flag or the caller's own mode (``set_grad_enabled(torch.is_grad_enabled())``; the trace
cannot tell its value's origin, and refusing every such call under ``no_grad`` would refuse plain inference), and
its decorator form.
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

__all__ = ["recorded"]


@contextlib.contextmanager
def recorded(tracer) -> Iterator[None]:
    """While ``tracer`` traces: note in its graph's meta where forward first enters ``torch.enable_grad()`` at the
    caller's level (see the module docstring; its ``__enter__`` is looked up when the ``with`` runs)."""
    original, set_mode, set_init = _ENABLE_GRAD.__enter__, torch._C._set_grad_enabled, _SET_GRAD.__init__
    thread = threading.get_ident()

    def note(frame) -> None:
        if torch.is_grad_enabled() and not tracer._paused and threading.get_ident() == thread \
                and M.GRAD_ENABLED_AT not in tracer.graph.meta and _switched_by_user(frame):
            tracer.graph.meta[M.GRAD_ENABLED_AT] = user_frame_location(tracer.module_path)

    def enter(self):
        note(sys._getframe(1))
        return original(self)

    def set_grad_enabled(mode):         # (called directly: dynamo's graphs switch grad mode so, not by torch's
        frame = sys._getframe(1)        # context managers, whose calls come from their own file)
        if mode and frame.f_code.co_filename not in _SWITCH_FILES:
            note(frame)
        return set_mode(mode)

    def init(self, mode):               # (torch.set_grad_enabled(True): the constant, written in the call)
        frame = sys._getframe(1)
        if mode is True and _passes_true(frame.f_code, frame.f_lasti):
            note(frame)
        return set_init(self, mode)

    _ENABLE_GRAD.__enter__, torch._C._set_grad_enabled, _SET_GRAD.__init__ = enter, set_grad_enabled, init
    try:
        yield
    finally:
        _ENABLE_GRAD.__enter__, torch._C._set_grad_enabled, _SET_GRAD.__init__ = original, set_mode, set_init


_ENABLE_GRAD = torch.autograd.grad_mode.enable_grad
_SET_GRAD = torch.autograd.grad_mode.set_grad_enabled


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
        frame = frame.f_back
    return frame is not None and not is_internal_file(frame.f_code.co_filename)
