"""Compiling verified StableHLO text and running it on device buffers.

Single-device programs are compiled through JAX's ahead-of-time API: the module is wrapped in the
``fxla_call`` primitive (:mod:`fxla.runtime.jax_interop`), traced with ``jax.jit(...).lower(...)`` for the
program's exact argument types on one ``jax.Device`` and compiled.  XLA inlines the wrapper away, so the
executable is the program's own; what this buys is JAX's C++ dispatch path — a call costs what a ``jax.jit``
call costs (a few µs), where driving the PJRT executable from Python costs 2–3× more.  Partitioned programs
(see :mod:`fxla.runtime.sharding`) are compiled with PJRT directly for every device of a mesh through XLA's
SPMD partitioner (Shardy).  With a cache directory, executables are serialized to / deserialized from fxla's
on-disk cache (:mod:`fxla.runtime.cache`).
"""
from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Sequence, Union

import jax
import ml_dtypes
import numpy as np
from jax.extend import backend as jax_backend

from fxla.base import jax_private
from fxla.base.errors import FxlaError

from . import cache as _cache
from . import multihost
from .jax_interop import stablehlo_function
from .sharding import Partitioning, annotate, named_sharding, signature_of

# MLIR element type -> numpy dtype of the jax.Array carrying it.
_NUMPY_OF_MLIR = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f64": np.float64,
                  "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
                  "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64,
                  "complex<f32>": np.complex64, "complex<f64>": np.complex128}
_NUMPY_OF_MLIR.update({mlir: getattr(ml_dtypes, name) for mlir, name in (
    ("i2", "int2"), ("ui2", "uint2"), ("i4", "int4"), ("ui4", "uint4"), ("f8E4M3FN", "float8_e4m3fn"),
    ("f8E5M2", "float8_e5m2"), ("f8E4M3FNUZ", "float8_e4m3fnuz"), ("f8E5M2FNUZ", "float8_e5m2fnuz"),
    ("f8E4M3B11FNUZ", "float8_e4m3b11fnuz"), ("f8E3M4", "float8_e3m4"), ("f8E4M3", "float8_e4m3"),
    ("f8E8M0FNU", "float8_e8m0fnu"), ("f4E2M1FN", "float4_e2m1fn")) if hasattr(ml_dtypes, name)})


class CompileError(FxlaError):
    """XLA rejected a module (an fxla bug or a backend limitation)."""


def numpy_dtype(mlir_type: str) -> np.dtype:
    """The numpy dtype of a ``jax.Array`` holding MLIR element type ``mlir_type`` (``"f32"``, ``"i64"``…)."""
    try:
        return np.dtype(_NUMPY_OF_MLIR[mlir_type])
    except KeyError:
        raise CompileError(f"the program has a value of MLIR type {mlir_type}, which fxla's runtime cannot "
                           f"hold in a jax.Array\nfix: use one of {sorted(_NUMPY_OF_MLIR)}") from None


class Executable:
    """A compiled program; ``__call__`` takes and returns lists of ``jax.Array``\\ s.

    Single device: arguments live on :attr:`device`; the call goes through JAX's C++ dispatch (a
    ``jax.stages.Compiled``).  Partitioned: arguments are global arrays laid out as :attr:`in_shardings` says,
    results are global arrays with :attr:`out_shardings`.
    """

    def __init__(self, runner, device: jax.Device, text, *, partitioning: Optional[Partitioning] = None,
                 from_cache: bool = False, compile_seconds: float = 0.0, out_shapes=None, n_params: int = 0,
                 label: str = ""):
        self._runner = runner                 # jax.stages.Compiled (single device) or a PJRT LoadedExecutable
        self.device = device
        self.n_params = n_params if partitioning is None else 0   # see runner
        self.stablehlo = text
        self.partitioning = partitioning
        self.from_cache = from_cache          # True when deserialized from a cache directory
        self.compile_seconds = compile_seconds
        self._out_shapes = out_shapes
        #: what the processes of a multi-process run compare before each call: signature and program hash
        self.label = label
        if partitioning is not None:
            mesh = partitioning.mesh
            self.in_shardings = [named_sharding(mesh, s) for s in partitioning.arg_specs]
            self.out_shardings = [named_sharding(mesh, s) for s in partitioning.out_specs]

    @property
    def runner(self):
        """Single device: the compiled program as a ``jax.stages.Compiled`` — call it with the arguments
        positionally, **parameters first**: ``runner(*params, *inputs)``, where ``params`` are the program's last
        :attr:`n_params` arguments (the order in which JAX's C++ dispatch passes a program's constants, see
        :mod:`fxla.runtime.cpp_dispatch`); it returns the list of results (the fast path of
        :class:`fxla.CompiledModule`)."""
        if self.partitioning is not None:
            raise CompileError("a partitioned executable has no single-device runner\nfix: call the Executable")
        return self._runner

    @property
    def devices(self) -> List[jax.Device]:
        return self.partitioning.devices if self.partitioning is not None else [self.device]

    def __call__(self, args: Sequence[jax.Array], *, wait: bool = False) -> List[jax.Array]:
        """Run on ``args`` (in the program's order: inputs, then parameters); ``wait``: return only once the
        results are computed.

        Pass ``wait=True`` when an argument shares memory with a torch tensor: the caller may change that
        tensor as soon as the call returns, so the program must have read it by then.
        """
        if self.partitioning is None:
            cut = len(args) - self.n_params
            if jax.config.jax_disable_jit:    # JAX's AOT call refuses to run then; the program is compiled: run it
                outs = jax_private.call_compiled_without_jit(self._runner, *args[cut:], *args[:cut])
            else:             # (JAX's C++ call object once the Compiled has made it: a Python frame less)
                outs = jax_private.compiled_call(self._runner)(*args[cut:], *args[:cut])
            return jax.block_until_ready(outs) if wait else outs
        results = self._runner.execute_sharded(list(args)).disassemble_into_single_device_arrays()
        outs = [jax.make_array_from_single_device_arrays(shape, sharding, shards)
                for shape, sharding, shards in zip(self._out_shapes, self.out_shardings, results)]
        # Back-to-back un-synchronised partitioned runs with collectives deadlock the CPU client on small
        # machines (rendezvous timeout, then abort); waiting here serialises them.  See docs/runtime.md.
        return jax.block_until_ready(outs)

    def hlo_text(self) -> str:
        """XLA's optimised HLO for this executable."""
        if self.partitioning is None:
            return self._runner.as_text()
        loaded = self._runner
        return loaded.hlo_modules()[0].to_string() if hasattr(loaded, "hlo_modules") else loaded.get_hlo_text()


#: XLA options of a compile (:func:`compile_stablehlo`'s default: a program without a backward pass).
#:
#: * ``xla_allow_excess_precision``: XLA's default lets f16/bf16 intermediates stay in f32 between fused ops
#:   ("excess precision"), so torch.exp(x_bf16).float() came back unrounded; torch rounds every op's result to
#:   its dtype, and so does XLA without it (docs/ops.md, Numerics).
#: * ``xla_cpu_experimental_ynn_fusion_type``: XLA CPU (jaxlib 0.10.2) sends dots, reductions and every
#:   convolution to YNNPACK by default.  For forward-only programs with large matrix products fxla sends none of
#:   them there (small ones: :data:`SMALL_DOT_XLA_OPTIONS`): XLA's own
#:   (Eigen) kernels ran every model measured on this 2-core machine as fast or faster, e.g. ConvNeXt-Tiny batch 32
#:   4470 -> 2800 ms (YNNPACK fused its depthwise taps and layer norms into the dots), ResNet-18 batch 1 30 -> 25 ms,
#:   MobileNetV2 batch 1 11.8 -> 9.0 ms, GPT-2 small 210 -> 188 ms, an MLP at batch 128 4.2 -> 3.3 ms
#:   (docs/performance.md, "Kernel libraries").  Other platforms ignore it.
XLA_OPTIONS = {"xla_allow_excess_precision": False, "xla_cpu_experimental_ynn_fusion_type": ""}
#: XLA options of programs with a backward pass (training steps, autograd's forward-with-residuals and backward):
#: their dots (weight gradients contract the batch) and reductions run faster on YNNPACK, their convolutions on
#: Eigen, e.g. the MLP training step 13.1 -> 10.5 ms and ResNet-18's 989 -> 897 ms with YNNPACK's dots.  Each dot
#: alone (``INDIVIDUAL_DOT``): with ``LIBRARY_FUSION_TYPE_DOT`` YNNPACK also took the bias add and ReLU after each
#: forward dot into its subgraph, and the MLP's step ran 0.6-0.8 ms slower (9.1 -> 8.4 ms; hand-written JAX's
#: step, same options, 8.7 -> 8.1 ms); ResNet-18 and GPT-2 small measured the same either way
#: (docs/performance.md, "Kernel libraries").
GRADIENT_XLA_OPTIONS = {**XLA_OPTIONS, "xla_cpu_experimental_ynn_fusion_type":
                        "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT,LIBRARY_FUSION_TYPE_REDUCE"}
#: XLA options of a forward-only program whose matrix products are small (:func:`forward_xla_options`): each dot
#: on YNNPACK, alone (not fused with its neighbours), everything else on XLA's own kernels
SMALL_DOT_XLA_OPTIONS = {**XLA_OPTIONS, "xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"}
#: the most rows a forward program's largest matrix product may have for :data:`SMALL_DOT_XLA_OPTIONS`
#: (:mod:`fxla.lowering.dot_rows`: YNNPACK's dots measured faster up to 12544 rows, equal at 1024, slower from
#: 100352 on)
SMALL_DOT_MAX_ROWS = 32768


def forward_xla_options(dot_rows: Optional[int]) -> Optional[Dict[str, Any]]:
    """The XLA options of a forward-only CPU program whose largest matrix product has ``dot_rows`` rows
    (:func:`fxla.lowering.dot_rows.largest_dot_rows`; None: not measured, e.g. a partitioned program):
    :data:`SMALL_DOT_XLA_OPTIONS` up to :data:`SMALL_DOT_MAX_ROWS`, else None (:data:`XLA_OPTIONS`)."""
    return SMALL_DOT_XLA_OPTIONS if dot_rows is not None and dot_rows <= SMALL_DOT_MAX_ROWS else None


def _options(partitioning: Partitioning, options: Dict[str, Any]):
    return jax_private.spmd_compile_options([d.id for d in partitioning.devices], options)


def program_label(text: str, hashed: str) -> str:
    """``main(f32[8, 8], ...) -> (...) #<hash of hashed>``: a program as the processes of a run compare it."""
    ins, outs = signature_of(text)
    show = lambda types: ", ".join(f"{dt}{list(shape)}" for shape, dt in types)   # noqa: E731
    return f"main({show(ins)}) -> ({show(outs)}) #{multihost.program_fingerprint(hashed)}"


def _as_text(program: Union[str, bytes]) -> str:
    """StableHLO text of ``program`` (text, MLIR bytecode or a StableHLO portable artifact)."""
    if isinstance(program, str):
        return program
    from jax.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo
    with jax_mlir.make_ir_context() as ctx:
        try:
            module = stablehlo.deserialize_portable_artifact(ctx, bytes(program))
        except Exception:  # noqa: BLE001  (not an artifact: plain MLIR bytecode)
            try:
                module = ir.Module.parse(bytes(program))
            except Exception as err:  # noqa: BLE001
                raise CompileError(f"cannot read the program: it is neither StableHLO text, MLIR bytecode nor "
                                   f"a portable artifact ({err})\nfix: pass the module as StableHLO text") from None
        return module.operation.get_asm(enable_debug_info=True)


def _jax_compile(text: str, device: jax.Device, signature, n_params: int, options: Dict[str, Any],
                 precompiled=None, donate: Sequence[int] = ()) -> "jax.stages.Compiled":
    """``text`` as a ``jax.stages.Compiled`` taking the parameters first; ``precompiled``: a PJRT executable of
    exactly this program (from the disk cache) to use instead of compiling; ``donate``: the positions (in the
    program's order) of the arguments whose buffers the call consumes."""
    (ins, outs) = signature
    in_avals = [jax.core.ShapedArray(shape, numpy_dtype(dt)) for shape, dt in ins]
    out_avals = [jax.core.ShapedArray(shape, numpy_dtype(dt)) for shape, dt in outs]
    call = stablehlo_function(text, in_avals, out_avals, check_x64=False)
    sharding = jax.sharding.SingleDeviceSharding(device)
    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding) for a in in_avals]
    cut = len(specs) - n_params
    specs = specs[cut:] + specs[:cut]   # the executable takes the parameters first (see Executable.runner)

    def fxla_main(*xs):                 # names XLA's module: HloModule jit_fxla_main
        return list(call(*xs[n_params:], *xs[:n_params]))     # the wrapper is inlined: reordering is free

    # keep_unused: every parameter stays an argument, so the call signature is the program's.
    donated = tuple(sorted(i + n_params if i < cut else i - cut for i in donate))
    with jax.enable_x64(True):          # 64-bit arguments/results keep their width (JAX narrows them otherwise)
        lowered = jax.jit(fxla_main, keep_unused=True, donate_argnums=donated).lower(*specs)
        # a cache hit: JAX wraps the deserialized executable instead of compiling (see jax_private.precompiled)
        with jax_private.precompiled(precompiled):
            return lowered.compile(dict(options))


def _serialize(runner, partitioning) -> bytes:
    """The PJRT executable's own bytes (XLA's serialized form; no Python objects)."""
    return jax_private.serialize_executable(runner if partitioning is not None
                                            else jax_private.loaded_executable(runner))


def compile_stablehlo(text: Union[str, bytes], device: Optional[jax.Device] = None, *,
                      partitioning: Optional[Partitioning] = None,
                      cache_dir: Optional[str] = None, cache_text: Optional[str] = None,
                      n_params: int = 0, donate: Sequence[int] = (),
                      xla_options: Optional[Dict[str, Any]] = None) -> Executable:
    """Compile StableHLO ``text`` (text, MLIR bytecode or a portable artifact) for ``device``.

    ``partitioning``: compile for its mesh with the SPMD partitioner instead (``device`` is then ignored).
    ``cache_dir``: the on-disk executable cache to use (default: :func:`fxla.runtime.set_cache_dir`'s).
    ``cache_text``: what to key the cache entry on instead of ``text`` (e.g. the module without source
    locations, so the same program traced from another line or file still hits).
    ``n_params``: how many of the program's last arguments are parameters (the same buffers on every call); a
    single-device executable takes them first (:attr:`Executable.runner`), :meth:`Executable.__call__` still
    takes the program's order.
    ``donate``: positions of arguments (single device) whose buffers a call consumes: XLA may write results into
    them, and the arrays passed there are deleted by the call (a training step's parameters and state).
    ``xla_options``: XLA's compile options (default :data:`XLA_OPTIONS`; programs with a backward pass take
    :data:`GRADIENT_XLA_OPTIONS`); they are part of the disk cache's key.
    """
    options = dict(XLA_OPTIONS if xla_options is None else xla_options)
    key_source = cache_text if cache_text is not None else text
    text = _as_text(text)
    out_shapes, label = None, ""
    if partitioning is not None:
        text = annotate(text, partitioning)
        out_shapes = [shape for shape, _ in signature_of(text)[1]]
        devices = partitioning.devices
        device = devices[0]
        # (hashed without source locations: the processes may run the same code from different folders)
        label = program_label(text, _as_text(key_source) + partitioning.fingerprint())
        if multihost.spans_processes(devices):      # every process must compile this very program
            multihost.agree("compile", {"program": label}, "the compile of a partitioned program")
    else:
        if device is None:
            device = jax.local_devices()[0]
        devices = [device]
    backend = jax_backend.get_backend(device.platform)
    signature = signature_of(text)
    if not 0 <= n_params <= len(signature[0]):
        raise CompileError(f"n_params={n_params}, but the program takes {len(signature[0])} arguments\n"
                           f"fix: pass how many of its last arguments are parameters")
    if partitioning is not None:
        n_params = 0
        if donate:
            raise CompileError("donate= is for single-device executables\nfix: leave it out with a mesh")
    donate = tuple(sorted(set(donate)))
    implicit = cache_dir is None and _cache.using_default_dir()
    cache_dir = cache_dir if cache_dir is not None else _cache.get_cache_dir()
    disk = key = None
    if cache_dir is not None:
        try:
            disk = _cache.DiskCache(cache_dir)
        except _cache.CacheError as err:
            if not implicit:
                raise
            _cache.warn_default_unusable(err)       # the user's default folder (nobody chose it): compile on
            cache_dir = None
    if cache_dir is not None:
        fingerprint = (f"{device.platform}/{device.device_kind}/{backend.platform_version}/n={len(devices)}/"
                       f"device={device.id}/jax-{jax.__version__}/{sorted(options.items())}/"
                       f"{partitioning.fingerprint() if partitioning else f'single/params-first={n_params}'}"
                       f"{f'/donate={list(donate)}' if donate else ''}")
        key = _cache.EntryKey.of(key_source, fingerprint)
        payload = disk.load(key)
        if payload is not None:
            try:
                runner = _deserialize(payload, backend, devices, partitioning, text, signature, n_params, options,
                                      donate)
            except Exception as err:  # noqa: BLE001  (PJRT raises JaxRuntimeError on a bad blob)
                disk.corrupt(key, f"it could not be deserialized ({_cache._first_line(err)})")
            else:
                _cache.STATS.disk_hits += 1
                return Executable(runner, device, text, partitioning=partitioning, from_cache=True,
                                  out_shapes=out_shapes, n_params=n_params, label=label)
    start = time.perf_counter()
    try:
        if partitioning is None:
            runner = _jax_compile(text, device, signature, n_params, options, donate=donate)
        else:
            runner = jax_private.compile_and_load(backend, text, devices, _options(partitioning, options))
    except FxlaError:
        raise
    except Exception as err:  # jaxlib raises XlaRuntimeError (a RuntimeError) with XLA's message
        raise CompileError(f"XLA could not compile the module for {device}:\n{err}\n"
                           f"fix: report this with `fxla-dump --stage stablehlo` output") from err
    seconds = time.perf_counter() - start
    _cache.STATS.compiles += 1
    if disk is not None:
        disk.store(key, _serialize(runner, partitioning))
    return Executable(runner, device, text, partitioning=partitioning, compile_seconds=seconds,
                      out_shapes=out_shapes, n_params=n_params, label=label)


def _deserialize(payload: bytes, backend, devices, partitioning, text, signature, n_params, options, donate=()):
    if partitioning is not None:
        return jax_private.deserialize_executable(backend, payload, devices, _options(partitioning, options))
    loaded = jax_private.deserialize_executable(backend, payload, devices)
    return _jax_compile(text, devices[0], signature, n_params, options, precompiled=loaded, donate=donate)
