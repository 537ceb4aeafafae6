"""Donated, resident training state on the CPU: a compiled step's parameters, optimizer state, gradient
accumulators and changed buffers are passed to the step program as *donated* buffers (XLA writes the new values
into them, no copy), and the torch tensors of the model and the optimizer become zero-copy views of the new
values.

The torch objects stay the source of truth, with eager's aliasing.  A slot (one tensor the step reads and
writes) is *sole* when no other torch tensor shares its storage (``model.weight.data``, a ``state_dict()``
entry or a view held by the user all do): then the step donates the array the tensor views (or, the first time,
a copy of it) and rebinds the tensor's ``.data`` to a view of the result.  A slot that is not sole is passed as
a copy and the result copied into the tensor in place, as eager's ``optimizer.step()`` updates it, so every
alias sees the new value.  A tensor replaced or changed between steps (``load_state_dict``, ``p.data = ...``,
``p.data.mul_(2)``) is read as it is: donation never consumes memory that anything but the step's own view
holds.

Only single-device CPU steps are resident: elsewhere the torch tensors are host copies and the step writes
them back (:class:`fxla.api.train_step.TrainStep`).
"""
from __future__ import annotations

from typing import Callable, Dict, Hashable, List, Optional, Tuple

import jax
import torch
from torch.autograd.graph import increment_version

from fxla.runtime.buffers import cpu_view, owned_copy

__all__ = ["Residency"]


def _use_count(tensor: torch.Tensor) -> int:
    """How many tensors share ``tensor``'s storage (measured the same way before and after a step)."""
    return torch._C._storage_Use_Count(tensor.untyped_storage()._cdata)


class Residency:
    """The resident arrays of one compiled step, keyed by slot (a parameter name, ``(name, state key)``, ...).

    :meth:`argument` gives the array to donate for a slot's tensor before the call, :meth:`update` stores the
    result in the tensor after it.  ``donated``: how many arguments were donated without a copy (tests)."""

    def __init__(self, device: jax.Device):
        self.device = device
        self._arrays: Dict[Hashable, Tuple[jax.Array, int]] = {}   # slot -> (array the tensor views, use count)
        self._sole: Dict[Hashable, bool] = {}
        self.donated = 0

    def argument(self, slot: Hashable, tensor: Optional[torch.Tensor], like: Optional[torch.Tensor] = None
                 ) -> jax.Array:
        """The buffer to donate for ``slot``, whose current value is ``tensor`` (None: not made yet, zeros like
        ``like``, e.g. an optimizer state before the first step)."""
        if tensor is None:
            self._sole[slot] = True
            return owned_copy(torch.zeros_like(like), self.device)
        held = self._arrays.get(slot)
        count = _use_count(tensor)
        if held is not None and not held[0].is_deleted() and held[0].unsafe_buffer_pointer() == tensor.data_ptr():
            if count == held[1]:                    # only the tensor views the step's last result: consume it
                self._sole[slot] = True
                self.donated += 1
                return held[0]
            self._sole[slot] = False                # others view it too: they must see the update in place
        else:                                       # the tensor's own memory (first step, or replaced since)
            self._sole[slot] = count == _use_count(torch.empty(1))
        return owned_copy(tensor, self.device)

    def update(self, slot: Hashable, tensor: Optional[torch.Tensor], result: jax.Array,
               view: Callable[[jax.Array], torch.Tensor] = cpu_view) -> torch.Tensor:
        """Store the step's ``result`` for ``slot`` in ``tensor`` and return the tensor: rebound to a view of the
        result when the slot was sole, else updated in place (None: a new view of the result).  ``view``: makes
        the zero-copy torch view of a result (resident arrays are single-device CPU arrays: :func:`cpu_view`, or
        the result position's converter, :func:`fxla.runtime.buffers.viewer`)."""
        if tensor is None:
            self._sole.pop(slot, None)
            tensor = view(result)
        elif self._sole.pop(slot, False):
            tensor.data = view(result)
            # (eager's step changes the tensor in place, which bumps its version counter; the result is at the
            # same address, so without the bump a compiled module's weight watch, fxla.weights, would keep the
            # old upload, and autograd would not see the change)
            increment_version(tensor)
        else:
            tensor.copy_(view(result))
            return tensor
        self._arrays[slot] = (result, _use_count(tensor))
        return tensor

    def forget(self) -> None:
        self._arrays.clear()
        self._sole.clear()


def resident_platform(device: jax.Device) -> bool:
    """Whether a step on ``device`` keeps its state resident (the CPU: torch tensors can view its buffers)."""
    return device.platform == "cpu"
