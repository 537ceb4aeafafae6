"""Calls whose inputs share memory with an input the program changes in place: one traced program per pattern.

A compiled program reads every input before it writes any, so fxla refuses a call that changes an input which
another input of the same call shares memory with (:func:`fxla.write_back.check_writable`). Such calls are common on
the torch.compile backend: after a graph break the next graph gets a tensor and a view of it (``v`` and
``w = v[:, :2]``, or ``x`` and ``x[1:]``) and changes one of them (``w.add_(1)``), which eager shows through the
other. The check raises ``SharedInputError`` before anything is written, and only then is a variant looked for. Where
one input of such a group is a view of another that basic indexing reaches -- integer and slice indices (steps too),
a permutation and size-1 dims (a write through the permutation or a new size-1 dim is refused by functionalization,
below), as :func:`~fxla.frontend.view_recipes.view_recipe` works out from the two tensors' sizes, strides and
offsets (:mod:`fxla.frontend.view_recipes`) -- the call runs a variant of the graph in which the view's placeholder
is that indexing of the base's: functionalization then writes through it as eager does
(:mod:`fxla.frontend.passes.functionalize`), the base is the input written back, and an output that is the view is
made again from it (:mod:`fxla.frontend.passes.output_views`). An unchanged input is preferred as the base (a write
into a view is written through; a changed base whose view is read afterwards is refused), and the other choice is
tried when functionalization refuses the first. A group with no such view (two overlapping slices, a reshaped view),
and one whose every variant functionalization refuses (``a.add_(1); return b * 2`` with ``b = a[1:]``), keep the
clear ``InputMutationError``. Arguments may be tensors and Python numbers (dynamo's sizes); a call with a list or
dict argument gets no variant, nor does a group with a tensor that requires grad (under grad mode): whether each
shares the other's autograd history (``a`` and ``a.detach()[1:]``) is not in its strides.

Each pattern (which input is which indexing of which) is one variant, compiled as a member of the module (its
parameter store and name; its own signatures), kept at most ``MAX_VARIANTS`` at a time (least recently used dropped
first).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, List, Sequence, Tuple

import torch

from fxla.frontend import GraphModule, PassError
from fxla.frontend.view_recipes import Recipe, from_each_base, recipe_nodes, storage_groups
from fxla.runtime.buffers import is_array

__all__ = ["alias_plans", "variant_graph", "AliasVariants", "MAX_VARIANTS", "NO_VARIANT"]

#: what :meth:`AliasVariants.run` returns for a call that needs no variant (or has none)
NO_VARIANT = object()

#: variants (patterns of shared inputs) kept per compiled module
MAX_VARIANTS = 8

#: ``((input, base input, recipe), ...)``: each input made from a base input
Plan = Tuple[Tuple[int, int, Recipe], ...]


def alias_plans(args: Sequence[Any], mutated: Sequence[int]) -> List[Plan]:
    """For a call (``args``, in placeholder order: tensors and Python numbers) to a program changing its
    ``mutated`` tensor inputs (numbers among the tensor arguments) in place: the plans that make inputs from others
    (see the module docstring), preferred first -- in each group of inputs sharing memory, an unchanged input as
    the base (a write into a view of it is written through; a view of a changed base read afterwards is refused)
    --; empty when no changed input shares memory with another input, or a group cannot be expressed (the call's
    own check then refuses it)."""
    if not all(is_array(a) or isinstance(a, _SCALARS) for a in args):
        return []                               # (a list or dict argument: its tensors are not placeholders)
    positions = [i for i, a in enumerate(args) if is_array(a)]
    changed = {positions[k] for k in mutated if k < len(positions)}
    options: List[List[Plan]] = []
    for members in storage_groups((i, args[i]) for i in positions):
        if len(members) < 2 or not changed.intersection(members):
            continue
        if torch.is_grad_enabled() and any(args[i].requires_grad for i in members):
            return []               # (which of them carry history, ``a`` and ``a.detach()[1:]``, is not in strides)
        tensors = {i: args[i] for i in members}
        found = [tuple((i, base, r) for i, r in recipes)
                 for base, recipes in from_each_base(tensors, members, sorted(members, key=lambda i: i in changed))]
        if not found:
            return []
        options.append(found)
    return [tuple(part for group in options for part in group[min(n, len(group) - 1)])
            for n in range(max((len(group) for group in options), default=0))]


_SCALARS = (int, float, bool, type(None))


def variant_graph(gm: GraphModule, plan: Plan) -> GraphModule:
    """``gm`` with each planned input's placeholder replaced by its indexing of the base's (and removed)."""
    new = GraphModule(gm, gm.graph.copy(), class_name=type(gm).__name__)
    graph = new.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    with graph.inserting_after(placeholders[-1]):
        for i, base, recipe in plan:
            placeholders[i].replace_all_uses_with(recipe_nodes(graph, placeholders[base], recipe))
    for i, _, _ in plan:
        graph.erase_node(placeholders[i])
    new.recompile()
    return new


def _kept(args: Sequence[Any], plan: Plan) -> List[Any]:
    replaced = {i for i, _, _ in plan}
    return [a for i, a in enumerate(args) if i not in replaced]


class AliasVariants:
    """A compiled module's variants for calls with shared inputs (see the module docstring); ``member``: makes the
    compiled module of a variant graph, ``drop``: called with one dropped."""

    def __init__(self, member: Callable[[GraphModule], Any], drop: Callable[[Any], None]):
        self._member, self._drop = member, drop
        self._variants: "OrderedDict[Tuple[int, Plan], Any]" = OrderedDict()

    def run(self, gm: GraphModule, args: Sequence[Any], mutated: Sequence[int]):
        """The call's value through its variant, or :data:`NO_VARIANT` when it needs none (or has none); asked only
        for a call whose checks found a changed input sharing memory with another (``SharedInputError``)."""
        for plan in alias_plans(args, mutated):
            key = (id(gm), plan)
            if key in self._variants:
                self._variants.move_to_end(key)
                compiled = self._variants[key]
                if compiled is not None:
                    return compiled(*_kept(args, plan))
                continue
            compiled = self._member(variant_graph(gm, plan))
            try:
                value = compiled(*_kept(args, plan))    # (its first call prepares it: a PassError changes nothing)
            except PassError:
                compiled = None
            self._keep(key, compiled)
            if compiled is not None:
                return value
        return NO_VARIANT

    def _keep(self, key, compiled) -> None:
        self._variants[key] = compiled
        while len(self._variants) > MAX_VARIANTS:
            dropped = self._variants.popitem(last=False)[1]
            if dropped is not None:
                self._drop(dropped)

    def clear(self) -> None:
        for compiled in self._variants.values():
            if compiled is not None:
                self._drop(compiled)
        self._variants.clear()
