"""Seeing ``model.train()`` / ``model.eval()`` after compiling.

What a compiled program computes depends on the training flags of the model's modules: dropout draws masks or
passes its input through, batch norm normalises with the batch's statistics (and updates the running ones) or
with the running statistics, and a forward may branch on ``self.training`` itself.  The tracer reads those flags
and the lowering rules read the leaf modules' flags, so a program is valid for one *mode*: the tuple of the
``training`` flags of every module of the model, in ``model.modules()`` order.

A :class:`ModeWatch` records that tuple when a program is traced; a compiled module's call path runs it before
every call (``Dispatch(..., watch=)``, with the weight check of :mod:`fxla.weights`), which compares the current
flags with the recorded ones (one C-level pass over the modules' ``__dict__``\\ s, a few tens of ns each: less
than the weight check).  On a change the module switches
to the trace of the new mode, tracing it the first time (:class:`ModeTraces`): signatures
compiled for each mode stay cached, so alternating ``train()`` and ``eval()`` (an evaluation every epoch)
compiles each signature once per mode.
"""
from __future__ import annotations

import operator
from typing import Any, Callable, Dict, Optional, Tuple

import torch

__all__ = ["ModeWatch", "ModeTraces", "CallWatch", "mode_of"]

_TRAINING = operator.attrgetter("training")
_FLAG = operator.itemgetter("training")


def mode_of(modules) -> Tuple[bool, ...]:
    """The training flags of ``modules``, in order (the *mode* a program is traced for)."""
    return tuple(map(_TRAINING, modules))


class ModeWatch:
    """The modules of ``root`` (none for a function) and the mode (their training flags) the current program was
    traced for; calling it runs ``on_change(new_mode)`` when the flags differ from :attr:`mode`."""

    def __init__(self, root, on_change: Optional[Callable[[Tuple[bool, ...]], None]] = None):
        # (a function has no modules: its one mode is ())
        self.modules = tuple(root.modules()) if isinstance(root, torch.nn.Module) else ()
        # the flags are read from the modules' __dict__s where nn.Module keeps them (twice as fast as getattr)
        plain = all("training" in vars(m) for m in self.modules)
        self._sources = tuple(vars(m) for m in self.modules) if plain else self.modules
        self._read = _FLAG if plain else _TRAINING
        self.mode = self.current()
        self.on_change = on_change

    def current(self) -> Tuple[bool, ...]:
        """The training flags as they are now."""
        return tuple(map(self._read, self._sources))

    def __call__(self) -> None:
        mode = tuple(map(self._read, self._sources))
        if mode != self.mode:
            self.on_change(mode)

    def describe(self, mode: Tuple[bool, ...]) -> str:
        """``'train'``, ``'eval'``, or which modules train in a mixed mode (for messages)."""
        if all(mode):
            return "train"
        if not any(mode):
            return "eval"
        return "mixed (" + ", ".join(type(m).__name__ for m, t in zip(self.modules, mode) if t) + " training)"


class ModeTraces:
    """A compiled module's traces, one per mode.  :attr:`watch` (a :class:`ModeWatch` over ``root``) switches to
    the trace of the current mode when the flags changed: ``trace()`` makes it the first time (a graph, or a new
    set of per-shape traces), ``use(trace)`` installs it in the module (and drops the old one's call plans)."""

    def __init__(self, root, trace: Optional[Callable[[], Any]], use: Optional[Callable[[Any], None]]):
        self.trace, self.use = trace, use
        self.watch = ModeWatch(root, self.switch)
        self.traces: Dict[Tuple[bool, ...], Any] = {}

    @property
    def mode(self) -> Tuple[bool, ...]:
        """The mode of the trace in use."""
        return self.watch.mode

    def first(self, made) -> None:
        """``made`` is the trace of the mode the module was compiled in."""
        self.traces[self.watch.mode] = made

    def switch(self, mode: Tuple[bool, ...]) -> None:
        from .pipeline import COMPILING
        with COMPILING:
            if mode == self.watch.mode:        # (another thread switched meanwhile)
                return
            made = self.traces.get(mode)
            if made is None:                   # (a trace error keeps the old trace and mode: the next call retries)
                made = self.traces[mode] = self.trace()
            self.use(made)
            self.watch.mode = mode


class CallWatch:
    """What a compiled module's C dispatch runs before each call: the mode check, then the weight check."""

    __slots__ = ("modes", "weights")

    def __init__(self, modes: ModeWatch, weights: Callable[[], None]):
        self.modes, self.weights = modes, weights

    def __call__(self) -> None:
        self.modes()
        self.weights()
