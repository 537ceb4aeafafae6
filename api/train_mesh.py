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
tensor is the one it wrote and holds the same values (:class:`MeshResidency`), so a step places only the
batch.
"""
from __future__ import annotations

from typing import Callable, Dict, Hashable, List, Optional, Sequence, Tuple

import jax
import torch

import numpy as np
from torch.utils import _pytree as pytree

from fxla.base.shown import abbreviate
from fxla.lowering.train_step import StepLayout
from fxla.runtime.buffers import host_data, is_array
from fxla.runtime.multihost import spans_processes
from fxla.runtime.sharding import Partitioning, ShardingError, as_mesh, signature_of

from .shard_plan import ShardPlan

__all__ = ["MeshResidency", "StepSharding", "step_sharding"]

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

    def partitioning(self, layout: StepLayout, arguments: Sequence[str], batch: Sequence, random: bool,
                     update: bool, stablehlo: str) -> Tuple[Partitioning, List[str]]:
        """The partitioning of one step program, and what to call each of its arguments in an error;
        ``arguments``: the loss function's names of the ``batch`` arguments (a name stands for its argument's
        tensor when the argument is one tensor)."""
        if random:
            raise ShardingError("fxla.compile_step(mesh=): a step that draws random numbers (dropout in training "
                                "mode) cannot be partitioned yet\nwhy: each device would need its own part of "
                                "one random stream, which fxla does not split\nfix: set the dropout "
                                "probabilities to 0, or train without mesh=")
        shard = self.plan.shard
        inputs, labels = [], []
        for name, value in zip(arguments, batch):
            leaves = [v for v in pytree.tree_leaves(value) if is_array(v)]
            if name in shard and (len(leaves) != 1 or leaves[0] is not value):
                raise ShardingError(f"fxla.compile_step: shard= names the batch argument {name!r}, which is not "
                                    f"one tensor ({abbreviate(value)})\nfix: name its tensors by position, "
                                    f"'input:<i>' (the batch's tensors counted in order)")
            for leaf in leaves:
                i = len(inputs)
                inputs.append(name if name in shard else f"input:{i}")
                labels.append(f"batch {name}" if leaf is value else f"batch input {i}")
        names = [_user_name(n) for n in layout.frozen + layout.trainable]
        trainable = [_user_name(n) for n in layout.trainable]
        args = inputs + names
        labels += [f"parameter {n}" for n in names]
        outs: List[Optional[str]] = [None] * layout.n_outputs + [_user_name(n) for n in layout.changed_buffers]
        if update:
            states = [(_user_name(n), s) for n in layout.trainable for s in layout.rules[n].state]
            args += [n for n, _ in states]
            labels += [f"optimizer state {n}/{s}" for n, s in states]
            outs += trainable + [n for n, _ in states]
        if layout.accumulators:      # (the trainable parameters', then the clipping's other parameters')
            accumulated = [_user_name(n) for n in layout.differentiated]
            args += accumulated
            labels += [f"accumulator {n}" for n in accumulated]
            if not update:
                outs += accumulated
        outs += [None] * bool(layout.value_checks)      # (the check code: replicated)
        n_args = len(signature_of(stablehlo)[0])
        rest = n_args - len(args)                       # the scalar packs and the clipping norm: replicated
        labels += [f"optimizer scalars {i}" for i in range(rest - layout.clip)] + ["clip max_grad_norm"] * layout.clip
        args += [None] * rest
        return self.plan.by_name(args, outs, stablehlo), labels


class MeshResidency:
    """The results of the last partitioned step, kept on the devices per slot (a parameter name, ``(name, state
    key)``) while the slot's torch tensor is the very one the step wrote and unchanged since (its version
    counter) and holding the same bits (:func:`_same`); the same interface as
    :class:`fxla.api.residency.Residency`, except that :meth:`argument` returns the torch tensor itself when it
    must be placed again (the caller places every argument at once)."""

    def __init__(self):
        self._kept: Dict[Hashable, Tuple[torch.Tensor, int, jax.Array]] = {}

    def argument(self, slot: Hashable, tensor: Optional[torch.Tensor], like: Optional[torch.Tensor] = None):
        if tensor is None:
            return torch.zeros_like(like)
        kept = self._kept.get(slot)
        if kept is not None and kept[0] is tensor and tensor._version == kept[1] and not kept[2].is_deleted() \
                and _same(kept[2], tensor):
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


def _same(array: jax.Array, tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` still holds, bit for bit, what this process's shards of ``array`` hold: writes through
    ``p.data`` (``p.data.mul_(0)``, an EMA's ``p.data.copy_(...)``) change neither its version counter nor its
    storage, so the kept array is reused only after comparing the values (on the CPU a read of both buffers)."""
    host = host_data(tensor)
    seen = set()
    for shard in array.addressable_shards:         # (replicas of one part hold the same result: one compare each)
        where = tuple((s.start, s.stop) for s in shard.index)
        if where in seen:
            continue
        seen.add(where)
        part = np.ascontiguousarray(host[shard.index])
        kept = np.ascontiguousarray(np.asarray(shard.data))
        if part.shape != kept.shape or part.dtype != kept.dtype or not _bits_equal(part, kept):
            return False
    return True


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Bitwise equality of two contiguous arrays of one dtype and shape (NaNs compare by their bits), in
    64-bit words where the size allows."""
    word = np.uint64 if a.nbytes % 8 == 0 else np.uint8
    return bool(np.array_equal(a.reshape(-1).view(word), b.reshape(-1).view(word)))


def unplaced(value, _placement):
    """``to_device`` of a partitioned step: the value itself (its arguments are placed at once, later)."""
    return value


def unplaced_input(_position: int, value):
    """``InputBuffers.put`` of a partitioned step: the value itself."""
    return value


def step_sharding(model, mesh, shard, device, concrete_shapes) -> Optional[StepSharding]:
    """The partitioning of ``fxla.compile_step(mesh=, shard=)``, or None without ``mesh``."""
    if shard and mesh is None:
        raise ShardingError("fxla.compile_step: shard= was given without mesh=\nfix: pass mesh=fxla.runtime.Mesh("
                            "{'data': 4}) (or fxla.distributed.mesh(...)) as well")
    if mesh is None:
        return None
    if device is not None:
        raise ShardingError("fxla.compile_step: pass either device= or mesh=, not both\nfix: a partitioned step "
                            "runs on every device of its mesh; drop device=")
    if concrete_shapes and spans_processes(as_mesh(mesh)):
        raise ShardingError("fxla.compile_step: concrete_shapes=True cannot be combined with a mesh over several "
                            "processes\nwhy: a concrete-shapes trace reads the batch's data, and each process holds "
                            "only its part of it\nfix: drop concrete_shapes=True")
    return StepSharding(mesh, shard)
