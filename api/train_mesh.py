"""``fxla.compile_step(..., mesh=, shard=)``: a training step partitioned over a mesh, on one process's devices or
on several processes' (:mod:`fxla.distributed`).

The step program is the single-device one (forward, loss, backward, optimizer update); the partitioning names
its arguments and results as the user's ``shard=`` does:

* ``"input:<i>"`` (or the loss function's argument name): the i-th tensor of the batch, e.g. ``("data", None)``
  for data parallelism: each device computes the gradients of its rows, and XLA's SPMD partitioner inserts the
  all-reduce that sums them, inside the program;
* a parameter's or buffer's name (``"fc1.weight"``): the parameter, its optimizer state (same shape), its
  gradient accumulator and its new value, so a sharded parameter stays sharded from step to step (fully sharded
  data parallelism: :func:`fxla.distributed.fsdp` makes such specs for every large parameter);
* everything else (the loss, the scalars of the update) replicated.

The torch model and optimizer stay the source of truth, as on one device: after each step every process's
tensors hold the whole new values (gathered where they are sharded over other processes' devices).  Between
steps the step keeps each result on the devices and passes it to the next step unchanged while its torch
tensor is the one it wrote and has not changed since (:class:`MeshResidency`), so a step places only the
batch.
"""
from __future__ import annotations

from typing import Callable, Dict, Hashable, List, Optional, Sequence, Tuple

import jax
import torch

from fxla.lowering.train_step import StepLayout
from fxla.runtime.sharding import Partitioning, ShardingError, as_mesh

from .shard_plan import ShardPlan

__all__ = ["MeshResidency", "StepSharding"]

_MODEL = "model."            # the step's objective holds the model under this name (fxla.train_step._Objective)


def _user_name(name: str) -> str:
    return name[len(_MODEL):] if name.startswith(_MODEL) else name


class StepSharding:
    """The ``shard=`` specs of a training step over ``mesh`` (see the module docstring)."""

    def __init__(self, mesh, shard: Optional[Dict[str, object]]):
        self.mesh = as_mesh(mesh)
        self.plan = ShardPlan(self.mesh, dict(shard or {}))

    def check_names(self, model: torch.nn.Module, arguments: Sequence[str]) -> None:
        names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
        self.plan.check_names(list(arguments), names)

    def partitioning(self, layout: StepLayout, arguments: Sequence[str], n_leaves: int, random: bool,
                     update: bool, stablehlo: str) -> Partitioning:
        """The partitioning of one step program; ``arguments``: the loss function's batch argument names (a
        name stands for its tensor when that argument is one tensor)."""
        if random:
            raise ShardingError("fxla.compile_step(mesh=): a step that draws random numbers (dropout in training "
                                "mode) cannot be partitioned yet\nwhy: each device would need its own part of "
                                "one random stream, which fxla does not split\nfix: set the dropout "
                                "probabilities to 0, or train without mesh=")
        shard = self.plan.shard
        inputs = []
        for i in range(n_leaves):
            by_name = arguments[i] if n_leaves == len(arguments) and arguments[i] in shard else None
            inputs.append(by_name or f"input:{i}")
        names = [_user_name(n) for n in layout.frozen + layout.trainable]
        trainable = [_user_name(n) for n in layout.trainable]
        args = inputs + names
        outs: List[Optional[str]] = [None] * layout.n_outputs + [_user_name(n) for n in layout.changed_buffers]
        if update:
            state = [_user_name(n) for n in layout.trainable for _ in layout.rules[n].state]
            args += state
            outs += trainable + state
        if layout.accumulators:
            args += trainable
            if not update:
                outs += trainable
        from fxla.runtime.sharding import signature_of
        n_args = len(signature_of(stablehlo)[0])
        args += [None] * (n_args - len(args))          # the scalar packs and the clipping norm: replicated
        return self.plan.by_name(args, outs, stablehlo)


class MeshResidency:
    """The results of the last partitioned step, kept on the devices per slot (a parameter name, ``(name, state
    key)``) while the slot's torch tensor is the very one the step wrote and unchanged since (its version
    counter); the same interface as :class:`fxla.api.residency.Residency`, except that :meth:`argument` returns
    the torch tensor itself when it must be placed again (the caller places every argument at once)."""

    def __init__(self):
        self._kept: Dict[Hashable, Tuple[torch.Tensor, int, jax.Array]] = {}

    def argument(self, slot: Hashable, tensor: Optional[torch.Tensor], like: Optional[torch.Tensor] = None):
        if tensor is None:
            return torch.zeros_like(like)
        kept = self._kept.get(slot)
        if kept is not None and kept[0] is tensor and tensor._version == kept[1] and not kept[2].is_deleted():
            return kept[2]
        return tensor

    def update(self, slot: Hashable, tensor: Optional[torch.Tensor], result: jax.Array,
               convert: Callable[[jax.Array], torch.Tensor]) -> torch.Tensor:
        value = convert(result)                        # (the whole value: gathered from other processes' devices)
        if tensor is None:
            tensor = value.clone()
        else:
            tensor.copy_(value)
        self._kept[slot] = (tensor, tensor._version, result)
        return tensor

    def forget(self) -> None:
        self._kept.clear()
