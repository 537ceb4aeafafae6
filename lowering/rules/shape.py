"""Shape ops.  Reshape-like ops read the static result shape computed by shape propagation; pixel/channel
shuffles are a reshape, a permute and a reshape.  Joining and splitting: cat/stack, split/chunk/unbind,
hsplit/vsplit/dsplit, expand/broadcast_tensors/repeat/tile, atleast_Nd, flip/roll/rot90, kron.  Views:
movedim, diagonal (slices of the permuted tensor), unfold (positions gathered, so overlapping windows add their
gradients up; ``as_strided`` is not lowered: it reads eager's storage layout, which a value does not have).
fxla's element types are all real: the conjugation ops are the tensor itself."""
from __future__ import annotations

import itertools
import math
import operator
from functools import partial

import torch

from fxla.dialects.fxla import ops, type_of
from fxla.dialects.mlir import ir
from fxla.frontend.custom_functions import custom_function_output
from fxla.frontend.passes.grad_mode import keep_history, unknown_history
from fxla.frontend.shape_prop import at_traced_sizes, has_symbolic_sizes, register_meta_function

from ..dtypes import sig_of_meta
from ..registry import register, register_module


def _reshape_to_result(ctx, input, *args, **kwargs):
    """view/reshape/flatten/unflatten/squeeze/unsqueeze: torch already resolved -1 and the dims."""
    if ctx.result_sig.elem != ctx.sig(input).elem:
        raise ctx.error("Tensor.view(dtype) is not supported yet", "it reinterprets the bits of the elements "
                        "(a bitcast), which fxla has no op for", "use .to(dtype) to convert the values instead")
    return ctx.emit(ops.reshape, input, shape=ctx.result_sig.shape)


register(torch.Tensor.view, torch.Tensor.reshape, torch.reshape, torch.flatten, torch.Tensor.flatten,
         torch.Tensor.unflatten, torch.unflatten, torch.squeeze, torch.Tensor.squeeze, torch.unsqueeze,
         torch.Tensor.unsqueeze, torch.Tensor.view_as, torch.Tensor.reshape_as, torch.ravel,
         torch.Tensor.ravel)(_reshape_to_result)


@register(torch.nn.Flatten, torch.nn.Unflatten)
def _flatten_module(ctx, input, *, mod):
    return ctx.emit(ops.reshape, input, shape=ctx.result_sig.shape)


@register(torch.Tensor.permute, torch.permute)
def _permute(ctx, input, *dims):
    dims = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
    return ctx.emit(ops.permute, input, dims=dims)


def _permuted(ctx, input, perm):
    """``input`` permuted by ``perm`` (``input`` itself for the identity)."""
    perm = tuple(perm)
    return input if perm == tuple(range(len(perm))) else ctx.emit(ops.permute, input, dims=perm)


@register(torch.Tensor.transpose, torch.transpose, torch.swapaxes, torch.Tensor.swapaxes, torch.swapdims,
          torch.Tensor.swapdims)
def _transpose(ctx, input, dim0, dim1):
    rank = ctx.sig(input).rank
    if rank == 0:
        return input                          # torch allows dims 0/-1 on a 0-d tensor: a no-op
    perm = list(range(rank))
    a, b = dim0 % rank, dim1 % rank
    perm[a], perm[b] = perm[b], perm[a]
    return ctx.emit(ops.permute, input, dims=perm)


@register(torch.Tensor.t, torch.t)
def _t(ctx, input):
    rank = ctx.sig(input).rank
    return input if rank < 2 else ctx.emit(ops.permute, input, dims=(1, 0))


# adjoint: the last two dims swapped (and conjugated, which real elements need not be)
register(torch.adjoint, torch.Tensor.adjoint)(partial(_transpose, dim0=-2, dim1=-1))


def _dim_list(dims):
    return (dims,) if isinstance(dims, int) else tuple(dims)


@register(torch.movedim, torch.Tensor.movedim, torch.moveaxis, torch.Tensor.moveaxis)
def _movedim(ctx, input, source, destination):
    """Each ``source`` dim to its ``destination``; the other dims keep their order in the places left."""
    rank = max(ctx.sig(input).rank, 1)
    src = [d % rank for d in _dim_list(source)]
    perm = [None] * rank
    for s, d in zip(src, _dim_list(destination)):
        perm[d % rank] = s
    rest = iter(d for d in range(rank) if d not in src)
    return _permuted(ctx, input, [next(rest) if p is None else p for p in perm][:ctx.sig(input).rank])


@register(torch.diagonal, torch.Tensor.diagonal)
def _diagonal(ctx, input, offset=0, dim1=0, dim2=1):
    """The (dim1, dim2) diagonal as the last dim: those two dims moved last, the n x n block the diagonal crosses
    sliced out and flattened, then every (n + 1)-th element of it."""
    rank = ctx.sig(input).rank
    a, b = dim1 % rank, dim2 % rank
    others = [d for d in range(rank) if d not in (a, b)]
    x = _permuted(ctx, input, (*others, a, b))
    n, k = ctx.result_sig.shape[-1], len(others)
    for dim, start in ((k, max(-offset, 0)), (k + 1, max(offset, 0))):
        size = ctx.sig(x).shape[dim]
        start = min(start, size)                              # (an empty diagonal: an empty slice)
        if (start, start + n) != (0, size):
            x = ctx.slice_dim(x, dim, start, start + n)
    x = ctx.reshape(x, (*ctx.sig(x).shape[:k], n * n))
    return ctx.slice_dim(x, k, 0, n * n, n + 1)


@register(torch.Tensor.unfold)
def _unfold(ctx, input, dimension, size, step):
    """Windows of ``size`` every ``step`` along ``dimension``, as a new last dim: the windows' positions gathered
    in one index_select (whose gradient adds up where windows overlap), split and the window dim moved last."""
    shape = ctx.sig(input).shape
    x, d = (input, dimension % len(shape)) if shape else (ctx.reshape(input, (1,)), 0)
    windows = ctx.result_sig.shape[d] if shape else 1
    index = ctx.int_constant([w * step + i for w in range(windows) for i in range(size)])
    x = ctx.emit(ops.index_select, x, index, dim=d)
    rank = ctx.sig(x).rank
    x = ctx.reshape(x, (*ctx.sig(x).shape[:d], windows, size, *ctx.sig(x).shape[d + 1:]))
    x = _permuted(ctx, x, (*range(d + 1), *range(d + 2, rank + 1), d + 1))
    return ctx.reshape(x, ctx.result_sig.shape)


@register(torch.Tensor.contiguous, torch.Tensor.clone, torch.clone)
def _identity(ctx, input, *args, **kwargs):
    return input


@register(torch.positive, torch.Tensor.positive, operator.pos, torch.conj, torch.Tensor.conj, torch.resolve_conj,
          torch.Tensor.resolve_conj, torch.resolve_neg, torch.Tensor.resolve_neg)
def _real_identity(ctx, input):
    """``+x`` and the conjugation ops: fxla's element types are all real (a complex dtype is refused where it
    first appears, docs/ops.md), whose conjugate -- and whose resolved conjugate or negative bit -- is the value."""
    return input


@register(torch.Tensor.detach, torch.detach)
def _detach(ctx, input):
    return ctx.emit(ops.detach, input)


@register(keep_history)
def _keep_history(ctx, value, before):
    """A tensor changed in place under ``torch.no_grad()`` (fxla.frontend.passes.grad_mode): its new value, with
    the history it had."""
    return ctx.emit(ops.keep_history, value, ctx.convert(before, ctx.sig(value).elem))


@register(unknown_history)
def _unknown_history(ctx, value):
    return ctx.emit(ops.no_gradient, value, op="Tensor.contiguous() under torch.no_grad()", reason=(
        "eager returns the tensor itself, with its history, when it is contiguous, and a copy without history "
        "otherwise; fxla's graph does not know the strides.  Say which: .detach() or .clone() for no gradient, or "
        "no .contiguous() for the tensor itself"))


# -- pixel_shuffle / pixel_unshuffle / channel_shuffle: a reshape, a permute, a reshape ------------------------
def _pixel_shuffle(ctx, input, upscale_factor: int):
    """[*, C r^2, H, W] -> [*, C, H r, W r]: split C into (C, r, r), interleave them with H and W."""
    *lead, c, h, w = ctx.sig(input).shape
    r, n = upscale_factor, len(lead)
    x = ctx.reshape(input, (*lead, c // (r * r), r, r, h, w))
    x = ctx.emit(ops.permute, x, dims=(*range(n), n, n + 3, n + 1, n + 4, n + 2))
    return ctx.reshape(x, ctx.result_sig.shape)


def _pixel_unshuffle(ctx, input, downscale_factor: int):
    """[*, C, H r, W r] -> [*, C r^2, H, W]: the inverse permutation of pixel_shuffle."""
    *lead, c, h, w = ctx.sig(input).shape
    r, n = downscale_factor, len(lead)
    x = ctx.reshape(input, (*lead, c, h // r, r, w // r, r))
    x = ctx.emit(ops.permute, x, dims=(*range(n), n, n + 2, n + 4, n + 1, n + 3))
    return ctx.reshape(x, ctx.result_sig.shape)


def _channel_shuffle(ctx, input, groups: int):
    """[N, C, *] -> channels regrouped: (groups, C / groups) transposed to (C / groups, groups)."""
    n, c, *rest = ctx.sig(input).shape
    x = ctx.reshape(input, (n, groups, c // groups, *rest))
    x = ctx.emit(ops.permute, x, dims=(0, 2, 1, *range(3, 3 + len(rest))))
    return ctx.reshape(x, ctx.result_sig.shape)


register(torch.pixel_shuffle)(_pixel_shuffle)            # F.pixel_shuffle & co. are these same objects
register(torch.pixel_unshuffle)(_pixel_unshuffle)
register(torch.channel_shuffle)(_channel_shuffle)


register_module(torch.nn.PixelShuffle, torch.pixel_shuffle, attrs=("upscale_factor",))
register_module(torch.nn.PixelUnshuffle, torch.pixel_unshuffle, attrs=("downscale_factor",))
register_module(torch.nn.ChannelShuffle, torch.channel_shuffle, attrs=("groups",))


# -- joining and splitting ---------------------------------------------------------------------------------------
def _sizes(args):
    """``f(x, 2, 3)`` and ``f(x, (2, 3))`` / ``f(x, torch.Size([2, 3]))`` spell the same sizes."""
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else tuple(args)


@register(torch.cat, torch.concat, torch.concatenate)
def _cat(ctx, tensors, dim=0, *, axis=None, out=None):
    """torch.cat; as torch does (a legacy rule), 1-D empty inputs -- ``torch.tensor([])``, what a Hugging Face
    ``DynamicCache`` starts from -- are skipped whatever ``dim`` and rank the others have."""
    kept = [t for t in tensors if ctx.sig(t).shape != (0,)] or list(tensors[:1])
    out = ctx.emit(ops.concat, kept, dim=dim if axis is None else axis)
    want = sig_of_meta(ctx.node.meta["tensor_meta"])     # the skipped inputs still take part in type promotion
    if ctx.sig(out).elem != want.elem:
        out = ctx.emit(ops.convert, out, result_type=type_of(want))
    return out


@register(torch.stack)
def _stack(ctx, tensors, dim=0, *, out=None):
    rank = ctx.sig(tensors[0]).rank + 1
    d = dim % rank
    pieces = [ctx.reshape(t, ctx.sig(t).shape[:d] + (1,) + ctx.sig(t).shape[d:]) for t in tensors]
    return ctx.emit(ops.concat, pieces, dim=d)


def _pieces(ctx, input, dim, *, squeeze=False, indices=None):
    """Consecutive slices along ``dim`` with the sizes torch gave each piece (``tensor_meta`` is a tuple); with
    ``indices`` (``tensor_split``'s list), ``x[:i0], x[i0:i1], ..., x[ik:]`` as Python slices (an index smaller
    than the one before gives an empty piece, and the next piece starts at it)."""
    metas = ctx.node.meta["tensor_meta"]
    rank = ctx.sig(input).rank
    d = dim % rank
    n = ctx.sig(input).shape[d]
    if indices is not None:
        bounds = [range(n)[slice(a, b)] for a, b in zip([None, *indices], [*indices, None])]
        starts = [r.start if len(r) else 0 for r in bounds]
    else:
        starts = list(itertools.accumulate([1 if squeeze else sig_of_meta(m).shape[d] for m in metas], initial=0))
    out = []
    for meta, start in zip(metas, starts):
        size = 1 if squeeze else sig_of_meta(meta).shape[d]
        piece = ctx.slice_dim(input, d, start, start + size)
        out.append(ctx.reshape(piece, sig_of_meta(meta).shape))
    return tuple(out)


def _index_list(indices_or_sections):
    """``tensor_split``'s indices when it was given a list of them (else ``None``: a number of sections)."""
    return list(indices_or_sections) if isinstance(indices_or_sections, (list, tuple)) else None


@register(torch.split, torch.Tensor.split, torch.Tensor.split_with_sizes, torch.split_with_sizes)
def _split(ctx, tensor, split_size_or_sections, dim=0):
    return _pieces(ctx, tensor, dim)


@register(torch.chunk, torch.Tensor.chunk)
def _chunk(ctx, input, chunks, dim=0):
    return _pieces(ctx, input, dim)


@register(torch.tensor_split, torch.Tensor.tensor_split)
def _tensor_split(ctx, input, indices_or_sections=None, dim=0, *, indices=None, sections=None):
    """``tensor_split(x, 3)``, ``(x, [1, 4])``, or with torch's keywords ``indices=`` / ``sections=``."""
    given = next(v for v in (indices_or_sections, indices, sections) if v is not None)
    return _pieces(ctx, input, dim, indices=_index_list(given))


@register(torch.unbind, torch.Tensor.unbind)
def _unbind(ctx, input, dim=0):
    return _pieces(ctx, input, dim, squeeze=True)


def _split_along(ctx, input, *indices_or_sections, dim, **kwargs):
    """hsplit / vsplit / dsplit: tensor_split along dim 1 (dim 0 of a 1-D tensor), 0 or 2."""
    given = indices_or_sections[0] if len(indices_or_sections) == 1 else indices_or_sections
    return _pieces(ctx, input, min(dim, ctx.sig(input).rank - 1), indices=_index_list(given))


register(torch.hsplit, torch.Tensor.hsplit)(partial(_split_along, dim=1))
register(torch.vsplit, torch.Tensor.vsplit)(partial(_split_along, dim=0))
register(torch.dsplit, torch.Tensor.dsplit)(partial(_split_along, dim=2))


@register(torch.atleast_1d, torch.atleast_2d, torch.atleast_3d, torch._VF.atleast_1d, torch._VF.atleast_2d,
          torch._VF.atleast_3d)
def _atleast(ctx, *tensors):
    """Each tensor reshaped to the shape torch gave it: one tensor in, one out; several (or a list), a tuple.
    (``torch.atleast_2d([a, b])`` reaches the graph as ``torch._VF``'s.)"""
    if len(tensors) == 1 and isinstance(tensors[0], ir.Value):
        return ctx.reshape(tensors[0], ctx.result_sig.shape)
    items = tensors[0] if len(tensors) == 1 else tensors
    return tuple(ctx.reshape(t, sig_of_meta(m).shape) for t, m in zip(items, ctx.node.meta["tensor_meta"]))


@register(torch.Tensor.expand, torch.broadcast_to, torch.Tensor.broadcast_to, torch.Tensor.expand_as)
def _expand(ctx, input, *sizes, **kwargs):
    shape = ctx.result_sig.shape                 # torch resolved the -1 entries
    return input if ctx.sig(input).shape == shape else ctx.emit(ops.expand, input, shape=shape)


@register(torch.broadcast_tensors)
def _broadcast_tensors(ctx, *tensors):
    return tuple(ctx.expand(t, sig_of_meta(m).shape) for t, m in zip(tensors, ctx.node.meta["tensor_meta"]))


def _tile(ctx, input, reps):
    """Repeat the whole tensor reps[i] times along dim i (``reps`` at least as long as the rank)."""
    shape = (1,) * (len(reps) - ctx.sig(input).rank) + ctx.sig(input).shape
    interleaved = [v for r, s in zip(reps, shape) for v in (1, s)]
    spread = [v for r, s in zip(reps, shape) for v in (r, s)]
    x = ctx.reshape(input, interleaved)
    if tuple(spread) != tuple(interleaved):
        x = ctx.emit(ops.expand, x, shape=spread)
    return ctx.reshape(x, [r * s for r, s in zip(reps, shape)])


@register(torch.Tensor.repeat)
def _repeat(ctx, input, *sizes):
    return _tile(ctx, input, _sizes(sizes))


@register(torch.tile, torch.Tensor.tile)
def _tile_rule(ctx, input, *sizes, dims=None):
    dims = _sizes(sizes) if dims is None else tuple(dims)      # x.tile(2, 2), x.tile((2, 2)), torch.tile(x, dims=...)
    return _tile(ctx, input, (1,) * (ctx.sig(input).rank - len(dims)) + dims)


@register(custom_function_output)
def _custom_function_output(ctx, x, name):
    """A tensor a custom ``torch.autograd.Function`` returned (its forward traced): no gradient through it, since
    its ``backward`` is Python code fxla does not see (fxla.frontend.custom_functions)."""
    return ctx.emit(ops.no_gradient, x, op=f"{name}.apply", reason=(
        "a custom torch.autograd.Function's backward is its own Python code, which fxla does not trace (it need "
        "not be the derivative of its forward)"))


@register(torch.repeat_interleave, torch.Tensor.repeat_interleave)
def _repeat_interleave(ctx, input, repeats=None, dim=None, *, output_size=None):
    """Each element ``repeats`` times in a row along ``dim`` (the flattened tensor when None).  ``repeats``: a
    Python int; a tensor of counts makes a data-dependent size and is refused."""
    if isinstance(repeats, ir.Value):
        raise ctx.error("repeat_interleave with a tensor of repeats", "the result's size depends on the counts' "
                        "values, which a compiled program has no concrete value for",
                        "pass the count as a Python int (x.repeat_interleave(2, dim=1))")
    if repeats is None or isinstance(repeats, bool):
        raise ctx.error("repeat_interleave of a tensor of counts (torch.repeat_interleave(counts))",
                        "the result's size depends on the counts' values", "pass the input and an int count")
    x = input
    if dim is None:
        x, dim = ctx.reshape(input, (math.prod(ctx.sig(input).shape),)), 0
    shape = ctx.sig(x).shape
    dim = dim % len(shape) if shape else 0
    if not shape:
        x, shape = ctx.reshape(x, (1,)), (1,)
    spread = shape[:dim + 1] + (int(repeats),) + shape[dim + 1:]
    x = ctx.emit(ops.expand, ctx.reshape(x, shape[:dim + 1] + (1,) + shape[dim + 1:]), shape=spread)
    return ctx.reshape(x, ctx.result_sig.shape)


@register(torch.flip, torch.Tensor.flip)
def _flip(ctx, input, *dims):
    return ctx.emit(ops.flip, input, dims=_sizes(dims))


@register(torch.fliplr)
def _fliplr(ctx, input):
    return ctx.emit(ops.flip, input, dims=(1,))


@register(torch.flipud)
def _flipud(ctx, input):
    return ctx.emit(ops.flip, input, dims=(0,))


@register(torch.roll, torch.Tensor.roll)
def _roll(ctx, input, shifts, dims=None):
    if dims is None:                             # roll the flattened tensor, then restore the shape
        shape = ctx.sig(input).shape
        flat = ctx.reshape(input, (math.prod(shape),))
        return ctx.reshape(_roll(ctx, flat, shifts, 0), shape)
    shifts = (shifts,) if isinstance(shifts, (int, torch.SymInt)) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    y = input
    for shift, dim in zip(shifts, dims):
        d = dim % ctx.sig(y).rank
        n = ctx.sig(y).shape[d]
        s = shift % n if n else 0
        if isinstance(s, torch.SymInt) or s:     # (a ? dim: both parts, one empty where n divides the shift)
            y = ctx.emit(ops.concat, [ctx.slice_dim(y, d, n - s, n), ctx.slice_dim(y, d, 0, n - s)], dim=d)
    return y


@register(torch.rot90, torch.Tensor.rot90)
def _rot90(ctx, input, k=1, dims=(0, 1)):
    """torch's rot90: k = 1 flips dims[1] then swaps the two dims, k = 2 flips both, k = 3 flips dims[0] then swaps."""
    rank = ctx.sig(input).rank
    a, b = (d % rank for d in dims)
    k %= 4
    if k == 0:
        return input
    if k == 2:
        return ctx.emit(ops.flip, input, dims=(a, b))
    y = ctx.emit(ops.flip, input, dims=(b,) if k == 1 else (a,))
    perm = list(range(rank))
    perm[a], perm[b] = b, a
    return ctx.emit(ops.permute, y, dims=perm)


@register(torch.kron)
def _kron(ctx, input, other):
    """Kronecker product: a as [a0, 1, a1, 1, ...] times b as [1, b0, 1, b1, ...] (ranks aligned at the end),
    then each (a_i, b_i) pair of dims merged."""
    sa, sb = ctx.sig(input).shape, ctx.sig(other).shape
    rank = max(len(sa), len(sb))
    sa, sb = (1,) * (rank - len(sa)) + sa, (1,) * (rank - len(sb)) + sb
    a = ctx.reshape(input, tuple(x for d in sa for x in (d, 1)))
    b = ctx.reshape(other, tuple(x for d in sb for x in (1, d)))
    return ctx.reshape(ctx.emit(ops.mul, a, b), tuple(x * y for x, y in zip(sa, sb)))


def _kron_meta(input, other):
    """torch.kron's meta result by size arithmetic (torch's own reads the sizes as ints, which fixed every
    symbolic dim): the product of each aligned pair of dims, in the promoted dtype."""
    if not has_symbolic_sizes((input, other)):
        return torch.kron(input, other)
    torch.kron(*at_traced_sizes((input, other)))            # (torch's argument checks, at the traced sizes)
    rank = max(input.dim(), other.dim())
    sa = (1,) * (rank - input.dim()) + tuple(input.shape)
    sb = (1,) * (rank - other.dim()) + tuple(other.shape)
    return input.new_empty([x * y for x, y in zip(sa, sb)], dtype=torch.promote_types(input.dtype, other.dtype))


register_meta_function(torch.kron, _kron_meta)
