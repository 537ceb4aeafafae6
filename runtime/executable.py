"""Compiling verified StableHLO text with PJRT and running it on device buffers.

Single-device programs compile for one ``jax.Device``; partitioned ones (see :mod:`fxla.runtime.sharding`) for
every device of a mesh through XLA's SPMD partitioner (Shardy).  With a cache directory, executables are
serialized to / deserialized from fxla's on-disk cache (:mod:`fxla.runtime.cache`).
"""
from __future__ import annotations

import time
from typing import List, Optional, Sequence, Union

import jax
import numpy as np
from jax.extend import backend as jax_backend
from jaxlib import xla_client

from fxla.errors import FxlaError

from . import cache as _cache
from .sharding import Partitioning, annotate, named_sharding, signature_of


class CompileError(FxlaError):
    """XLA rejected a module (an fxla bug or a backend limitation)."""


class Executable:
    """A loaded PJRT executable; ``__call__`` takes and returns ``jax.Array``\\ s.

    Single device: arguments live on :attr:`device`.  Partitioned: arguments are global arrays laid out as
    :attr:`in_shardings` says, results are global arrays with :attr:`out_shardings`.
    """

    def __init__(self, loaded, device: jax.Device, text, *, partitioning: Optional[Partitioning] = None,
                 from_cache: bool = False, compile_seconds: float = 0.0, out_shapes=None):
        self._loaded = loaded
        self.device = device
        self.stablehlo = text
        self.partitioning = partitioning
        self.from_cache = from_cache          # True when deserialized from a cache directory
        self.compile_seconds = compile_seconds
        self._out_shapes = out_shapes
        if partitioning is not None:
            mesh = partitioning.mesh
            self.in_shardings = [named_sharding(mesh, s) for s in partitioning.arg_specs]
            self.out_shardings = [named_sharding(mesh, s) for s in partitioning.out_specs]

    @property
    def devices(self) -> List[jax.Device]:
        return self.partitioning.devices if self.partitioning is not None else [self.device]

    def __call__(self, args: Sequence[jax.Array], *, wait: bool = False) -> List[jax.Array]:
        """Run on ``args``; ``wait``: return only once the results are computed.

        Pass ``wait=True`` when an argument shares memory with a torch tensor: the caller may change that
        tensor as soon as the call returns, so the program must have read it by then.
        """
        args = list(args)
        results = self._loaded.execute_sharded(args).disassemble_into_single_device_arrays()
        if self.partitioning is None:
            outs = [outs[0] for outs in results]
            return jax.block_until_ready(outs) if wait else outs
        outs = [jax.make_array_from_single_device_arrays(shape, sharding, shards)
                for shape, sharding, shards in zip(self._out_shapes, self.out_shardings, results)]
        # Back-to-back un-synchronised partitioned runs with collectives deadlock the CPU client on small
        # machines (rendezvous timeout, then abort); waiting here serialises them.  See docs/runtime.md.
        return jax.block_until_ready(outs)

    def hlo_text(self) -> str:
        """XLA's optimised HLO for this executable."""
        return self._loaded.hlo_modules()[0].to_string() if hasattr(self._loaded, "hlo_modules") else \
            self._loaded.get_hlo_text()

    def serialize(self) -> bytes:
        return self._loaded.serialize()


def _options(partitioning: Optional[Partitioning], devices: Sequence[jax.Device]):
    options = xla_client.CompileOptions()
    # Without an explicit assignment XLA assumes device 0, and buffers on e.g. cpu:1 are then rejected.
    ids = np.array([d.id for d in devices]).reshape(1, len(devices))
    options.device_assignment = xla_client.DeviceAssignment.create(ids)
    if partitioning is not None:
        n = len(partitioning.devices)
        options.num_replicas = 1
        options.num_partitions = n
        build = options.executable_build_options
        build.use_spmd_partitioning = True
        build.use_shardy_partitioner = True
    return options


def compile_stablehlo(text: Union[str, bytes], device: Optional[jax.Device] = None, *,
                      partitioning: Optional[Partitioning] = None,
                      cache_dir: Optional[str] = None, cache_text: Optional[str] = None) -> Executable:
    """Compile StableHLO ``text`` (text, MLIR bytecode or a portable artifact) for ``device``.

    ``partitioning``: compile for its mesh with the SPMD partitioner instead (``device`` is then ignored).
    ``cache_dir``: the on-disk executable cache to use (default: :func:`fxla.runtime.set_cache_dir`'s).
    ``cache_text``: what to key the cache entry on instead of ``text`` (e.g. the module without source
    locations, so the same program traced from another line or file still hits).
    """
    key_source = cache_text if cache_text is not None else text
    out_shapes = None
    if partitioning is not None:
        if not isinstance(text, str):
            raise CompileError("partitioned compilation needs StableHLO text\nfix: pass the module as text")
        text = annotate(text, partitioning)
        out_shapes = [shape for shape, _ in signature_of(text)[1]]
        devices = partitioning.devices
        device = devices[0]
    else:
        if device is None:
            device = jax.devices()[0]
        devices = [device]
    backend = jax_backend.get_backend(device.platform)
    options = _options(partitioning, devices)
    device_list = xla_client.DeviceList(tuple(devices))
    cache_dir = cache_dir if cache_dir is not None else _cache.get_cache_dir()
    disk = key = None
    if cache_dir is not None:
        disk = _cache.DiskCache(cache_dir)
        fingerprint = (f"{device.platform}/{device.device_kind}/{backend.platform_version}/n={len(devices)}/"
                       f"{partitioning.fingerprint() if partitioning else 'single'}")
        key = _cache.cache_key(key_source, fingerprint)
        payload = disk.load(key)
        if payload is not None:
            try:
                loaded = backend.deserialize_executable(payload, device_list, options)
            except Exception as err:  # noqa: BLE001  (PJRT raises JaxRuntimeError on a bad blob)
                disk.corrupt(key, f"PJRT could not deserialize it ({str(err).splitlines()[0]})")
            else:
                _cache.STATS.disk_hits += 1
                return Executable(loaded, device, text, partitioning=partitioning, from_cache=True,
                                  out_shapes=out_shapes)
    start = time.perf_counter()
    try:
        loaded = backend.compile_and_load(text, device_list, options)
    except Exception as err:  # jaxlib raises XlaRuntimeError (a RuntimeError) with XLA's message
        raise CompileError(f"XLA could not compile the module for {device}:\n{err}\n"
                           f"fix: report this with `fxla-dump --stage stablehlo` output") from err
    seconds = time.perf_counter() - start
    _cache.STATS.compiles += 1
    if disk is not None:
        disk.store(key, loaded.serialize())
    return Executable(loaded, device, text, partitioning=partitioning, compile_seconds=seconds,
                      out_shapes=out_shapes)
