"""F.pad in every mode (+ the nn padding modules).

``constant`` is one fxla.pad.  ``reflect``, ``replicate`` and ``circular`` gather each padded dim with a
constant index list (fxla.index_select): output position o reads input position src(o - low), reflected about
the edges without repeating them, clamped, or wrapped around.  Negative padding crops first, then the
remaining padding is applied to the cropped tensor (torch's order, visible in circular mode).  A symbolic dim
(docs/shapes.md) gets the same positions computed in ops from an iota of the padded size, so the program stays
polymorphic in it.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from fxla.dialects.fxla import Sig, ops, type_of

from fxla.frontend.shape_prop import register_meta_function, register_meta_module

from ..registry import register, register_module


def _sources(size: int, low: int, high: int, mode: str) -> np.ndarray:
    """The input position each output position of one dim reads."""
    start, stop = max(-low, 0), size - max(-high, 0)         # crop first
    n = stop - start
    j = np.arange(-max(low, 0), n + max(high, 0))
    if mode == "replicate":
        j = np.clip(j, 0, n - 1)
    elif mode == "circular":
        j = np.mod(j, n)
    else:                                                    # reflect: ... 2 1 | 0 1 2 ... n-1 | n-2 ...
        period = 2 * (n - 1)
        j = np.abs(np.mod(j, period)) if period else np.zeros_like(j)
        j = np.where(j > n - 1, period - j, j)
    return j + start


def _symbolic_sources(ctx, size, low: int, high: int, mode: str):
    """:func:`_sources` as i64 ops, for a symbolic ``size`` (a ``SymInt``): the same formulas on an iota."""
    start = max(-low, 0)
    n = size - start - max(-high, 0)
    length = n + max(low, 0) + max(high, 0)                  # = size + low + high, the padded size
    j = ctx.emit(ops.arange, start=0.0, step=1.0, length=length, result_type=type_of(Sig((length,), "i64")))
    j = ctx.emit(ops.sub, j, ctx.tensor(max(low, 0), like=j))
    if max(low, high) > 0:                                   # (cropping alone reads j as it is)
        last = ctx.tensor(n - 1, like=j)
        if mode == "replicate":
            j = ctx.emit(ops.maximum, ctx.emit(ops.minimum, j, last), ctx.tensor(0, like=j))
        elif mode == "circular":
            j = ctx.emit(ops.remainder, j, ctx.tensor(n, like=j))
        else:                                                # reflect (n >= 2: _check guards max(low, high) <= n - 1)
            period = ctx.tensor(2 * (n - 1), like=j)
            j = ctx.emit(ops.abs, ctx.emit(ops.remainder, j, period))
            j = ctx.emit(ops.where, ctx.emit(ops.gt, j, last), ctx.emit(ops.sub, period, j), j)
    return ctx.emit(ops.add, j, ctx.tensor(start, like=j)) if start else j


def _pairs(rank: int, pad) -> list:
    """``(dim, low, high)`` of each padding pair: torch lists them from the last dim backwards."""
    return [(rank - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]


def _check(ctx, size, low, high, mode, dim):
    n = size - max(-low, 0) - max(-high, 0)
    if n < 1:
        raise ctx.error(f"F.pad(mode={mode!r}) crops dim {dim} of size {size} to nothing", "torch rejects it too",
                        "pad by less")
    limit = {"reflect": n - 1, "circular": n}.get(mode)
    if limit is not None and max(low, high) > limit:
        raise ctx.error(f"F.pad(mode={mode!r}): padding ({low}, {high}) of dim {dim} must be at most {limit} "
                        f"for a size-{n} dim", "torch rejects it too", "pad by less, or use mode='replicate'")


def _amounts(pad, mode: str) -> list:
    """The padding amounts as ints, but in ``constant`` mode a symbolic amount (a ``SymInt`` computed from a
    symbolic size: Swin's ``(7 - W % 7) % 7``) stays symbolic: ``fxla.pad`` takes it as a size operand."""
    return [p if mode == "constant" and isinstance(p, torch.SymInt) else int(p) for p in pad]


def _check_crop(ctx, size, low, high, dim) -> None:
    """torch crops by each negative amount in turn (``narrow``) and refuses a crop longer than what is left."""
    if not all(isinstance(v, int) for v in (size, low, high)):
        return                                     # (symbolic: checked by nothing yet; docs/shapes.md)
    if size + min(low, 0) < 0 or size + min(low, 0) + min(high, 0) < 0 or size + low + high < 0:
        raise ctx.error(f"F.pad crops dim {dim} of size {size} by ({low}, {high}), more than it holds",
                        "torch refuses it too (narrow(): length must be non-negative)", "crop by less")


@register(F.pad)
def _pad(ctx, input, pad, mode="constant", value=None):
    rank = ctx.sig(input).rank
    pad = _amounts(pad, mode)
    if len(pad) % 2 or len(pad) // 2 > rank:
        raise ctx.error(f"F.pad: {len(pad)} padding sizes for a rank-{rank} input", "torch needs pairs, at most "
                        "one per dim", "pass (low, high) pairs from the last dim backwards")
    pairs = _pairs(rank, pad)
    if mode == "constant":
        low, high = [0] * rank, [0] * rank
        for d, lo, hi in pairs:                    # pairs from the last dim backwards, as torch orders them
            _check_crop(ctx, ctx.sig(input).shape[d], lo, hi, d)
            low[d], high[d] = lo, hi
        return ctx.emit(ops.pad, input, low=low, high=high, value=0.0 if value is None else float(value))
    if mode not in ("reflect", "replicate", "circular"):
        raise ctx.error(f"F.pad(mode={mode!r}) is unknown", "torch accepts constant, reflect, replicate and "
                        "circular", "use one of those")
    y = input
    for d, lo, hi in pairs:
        size = ctx.sig(y).shape[d]
        _check(ctx, size, lo, hi, mode, d)
        if lo == hi == 0:
            continue
        if not isinstance(size, int):                        # a symbolic size: the positions in ops
            y = ctx.emit(ops.index_select, y, _symbolic_sources(ctx, size, lo, hi, mode), dim=d)
            continue
        src = _sources(size, lo, hi, mode)
        if not np.array_equal(src, np.arange(size)):
            y = ctx.emit(ops.index_select, y, ctx.int_constant(src), dim=d)
    return y


def _pad_meta(input, pad, mode="constant", value=None):
    """F.pad's result on meta/fake tensors, by shape arithmetic alone: torch's kernel for constant padding reads
    the sizes as plain ints, so a symbolic size would be fixed to its traced value (the padded sizes are
    ``size + low + high`` in every mode; the modes' limits are checked by the lowering rule above; constant
    padding by a symbolic amount keeps it symbolic).  Constant padding's crops of a symbolic size are guards:
    torch crops by each negative amount in turn and raises where a crop is longer than what is left."""
    shape = list(input.shape)
    for d, low, high in _pairs(len(shape), _amounts(pad, mode)):
        if d >= 0:                      # (more pairs than dims: the lowering rule refuses the call)
            if mode == "constant":
                _crop_guards(shape[d], low, high, d)
            shape[d] = shape[d] + low + high
    return input.new_empty(shape)


def _crop_guards(size, low, high, dim) -> None:
    """:func:`_check_crop` for a symbolic size or amount: each length left after a crop must be non-negative (a
    guard of the program, so checked at every call's sizes; static ones the rule checks)."""
    left = size + torch.sym_min(low, 0)
    for length in (left, left + torch.sym_min(high, 0), size + low + high):
        if isinstance(length, torch.SymInt):
            torch._check(length >= 0, lambda: f"F.pad crops dim {dim} of size {size} by ({low}, {high}), more than "
                         f"it holds (narrow(): length must be non-negative)")


register_meta_function(F.pad, _pad_meta)

for _n in (1, 2, 3):
    for _name, _mode in (("ConstantPad", "constant"), ("ZeroPad", "constant"), ("ReflectionPad", "reflect"),
                         ("ReplicationPad", "replicate"), ("CircularPad", "circular")):
        register_module(getattr(torch.nn, f"{_name}{_n}d"), F.pad, pad="padding", mode=lambda mod, mode=_mode: mode,
                        value=lambda mod: getattr(mod, "value", None))
        register_meta_module(getattr(torch.nn, f"{_name}{_n}d"), lambda mod, input: _pad_meta(input, mod.padding))
