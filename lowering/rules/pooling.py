"""Pooling (+ the nn modules): max_pool1d/2d/3d (fxla.max_pool, or fxla.max_pool_with_indices for
return_indices=True), avg_pool1d/2d/3d (fxla.avg_pool), lp_pool1d/2d/3d (on avg_pool), adaptive_avg_pool1d/2d/3d,
adaptive_max_pool1d/2d/3d and max_unpool1d/2d/3d (an fxla.scatter of the values into zeros at their indices).

Adaptive average pooling with uneven windows is a product with a constant [out, in] averaging matrix per pooled
dim (computed in f32 for half precision, rounded once).

Adaptive windows are torch's [floor(o * size / out), ceil((o + 1) * size / out)).  When every pooled dim divides
evenly they are a plain strided max pool; otherwise each output's window is gathered (fxla.index_select with a
constant [out, K] table, K the longest window, shorter windows repeating their last element, which changes no
maximum and no first-maximum position) and reduced with fxla.amax; indices take the box's first maximum (the
last NaN when it holds one, as torch) and map it back to a flattened input position through a constant table.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F

from fxla.dialects.fxla import Sig, ops, type_of
from fxla.dialects.fxla.types import is_float
from fxla.dialects.mlir import ir
from fxla.frontend.shape_prop import has_symbolic_sizes, register_meta_function, register_meta_module

from ..emit import compute_elem, ntuple
from ..registry import register, register_module


def _max_pool(ctx, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False,
              *, n, indices=None):
    kernel = ntuple(kernel_size, n)
    stride = kernel if stride in (None, [], ()) else ntuple(stride, n)
    attrs = dict(kernel_size=kernel, stride=stride, padding=ntuple(padding, n), dilation=ntuple(dilation, n),
                 ceil_mode=bool(ceil_mode))
    if indices if indices is not None else return_indices:
        return ctx.emit(ops.max_pool_with_indices, input, **attrs)
    return ctx.emit(ops.max_pool, input, **attrs)


for _n, _keys in ((1, (F.max_pool1d, torch.max_pool1d)), (2, (F.max_pool2d, torch.max_pool2d)),
                  (3, (F.max_pool3d, torch.max_pool3d))):
    register(*_keys)(partial(_max_pool, n=_n))
    register(getattr(F, f"max_pool{_n}d_with_indices"))(partial(_max_pool, n=_n, indices=True))
    register_module(getattr(torch.nn, f"MaxPool{_n}d"), _keys[0], attrs=("kernel_size", "stride", "padding",
                                                                          "dilation", "ceil_mode", "return_indices"))
register(torch.max_pool1d_with_indices)(partial(_max_pool, n=1, indices=True))


def _max_pool1d_meta(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """1-d max pooling's meta result as the 2-d pool's over a height of 1: torch's max_pool1d reads the length as
    an int, which would fix a symbolic one (the 2-d meta kernel keeps it)."""
    k, s, p, d = (ntuple(v, 1)[0] for v in (kernel_size, kernel_size if stride in (None, [], ()) else stride,
                                            padding, dilation))
    out = F.max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode, return_indices)
    return tuple(o.squeeze(-2) for o in out) if return_indices else out.squeeze(-2)


def _max_pool1d_with_indices_meta(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                                  return_indices=True):
    """The ``_with_indices`` forms: values and indices whatever ``return_indices`` says (as torch's)."""
    return _max_pool1d_meta(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


register_meta_function(torch.max_pool1d, _max_pool1d_meta)
register_meta_function(F.max_pool1d, _max_pool1d_meta)
register_meta_function(F.max_pool1d_with_indices, _max_pool1d_with_indices_meta)
register_meta_function(torch.max_pool1d_with_indices, _max_pool1d_with_indices_meta)
register_meta_module(torch.nn.MaxPool1d, lambda mod, input: _max_pool1d_meta(
    input, mod.kernel_size, mod.stride, mod.padding, mod.dilation, mod.ceil_mode, mod.return_indices))


# -- average pooling ---------------------------------------------------------------------------------------------
def _avg_pool(ctx, input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
              divisor_override=None, *, n):
    kernel = ntuple(kernel_size, n)
    stride = kernel if stride in (None, [], ()) else ntuple(stride, n)
    return ctx.emit(ops.avg_pool, input, kernel_size=kernel, stride=stride, padding=ntuple(padding, n),
                    ceil_mode=bool(ceil_mode), count_include_pad=bool(count_include_pad),
                    divisor_override=int(divisor_override or 0))


register(F.avg_pool1d, torch.avg_pool1d)(partial(_avg_pool, n=1))
register(F.avg_pool2d)(partial(_avg_pool, n=2))
register(F.avg_pool3d)(partial(_avg_pool, n=3))
for _n, _fn in ((1, F.avg_pool1d), (2, F.avg_pool2d), (3, F.avg_pool3d)):
    register_module(getattr(torch.nn, f"AvgPool{_n}d"), _fn, attrs=("kernel_size", "stride", "padding", "ceil_mode",
                                                                     "count_include_pad"),
                    divisor_override=lambda mod: getattr(mod, "divisor_override", None))


# -- power-average pooling (torch's formula, on avg_pool) ------------------------------------------------------
def _lp_pool(ctx, input, norm_type, kernel_size, stride=None, ceil_mode=False, *, n):
    """(sum of x^p over each window)^(1/p): avg_pool(x^p) times the window size; p = inf is max_pool(|x|)."""
    p = float(norm_type)
    kernel = ntuple(kernel_size, n)
    if p in (float("inf"), float("-inf")):
        raise ctx.error(f"lp_pool with norm_type={norm_type} is not supported", "fxla lowers finite norm types",
                        "use max_pool on x.abs() for the infinity norm")
    powered = ctx.emit(ops.pow, input, ctx.tensor(p, like=input))
    mean = _avg_pool(ctx, powered, kernel, stride, 0, ceil_mode, n=n)
    # torch: sign(out) * relu(|out|) * prod(kernel), then ** (1/p)
    out = ctx.emit(ops.mul, ctx.emit(ops.sign, mean), ctx.emit(ops.relu, ctx.emit(ops.abs, mean)))
    out = ctx.emit(ops.mul, out, ctx.tensor(float(np.prod(kernel)), like=out))
    return ctx.emit(ops.pow, out, ctx.tensor(1.0 / p, like=out))


for _n, _fn, _module in ((1, F.lp_pool1d, torch.nn.LPPool1d), (2, F.lp_pool2d, torch.nn.LPPool2d),
                         (3, F.lp_pool3d, torch.nn.LPPool3d)):
    register(_fn)(partial(_lp_pool, n=_n))
    register_module(_module, _fn, attrs=("norm_type", "kernel_size", "stride", "ceil_mode"))


# -- adaptive average pooling ----------------------------------------------------------------------------------
def _adaptive_avg_dim(ctx, x, dim: int, size, out):
    """Average dim ``dim`` of ``x`` over torch's adaptive windows ``[floor(o * size / out), ceil((o + 1) * size /
    out))``: each window's positions gathered (:func:`_window_parts`), the padding ones zeroed by a select, summed
    and divided by the window's length.  (A product with an [out, size] averaging matrix would send a non-finite
    element through its zeros into every output; eager's reaches only the windows that hold it.)"""
    table, count = _window_parts(ctx, size, out)
    k = ctx.sig(table).shape[1]
    g = ctx.emit(ops.index_select, x, ctx.reshape(table, (out * k,)), dim=dim)
    shape = ctx.sig(g).shape
    g = ctx.reshape(g, shape[:dim] + (out, k) + shape[dim + 1:])
    j = ctx.reshape(ctx.emit(ops.arange, start=0.0, step=1.0, length=k, result_type=type_of(Sig((k,), "i64"))),
                    (1, k))
    rank = ctx.sig(g).rank
    valid = ctx.reshape(ctx.emit(ops.lt, j, count), (1,) * dim + (out, k) + (1,) * (rank - dim - 2))
    g = ctx.emit(ops.where, valid, g, ctx.tensor(0.0, like=g))
    total = ctx.emit(ops.sum, g, dims=(dim + 1,), keepdim=False)
    length = ctx.reshape(ctx.convert(count, ctx.sig(x).elem), (1,) * dim + (out,) + (1,) * (rank - dim - 2))
    return ctx.emit(ops.div, total, length)


def _adaptive_avg_pool(ctx, input, output_size, *, n):
    s = ctx.sig(input)
    sizes = s.shape[s.rank - n:]
    out = ctx.result_sig.shape[s.rank - n:]
    if all(o == 1 for o in out) and any(not isinstance(size, int) for size in sizes):
        # a global average over symbolic sizes: the mean over the pooled dims (its divisor is the size as a value;
        # a pool's window would be a symbolic kernel size, which StableHLO's reduce_window cannot take)
        return ctx.emit(ops.mean, input, dims=list(range(s.rank - n, s.rank)), keepdim=True)
    if any(type(o) is int and o == 0 for o in out):     # an empty output (eager's too): no window to average
        return ctx.expand(ctx.tensor(0.0, like=input), tuple(ctx.result_sig.shape))
    static = all(isinstance(size, int) and isinstance(o, int) for size, o in zip(sizes, out))
    if static and all(size % o == 0 for size, o in zip(sizes, out)):   # even windows: a plain average pool
        kernel = tuple(size // o for size, o in zip(sizes, out))
        return ctx.emit(ops.avg_pool, input, kernel_size=kernel, stride=kernel, padding=(0,) * n)
    x = ctx.convert(input, compute_elem(s.elem))
    for i, (size, o) in enumerate(zip(sizes, out)):
        if size is not o and not (isinstance(size, int) and size == o):   # (a ? output the input's own size: as is)
            x = _adaptive_avg_dim(ctx, x, s.rank - n + i, size, o)
    return ctx.convert(x, s.elem)


register(F.adaptive_avg_pool1d, torch.adaptive_avg_pool1d)(partial(_adaptive_avg_pool, n=1))
register(F.adaptive_avg_pool2d)(partial(_adaptive_avg_pool, n=2))
register(F.adaptive_avg_pool3d)(partial(_adaptive_avg_pool, n=3))
for _n, _fn in ((1, F.adaptive_avg_pool1d), (2, F.adaptive_avg_pool2d), (3, F.adaptive_avg_pool3d)):
    register_module(getattr(torch.nn, f"AdaptiveAvgPool{_n}d"), _fn, attrs=("output_size",))


# -- adaptive max pooling ----------------------------------------------------------------------------------------
def _bounds(size: int, out: int) -> list:
    """torch's adaptive windows ``[floor(o * size / out), ceil((o + 1) * size / out))`` as ``(start, end)`` pairs."""
    return [((o * size) // out, -((-(o + 1) * size) // out)) for o in range(out)]


def _windows(size: int, out: int) -> np.ndarray:
    """[out, K] input positions of each adaptive window, the shorter ones padded with their last position."""
    bounds = _bounds(size, out)
    k = max(end - start for start, end in bounds)
    return np.asarray([[min(start + j, end - 1) for j in range(k)] for start, end in bounds], dtype=np.int64)


def _out_sizes(ctx, sizes, output_size, n):
    out = tuple(s if o is None else int(o) for s, o in zip(sizes, ntuple(output_size, n)))
    if any(o < 1 for o in out):
        raise ctx.error(f"adaptive_max_pool{n}d: output_size {list(out)} must be positive", "torch rejects it too",
                        "pass positive output sizes")
    return out


def _window_parts(ctx, size, out):
    """``(positions, lengths)`` of the adaptive windows of one dim as i64 values: ``[out, K]`` input positions
    (each window's tail repeating its last position: a repeat changes neither a maximum nor torch's pick) and
    ``[out, 1]`` window lengths.  Static sizes: constants (``K`` the longest window); a symbolic ``size``: computed
    from iotas, ``K = size // out + 2`` (no window is longer: ``ceil((o + 1) * size / out) - floor(o * size / out)
    <= size / out + 2``)."""
    if isinstance(size, int) and isinstance(out, int):
        bounds = np.asarray(_bounds(size, out), np.int64)
        return _table_value(ctx, _windows(size, out)), _table_value(ctx, (bounds[:, 1] - bounds[:, 0])[:, None])
    k = size // out + 2
    o, j = (ctx.emit(ops.arange, start=0.0, step=1.0, length=v, result_type=type_of(Sig((v,), "i64")))
            for v in (out, k))
    o, j = ctx.reshape(o, (out, 1)), ctx.reshape(j, (1, k))
    n, m = ctx.tensor(size, like=o), ctx.tensor(out, like=o)
    zero = ctx.tensor(0, like=o)
    start = ctx.emit(ops.floor_divide, ctx.emit(ops.mul, o, n), m)
    after = ctx.emit(ops.add, ctx.emit(ops.mul, o, n), n)                    # ceil(after / m) = -((-after) // m)
    stop = ctx.emit(ops.sub, zero, ctx.emit(ops.floor_divide, ctx.emit(ops.sub, zero, after), m))
    table = ctx.emit(ops.minimum, ctx.emit(ops.add, start, j), ctx.emit(ops.sub, stop, ctx.tensor(1, like=o)))
    return table, ctx.emit(ops.sub, stop, start)


def _table_value(ctx, table):
    """A window table as an i64 value (a numpy table becomes a constant)."""
    return table if isinstance(table, ir.Value) else \
        ctx.emit(ops.constant, value=ir.DenseElementsAttr.get(np.ascontiguousarray(table)))


def _box_position_values(ctx, sizes, tables):
    """:func:`_box_positions` in ops (tables that are values: symbolic sizes)."""
    n = len(tables)
    pos = None
    for i, table in enumerate(tables):
        t = _table_value(ctx, table)
        axes = [1] * (2 * n)
        axes[2 * i], axes[2 * i + 1] = ctx.sig(t).shape
        t = ctx.emit(ops.mul, ctx.reshape(t, tuple(axes)), ctx.tensor(math.prod(sizes[i + 1:]), like=t))
        pos = t if pos is None else ctx.emit(ops.add, pos, t)
    pos = ctx.emit(ops.permute, pos, dims=[2 * i for i in range(n)] + [2 * i + 1 for i in range(n)])
    shape = ctx.sig(pos).shape
    return ctx.reshape(pos, shape[:n] + (math.prod(shape[n:]),))


def _boxes(ctx, input, lead, tables):
    """[*lead, O1, .., On, K1 * .. * Kn]: every output's window, gathered dim by dim (a table: a numpy array, or
    an i64 value for a symbolic size)."""
    x = input
    for i, table in enumerate(tables):
        d = lead + 2 * i
        if isinstance(table, ir.Value):
            shape_t = ctx.sig(table).shape
            flat = ctx.reshape(table, (math.prod(shape_t),))
        else:
            shape_t, flat = table.shape, ctx.int_constant(table.reshape(-1))
        x = ctx.emit(ops.index_select, x, flat, dim=d)
        shape = ctx.sig(x).shape
        x = ctx.reshape(x, shape[:d] + tuple(shape_t) + shape[d + 1:])
    n = len(tables)
    perm = list(range(lead)) + [lead + 2 * i for i in range(n)] + [lead + 2 * i + 1 for i in range(n)]
    x = ctx.emit(ops.permute, x, dims=perm)
    shape = ctx.sig(x).shape
    return ctx.reshape(x, shape[:lead + n] + (math.prod(shape[lead + n:]),))


def _box_positions(sizes, tables) -> np.ndarray:
    """[O1, .., On, K1 * .. * Kn] row-major positions (in the flattened pooled dims) of the box elements."""
    n = len(tables)
    pos = np.zeros((), dtype=np.int64)
    for i, table in enumerate(tables):
        axes = [1] * (2 * n)
        axes[2 * i], axes[2 * i + 1] = table.shape
        pos = pos + table.reshape(axes) * math.prod(sizes[i + 1:])
    pos = pos.transpose([2 * i for i in range(n)] + [2 * i + 1 for i in range(n)])
    return pos.reshape(pos.shape[:n] + (-1,))


def _first_max_position(ctx, box):
    """Index along the last dim of ``box`` of torch's pick: the first maximum, or the last NaN if there is one."""
    first = ctx.emit(ops.argmax, box, dim=-1, keepdim=True)
    if not is_float(ctx.sig(box).elem):
        return first
    nan = ctx.emit(ops.ne, box, box)
    k = ctx.sig(box).shape[-1]
    from_end = ctx.emit(ops.argmax, ctx.emit(ops.flip, nan, dims=(-1,)), dim=-1, keepdim=True)
    last_nan = ctx.emit(ops.sub, ctx.tensor(k - 1, like=from_end), from_end)
    return ctx.emit(ops.where, ctx.emit(ops.any, nan, dims=(-1,), keepdim=True), last_nan, first)


def _adaptive_max_pool(ctx, input, output_size, return_indices=False, *, n, indices=None):
    want_indices = indices if indices is not None else return_indices
    s = ctx.sig(input)
    lead = s.rank - n
    if lead not in (1, 2):
        raise ctx.error(f"adaptive_max_pool{n}d expects a rank-{n + 1} or rank-{n + 2} input, got rank {s.rank}",
                        "torch rejects it too", f"pass [N, C, *spatial] or [C, *spatial] with {n} spatial dims")
    sizes = s.shape[lead:]
    out = _out_sizes(ctx, sizes, output_size, n)
    symbolic = not all(isinstance(size, int) and isinstance(o, int) for size, o in zip(sizes, out))
    if not symbolic and all(size % o == 0 for size, o in zip(sizes, out)):   # even windows: a strided max pool
        kernel = tuple(size // o for size, o in zip(sizes, out))
        result = _max_pool(ctx, input, kernel, kernel, 0, 1, False, want_indices, n=n)
        return tuple(result) if want_indices else result
    tables = [_windows(size, o) if isinstance(size, int) and isinstance(o, int) else _window_parts(ctx, size, o)[0]
              for size, o in zip(sizes, out)]
    box = _boxes(ctx, input, lead, tables)
    pick = _first_max_position(ctx, box)
    if is_float(s.elem):       # the values at torch's pick (the same numbers as amax): its gradient goes there alone
        values = ctx.reshape(ctx.emit(ops.gather, box, pick, dim=-1), ctx.sig(box).shape[:-1])
    else:
        values = ctx.emit(ops.amax, box, dims=(-1,))
    if not want_indices:
        return values
    positions = _box_position_values(ctx, sizes, tables) if symbolic else \
        _table_value(ctx, _box_positions(sizes, tables))
    positions = ctx.emit(ops.expand, positions, shape=ctx.sig(box).shape)
    picked = ctx.emit(ops.gather, positions, pick, dim=-1)
    return values, ctx.reshape(picked, ctx.sig(values).shape)


def _adaptive_max_pool_meta(input, output_size, return_indices=False, *, n, indices=None, eager):
    """The adaptive max pools' result on meta/fake tensors: torch's own (``eager``) where the input's sizes are
    numbers; over symbolic sizes a ``None`` in ``output_size`` keeps the input's size as it is (torch's meta kernel
    reads it as a number, which fixed the dim), the others are the given sizes.  The rule checks the arguments."""
    if not has_symbolic_sizes(input):
        return eager(input, output_size, return_indices) if indices is None else eager(input, output_size)
    out = tuple(size if o is None else o for size, o in zip(input.shape[-n:], ntuple(output_size, n)))
    values = input.new_empty(tuple(input.shape[:-n]) + out)
    if not (indices if indices is not None else return_indices):
        return values
    return values, values.new_empty(values.shape, dtype=torch.int64)


def _adaptive_max_pool_module_meta(mod, input, *, n, eager):
    return _adaptive_max_pool_meta(input, mod.output_size, mod.return_indices, n=n, eager=eager)


for _n in (1, 2, 3):
    _pool, _with_indices = getattr(F, f"adaptive_max_pool{_n}d"), getattr(F, f"adaptive_max_pool{_n}d_with_indices")
    register(_pool)(partial(_adaptive_max_pool, n=_n))
    register(_with_indices)(partial(_adaptive_max_pool, n=_n, indices=True))
    register_module(getattr(torch.nn, f"AdaptiveMaxPool{_n}d"), _pool, attrs=("output_size", "return_indices"))
    register_meta_function(_pool, partial(_adaptive_max_pool_meta, n=_n, eager=_pool))
    register_meta_function(_with_indices, partial(_adaptive_max_pool_meta, n=_n, indices=True, eager=_with_indices))
    register_meta_module(getattr(torch.nn, f"AdaptiveMaxPool{_n}d"),
                         partial(_adaptive_max_pool_module_meta, n=_n, eager=_pool))
register(torch.adaptive_max_pool1d)(partial(_adaptive_max_pool, n=1, indices=True))


# -- max unpooling -----------------------------------------------------------------------------------------------
def _max_unpool(ctx, input, indices, kernel_size, stride=None, padding=0, output_size=None, *, n):
    """max_unpool1d/2d/3d: a zero tensor of the unpooled size with each input value scattered to its index (a
    position in the flattened spatial dims of its (batch, channel) plane, as max_pool's ``return_indices``
    gives it).  The size is ``(in - 1) * stride - 2 * padding + kernel`` per dim, or ``output_size``."""
    kernel = ntuple(kernel_size, n)
    stride = kernel if stride in (None, [], ()) else ntuple(stride, n)
    padding = ntuple(padding, n)
    shape = ctx.sig(input).shape
    if len(shape) not in (n + 1, n + 2):
        raise ctx.error(f"max_unpool{n}d of a {len(shape)}-D input", f"it takes {n + 1}-D or {n + 2}-D inputs",
                        "pass (C, *spatial) or (N, C, *spatial)")
    spatial = shape[-n:]
    default = [(s - 1) * st + k - 2 * p for s, st, k, p in zip(spatial, stride, kernel, padding)]
    size = default
    if output_size is not None:
        size = [int(v) for v in output_size][-n:]
        if len(list(output_size)) not in (n, len(shape)) or any(
                not d - st < o < d + st for o, d, st in zip(size, default, stride)):
            raise ctx.error(f"max_unpool{n}d output_size {list(output_size)} is invalid for input {list(shape)}",
                            f"each size must be within stride of the default size {default} (torch rejects it too)",
                            "pass a size torch accepts, or leave output_size out")
    planes = tuple(shape[:-n])
    flat = ctx.reshape(input, planes + (math.prod(spatial),))
    index = ctx.reshape(indices, planes + (math.prod(spatial),))
    zero = ctx.emit(ops.expand, ctx.tensor(0.0 if is_float(ctx.sig(input).elem) else 0, like=input),
                    shape=planes + (math.prod(size),))
    out = ctx.emit(ops.scatter, zero, index, flat, dim=len(planes), reduce="none")
    return ctx.reshape(out, planes + tuple(size))


def _max_unpool_module(ctx, input, indices, output_size=None, *, mod, n):
    return _max_unpool(ctx, input, indices, mod.kernel_size, mod.stride, mod.padding, output_size, n=n)


for _n in (1, 2, 3):
    register(getattr(F, f"max_unpool{_n}d"))(partial(_max_unpool, n=_n))
    register(getattr(torch.nn, f"MaxUnpool{_n}d"))(partial(_max_unpool_module, n=_n))
