"""Sharding through XLA's SPMD partitioner with Shardy annotations.

The runtime receives plain StableHLO text plus one spec per function argument and result, and adds

    sdy.mesh @mesh = <["x"=4, ...]>                                          (module level)
    %arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}   (per argument / result)

then compiles with ``num_partitions = mesh size``, ``use_spmd_partitioning`` and ``use_shardy_partitioner``;
Shardy propagates the shardings through the body and XLA inserts the collectives.  A spec is a tuple with one
entry per dimension: ``None`` (not sharded), a mesh axis name, or a tuple of axis names; ``None`` for the whole
spec means replicated.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from fxla.base.errors import FxlaError
from fxla.base.shown import abbreviate
from fxla.base.suggest import did_you_mean

Spec = Optional[Tuple]


class ShardingError(FxlaError):
    """A mesh or sharding spec that cannot be used."""


def Mesh(axes: Dict[str, int], devices: Optional[Sequence[jax.Device]] = None,
         platform: Optional[str] = None) -> jax.sharding.Mesh:  # noqa: N802  (reads like a class)
    """A ``jax.sharding.Mesh`` with named axes, e.g. ``Mesh({"x": 4})`` or ``Mesh({"data": 2, "model": 2})``.

    ``devices`` defaults to the first ``prod(axes)`` devices of ``platform`` (JAX's default platform).
    """
    if not isinstance(axes, dict) or not axes or not all(isinstance(k, str) and isinstance(v, int) and v > 0
                                                          for k, v in axes.items()):
        raise ShardingError(f"cannot build a mesh from {abbreviate(axes)}\nfix: pass axis names and sizes, e.g. "
                            f"fxla.runtime.Mesh({{'x': 4}})")
    size = int(np.prod(list(axes.values())))
    if devices is None:
        devices = jax.devices(platform) if platform else jax.devices()
    devices = list(devices)
    if len(devices) < size:
        raise ShardingError(
            f"a mesh {axes} needs {size} devices but only {len(devices)} are available "
            f"({devices[0].platform if devices else 'none'})\n"
            f"why: the number of devices is fixed when the process starts\n"
            f"fix: use a smaller mesh; for simulated CPU devices start Python with "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={size}")
    return jax.sharding.Mesh(np.array(devices[:size]).reshape(tuple(axes.values())), tuple(axes))


def as_mesh(mesh) -> jax.sharding.Mesh:
    if isinstance(mesh, jax.sharding.Mesh):
        return mesh
    if isinstance(mesh, dict):
        return Mesh(mesh)
    raise ShardingError(f"cannot use {abbreviate(mesh)} as a mesh\nfix: pass fxla.runtime.Mesh({{'x': 4}}) or a "
                        f"jax.sharding.Mesh")


def normalize_spec(spec, rank: int, shape: Sequence[int], mesh: jax.sharding.Mesh, what: str) -> Tuple:
    """Check ``spec`` against a value of ``shape`` and return it as a tuple of tuples of axis names."""
    if spec is None:
        return ((),) * rank
    if isinstance(spec, PartitionSpec):
        spec = tuple(spec)
    if isinstance(spec, str):
        spec = (spec,)
    if not isinstance(spec, (tuple, list)):
        raise ShardingError(f"sharding of {what}: {abbreviate(spec)} is not a tuple of axis names\n"
                            f"fix: give one entry per dimension, e.g. ('x', None)")
    if len(spec) > rank:
        raise ShardingError(f"sharding of {what}: {tuple(spec)} has {len(spec)} entries but the value has rank "
                            f"{rank} (shape {list(shape)})\nfix: give at most one entry per dimension")
    out, used = [], set()
    for dim, entry in enumerate(tuple(spec) + (None,) * (rank - len(spec))):
        names = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
        factor = 1
        for name in names:
            if name not in mesh.shape:
                guess = did_you_mean(name, mesh.axis_names) if isinstance(name, str) else ""
                raise ShardingError(f"sharding of {what}: unknown mesh axis {abbreviate(name)}{guess}\n"
                                    f"fix: use one of the mesh's axes {list(mesh.axis_names)}")
            if name in used:
                raise ShardingError(f"sharding of {what}: mesh axis {name!r} is used twice\n"
                                    f"fix: shard each mesh axis over at most one dimension")
            used.add(name)
            factor *= mesh.shape[name]
        if shape[dim] % factor:
            raise ShardingError(f"sharding of {what}: dimension {dim} has size {shape[dim]}, which {factor} "
                                f"devices ({' x '.join(names)}) cannot split evenly\n"
                                f"fix: use a size divisible by {factor}, or do not shard this dimension")
        out.append(names)
    return tuple(out)


def named_sharding(mesh: jax.sharding.Mesh, spec: Tuple) -> NamedSharding:
    return NamedSharding(mesh, PartitionSpec(*[None if not n else n[0] if len(n) == 1 else n for n in spec]))


@dataclass
class Partitioning:
    """How to partition one program: the mesh and a normalised spec per argument and per result."""

    mesh: jax.sharding.Mesh
    arg_specs: List[Tuple]
    out_specs: List[Tuple]

    @property
    def devices(self) -> List[jax.Device]:
        return list(self.mesh.devices.flat)

    def fingerprint(self) -> str:
        return (f"sdy/{dict(self.mesh.shape)}/{[d.id for d in self.devices]}/"
                f"{self.arg_specs}/{self.out_specs}")


def _sdy_attr(spec: Tuple) -> str:
    dims = ", ".join("{" + ", ".join(f'"{n}"' for n in names) + "}" for names in spec)
    return f"#sdy.sharding<@mesh, [{dims}]>"


def annotate(text: str, part: Partitioning) -> str:
    """``text`` with an ``sdy.mesh`` and ``sdy.sharding`` on every argument and result of ``@main``."""
    from jax.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir

    with jax_mlir.make_ir_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        axes = ", ".join(f'"{name}"={size}' for name, size in part.mesh.shape.items())
        ir.InsertionPoint.at_block_begin(module.body).insert(ir.Operation.parse(f"sdy.mesh @mesh = <[{axes}]>"))
        mains = [op for op in module.body.operations if op.operation.name == "func.func"
                 and ir.StringAttr(op.attributes["sym_name"]).value == "main"]
        if len(mains) != 1:
            raise ShardingError("internal error: the StableHLO module has no single @main function\n"
                                "fix: report this as an fxla bug")
        fn = mains[0]

        def attrs(specs, existing):
            old = list(existing) if existing is not None else [ir.DictAttr.get({}) for _ in specs]
            new = []
            for spec, d in zip(specs, old):
                entries = {a.name: a.attr for a in ir.DictAttr(d)}
                entries["sdy.sharding"] = ir.Attribute.parse(_sdy_attr(spec))
                new.append(ir.DictAttr.get(entries))
            return ir.ArrayAttr.get(new)

        fn.attributes["arg_attrs"] = attrs(part.arg_specs, fn.attributes["arg_attrs"]
                                           if "arg_attrs" in fn.attributes else None)
        fn.attributes["res_attrs"] = attrs(part.out_specs, fn.attributes["res_attrs"]
                                           if "res_attrs" in fn.attributes else None)
        return module.operation.get_asm(enable_debug_info=True)


def signature_of(text: str):
    """``([(shape, dtype-string)] for arguments, [...] for results)`` of ``@main`` in ``text``."""
    from jax.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir

    with jax_mlir.make_ir_context():
        module = ir.Module.parse(text)
        for op in module.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
                ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
                def parse(types):
                    out = []
                    for t in types:
                        rt = ir.RankedTensorType(t)
                        out.append((tuple(rt.shape), str(rt.element_type)))
                    return out
                return parse(ftype.inputs), parse(ftype.results)
    raise ShardingError("internal error: no @main in the StableHLO module\nfix: report this as an fxla bug")
