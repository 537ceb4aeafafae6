"""Seeing ``model.train()`` / ``model.eval()``, and the plain attributes a program was traced with, after compiling.

What a compiled program computes depends on the training flags of the model's modules: dropout draws masks or
passes its input through, batch norm normalises with the batch's statistics (and updates the running ones) or
with the running statistics, and a forward may branch on ``self.training`` itself.  The tracer reads those flags
and the lowering rules read the leaf modules' flags, so a program is valid for one *mode*: the tuple of the
``training`` flags of every module of the model, in ``model.modules()`` order.

A program is also only valid while the plain attributes its trace read hold what they held then (``y *
self.scale``, ``if self.config.use_cache:``, a leaf layer's ``negative_slope``: ``frontend.attribute_reads``) and
while those its forward sets hold what the trace started from (``self.steps += 1`` on an int:
``frontend.state_capture.changed_attributes``).  Both are watched (:class:`fxla.attribute_watch.AttributeWatch`)
and their state is part of the mode, so a call after one changed -- between calls, or by the call itself -- runs
another trace: a trace per value, at most :data:`MAX_STATE_TRACES` per training mode (a counter changes on every
call: then :class:`StateChangeError` names it and the buffer to keep it in).  A submodule, parameter or buffer
replaced, added or removed is a :class:`ModelStructureError` (:mod:`fxla.structure_watch`).

A :class:`ModeWatch` records the mode when a program is traced; a compiled module's call path runs it before
every call (``Dispatch(..., watch=)``, with the weight check of :mod:`fxla.weights`), which compares the current
flags with the recorded ones (one C-level pass over the modules' ``__dict__``\\ s, a few tens of ns each: less
than the weight check); the attributes are read again only after the model was written to (the structure
watch's mark), and the attributes of configuration objects forward read are read before every call.  On a change
the module switches
to the trace of the new mode, tracing it the first time (:class:`ModeTraces`): signatures
compiled for each mode stay cached, so alternating ``train()`` and ``eval()`` (an evaluation every epoch)
compiles each signature once per mode.
"""
from __future__ import annotations

import functools
import operator
from typing import Any, Callable, Dict, Optional, Tuple

import torch
from torch.utils.hooks import RemovableHandle

from fxla.base.errors import FxlaError

from fxla.frontend.attribute_reads import holder_of
from fxla.frontend.grad_enables import REQUIRES_GRAD
from fxla.frontend.global_reads import plain_reads, traced_functions

from .attribute_watch import AttributeWatch, shown
from .structure_watch import ModelStructureError, StructureWatch

__all__ = ["ModeWatch", "ModeTraces", "CallWatch", "HookWatch", "mode_of", "StateChangeError", "ModelStructureError",
           "MAX_STATE_TRACES"]

#: how many traces one training mode may have for different values of the plain attributes forward changes
MAX_STATE_TRACES = 8


class StateChangeError(FxlaError):
    """A plain attribute a program was traced with changes on (nearly) every call (set by forward, or by the caller
    between calls): each value would need a trace."""

_TRAINING = operator.attrgetter("training")
_FLAG = operator.itemgetter("training")


def _requires_grad(module: torch.nn.Module) -> Tuple[bool, ...]:
    return tuple(p.requires_grad for p in module.parameters())


def mode_of(modules) -> Tuple[bool, ...]:
    """The training flags of ``modules``, in order (the *mode* a program is traced for)."""
    return tuple(map(_TRAINING, modules))


#: the hook dicts nn.Module keeps in each module's ``__dict__`` (the ``*_with_kwargs`` / ``always_called`` sets
#: are keyed by the same handle ids)
_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
_BACKWARD = ("_backward_hooks", "_backward_pre_hooks")


def _global_hook_dicts() -> Dict[str, Any]:
    from torch.nn.modules import module as nn_module
    return {"_forward_hooks": nn_module._global_forward_hooks, "_forward_pre_hooks": nn_module._global_forward_pre_hooks,
            "_backward_hooks": nn_module._global_backward_hooks,
            "_backward_pre_hooks": nn_module._global_backward_pre_hooks}


class HookWatch:
    """The forward and backward hooks of a model's modules, and torch's global module hooks, as a trace saw them.
    A trace runs the forward hooks there were (their tensor work becomes part of the program), so a hook
    registered or removed afterwards needs a trace of its own (:meth:`ModeTraces.rehook`).  Checked before every
    call: a class counter (``RemovableHandle.next_id``, which every registration moves) and the sizes of the dicts
    that held hooks (removals); only when one moved are the hook ids compared."""

    def __init__(self, modules):
        self.modules = modules
        self._collect()
        self.record()

    def _collect(self) -> None:
        named = [(n, vars(m).get(n)) for m in self.modules for n in _HOOK_DICTS] + list(_global_hook_dicts().items())
        self.dicts = [d for _, d in named if d is not None]
        self._backward = [d for n, d in named if d is not None and n in _BACKWARD]

    def refresh(self) -> None:
        """The model was written to (``m._forward_hooks = OrderedDict()`` replaces a dict): the dicts are looked up
        again, and the next :meth:`changed` compares their hooks."""
        old = self.dicts
        self._collect()
        if len(old) != len(self.dicts) or any(a is not b for a, b in zip(old, self.dicts)):
            self._filled = [d for d in self.dicts if d]
            self._sizes = tuple(map(len, self._filled))
            self._next = -1

    def record(self) -> None:
        """The hooks a trace just saw."""
        #: calls until a trace again (a trace changed the hooks itself: its own call ran the old ones, as eager's)
        self.pending = 0
        self._next = RemovableHandle.next_id
        self._filled = [d for d in self.dicts if d]       # (a removal shrinks one of these; a registration moves
        self._sizes = tuple(map(len, self._filled))       # next_id: the empty dicts need no look per call)
        self._ids = [tuple(d) for d in self.dicts]

    def changed(self) -> bool:
        """Whether a hook was registered or removed since :meth:`record`."""
        if RemovableHandle.next_id == self._next and tuple(map(len, self._filled)) == self._sizes:
            return False
        if [tuple(d) for d in self.dicts] == self._ids:
            self._next = RemovableHandle.next_id        # (a hook elsewhere: a tensor's, another model's)
            return False
        return True

    def backward_hooks(self) -> bool:
        """Whether a module (or torch's global registry) has a backward hook, which fxla's gradients do not run."""
        return any(self._backward)


class ModeWatch:
    """The modules of ``root`` (none for a function) and the mode (their training flags, then the watched
    attributes' values) the current program was traced for; calling it runs ``on_change(new_mode)`` when the
    mode differs from :attr:`mode`, after checking that the model's structure did not change
    (:class:`fxla.structure_watch.StructureWatch`)."""

    def __init__(self, root, on_change: Optional[Callable[[Tuple[bool, ...]], None]] = None):
        # (a function has no modules: its one mode is ())
        self.modules = tuple(root.modules()) if isinstance(root, torch.nn.Module) else ()
        # the flags are read from the modules' __dict__s where nn.Module keeps them (twice as fast as getattr)
        plain = all("training" in vars(m) for m in self.modules)
        self._sources = tuple(vars(m) for m in self.modules) if plain else self.modules
        self._read = _FLAG if plain else _TRAINING
        #: the plain attributes the traces read or change (see the module docstring), and the plain globals and
        #: closure variables the code they start from reads (fxla.frontend.global_reads)
        self.attributes = AttributeWatch()
        for fn in traced_functions(root):
            for kind, holder, key, label in plain_reads(fn):
                if kind == "cell":
                    self.attributes.add_cell(holder, label)
                elif kind == "chain":
                    self.attributes.add_chain(holder, (id(key[0]), key[1], key[2]), label)
                else:
                    self.attributes.add(holder, key, label, fn)
        self.structure = StructureWatch(root) if self.modules else None
        self._written = self.structure.written if self.structure is not None else [False]
        self._flags: Tuple[bool, ...] = ()
        self._values: Tuple[Any, ...] = ()
        self._tokens: Any = ()
        self.mode = self.current()
        self.on_change = on_change
        #: the hooks the trace in use ran (``None``: a function's); ``on_hooks()`` runs when they changed
        self.hooks = HookWatch(self.modules) if self.modules else None
        self.on_hooks: Optional[Callable[[bool], None]] = None

    @property
    def mode(self) -> Tuple[Any, ...]:
        """The mode of the program in use: the training flags, then the watched attributes' state."""
        return self._mode

    @mode.setter
    def mode(self, mode: Tuple[Any, ...]) -> None:
        # (kept in parts too: a call compares the flags, then the attribute values by identity while no write
        # refreshed them, then the objects' snapshot numbers)
        n = len(self.modules)
        self._mode, self._flags = mode, mode[:n]
        if self.attributes.names and mode[n:] == self.attributes.state():
            self._values, self._tokens = self.attributes.values, self.attributes.tokens()
        else:
            self._values, self._tokens = (), ()

    @property
    def state_names(self) -> Tuple[str, ...]:
        """The qualified names of the watched attributes."""
        return self.attributes.names

    def current(self) -> Tuple[Any, ...]:
        """The training flags as they are now (then the watched attributes' state, if any)."""
        flags = tuple(map(self._read, self._sources))
        if not self.attributes.names:
            return flags
        self.attributes.refresh()
        return flags + self.attributes.state()

    def watch_state(self, root, names) -> bool:
        """Also watch the attributes ``names`` (qualified, under ``root``); whether any is new."""
        new = False
        for name in names:
            if name.endswith(REQUIRES_GRAD) and isinstance(root, torch.nn.Module):     # (the parameters' flags)
                path = name[:-len(REQUIRES_GRAD)]
                try:
                    module = root.get_submodule(path)
                except AttributeError:
                    continue
                new = self.attributes.add_chain(functools.partial(_requires_grad, module),
                                                (REQUIRES_GRAD, id(module)), name) or new
                continue
            found = holder_of(root, name) if isinstance(root, torch.nn.Module) else None
            if found is not None:           # (else a module forward made, or one removed since)
                owner, attr = found
                new = self.attributes.add(vars(owner), attr, name, owner) or new
        return new

    def traced(self) -> None:
        """A trace was made: the model's structure is what it saw (it may register modules or buffers)."""
        if self.structure is not None:
            self.structure.record()

    def at_call(self) -> None:
        """The check before a call (:class:`CallWatch`): a trace that changed the hooks itself (a hook that removes
        itself) ran the old ones for its own call, as eager did; this call traces again with the new ones."""
        hooks = self.hooks
        if hooks is not None and hooks.pending and self.on_hooks is not None:
            hooks.pending -= 1
            if not hooks.pending:
                self.on_hooks(True)
        self()

    def __call__(self) -> None:
        written = self._written
        if written[0]:                                  # (the model was written to: fxla.structure_watch)
            written[0] = False
            if self.hooks is not None:
                self.hooks.refresh()
            structure = self.structure
            if structure.restructured[0]:
                from .pipeline import COMPILING
                try:
                    with COMPILING:             # (a trace in another thread may be registering: its layout first)
                        structure.check()
                except BaseException:
                    written[0] = True
                    raise
            ids = list(structure.written_to)
            structure.written_to.difference_update(ids)
            self.attributes.refresh(ids)
        if self.hooks is not None and self.on_hooks is not None and self.hooks.changed():
            self.on_hooks(False)
        flags = tuple(map(self._read, self._sources))   # (current()'s parts, inline: this runs before every call)
        attributes = self.attributes
        if flags != self._flags or attributes.names and (
                attributes.values is not self._values or attributes.tokens() is not self._tokens):
            mode = flags + attributes.state() if attributes.names else flags
            if mode != self._mode:
                self.on_change(mode)

    def describe(self, mode: Tuple[bool, ...]) -> str:
        """``'train'``, ``'eval'``, or which modules train in a mixed mode (for messages)."""
        mode = mode[:len(self.modules)]                 # (the training flags)
        if all(mode):
            return "train"
        if not any(mode):
            return "eval"
        return "mixed (" + ", ".join(type(m).__name__ for m, t in zip(self.modules, mode) if t) + " training)"

    def describe_change(self, old: Tuple[Any, ...], new: Tuple[Any, ...]) -> str:
        """What differs between the modes ``old`` and ``new``, for the recompile log."""
        n = len(self.modules)
        if old[:n] != new[:n]:
            return f"the module's mode changed to {self.describe(new)} (train()/eval())"
        changed = self.attributes.changed(old[n:], new[n:])
        return "plain attribute(s) the program was traced with changed (" + "; ".join(changed[:4]) + (
            f"; and {len(changed) - 4} more" if len(changed) > 4 else "") + ")"


class ModeTraces:
    """A compiled module's traces, one per mode.  :attr:`watch` (a :class:`ModeWatch` over ``root``) switches to
    the trace of the current mode when the flags changed: ``trace()`` makes it the first time (a graph, or a new
    set of per-shape traces), ``use(trace)`` installs it in the module (and drops the old one's call plans)."""

    def __init__(self, root, trace: Optional[Callable[[], Any]], use: Optional[Callable[[Any], None]],
                 forget: Optional[Callable[[], None]] = None, hooks: Optional[HookWatch] = None):
        self.trace, self.use, self.forget = trace, use, forget
        self.watch = ModeWatch(root, self.switch)
        if hooks is not None:                       # (a per-shape trace's: the model's, which its owner checks)
            self.watch.hooks = hooks
        self.watch.on_hooks = self.rehook if forget is not None else None
        self.traces: Dict[Tuple[bool, ...], Any] = {}
        #: how many times the hooks changed (:meth:`rehook`): part of the key of programs made from the traces
        self.generation = 0
        self._rehooks = 0           # (traces in a row that changed the hooks themselves)

    def rehook(self, force: bool = False) -> None:
        """A hook was registered or removed since the trace in use (:class:`HookWatch`; ``force``: by that trace
        itself): every trace ran the old hooks, so their programs go (``forget()``) and the current mode is traced
        again, with the hooks there are now."""
        from .pipeline import COMPILING
        with COMPILING:
            if not force and not self.watch.hooks.changed():    # (another thread traced again meanwhile)
                return
            self.forget()
            self.generation += 1
            self._record_hooks()
            made = self.trace()
            self.watch.traced()
            self._after_trace()
            self.traces.clear()
            self.use(made)
            self.watch.mode = self.watch.current()
            self.traces[self.watch.mode] = made

    @property
    def mode(self) -> Tuple[bool, ...]:
        """The mode of the trace in use."""
        return self.watch.mode

    def first(self, made) -> None:
        """``made`` is the trace of the mode the module was compiled in."""
        self.watch.traced()
        self._after_trace(calls=2)
        self.watch.mode = self.watch.current()        # (its trace may have added watched attributes)
        self.traces[self.watch.mode] = made

    def changed_state(self, root, names) -> None:
        """A trace of the mode in use changes the attributes ``names`` (a concrete_shapes trace, made at a call):
        they are watched from now on, as the values they hold now (the trace began from them)."""
        self.watch.traced()
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
                self._record_hooks()
                made = self.trace()
                self.watch.traced()
                self._after_trace()
            self.use(made)                     # (may add watched attributes: the mode is then re-read)
            self.watch.mode = self.watch.current()
            self.traces[self.watch.mode] = made

    def _record_hooks(self) -> None:
        """The hooks a trace about to begin runs (recorded before it: a hook that registers or removes hooks while
        it runs leaves the next call a change to see, as eager's next call runs the hooks there are then)."""
        if self.watch.hooks is not None:
            self.watch.hooks.record()

    def _after_trace(self, calls: int = 1) -> None:
        """A trace that changed the hooks itself (a hook registering or removing hooks) ran the old ones, as eager's
        call does: the call ``calls`` from now traces again (:attr:`HookWatch.pending`; 1: the next, after a trace
        made in a call; 2: the second, after the trace made at compile time, which the first call runs).  After
        :data:`MAX_STATE_TRACES` such traces in a row (eager's hooks differ on every call), a
        :class:`StateChangeError`."""
        hooks = self.watch.hooks
        if hooks is None:
            return
        changed = hooks.changed()
        self._rehooks = self._rehooks + 1 if changed else 0
        if changed:
            hooks.record()
            hooks.pending = calls
        if self._rehooks > MAX_STATE_TRACES:
            raise StateChangeError(
                f"the model's hooks changed while it was traced, {self._rehooks} times in a row (a hook that "
                f"registers or removes hooks when it runs)",
                why="fxla runs the hooks a trace saw; hooks that change on every call need a trace per call",
                fix="register the hooks before compiling and keep them for the calls compiled, or make the hook "
                    "decide per call with a buffer or an argument instead of registering hooks")

    def _check_state_traces(self, mode: Tuple[Any, ...]) -> None:
        n = len(self.watch.modules)
        same = [key for key in self.traces if key[:n] == mode[:n]]
        made = len({id(self.traces[key]) for key in same})        # (a trace may have two keys)
        if made >= MAX_STATE_TRACES:
            attrs = self.watch.attributes
            now = attrs.describe(mode[n:])
            varying = [name for name, value in now.items()
                       if any(attrs.describe(key[n:]).get(name, value) != value for key in same)]
            values = ", ".join(f"{name} = {shown(now[name])}" for name in varying[:4])
            raise StateChangeError(
                f"the plain value(s) {', '.join(varying[:4])} changed on call after call (now {values}); "
                f"{made} traces were made for their values already",
                why="a compiled program reads a plain Python attribute, global or closure variable once, when it "
                    "is traced, so each value needs a trace of its own (one read for logging alone too: fxla "
                    "cannot tell that it changes nothing)",
                fix="keep state that changes every call in a buffer (self.register_buffer('steps', "
                    "torch.zeros((), dtype=torch.long)); fxla writes it back each call), or pass the value to "
                    "forward (a global or closure variable: to the step, step(x, y, beta)) as a tensor argument")


class CallWatch:
    """What a compiled module's C dispatch runs before each call: the mode check, then the weight check."""

    __slots__ = ("modes", "weights")

    def __init__(self, modes: ModeWatch, weights: Callable[[], None]):
        self.modes, self.weights = modes, weights

    def __call__(self) -> None:
        self.modes.at_call()
        self.weights()
