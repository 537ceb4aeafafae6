"""Type-inference families shared by the ops of the table (torch semantics on static shapes).

Each family is a function ``(operands: [Sig|None], attrs: dict) -> [Sig]``; ops bind their parameters with
``functools.partial``.  Failures raise :class:`~.opdef.InferError` with the reason the verifier reports.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

from .opdef import ANY_ELEM, ElementTypeMismatch, InferError
from .types import Sig, broadcast_shapes, is_float, normalize_dim, result_elem


def _dim(dim: int, rank: int, what: str = "dim") -> int:
    d = normalize_dim(dim, rank)
    if d is None:
        raise InferError(f"{what} {dim} is out of range for a rank-{rank} operand")
    return d


def same_as_first(ops: Sequence[Optional[Sig]], attrs) -> list:
    return [ops[0]]


def same_types(ops: Sequence[Optional[Sig]], attrs) -> list:
    """Two operands of one type (a dim unknown in either, ``?``, matches any); the result has it."""
    a, b = ops
    if a.elem != b.elem or a.rank != b.rank or any(x != y and min(x, y) >= 0 for x, y in zip(a.shape, b.shape)):
        raise InferError(f"operands must have one type, got {a} and {b}")
    return [a]


def elementwise(ops: Sequence[Optional[Sig]], attrs, *, result: Optional[str] = None,
                float_result: bool = False) -> list:
    """Broadcasting n-ary op; element type by torch promotion (``result`` fixes it, e.g. ``i1``)."""
    present = [s for s in ops if s is not None]
    shape = broadcast_shapes(*(s.shape for s in present))
    if shape is None:
        raise InferError("operand shapes " + ", ".join(str(list(s.shape)) for s in present) + " do not broadcast")
    elem = result or result_elem(present)
    if float_result and not is_float(elem):
        elem = "f32"
    return [Sig(shape, elem)]


def softmax(ops, attrs) -> list:
    x = ops[0]
    _dim(attrs["dim"], x.rank)
    return [x]


def _same_elems(ops, names) -> None:
    present = [(n, s) for n, s in zip(names, ops) if s is not None]
    elems = {s.elem for _, s in present}
    if len(elems) > 1:
        raise ElementTypeMismatch("operands must share one element type (torch does not promote here), got " +
                         ", ".join(f"{n}: {s.elem}" for n, s in present))


def linear(ops, attrs) -> list:
    x, w, b = ops
    _same_elems(ops, ("input", "weight", "bias"))
    if x.rank < 1 or w.rank != 2:
        raise InferError(f"expects input of rank >= 1 and a rank-2 weight, got ranks {x.rank} and {w.rank}")
    if x.shape[-1] != w.shape[1]:
        raise InferError(f"input features {x.shape[-1]} do not match weight's {w.shape[1]} (weight is [out, in])")
    if b is not None and b.shape not in ((w.shape[0],), ()):
        raise InferError(f"bias shape {list(b.shape)} does not match {w.shape[0]} output features")
    return [Sig(x.shape[:-1] + (w.shape[0],), x.elem)]


def matmul(ops, attrs) -> list:
    a, b = ops
    if a.rank == 0 or b.rank == 0:
        raise InferError("both operands must be at least 1-D")
    if a.elem != b.elem:
        raise ElementTypeMismatch(f"operand element types differ ({a.elem} vs {b.elem}); torch.matmul does not "
                                  "promote")
    ka = a.shape[-1]
    kb = b.shape[0] if b.rank == 1 else b.shape[-2]
    if ka != kb:
        raise InferError(f"contracting dimensions differ: {list(a.shape)} @ {list(b.shape)}")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if batch is None:
        raise InferError(f"batch dimensions of {list(a.shape)} and {list(b.shape)} do not broadcast")
    shape = batch + (a.shape[-2:-1] if a.rank >= 2 else ()) + (b.shape[-1:] if b.rank >= 2 else ())
    return [Sig(shape, a.elem)]


def _window_out(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool = False) -> int:
    span = size + 2 * p - d * (k - 1) - 1
    out = (math.ceil(span / s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1        # the last window must start inside the input or left padding (torch's rule)
    return out


def _pair_attrs(attrs, names, n):
    values = {}
    for name in names:
        v = tuple(attrs[name])
        if len(v) != n:
            raise InferError(f"attribute '{name}' must have {n} entries, got {len(v)}")
        values[name] = v
    return values


def conv(ops, attrs) -> list:
    """N-d convolution (spatial rank = input rank - 2), or its transpose (torch's conv_transpose*d)."""
    x, w, b = ops
    _same_elems(ops, ("input", "weight", "bias"))
    spatial = x.rank - 2
    if spatial < 1 or w.rank != x.rank:
        raise InferError(f"expects input and weight of equal rank >= 3, got {x.rank} and {w.rank}")
    v = _pair_attrs(attrs, ("stride", "padding", "dilation"), spatial)
    out_pad = tuple(attrs["output_padding"]) or (0,) * spatial
    if len(out_pad) != spatial:
        raise InferError(f"attribute 'output_padding' must have {spatial} entries, got {len(out_pad)}")
    groups = attrs["groups"]
    transposed = attrs["transposed"]
    cin_w, cout = (w.shape[0], w.shape[1] * groups) if transposed else (w.shape[1] * groups, w.shape[0])
    if groups < 1 or x.shape[1] % groups or (w.shape[0] % groups):
        raise InferError(f"groups={groups} must divide input channels {x.shape[1]} and the weight's dim 0 "
                         f"({w.shape[0]})")
    if x.shape[1] != cin_w:
        raise InferError(f"input channels {x.shape[1]} do not match the weight's {cin_w} (groups={groups})")
    if b is not None and b.shape != (cout,):
        raise InferError(f"bias shape {list(b.shape)} does not match {cout} output channels")
    if not transposed and any(out_pad):
        raise InferError("output_padding is only meaningful for a transposed convolution")
    if transposed:
        out = [(x.shape[2 + i] - 1) * v["stride"][i] - 2 * v["padding"][i] + v["dilation"][i] * (w.shape[2 + i] - 1)
               + out_pad[i] + 1 for i in range(spatial)]
    else:
        out = [_window_out(x.shape[2 + i], w.shape[2 + i], v["stride"][i], v["padding"][i], v["dilation"][i])
               for i in range(spatial)]
    if any(o <= 0 for o in out):
        raise InferError(f"output spatial size {out} is not positive")
    return [Sig((x.shape[0], cout, *out), x.elem)]


def pool(ops, attrs, *, spatial: Optional[int] = None) -> list:
    """Window pooling over the trailing ``spatial`` dims (default: as many as ``kernel_size`` has)."""
    x = ops[0]
    spatial = spatial or len(attrs["kernel_size"])
    if spatial < 1:
        raise InferError("attribute 'kernel_size' must have one entry per pooled dim, got none")
    if x.rank not in (spatial + 1, spatial + 2):
        raise InferError(f"expects a rank-{spatial + 1} or rank-{spatial + 2} input, got rank {x.rank}")
    names = ("kernel_size", "stride", "padding") + (("dilation",) if "dilation" in attrs else ())
    v = _pair_attrs(attrs, names, spatial)
    dilation = v.get("dilation", (1,) * spatial)
    lead = x.rank - spatial
    for name in ("kernel_size", "stride") + (("dilation",) if "dilation" in v else ()):
        if any(k < 1 for k in v[name]):
            raise InferError(f"attribute '{name}' must be positive, got {list(v[name])}")
    for i in range(spatial):
        if v["padding"][i] < 0:
            raise InferError(f"attribute 'padding' must be non-negative, got {list(v['padding'])}")
        if v["padding"][i] * 2 > v["kernel_size"][i]:
            raise InferError("padding must be at most half the kernel size")
    out = [_window_out(x.shape[lead + i], v["kernel_size"][i], v["stride"][i], v["padding"][i],
                       dilation[i], attrs["ceil_mode"]) for i in range(spatial)]
    if any(o <= 0 for o in out):
        raise InferError(f"output spatial size {out} is not positive")
    return [Sig(x.shape[:lead] + tuple(out), x.elem)]


def reshape(ops, attrs) -> list:
    x = ops[0]
    shape = tuple(attrs["shape"])
    if any(d < 0 for d in shape):
        raise InferError(f"shape {list(shape)} must be fully static (resolve -1 before building)")
    if math.prod(shape) != math.prod(x.shape):
        raise InferError(f"cannot reshape {list(x.shape)} ({math.prod(x.shape)} elements) to {list(shape)}")
    return [Sig(shape, x.elem)]


def dim_size(ops, attrs) -> list:
    _dim(attrs["dim"], ops[0].rank)
    return [Sig((), "i64")]


def permute(ops, attrs) -> list:
    x = ops[0]
    dims = [_dim(d, x.rank) for d in attrs["dims"]]
    if sorted(dims) != list(range(x.rank)):
        raise InferError(f"dims {list(attrs['dims'])} are not a permutation of a rank-{x.rank} operand's dims")
    return [Sig(tuple(x.shape[d] for d in dims), x.elem)]


def reduction(ops, attrs, *, float_only: bool = False, widen_int: bool = False) -> list:
    """Reduce over ``dims`` (all when empty); ``widen_int``: bool/int operands give i64 (torch.sum)."""
    x = ops[0]
    dims = sorted({_dim(d, x.rank) for d in attrs["dims"]}) if attrs["dims"] else list(range(x.rank))
    keep = attrs["keepdim"]
    shape = tuple(1 if i in dims else d for i, d in enumerate(x.shape)) if keep else \
        tuple(d for i, d in enumerate(x.shape) if i not in dims)
    if float_only and not is_float(x.elem):
        raise InferError(f"expects a floating-point operand, got {x.elem}")
    return [Sig(shape, "i64" if widen_int and not is_float(x.elem) else x.elem)]


def norm_last(ops, attrs) -> list:
    x, w, b = ops
    k = attrs["normalized_rank"]
    if not 1 <= k <= x.rank:
        raise InferError(f"normalized_rank {k} must be in [1, {x.rank}]")
    for name, s in (("weight", w), ("bias", b)):
        if s is not None and s.shape != x.shape[x.rank - k:]:
            raise InferError(f"{name} shape {list(s.shape)} != normalized shape {list(x.shape[x.rank - k:])}")
    return [x]


def constant(ops, attrs) -> list:
    from .opdef import sig_of
    sig = sig_of(attrs["value"].type)
    if sig is None:
        raise InferError("value must be a statically shaped tensor")
    return [sig]


def convert(ops, attrs) -> list:
    return [Sig(ops[0].shape, ANY_ELEM)]
