"""Compiling verified StableHLO text with PJRT and running it on device buffers."""
from __future__ import annotations

from typing import List, Sequence

import jax
from jax.extend import backend as jax_backend
from jaxlib import xla_client

from fxla.errors import FxlaError


class CompileError(FxlaError):
    """XLA rejected a module (an fxla bug or a backend limitation)."""


class Executable:
    """A loaded PJRT executable for one device; ``__call__`` takes and returns ``jax.Array``\\ s on it."""

    def __init__(self, loaded, device: jax.Device, text: str):
        self._loaded = loaded
        self.device = device
        self.stablehlo = text

    def __call__(self, args: Sequence[jax.Array]) -> List[jax.Array]:
        results = self._loaded.execute_sharded(list(args))
        return [outs[0] for outs in results.disassemble_into_single_device_arrays()]

    def hlo_text(self) -> str:
        """XLA's optimised HLO for this executable."""
        return self._loaded.hlo_modules()[0].to_string() if hasattr(self._loaded, "hlo_modules") else \
            self._loaded.get_hlo_text()


def compile_stablehlo(text: str, device: jax.Device) -> Executable:
    """Compile StableHLO ``text`` for ``device`` (single device, no partitioning)."""
    backend = jax_backend.get_backend(device.platform)
    options = xla_client.CompileOptions()
    try:
        loaded = backend.compile_and_load(text, xla_client.DeviceList((device,)), options)
    except Exception as err:  # jaxlib raises XlaRuntimeError (a RuntimeError) with XLA's message
        raise CompileError(f"XLA could not compile the module for {device}:\n{err}\n"
                           f"fix: report this with `fxla-dump --stage stablehlo` output") from err
    return Executable(loaded, device, text)
