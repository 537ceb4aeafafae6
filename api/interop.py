"""A compiled signature as a JAX-traceable function (``CompiledModule.as_jax_function``)."""
from __future__ import annotations

import functools

import jax
import numpy as np
import torch
from torch.utils import _pytree as pytree

from fxla.lowering.value_checks import raise_failed
from fxla.runtime import to_device
from fxla.runtime.buffers import is_array
from fxla.runtime.executable import numpy_dtype
from fxla.runtime.jax_interop import InteropError, stablehlo_function
from fxla.runtime.sharding import signature_of

from .params import Entry
from .write_back import InputMutationError

__all__ = ["jax_function"]


def jax_function(name: str, entry: Entry, args, device, described: str, gradient=None):
    """The function ``CompiledModule.as_jax_function`` returns for the compiled signature ``entry`` of the
    example inputs ``args`` (described as ``described`` in errors): it takes ``jax.Array``\\ s of the same
    structure, shapes and dtypes and returns ``jax.Array``\\ s; the program is embedded in JAX's with the
    resident parameters as its extra arguments.  ``gradient()`` gives the signature's
    :class:`fxla.autograd.GradientTexts` (asked for the first time ``jax.grad``/``jax.vjp`` traces the function):
    the function is a ``jax.custom_vjp`` whose backward is fxla's own compiled backward."""
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
    run = _differentiable(call, in_avals[:len(in_avals) - len(params)], params, gradient)

    def fxla_function(*inputs):
        got, got_spec = pytree.tree_flatten(tuple(inputs))
        if got_spec != spec or [None if is_array(v) else v for v in got] != statics:
            raise InteropError(f"{name}: as_jax_function was built for inputs ({described}) and cannot take a "
                               f"different structure or non-tensor values\nfix: call as_jax_function with new "
                               f"example inputs")
        arrays = [v if not isinstance(v, torch.Tensor) else to_device(v, device) for v in got if is_array(v)]
        results = run(*arrays)
        if program.value_checks:        # (the check code, read on the host: raises there, fxla.value_checks)
            jax.debug.callback(functools.partial(raise_failed, program.value_checks, name=name),
                               results[program.layout.outputs], ordered=True)
        values = iter(results)
        return pytree.tree_unflatten([next(values) if s is None else s for s in program.output_static],
                                     program.output_spec)

    fxla_function.__name__ = f"fxla_{name}"
    return fxla_function


def _differentiable(call, in_avals, params, gradient):
    """``call(*arrays, *params)`` as a function of the arrays; with ``gradient``, a ``jax.custom_vjp`` (the
    parameters are constants) whose forward runs fxla's forward that saves residuals and whose backward runs
    fxla's backward program."""
    n_in = len(in_avals)

    def plain(*values):
        return call(*values, *params)
    if gradient is None:
        return plain
    run = jax.custom_vjp(plain)

    def forward(*values):
        parts = gradient()
        diff = parts.diff
        fwd_avals = list(in_avals) + [jax.core.ShapedArray(p.shape, p.dtype) for p in parts.forward_params]
        outs = stablehlo_function(parts.forward, fwd_avals, _avals_of(parts.forward))(*values[:n_in],
                                                                                      *parts.forward_params)
        n_res = diff.residuals
        return outs[:len(outs) - n_res], (outs[len(outs) - n_res:], values[:n_in])

    def backward(saved, cts):
        parts = gradient()
        diff = parts.diff
        residuals, arrays = saved
        args = list(residuals) + [cts[i] for i in diff.cotangents] + [arrays[k] for k in diff.inputs] + \
            list(parts.backward_params)
        avals = [jax.core.ShapedArray(a.shape, a.dtype) for a in args]
        grads = iter(stablehlo_function(parts.backward, avals, _avals_of(parts.backward))(*args))
        wrt = set(diff.wrt)
        result = [next(grads) if k in wrt else np.zeros(a.shape, dtype=jax.dtypes.float0)
                  for k, a in enumerate(in_avals)]
        return tuple(result)

    run.defvjp(forward, backward)
    return run


def _avals_of(text: str):
    return [jax.core.ShapedArray(shape, numpy_dtype(dt)) for shape, dt in signature_of(text)[1]]
