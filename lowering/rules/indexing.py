"""Indexing: ``x[...]`` (operator.getitem), index_select, gather, scatter, masked_fill, where, embedding."""
from __future__ import annotations

import math

import builtins
import operator

import torch
import torch.nn.functional as F
from torch.fx.experimental.symbolic_shapes import statically_known_true

from fxla.dialects.fxla import ops
from fxla.dialects.mlir import ir
from fxla.frontend.shape_prop import register_meta_function

from ..emit import (dense_only, dim_size, expand_key, gradient_by_frequency, merge_tensor_indices, slice_bounds,
                    tensor_index)
from ..registry import register, register_module
from ..value_checks import check_indices


def _getitem(ctx, input, idx):
    if not isinstance(input, ir.Value):
        return input[idx]        # an element of a tuple result: torch.split(x, 2)[0], torch.max(x, 1)[1]
    sig = ctx.sig(input)
    starts, limits, strides, shape = [], [], [], []
    tensor_at, first_index, d = None, None, 0
    extra = []          # further tensor indices: (position, index)
    for k in expand_key(ctx, idx, sig.rank):
        if k is None:
            shape.append(1)
            continue
        size = sig.shape[d]
        if isinstance(k, tuple) and all(isinstance(e, int) and not isinstance(e, bool) for e in k):
            k = list(k)        # a tuple inside the index is a sequence of positions, as a list (dynamo's x[:, [-1]])
        if isinstance(k, bool) or not isinstance(k, (int, torch.SymInt, slice, ir.Value, list)):
            raise ctx.error(f"indexing with {type(k).__name__} is not supported", "fxla lowers ints, slices, "
                            "None, '...' and one integer tensor index", "rewrite the index with those")
        if isinstance(k, (int, torch.SymInt)):       # (a SymInt: x[:, n // 2]; its sign a guard if not known)
            i = k + size if k < 0 else k
            starts.append(i), limits.append(i + 1), strides.append(1)
        elif isinstance(k, slice):
            if k.step is not None and k.step <= 0:
                raise ctx.error("slice steps must be positive", "torch rejects them too", "use torch.flip")
            lo, hi, step, length = slice_bounds(_from_the_end(k, size), size)
            starts.append(lo), limits.append(hi), strides.append(step)
            shape.append(length)
        else:
            if tensor_at is not None:
                extra.append((len(shape), k))
            else:
                tensor_at, first_index = len(shape), k
            starts.append(0), limits.append(size), strides.append(1)
            shape.append(size)
        d += 1
    y = input
    # (compared without guards: a bound of a size, x[n // 4], may be 0 at some sizes and not at others)
    if not all(statically_known_true(lo == 0) and statically_known_true(hi == n) and step == 1
               for lo, hi, step, n in zip(starts, limits, strides, sig.shape)):
        y = ctx.emit(ops.slice, y, start=starts, limit=limits, stride=strides)
    y = ctx.reshape(y, shape)
    if tensor_at is None:
        return y
    if extra:
        y, shape, index, tensor_at = merge_tensor_indices(ctx, y, shape, [(tensor_at, first_index)] + extra)
    else:
        index = tensor_index(ctx, first_index, shape[tensor_at])
    index_shape = ctx.sig(index).shape
    flat = ctx.reshape(index, (math.prod(index_shape),))
    y = ctx.emit(ops.index_select, y, flat, dim=tensor_at)
    y = ctx.reshape(y, tuple(shape[:tensor_at]) + index_shape + tuple(shape[tensor_at + 1:]))
    if ctx.sig(y).shape != ctx.result_sig.shape:
        raise ctx.error("this mix of integer and tensor indices is not supported yet",
                        "torch moves the indexed dims to the front in some such cases",
                        "index with the tensor in a separate step")
    return y


register(operator.getitem)(_getitem)


def _getitem_meta(value, idx):
    """``value[idx]`` on meta values, where an int entry of ``idx`` may be a ``SymInt`` (``x[:, n // 2]``): torch's
    own indexing reads such an index as its number, which would fix the size it comes from; the result's shape is
    that of index 0 there, and the index lying in its dim is a guard (eager raises IndexError otherwise)."""
    key = idx if isinstance(idx, tuple) else (idx,)
    if not (isinstance(value, torch.Tensor) and any(isinstance(k, torch.SymInt) for k in key)
            and all(k is None or k is Ellipsis or isinstance(k, (int, torch.SymInt, slice)) for k in key)):
        return value[idx]
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    d, plain = 0, []
    for k in key:
        if k is Ellipsis:
            d += value.dim() - used
        elif k is not None:
            if isinstance(k, torch.SymInt):
                size = value.shape[d]
                torch._check(k >= -size, lambda k=k, size=size, d=d: f"index {k} is out of bounds for dim {d} "
                             f"with size {size}")
                torch._check(k < size, lambda k=k, size=size, d=d: f"index {k} is out of bounds for dim {d} with "
                             f"size {size}")
                k = 0
            d += 1
        plain.append(k)
    return value[tuple(plain)]


register_meta_function(operator.getitem, _getitem_meta)


def _from_the_end(k: slice, size) -> slice:
    """``k`` with each symbolic bound the ShapeEnv knows to be negative (``x[..., -n:]``) counted from the end as
    torch counts it, ``max(bound + size, 0)``."""
    def bound(v):
        if isinstance(v, torch.SymInt) and statically_known_true(v < 0):
            v = v + size
            return v if statically_known_true(v >= 0) else torch.sym_max(v, 0)
        return v
    return slice(bound(k.start), bound(k.stop), k.step)



def _reversed_dims(ctx, x):
    rank = ctx.sig(x).rank
    return x if rank < 2 else ctx.emit(ops.permute, x, dims=tuple(reversed(range(rank))))


def _adjoint(ctx, x):
    if ctx.sig(x).rank > 2:
        raise ctx.error(f".H of a {ctx.sig(x).rank}-D tensor", "torch defines .H for tensors of at most 2 dims",
                        "use .mH (the last two dims) or .transpose(-2, -1)")
    return _reversed_dims(ctx, x)         # fxla tensors are real: the conjugate is the tensor itself


def _matrix_transpose(ctx, x):
    rank = ctx.sig(x).rank
    if rank < 2:
        raise ctx.error(f".mT / .mH of a {rank}-D tensor", "they swap the last two dims, so need at least 2",
                        "use .T, or unsqueeze first")
    perm = list(range(rank))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return ctx.emit(ops.permute, x, dims=perm)


def _same(ctx, x):
    return x


def _data(ctx, x):
    return ctx.emit(ops.detach, x)          # x.data has no history: no gradient flows through it


#: tensor attributes that compute a value (``x.T``), by attribute name; ``.shape``/``.dtype``... are static
_TENSOR_ATTRIBUTES = {"T": _reversed_dims, "mT": _matrix_transpose, "H": _adjoint, "mH": _matrix_transpose,
                      "real": _same, "data": _data}


@register(builtins.getattr)
def _getattr(ctx, obj, name, *default):
    """A tensor attribute that is a value (``x.T``, ``x.mT``, ``x.H``, ``x.mH``, ``x.real``, ``x.data``), or a
    field of a named-tuple result (``torch.max(x, 1).values``)."""
    if isinstance(obj, ir.Value):
        rule = _TENSOR_ATTRIBUTES.get(name)
        if rule is None:
            raise ctx.error(f"the tensor attribute .{name} is not supported",
                            f"the lowered tensor attributes are {', '.join('.' + n for n in _TENSOR_ATTRIBUTES)} "
                            "(and static ones such as .shape and .dtype)",
                            "use the equivalent method or torch function")
        return rule(ctx, obj)
    return getattr(obj, name, *default)


@register(torch.index_select, torch.Tensor.index_select)
def _index_select(ctx, input, dim, index):
    count = math.prod(ctx.sig(index).shape)
    if not ctx.sig(input).shape and count != 1:
        raise ctx.error(f"index_select of a 0-d tensor with {count} indices",
                        f"eager PyTorch refuses it too: index_select(): Index to scalar can have only 1 value, got "
                        f"{count} value(s)", "index a 0-d tensor with one index, or x.reshape(1) first")
    check_indices(ctx, index, dim_size(ctx, input, dim), "index_select")
    return ctx.emit(ops.index_select, input, ctx.reshape(index, (math.prod(ctx.sig(index).shape),)), dim=dim)


@register(torch.gather, torch.Tensor.gather)
def _gather(ctx, input, dim, index, *, sparse_grad=False):
    check_indices(ctx, index, dim_size(ctx, input, dim), "gather")
    return ctx.emit(ops.gather, input, index, dim=dim)


def _scatter_src(ctx, input, index, src):
    if isinstance(src, ir.Value):
        return src
    value = ctx.tensor(src, like=input)
    value = ctx.emit(ops.convert, value, result_type=ir.RankedTensorType.get([], ctx.result_type.element_type))
    return ctx.emit(ops.expand, value, shape=ctx.sig(index).shape)


@register(torch.scatter, torch.Tensor.scatter)
def _scatter(ctx, input, dim, index, src=None, *, value=None, reduce=None):
    if reduce not in (None, "add", "multiply"):
        raise ctx.error(f"scatter(reduce={reduce!r}) is unknown", "torch accepts 'add' and 'multiply'",
                        "use reduce=None, 'add' or 'multiply' (or scatter_reduce)")
    src = _scatter_src(ctx, input, index, value if src is None else src)
    check_indices(ctx, index, dim_size(ctx, input, dim), "scatter")
    out = ctx.emit(ops.scatter, input, index, src, dim=dim, reduce="none" if reduce is None else reduce)
    # torch has no derivative for scatter(reduce=...) (scatter_add / scatter_reduce have one)
    return out if reduce is None else ctx.emit(ops.no_gradient, out, op="aten::scatter.reduce")


@register(torch.scatter_add, torch.Tensor.scatter_add)
def _scatter_add(ctx, input, dim, index, src):
    check_indices(ctx, index, dim_size(ctx, input, dim), "scatter_add")
    return ctx.emit(ops.scatter, input, index, src, dim=dim, reduce="add")


@register(torch.masked_fill, torch.Tensor.masked_fill)
def _masked_fill(ctx, input, mask, value):
    fill = ctx.tensor(value, like=input)
    elem_type = ir.RankedTensorType(input.type).element_type
    if ir.RankedTensorType(fill.type).element_type != elem_type:
        fill = ctx.emit(ops.convert, fill, result_type=ir.RankedTensorType.get(ctx.sig(fill).shape, elem_type))
    return ctx.emit(ops.where, mask, fill, input)


@register(torch.where)
def _where(ctx, condition, input=None, other=None):
    if input is None or other is None:
        raise ctx.error("torch.where(condition) is not supported", "it is nonzero(), a data-dependent shape",
                        "use the three-argument form")
    return ctx.emit(ops.where, condition, ctx.tensor(input, like=other), ctx.tensor(other, like=input))


@register(torch.Tensor.where)
def _where_method(ctx, input, condition, other):
    return _where(ctx, condition, input, other)


def _lookup(ctx, weight, indices, padding_idx=None, scale_grad_by_freq=False):
    """Rows of ``weight`` at ``indices``.  Their gradient follows torch's: none for the row ``padding_idx``, and
    with ``scale_grad_by_freq`` each looked-up row's gradient divided by how often its index occurs (written with
    ``fxla.detach``: the forward values are the rows themselves)."""
    index_shape = ctx.sig(indices).shape
    check_indices(ctx, indices, ctx.sig(weight).shape[0], "embedding")
    flat = ctx.reshape(indices, (math.prod(index_shape),))
    rows = ctx.emit(ops.index_select, weight, flat, dim=0)
    n, width = ctx.sig(flat).shape[0], ctx.sig(weight).shape[1:]
    if scale_grad_by_freq and n:
        rows = gradient_by_frequency(ctx, rows, flat)
    if padding_idx is not None and n:
        padding_idx = padding_idx + ctx.sig(weight).shape[0] if padding_idx < 0 else padding_idx
        mask = ctx.reshape(ctx.emit(ops.eq, flat, ctx.tensor(int(padding_idx), like=flat)), (n,) + (1,) * len(width))
        rows = ctx.emit(ops.where, ctx.expand(mask, ctx.sig(rows).shape), ctx.emit(ops.detach, rows), rows)
    return ctx.reshape(rows, index_shape + width)


@register(F.embedding)
def _embedding(ctx, input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
               sparse=False):
    if max_norm is not None:
        raise ctx.error("embedding(max_norm=...) is not supported", "it renormalises the weight in place",
                        "drop max_norm for inference")
    return _lookup(ctx, dense_only(ctx, weight, sparse, "embedding"), input, padding_idx, scale_grad_by_freq)


@register(torch.embedding)
def _torch_embedding(ctx, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return _lookup(ctx, dense_only(ctx, weight, sparse, "embedding"), indices,
                   None if padding_idx == -1 else padding_idx, scale_grad_by_freq)


register_module(torch.nn.Embedding, F.embedding, params=("weight",),
                attrs=("padding_idx", "max_norm", "scale_grad_by_freq", "sparse"))


@register(torch.diff, torch.Tensor.diff)
def _diff(ctx, input, n=1, dim=-1, prepend=None, append=None):
    """x[1:] - x[:-1] along ``dim`` (``!=`` for bool, as torch), ``n`` times, after joining the tensors
    ``prepend`` / ``append`` to ``input``."""
    rank = ctx.sig(input).rank
    if rank == 0:
        raise ctx.error("diff of a 0-d tensor", "torch requires at least one dimension", "pass a 1-D or larger tensor")
    dim %= rank
    parts = [p for p in (prepend, input, append) if p is not None]
    x = parts[0] if len(parts) == 1 else ctx.emit(ops.concat, parts, dim=dim)
    for _ in range(n):
        size = ctx.sig(x).shape[dim]
        later, earlier = ctx.slice_dim(x, dim, 1, size), ctx.slice_dim(x, dim, 0, max(size - 1, 0))
        x = ctx.emit(ops.logical_xor if ctx.sig(x).elem == "i1" else ops.sub, later, earlier)
    return x


@register(torch.narrow, torch.Tensor.narrow)
def _narrow(ctx, input, dim, start, length):
    dim %= ctx.sig(input).rank
    start = start + ctx.sig(input).shape[dim] if start < 0 else start
    return ctx.slice_dim(input, dim, start, start + length)


@register(torch.select, torch.Tensor.select)
def _select(ctx, input, dim, index):
    dim %= ctx.sig(input).rank
    index = index + ctx.sig(input).shape[dim] if index < 0 else index
    return ctx.reshape(ctx.slice_dim(input, dim, index, index + 1), ctx.result_sig.shape)
