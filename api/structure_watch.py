"""Seeing a compiled model change: its structure (a submodule, parameter or buffer replaced, added or removed), and
which of its modules were written to at all.

A compiled program holds the modules and tensors it traced: after ``model.act = nn.Tanh()``, ``model[0] =
nn.Linear(4, 4)``, ``model.append(...)`` or ``model.fc.weight = nn.Parameter(...)`` it would go on computing the
old model.  fxla refuses that call with :class:`ModelStructureError` (compile the model again, or put the old
object back), where eager and ``torch.compile`` would compute with the new structure.

Both checks cost nothing while the model is not written to.  A :class:`StructureWatch` keeps two one-item lists
read before every call:

* :attr:`~StructureWatch.written` (with the ids of the modules written to, :attr:`~StructureWatch.written_to`),
  set by ``__setattr__`` and ``__delattr__`` of the model's module classes, which the first watch of a class wraps
  (as dynamo's ``mutation_guard`` does): after the class's own assignment, a module of a watched model marks its
  watches (not for ``training``, which every call reads anyway; a ``del`` also marks it restructured).
  :class:`fxla.modes.ModeWatch` then reads those modules' watched attributes again
  (:class:`fxla.attribute_watch.AttributeWatch`);
* :attr:`~StructureWatch.restructured`, set by torch's global registration hooks
  (``register_module_{module,parameter,buffer}_registration_hook``), which torch calls for every
  ``add_module``, ``register_parameter``, ``register_buffer`` and every ``module.attr = <module, parameter or
  buffer>``, when the module registered into is one of the model's: only then is the structure compared with
  the one recorded after the latest trace (:meth:`~StructureWatch.check`; a trace may itself register a
  submodule on its first call).

Not seen: a registry or ``__dict__`` changed directly (``model._modules["0"] = ...``,
``object.__setattr__``), and a class whose ``__setattr__`` does not reach its base's for plain values.
"""
from __future__ import annotations

import threading
import weakref
from typing import Dict, List, Set, Tuple

import torch
from torch.nn.modules import module as _module

from fxla.base.errors import FxlaError
from fxla.base.source import user_frame_location

__all__ = ["StructureWatch", "ModelStructureError"]


class ModelStructureError(FxlaError):
    """A compiled model's submodule, parameter or buffer was replaced, added or removed after compiling."""


#: id(module) -> {id(watch): weak reference to it} for the modules of every watched model
_WATCHES: Dict[int, Dict[int, "weakref.ref[StructureWatch]"]] = {}
_LOCK = threading.RLock()          # (re-entered: a finalizer run by the GC while a watch is made)
_HOOKS: List = []


def _mark(module: torch.nn.Module, structure: bool) -> None:
    """``module`` was written to (``structure``: registered into): mark the watches of the models it belongs to."""
    watches = _WATCHES.get(id(module))
    if watches is not None:
        for ref in list(watches.values()):
            watch = ref()
            if watch is not None:
                watch.written_to.add(id(module))
                watch.written[0] = True
                if structure:
                    watch.restructured[0] = True


def _registered(module: torch.nn.Module, name: str, value) -> None:
    """torch's global registration hook (returns None: the value is kept)."""
    _mark(module, True)


_PATCHED: "weakref.WeakSet[type]" = weakref.WeakSet()


def _watch_setattr(cls: type) -> None:
    """Wrap ``cls.__setattr__`` and ``cls.__delattr__`` so that an assignment to a module of a watched model marks
    its watches (not one of ``training``, which every call reads anyway), and a ``del`` marks them restructured
    too.  The wrapper calls the class's own ``__setattr__`` if it has
    one, else its base's as found at the call (so the tracer's patch of ``nn.Module.__setattr__`` still
    applies)."""
    if cls in _PATCHED:
        return
    own = cls.__dict__.get("__setattr__")

    def __setattr__(self, name, value):
        if own is not None:
            own(self, name, value)
        else:
            super(cls, self).__setattr__(name, value)
        # (not while dynamo traces: it inlines this wrapper, and must not guard on _WATCHES; fxla's traces mark, as
        # every other thread's writes meanwhile must)
        if not torch.compiler.is_dynamo_compiling() and id(self) in _WATCHES and name != "training":
            _mark(self, False)

    own_del = cls.__dict__.get("__delattr__")

    def __delattr__(self, name):
        if own_del is not None:
            own_del(self, name)
        else:
            super(cls, self).__delattr__(name)
        if not torch.compiler.is_dynamo_compiling() and id(self) in _WATCHES:
            _mark(self, True)               # (a submodule, parameter or buffer may be gone: compared)

    __setattr__.__qualname__ = f"{cls.__qualname__}.__setattr__"
    __delattr__.__qualname__ = f"{cls.__qualname__}.__delattr__"
    cls.__setattr__, cls.__delattr__ = __setattr__, __delattr__
    _PATCHED.add(cls)


def _install_hooks() -> None:
    with _LOCK:
        if not _HOOKS:
            _HOOKS.extend(register(_registered) for register in (
                _module.register_module_module_registration_hook,
                _module.register_module_parameter_registration_hook,
                _module.register_module_buffer_registration_hook))


def _layout(root: torch.nn.Module) -> Dict[str, Tuple[str, int, str]]:
    """``{qualified name: (kind, id, type name)}`` of every submodule, parameter and buffer of ``root``."""
    out: Dict[str, Tuple[str, int, str]] = {}
    for path, mod in root.named_modules(remove_duplicate=False):
        prefix = f"{path}." if path else ""
        for kind, registry in (("module", mod._modules), ("parameter", mod._parameters), ("buffer", mod._buffers)):
            for name, value in registry.items():
                out.setdefault(prefix + name, (kind, id(value), type(value).__name__))
    return out


class StructureWatch:
    """The structure of ``root`` (its submodules, parameters and buffers, by identity) when it was compiled.

    :attr:`written` and :attr:`restructured` are set when a module of ``root`` is written or registered into (see
    the module docstring); :meth:`check` compares the structure and raises :class:`ModelStructureError` on a
    change."""

    def __init__(self, root: torch.nn.Module) -> None:
        _install_hooks()
        self.root = root
        #: set when a module of the model was written to, with the ids of those modules (see the module docstring)
        self.written, self.written_to = [False], set()
        #: set when one was registered into (the structure may have changed: :meth:`check` compares)
        self.restructured = [False]
        self.layout = _layout(root)
        self._ids: Set[int] = set()
        self._register()
        weakref.finalize(self, _forget, self._ids, id(self))

    def _register(self) -> None:
        """Have every module of the model (one a trace made included) mark this watch when written to."""
        with _LOCK:
            for m in self.root.modules():
                if id(m) not in self._ids:
                    self._ids.add(id(m))
                    _WATCHES.setdefault(id(m), {})[id(self)] = weakref.ref(self)
                    if type(m) is not torch.nn.Module:      # (a bare container has no forward to read attributes)
                        _watch_setattr(type(m))

    def record(self) -> None:
        """The structure is what it is now (a trace may register modules or buffers: ``self.act = nn.GELU()``
        made on the first call)."""
        self.layout = _layout(self.root)
        self.restructured[0] = False
        self._register()

    def moved(self) -> bool:
        """Whether the structure differs from the recorded one (checked after a trace: forward may register,
        replace or remove a submodule, parameter or buffer -- ``self.register_buffer("cache", ...)`` for a longer
        sequence -- and then programs of earlier traces hold the old objects)."""
        return _layout(self.root) != self.layout

    def describe(self) -> str:
        """What differs from the recorded structure, for messages."""
        now = _layout(self.root)
        changes, moved = [], ()
        for key in dict.fromkeys([*self.layout, *now]):
            old, new = self.layout.get(key), now.get(key)
            if key.startswith(moved):            # (inside a module replaced, added or removed: said already)
                continue
            if old != new and "module" in (old or new)[:1]:
                moved += (key + ".",)
            if old is None:
                changes.append(f"{new[0]} `{key}` ({new[2]}) added")
            elif new is None:
                changes.append(f"{old[0]} `{key}` ({old[2]}) removed")
            elif old[1] != new[1]:
                changes.append(f"{old[0]} `{key}` replaced ({old[2]} -> {new[2]})")
        return "; ".join(changes[:4]) + (f"; and {len(changes) - 4} more" if len(changes) > 4 else "")

    def check(self) -> None:
        """Compare the structure with the recorded one (a module was registered into): raise if it differs, and
        stay marked until it is as recorded again."""
        if not self.moved():
            self.restructured[0] = False
            return
        raise ModelStructureError(
            f"{type(self.root).__name__}: the model's structure changed after it was compiled: {self.describe()}",
            where=user_frame_location(),
            why="a compiled program holds the submodules, parameters and buffers it traced, so it would go on "
                "computing the old model",
            fix="compile the model again after changing its structure (fast = fxla.compile(model)), or put the "
                "old object back; to change a weight's values, update it in place (with torch.no_grad(): "
                "model.fc.weight.copy_(new)) -- fxla sees that")


def _forget(ids: Set[int], watch: int) -> None:
    """A watch was collected: its modules no longer mark it."""
    with _LOCK:
        for key in ids:
            watches = _WATCHES.get(key)
            if watches is not None:
                watches.pop(watch, None)
                if not watches:
                    del _WATCHES[key]
