"""Seeing the model's weights change after compiling.

A :class:`fxla.CompiledModule` uploads each parameter and buffer to the device once and keeps it there.  When
the user changes a weight afterwards (``net.fc.weight.mul_(2)`` under ``no_grad``, ``load_state_dict``, an
optimizer step, ``net.fc.weight.data = other``), the next call must compute with the new value, as eager and
``torch.compile`` do.  A :class:`WeightWatch` records, for every uploaded tensor, its version counter (bumped by
every in-place change made through the tensor or any view of it) and its data pointer (changed by assigning
``.data``); every call checks them first (:meth:`WeightWatch.changed`, a few tens of ns per weight) and the module
re-uploads what changed.

torch's fused optimizers (``fused=True``: Adam, AdamW, SGD, Adagrad) update their parameters in place without
bumping the version counters (torch 2.13 on the CPU), so a compiled module kept computing with the weights of
before the step.  A global optimizer step post-hook (:func:`_after_fused_step`) bumps the counters of the
parameters of a fused group that a watch records, after each step, as an unfused step does.

A change made through a parameter's ``.data`` (``p.data.add_(-lr * p.grad)``, an EMA's ``p.data.mul_(d)``, WGAN's
``p.data.clamp_(-c, c)``) bumps no counter of the parameter's: ``.data`` is a tensor with a version counter of its
own.  So ``nn.Parameter.data`` is a property here (:func:`_data_of`) that counts the tensors it hands out and
keeps a weak reference of each: a watch records that count at upload, so a parameter whose ``.data`` was taken
since counts as changed at the next call (for every module watching it), and one with such a tensor (or a view
of it) alive, taken before or after the upload, counts as changed on every call, since a write through it may come
at any time (``d = p.data`` kept, then ``d.mul_(2)`` between calls).  A watch compares the counts only when one of
the process's ``.data`` counts moved, or while such a tensor is alive.  Reads through ``.data`` cost an upload,
never a wrong value.  Not seen (docs/runtime.md, "Weights that change"): writes through raw memory (a numpy array
of ``p.detach().numpy()``, a data pointer); through a *buffer*'s ``.data`` (buffers are plain tensors; their
in-place changes made through the buffer itself are seen); through ``.data`` inside a function compiled by
``torch.compile`` (dynamo calls torch's C getter); through a flat buffer ``p.data = t`` made ``p`` a view of; and
through ``.data`` tensors kept before the watch began (``import fxla`` begins it when torch is loaded, else the
first compile).  Replacing a parameter object (``net.fc.weight = nn.Parameter(...)``) is refused at the next call
(:class:`fxla.structure_watch.ModelStructureError`): the compiled program holds the objects it traced.
"""
from __future__ import annotations

import weakref
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch.autograd.graph import increment_version
from torch.utils.weak import WeakIdKeyDictionary
from torch.optim.optimizer import register_optimizer_step_post_hook

#: id -> weak reference of every tensor a WeightWatch has recorded (what _after_fused_step looks for; by id: a
#: WeakSet would compare tensors with their elementwise ``==``)
_WATCHED: Dict[int, "weakref.ref[torch.Tensor]"] = {}


class _Taken:
    """What ``.data`` handed out for one parameter: how many tensors, and weak references of those that may be
    alive (a write through one may come at any time)."""

    __slots__ = ("count", "alive", "limit")

    def __init__(self):
        self.count, self.alive, self.limit = 0, [], 64


#: parameter -> :class:`_Taken`, for every parameter whose ``.data`` was taken (by identity: a tensor's ``==`` is
#: elementwise; an entry goes with its parameter)
_DATA_TAKEN = WeakIdKeyDictionary()
#: how many tensors ``.data`` handed out in this process (``[n]``: a watch compares marks only when it moved)
_DATA_EPOCH = [0]
_TENSOR_DATA = torch._C.TensorBase.data           # (torch's own ``.data`` getter and setter)


def _data_of(param: torch.nn.Parameter) -> torch.Tensor:
    """``param.data``, noted (see the module docstring)."""
    data = _TENSOR_DATA.__get__(param, type(param))
    taken = _DATA_TAKEN.get(param)
    if taken is None:
        taken = _DATA_TAKEN[param] = _Taken()
    taken.count += 1
    if len(taken.alive) >= taken.limit:           # (many taken between two calls: prune, amortised)
        taken.alive = [r for r in taken.alive if r() is not None]
        taken.limit = max(64, 2 * len(taken.alive))
    taken.alive.append(weakref.ref(data))
    _DATA_EPOCH[0] += 1
    return data


def _set_data_of(param: torch.nn.Parameter, value: torch.Tensor) -> None:
    _TENSOR_DATA.__set__(param, value)


def _del_data_of(param: torch.nn.Parameter) -> None:
    _TENSOR_DATA.__delete__(param)                # (torch's own error)


torch.nn.Parameter.data = property(_data_of, _set_data_of, _del_data_of, doc=_TENSOR_DATA.__doc__)


def _data_mark(tensor: torch.Tensor) -> int:
    """How many tensors ``tensor``'s ``.data`` has handed out, or ``-1`` while one of them (or a view of it) is
    alive: a watch that recorded another mark, or ``-1``, counts the tensor as changed."""
    taken = _DATA_TAKEN.get(tensor) if isinstance(tensor, torch.nn.Parameter) else None
    if taken is None:
        return 0
    taken.alive = [r for r in taken.alive if r() is not None]
    return -1 if taken.alive else taken.count


def _watched(tensor: torch.Tensor) -> None:
    key = id(tensor)
    if key not in _WATCHED:
        _WATCHED[key] = weakref.ref(tensor, lambda _, key=key: _WATCHED.pop(key, None))


def _after_fused_step(optimizer, args, kwargs) -> None:
    """After any ``optimizer.step()``: a group with ``fused=True`` changed its parameters in place without
    bumping their version counters; bump them for the tensors a compiled module watches, so its next call uploads
    the new values (the counters an unfused step would have bumped)."""
    for group in optimizer.param_groups:
        if group.get("fused"):
            for p in group["params"]:
                ref = _WATCHED.get(id(p))
                if ref is not None and ref() is p:
                    increment_version(p)


register_optimizer_step_post_hook(_after_fused_step)


class WeightWatch:
    """The uploaded tensors of one module family, with the version counter, data pointer and ``.data`` mark
    (:func:`_data_mark`) each had then."""

    def __init__(self, on_change: Optional[Callable[[List[str]], None]] = None):
        #: what a call (:meth:`__call__`) runs with the names of the changed tensors
        self.on_change = on_change
        self._seen: Dict[str, Tuple[torch.Tensor, int, int, int]] = {}
        #: ``(name, tensor, version, data pointer)`` per uploaded tensor (what every call compares)
        self.entries: Tuple[Tuple[str, torch.Tensor, int, int], ...] = ()
        self._marks: Tuple[Tuple[torch.Tensor, int], ...] = ()
        self._epoch = -1              # (the _DATA_EPOCH of the last call that found every mark unchanged)
        self._sticky = False          # (a recorded tensor has a live ``.data`` tensor: changed on every call)

    def record(self, name: str, tensor: torch.Tensor) -> None:
        """``tensor`` (the model's parameter or buffer ``name``) is what the device buffers of ``name`` hold now."""
        _watched(tensor)
        self._seen[name] = (tensor, tensor._version, tensor.data_ptr(), _data_mark(tensor))
        self._refresh()

    def forget(self, names: Sequence[str]) -> None:
        for name in names:
            self._seen.pop(name, None)
        self._refresh()

    def _refresh(self) -> None:
        self.entries = tuple((n, t, v, p) for n, (t, v, p, _) in self._seen.items())
        self._marks = tuple((t, m) for t, _, _, m in self._seen.values())
        self._sticky = any(m < 0 for _, m in self._marks)
        self._epoch = -1

    def clear(self) -> None:
        self.forget(list(self._seen))

    def __call__(self) -> None:
        """Run :attr:`on_change` if an uploaded tensor changed (what a module's C dispatch runs before a call)."""
        if self._sticky or self._epoch != _DATA_EPOCH[0]:
            epoch = _DATA_EPOCH[0]
            if any(m < 0 or _data_mark(t) != m for t, m in self._marks):
                self.on_change(self.changed())
                return
            self._epoch = epoch
        for _, t, v, p in self.entries:
            if t._version != v or t.data_ptr() != p:
                self.on_change(self.changed())
                return

    def changed(self) -> List[str]:
        """The names of the uploaded tensors that changed since they were uploaded (``.data`` taken included)."""
        return [n for n, (t, v, p, m) in self._seen.items()
                if t._version != v or t.data_ptr() != p or m < 0 or _data_mark(t) != m]
