"""Seeing ``model.train()`` / ``model.eval()`` after compiling.

What a compiled program computes depends on the training flags of the model's modules: dropout draws masks or
passes its input through, batch norm normalises with the batch's statistics (and updates the running ones) or
with the running statistics, and a forward may branch on ``self.training`` itself.  The tracer reads those flags
and the lowering rules read the leaf modules' flags, so a program is valid for one *mode*: the tuple of the
``training`` flags of every module of the model, in ``model.modules()`` order.

A program is also only valid while the plain attributes its forward sets hold what they held when it was traced
(``self.steps += 1`` on an int reads the value once; ``frontend.state_capture.changed_attributes``): those the
traces change are watched too and their values are part of the mode, so a call after one changed them runs
another trace -- a trace per value, at most :data:`MAX_STATE_TRACES` per training mode (a counter changes on
every call: then :class:`StateChangeError` names it and the buffer to keep it in).

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

from fxla.base.errors import FxlaError

__all__ = ["ModeWatch", "ModeTraces", "CallWatch", "mode_of", "StateChangeError", "MAX_STATE_TRACES"]

#: how many traces one training mode may have for different values of the plain attributes forward changes
MAX_STATE_TRACES = 8
_MISSING = object()


class StateChangeError(FxlaError):
    """forward changes a plain attribute to a new value on (nearly) every call: each value would need a trace."""

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
        #: the plain attributes the traces change (see the module docstring): ``(module __dict__, name)`` each,
        #: with their qualified names
        self.state: Tuple[Tuple[dict, str], ...] = ()
        self.state_names: Tuple[str, ...] = ()
        self.mode = self.current()
        self.on_change = on_change

    def current(self) -> Tuple[Any, ...]:
        """The training flags as they are now (then the watched attributes' values, if any)."""
        flags = tuple(map(self._read, self._sources))
        return flags + tuple(d.get(n, _MISSING) for d, n in self.state) if self.state else flags

    def watch_state(self, root, names) -> bool:
        """Also watch the attributes ``names`` (qualified, under ``root``); whether any is new."""
        new = [n for n in names if n not in self.state_names]
        for name in new:
            owner, _, attr = name.rpartition(".")
            self.state += ((vars(root.get_submodule(owner)), attr),)
            self.state_names += (name,)
        return bool(new)

    def __call__(self) -> None:
        mode = tuple(map(self._read, self._sources))    # (current(), inline: this runs before every call)
        if self.state:
            mode += tuple(d.get(n, _MISSING) for d, n in self.state)
        if mode != self.mode:
            self.on_change(mode)

    def describe(self, mode: Tuple[bool, ...]) -> str:
        """``'train'``, ``'eval'``, or which modules train in a mixed mode (for messages)."""
        mode = mode[:len(self.modules)]                 # (the training flags)
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
        self.watch.mode = self.watch.current()        # (its trace may have added watched attributes)
        self.traces[self.watch.mode] = made

    def changed_state(self, root, names) -> None:
        """A trace of the mode in use changes the attributes ``names`` (a concrete_shapes trace, made at a call):
        they are watched from now on, as the values they hold now (the trace began from them)."""
        if self.watch.watch_state(root, names):
            made = self.traces.get(self.watch.mode)
            self.watch.mode = self.watch.current()
            self.traces[self.watch.mode] = made

    def switch(self, mode: Tuple[Any, ...]) -> None:
        from .pipeline import COMPILING
        with COMPILING:
            if mode == self.watch.mode:        # (another thread switched meanwhile)
                return
            made = self.traces.get(mode)
            if made is None:                   # (a trace error keeps the old trace and mode: the next call retries)
                self._check_state_traces(mode)
                made = self.trace()
            self.use(made)                     # (may add watched attributes: the mode is then re-read)
            self.watch.mode = self.watch.current()
            self.traces[self.watch.mode] = made

    def _check_state_traces(self, mode: Tuple[Any, ...]) -> None:
        n = len(self.watch.modules)
        same = [key for key in self.traces if key[:n] == mode[:n]]
        if len(same) >= MAX_STATE_TRACES:
            values = ", ".join(f"{name} = {value!r}" for name, value in zip(self.watch.state_names, mode[n:]))
            raise StateChangeError(
                f"forward changes the plain attribute(s) {', '.join(self.watch.state_names)} on call after call "
                f"(now {values}); {len(same)} traces were made for their values already",
                why="a compiled program reads a plain Python attribute once, when it is traced, so each value "
                    "needs a trace of its own",
                fix="keep state that changes every call in a buffer (self.register_buffer('steps', "
                    "torch.zeros((), dtype=torch.long)); fxla writes it back each call), or compute it outside "
                    "forward")


class CallWatch:
    """What a compiled module's C dispatch runs before each call: the mode check, then the weight check."""

    __slots__ = ("modes", "weights")

    def __init__(self, modes: ModeWatch, weights: Callable[[], None]):
        self.modes, self.weights = modes, weights

    def __call__(self) -> None:
        self.modes()
        self.weights()
