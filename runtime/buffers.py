"""torch tensors / jax arrays <-> PJRT device buffers (``jax.Array``).

On the CPU, tensors are shared through DLPack without a copy where jax can alias them (aligned, contiguous,
and for 64-bit types only with x64 enabled); otherwise the data is copied once.  Outputs come back to torch
through DLPack as well, so a CPU result is not copied either.  ``jax.Array`` inputs already on the target
device (or laid out as the target sharding) are passed through untouched.

A *placement* is a ``jax.Device`` (single-device programs) or a ``jax.sharding.Sharding`` (partitioned ones).
"""
from __future__ import annotations

import functools
import weakref
from typing import Dict, Union

import jax
import ml_dtypes
import numpy as np
import torch

from fxla.base import jax_private
from fxla.base.errors import FxlaError
from fxla.runtime._fastcall import host_view

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
    except (KeyError, TypeError):           # (TypeError: a dtype numpy has no name for, a typed PRNG key's)
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


@functools.lru_cache(maxsize=4096)
def _aval(shape, dtype) -> jax.core.ShapedArray:
    return jax.core.ShapedArray(shape, dtype)


def _put(host: np.ndarray, placement: Placement) -> jax.Array:
    """Host array -> device array keeping its exact dtype (64-bit types too); aliases aligned CPU memory.

    Single-device placement goes straight to PJRT's ``batched_device_put`` (what ``jax.device_put`` ends in):
    ~3 µs a call instead of ~27 µs through ``jax.device_put``'s generic argument handling.
    """
    if isinstance(placement, jax.Device):
        return jax_private.batched_device_put(_aval(host.shape, host.dtype), _single_device(placement), host,
                                              placement)
    with jax.enable_x64(host.dtype.itemsize == 8):   # (jax narrows 64-bit values unless x64 is on)
        if not placement.is_fully_addressable:  # other processes place their parts from their own copies: each
            # process's host data was compared first (fxla.runtime.multihost), so JAX's own per-call check (a
            # collective per input) is not needed
            return jax.make_array_from_callback(host.shape, placement, host.__getitem__)
        return jax.device_put(host, placement)


def tensor_to_device(t: torch.Tensor, device: jax.Device) -> jax.Array:
    """A torch tensor on one device (the call path's hot spot: no pytree or generic argument handling).

    On the CPU, placing an aligned numpy view aliases the tensor's memory (no copy).  It is used instead of
    DLPack on purpose: a DLPack-imported buffer is freed through torch's deleter, which takes the GIL from
    XLA's worker thread and aborts the process when that happens during interpreter exit (measured: 20-60 %
    of short scripts died with "terminate called without an active exception").
    """
    if t.requires_grad:
        t = t.detach()
    if not t.is_cpu:
        t = t.cpu()
    if not t.is_contiguous():
        t = t.contiguous()
    return _put(_numpy(t), device)


#: the tensor types whose device buffers :class:`InputBuffers` keeps between calls
_KEPT_TYPES = (torch.Tensor, torch.nn.Parameter)


class InputBuffers:
    """The device buffers of the torch tensors passed at each input position of one compiled signature, reused
    while the same tensor comes back unchanged (a TorchDynamo graph takes every parameter as an input: without
    this, each call would place dozens of weights again).

    Only buffers that alias the tensor's memory are kept (an aligned CPU tensor: :func:`tensor_to_device`), so a
    kept buffer always reads the tensor's current values; it is reused while the position holds the very same
    tensor object (a weak reference) with the same storage, shape, strides, dtype and version counter."""

    __slots__ = ("device", "_slots")

    def __init__(self, device: jax.Device):
        self.device = device
        self._slots: Dict[int, tuple] = {}

    def put_all(self, values) -> list:
        """:meth:`put` of each of the call's tensor inputs, in order."""
        return [self.put(i, v) for i, v in enumerate(values)]

    def put(self, position: int, value) -> jax.Array:
        """``value`` (the call's tensor input at ``position``) on the device, from the kept buffer when valid.
        Plain tensors and ``nn.Parameter``\\ s (a TorchDynamo graph takes the weights as inputs) are kept; other
        tensor subclasses, and inference tensors (they have no version counter to see a change by), are placed anew
        each call."""
        if type(value) not in _KEPT_TYPES or not value.is_cpu or value.is_inference():
            return to_device(value, self.device)
        key = (value.data_ptr(), value.shape, value.stride(), value.dtype, value._version)
        slot = self._slots.get(position)
        if slot is not None and slot[0]() is value and slot[1] == key:
            return slot[2]
        buffer = to_device(value, self.device)
        if value.data_ptr() and buffer.unsafe_buffer_pointer() == value.data_ptr():
            self._slots[position] = (weakref.ref(value), key, buffer)
        else:
            self._slots.pop(position, None)
        return buffer

    def restamp(self, position: int, value) -> None:
        """``value``, the tensor at ``position``, was just written in place by fxla (a program's changed input,
        copied back into it): its kept buffer, which aliases its memory, now holds the new values, so it stays
        valid for the tensor's new version counter (else the next call would place it again)."""
        slot = self._slots.get(position)
        if slot is None or slot[0]() is not value or value.is_inference():
            return
        key = (value.data_ptr(), value.shape, value.stride(), value.dtype, value._version)
        if slot[1][:4] == key[:4]:
            self._slots[position] = (slot[0], key, slot[2])


def to_device(value, placement: Placement) -> jax.Array:
    """Place ``value`` (a torch tensor of any dtype fxla supports, or a jax array) on ``placement``."""
    if isinstance(value, jax.Array):
        if _placed(value, placement):
            return value
        return jax.device_put(value, placement)
    if isinstance(placement, jax.Device):
        return tensor_to_device(value, placement)
    t = value.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    return _put(_numpy(t.contiguous()), placement)


def host_data(t: torch.Tensor) -> np.ndarray:
    """The data of a torch tensor on the host, contiguous, any dtype fxla supports (bf16 as ml_dtypes')."""
    return _numpy(t.detach().cpu().contiguous())


def owned_copy(t: torch.Tensor, device: jax.Device) -> jax.Array:
    """A copy of ``t`` in a buffer PJRT owns (never an alias of torch's memory), so that a call may consume it
    (donation); 64-bit dtypes keep their width."""
    host = np.array(_numpy(t.detach().cpu().contiguous()), copy=True)   # (device_put's may_alias=False still
    with jax.enable_x64(host.dtype.itemsize == 8):                       # aliases a torch tensor's numpy view)
        return jax.device_put(host, device, may_alias=False)


def host_array(t: torch.Tensor) -> np.ndarray:
    """The numpy array a call plan hands JAX for a torch tensor of at most 32 bits (see :func:`host_input`)."""
    try:
        return t.numpy()                  # the common case: a plain CPU tensor (any strides)
    except (RuntimeError, TypeError):     # requires_grad, another device, bfloat16
        return _numpy(t.detach().cpu())


def host_input(dtype: torch.dtype, device: jax.Device):
    """How a call plan hands a torch tensor of ``dtype`` to a compiled program on ``device``.

    For dtypes of at most 32 bits: the tensor's numpy view, which JAX's C++ dispatch places itself (measured
    ~6 µs less per call than placing it first: a separately placed buffer is an extra Python-level transfer,
    and the run then waits on its definition event).  64-bit dtypes keep :func:`tensor_to_device`, because
    JAX's C++ path would narrow them to 32 bits with x64 off.
    """
    if dtype in _WIDE:
        return functools.partial(_tensor_to_device_on, device)
    return host_array


def _tensor_to_device_on(device: jax.Device, t: torch.Tensor) -> jax.Array:
    return tensor_to_device(t, device)


# numpy dtype and torch dtype of the zero-copy view of each result dtype (bf16: viewed as int16, then cast).
_VIEW = {np.dtype(d): (np.dtype(v), t) for d, v, t in (
    (np.float32, np.float32, None), (np.float16, np.float16, None), (np.float64, np.float64, None),
    (np.int8, np.int8, None), (np.int16, np.int16, None), (np.int32, np.int32, None), (np.int64, np.int64, None),
    (np.uint8, np.uint8, None), (np.bool_, np.bool_, None), (ml_dtypes.bfloat16, np.int16, torch.bfloat16))}


def cpu_view(array: jax.Array, view=None) -> torch.Tensor:
    """A zero-copy torch view of a single-device CPU array's buffer (which it keeps alive); waits for the value.

    Nothing else refers to a program's result buffer, so writing to the tensor is safe.  ``view``: the
    array's entry of ``_VIEW`` (looked up when not given).  The view is made in C
    (:func:`fxla.runtime._fastcall.host_view`: a writable ndarray whose base is the array).
    """
    if view is None:
        view = _VIEW.get(array.dtype)
        if view is None:                   # a dtype torch has no zero-copy view of: copy
            return from_device(array)
    array.block_until_ready()
    if array.size == 0:
        out = torch.from_numpy(np.empty(array.shape, view[0]))
    else:
        out = torch.from_numpy(host_view(array, view[0], array.shape))
    return out if view[1] is None else out.view(view[1])


def from_device(array: jax.Array) -> torch.Tensor:
    """A torch tensor of a device array: a zero-copy view for a single-device CPU array (:func:`cpu_view`),
    else a copy through the host.  Returns once the value is computed."""
    view = _VIEW.get(array.dtype)
    if view is not None and len(array.sharding.device_set) == 1 and array.is_fully_addressable \
            and next(iter(array.sharding.device_set)).platform == "cpu":
        return cpu_view(array, view)
    if array.is_fully_addressable or array.is_fully_replicated:
        host = np.asarray(array)
    else:                                   # parts on other processes' devices: every process gathers (a collective)
        from .multihost import gather
        host = gather(array)
    if host.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(host.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(host.copy())


def viewer(array: jax.Array):
    """The converter :func:`from_device` applies to results shaped and typed like ``array``, resolved once:
    a call plan builds one per result position and skips the per-call lookups (zero-size results, the
    dtype's view, the placement).  When the view needs no cast, ``convert.dtype`` is its numpy dtype:
    ``torch.from_numpy(host_view(a, dtype, a.shape))`` after ``a.block_until_ready()`` is the conversion (a call
    plan's ``host`` shortcut makes it from C)."""
    view = _VIEW.get(array.dtype)
    if view is None or len(array.sharding.device_set) != 1 or not array.is_fully_addressable \
            or next(iter(array.sharding.device_set)).platform != "cpu":
        return from_device
    dtype, cast = view
    if array.size == 0:
        return lambda a: torch.from_numpy(np.empty(a.shape, dtype)) if cast is None else \
            torch.from_numpy(np.empty(a.shape, dtype)).view(cast)
    if cast is None:
        def convert(a):
            a.block_until_ready()
            return torch.from_numpy(host_view(a, dtype, a.shape))
        convert.dtype = dtype
    else:
        def convert(a):
            a.block_until_ready()
            return torch.from_numpy(host_view(a, dtype, a.shape)).view(cast)
    return convert


def example_tensor(value) -> torch.Tensor:
    """A torch tensor with ``value``'s shape, dtype and data (for tracing/shape propagation); zeros of its shape
    for an array with parts on other processes' devices (tracing reads shapes only; fetching its data would be
    a collective)."""
    if isinstance(value, torch.Tensor):
        return value
    if not (value.is_fully_addressable or value.is_fully_replicated):
        return torch.zeros(value.shape, dtype=torch_dtype(value))
    return from_device(value) if torch_dtype(value) not in _WIDE else torch.from_numpy(np.asarray(value).copy())
