"""How basic indexing of one tensor makes another that shares its memory: a *view recipe*.

:func:`view_recipe` works out, from two tensors' sizes, strides and storage offsets, integer and slice indices
(steps too), a permutation and size-1 dims that make the view from the base -- and checks it by making the view
again (``None`` where no such indexing exists: two overlapping slices, a reshaped view).  :func:`recipe_nodes`
writes a recipe as graph nodes, so a traced program can make the view itself (``fxla.input_aliases``: inputs that
share memory; :mod:`fxla.frontend.passes.output_views`: outputs that do).
"""
from __future__ import annotations

import operator
from typing import Any, Dict, Hashable, Iterable, Iterator, List, Optional, Tuple

import torch

from .graph import Graph
from .node import Node

__all__ = ["Recipe", "view_recipe", "apply_recipe", "recipe_nodes", "storage_groups", "from_each_base"]

#: ``(index, permutation, unsqueezed)``: ``base[index].permute(permutation)`` then ``unsqueeze`` at each position;
#: an index entry is an int (select) or ``(start, stop, step)`` (a slice)
Recipe = Tuple[Tuple[Any, ...], Tuple[int, ...], Tuple[int, ...]]


def _index(recipe_index) -> tuple:
    return tuple(slice(*part) if isinstance(part, tuple) else part for part in recipe_index)


def apply_recipe(recipe: Recipe, base: torch.Tensor) -> torch.Tensor:
    """``base`` indexed as ``recipe`` says (eager)."""
    index, perm, unsqueezed = recipe
    out = base[_index(index)]
    if perm != tuple(range(len(perm))):
        out = out.permute(perm)
    for dim in unsqueezed:
        out = out.unsqueeze(dim)
    return out


def _same_view(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.storage_offset() == b.storage_offset() and \
        all(a.stride(d) == b.stride(d) for d in range(a.dim()) if a.size(d) > 1)


def view_recipe(view: torch.Tensor, base: torch.Tensor) -> Optional[Recipe]:
    """How basic indexing of ``base`` makes ``view`` (the same elements, in the same memory), or ``None``."""
    if view.dtype != base.dtype or view.device != base.device or view.layout != torch.strided \
            or view.untyped_storage().data_ptr() != base.untyped_storage().data_ptr():
        return None
    rel = view.storage_offset() - base.storage_offset()
    dims = sorted((d for d in range(base.dim()) if base.size(d) > 1), key=lambda d: -base.stride(d))
    if rel < 0 or any(base.stride(d) <= 0 for d in dims):
        return None
    starts = [0] * base.dim()
    for d in dims:                                  # the offset, in base's mixed radix
        starts[d], rel = divmod(rel, base.stride(d))
    if rel or any(starts[d] >= base.size(d) for d in dims):
        return None
    steps: Dict[int, Tuple[int, int]] = {}          # base dim -> (view dim, step)
    for e in range(view.dim()):
        if view.size(e) == 1:
            continue
        for d in sorted(set(dims) - set(steps), key=lambda d: (view.stride(e) != base.stride(d), -base.stride(d))):
            step, rest = divmod(view.stride(e), base.stride(d))
            if not rest and step >= 1 and starts[d] + (view.size(e) - 1) * step < base.size(d):
                steps[d] = (e, step)
                break
        else:
            return None
    for e in range(min(view.dim(), base.dim())):    # a size-1 dim: a one-element slice of the same base dim
        if view.size(e) == 1 and e not in steps:     # (written through as the slice, unlike select + unsqueeze)
            steps[e] = (e, 1)
    index = tuple((starts[d], starts[d] + (view.size(steps[d][0]) - 1) * steps[d][1] + 1, steps[d][1])
                  if d in steps else starts[d] for d in range(base.dim()))
    kept = sorted(steps, key=lambda d: d)           # the dims left after indexing, in base order
    order = [steps[d][0] for d in kept]             # ... and the view dim each becomes
    perm = tuple(sorted(range(len(kept)), key=lambda i: order[i]))
    assigned = {e for e, _ in steps.values()}
    unsqueezed = tuple(e for e in range(view.dim()) if e not in assigned)
    recipe = (index, perm, unsqueezed)
    try:
        return recipe if _same_view(apply_recipe(recipe, base), view) else None
    except (IndexError, RuntimeError):
        return None


def storage_groups(tensors: Iterable[Tuple[Hashable, Any]]) -> List[List[Hashable]]:
    """The keys of ``tensors`` (``(key, value)`` pairs: the torch tensors among the values, strided and not empty)
    grouped by the storage their tensor is in, in order."""
    groups: Dict[int, List[Hashable]] = {}
    for key, t in tensors:
        if isinstance(t, torch.Tensor) and t.layout == torch.strided and t.numel():
            groups.setdefault(t.untyped_storage().data_ptr(), []).append(key)
    return list(groups.values())


def from_each_base(tensors: Dict[Hashable, torch.Tensor], members: List[Hashable],
                   bases: Iterable[Hashable]) -> Iterator[Tuple[Hashable, List[Tuple[Hashable, Recipe]]]]:
    """For each of ``bases`` (keys of ``members``, in that order) from which every other member has a recipe:
    ``(base, [(member, its recipe), ...])``."""
    for base in bases:
        recipes = [(key, view_recipe(tensors[key], tensors[base])) for key in members if key != base]
        if all(recipe is not None for _, recipe in recipes):
            yield base, recipes


def recipe_nodes(graph: Graph, base: Node, recipe: Recipe) -> Node:
    """``recipe`` applied to ``base`` as nodes of ``graph`` (at its insertion point); returns the last."""
    index, perm, unsqueezed = recipe
    node = graph.call_function(operator.getitem, (base, _index(index)))
    if perm != tuple(range(len(perm))):
        node = graph.call_method("permute", (node, *perm))
    for dim in unsqueezed:
        node = graph.call_method("unsqueeze", (node, dim))
    return node
