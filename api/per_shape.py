"""``fxla.compile(model, concrete_shapes=True)``: one concrete-shape trace per input signature.

Models that branch on shapes or pass sizes around as Python ints (Hugging Face transformers and many others)
cannot be traced shape-agnostically.  With ``concrete_shapes=True`` nothing is traced at construction; each
new input signature (argument names given, shapes, dtypes, non-tensor values) is traced with
``Tracer(concrete_shapes=True)`` on those inputs, and the resulting shape-specialised GraphModule is compiled
by its own :class:`~fxla.CompiledModule` (with its fast call plans).  All of them share one set of
device-resident parameters.
"""
from __future__ import annotations

import inspect
import time
from typing import Any, Callable, Dict, Tuple

import torch

from fxla.frontend import symbolic_trace
from fxla.frontend.remedies import COMPILE, current, spelled_as
from fxla.runtime.buffers import example_tensor, is_array

from .pipeline import COMPILING
from .recompile import log_trace
from .signature import ArgumentError, signature_key


class PerShapeTraces:
    """The per-signature traces of a ``concrete_shapes=True`` module named ``name`` (see the module doc):
    ``make(gm)`` makes the compiled module of one trace (sharing the owner's parameter store); at most
    ``max_signatures`` traces are kept, the oldest dropped first (``drop(module)`` is told)."""

    def __init__(self, name: str, fn, concrete_args, make: Callable[[Any], Any], drop: Callable[[Any], None],
                 max_signatures: int):
        self.name = name
        self.fn = fn
        self.make, self.drop = make, drop
        self.max_signatures = max_signatures
        self.concrete_args = dict(concrete_args or {})
        self.remedies = current(COMPILE)          # what trace errors tell the user to call (fxla.frontend.remedies)
        forward = type(fn).forward if isinstance(fn, torch.nn.Module) else fn
        params = list(inspect.signature(forward).parameters.values())
        if isinstance(fn, torch.nn.Module):
            params = params[1:]                                    # self
        self.signature = inspect.Signature([p for p in params if p.name not in self.concrete_args])
        self.compiled: Dict[Tuple, Any] = {}                       # signature key -> compiled module

    def bind(self, args, kwargs) -> Dict[str, Any]:
        """The arguments a call gives explicitly, by parameter name, in parameter order."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as err:
            raise ArgumentError(f"{self.name}(): {err}\nfix: call it with the arguments of the model's "
                                f"forward {self.signature}") from None
        return dict(bound.arguments)

    def module_for(self, args, kwargs) -> Tuple[Any, Tuple]:
        """The compiled module of this call's signature (tracing and compiling it if new), and its arguments:
        those the trace reads as inputs (a Python value given as a whole argument -- ``use_cache=False``,
        ``num_steps=3`` -- is a constant of its trace, and part of the signature)."""
        given = self.bind(args, kwargs)
        key = (tuple(given), signature_key(tuple(given.values())))
        module = self.compiled.get(key)
        if module is None:
            with COMPILING:                       # (another thread may have traced it meanwhile)
                module = self.compiled.get(key) or self._trace(key, given)
        return module, tuple(v for v in given.values() if not _python_value(v))

    def _trace(self, key, given):
        """Trace the model for the call ``given`` (parameter name -> value) and make its compiled module."""
        fixed = {k: v for k, v in given.items() if _python_value(v)}
        examples = {k: _example(v) for k, v in given.items() if k not in fixed}
        started = time.perf_counter()
        with spelled_as(self.remedies):
            gm = symbolic_trace(self.fn, concrete_args={**self.concrete_args, **fixed}, example_inputs=examples)
        log_trace(self.fn, gm.graph, started)
        module = self.make(gm)
        self.compiled[key] = module
        while len(self.compiled) > self.max_signatures:     # the oldest trace goes (see max_signatures)
            old = self.compiled.pop(next(iter(self.compiled)))
            self.drop(old)
        return module


def _python_value(value) -> bool:
    """A call argument that is a plain Python value (specialised: its trace sees the value, not a placeholder)."""
    return value is None or isinstance(value, (bool, int, float, str))


def _example(value):
    """A torch example of a call argument (jax arrays are viewed as torch tensors for tracing)."""
    return example_tensor(value) if is_array(value) and not isinstance(value, torch.Tensor) else value
