"""torch tensors / jax arrays <-> PJRT device buffers (``jax.Array``).

On the CPU, tensors are shared through DLPack without a copy where jax can alias them (aligned, contiguous,
and for 64-bit types only with x64 enabled); otherwise the data is copied once.  Outputs come back to torch
through DLPack as well, so a CPU result is not copied either.  ``jax.Array`` inputs already on the target
device (or laid out as the target sharding) are passed through untouched.

A *placement* is a ``jax.Device`` (single-device programs) or a ``jax.sharding.Sharding`` (partitioned ones).
"""
from __future__ import annotations

import functools
from typing import Union

import jax
import ml_dtypes
import numpy as np
import torch
from jax._src import core as _jax_core              # semi-public: pinned jaxlib 0.10.2, covered by tests
from jax._src.lib import xla_client as _xla_client

from fxla.errors import FxlaError

_WIDE = (torch.int64, torch.float64)

Placement = Union[jax.Device, jax.sharding.Sharding]

_TORCH_OF_NUMPY = {np.dtype(np.float32): torch.float32, np.dtype(np.float16): torch.float16,
                   np.dtype(ml_dtypes.bfloat16): torch.bfloat16, np.dtype(np.float64): torch.float64,
                   np.dtype(np.int8): torch.int8, np.dtype(np.int16): torch.int16,
                   np.dtype(np.int32): torch.int32, np.dtype(np.int64): torch.int64,
                   np.dtype(np.uint8): torch.uint8, np.dtype(np.bool_): torch.bool}


class InputError(FxlaError):
    """An input fxla cannot take (its type, or a shape/dtype the program was not built for)."""


def torch_dtype(array) -> torch.dtype:
    """The torch dtype of a ``jax.Array`` (or numpy array)."""
    try:
        return _TORCH_OF_NUMPY[np.dtype(array.dtype)]
    except KeyError:
        raise InputError(f"an input of dtype {array.dtype} has no torch equivalent fxla supports\n"
                         f"fix: cast it to one of {sorted(str(d) for d in _TORCH_OF_NUMPY)}") from None


def is_array(value) -> bool:
    """A tensor-like input: a torch tensor or a ``jax.Array``."""
    return isinstance(value, (torch.Tensor, jax.Array))


def _numpy(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _placed(arr: jax.Array, placement: Placement) -> bool:
    if isinstance(placement, jax.Device):
        return arr.devices() == {placement}
    return arr.sharding.is_equivalent_to(placement, arr.ndim)


@functools.lru_cache(maxsize=None)
def _single_device(device: jax.Device) -> jax.sharding.SingleDeviceSharding:
    return jax.sharding.SingleDeviceSharding(device)


def _put(host: np.ndarray, placement: Placement) -> jax.Array:
    """Host array -> device array keeping its exact dtype (64-bit types too); aliases aligned CPU memory.

    Single-device placement goes straight to PJRT's ``batched_device_put`` (what ``jax.device_put`` ends in):
    ~3 µs a call instead of ~27 µs through ``jax.device_put``'s generic argument handling.
    """
    if isinstance(placement, jax.Device):
        aval = _jax_core.ShapedArray(host.shape, host.dtype)
        return _xla_client.batched_device_put(aval, _single_device(placement), [host], [placement], True,
                                              enable_x64=True)
    if host.dtype.itemsize == 8:          # jax narrows 64-bit values unless x64 is on: only for this transfer
        with jax.enable_x64(True):
            return jax.device_put(host, placement)
    return jax.device_put(host, placement)


def to_device(value, placement: Placement) -> jax.Array:
    """Place ``value`` (a torch tensor of any dtype fxla supports, or a jax array) on ``placement``."""
    if isinstance(value, jax.Array):
        if _placed(value, placement):
            return value
        return jax.device_put(value, placement)
    t = value.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    # On the CPU, placing an aligned numpy view aliases the tensor's memory (no copy).  It is used instead of
    # DLPack on purpose: a DLPack-imported buffer is freed through torch's deleter, which takes the GIL from
    # XLA's worker thread and aborts the process when that happens during interpreter exit (measured: 20-60 %
    # of short scripts died with "terminate called without an active exception").
    return _put(_numpy(t), placement)


def from_device(array: jax.Array) -> torch.Tensor:
    """A torch view of a device array (zero-copy on the CPU for a single-device array)."""
    if array.dtype in (np.int64, np.float64) or array.dtype == np.bool_ or len(array.devices()) > 1:
        host = np.asarray(array)
        if host.dtype == ml_dtypes.bfloat16:
            return torch.from_numpy(host.view(np.int16).copy()).view(torch.bfloat16)
        return torch.from_numpy(host.copy())
    try:
        return torch.from_dlpack(array)
    except (RuntimeError, TypeError, BufferError):
        return torch.from_numpy(np.asarray(array).copy())


def example_tensor(value) -> torch.Tensor:
    """A torch tensor with ``value``'s shape, dtype and data (for tracing/shape propagation)."""
    if isinstance(value, torch.Tensor):
        return value
    return from_device(value) if torch_dtype(value) not in _WIDE else torch.from_numpy(np.asarray(value).copy())
