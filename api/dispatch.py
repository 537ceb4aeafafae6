"""The per-signature call plan of a compiled module: what a call does once its signature has been compiled.

A call plan (:func:`call_plan`) is built once per input signature (after the first, general call has lowered, compiled
and checked it) and keyed by :func:`fast_key` — the type, shape and dtype of each positional argument, which
a call computes in about a microsecond.  It does only the unavoidable work:

* torch tensors → device buffers (zero-copy on the CPU), ``jax.Array``\\ s passed through when already on
  the device;
* the resident parameters appended;
* the executable called through JAX's C++ dispatch (:class:`fxla.runtime.Executable`);
* results → zero-copy torch views (or left as ``jax.Array``\\ s with ``output="jax"``), then put back into
  the output structure (a single tensor and flat tuples skip pytree work).

Calls with keyword arguments, non-tensor arguments, defaults or a sharded program take the general path.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

import jax
import torch
from torch.utils import _pytree as pytree

from fxla.runtime.buffers import cpu_view, from_device, tensor_to_device, to_device


def fast_key(args: Sequence[Any]) -> Optional[Tuple]:
    """The plan key of a positional call, or ``None`` when an argument is not array-like."""
    try:
        return tuple([(type(a), a.shape, a.dtype) for a in args])
    except AttributeError:
        return None


def _builder(output_spec, output_static) -> Callable[[List[Any]], Any]:
    """A function from the list of converted results to the call's return value."""
    if all(s is None for s in output_static):
        if output_spec.is_leaf():
            return lambda values: values[0]
        if output_spec.type is tuple and all(c.is_leaf() for c in output_spec.children()):
            return tuple

    def build(values):
        it = iter(values)
        return pytree.tree_unflatten([next(it) if s is None else s for s in output_static], output_spec)
    return build


def call_plan(executable, args: Sequence[Any], params: List[jax.Array], output: str, output_spec,
              output_static) -> Callable[[Sequence[Any]], Any]:
    """The call path of one compiled single-device signature (see the module docstring): a function of the
    call's positional arguments (``args`` is the call that compiled it)."""
    device = executable.device
    run = executable.runner               # JAX's C++ dispatch of the compiled program (a jax.stages.Compiled)
    # Once called, a Compiled holds its C++ call object in ``_call`` (jax 0.10.2; semi-public, covered by
    # tests/test_dispatch.py): calling that directly skips a Python frame per call.
    run = getattr(run, "_call", None) or run
    build = _builder(output_spec, output_static)
    params = tuple(params)
    jax_only = all(isinstance(a, jax.Array) for a in args)

    def place(values):                    # the general placement: torch -> device, jax arrays moved if needed
        return [tensor_to_device(a, device) if isinstance(a, torch.Tensor) else to_device(a, device)
                for a in values]

    if output == "torch":
        convert = cpu_view if device.platform == "cpu" else from_device   # both wait for the result

        def finish(outs):
            return build([convert(o) for o in outs])
    elif jax_only:
        finish = build
    else:                                 # the caller may change its tensors once the call returns
        def finish(outs):
            return build(jax.block_until_ready(outs))

    if jax_only:
        def call(args):
            try:
                outs = run(*args, *params)
            except ValueError:            # an array on another device than the program's: move it
                outs = run(*place(args), *params)
            return finish(outs)
    else:
        def call(args):
            return finish(run(*place(args), *params))
    return call
