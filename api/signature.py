"""How a call of a compiled module maps onto its program: binding arguments, the signature key, input checks.

A *signature* is what a compiled program is specialised to: the pytree structure of the call's arguments, the
shape and dtype of each tensor leaf (a ``jax.Array`` counts as the equivalent torch tensor) and the value of
each other leaf.  :func:`signature_key` computes it; :class:`CallBinding` binds a call's arguments to the traced
program's placeholders and refuses, with a clear error, what a compiled call cannot take.
"""
from __future__ import annotations

from typing import Any, Dict, Sequence, Tuple

import jax
import numpy as np
import torch
from torch.utils import _pytree as pytree

from fxla.base.shown import abbreviate
from fxla.errors import FxlaError
from fxla.frontend.graph_module import check_specialization, describe_input, rebuilt
from fxla.frontend.shape_prop import TensorMeta, propagate_shapes
from fxla.runtime.buffers import is_array, torch_dtype
from fxla.runtime.jax_interop import InteropError

from .pipeline import COMPILING

__all__ = ["SignatureError", "ArgumentError", "CallBinding", "signature_key", "call_leaves", "describe_value"]


class SignatureError(FxlaError):
    """The inputs of a call cannot be compiled (e.g. a rank or dtype the model cannot take)."""


class ArgumentError(FxlaError, TypeError):
    """A call of a compiled module with arguments its forward does not take (too many, a missing one, an unknown
    keyword); a ``TypeError`` too, as Python's own error for such a call is."""


def _leaf_key(leaf):
    if isinstance(leaf, torch.Tensor):
        return ("tensor", tuple(leaf.shape), leaf.dtype)
    if is_array(leaf):                      # a jax.Array: the same key as the equivalent torch tensor
        return ("tensor", tuple(leaf.shape), torch_dtype(leaf))
    return ("static", type(leaf), leaf)


def call_leaves(args) -> Sequence[Any]:
    """The pytree leaves of the call's arguments (the common all-tensor call skips pytree work)."""
    if all(is_array(a) for a in args):
        return args
    return pytree.tree_leaves(args)


def signature_key(args) -> Tuple:
    """The key of a call's signature (see the module docstring); hashable."""
    if all(is_array(a) for a in args):           # fast path: a flat tuple of tensors / jax arrays
        return ("flat", tuple(_leaf_key(a) for a in args))
    leaves, spec = pytree.tree_flatten(args)
    return (str(spec), tuple(_leaf_key(leaf) for leaf in leaves))


def describe_value(value) -> str:
    """``float32[2, 8]`` for a tensor or jax array, containers item by item, ``repr`` otherwise; abbreviated
    (:func:`fxla.base.shown.abbreviate`: a long list shows its first items and how many more)."""
    return abbreviate(value, _array_text)


def _array_text(value):
    if is_array(value):
        dtype = value.dtype if isinstance(value, torch.Tensor) else torch_dtype(value)
        return f"{str(dtype).rpartition('.')[2]}{list(value.shape)}"
    return None


def _meta(value):
    """What a specialisation records of a call argument (jax arrays described like torch tensors)."""
    if is_array(value) and not isinstance(value, torch.Tensor):
        return TensorMeta(tuple(value.shape), torch_dtype(value))
    if isinstance(value, (tuple, list)):
        return rebuilt(value, [_meta(v) for v in value])
    if isinstance(value, dict):
        return {k: _meta(v) for k, v in value.items()}
    return describe_input(value)


def reject_unusable(name: str, leaves, loaded: bool = False) -> None:
    """Raise a clear error for leaves a compiled call (``loaded``: a loaded artifact's) cannot take: JAX tracers,
    meta and sparse tensors, numpy arrays, unhashable non-tensor values (a non-tensor leaf is part of the
    signature, so it must be hashable)."""
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, jax.core.Tracer):        # (a jax.Array too, so checked first)
            raise InteropError(f"{name} was called with JAX tracers (inside jax.jit, jax.vmap, jax.grad "
                               f"or another JAX transformation)\nwhy: a " + (
                                   "loaded artifact" if loaded else "CompiledModule") + " runs its own compiled "
                               f"program on concrete arrays\nfix: " + (
                                   "call it outside the transformation, or compile the model with fxla.compile and "
                                   "use fast.as_jax_function(*example_inputs) inside it" if loaded else
                                   "call fast.as_jax_function(*example_inputs) inside the transformation instead "
                                   "(it embeds the program in JAX's)"))
        if isinstance(leaf, torch.Tensor) and (leaf.is_meta or leaf.layout != torch.strided):
            kind = "meta" if leaf.is_meta else f"{leaf.layout} (sparse)"
            raise SignatureError(
                f"{name} was called with a {kind} tensor (input leaf {i}: "
                f"{str(leaf.dtype).rpartition('.')[2]}{list(leaf.shape)})\n"
                f"why: a compiled program computes on the values of dense (strided) tensors"
                f"{'; a meta tensor has none' if leaf.is_meta else ''}\n"
                f"fix: pass {'a real tensor (e.g. torch.randn(shape))' if leaf.is_meta else 'x.to_dense()'}")
        if is_array(leaf):
            continue
        if isinstance(leaf, np.ndarray):
            raise SignatureError(
                f"{name} was called with a numpy array (input leaf {i}: {leaf.dtype}{list(leaf.shape)})\n"
                f"why: a compiled module takes torch tensors or jax.Arrays; any other value is a constant of "
                f"the trace\nfix: pass torch.from_numpy(a) (zero-copy) or jax.numpy.asarray(a)")
        try:
            hash(leaf)
        except TypeError:
            raise SignatureError(
                f"{name} was called with an unhashable {type(leaf).__name__} (input leaf {i})\n"
                f"why: a non-tensor input is baked into the compiled program and keys its cache, so it must be "
                f"hashable\nfix: pass it as a tensor, a tuple/list/dict of tensors or numbers, or bind it "
                f"with concrete_args=") from None


class CallBinding:
    """The arguments of a traced program: its placeholder nodes (in order), under the module's ``name``."""

    def __init__(self, name: str, placeholders: Sequence[Any]):
        self.name = name
        self.placeholders = list(placeholders)

    @property
    def names(self):
        return [n.target for n in self.placeholders]

    def bind(self, args: Tuple, kwargs: Dict[str, Any]) -> Tuple:
        """Arguments in placeholder order; keywords and placeholder defaults fill the rest."""
        placeholders = self.placeholders
        if not kwargs and len(args) == len(placeholders):
            return args
        listed = ", ".join(self.names)
        if len(args) > len(placeholders):
            raise ArgumentError(f"{self.name}() takes {len(placeholders)} arguments but {len(args)} were given"
                                f"\nfix: call it with the arguments of the model's forward ({listed})")
        bound = list(args)
        kwargs = dict(kwargs)
        for node in placeholders[len(args):]:
            if node.target in kwargs:
                bound.append(kwargs.pop(node.target))
            elif node.args:
                bound.append(node.args[0])
            else:
                raise ArgumentError(f"{self.name}() missing required argument '{node.target}'\nfix: pass it "
                                    f"(the model's forward takes {listed})")
        if kwargs:
            raise ArgumentError(f"{self.name}() got unexpected keyword argument(s) {sorted(kwargs)}\nfix: use "
                                f"the names of the model's forward ({listed})")
        return tuple(bound)

    def describe(self, args, shown: int = 8) -> str:
        """``x=float32[2, 8], ...`` for an error message: the first ``shown`` inputs, then how many more (a
        TorchDynamo graph passes every parameter as an input)."""
        parts = [f"{node.target}={describe_value(value)}" for node, value in zip(self.placeholders, args)]
        if len(parts) > shown:
            parts = parts[:shown - 1] + [f"... {len(parts) - shown + 1} more"]
        return ", ".join(parts)

    def check_specialization(self, spec, args) -> None:
        """A shape-specialised GraphModule (a concrete_shapes trace) only runs on the inputs it was traced for."""
        if spec:     # (a trace with symbolic sizes: its module checked the trace's guards; those dims take any size)
            check_specialization(self.name, dict(spec, inputs=spec.get("symbolic_inputs", spec["inputs"])),
                                 {node.target: _meta(value) for node, value in zip(self.placeholders, args)})

    def check_layouts(self, gm, entry, bound) -> None:
        """Inputs the program views (``x.view(-1)``; ``entry.layout_sensitive``) must be laid out so that eager's
        view works: the trace (``gm``) saw contiguous inputs, so a call with a non-contiguous one runs the graph once on meta tensors of the call's
        strides (per stride pattern, remembered) and raises what eager would (``view size is not compatible``)."""
        if all(not isinstance(v, torch.Tensor) or v.is_contiguous() for v in pytree.tree_leaves(bound)):
            return
        strides = tuple(leaf.stride() for node, value in zip(self.placeholders, bound)
                        if node.target in entry.layout_sensitive
                        for leaf in pytree.tree_leaves(value) if isinstance(leaf, torch.Tensor))
        verdict = entry.layouts.get(strides)
        if verdict is None:
            metas = pytree.tree_map(lambda v: torch.empty_strided(tuple(v.shape), v.stride(), dtype=v.dtype,
                                                                  device="meta")
                                    if isinstance(v, torch.Tensor) else v, bound)
            with COMPILING:
                try:
                    propagate_shapes(gm, *metas)
                    verdict = ""
                except FxlaError as err:
                    verdict = str(err)
            entry.layouts[strides] = verdict
        if verdict:
            raise SignatureError(f"{self.name}: the program cannot run on inputs laid out like these (strides "
                                 f"{list(strides)}), as eager PyTorch cannot:\n{verdict}\nfix: pass x.contiguous() "
                                 f"for non-contiguous inputs, or use .reshape() instead of .view() in the model")
