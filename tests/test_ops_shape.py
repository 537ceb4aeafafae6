"""Family ``shape`` (lowering/rules/shape.py) against eager: the reshape family, permutes, squeezes, joining and
splitting, expand/repeat/tile, flip/roll/rot90, kron and the pixel/channel shuffles.
The harness is tests/test_ops.py."""
from __future__ import annotations

import operator
from functools import partial

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from test_ops import BF16, BOOL, F16, F32, I64, add_case, params_of, run_case, t

from fxla.frontend.custom_functions import custom_function_output
from fxla.frontend import wrap
from fxla.frontend.passes.grad_mode import keep_history, unknown_history

CASES = []
case = partial(add_case, CASES)


# ---------------------------------------------------------------------------------------------------------------
# shape ops (dtype-preserving: checked on float, int and bool)
# ---------------------------------------------------------------------------------------------------------------
case((torch.Tensor.view, torch.Tensor.reshape, torch.reshape, torch.Tensor.view_as, torch.Tensor.reshape_as),
     "reshape_family",
     lambda x, y: (x.view(x.size(0), -1), x.view((4, 6)), x.reshape(-1, 2), torch.reshape(x, (3, -1)),
                   x.view_as(y), x.reshape_as(y)), t(2, 3, 4), t(4, 6), dtypes=(F32, I64, BOOL))
case((torch.flatten, torch.Tensor.flatten, torch.Tensor.unflatten, torch.unflatten), "flatten_family",
     lambda x: (torch.flatten(x, 1), x.flatten(), x.flatten(-2, -1), x.unflatten(1, (3, 1)),
                torch.unflatten(x, -1, (-1, 2))), t(2, 3, 4), dtypes=(BF16,))
case((torch.squeeze, torch.Tensor.squeeze, torch.unsqueeze, torch.Tensor.unsqueeze), "squeeze_family",
     lambda x: (torch.squeeze(x), torch.squeeze(x, 2), x.squeeze(0), x.squeeze(-1), torch.unsqueeze(x, 0),
                x.unsqueeze(-1)), t(1, 3, 1, 4, 1), dtypes=(F32, BOOL))
case((torch.Tensor.permute, torch.permute, torch.Tensor.transpose, torch.transpose, torch.swapaxes,
      torch.Tensor.swapaxes), "permute_family",
     lambda x: (x.permute(2, 0, 1), x.permute([-1, 0, -2]), torch.permute(x, (1, 2, 0)), x.transpose(1, 2),
                x.transpose(-1, -3), torch.transpose(x, 0, -1), torch.swapaxes(x, 0, 1), x.swapaxes(-2, -1)),
     t(2, 3, 4), dtypes=(F32, I64))
case((torch.Tensor.transpose, torch.Tensor.t), "transpose_0d", lambda x: (x.transpose(0, -1), x.t() + 1), t())
case((torch.Tensor.t, torch.t), "transpose_2d", lambda x, v: (x.t(), torch.t(x), v.t() * 2), t(3, 4), t(4),
     dtypes=(I64,))
case((torch.Tensor.contiguous, torch.Tensor.clone, torch.clone, torch.Tensor.detach, torch.detach),
     "identity_family",
     lambda x: (x.transpose(0, 1).contiguous(), x.clone() + 1, torch.clone(x) * 2, x.detach() - 1, torch.detach(x)),
     t(3, 4), dtypes=(I64,))
case(nn.Flatten, "nn.Flatten", nn.Flatten, t(2, 3, 4), module=True)
case(nn.Flatten, "nn.Flatten_dims", lambda: nn.Flatten(0, -2), t(2, 3, 4), module=True, dtypes=(BOOL,))
case(nn.Unflatten, "nn.Unflatten", lambda: nn.Unflatten(1, (3, 4)), t(2, 12), module=True)

# -- rot90, kron -------------------------------------------------------------------------------------------------
case((torch.rot90, torch.Tensor.rot90), "rot90",
     lambda x: (torch.rot90(x), torch.rot90(x, 2), torch.rot90(x, 3, (1, 2)), torch.rot90(x, -1, (0, -1)),
                x.rot90(5, [-1, -2]), torch.rot90(x, 0)),
     t(2, 3, 4), dtypes=(F32, I64, torch.bool))
case(torch.kron, "torch.kron",
     lambda a, b, v: (torch.kron(a, b), torch.kron(b, a), torch.kron(v, a), torch.kron(a, v), torch.kron(v, v)),
     t(2, 3), t(2, 4, 2), t(3), dtypes=(F32, BF16, I64))
case(torch.kron, "torch.kron_promotes", lambda a, b: torch.kron(a, b), t(2, 2, dtype=I64), t(3, 2))

ALL3 = (F32, I64, BOOL)

# ---------------------------------------------------------------------------------------------------------------
# joining and splitting (tuple results)
# ---------------------------------------------------------------------------------------------------------------
case((torch.cat, torch.concat, torch.concatenate), "cat",
     lambda x, y: (torch.cat([x, y]), torch.cat((x, y, x), dim=-1), torch.concat([x, y], 1),
                   torch.concatenate([y, x], axis=0)), t(2, 3), t(2, 3), dtypes=ALL3)
case(torch.cat, "cat_promotes", lambda x, y: torch.cat([x, y], 1), t(2, 3, dtype=F16), t(2, 1, dtype=I64))
case(torch.cat, "cat_skips_1d_empty",                       # torch's legacy rule; HF DynamicCache starts so
     lambda x, e: (torch.cat((e, x), dim=-2), torch.cat([x, e, x], 1), torch.cat([e, e])), t(2, 3, 4), t(0),
     dtypes=(F32, BF16))
case(torch.stack, "stack", lambda x, y: (torch.stack([x, y]), torch.stack((x, y, x), dim=-1), torch.stack([x], 1)),
     t(2, 3), t(2, 3), dtypes=(F32, I64))
case((torch.split, torch.Tensor.split), "split",
     lambda x: (torch.split(x, 2), x.split([1, 3], dim=1), torch.split(x, 3, -1)), t(5, 4), dtypes=(F32, BOOL))
case((torch.Tensor.split_with_sizes, torch.split_with_sizes), "split_with_sizes",
     lambda x: (x.split_with_sizes([2, 2], 1), torch.split_with_sizes(x, [1, 4])), t(5, 4))
case((torch.chunk, torch.Tensor.chunk), "chunk", lambda x: (torch.chunk(x, 3), x.chunk(2, dim=-1)), t(5, 4),
     dtypes=(F32, I64))
case((torch.tensor_split, torch.Tensor.tensor_split), "tensor_split",
     lambda x: (torch.tensor_split(x, 3), x.tensor_split([1, 3], dim=1), x.tensor_split([3, 1, 7], 0),
                x.tensor_split((-1, 2), dim=1), torch.tensor_split(x, indices=[4, 2]), x.tensor_split(sections=3),
                x.tensor_split(indices=[1, 3], dim=1)), t(5, 4))
case((torch.unbind, torch.Tensor.unbind), "unbind",
     lambda x: (torch.unbind(x), x.unbind(-1), [a + b for a, b in [x.unbind(1)[:2]]]), t(2, 3, 2),
     dtypes=(F32, I64))
case((torch.Tensor.expand, torch.broadcast_to, torch.Tensor.broadcast_to, torch.Tensor.expand_as), "expand",
     lambda x, y: (x.expand(2, 4, 3), x.expand(-1, 3), torch.broadcast_to(x, (3, 4, 3)), x.broadcast_to(4, 3),
                   x.expand_as(y)), t(4, 1), t(5, 4, 3), dtypes=ALL3)
case(torch.Tensor.repeat, "repeat", lambda x: (x.repeat(2, 3), x.repeat((2, 1, 2)), x.repeat(1, 1)), t(2, 3),
     dtypes=(F32, I64))
case((torch.tile, torch.Tensor.tile), "tile", lambda x: (torch.tile(x, (2,)), x.tile((2, 1, 3))), t(2, 3),
     dtypes=(BF16,))
class _Gelu(torch.autograd.Function):
    """A custom autograd Function (BLOOM's GeLUFunction style: forward(ctx, x))."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))

    @staticmethod
    def backward(ctx, grad):
        return grad


class _Round(torch.autograd.Function):
    """A straight-through estimator (forward(x) + setup_context): its backward is not its forward's derivative."""

    @staticmethod
    def forward(x, scale):
        return torch.round(x * scale)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.scale = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None


# a custom Function's forward is traced; a gradient through it is refused (tests/test_grad_ops.py: REFUSED)
case(custom_function_output, "custom_autograd_function",
     lambda x: (_Gelu.apply(x), _Round.apply(x, 4.0)), t(3, 4))
# a tensor changed in place under torch.no_grad(): its new value with the history it had (its gradient goes to
# `before` alone: tests/test_grad_ops.py against its eager autograd.Function; tests/test_grad_mode.py end to end)
case(keep_history, "keep_history", lambda x, y: (wrap(keep_history)(x * 2, y), wrap(keep_history)(x, x * y)), t(3, 4), t(3, 4))
# x.contiguous() under torch.no_grad(): its value, and a gradient through it refused (tests/test_grad_ops.py)
case(unknown_history, "unknown_history", lambda x: (wrap(unknown_history)(x * 2),), t(3, 4))
case((torch.repeat_interleave, torch.Tensor.repeat_interleave), "repeat_interleave",
     lambda x: (torch.repeat_interleave(x, 2, dim=1), x.repeat_interleave(3), x.repeat_interleave(2, dim=-1),
                torch.repeat_interleave(x[0, 0], 3), x.repeat_interleave(1, 0)), t(2, 3, 4), dtypes=(F32, I64, BOOL))
case((torch.flip, torch.Tensor.flip, torch.fliplr, torch.flipud), "flip",
     lambda x: (torch.flip(x, [0]), x.flip(-1, 0), x.flip((1,)), torch.fliplr(x), torch.flipud(x)), t(3, 4, 2),
     dtypes=ALL3)
case((torch.roll, torch.Tensor.roll), "roll",
     lambda x: (torch.roll(x, 1, 0), x.roll(-2, -1), torch.roll(x, (1, 5), (0, 1)), torch.roll(x, 3), x.roll(0, 1)),
     t(3, 4), dtypes=(F32, I64))

# -- views: ravel, swapdims, adjoint, movedim, diagonal, unfold --------------------------------------------------
# An output that is, in eager, a view of an input is made again after the call by replaying its views in eager
# (frontend/passes/output_views.py); these cases view a clone, so that fxla's lowering computes every output.
def _ravel(x):
    y = x.clone()
    return torch.ravel(y), y.ravel(), y.transpose(0, 2).ravel(), torch.ravel(y[0, 0, 0])


def _movedim(x):
    y = x.clone()
    return (y.movedim(0, 2), torch.movedim(y, (0, 1), (-1, 0)), torch.moveaxis(y, -1, 0), y.moveaxis([2, 0], [0, 1]),
            y.movedim(1, 1))


def _diagonal(x, m):
    """Several diagonals of one tensor: their gradients add up where they cross."""
    y, n = x.clone(), m.clone()
    return (y.diagonal(0, 1, 2), torch.diagonal(y, 1, 1, 2), y.diagonal(-2, -1, 1),
            torch.diagonal(y, offset=3, dim1=0, dim2=2), n.diagonal(), n.diagonal(-1), n.diagonal(1, 1, 0),
            n.diagonal(7))


def _unfold(x):
    """Overlapping windows (size > step): an element's gradient is the sum over the windows holding it."""
    y = x.clone()
    return (y.unfold(2, 2, 2), y.unfold(2, 3, 1), y.unfold(0, 2, 1), y.unfold(-2, 3, 2), y.unfold(1, 1, 3),
            y[0, 0, 0].unfold(0, 1, 1))


case((torch.ravel, torch.Tensor.ravel), "ravel", _ravel, t(2, 4, 6), dtypes=ALL3)
case((torch.swapdims, torch.Tensor.swapdims), "swapdims",
     lambda x: (torch.swapdims(x, 0, 2) * 2, x.swapdims(-1, 1) - 1), t(2, 4, 6), dtypes=(F32, I64))
case((torch.adjoint, torch.Tensor.adjoint), "adjoint",
     lambda x, m: (torch.adjoint(x) * 2, x.adjoint() - 1, m.adjoint() * 3), t(2, 4, 6), t(3, 5), dtypes=(F32, I64))
case((torch.movedim, torch.Tensor.movedim, torch.moveaxis, torch.Tensor.moveaxis), "movedim", _movedim,
     t(2, 4, 6), dtypes=ALL3)
case((torch.diagonal, torch.Tensor.diagonal), "diagonal", _diagonal, t(2, 4, 6), t(3, 5), dtypes=ALL3)
case(torch.Tensor.unfold, "Tensor.unfold", _unfold, t(2, 4, 6), dtypes=ALL3)

# -- +x and the conjugation ops: the value itself (fxla's element types are real) -------------------------------
case((torch.positive, torch.Tensor.positive, operator.pos), "positive",
     lambda x: (torch.positive(x) + 1, x.positive() * 2, +x - 1), t(3, 4), dtypes=(F32, I64))
case((torch.conj, torch.Tensor.conj, torch.resolve_conj, torch.Tensor.resolve_conj, torch.resolve_neg,
      torch.Tensor.resolve_neg), "conj_family",
     lambda x: (torch.conj(x) + 1, x.conj() * 2, torch.resolve_conj(x.conj()) * 3, x.resolve_conj() - 1,
                torch.resolve_neg(x) - 2, x.resolve_neg() * 3),
     t(3, 4), dtypes=(F32, I64))


# -- atleast_Nd, hsplit/vsplit/dsplit, broadcast_tensors -------------------------------------------------------
def _atleast(x, v, s):
    x, v, s = x.clone(), v.clone(), s.clone()
    return (torch.atleast_1d(s), torch.atleast_2d(v), torch.atleast_3d(x), torch.atleast_3d(v), torch.atleast_1d(x),
            torch.atleast_2d(s, v, x), torch.atleast_3d(s), torch.atleast_1d(v, s))


def _atleast_list(x, v, s):
    """A list (or tuple) of tensors reaches the graph as torch._VF's atleast_Nd."""
    x, v, s = x.clone(), v.clone(), s.clone()
    return torch.atleast_1d([s, x]), torch.atleast_2d((v, s)), torch.atleast_3d([x, v, s])


def _hvdsplit(x, v):
    x, v = x.clone(), v.clone()
    return (torch.hsplit(x, 2), x.hsplit([1, 3]), torch.vsplit(x, [1]), x.vsplit(2), torch.dsplit(x, 3),
            x.dsplit([2, 5]), torch.hsplit(v, [2, 2]), v.hsplit(3), x.vsplit([1, 0]), x.dsplit([4, 1, -1]))


def _broadcast_tensors(x, y, s):
    x, y, s = x.clone(), y.clone(), s.clone()
    return torch.broadcast_tensors(x, y), torch.broadcast_tensors(y, s, x), torch.broadcast_tensors(x)


case((torch.atleast_1d, torch.atleast_2d, torch.atleast_3d), "atleast", _atleast, t(2, 3), t(4), t(), dtypes=ALL3)
case((torch._VF.atleast_1d, torch._VF.atleast_2d, torch._VF.atleast_3d), "atleast_list", _atleast_list,
     t(2, 3), t(4), t(), dtypes=(F32, I64))
case((torch.hsplit, torch.Tensor.hsplit, torch.vsplit, torch.Tensor.vsplit, torch.dsplit, torch.Tensor.dsplit),
     "hsplit_vsplit_dsplit", _hvdsplit, t(2, 4, 6), t(6), dtypes=ALL3)
case(torch.broadcast_tensors, "broadcast_tensors", _broadcast_tensors, t(4, 1), t(3, 1, 5), t(), dtypes=ALL3)

# -- pixel / channel shuffles ---------------------------------------------------------------------------------
case((torch.pixel_shuffle, torch.pixel_unshuffle, torch.channel_shuffle), "pixel_channel_shuffle",
     lambda x, y: (F.pixel_shuffle(x, 2), F.pixel_unshuffle(y, 2), F.channel_shuffle(x, 4), F.pixel_shuffle(x[0], 2),
                   torch.pixel_unshuffle(y[:, :, :2, :4], 2)),
     t(2, 8, 3, 5), t(2, 2, 4, 6), dtypes=(F32, BF16, I64))
case(nn.PixelShuffle, "nn.PixelShuffle", lambda: nn.PixelShuffle(3), t(1, 18, 2, 2), module=True)
case(nn.PixelUnshuffle, "nn.PixelUnshuffle", lambda: nn.PixelUnshuffle(2), t(1, 3, 4, 2), module=True)
case(nn.ChannelShuffle, "nn.ChannelShuffle", lambda: nn.ChannelShuffle(3), t(2, 6, 5), module=True)


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)
