"""``tensors.bin``: named tensors as raw bytes plus a JSON index -- no pickle.

Layout (all integers little-endian)::

    b"FXLATNS1"                 8-byte magic
    u64 header_length           length of the JSON index that follows
    JSON index                  space-padded so the data region starts 64-byte aligned
    data region                 each tensor's bytes, C-contiguous, each starting 64-byte aligned

The index is ``{"format": "fxla.tensors", "version": 1, "byteorder": "little",
"data_size": <bytes>, "tensors": {key: entry}}`` with, per tensor, ``dtype`` (``"float32"``),
``shape`` (array of ints), ``offset`` and ``nbytes`` (within the data region) and
``requires_grad``. Loading re-creates tensors with ``torch.frombuffer`` over one buffer.

Only dense (strided), non-quantized CPU-transferable tensors are supported.
"""
from __future__ import annotations

import json
import struct
import sys
from typing import Dict

import torch

__all__ = ["MAGIC", "encode_tensors", "decode_tensors", "TensorFileError"]

MAGIC = b"FXLATNS1"
_ALIGN = 64
_PREFIX = len(MAGIC) + 8


class TensorFileError(ValueError):
    """``tensors.bin`` is malformed; the message says how."""


def _raw_bytes(t: torch.Tensor) -> bytes:
    t = t.detach().to("cpu").contiguous()
    if t.numel() == 0:
        return b""
    return t.reshape(-1).view(torch.uint8).numpy().tobytes()


def _pad(n: int) -> int:
    return -n % _ALIGN


def encode_tensors(tensors: Dict[str, torch.Tensor]) -> bytes:
    """The bytes of a ``tensors.bin`` holding ``tensors`` (key -> tensor)."""
    entries, chunks, offset = {}, [], 0
    for key, t in tensors.items():
        data = _raw_bytes(t)
        entries[key] = {"dtype": str(t.dtype).rpartition(".")[2], "shape": list(t.shape), "offset": offset,
                        "nbytes": len(data), "requires_grad": bool(t.requires_grad)}
        chunks += [data, b"\0" * _pad(len(data))]
        offset += len(data) + _pad(len(data))
    index = json.dumps({"format": "fxla.tensors", "version": 1, "byteorder": "little", "data_size": offset,
                        "tensors": entries}, allow_nan=False).encode()
    index += b" " * _pad(_PREFIX + len(index))
    return b"".join([MAGIC, struct.pack("<Q", len(index)), index] + chunks)


def _check(cond: bool, why: str) -> None:
    if not cond:
        raise TensorFileError(why)


def decode_tensors(buf: bytearray) -> Dict[str, torch.Tensor]:
    """Tensors (sharing memory with ``buf``) from the bytes of a ``tensors.bin``."""
    _check(sys.byteorder == "little", "tensors.bin holds little-endian data; this machine is big-endian")
    _check(len(buf) >= _PREFIX and bytes(buf[:len(MAGIC)]) == MAGIC,
           f"it does not start with the magic bytes {MAGIC!r} (not an fxla tensors.bin, or truncated)")
    (index_len,) = struct.unpack("<Q", bytes(buf[len(MAGIC):_PREFIX]))
    data_start = _PREFIX + index_len
    _check(data_start <= len(buf), f"the index claims {index_len} bytes but the file has {len(buf)} in all")
    try:
        index = json.loads(bytes(buf[_PREFIX:data_start]).decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TensorFileError(f"its JSON index does not parse ({e})") from None
    _check(isinstance(index, dict) and index.get("format") == "fxla.tensors" and index.get("version") == 1,
           "its index is not an fxla.tensors version 1 index")
    data_size = index.get("data_size")
    _check(type(data_size) is int and data_start + data_size == len(buf),
           f"the data region should hold {data_size} bytes but the file has {len(buf) - data_start} after the index")
    entries = index.get("tensors")
    _check(isinstance(entries, dict), "its index has no 'tensors' table")
    return {key: _tensor_from(buf, data_start, data_size, key, entry) for key, entry in entries.items()}


def _tensor_from(buf: bytearray, data_start: int, data_size: int, key: str, entry: dict) -> torch.Tensor:
    _check(isinstance(entry, dict), f"tensor {key!r}: index entry is not an object")
    dtype = getattr(torch, str(entry.get("dtype")), None)
    _check(isinstance(dtype, torch.dtype), f"tensor {key!r}: unknown dtype {entry.get('dtype')!r}")
    shape, offset, nbytes = entry.get("shape"), entry.get("offset"), entry.get("nbytes")
    _check(isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape),
           f"tensor {key!r}: shape {shape!r} is not a list of non-negative ints")
    numel = 1
    for d in shape:
        numel *= d
    itemsize = torch.empty((), dtype=dtype).element_size()
    _check(type(offset) is int and type(nbytes) is int and 0 <= offset and nbytes == numel * itemsize,
           f"tensor {key!r}: offset {offset!r} / nbytes {nbytes!r} do not fit shape {shape} of {dtype}")
    _check(offset + nbytes <= data_size, f"tensor {key!r}: bytes {offset}..{offset + nbytes} lie past the data "
                                         f"region ({data_size} bytes)")
    if numel == 0:
        t = torch.empty(shape, dtype=dtype)
    else:
        t = torch.frombuffer(buf, dtype=dtype, count=numel, offset=data_start + offset).reshape(shape)
    return t.requires_grad_(bool(entry.get("requires_grad"))) if t.is_floating_point() or t.is_complex() else t
