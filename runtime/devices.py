"""Choosing a PJRT device: ``"cpu"``, ``"gpu"``, ``"tpu"``, torch's spellings (``torch.device("cpu")``,
``"cuda:1"``, ``"CPU"``), a ``jax.Device`` or ``None`` (JAX's default)."""
from __future__ import annotations

import jax

from fxla.base.errors import FxlaError
from fxla.base.shown import abbreviate


_INSTALL = {"gpu": "; for an NVIDIA GPU install the CUDA plugin matching jaxlib (pip install "
                  "'jax[cuda12]==<jax version>') on a machine with a GPU",
            "cuda": "; for an NVIDIA GPU install the CUDA plugin matching jaxlib (pip install "
                    "'jax[cuda12]==<jax version>') on a machine with a GPU",
            "tpu": "; for a TPU install libtpu (pip install 'jax[tpu]==<jax version>') on a TPU host"}


#: torch's platform names -> JAX's
_ALIASES = {"cuda": "gpu"}


def _torch_device(device) -> bool:
    return type(device).__name__ == "device" and type(device).__module__ == "torch"


class DeviceError(FxlaError):
    """The requested device does not exist on this machine."""


def resolve_device(device=None) -> jax.Device:
    """The ``jax.Device`` for ``device``: ``None`` (this process's first device: JAX's default device), ``"cpu"``/
    ``"gpu"``/``"tpu"`` (index 0 of that platform), ``"cpu:1"`` (an index among this process's devices of that
    platform: in a multi-process run, fxla.distributed, other processes' devices are not this process's to use), torch's spellings (a ``torch.device``, ``"cuda"`` for ``"gpu"``, any
    letter case), or a ``jax.Device`` (returned as is).

    Raises :class:`DeviceError` for a platform JAX does not find here, a bad or out-of-range index, or another
    kind of value.
    """
    if device is None:
        return jax.local_devices()[0]
    if isinstance(device, jax.Device):
        return device
    if _torch_device(device):
        device = device.type + (f":{device.index}" if device.index is not None else "")
    if isinstance(device, str):
        platform, _, index = device.strip().lower().partition(":")
        platform = _ALIASES.get(platform, platform)
        device = f"{platform}:{index}" if index else platform
        try:
            devices = jax.local_devices(backend=platform)
        except RuntimeError as err:
            hint = _INSTALL.get(platform, "")
            raise DeviceError(f"no '{platform}' device is available: {err}\n"
                              f"fix: use one of the platforms JAX finds here: "
                              f"{sorted({d.platform for d in jax.devices()})}{hint}") from None
        if index and not index.isdigit():
            raise DeviceError(f"cannot use {abbreviate(device)} as a device: '{index}' is not a device index\n"
                              f"fix: write '{platform}:0', '{platform}:1', ...")
        i = int(index) if index else 0
        if i >= len(devices):
            raise DeviceError(f"device '{device}' does not exist: only {len(devices)} {platform} device(s)\n"
                              f"fix: pick an index below {len(devices)}")
        return devices[i]
    raise DeviceError(f"cannot use {abbreviate(device)} as a device\nfix: pass 'cpu', 'gpu', 'tpu', 'cpu:1', a "
                      f"torch.device or a jax.Device")
