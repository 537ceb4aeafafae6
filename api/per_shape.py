"""``fxla.compile(model, concrete_shapes=True)``: one concrete-shape trace per input signature.

Models that branch on shapes or pass sizes around as Python ints (Hugging Face transformers and many others)
cannot be traced shape-agnostically.  With ``concrete_shapes=True`` nothing is traced at construction; each
new input signature (argument names given, shapes, dtypes, non-tensor values) is traced with
``Tracer(concrete_shapes=True)`` on those inputs, and the resulting shape-specialised GraphModule is compiled
by its own :class:`~fxla.api.compile.CompiledModule` (with its fast call plans).  All of them share one set of
device-resident parameters.
"""
from __future__ import annotations

import inspect
from typing import Any, Dict, Tuple

import torch

from fxla.frontend import symbolic_trace


class PerShapeTraces:
    """The per-signature traces of a ``concrete_shapes=True`` :class:`CompiledModule` (see the module doc)."""

    def __init__(self, owner, fn, concrete_args):
        self.owner = owner
        self.fn = fn
        self.concrete_args = dict(concrete_args or {})
        forward = type(fn).forward if isinstance(fn, torch.nn.Module) else fn
        params = list(inspect.signature(forward).parameters.values())
        if isinstance(fn, torch.nn.Module):
            params = params[1:]                                    # self
        self.signature = inspect.Signature([p for p in params if p.name not in self.concrete_args])
        self.compiled: Dict[Tuple, Any] = {}                       # signature key -> CompiledModule

    def bind(self, args, kwargs) -> Dict[str, Any]:
        """The arguments a call gives explicitly, by parameter name, in parameter order."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as err:
            from .compile import ArgumentError
            raise ArgumentError(f"{self.owner.__name__}(): {err}\nfix: call it with the arguments of the model's "
                                f"forward {self.signature}") from None
        return dict(bound.arguments)

    def module_for(self, args, kwargs) -> Tuple[Any, Tuple]:
        """The compiled module of this call's signature (tracing and compiling it if new), and its arguments."""
        from .compile import COMPILING, _signature
        given = self.bind(args, kwargs)
        values = tuple(given.values())
        key = (tuple(given), _signature(values))
        module = self.compiled.get(key)
        if module is None:
            with COMPILING:                       # (another thread may have traced it meanwhile)
                module = self.compiled.get(key) or self._trace(key, given)
        return module, values

    def _trace(self, key, given):
        """Trace the model for the call ``given`` (parameter name -> value) and make its compiled module."""
        from .compile import CompiledModule
        examples = {k: _example(v) for k, v in given.items()}
        gm = symbolic_trace(self.fn, concrete_args=self.concrete_args, example_inputs=examples)
        module = CompiledModule(gm, **self.owner._options)
        module._params = self.owner._params                    # one resident copy of the weights
        module._weights = self.owner._weights                  # (and what it was uploaded from)
        module._state_lock = self.owner._state_lock            # state-writing calls: one at a time
        module._family = self.owner._family                    # refreshed together when state changes
        module._attribute_root = self.owner._attribute_root    # `self.last = y` sets the user's module
        module._family.append(module)
        module.__name__ = self.owner.__name__
        self.compiled[key] = module
        while len(self.compiled) > self.owner.max_signatures:     # the oldest trace goes (see max_signatures)
            old = self.compiled.pop(next(iter(self.compiled)))
            if old in self.owner._family:
                self.owner._family.remove(old)
        self.owner.graph_module = gm
        return module


def _example(value):
    """A torch example of a call argument (jax arrays are viewed as torch tensors for tracing)."""
    from fxla.runtime.buffers import example_tensor, is_array
    return example_tensor(value) if is_array(value) and not isinstance(value, torch.Tensor) else value
