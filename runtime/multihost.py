"""Several processes running one SPMD program: the checks that keep them in step, and moving data in and out.

JAX's distributed runtime (``jax.distributed.initialize``, through :func:`fxla.distributed.initialize`) joins
the processes; each compiles the same partitioned program and runs it on its own devices, and XLA's collectives
(gloo on the CPU) move data between them.  Two mistakes end in a hang or a wrong answer there, and JAX leaves
both to the user:

* processes that compile different programs (other shapes, another model) or call them in another order wait
  in a collective nobody else enters: a hang, or a collective paired with the wrong one;
* a torch tensor handed to a program that spans processes is taken as the *global* value, and each process
  places its own part of the devices from its own copy, so processes that pass different data (each its own
  batch) would get a silently mixed result.

fxla checks both through the coordination service's key-value store before anything runs (:func:`agree`):
each process publishes what it is about to compile or run (a fingerprint of the program, and of the host data
of its inputs) under the next number of that channel, then reads every other process's entry, waiting at most
``timeout`` seconds.  A difference, or a process that does not arrive in time (stuck, slower by more than the
timeout, calling something else, or dead), is a :class:`ProcessMismatchError` saying which process differed and
how, raised on every process that sees it; nobody enters the collective.
"""
from __future__ import annotations

import hashlib
import threading
import zlib
from typing import Dict, List, Optional, Sequence

import jax
import numpy as np

from fxla.base import jax_private
from fxla.base.errors import FxlaError

__all__ = ["ProcessMismatchError", "spans_processes", "agree", "digest", "gather", "local_part",
           "set_timeout", "get_timeout", "program_fingerprint",
           "from_local", "place_sharded"]


class ProcessMismatchError(FxlaError):
    """The processes of a multi-process run did not compile or call the same program with the same data."""


class _Channels:
    """Per-channel call numbers of this process (every process counts the same calls the same way)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts: Dict[str, int] = {}
        self.timeout = 300.0

    def next(self, channel: str) -> int:
        with self.lock:
            n = self.counts.get(channel, 0)
            self.counts[channel] = n + 1
            return n


_CHANNELS = _Channels()


def set_timeout(seconds: float) -> None:
    """How long :func:`agree` waits for the other processes (set by :func:`fxla.distributed.initialize`)."""
    _CHANNELS.timeout = float(seconds)


def get_timeout() -> float:
    return _CHANNELS.timeout


def spans_processes(devices) -> bool:
    """Whether ``devices`` (a list, a ``jax.sharding.Mesh``, a sharding or one device) belong to more than one
    process."""
    if isinstance(devices, jax.Device):
        return False
    if isinstance(devices, jax.sharding.Mesh):
        devices = devices.devices.flat
    elif isinstance(devices, jax.sharding.Sharding):
        devices = devices.device_set
    return len({d.process_index for d in devices}) > 1


def program_fingerprint(text: str) -> str:
    """A short hash of a program's text (the processes of a run compare it)."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def digest(host: np.ndarray) -> str:
    """What a process tells the others of an input's host data: dtype, shape and a CRC of its bytes."""
    data = np.ascontiguousarray(host)
    crc = zlib.crc32(data.view(np.uint8).reshape(-1)) if data.size else 0
    return f"{data.dtype}{list(data.shape)} crc {crc:08x}"


def agree(channel: str, fields: Dict[str, str], what: str) -> None:
    """Check that every process passes equal ``fields`` at this point of ``channel`` (e.g. ``"call"``); ``what``
    names the step in words, e.g. "the call of a partitioned program" (for the error).  A no-op in a
    single-process run."""
    client = jax_private.distributed_client()
    count = jax.process_count()
    if client is None or count == 1:
        return
    me = jax.process_index()
    n = _CHANNELS.next(channel)
    timeout = _CHANNELS.timeout
    order = sorted(fields)
    mine = "\x1f".join(f"{k}\x1e{fields[k]}" for k in order)
    prefix = f"fxla/{channel}/{n}/"
    client.key_value_set(prefix + str(me), mine)
    theirs: Dict[int, str] = {}
    for p in range(count):
        if p == me:
            continue
        try:
            theirs[p] = client.blocking_key_value_get(prefix + str(p), int(timeout * 1000))
        except Exception as err:  # noqa: BLE001  (jaxlib raises its runtime error: deadline, dead peer)
            raise ProcessMismatchError(
                f"process {p} did not reach {what} (number {n} of this run) within {timeout:g} s (process {me} "
                f"did)\nwhy: every process must compile and call the same programs in the same order; "
                f"process {p} is stuck, slower by more than the timeout, runs something else, or has died "
                f"({_first_line(err)})\nfix: make every process run the same calls (check its own error output "
                f"first); raise timeout= of fxla.distributed.initialize if one process legitimately works longer "
                f"alone") from None
    if n:                              # every process has published call n, so all have read call n - 1
        try:
            client.key_value_delete(f"fxla/{channel}/{n - 1}/{me}")
        except Exception:  # noqa: BLE001  (only memory in the coordinator)
            pass
    differing = {p: dict(part.split("\x1e", 1) for part in text.split("\x1f") if part)
                 for p, text in theirs.items() if text != mine}
    if differing:
        lines, kinds = [], set()
        for p, other in sorted(differing.items()):
            for key in sorted(set(order) | set(other)):
                if fields.get(key) != other.get(key):
                    kinds.add(key.split(" ", 1)[0])
                    lines.append(f"  {key}: process {me} has {fields.get(key, '(nothing)')}, process {p} has "
                                 f"{other.get(key, '(nothing)')}")
        fixes = [fix for kind, fix in _FIXES if kind in kinds]
        raise ProcessMismatchError(
            f"the processes differ at {what} (number {n} of this run):\n" + "\n".join(lines[:12]) +
            (f"\n  ... and {len(lines) - 12} more" if len(lines) > 12 else "") +
            "\nwhy: one SPMD program runs on the devices of every process: each process must compile and call "
            "the same program with the same weights, and a torch tensor passed to it is its global value, the "
            "same on every process\nfix: " + "; ".join(fixes or [_FIXES[0][1]]))


#: what to do about each kind of difference :func:`agree` finds (by the first word of the field's name)
_FIXES = (
    ("program", "make every process compile and call the same model with inputs of the same shapes, in the "
                "same order"),
    ("weight", "give every process the same weights (seed torch before building the model, or load the same "
               "checkpoint everywhere)"),
    ("tensor", "pass every process the same input, or build the input from each process's own part with "
               "fxla.distributed.from_local(tensor, mesh, spec) and pass that jax.Array"),
    ("barrier", "make every process reach the same barriers in the same order"),
    ("checkpoint", "make every process save or load the same checkpoint at the same point"),
    ("state", "give every process the same model and optimizer state (train it with the same compiled steps, "
              "or load the same checkpoint everywhere)"),
)


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0][:200] if text else type(err).__name__


def gather(array: jax.Array) -> np.ndarray:
    """The whole value of ``array`` (which spans processes) on this process: a collective every process must
    enter with its own part of the same array."""
    from jax.experimental import multihost_utils
    with jax.enable_x64(array.dtype.itemsize == 8):
        return np.asarray(multihost_utils.process_allgather(array, tiled=True))


def local_part(array: jax.Array) -> np.ndarray:
    """This process's part of ``array``: its addressable shards put together (the inverse of building a global
    array from each process's local data), for an array whose shards on this process form one block."""
    shards = array.addressable_shards
    bounds = [[(s.start or 0, array.shape[d] if s.stop is None else s.stop) for d, s in enumerate(shard.index)]
              for shard in shards]
    lo = [min(b[d][0] for b in bounds) for d in range(array.ndim)]
    hi = [max(b[d][1] for b in bounds) for d in range(array.ndim)]
    out = np.empty([h - l for l, h in zip(lo, hi)], dtype=array.dtype)
    filled = np.zeros(out.shape, dtype=bool)
    for shard, bound in zip(shards, bounds):
        where = tuple(slice(a - l, b - l) for (a, b), l in zip(bound, lo))
        out[where] = np.asarray(shard.data)
        filled[where] = True
    if not filled.all():
        raise ProcessMismatchError(
            f"this process's shards of an array of shape {list(array.shape)} do not form one block\n"
            f"why: its devices hold parts that are not next to each other in the mesh's order\n"
            f"fix: order the mesh so that each process's devices are contiguous along the sharded dimension "
            f"(fxla.distributed.mesh does), or use fxla.distributed.gather")
    return out


def from_local(host: np.ndarray, sharding: jax.sharding.Sharding, global_shape: Sequence[int]) -> jax.Array:
    """The global array of ``global_shape`` whose part on this process is ``host`` (each process passes its
    own part)."""
    with jax.enable_x64(host.dtype.itemsize == 8):
        return jax.make_array_from_process_local_data(sharding, host, tuple(global_shape))


def place_sharded(values: Sequence, shardings: Sequence[jax.sharding.Sharding], label: str,
                  weights: Optional[Dict[str, str]] = None) -> List[jax.Array]:
    """``values`` (torch tensors or jax arrays) placed as ``shardings`` say, for a call of the program ``label``
    (its signature and fingerprint).  When the shardings span processes, the processes first agree on the
    program, on ``weights`` (digests of the resident weights it reads) and on the host data of every torch
    tensor (:func:`agree`): a torch tensor is the global value."""
    from .buffers import host_data, to_device
    if any(spans_processes(s) for s in shardings):
        fields = {"program": label, **(weights or {})}
        for i, value in enumerate(values):
            if not isinstance(value, jax.Array):
                fields[f"tensor input {i}"] = digest(host_data(value))
        agree("call", fields, "the call of a partitioned program")
    return [to_device(v, s) for v, s in zip(values, shardings)]
