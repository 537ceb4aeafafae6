"""A compiled signature as a JAX-traceable function (``CompiledModule.as_jax_function``)."""
from __future__ import annotations

import jax
import torch
from torch.utils import _pytree as pytree

from fxla.runtime import to_device
from fxla.runtime.buffers import is_array
from fxla.runtime.executable import numpy_dtype
from fxla.runtime.jax_interop import InteropError, stablehlo_function
from fxla.runtime.sharding import signature_of

from .params import Entry
from .write_back import InputMutationError

__all__ = ["jax_function"]


def jax_function(name: str, entry: Entry, args, device, described: str):
    """The function ``CompiledModule.as_jax_function`` returns for the compiled signature ``entry`` of the
    example inputs ``args`` (described as ``described`` in errors): it takes ``jax.Array``\\ s of the same
    structure, shapes and dtypes and returns ``jax.Array``\\ s; the program is embedded in JAX's with the
    resident parameters as its extra arguments."""
    program = entry.program
    if program.layout.mutates:
        what = (f"tensor input(s) {program.mutated_inputs}" if program.mutated_inputs else
                f"its parameters/buffers {program.mutated_params}" if program.mutated_params else
                f"its attributes {[w.name for w in program.written_attributes]}")
        raise InputMutationError(f"{name} changes {what} in place (e.g. `x += 1`); a JAX function "
                                 f"cannot change its arguments or the module's state\n"
                                 f"fix: compute a new tensor in the model (y = x + 1) and return it")
    params = entry.params
    leaves, spec = pytree.tree_flatten(args)
    in_avals = [jax.core.ShapedArray(tuple(v.shape), to_device(v, device).dtype)
                for v in leaves if is_array(v)] + [jax.core.ShapedArray(p.shape, p.dtype) for p in params]
    out_avals = [jax.core.ShapedArray(shape, numpy_dtype(dt)) for shape, dt in signature_of(entry.stablehlo)[1]]
    call = stablehlo_function(entry.stablehlo, in_avals, out_avals)
    statics = [None if is_array(v) else v for v in leaves]

    def fxla_function(*inputs):
        got, got_spec = pytree.tree_flatten(tuple(inputs))
        if got_spec != spec or [None if is_array(v) else v for v in got] != statics:
            raise InteropError(f"{name}: as_jax_function was built for inputs ({described}) and cannot take a "
                               f"different structure or non-tensor values\nfix: call as_jax_function with new "
                               f"example inputs")
        arrays = [v if not isinstance(v, torch.Tensor) else to_device(v, device) for v in got if is_array(v)]
        values = iter(call(*arrays, *params))
        return pytree.tree_unflatten([next(values) if s is None else s for s in program.output_static],
                                     program.output_spec)

    fxla_function.__name__ = f"fxla_{name}"
    return fxla_function
