"""torch tensors <-> PJRT device buffers (``jax.Array``).

On the CPU, tensors are shared through DLPack without a copy where jax can alias them (aligned, contiguous,
and for 64-bit types only with x64 enabled); otherwise the data is copied once.  Outputs come back to torch
through DLPack as well, so a CPU result is not copied either.
"""
from __future__ import annotations

import jax
import jax.dlpack
import numpy as np
import torch

_WIDE = (torch.int64, torch.float64)


def to_device(tensor: torch.Tensor, device: jax.Device) -> jax.Array:
    """Place ``tensor`` (any dtype fxla supports) on ``device`` keeping its exact dtype."""
    t = tensor.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    if t.dtype in _WIDE:
        # jax narrows 64-bit values unless x64 is on; turn it on for this transfer only.
        with jax.enable_x64(True):
            return jax.device_put(t.numpy(), device)
    if device.platform == "cpu" and t.dtype != torch.bool:
        try:
            arr = jax.dlpack.from_dlpack(t)
            if arr.devices() == {device}:
                return arr
        except (RuntimeError, TypeError, ValueError, BufferError):
            pass
    if t.dtype == torch.bfloat16:
        import ml_dtypes
        return jax.device_put(t.view(torch.int16).numpy().view(ml_dtypes.bfloat16), device)
    return jax.device_put(t.numpy(), device)


def from_device(array: jax.Array) -> torch.Tensor:
    """A torch view of a device array (zero-copy on the CPU)."""
    if array.dtype in (np.int64, np.float64) or array.dtype == np.bool_:
        return torch.from_numpy(np.asarray(array).copy())
    try:
        return torch.from_dlpack(array)
    except (RuntimeError, TypeError, BufferError):
        return torch.from_numpy(np.asarray(array).copy())
