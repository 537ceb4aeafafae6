"""torch dtypes <-> fxla element types (MLIR spelling)."""
from __future__ import annotations

import torch

from fxla.frontend import TensorMeta
from fxla.dialects.fxla import Sig
from fxla.dialects.fxla.opdef import type_of

TORCH_TO_ELEM = {
    torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8", torch.uint8: "ui8",
    torch.bool: "i1",
}
ELEM_TO_TORCH = {v: k for k, v in TORCH_TO_ELEM.items()}


def elem_of(dtype: torch.dtype) -> str:
    try:
        return TORCH_TO_ELEM[dtype]
    except KeyError:
        raise TypeError(f"dtype {dtype} is not supported by fxla (supported: "
                        f"{', '.join(str(d) for d in TORCH_TO_ELEM)})") from None


def sig_of_meta(meta: TensorMeta) -> Sig:
    """The :class:`Sig` of ``meta``; in a polymorphic lowering its ``SymInt`` sizes stay symbolic, except those
    that are known constants."""
    shape = tuple(meta.shape)
    if not all(type(d) is int for d in shape):
        shape = tuple(d.node.maybe_as_int() if isinstance(d, torch.SymInt) and d.node.maybe_as_int() is not None
                      else d for d in shape)
    return Sig(shape, elem_of(meta.dtype))


def mlir_type(meta: TensorMeta):
    return type_of(sig_of_meta(meta))
