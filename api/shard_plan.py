"""``fxla.compile(mesh=, shard=)``: which mesh axes each input, parameter and output of a program is split over."""
from __future__ import annotations

import re
from typing import Any, Dict, Optional, Sequence

from torch.utils import _pytree as pytree

from fxla.base.shown import abbreviate
from fxla.base.suggest import did_you_mean
from fxla.lowering import FxlaProgram
from fxla.runtime.buffers import is_array
from fxla.runtime.sharding import Partitioning, ShardingError, normalize_spec, signature_of

__all__ = ["ShardPlan", "fsdp"]

_INPUT_KEY = re.compile(r"^(input|output):(\d+)$")


class ShardPlan:
    """The ``shard=`` specs of a module compiled over ``mesh``: keys ``"input:<i>"``/``"output:<i>"`` (tensor
    inputs/outputs in order), argument names and parameter/buffer names, each mapped to one spec entry per
    dimension (``None`` or mesh axis names); unnamed values are replicated."""

    def __init__(self, mesh, shard: Dict[str, Any]):
        self.mesh = mesh
        self.shard = dict(shard)

    def check_names(self, arguments: Sequence[str], state_names: Sequence[str]) -> None:
        """Refuse keys that name no input, output, argument or parameter of the traced program."""
        known = set(state_names) | set(arguments)
        bad = [k for k in self.shard if not (isinstance(k, str) and (k in known or _INPUT_KEY.match(k)))]
        if bad:
            short = {n.rpartition(".")[2]: n for n in sorted(known)}    # also by the last part of a name
            candidates = {**short, **{n: n for n in known}}              # compared name -> the name to write
            guesses = [(k, did_you_mean(k, candidates, show=candidates.__getitem__))
                       for k in bad if isinstance(k, str)]
            guesses = [(k, g) for k, g in guesses if g]
            if len(bad) == 1:
                guess = guesses[0][1] if guesses else ""
            else:                                                        # each misspelt name with its own
                guess = "".join(f"\n'{k}': {g[2:]}" for k, g in guesses)
            raise ShardingError(f"shard= names {abbreviate(bad)}, which this model does not have{guess}\n"
                                f"fix: use 'input:<i>' / 'output:<i>' (tensor inputs/outputs in order), an "
                                f"argument name ({list(arguments)}) or a parameter/buffer name "
                                f"({sorted(state_names)})")

    def partitioning(self, program: FxlaProgram, arguments: Sequence[str], args) -> Partitioning:
        """The partitioning of one signature (its output specs are set by :meth:`set_outputs`)."""
        tensors = [v for v in pytree.tree_leaves(args) if is_array(v)]
        by_index: Dict[int, str] = {}            # tensor-input index -> argument name (arguments that are one tensor)
        seen = 0
        for argument, value in zip(arguments, args):
            if is_array(value):
                by_index[seen] = argument
            seen += sum(1 for v in pytree.tree_leaves(value) if is_array(v))
        specs = []
        for i, t in enumerate(tensors):
            names = [k for k in (f"input:{i}", by_index.get(i)) if k in self.shard]
            if len(names) > 1:
                raise ShardingError(f"shard= gives tensor input {i} twice, as {names[0]!r} and {names[1]!r}\n"
                                    f"fix: keep one of them")
            key = names[0] if names else f"input:{i}"
            specs.append(normalize_spec(self.shard.get(key), len(t.shape), tuple(t.shape), self.mesh, key))
        for name in program.param_names:
            p = program.params[name]
            specs.append(normalize_spec(self.shard.get(name), p.dim(), tuple(p.shape), self.mesh, name))
        out_leaves = [v for v in program.output_static if v is None]
        for key in self.shard:
            m = _INPUT_KEY.match(key)
            if m and int(m.group(2)) >= (len(tensors) if m.group(1) == "input" else len(out_leaves)):
                raise ShardingError(f"shard= names '{key}', but the call has {len(tensors)} tensor inputs and "
                                    f"{len(out_leaves)} tensor outputs\nfix: count tensor inputs/outputs from 0")
        return Partitioning(self.mesh, specs, [])

    def by_name(self, arguments: Sequence[Optional[str]], results: Sequence[Optional[str]],
                stablehlo: str) -> Partitioning:
        """The partitioning of a program whose arguments and results are named positionally (a training step:
        ``input:<i>`` for batch tensors, a parameter's name for the parameter and for its optimizer state,
        gradient accumulator and new value; ``None``: replicated), their shapes read from ``stablehlo``."""
        ins, outs = signature_of(stablehlo)

        def specs(names, types):
            return [normalize_spec(self.shard.get(name) if name else None, len(shape), shape, self.mesh,
                                   name or "a replicated value") for name, (shape, _) in zip(names, types)]
        return Partitioning(self.mesh, specs(arguments, ins), specs(results, outs))

    def set_outputs(self, partitioning: Partitioning, stablehlo: str) -> None:
        """Fill in the output specs once the program's result types are known."""
        outs = signature_of(stablehlo)[1]
        partitioning.out_specs = [normalize_spec(self.shard.get(f"output:{i}"), len(shape), shape, self.mesh,
                                                 f"output:{i}") for i, (shape, _) in enumerate(outs)]


def fsdp(model, mesh, axis: str, *, min_size: int = 1024) -> Dict[str, tuple]:
    """``shard=`` specs that split every parameter of ``model`` with at least ``min_size`` elements over the mesh
    axis ``axis`` along its first dimension that the axis size divides (fully sharded data parallel: each device
    holds a part of each weight and of its optimizer state; XLA gathers a weight where it is used and reduces
    its gradient back to the parts).  Smaller parameters (biases, norms) stay replicated.  Add the batch's spec,
    e.g. ``{**fsdp(model, mesh, "data"), "input:0": ("data", None)}``."""
    from fxla.runtime.sharding import as_mesh
    mesh = as_mesh(mesh)
    if axis not in mesh.shape:
        raise ShardingError(f"fsdp: unknown mesh axis {abbreviate(axis)}{did_you_mean(str(axis), mesh.axis_names)}\n"
                            f"fix: use one of the mesh's axes {list(mesh.axis_names)}")
    size = mesh.shape[axis]
    specs = {}
    for name, p in model.named_parameters():
        if p.numel() < min_size:
            continue
        for dim, extent in enumerate(p.shape):
            if extent % size == 0:
                specs[name] = (None,) * dim + (axis,)
                break
    return specs
