"""What a call does with a program's results, for a compiled module and a loaded artifact alike.

A program returns its results in one order (:class:`fxla.lowering.ResultLayout`): the tensor outputs, the new
values of the inputs it changes in place, of the parameters/buffers it changes, and the tensor leaves of the
attributes forward assigns.  :class:`ResultHandler` splits them, writes changed inputs back into the caller's
tensors (:func:`fxla.write_back.write_back`), and builds the call's return value: each tensor output converted
(a torch tensor, or the ``jax.Array`` itself with ``output="jax"``), put together with the static outputs into
the output structure, with autograd's behaviour guarded (:mod:`fxla.gradients`).  An output eager returns as a
view of an input or of another output (``return x``, ``return v, v[:, :2]``) is made again from that tensor
(:mod:`fxla.frontend.passes.output_views`), so that it shares memory as in eager.  The caller keeps the new state
and sets the attributes.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import torch
from torch.utils import _pytree as pytree

from fxla.lowering import ResultLayout
from fxla.lowering.program import Results
from fxla.runtime import from_device
from fxla.runtime.buffers import is_array, viewer

from .write_back import check_writable, write_back

__all__ = ["ResultHandler", "remake"]


def _same(value):
    return value


def remake(remade: Sequence[Any], values: List[Any], args: Sequence[Any]) -> None:
    """Make each output of ``remade`` (:class:`~fxla.frontend.passes.output_views.OutputView`, in their order: a
    base output before those made from it) again in ``values``, the output leaves, from the call's ``args``."""
    for view in remade:
        kind, n = view.base
        base = args[n] if kind == "input" else values[n]
        if not all(_torch_only(args[i]) for i in ((n,) if kind == "input" else ()) + view.reads):
            continue                            # (a jax.Array shares nothing: the program's result stays)
        values[view.leaf] = base if view.replay is None else view.replay(base, *(args[i] for i in view.reads))


def _torch_only(value) -> bool:
    """Whether the arrays of an argument are all torch tensors."""
    if isinstance(value, torch.Tensor):
        return True
    return not any(is_array(leaf) and not isinstance(leaf, torch.Tensor) for leaf in pytree.tree_leaves(value))


class ResultHandler:
    """The result handling of one compiled signature (see the module docstring).

    ``output_static``: per output leaf, ``None`` for the next tensor result or the static value itself;
    ``mutated_inputs``: the numbers (among the tensor inputs) of the inputs the program changes in place
    (``quiet_inputs``: those it changes only under ``torch.no_grad()``);
    ``name``: the module's, for errors; ``remade``: the outputs made again from the tensor they share memory with
    (:class:`~fxla.frontend.passes.output_views.OutputView`, torch outputs only: a ``jax.Array`` shares nothing).
    """

    def __init__(self, layout: ResultLayout, output_spec, output_static: Sequence[Any],
                 mutated_inputs: Sequence[int], output: str, guard, name: Optional[str] = None,
                 quiet_inputs: Sequence[int] = (), remade: Sequence[Any] = ()):
        self.layout = layout
        self.name = name
        self.output_spec = output_spec
        self.output_static = list(output_static)
        self.mutated_inputs = list(mutated_inputs)
        self.quiet_inputs = tuple(quiet_inputs)
        self.convert = from_device if output == "torch" else _same
        self.guard = guard
        self._views: Optional[List[Any]] = None     # per changed input's result: its converter to torch
        self.remade = tuple(remade)

    def writable(self, leaves, guarded: bool) -> Optional[List[Any]]:
        """:func:`fxla.write_back.check_writable` for this signature's changed inputs (before the run)."""
        return check_writable(self.name, self.mutated_inputs, leaves, guarded, self.quiet_inputs)

    def split(self, results: Sequence[Any], leaves, writable: Optional[List[Any]] = None) -> Results:
        """The results of a call whose inputs were ``leaves``, split (:meth:`ResultLayout.split`), after writing
        the changed inputs back; ``writable``: the caller's tensors :func:`fxla.write_back.check_writable`
        returned before the run (when the program changes inputs)."""
        if not self.layout.mutates and not self.layout.checks:
            return Results(results, (), (), ())
        parts = self.layout.split(results, self.name)       # (raises where the program's value checks failed)
        if self.mutated_inputs:
            if self._views is None:                 # (this signature's result types: resolved once)
                self._views = [viewer(value) for value in parts.inputs]
            write_back(writable, self.mutated_inputs, leaves, parts.inputs, self.guard, self._views, self.quiet_inputs)
        return parts

    def build(self, outputs: Sequence[Any], leaves, args: Optional[Sequence[Any]] = None) -> Any:
        """The call's return value from the program's tensor ``outputs``; ``args``: the call's arguments in
        placeholder order (``leaves`` when they are all tensors), which the outputs in :attr:`remade` are made from."""
        results = iter(outputs)
        convert = self.convert
        values = [convert(next(results)) if static is None else static for static in self.output_static]
        if self.guard is not None:
            values = self.guard(leaves, values)
        if self.remade:
            remake(self.remade, values, leaves if args is None else args)
        return pytree.tree_unflatten(values, self.output_spec)
