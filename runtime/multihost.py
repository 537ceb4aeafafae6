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
from typing import Callable, Dict, List, Optional, Sequence

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
        #: why the processes can no longer tell which of their calls belong together (a process that did not
        #: arrive: its later calls would pair with the others' later ones), or None
        self.out_of_step: Optional[str] = None

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


def agree(channel: str, fields: Dict[str, str], what: str, *, common_only: bool = False,
          timeout: Optional[float] = None) -> None:
    """Check that every process passes equal ``fields`` at this point of ``channel`` (e.g. ``"call"``); ``what``
    names the step in words, e.g. "the call of a partitioned program" (for the error); ``common_only``: compare
    only the fields both processes have (each process's own part of something); ``timeout``: seconds to wait
    (default :func:`get_timeout`).  A no-op in a single-process
    run.  After a process did not arrive, every later call raises: the processes are out of step."""
    client = jax_private.distributed_client()
    count = jax.process_count()
    if client is None or count == 1:
        return
    if _CHANNELS.out_of_step is not None:
        raise ProcessMismatchError(
            f"the processes of this run are out of step since {_CHANNELS.out_of_step}\nwhy: the process that did "
            f"not arrive would pair its next calls with other calls of the others (another batch, another "
            f"program): fxla cannot tell which calls belong together any more\nfix: end every process of the run "
            f"and start it again (from a checkpoint: fxla.distributed.save_checkpoint)")
    me = jax.process_index()
    n = _CHANNELS.next(channel)
    timeout = _CHANNELS.timeout if timeout is None else float(timeout)
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
            _CHANNELS.out_of_step = f"{what} (number {n} of this run), which process {p} did not reach"
            try:                       # (a late process must not find it and pair with it)
                client.key_value_delete(prefix + str(me))
            except Exception:  # noqa: BLE001
                pass
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
        _mismatch(differing, fields, order, me, n, what, common_only)


def _mismatch(differing: Dict[int, Dict[str, str]], fields: Dict[str, str], order, me: int, n: int, what: str,
              common_only: bool) -> None:
    """Raise the error of :func:`agree` for the fields that differ (none: compared parts that no two
    processes share)."""
    lines, kinds = [], set()
    for p, other in sorted(differing.items()):
        keys = set(order) & set(other) if common_only else set(order) | set(other)
        for key in sorted(keys):
            if fields.get(key) != other.get(key):
                kinds.add(key.split(" ", 1)[0])
                lines.append(f"  {key}: process {me} has {fields.get(key, '(nothing)')}, process {p} has "
                             f"{other.get(key, '(nothing)')}")
    if not lines:
        return
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
    ("input", "fix the inputs fxla refused on the process named above (its own error says how)"),
    ("parameter", "give every process the same weights (seed torch before building the model, or load the same "
                  "checkpoint everywhere), and change them alike on every process between steps"),
    ("optimizer", "give every process the same optimizer state and hyperparameters (the same learning rate and "
                  "schedule, the same checkpoint)"),
    ("accumulator", "make every process run the same micro-steps"),
    ("clip", "pass every process the same max_grad_norm"),
    ("batch", "pass every process the same batch, or build it from each process's own rows with "
              "fxla.distributed.from_local(tensor, mesh, spec)"),
    ("from_local", "call fxla.distributed.from_local at the same point on every process, with the same mesh and "
                   "spec and parts of the same shape"),
    ("part", "pass the same data on every process that holds the same part (a dimension not split across "
             "processes is each of those processes' whole copy)"),
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
        from .sharding import ShardingError
        raise ShardingError(
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
                  weights: Optional[Dict[str, str]] = None, check: Optional[Callable[[], None]] = None,
                  names: Optional[Sequence[str]] = None) -> List[jax.Array]:
    """``values`` (torch tensors or jax arrays) placed as ``shardings`` say, for a call of the program ``label``
    (its signature and fingerprint); ``check()`` raises for inputs the program must not run on (indices out of
    range); ``names``: what to call each value in an error (default ``tensor input <i>``).

    When the shardings span processes, the processes first agree (:func:`agree`) on the program, on ``weights``
    (digests of the resident weights it reads), on the host data of every torch tensor (a torch tensor is the
    global value) and on the outcome of ``check`` and of this process's own checks of the values: an input one
    process refuses is an error on every process, never a collective the others enter alone."""
    from .buffers import host_data, to_device
    if not any(spans_processes(s) for s in shardings):
        if check is not None:
            check()
        return [to_device(v, s) for v, s in zip(values, shardings)]
    names = list(names) if names is not None else [f"tensor input {i}" for i in range(len(values))]
    failure = None
    try:
        if check is not None:
            check()
        for name, value, sharding in zip(names, values, shardings):
            if isinstance(value, jax.Array) and value.is_fully_addressable and spans_processes(sharding):
                raise InputPlacementError(
                    f"{name} is a jax.Array on this process's devices only, but the program takes it over "
                    f"several processes' devices\nwhy: a process can place data only on its own devices\nfix: "
                    f"pass a torch tensor (the global value, the same on every process), or build the input from "
                    f"each process's own part with fxla.distributed.from_local(part, mesh, spec)")
    except FxlaError as err:
        failure = err
    fields = {"program": label, **(weights or {}),
              "input checks": "passed" if failure is None else f"{type(failure).__name__}: {_first_line(failure)}"}
    if failure is None:
        for name, value in zip(names, values):
            if not isinstance(value, jax.Array):
                fields[name] = digest(host_data(value))
    try:
        agree("call", fields, "the call of a partitioned program")
    except ProcessMismatchError as mismatch:
        if failure is not None:                # this process's own error says more; the others were told
            raise failure from mismatch
        raise
    if failure is not None:                    # (every process refused its inputs alike)
        raise failure
    return [to_device(v, s) for v, s in zip(values, shardings)]


class InputPlacementError(FxlaError):
    """An input a program over several processes cannot take as it is."""
