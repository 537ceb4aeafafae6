"""Helpers the lowering rules share that are not part of the context (see
:class:`~fxla.lowering.context.LoweringContext` for the building blocks that are: ``ctx.convert``,
``ctx.reshape``, ``ctx.expand``, ``ctx.slice_dim``, ``ctx.int_constant``, ``ctx.module_param``, ``ctx.lower``).

Rule files import helpers from here (or call another op's rule with ``ctx.lower``), never a private name of
another rule file (``tests/test_lowering.py`` checks it):

* :func:`ntuple` -- torch's ``_pair``/``_triple``: an int repeated per spatial dim, or the given sequence;
* :func:`compute_elem` -- the element type a float composition computes in (half precision computes in f32
  and is rounded once, like torch's CPU kernels);
* :func:`refuse_bool` -- the error torch's CPU kernels give for a bool input they do not implement;
* :func:`reduce_loss` -- a loss's ``reduction`` ('none', 'sum', 'mean');
* :func:`spread` -- interior padding (zeros between neighbours), from reshape and pad;
* :func:`expand_key`, :func:`tensor_index`, :func:`merge_tensor_indices` -- reading an index key
  ``x[key]`` (shared by reading and writing: ``x[key]`` and ``x[key] = v``);
* :func:`slice_bounds` -- a slice's start, limit, step and length in a dim of some size, symbolic sizes
  included (a polymorphic program, :mod:`fxla.lowering.symbolic`).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.types import is_float
from fxla.dialects.mlir import ir

from .value_checks import check_indices


def ntuple(value, n: int = 2) -> tuple:
    """``value`` as an ``n``-tuple: a sequence as is, a number repeated (torch's ``_pair``/``_triple``)."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


def compute_elem(elem: str) -> str:
    """The element type a float composition computes in: f32 for half precision (f16/bf16, rounded to it once at
    the end, like torch's CPU kernels), else ``elem`` itself."""
    return "f32" if elem in ("f16", "bf16") else elem


def dense_only(ctx, weight, sparse: bool, op: str):
    """The weight of an embedding (``op``: ``embedding``, ``embedding_bag``); with ``sparse=True`` one no gradient
    may reach: torch's is a sparse tensor (what SparseAdam takes, and Adam refuses), fxla's gradients are dense."""
    if not sparse:
        return weight
    return ctx.emit(ops.no_gradient, weight, op=f"{op}(sparse=True)", reason=(
        "torch gives the weight a sparse gradient (a torch.sparse_coo tensor: SparseAdam takes it, Adam "
        "refuses it); fxla's gradients are dense, so an optimizer would do otherwise than in eager. Build the "
        "layer with sparse=False (the same values, a dense gradient)"))


def gradient_by_frequency(ctx, rows, flat, bag_kernel: bool = False):
    """Embedding ``rows`` (``[n, ...]``, looked up at the 1-D ``flat`` indices) whose gradient is divided by how
    often each index occurs in ``flat`` (``scale_grad_by_freq``); the values are the rows (written with
    ``fxla.detach``).  ``bag_kernel``: as torch's CPU ``embedding_bag`` backward divides instead (its
    ``counts[indices[i]]`` reads the sorted indices at the unique index's rank ``i``, not at its first place):
    the rows of the ``i``-th smallest distinct index by the count of the index at sorted position ``i``."""
    n = ctx.sig(flat).shape[0]
    column, line = ctx.reshape(flat, (n, 1)), ctx.reshape(flat, (1, n))
    same = ctx.emit(ops.eq, column, line)                                   # [j, k]: flat[j] == flat[k]
    counts = ctx.emit(ops.sum, ctx.convert(same, "i32"), dims=(1,), keepdim=False)
    if bag_kernel:
        earlier = ctx.emit(ops.constant, value=ir.DenseElementsAttr.get(np.tri(n, n, -1, dtype=bool)))
        first = ctx.emit(ops.logical_not, ctx.emit(ops.any, ctx.emit(ops.logical_and, same, earlier), dims=(1,),
                                                   keepdim=False))         # flat[k]'s first place
        smaller = ctx.emit(ops.lt, line, column)                            # [j, k]: flat[k] < flat[j]
        below_first = ctx.emit(ops.logical_and, smaller, ctx.reshape(first, (1, n)))
        rank = ctx.emit(ops.sum, ctx.convert(below_first, "i32"), dims=(1,), keepdim=False)   # distinct ones below
        below = ctx.emit(ops.sum, ctx.convert(smaller, "i32"), dims=(1,), keepdim=False)   # its sorted place
        low, high = ctx.reshape(below, (1, n)), ctx.reshape(ctx.emit(ops.add, below, counts), (1, n))
        at = ctx.reshape(rank, (n, 1))                          # [j, k]: sorted place rank[j] holds flat[k]
        holds = ctx.emit(ops.logical_and, ctx.emit(ops.le, low, at), ctx.emit(ops.lt, at, high))
        counts = ctx.emit(ops.amax, ctx.emit(ops.where, holds, ctx.reshape(counts, (1, n)),
                                             ctx.tensor(0, like=counts)), dims=(1,), keepdim=False)
    counts = ctx.convert(counts, ctx.sig(rows).elem)
    frozen = ctx.emit(ops.detach, rows)
    scaled = ctx.emit(ops.div, ctx.emit(ops.sub, rows, frozen),
                      ctx.reshape(counts, (n,) + (1,) * (ctx.sig(rows).rank - 1)))
    return ctx.emit(ops.add, frozen, scaled)


def refuse_bool(ctx, input, op: str) -> None:
    """torch's CPU kernels of ``op`` (argmax, argmin, topk, round) take no bool tensor; neither does fxla."""
    if ctx.sig(input).elem == "i1":
        raise ctx.error(f"{op} of a bool tensor", "eager PyTorch refuses it too (its CPU kernel is not "
                        "implemented for 'Bool')", "convert first, e.g. x.to(torch.uint8) or x.float()")


def reduce_loss(ctx, loss, reduction: str):
    """A per-element loss reduced as ``reduction`` asks: 'none' (itself), 'sum' or 'mean' (to 0-d)."""
    if reduction == "none":
        return loss
    return ctx.emit(ops.sum if reduction == "sum" else ops.mean, loss, dims=(), keepdim=False)


def double_ratio(ctx, numerator, denominator, like: ir.Value) -> ir.Value:
    """``numerator / denominator`` (numbers or sizes) computed in double, as Python and torch's kernels compute
    such factors, then converted to ``like``'s element type.  Where either is a symbolic size it is divided as
    f64 ops (the same correctly rounded division; a number is an f64 constant, the double itself): a Python float
    of a size would fix it.  (XLA converts f64 to a half type through f32, which can differ from the static
    constant's single rounding by an ulp of the half type.)"""
    if not isinstance(numerator, torch.SymInt) and not isinstance(denominator, torch.SymInt):
        return ctx.tensor(numerator / denominator, like=like)
    sizes = [ctx.convert(ctx.tensor(v), "f64") if isinstance(v, torch.SymInt) else None
             for v in (numerator, denominator)]
    f64 = next(v for v in sizes if v is not None)
    a, b = (v if v is not None else ctx.tensor(float(n), like=f64) for v, n in zip(sizes, (numerator, denominator)))
    return ctx.convert(ctx.emit(ops.div, a, b), ctx.sig(like).elem)


def may_be_nonzero(values) -> bool:
    """Whether any of ``values`` (paddings, output paddings: ints or symbolic sizes) is nonzero -- a symbolic one
    counts as nonzero without a comparison, which would make a guard of the program: the op it feeds is emitted,
    and is right at zero too."""
    return any(isinstance(v, torch.SymInt) or v for v in values)


def spread(ctx, v, steps):
    """``v`` with ``step - 1`` zeros between neighbours along each dim (StableHLO's interior padding, built from
    reshape and pad): [n] -> [n, 1] -> pad to [n, step] -> [n * step] -> crop to [(n - 1) * step + 1]."""
    for d, step in enumerate(steps):
        shape = list(ctx.sig(v).shape)
        if step == 1 or shape[d] == 1:
            continue
        rank = len(shape)
        v = ctx.reshape(v, tuple(shape[:d + 1]) + (1,) + tuple(shape[d + 1:]))
        v = ctx.emit(ops.pad, v, low=[0] * (rank + 1), high=[step - 1 if i == d + 1 else 0 for i in range(rank + 1)])
        v = ctx.reshape(v, tuple(shape[:d]) + (shape[d] * step,) + tuple(shape[d + 1:]))
        v = ctx.emit(ops.pad, v, low=[0] * rank, high=[-(step - 1) if i == d else 0 for i in range(rank)])
    return v


# -- index keys: x[key] ------------------------------------------------------------------------------------------
def slice_bounds(k: slice, size) -> tuple:
    """``(start, limit, step, length)`` of slice ``k`` (positive step) in a dim of ``size``, as
    ``k.indices(size)`` with ``limit >= start``.  For a symbolic size or bound (``SymInt``) the clamping stays an
    expression of the size (``sym_min``/``sym_max``, or nothing where the ShapeEnv knows the order), instead of
    fixing the size to the traced one."""
    if isinstance(size, int) and all(v is None or isinstance(v, int) for v in (k.start, k.stop)):
        lo, hi, step = k.indices(size)
        hi = max(hi, lo)
        return lo, hi, step, len(range(lo, hi, step))
    step = 1 if k.step is None else k.step

    def bound(v, default):
        if v is None:
            return default
        if isinstance(v, int) and v < 0:
            return _size_max(v + size, 0)
        return _size_min(v, size)
    lo = bound(k.start, 0)
    hi = _size_max(bound(k.stop, size), lo)
    return lo, hi, step, (hi - lo + step - 1) // step if step > 1 else hi - lo


def _size_max(a, b):
    from torch.fx.experimental.symbolic_shapes import statically_known_true
    if statically_known_true(a >= b):
        return a
    return b if statically_known_true(b >= a) else torch.sym_max(a, b)


def _size_min(a, b):
    from torch.fx.experimental.symbolic_shapes import statically_known_true
    if statically_known_true(a <= b):
        return a
    return b if statically_known_true(b <= a) else torch.sym_min(a, b)


def expand_key(ctx, key, rank: int) -> list:
    """The index key of ``x[key]`` as a list with ``...`` expanded and trailing full slices added (``None``
    entries stay: they add a dim)."""
    key = list(key) if isinstance(key, tuple) else [key]
    if sum(k is Ellipsis for k in key) > 1:
        raise ctx.error("an index can only have a single ellipsis ('...')", "torch rejects it too",
                        "use one '...'")
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if consumed > rank:
        raise ctx.error(f"too many indices ({consumed}) for a rank-{rank} tensor", "torch rejects it too",
                        "index at most as many dims as the tensor has")
    fill = [slice(None)] * (rank - consumed)
    if Ellipsis in key:
        at = key.index(Ellipsis)
        return key[:at] + fill + key[at + 1:]
    return key + fill


def wrap_negative(ctx, index, size: int) -> ir.Value:
    """index < 0 ? index + size : index (torch's advanced indexing counts negative indices from the end)."""
    negative = ctx.emit(ops.lt, index, ctx.tensor(0, like=index))
    return ctx.emit(ops.where, negative, ctx.emit(ops.add, index, ctx.tensor(size, like=index)), index)


def tensor_index(ctx, k, size, *, alone: bool = True):
    """An integer index tensor (or list) of a dim of ``size``, negative indices wrapped; checked where the
    program computes it (:func:`fxla.lowering.value_checks.check_indices`), and where it is a tensor input that
    is not indexed ``alone`` (merged with other indices, so the host's check of inputs does not see it)."""
    if isinstance(k, list):
        if isinstance(size, int) or min(k, default=0) >= 0:
            return ctx.int_constant([i + size if i < 0 else i for i in k])
        # guards on the symbolic size (calls that break them are refused, or lowered on their own and raise as
        # eager does): every entry in [-size, size) -- the wrapped values are no constant for the per-call check
        if not (size + min(k) >= 0 and max(k) < size):
            raise ctx.error(f"index {min(k) if size + min(k) < 0 else max(k)} is out of range for a dim of size "
                            f"{size}", "torch raises IndexError", "index within the dim")
        return wrap_negative(ctx, ctx.int_constant(k), size)      # (wrapped by the size as a value)
    if is_float(ctx.sig(k).elem) or ctx.sig(k).elem == "i1":
        raise ctx.error("indexing with a bool or float tensor is not supported",
                        "a boolean mask gives a data-dependent shape; float indices are invalid in torch",
                        "use torch.where / masked_fill, or integer indices")
    check_indices(ctx, k, size, "x[index]", low=-size, inputs_checked=alone)
    return wrap_negative(ctx, k, size)


def dim_size(ctx, value, dim: int):
    """The size of ``value``'s dim ``dim`` (negative: from the end; a 0-d value is indexed as one element, as torch
    does)."""
    shape = ctx.sig(value).shape
    return shape[dim % len(shape)] if shape else 1


def merge_tensor_indices(ctx, y, shape, indexed):
    """Several tensor indices (``x[:, i, j]``, ``x[i, :, j]``): merge their dims into one and index it with the
    row-major linear index ``i * size_j + j`` (the indices broadcast against each other, as in torch).  Indexed
    dims that are not adjacent are first moved to the front, in order, which is where torch puts the indexed
    result then.  Returns (``y`` with the merged dim, its shape, the linear index, the merged dim's position)."""
    at = [p for p, _ in indexed]
    if at != list(range(at[0], at[0] + len(at))):
        rest = [p for p in range(len(shape)) if p not in at]
        y = ctx.emit(ops.permute, y, dims=tuple(at + rest))
        indexed = [(i, k) for i, (_, k) in enumerate(indexed)]
        shape = [shape[p] for p in at + rest]
        at = list(range(len(at)))
    indices = [ctx.convert(tensor_index(ctx, k, shape[p], alone=False), "i64") for p, k in indexed]
    try:
        common = tuple(torch.broadcast_shapes(*(ctx.sig(i).shape for i in indices)))
    except RuntimeError:
        raise ctx.error(f"index tensors of shapes {[list(ctx.sig(i).shape) for i in indices]} do not broadcast",
                        "torch broadcasts the index tensors of x[i, j] together", "give them broadcastable shapes") \
            from None
    linear = None
    for p, i in zip(at, indices):
        i = ctx.expand(i, common)
        linear = i if linear is None else ctx.emit(ops.add, ctx.emit(ops.mul, linear, ctx.tensor(shape[p], like=linear)), i)
    merged = tuple(shape[:at[0]]) + (math.prod([shape[p] for p in at]),) + tuple(shape[at[-1] + 1:])
    return ctx.reshape(y, merged), list(merged), linear, at[0]


def safe_softmax(ctx, scores):
    """torch's ``_safe_softmax`` over the last dim (what its scaled_dot_product_attention applies): a row masked
    everywhere (all -inf) attends to nothing and gets 0, where a softmax gives NaN.  (The row is replaced by zeros
    before the softmax too, so that its gradient is 0, not NaN.)"""
    masked = ctx.emit(ops.eq, scores, ctx.tensor(float("-inf"), like=scores))
    empty = ctx.emit(ops.all, masked, dims=(-1,), keepdim=True)
    zero = ctx.tensor(0.0, like=scores)
    weights = ctx.emit(ops.softmax, ctx.emit(ops.where, empty, zero, scores), dim=-1)
    return ctx.emit(ops.where, empty, zero, weights)


def norm_root(ctx, total, p: float = 2.0):
    """``total ** (1 / p)`` (``sqrt`` for 2) of a norm's sum of powers, with torch's ``norm_backward`` at 0: no
    gradient where ``total`` is 0 (``std``, ``pairwise_distance``, the norms of ``cosine_similarity``); the root of
    a zero is taken of 1 and dropped, so no ``inf * 0`` reaches the gradient, also when differentiated again."""
    zero = ctx.emit(ops.eq, total, ctx.tensor(0.0, like=total))
    safe = ctx.emit(ops.where, zero, ctx.tensor(1.0, like=total), total)
    root = ctx.emit(ops.sqrt, safe) if p == 2 else ctx.emit(ops.pow, safe, ctx.tensor(1.0 / p, like=total))
    return ctx.emit(ops.where, zero, ctx.tensor(0.0, like=total), root)
