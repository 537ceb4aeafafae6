"""A compiled signature as a JAX-traceable function (``CompiledModule.as_jax_function``)."""
from __future__ import annotations

import functools

import jax
import numpy as np
import torch
from torch.utils import _pytree as pytree

from fxla.lowering.autodiff import differentiable_args, differentiable_results
from fxla.lowering.to_fxla import SizeOutput, retyped
from fxla.lowering.value_checks import raise_failed
from fxla.runtime import to_device
from fxla.runtime.buffers import is_array, owned_copy
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
                                 f"fix: compute a new tensor in the model (y = x + 1) and return it" + (
                                     "; for batch norm's running statistics: model.eval(), or "
                                     "track_running_stats=False" if any("running_" in n for n in
                                                                        program.mutated_params) else ""))
    # (the weights of now, in buffers of their own: a parameter's buffer may be a view of torch's memory, which
    # the caller changes in place, and a JAX array never changes)
    params = [jax.device_put(p, p.sharding, may_alias=False) for p in entry.params]
    leaves, spec = pytree.tree_flatten(args)
    in_avals = [jax.core.ShapedArray(tuple(v.shape), to_device(v, device).dtype)
                for v in leaves if is_array(v)] + [jax.core.ShapedArray(p.shape, p.dtype) for p in params]
    out_avals = [jax.core.ShapedArray(shape, numpy_dtype(dt)) for shape, dt in signature_of(entry.stablehlo)[1]]
    call = stablehlo_function(entry.stablehlo, in_avals, out_avals)
    statics = [None if is_array(v) else v for v in leaves]
    # (a JAX function's outputs are JAX pytrees: jax.jit and jax.vmap take a tuple of numbers, not a torch.Size)
    out_spec = retyped(program.output_spec, SizeOutput, tuple)
    run = _differentiable(call, in_avals[:len(in_avals) - len(params)], params, gradient)
    taken = [(tuple(a.shape), np.dtype(a.dtype)) for a in in_avals[:len(in_avals) - len(params)]]

    def fxla_function(*inputs):
        got, got_spec = pytree.tree_flatten(_ordered_like(tuple(inputs), tuple(args)))
        got = [jax.numpy.asarray(v) if isinstance(v, np.ndarray) else v for v in got]   # (as jax.jit takes them)
        if got_spec != spec or [None if is_array(v) else v for v in got] != statics:
            raise InteropError(f"{name}: as_jax_function was built for inputs ({described}) and cannot take a "
                               f"different structure or non-tensor values\nfix: call as_jax_function with new "
                               f"example inputs")
        arrays = [v if not isinstance(v, torch.Tensor) else owned_copy(v, device)   # (a torch tensor: copied
                  for v in got if is_array(v)]     # now, as the caller may change it once the call returns)
        given = [(tuple(a.shape), np.dtype(a.dtype)) for a in arrays]
        if given != taken:
            raise InteropError(f"{name}: as_jax_function was built for inputs ({described}), and got "
                               f"{', '.join(f'{d}{list(shape)}' for shape, d in given)}\nwhy: the function is one "
                               f"compiled signature (also for a module compiled with dynamic=: the example's sizes)"
                               f"\nfix: call as_jax_function again with example inputs of these shapes/dtypes")
        results = run(*arrays)
        if program.value_checks:        # (the check code, read on the host: raises there, fxla.value_checks)
            jax.debug.callback(functools.partial(raise_failed, program.value_checks, name=name),
                               results[program.layout.outputs], ordered=True)
        values = iter(results)
        return pytree.tree_unflatten([next(values) if s is None else s for s in program.output_static], out_spec)

    fxla_function.__name__ = f"fxla_{name}"
    return fxla_function


def _ordered_like(value, example):
    """``value`` with each dict's keys in the order of ``example``'s (JAX's transformations rebuild a dict with its
    keys sorted; the program takes the example's leaves in its order)."""
    if isinstance(value, dict) and isinstance(example, dict) and value.keys() == example.keys():
        return type(value)((k, _ordered_like(value[k], example[k])) for k in example)
    if isinstance(value, (tuple, list)) and isinstance(example, (tuple, list)) and len(value) == len(example) \
            and not hasattr(value, "_fields"):
        return type(value)(_ordered_like(v, e) for v, e in zip(value, example))
    return value


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
        _check_wide_residuals(parts.forward, diff.residuals)
        outs = _program_function(parts, diff.forward, parts.forward,
                                 dict(zip(diff.forward.param_names, parts.forward_params)))(*values[:n_in])
        n_res = diff.residuals
        return outs[:len(outs) - n_res], (outs[len(outs) - n_res:], values[:n_in])

    def backward(saved, cts):
        parts = gradient()
        diff = parts.diff
        residuals, arrays = saved
        args = list(residuals) + [cts[i] for i in diff.cotangents] + [arrays[k] for k in diff.inputs]
        grads = iter(_program_function(parts, diff.backward, parts.backward,
                                       dict(zip(diff.backward.param_names, parts.backward_params)))(*args))
        wrt = set(diff.wrt)
        result = [next(grads) if k in wrt else np.zeros(a.shape, dtype=jax.dtypes.float0)
                  for k, a in enumerate(in_avals)]
        return tuple(result)

    run.defvjp(forward, backward)
    return run


def _check_wide_residuals(text: str, n_residuals: int) -> None:
    """With JAX's x64 off, refuse a forward whose 64-bit results are only the values its backward saves (int64
    indices of max, sort, gather, cross_entropy's targets): the caller's own inputs and outputs are fine, so the
    general 64-bit refusal's fix (32-bit inputs) would not help."""
    if jax.config.jax_enable_x64 or not n_residuals:
        return
    wide = _wide_residual(text, n_residuals)
    if wide is not None:
        raise InteropError(
            f"jax.grad of this program needs 64-bit values: its backward saves {wide} values (the indices "
            f"torch's max, sort, gather, indexing or cross_entropy pick), and JAX runs with x64 off, so JAX "
            f"arrays cannot carry them from the forward to the backward\nfix: enable x64 in this process "
            f"(jax.config.update('jax_enable_x64', True)), or take the gradient through torch "
            f"(fxla.compile(model) and loss.backward())")


@functools.lru_cache(maxsize=64)
def _wide_residual(text: str, n_residuals: int):
    """The name of the first 64-bit type among the last ``n_residuals`` results of ``text``'s ``@main`` when the
    others have none, else None (parsed once per program: the forward runs at every call)."""
    outs = signature_of(text)[1]
    width = [np.dtype(numpy_dtype(dt)) for _, dt in outs]
    wide = [d for d in width[len(outs) - n_residuals:] if d.itemsize == 8]
    return wide[0].name if wide and all(d.itemsize < 8 for d in width[:len(outs) - n_residuals]) else None


def _program_function(parts, program, text: str, params):
    """``program`` (an fxla program; ``text``: its StableHLO) as a function of its plain arguments for JAX, its
    parameters the constants ``params`` (by name): a ``jax.custom_vjp`` whose backward runs fxla's derivative of
    ``program`` (``parts.derivative``: it recomputes, reading the arguments), itself such a function, so JAX can
    differentiate it again -- ``jax.grad`` of ``jax.grad`` (made once per program, kept in ``parts``)."""
    found = parts.functions.get(id(program))
    if found is not None:
        return found[1]
    ins, outs = signature_of(text)
    in_avals = [jax.core.ShapedArray(shape, numpy_dtype(dt)) for shape, dt in ins]
    call = stablehlo_function(text, in_avals, [jax.core.ShapedArray(shape, numpy_dtype(dt)) for shape, dt in outs])
    consts = [params[n] for n in program.param_names]
    n_plain = len(in_avals) - len(consts)

    def plain(*args):
        return call(*args, *consts)
    run = jax.custom_vjp(plain)

    def forward(*args):     # (through ``run`` itself: a forward JAX differentiates again, a third order)
        return run(*args), args

    def backward(args, cts):
        wrt = [k for k in differentiable_args(program) if k < n_plain]
        cotangents = differentiable_results(program)
        diff, derivative_text = parts.derivative(program, wrt, cotangents)
        derivative = _program_function(parts, diff.backward, derivative_text, params)
        grads = iter(derivative(*[cts[i] for i in cotangents], *[args[k] for k in diff.inputs]))
        chosen = set(wrt)
        return tuple(next(grads) if k in chosen else np.zeros(in_avals[k].shape, dtype=jax.dtypes.float0)
                     for k in range(n_plain))

    run.defvjp(forward, backward)
    parts.functions[id(program)] = (program, run)
    return run
