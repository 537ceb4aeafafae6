"""``fxla.distributed``: one fxla program over the devices of several processes and hosts, on JAX's
distributed runtime.

    fxla.distributed.initialize("10.0.0.1:1234", num_processes=2, process_id=rank, local_device_count=2)
    mesh = fxla.distributed.mesh({"data": 2, "model": 2})       # over every process's devices
    fast = fxla.compile(model, mesh=mesh, shard={"x": ("data", None), ...})
    y = fast(x)                                                  # x: the same global tensor on every process
    y = fast(fxla.distributed.from_local(x_part, mesh, ("data", None)))   # or each process's own rows

Each process traces, lowers and compiles the same partitioned program and runs it on its own devices; XLA's
collectives (gloo on the CPU) move data between processes.  Before each compile and each call of a program
whose mesh spans processes, the processes compare what they are about to run and the host data of their torch
inputs (:mod:`fxla.runtime.multihost`): a difference, or a process that does not arrive within ``timeout``
seconds, is a :class:`ProcessMismatchError` instead of a hang or a mixed-up result.

Inputs: a torch tensor is the global value (every process passes the same one); a ``jax.Array`` built by
:func:`from_local` from each process's own part is used as it is.  Outputs: a torch output is the whole value
on every process (gathered when its sharding leaves parts on other processes); with ``output="jax"`` it stays a
global ``jax.Array`` laid out as ``shard={"output:<i>": ...}`` says, and :func:`local_part` gives this
process's part.  See docs/distributed.md.
"""
from __future__ import annotations

import threading
from typing import Dict, List, Optional, Sequence

import jax
import numpy as np
import torch

from fxla.base import jax_private
from fxla.base.errors import FxlaError
from fxla.base.shown import abbreviate
from fxla.runtime.buffers import host_data
from fxla.runtime.multihost import ProcessMismatchError, agree, digest, gather as _gather, set_timeout
from fxla.runtime.multihost import from_local as _from_local, local_part as _local_part
from fxla.runtime.sharding import Mesh, ShardingError, named_sharding, normalize_spec

from .shard_plan import fsdp

__all__ = ["initialize", "shutdown", "is_initialized", "process_index", "process_count", "local_devices",
           "global_devices", "mesh", "from_local", "local_part", "gather", "barrier", "save_checkpoint",
           "load_checkpoint", "fsdp", "DistributedError", "ProcessMismatchError"]


class DistributedError(FxlaError):
    """A multi-process run that cannot be started or used as asked."""


_lock = threading.Lock()
_started: Optional[dict] = None        # the arguments of the successful initialize() of this process


def initialize(coordinator_address: Optional[str] = None, num_processes: Optional[int] = None,
               process_id: Optional[int] = None, *, local_device_count: Optional[int] = None,
               timeout: float = 300.0, heartbeat_timeout: int = 10, bind_address: Optional[str] = None) -> None:
    """Join this process to a multi-process run; call it in every process, before anything runs on a device.

    ``coordinator_address``: ``host:port`` of process 0, which starts the coordination service there;
    ``num_processes``/``process_id``: how many processes and which one this is.  Left out, JAX detects them
    from the environment where it can (``JAX_COORDINATOR_ADDRESS``; SLURM, Open MPI, Cloud TPU, Kubernetes
    JobSet...).  ``local_device_count``: CPU devices of this process (on the CPU, XLA makes one by default);
    GPUs and TPUs are found as they are.  ``timeout``: seconds to wait for the other processes: at start-up
    and before each compile and call of a program that spans processes.  ``heartbeat_timeout``: seconds after
    which a process that stopped answering (died) is reported to the others: JAX then ends every process
    ("Terminating process because the JAX distributed service detected fatal errors").  ``bind_address``: where
    process 0's coordination service listens (JAX's default: every interface, at the coordinator's port; pass
    e.g. ``"127.0.0.1:1234"`` to keep it on loopback).

    On the CPU the collectives go through gloo (TCP).  Calling it again with the same arguments does nothing.
    """
    global _started
    asked = dict(coordinator_address=coordinator_address, num_processes=num_processes, process_id=process_id,
                 local_device_count=local_device_count)
    with _lock:
        for name, value in (("num_processes", num_processes), ("local_device_count", local_device_count)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise DistributedError(f"{name}={abbreviate(value)}: it must be a positive int\n"
                                       f"fix: pass a positive int or leave it out")
        if process_id is not None and num_processes is not None and not (
                isinstance(process_id, int) and 0 <= process_id < num_processes):
            raise DistributedError(f"process_id={abbreviate(process_id)} is not one of 0..{num_processes - 1}\n"
                                   f"fix: number the processes 0 to num_processes - 1")
        if _started is not None:
            if asked != _started:
                raise DistributedError(f"fxla.distributed.initialize was already called with {_started}; now with "
                                       f"{asked}\nfix: initialize once per process")
            return
        if jax_private.distributed_client() is not None:
            raise DistributedError("jax.distributed.initialize was already called in this process\nfix: call "
                                   "fxla.distributed.initialize instead of it (it sets up the CPU collectives "
                                   "and timeouts fxla needs), or leave it out")
        if jax_private.backends_initialized():
            raise DistributedError(
                "fxla.distributed.initialize was called after JAX had started its devices in this process\n"
                "why: the devices and collectives of a multi-process run are fixed when JAX starts them (a first "
                "fxla.compile call, a jax array, jax.devices() start them)\n"
                "fix: call fxla.distributed.initialize first thing in the program, before any compile or call")
        if local_device_count is not None:
            jax.config.update("jax_num_cpu_devices", local_device_count)
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        try:
            jax.distributed.initialize(coordinator_address, num_processes, process_id,
                                       initialization_timeout=max(1, int(timeout)),
                                       heartbeat_timeout_seconds=int(heartbeat_timeout),
                                       shutdown_timeout_seconds=max(1, int(timeout)),
                                       coordinator_bind_address=bind_address)
        except Exception as err:  # noqa: BLE001  (ValueError for missing parameters, jaxlib's for timeouts)
            raise DistributedError(
                f"could not join the multi-process run at {coordinator_address or '(address from the environment)'}"
                f" as process {process_id} of {num_processes}: {_first_line(err)}\n"
                f"why: the coordinator (process 0) must be reachable at that address, and all num_processes "
                f"processes must start within timeout={timeout:g} s\n"
                f"fix: start every process with the same coordinator address and process count and its own "
                f"process_id; check that process 0 is running and that the port is free") from None
        set_timeout(timeout)
        _started = asked


def shutdown() -> None:
    """Leave the multi-process run (waits for the other processes to leave too)."""
    global _started
    with _lock:
        if _started is not None:
            jax.distributed.shutdown()
            _started = None


def is_initialized() -> bool:
    return jax_private.distributed_client() is not None


def process_index() -> int:
    return jax.process_index()


def process_count() -> int:
    return jax.process_count()


def local_devices() -> List[jax.Device]:
    """This process's devices."""
    return jax.local_devices()


def global_devices() -> List[jax.Device]:
    """The devices of every process, each process's together and in process order."""
    return sorted(jax.devices(), key=lambda d: (d.process_index, d.id))


def mesh(axes: Dict[str, int]) -> jax.sharding.Mesh:
    """A mesh over :func:`global_devices` (every device of every process), e.g. ``{"data": 2, "model": 2}``:
    the first axes split across processes, the last within each process's devices (so that a "model" axis of
    the size of a process's devices keeps its collectives inside the process)."""
    return Mesh(axes, global_devices())


def _sharding(mesh_: jax.sharding.Mesh, spec, shape: Sequence[int], what: str):
    return named_sharding(mesh_, normalize_spec(spec, len(shape), tuple(shape), mesh_, what))


def from_local(tensor, mesh: jax.sharding.Mesh, spec) -> jax.Array:
    """The global ``jax.Array`` whose part on this process is ``tensor`` (a torch tensor or numpy array), laid
    out over ``mesh`` as ``spec`` says (one entry per dimension: ``None`` or mesh axis names).  Along a
    dimension split across processes the global size is the sum of the processes' parts: with
    ``spec=("data", None)`` on 2 processes, parts of 4 rows make an array of 8 rows, process 0's first.  Pass
    the result to a compiled module whose ``shard=`` gives that input the same spec."""
    if isinstance(tensor, torch.Tensor):
        host = host_data(tensor)
    elif isinstance(tensor, np.ndarray):
        host = tensor
    else:
        raise DistributedError(f"from_local takes a torch tensor or a numpy array, got {abbreviate(tensor)}\n"
                               f"fix: pass this process's part as a tensor")
    if not isinstance(mesh, jax.sharding.Mesh):
        raise ShardingError(f"from_local needs a jax.sharding.Mesh, got {abbreviate(mesh)}\n"
                            f"fix: pass fxla.distributed.mesh({{...}})")
    any_size = [mesh.devices.size] * host.ndim             # (checks the axis names; sizes are checked below)
    names = normalize_spec(spec, host.ndim, any_size, mesh, "from_local's spec")
    global_shape = []
    for dim, axes in enumerate(names):
        processes = _processes_along(mesh, axes)
        devices = int(np.prod([mesh.shape[a] for a in axes])) if axes else 1
        if host.shape[dim] % (devices // processes):
            raise ShardingError(f"from_local: this process's part has size {host.shape[dim]} along dimension {dim}, "
                                f"which its {devices // processes} devices along {' x '.join(axes)} cannot split "
                                f"evenly\nfix: pass a part whose size there is a multiple of "
                                f"{devices // processes}")
        global_shape.append(host.shape[dim] * processes)
    sharding = _sharding(mesh, spec, global_shape, "from_local's spec")
    _agree_on_parts(host, sharding, global_shape, names)
    return _from_local(host, sharding, global_shape)


def _agree_on_parts(host: np.ndarray, sharding, global_shape: Sequence[int], names) -> None:
    """Where several processes hold the same part of the global array they build (a dimension not split across
    processes: each holds a whole copy), the processes agree on its shape, dtype and spec and on that part's data
    (JAX would keep one process's copy on its devices and the other's on theirs: a silently mixed array)."""
    if jax.process_count() == 1:
        return
    blocks: Dict[int, set] = {}
    for device, index in sharding.devices_indices_map(tuple(global_shape)).items():
        blocks.setdefault(device.process_index, set()).add(
            tuple((s.start or 0, global_shape[d] if s.stop is None else s.stop) for d, s in enumerate(index)))
    if len({frozenset(b) for b in blocks.values()}) == len(blocks):
        return                # every process holds its own part (a batch split over processes): nothing shared;
        # (parts of other shapes or specs make another global shape: the call's own agreement refuses it)
    mine = blocks[jax.process_index()]
    fields = {"from_local": f"{host.dtype}{list(global_shape)} split as {[list(a) for a in names]}"}
    if sum(1 for b in blocks.values() if b == mine) > 1:
        fields[f"part {sorted(mine)}"] = digest(host)
    agree("from_local", fields, "the building of a global array (fxla.distributed.from_local)", common_only=True)


def _processes_along(mesh_: jax.sharding.Mesh, axes) -> int:
    """How many processes the mesh axes ``axes`` split a dimension over."""
    if not axes:
        return 1
    devices = mesh_.devices
    other = [i for i, name in enumerate(mesh_.axis_names) if name not in axes]
    index = tuple(0 if i in other else slice(None) for i in range(devices.ndim))
    return len({d.process_index for d in np.asarray(devices[index]).flat})


def local_part(array: jax.Array) -> torch.Tensor:
    """This process's part of a global ``jax.Array`` (an ``output="jax"`` result), as a torch tensor: the
    inverse of :func:`from_local`."""
    if not isinstance(array, jax.Array):
        raise DistributedError(f"local_part takes a jax.Array, got {abbreviate(array)}\nfix: compile with "
                               f"output='jax' to keep results sharded")
    return _to_torch(_local_part(array))


def gather(array: jax.Array) -> torch.Tensor:
    """The whole value of a global ``jax.Array`` on this process (a collective: every process calls it)."""
    if not isinstance(array, jax.Array):
        raise DistributedError(f"gather takes a jax.Array, got {abbreviate(array)}\nfix: pass an output='jax' "
                               f"result")
    return _to_torch(np.asarray(array) if array.is_fully_addressable or array.is_fully_replicated
                     else _gather(array))


def _to_torch(host: np.ndarray) -> torch.Tensor:
    if host.dtype.name == "bfloat16":
        return torch.from_numpy(host.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(np.array(host, copy=True))


def barrier(name: str = "fxla", *, timeout: Optional[float] = None) -> None:
    """Wait until every process reaches a barrier of this ``name`` (at most ``timeout`` seconds, default
    initialize's); a process that does not come is a :class:`ProcessMismatchError`."""
    agree("barrier", {"barrier": str(name)}, f"barrier {name!r}", timeout=timeout)


def save_checkpoint(path: str, model: torch.nn.Module, optimizer: Optional[torch.optim.Optimizer] = None,
                    **extra) -> None:
    """Save a training run's state from a multi-process run: process 0 writes ``path`` (``torch.save`` of
    ``{"model": model.state_dict(), "optimizer": optimizer.state_dict(), **extra}``, through a temporary file
    renamed into place, so a crash never leaves half a checkpoint); every process first checks that all hold
    the same state (:func:`agree` on digests of every tensor: after fxla's compiled steps each process's model
    and optimizer hold the whole, equal values), and returns once the file is complete."""
    state = _checkpoint_state(model, optimizer, extra)
    agree("checkpoint", {"checkpoint": str(path), **_digests(state)}, f"saving checkpoint {path}")
    if jax.process_index() == 0:
        import os
        folder = os.path.dirname(os.path.abspath(path))
        tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
        torch.save(state, tmp)
        os.replace(tmp, path)
    agree("checkpoint", {"checkpoint": str(path)}, f"the end of saving checkpoint {path}")


def load_checkpoint(path: str, model: torch.nn.Module, optimizer: Optional[torch.optim.Optimizer] = None) -> dict:
    """Load a :func:`save_checkpoint` file into ``model`` (and ``optimizer``) on every process (``torch.load``
    with ``weights_only=True``: the file cannot run code), check that every process loaded the same state, and
    return the file's other entries."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(state, dict) or "model" not in state:
        raise DistributedError(f"{path} is not a checkpoint of fxla.distributed.save_checkpoint (no 'model' "
                               f"entry)\nfix: pass the file save_checkpoint wrote")
    model.load_state_dict(state["model"])
    if optimizer is not None:
        if "optimizer" not in state:
            raise DistributedError(f"{path} holds no optimizer state\nfix: save it with "
                                   f"save_checkpoint(path, model, optimizer)")
        optimizer.load_state_dict(state["optimizer"])
    loaded = _checkpoint_state(model, optimizer, {})
    agree("checkpoint", {"checkpoint": str(path), **_digests(loaded)}, f"loading checkpoint {path}")
    return {k: v for k, v in state.items() if k not in ("model", "optimizer")}


def _checkpoint_state(model, optimizer, extra) -> dict:
    state = {"model": model.state_dict()}
    if optimizer is not None:
        state["optimizer"] = optimizer.state_dict()
    state.update(extra)
    return state


def _digests(state: dict) -> Dict[str, str]:
    """``{"state <path>": digest}`` of every tensor in a nested state dict."""
    from torch.utils import _pytree as pytree
    leaves, _ = pytree.tree_flatten_with_path(state)
    return {f"state {pytree.keystr(path)}": digest(host_data(leaf)) for path, leaf in leaves
            if isinstance(leaf, torch.Tensor)}


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0][:300] if text else type(err).__name__

