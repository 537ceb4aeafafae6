"""``F.unfold`` / ``nn.Unfold`` (im2col) and ``F.fold`` / ``nn.Fold`` (col2im) on 4-D (or unbatched 3-D) inputs.

unfold: the padded input is sliced once per kernel offset ``(i, j)`` (start ``i * dilation``, stride ``stride``)
and the slices stacked as ``[N, C, kh * kw, L]`` -> ``[N, C * kh * kw, L]`` (channel-major, as torch orders them).
fold: the inverse sum -- each offset's block is spread out by the stride (interior padding), padded into place
and added; overlapping positions sum, as in torch.  Then the padding is cropped.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from fxla.dialects.fxla import ops
from fxla.frontend.shape_prop import (at_traced_sizes, has_symbolic_sizes, register_meta_function,
                                      register_meta_module)

from ..emit import ntuple, spread
from ..registry import register, register_module


def _out_size(size: int, kernel: int, dilation: int, padding: int, stride: int) -> int:
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


@register(F.unfold)
def _unfold(ctx, input, kernel_size, dilation=1, padding=0, stride=1):
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (ntuple(v, 2) for v in (kernel_size, dilation, padding, stride))
    unbatched = ctx.sig(input).rank == 3
    x = ctx.reshape(input, (1,) + tuple(ctx.sig(input).shape)) if unbatched else input
    n, c, h, w = ctx.sig(x).shape
    oh, ow = _out_size(h, kh, dh, ph, sh), _out_size(w, kw, dw, pw, sw)
    if ph or pw:
        x = ctx.emit(ops.pad, x, low=[0, 0, ph, pw], high=[0, 0, ph, pw])
    patches = []
    for i in range(kh):
        for j in range(kw):
            top, left = i * dh, j * dw
            patch = ctx.emit(ops.slice, x, start=[0, 0, top, left],
                             limit=[n, c, top + sh * (oh - 1) + 1, left + sw * (ow - 1) + 1], stride=[1, 1, sh, sw])
            patches.append(ctx.reshape(patch, (n, c, 1, oh * ow)))
    cols = ctx.emit(ops.concat, patches, dim=2) if len(patches) > 1 else patches[0]
    return ctx.reshape(cols, ctx.result_sig.shape)


@register(F.fold)
def _fold(ctx, input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    (h, w), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (ntuple(v, 2) for v in (output_size, kernel_size, dilation,
                                                                            padding, stride))
    unbatched = ctx.sig(input).rank == 2
    n = 1 if unbatched else ctx.sig(input).shape[0]
    c = ctx.sig(input).shape[-2] // (kh * kw)
    oh, ow = _out_size(h, kh, dh, ph, sh), _out_size(w, kw, dw, pw, sw)
    blocks = ctx.reshape(input, (n, c, kh * kw, oh, ow))
    full_h, full_w = h + 2 * ph, w + 2 * pw
    out = None
    for i in range(kh):
        for j in range(kw):
            block = ctx.reshape(ctx.emit(ops.slice, blocks, start=[0, 0, i * kw + j, 0, 0],
                                          limit=[n, c, i * kw + j + 1, oh, ow], stride=[1] * 5), (n, c, oh, ow))
            block = spread(ctx, block, (1, 1, sh, sw))
            bh, bw = ctx.sig(block).shape[2:]
            top, left = i * dh, j * dw
            placed = ctx.emit(ops.pad, block, low=[0, 0, top, left],
                              high=[0, 0, full_h - top - bh, full_w - left - bw])
            out = placed if out is None else ctx.emit(ops.add, out, placed)
    if ph or pw:
        out = ctx.emit(ops.pad, out, low=[0, 0, -ph, -pw], high=[0, 0, -ph, -pw])
    return ctx.reshape(out, ctx.result_sig.shape)


def _unfold_meta(input, kernel_size, dilation=1, padding=0, stride=1):
    """``F.unfold``'s meta result by size arithmetic where the input has symbolic sizes (torch's im2col reads the
    sizes as ints, which would fix them); torch's own checks run at the traced sizes, and its "blocks must be at
    least one" is a guard."""
    if not has_symbolic_sizes(input):
        return F.unfold(input, kernel_size, dilation, padding, stride)
    F.unfold(at_traced_sizes(input), kernel_size, dilation, padding, stride)
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (ntuple(v, 2) for v in (kernel_size, dilation, padding, stride))
    *lead, c, h, w = input.shape
    rows, cols = _out_size(h, kh, dh, ph, sh), _out_size(w, kw, dw, pw, sw)
    if not (rows >= 1 and cols >= 1):
        raise RuntimeError(f"Given input with spatial size ({h}, {w}), kernel_size=({kh}, {kw}), dilation=({dh}, "
                           f"{dw}), padding=({ph}, {pw}), calculated shape of the array of sliding blocks as "
                           f"({rows}, {cols}), but its components must be at least one.")
    return input.new_empty((*lead, c * kh * kw, rows * cols))


def _fold_meta(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """``F.fold``'s meta result by size arithmetic (as :func:`_unfold_meta`)."""
    if not has_symbolic_sizes(input):
        return F.fold(input, output_size, kernel_size, dilation, padding, stride)
    F.fold(at_traced_sizes(input), output_size, kernel_size, dilation, padding, stride)
    (h, w), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (ntuple(v, 2) for v in (output_size, kernel_size, dilation,
                                                                            padding, stride))
    *lead, cols, blocks = input.shape
    expected = _out_size(h, kh, dh, ph, sh) * _out_size(w, kw, dw, pw, sw)
    if not (cols % (kh * kw) == 0 and blocks == expected):
        raise RuntimeError(f"Expected an input of size (N, C * {kh * kw}, {expected}) for these fold arguments, "
                           f"got {list(input.shape)}")
    return input.new_empty((*lead, cols // (kh * kw), h, w))


register_meta_function(F.unfold, _unfold_meta)
register_meta_function(F.fold, _fold_meta)
register_meta_module(torch.nn.Unfold, lambda mod, input: _unfold_meta(input, mod.kernel_size, mod.dilation,
                                                                      mod.padding, mod.stride))
register_meta_module(torch.nn.Fold, lambda mod, input: _fold_meta(input, mod.output_size, mod.kernel_size,
                                                                  mod.dilation, mod.padding, mod.stride))
register_module(torch.nn.Unfold, F.unfold, attrs=("kernel_size", "dilation", "padding", "stride"))
register_module(torch.nn.Fold, F.fold, attrs=("output_size", "kernel_size", "dilation", "padding", "stride"))
