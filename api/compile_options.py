"""``fxla.compile``'s options checked before anything is traced, and tensors refused for having no data.

:func:`check_options` raises :class:`OptionError` (or ``ShardingError``) for an option fxla does not support, with
what to pass instead; :func:`refuse_meta_tensors` for tensors on the meta device (a shape, no data).  The
torch.compile backend and ``fxla.explain`` reuse them.
"""
from __future__ import annotations

import itertools

import torch

from fxla.base.shown import abbreviate
from fxla.errors import FxlaError
from fxla.frontend.symbolic import Dim
from fxla.runtime.multihost import spans_processes
from fxla.runtime.sharding import ShardingError, as_mesh

from .symbolic import DynamicSpec

__all__ = ["OptionError", "MAX_SIGNATURES", "META_WHY", "META_FIX", "refuse_meta_tensors", "check_options",
           "option_error", "not_callable"]


class OptionError(FxlaError):
    """An ``fxla.compile`` argument or option with a value fxla does not support (e.g. something that is not an
    ``nn.Module`` or function to compile)."""


#: how many input signatures a module keeps compiled by default (``fxla.compile(max_signatures=)``)
MAX_SIGNATURES = 64


#: why a tensor on the meta device is refused (:func:`refuse_meta_tensors`)
META_WHY = "a meta tensor has a shape but no data, and a compiled program computes with its values"
#: how to give it data
META_FIX = ("materialize it first: a module with module.to_empty(device='cpu') then load its weights "
            "(module.load_state_dict(...)); a tensor with torch.empty_like(t, device='cpu') filled with its "
            "values; or create it without device='meta'")


def refuse_meta_tensors(named, what: str, *, where=None, why: str = META_WHY, fix: str = META_FIX) -> None:
    """Raise :class:`OptionError` ``"<what> on the meta device: [names]"`` when any of ``named`` (``(name,
    value)`` pairs) is a tensor on the meta device; the names are abbreviated (:func:`fxla.base.shown.abbreviate`:
    the first few and how many more).  ``where(name)`` gives the location of the first such tensor's use."""
    meta = [name for name, value in named if getattr(value, "is_meta", False) is True]
    if meta:
        names = abbreviate(meta, lambda v: v if isinstance(v, str) else None)
        raise OptionError(f"{what} on the meta device: {names}", where=where(meta[0]) if where else None, why=why,
                          fix=fix)


def _check_materialized(fn) -> None:
    """A model whose parameters or buffers are on the meta device (no data) cannot run compiled."""
    if isinstance(fn, torch.nn.Module):
        refuse_meta_tensors(itertools.chain(fn.named_parameters(), fn.named_buffers()),
                            f"cannot compile a {type(fn).__name__} whose parameters/buffers are")


def option_error(what: str, fix: str) -> OptionError:
    return OptionError(what, why="dynamic= marks dims of the tensor inputs as symbolic", fix=fix)


def check_options(fn, output, dynamic, max_signatures, mesh, shard, device, concrete_shapes, tracer) -> None:
    if not callable(fn):
        raise OptionError(not_callable(fn))
    if concrete_shapes and tracer is not None:
        raise OptionError("concrete_shapes=True traces with fxla's own concrete-shape Tracer; a custom "
                          "tracer= cannot be combined with it\nfix: drop one of the two options")
    if concrete_shapes and isinstance(dynamic, dict) and any(isinstance(d, Dim) for d in dynamic.values()):
        ints = sorted(k for k, d in dynamic.items() if isinstance(d, Dim))
        raise option_error(f"dynamic= marks the int argument(s) {ints} as a Dim's size, but concrete_shapes=True "
                            f"makes a Python int a constant of its trace",
                            "mark the tensor dims whose size it is, and drop the int's entry")
    _check_materialized(fn)
    if output not in ("torch", "jax"):
        raise OptionError(f"output={abbreviate(output)} is not supported\nfix: pass output='torch' (default) or "
                          f"output='jax'")
    if not (dynamic is None or isinstance(dynamic, (bool, dict, DynamicSpec))):
        raise OptionError(f"dynamic={abbreviate(dynamic)} is not supported\nfix: pass dynamic=True (every dim of "
                          f"every tensor input symbolic), {{argument name: {{dim: fxla.Dim(name)}}}}, or False")
    if not isinstance(max_signatures, int) or isinstance(max_signatures, bool) or max_signatures < 1:
        raise OptionError(f"max_signatures={abbreviate(max_signatures)}: it must be a positive int\nfix: pass how many "
                          f"input signatures to keep compiled (default {MAX_SIGNATURES})")
    if shard and mesh is None:
        raise ShardingError("shard= was given without mesh=\nfix: pass mesh=fxla.runtime.Mesh({'x': 4}) "
                            "(or a jax.sharding.Mesh) as well")
    if mesh is not None and device is not None:
        raise ShardingError("pass either device= or mesh=, not both\nfix: a sharded program runs on every "
                            "device of its mesh; drop device=")
    if concrete_shapes and mesh is not None and spans_processes(as_mesh(mesh)):
        raise ShardingError("concrete_shapes=True cannot be combined with a mesh over several processes\n"
                            "why: a concrete-shapes trace reads the data of the call's inputs, and each process "
                            "holds only its part of them\nfix: drop concrete_shapes=True, or compile per process "
                            "(a mesh of this process's devices)")


def not_callable(fn, api: str = "fxla.compile", usage: str = "fast = fxla.compile(model); fast(*inputs)") -> str:
    """The message of the :class:`OptionError` for ``api`` (``"fxla.compile"``, ``"fxla.explain"``) given ``fn``,
    which is not callable; ``usage``: the right call, in the fix (after unpacking a ``(model, inputs)`` pair)."""
    kind = type(fn).__name__
    what = f"{'an' if kind[0] in 'aeiouAEIOU' else 'a'} {kind}" + (
        f" of {len(fn)} item{'s' * (len(fn) != 1)}" if isinstance(fn, (tuple, list)) else "")
    fix = f"pass the model or function itself: {usage}"
    if isinstance(fn, (tuple, list)) and fn and callable(fn[0]):
        fix = f"its first item is a {type(fn[0]).__name__}: unpack first (model, inputs = ...; {usage})"
    return (f"{api} expects an nn.Module or a function to {api.rpartition('.')[2]}, got {what}\n"
            f"why: fxla traces what it is given by calling it with proxies, so it must be callable\nfix: {fix}")
