"""Type inference for indexing, joining and creation ops (torch semantics on static shapes)."""
from __future__ import annotations

import math

from .infer import _dim
from .opdef import ANY_ELEM, InferError
from .types import Sig, broadcast_shapes, result_elem


def slice_(ops, attrs) -> list:
    x = ops[0]
    start, limit, stride = (tuple(attrs[n]) for n in ("start", "limit", "stride"))
    if not len(start) == len(limit) == len(stride) == x.rank:
        raise InferError(f"start/limit/stride need {x.rank} entries each, got {len(start)}/{len(limit)}/{len(stride)}")
    shape = []
    for d, (s, e, st) in enumerate(zip(start, limit, stride)):
        if st < 1 or not 0 <= s <= e <= x.shape[d]:
            raise InferError(f"dim {d}: slice [{s}:{e}:{st}] is not a forward slice of size {x.shape[d]} "
                             "(normalise negative bounds first; steps must be positive, as in torch)")
        shape.append(-(-(e - s) // st))
    return [Sig(tuple(shape), x.elem)]


def concat(ops, attrs) -> list:
    xs = ops[0]
    rank = xs[0].rank
    if rank == 0:
        raise InferError("zero-dimensional tensors cannot be concatenated")
    d = _dim(attrs["dim"], rank)
    for s in xs[1:]:
        if s.rank != rank or any(a != b for i, (a, b) in enumerate(zip(s.shape, xs[0].shape)) if i != d):
            raise InferError(f"shapes {', '.join(str(list(s.shape)) for s in xs)} differ outside dim {d}")
    shape = list(xs[0].shape)
    shape[d] = sum(s.shape[d] for s in xs)  # noqa: the builtin
    return [Sig(tuple(shape), result_elem(xs))]


def gather(ops, attrs) -> list:
    x, index = ops
    d = _dim(attrs["dim"], x.rank)
    if index.rank != x.rank:
        raise InferError(f"index rank {index.rank} != input rank {x.rank}")
    if any(i != d and index.shape[i] > x.shape[i] for i in range(x.rank)):
        raise InferError(f"index shape {list(index.shape)} exceeds input shape {list(x.shape)} outside dim {d}")
    return [Sig(index.shape, x.elem)]


def index_select(ops, attrs) -> list:
    x, index = ops
    d = _dim(attrs["dim"], x.rank)
    if index.rank != 1:
        raise InferError(f"index must be 1-D, got rank {index.rank}")
    shape = list(x.shape)
    if shape:
        shape[d] = index.shape[0]
    return [Sig(tuple(shape), x.elem)]


def scatter(ops, attrs) -> list:
    x, index, src = ops
    gather([x, index], attrs)
    if src.elem != x.elem:
        raise InferError(f"src element type {src.elem} != input's {x.elem} (torch does not promote here)")
    if src.rank != index.rank or any(i > s for i, s in zip(index.shape, src.shape)):
        raise InferError(f"index shape {list(index.shape)} exceeds src shape {list(src.shape)}")
    return [x]


def where(ops, attrs) -> list:
    cond, x, y = ops
    shape = broadcast_shapes(cond.shape, x.shape, y.shape)
    if shape is None:
        raise InferError(f"shapes {list(cond.shape)}, {list(x.shape)}, {list(y.shape)} do not broadcast")
    return [Sig(shape, result_elem([x, y]))]


def expand(ops, attrs) -> list:
    x = ops[0]
    shape = tuple(attrs["shape"])
    if len(shape) < x.rank or broadcast_shapes(x.shape, shape) != shape:
        raise InferError(f"cannot expand {list(x.shape)} to {list(shape)} (only size-1 dims expand)")
    return [Sig(shape, x.elem)]


def dims_op(ops, attrs) -> list:
    """Ops that keep the input type and name a set of distinct dims (flip)."""
    x = ops[0]
    dims = [_dim(d, x.rank) for d in attrs["dims"]]
    if len(set(dims)) != len(dims):
        raise InferError(f"dims {list(attrs['dims'])} repeat a dimension")
    return [x]


def pad(ops, attrs) -> list:
    x = ops[0]
    low, high = tuple(attrs["low"]), tuple(attrs["high"])
    if len(low) != x.rank or len(high) != x.rank:
        raise InferError(f"low/high need {x.rank} entries each, got {len(low)}/{len(high)}")
    shape = tuple(s + lo + hi for s, lo, hi in zip(x.shape, low, high))
    if any(s < 0 for s in shape):
        raise InferError(f"padding {list(low)}/{list(high)} crops {list(x.shape)} below zero")
    return [Sig(shape, x.elem)]


def arange(ops, attrs) -> list:
    if attrs["length"] < 0:
        raise InferError("length must be non-negative")
    return [Sig((attrs["length"],), ANY_ELEM)]


def triangle(ops, attrs) -> list:
    x = ops[0]
    if x.rank < 2:
        raise InferError(f"expects an input of rank >= 2, got rank {x.rank}")
    return [x]


def numel(sig: Sig) -> int:
    return math.prod(sig.shape)
