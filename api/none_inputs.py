"""Calls that leave inputs at ``None``: one trace per set of such inputs.

``fxla.compile``'s default trace is made before any call, so every parameter of forward (not in ``concrete_args``)
is a graph input, a symbolic tensor -- ``None`` defaults included. Code that tests a parameter against ``None``
(``if mask is None: x = x * 2``, ``labels is not None``) took the tensor's branch, and identity cannot be traced
(``is`` is not an operator a Proxy can see, wherever the test is: forward, a helper, a submodule). A call that gives
``None`` for such an input -- passed, or a parameter left at its default ``None`` -- therefore does not run that
trace: it runs a trace of the model made with those parameters fixed at ``None`` (as ``concrete_args`` fixes them),
so every ``is None`` test answers as in eager PyTorch. Each set of ``None`` inputs is one variant, compiled as a
member of the module (its parameter store, name and watched state; its own signatures and call plans), made in the
mode the call runs in (``train()``/``eval()``, watched attributes: :mod:`fxla.modes`), kept at most
``MAX_VARIANTS`` at a time (least recently used dropped first); each keeps up to ``max_signatures`` signatures
of its own. A variant whose trace changes the model's structure (registers a buffer in its ``None`` branch) drops
every other program, and the mode's own trace is made again from the model as it is now.

A variant is also made for calls under ``torch.no_grad()`` where the trace they would run reads the caller's grad
mode or turns it on (:func:`fxla.frontend.grad_enables.reads_grad_mode`): traced for such a caller, with those
``None`` inputs if any; chosen per call, so threads in both grad modes each run their own.

Only arguments that are ``None`` themselves select a variant; a ``None`` inside a tuple, list or dict argument is
a value of the trace made for that container (``concrete_shapes=True`` traces each call's structure).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Sequence, Tuple

__all__ = ["NoneVariants", "none_inputs", "MAX_VARIANTS"]

#: variants (sets of None inputs, per mode) kept per compiled module
MAX_VARIANTS = 8


def none_inputs(names: Sequence[str], bound: Sequence[Any]) -> Tuple[str, ...]:
    """The names of the placeholders (``names``, in order) that a bound call (``bound``) gives ``None``."""
    return tuple(name for name, value in zip(names, bound) if value is None)


class NoneVariants:
    """A compiled module's variants for calls with ``None`` inputs (see the module docstring). ``make(names)``:
    traces the model with the parameters ``names`` fixed at ``None`` and returns the compiled member; ``drop``:
    called with one dropped; ``mode()``: the mode calls run in now (part of each variant's key); ``lock``: held
    while a variant is made (the lock of compiling: another thread may be making the same one)."""

    def __init__(self, make: Callable[[Tuple[str, ...]], Any], drop: Callable[[Any], None],
                 mode: Callable[[], Any], lock):
        self._make, self._drop, self._mode, self._lock = make, drop, mode, lock
        self._variants: "OrderedDict[Any, Any]" = OrderedDict()
        self._order = threading.Lock()          # (the dict's own: calls look variants up without the other)

    def member(self, nones: Tuple[str, ...], grad: bool = True):
        """The compiled member for calls giving ``None`` to the inputs ``nones`` (traced now if new); ``grad``:
        False for calls under ``no_grad`` of a model whose trace reads the grad mode or turns it on."""
        key = (self._mode(), nones, grad)
        with self._order:
            compiled = self._variants.get(key)
            if compiled is not None:
                self._variants.move_to_end(key)
                return compiled
        with self._lock:
            compiled = self._variants.get(key)
            if compiled is None:
                compiled = self._make(nones, grad)
                with self._order:
                    self._variants[(self._mode(), nones, grad)] = compiled   # (its trace may add watched state)
                    dropped = [self._variants.popitem(last=False)[1]
                               for _ in range(len(self._variants) - MAX_VARIANTS)]
                for old in dropped:
                    self._drop(old)
        return compiled

    def cache_size(self) -> int:
        """How many input signatures the variants have compiled."""
        with self._order:
            variants = list(self._variants.values())
        return sum(compiled.cache_size for compiled in variants)

    def clear(self) -> None:
        with self._order:
            variants = list(self._variants.values())
            self._variants.clear()
        for compiled in variants:
            self._drop(compiled)
