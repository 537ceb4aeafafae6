"""The per-signature call plan of a compiled module: what a call does once its signature has been compiled.

A call plan (:func:`call_plan`) is built once per input signature (after the first, general call has lowered, compiled
and checked it) and keyed by :func:`fast_key` — the type, shape and dtype of each positional argument, which
a call computes in about a microsecond.  It does only the unavoidable work:

* torch tensors → their numpy views, which JAX's C++ dispatch places (64-bit dtypes: placed by fxla,
  zero-copy on the CPU), ``jax.Array``\\ s passed through when already on the device;
* the resident parameters passed first (the executable's order, :attr:`fxla.runtime.Executable.runner`);
* the executable called through JAX's C++ dispatch (:class:`fxla.runtime.Executable`);
* results → zero-copy torch views (or left as ``jax.Array``\\ s with ``output="jax"``), then put back into
  the output structure (a single tensor and flat tuples skip pytree work).

A signature whose every call must be checked against its inputs — a program that writes its inputs back (a
static KV cache), views an input that must be contiguous, reads input values as indices, or draws random bits —
gets a *checked plan* (:func:`checked_plan`) instead: the general call's own run, with its checks, but without
binding the arguments, walking them as a pytree or looking up their signature.

Calls with keyword arguments, non-tensor arguments, defaults or a sharded program take the general path.
"""
from __future__ import annotations

import operator
from typing import Any, Callable, List, Optional, Sequence, Tuple

import jax
import torch
from torch.utils import _pytree as pytree

from fxla.base import jax_private
from fxla.runtime._fastcall import DirectCall, HostCall
from fxla.runtime.buffers import host_array, host_input, to_device, viewer

from .gradients import check_torch_call
from .outputs import remake


def fast_key(args: Sequence[Any]) -> Optional[Tuple]:
    """The plan key of a positional call, or ``None`` when an argument is not array-like."""
    try:
        if len(args) == 1:                # the common case, without a comprehension's frame (~0.2 µs)
            a = args[0]
            return (type(a), a.shape, a.dtype)
        return tuple([(type(a), a.shape, a.dtype) for a in args])
    except AttributeError:
        return None


_first = operator.itemgetter(0)


def _builder(output_spec, output_static, remade=()) -> Callable[[List[Any]], Any]:
    """A function from the list of converted results to the call's return value (``remade``: outputs made again
    from other outputs, :func:`fxla.outputs.remake`)."""
    if all(s is None for s in output_static) and not remade:
        if output_spec.is_leaf():
            return _first
        if output_spec.type is tuple and all(c.is_leaf() for c in output_spec.children()):
            return tuple

    def build(values):
        it = iter(values)
        leaves = [next(it) if s is None else s for s in output_static]
        if remade:
            remake(remade, leaves, ())
        return pytree.tree_unflatten(leaves, output_spec)
    return build


def call_plan(name: str, executable, args: Sequence[Any], params: List[jax.Array], output: str, output_spec,
              output_static, outs: Sequence[jax.Array], guard, grad_call=None,
              remade=()) -> Callable[[Sequence[Any]], Any]:
    """The call path of one compiled single-device signature of module ``name`` (see the module docstring): a
    function of the call's positional arguments (``args`` is the call that compiled it, ``outs`` its device
    results; ``guard``: the :class:`fxla.gradients.GradientGuard` its torch outputs pass through).  A call with
    torch tensors in under ``torch.autocast`` raises :class:`fxla.AutocastError` (:mod:`fxla.autocast`).

    It carries two shortcuts that ``CompiledModule``'s call (:class:`fxla.runtime._fastcall.Dispatch`, in C)
    takes without entering the plan.  Each is a typed record, a tuple subclass with named fields whose
    constructor checks its shape once (``params`` a tuple, ``views`` a tuple of ``(np.dtype, shape tuple)`` pairs
    or ``None``, ``grad`` a bool, ``run`` and ``build`` callable), so the C call trusts it on every call:

    * ``plan.direct`` is a :class:`fxla.runtime._fastcall.DirectCall` ``(run, params, build)`` when the signature is jax arrays in and out on one device
      (then ``build(run(*params, *args))`` is the whole call; a ``ValueError`` — an array on another device —
      falls back to the plan), else ``None``;
    * ``plan.host`` is a :class:`fxla.runtime._fastcall.HostCall` ``(run, params, views, build, grad)`` when it is torch tensors (of at most 32 bits) in and
      torch tensors out that have a zero-copy view each (:func:`fxla.runtime.buffers.viewer`; ``views``: their
      ``(numpy dtype, shape)``): the call is ``outs = run(*params, *[x.numpy() for x in args])``, then per result
      ``out.block_until_ready()`` and the writable view ``torch.from_numpy(host_view(out, dtype, shape))``, then
      ``build`` of those (a ``RuntimeError``/``TypeError`` from ``x.numpy()`` — requires_grad, another
      device — or a ``ValueError`` from ``run`` falls back to the plan; so does a call under autocast, and one
      with torch's grad mode on when ``grad``, which says the program reads a float parameter, which may require
      grad: the plan then asks ``grad_call`` first and passes its outputs through the guard); with ``output="jax"`` it is
      ``HostCall(run, params, None, build, False)`` for torch tensors (of at most 32 bits) in: the results are waited
      for and built as they are (jax arrays); else ``None``.

    ``plan.executable`` is the :class:`fxla.runtime.Executable` it runs.  ``grad_call(args)`` runs a call that
    records gradients (:mod:`fxla.autograd`; it returns ``None`` when none is needed): a torch-output plan asks it
    first whenever grad mode is on.  ``remade``: outputs made again from other outputs after the call (duplicates,
    ``v[:, :2]`` of an output ``v``: :func:`fxla.outputs.remake`)."""
    device = executable.device
    # JAX's C++ dispatch of the compiled program (a jax.stages.Compiled): once called, its C++ call object,
    # which skips a Python frame per call (fxla.base.jax_private.compiled_call; covered by tests/test_dispatch.py)
    run = jax_private.compiled_call(executable.runner)
    build = _builder(output_spec, output_static, remade)
    params = tuple(params)
    jax_only = all(isinstance(a, jax.Array) for a in args)
    # per argument: what the C++ dispatch is handed (torch tensors: see fxla.runtime.host_input)
    inputs = [host_input(a.dtype, device) if isinstance(a, torch.Tensor) else None for a in args]

    def place(values):                    # jax arrays on another device: moved (the general placement)
        return [to_device(a, device) if isinstance(a, jax.Array) else a for a in values]

    host = None
    if output == "torch":
        converters = [viewer(o) for o in outs]    # per result: its zero-copy view (they wait for the results)

        def finish(outs, args):
            return build(guard(args, [convert(o) for convert, o in zip(converters, outs)]))
        dtypes = [getattr(convert, "dtype", None) for convert in converters]
        if all(i is host_array for i in inputs) and all(d is not None for d in dtypes):
            host = HostCall(run, params, tuple((d, tuple(o.shape)) for d, o in zip(dtypes, outs)), build,
                            guard.params_may_require_grad())
    elif jax_only:
        def finish(outs, args):
            return build(outs)
    else:                                 # the caller may change its tensors once the call returns
        def finish(outs, args):
            for o in outs:
                o.block_until_ready()
            return build(outs)
        if all(i is host_array for i in inputs):
            host = HostCall(run, params, None, build, False)

    def general(values):                  # what a ValueError from ``run`` falls back to (see below)
        return executable([*place(values), *params])

    # ``run`` raises ValueError for an array on another device than the program's, and under jax.disable_jit()
    # (JAX's AOT call refuses to run then): the Executable's own call places the arrays and runs it anyway.
    if jax_only and output == "jax":      # device arrays in and out: the caller runs ``call.direct`` itself
        def call(args):
            try:
                return build(run(*params, *args))
            except ValueError:
                return build(general(args))
        direct = DirectCall(run, params, build)
    else:
        direct = None
        if jax_only:
            def call(args):
                try:
                    outs = run(*params, *args)
                except ValueError:
                    outs = general(args)
                return finish(outs, args)
        elif len(inputs) == 1:            # one torch tensor (no comprehension's frame)
            convert0 = inputs[0]

            def call(args):
                check_torch_call(name, args)
                value = convert0(args[0])
                try:
                    outs = run(*params, value)
                except ValueError:
                    outs = general([value])
                return finish(outs, args)
        else:
            def call(args):
                check_torch_call(name, args)
                values = [convert(a) if convert else a for convert, a in zip(inputs, args)]
                try:
                    outs = run(*params, *values)
                except ValueError:
                    outs = general(values)
                return finish(outs, args)
    if grad_call is not None and output == "torch":
        forward_only = call

        def call(args):
            if torch.is_grad_enabled():
                value = grad_call(args)
                if value is not None:
                    return value
            return forward_only(args)
    call.direct, call.host, call.executable = direct, host, executable
    return call


def checked_plan(name: str, executable, run: Callable, args: Sequence[Any], sensitive: Sequence[int], lock,
                 general: Callable) -> Callable[[Sequence[Any]], Any]:
    """The call path of a compiled single-device signature whose calls are checked against their inputs (see the
    module docstring), which runs ``executable``.  ``run(args)`` is the general call's run of the signature's entry
    (:meth:`fxla.compile.CompiledModule._run`: index checks, writable inputs, gradients, the write-back; under
    ``lock`` when the program writes the module's state or its inputs, else ``None``); ``args`` is the call that
    compiled it; ``sensitive``: the positions of the inputs the program views (they must be contiguous, as the
    trace saw them).  A call with a meta or sparse tensor, or a non-contiguous input at a sensitive position, is
    handed to ``general`` (the general call: it refuses the former and checks the layout of the latter); a call
    with torch tensors under ``torch.autocast`` raises :class:`fxla.AutocastError`."""
    tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    strided = torch.strided

    def usable(args) -> bool:
        for i in tensors:
            t = args[i]
            if t.is_meta or t.layout is not strided:
                return False
        return all(args[i].is_contiguous() for i in sensitive)

    def call(args):
        if not usable(args):
            return general(*args)
        if tensors:
            check_torch_call(name, args)
        if lock is None:
            return run(args)
        with lock:
            return run(args)
    call.direct, call.host, call.executable = None, None, executable
    return call
