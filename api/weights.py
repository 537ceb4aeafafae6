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

Not seen, by design of torch's ``.data``: an in-place change made through ``weight.data`` (``w.data.add_(1)``):
``.data`` is a tensor with a version counter of its own; compile again after one (docs/runtime.md, "Weights that
change").  Replacing a parameter object (``net.fc.weight = nn.Parameter(...)``) is refused at the next call
(:class:`fxla.structure_watch.ModelStructureError`): the compiled program holds the objects it traced.
"""
from __future__ import annotations

import weakref
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch.autograd.graph import increment_version
from torch.optim.optimizer import register_optimizer_step_post_hook

#: id -> weak reference of every tensor a WeightWatch has recorded (what _after_fused_step looks for; by id: a
#: WeakSet would compare tensors with their elementwise ``==``)
_WATCHED: Dict[int, "weakref.ref[torch.Tensor]"] = {}


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
    """The uploaded tensors of one module family, with the version counter and data pointer each had then."""

    def __init__(self, on_change: Optional[Callable[[List[str]], None]] = None):
        #: what a call (:meth:`__call__`) runs with the names of the changed tensors
        self.on_change = on_change
        self._seen: Dict[str, Tuple[torch.Tensor, int, int]] = {}
        #: ``(name, tensor, version, data pointer)`` per uploaded tensor (what every call compares)
        self.entries: Tuple[Tuple[str, torch.Tensor, int, int], ...] = ()

    def record(self, name: str, tensor: torch.Tensor) -> None:
        """``tensor`` (the model's parameter or buffer ``name``) is what the device buffers of ``name`` hold now."""
        _watched(tensor)
        self._seen[name] = (tensor, tensor._version, tensor.data_ptr())
        self.entries = tuple((n, t, v, p) for n, (t, v, p) in self._seen.items())

    def forget(self, names: Sequence[str]) -> None:
        for name in names:
            self._seen.pop(name, None)
        self.entries = tuple((n, t, v, p) for n, (t, v, p) in self._seen.items())

    def clear(self) -> None:
        self.forget(list(self._seen))

    def __call__(self) -> None:
        """Run :attr:`on_change` if an uploaded tensor changed (what a module's C dispatch runs before a call)."""
        for _, t, v, p in self.entries:
            if t._version != v or t.data_ptr() != p:
                self.on_change(self.changed())
                return

    def changed(self) -> List[str]:
        """The names of the uploaded tensors that changed since they were uploaded."""
        return [n for n, t, v, p in self.entries if t._version != v or t.data_ptr() != p]
