"""Calling a compiled StableHLO program from JAX code (``jax.jit``, ``jax.vmap``) via a custom primitive.

The primitive ``fxla_call`` carries the StableHLO text and the result avals.  Its lowering parses the text
into the module being built by ``jax.jit`` (``merge_mlir_modules`` renames ``@main``) and emits a
``func.call`` — so XLA sees and optimises the fxla program together with the surrounding JAX code, and no data
goes through the host.  Eager calls run through ``jax.jit`` of the primitive.

* ``jax.jit``: works (also nested, and with other JAX ops around it).
* ``jax.vmap``: works as a *loop* (``jax.lax.map`` over the batch); the program is not re-vectorised.
* ``jax.grad`` / ``jax.vjp``: the primitive itself has no derivative rule (:class:`InteropError`): JAX cannot
  differentiate StableHLO it did not produce.  ``CompiledModule.as_jax_function`` wraps it in a
  ``jax.custom_vjp`` whose backward is fxla's own compiled backward (fxla.interop), differentiable again;
  forward mode (``jax.jvp``) is not (JAX refuses it for a custom_vjp function).
"""
from __future__ import annotations

from typing import Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import ad, batching
from jax.interpreters import mlir as jax_mlir

from fxla.base.errors import FxlaError


class InteropError(FxlaError):
    """A JAX transformation or input that the fxla primitive does not support."""


fxla_call_p = Primitive("fxla_call")
fxla_call_p.multiple_results = True


def _abstract_eval(*avals, text, out_avals, in_avals):
    got = tuple((tuple(a.shape), np.dtype(a.dtype)) for a in avals)
    want = tuple((tuple(a.shape), np.dtype(a.dtype)) for a in in_avals)
    if got != want:
        raise InteropError(f"the fxla function was compiled for inputs {_fmt(want)} but got {_fmt(got)}\n"
                           f"fix: call as_jax_function again with example inputs of these shapes/dtypes")
    return out_avals


def _fmt(sig) -> str:
    return "(" + ", ".join(f"{d}{list(s)}" for s, d in sig) + ")"


def _lowering(ctx, *args, text, out_avals, in_avals):
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import func

    module_ctx = ctx.module_context
    sub = ir.Module.parse(text, context=module_ctx.context)
    name = jax_mlir.merge_mlir_modules(module_ctx.module, "fxla_main", sub, dst_symtab=module_ctx.symbol_table)
    types = [jax_mlir.aval_to_ir_type(module_ctx, a) for a in out_avals]
    return list(func.CallOp(types, ir.FlatSymbolRefAttr.get(name), list(args)).results)


def _impl(*args, **params):
    return jax.jit(lambda *xs: fxla_call_p.bind(*xs, **params))(*args)


def _batch(args, dims, *, text, out_avals, in_avals):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    mapped = [i for i, d in enumerate(dims) if d is not None]
    moved = tuple(jnp.moveaxis(args[i], dims[i], 0) for i in mapped)

    def one(xs):
        full = list(args)
        for i, x in zip(mapped, xs):
            full[i] = x
        return tuple(fxla_call_p.bind(*full, text=text, out_avals=out_avals, in_avals=in_avals))

    outs = jax.lax.map(one, moved)
    assert all(o.shape[0] == size for o in outs)
    return list(outs), [0] * len(outs)


def _no_jvp(primals, tangents, **params):
    raise InteropError("cannot differentiate a bare fxla program with JAX\n"
                       "why: JAX cannot differentiate StableHLO it did not produce; the functions "
                       "CompiledModule.as_jax_function makes carry fxla's own backward (reverse mode, any order)\n"
                       "fix: call the module's as_jax_function, differentiate in torch, or write the function in "
                       "JAX")


fxla_call_p.def_abstract_eval(_abstract_eval)
fxla_call_p.def_impl(_impl)
jax_mlir.register_lowering(fxla_call_p, _lowering)
batching.primitive_batchers[fxla_call_p] = _batch
ad.primitive_jvps[fxla_call_p] = _no_jvp


def stablehlo_function(text: str, in_avals: Sequence[jax.core.ShapedArray],
                       out_avals: Sequence[jax.core.ShapedArray], *, check_x64: bool = True):
    """A JAX-traceable function ``f(*args) -> list of arrays`` running the StableHLO ``@main`` of ``text``.

    ``check_x64``: refuse 64-bit values when JAX runs with x64 off (JAX arrays could not carry them).  The
    runtime passes ``False``: it traces and compiles under ``jax.enable_x64(True)`` itself.
    """
    in_avals: Tuple = tuple(in_avals)
    out_avals: Tuple = tuple(out_avals)
    if check_x64 and not jax.config.jax_enable_x64:
        wide = [a for a in in_avals + out_avals if np.dtype(a.dtype).itemsize == 8]
        if wide:
            raise InteropError(f"the program uses 64-bit values ({wide[0].dtype}) but JAX runs with x64 off, so "
                               f"JAX arrays cannot carry them\nfix: use 32-bit inputs/outputs, or enable "
                               f"jax_enable_x64 in this process")

    def call(*args):
        return fxla_call_p.bind(*args, text=text, out_avals=out_avals, in_avals=in_avals)

    return call
