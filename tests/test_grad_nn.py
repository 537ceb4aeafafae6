"""Gradients of the ``nn`` and ``pool`` families' VJP rules (lowering/autodiff/nn.py, pool.py) against
torch.autograd: convolutions in every form (1/2/3-D, stride, padding, dilation, groups, depthwise, transposed
with output_padding, bias or none), softmax/log_softmax along each dim and in half precision, layer_norm's
optional affine parts, max pooling's ties (exactly representable duplicate values: the gradient goes to the
element torch's forward picks), -inf and NaN windows, padding, ceil_mode and dilation, average pooling's
divisors (count_include_pad, ceil_mode, divisor_override), and the legacy ``fxla.max_pool2d`` spelling.
``tests/test_grad_ops.py`` covers the ops' ordinary cases; the harness is tests/grad_support.py."""
from __future__ import annotations

import copy
import dataclasses

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla
from fxla.dialects.mlir import ir
from fxla.lowering.autodiff import differentiable_args, differentiate
from fxla.pipeline import Pipeline
from fxla.runtime import from_device
from grad_support import _run, check_grad

F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
NAN, INF = float("nan"), float("inf")
HALF_TOL = 3.0          # half-precision gradients: a few roundings of f16/bf16 on top of GRAD_TOL


def _randn(*shape, dtype=F32, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _ties(*shape, seed=0, low=-2, high=2):
    """Small integers: exactly representable, so windows hold many exactly equal maxima."""
    return torch.randint(low, high + 1, shape, generator=torch.Generator().manual_seed(seed)).to(F32)


def _check(fn, *inputs, tol=1.0):
    assert check_grad(fn, inputs, tol=tol), "nothing was differentiated"


# -- convolution ----------------------------------------------------------------------------------------------------
CONVS = {
    # name: (functional, input shape, weight shape, kwargs)
    "1d_stride_pad_dil_leftover": (F.conv1d, (2, 3, 12), (4, 3, 3), dict(stride=2, padding=1, dilation=2)),
    "1d_stride3_leftover": (F.conv1d, (1, 2, 11), (3, 2, 2), dict(stride=3)),
    "2d_groups_mixed": (F.conv2d, (2, 4, 9, 8), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2),
                                                                     groups=2)),
    "2d_depthwise": (F.conv2d, (2, 3, 7, 7), (3, 1, 3, 3), dict(padding=1, groups=3)),
    "2d_depthwise_multiplier": (F.conv2d, (1, 3, 8, 6), (6, 1, 3, 3), dict(stride=2, padding=1, groups=3)),
    "2d_pad_beyond_kernel": (F.conv2d, (1, 2, 5, 5), (3, 2, 1, 2), dict(padding=(2, 1))),
    "2d_same": (F.conv2d, (1, 2, 6, 7), (3, 2, 3, 3), dict(padding="same", dilation=(1, 2))),
    "2d_unbatched": (F.conv2d, (3, 6, 6), (2, 3, 3, 3), dict(stride=2)),
    "3d_groups_stride": (F.conv3d, (1, 4, 5, 6, 5), (4, 2, 2, 3, 2), dict(stride=2, padding=1, groups=2)),
    "3d_dilation": (F.conv3d, (2, 2, 6, 5, 5), (3, 2, 2, 2, 2), dict(dilation=(2, 1, 2), padding=(0, 1, 1))),
}


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("name", list(CONVS))
def test_conv(name, bias):
    fn, xs, ws, kwargs = CONVS[name]
    x, w = _randn(*xs, seed=1), _randn(*ws, seed=2)
    if bias:
        _check(lambda x, w, b: fn(x, w, b, **kwargs), x, w, _randn(ws[0], seed=3))
    else:
        _check(lambda x, w: fn(x, w, **kwargs), x, w)


TRANSPOSED = {
    # name: (functional, input shape, weight shape [Cin, Cout/groups, *k], kwargs)
    "1d_stride_outpad": (F.conv_transpose1d, (2, 3, 6), (3, 2, 3), dict(stride=2, padding=1, output_padding=1)),
    "1d_outpad_beyond_stride": (F.conv_transpose1d, (1, 2, 5), (2, 3, 3), dict(dilation=3, output_padding=2)),
    "2d_groups_dilation": (F.conv_transpose2d, (2, 4, 5, 4), (4, 3, 3, 2), dict(stride=(2, 3), padding=(1, 0),
                                                                                output_padding=(1, 2),
                                                                                dilation=(2, 1), groups=2)),
    "2d_depthwise": (F.conv_transpose2d, (1, 3, 4, 4), (3, 1, 3, 3), dict(stride=2, padding=1, groups=3)),
    "2d_pad_beyond_kernel": (F.conv_transpose2d, (1, 2, 6, 6), (2, 2, 2, 2), dict(padding=2)),
    "3d_stride": (F.conv_transpose3d, (1, 2, 3, 4, 3), (2, 2, 2, 3, 2), dict(stride=2, padding=(0, 1, 0),
                                                                             output_padding=(1, 0, 1))),
}


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("name", list(TRANSPOSED))
def test_conv_transpose(name, bias):
    fn, xs, ws, kwargs = TRANSPOSED[name]
    x, w = _randn(*xs, seed=1), _randn(*ws, seed=2)
    if bias:
        _check(lambda x, w, b: fn(x, w, b, **kwargs), x, w, _randn(ws[1] * kwargs.get("groups", 1), seed=3))
    else:
        _check(lambda x, w: fn(x, w, **kwargs), x, w)


@pytest.mark.parametrize("module", [
    nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2),
    nn.Conv1d(3, 3, 5, padding=4, dilation=2, groups=3, bias=False),
    nn.Conv2d(2, 4, 3, padding=1, padding_mode="circular"),
    nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
    nn.ConvTranspose3d(2, 2, 2, stride=2, bias=False),
], ids=["conv2d", "conv1d_depthwise", "conv2d_circular", "conv_transpose2d", "conv_transpose3d"])
def test_conv_modules_train_their_parameters(module):
    torch.manual_seed(0)
    module.reset_parameters()
    rank = module.weight.dim()
    shape = (2, module.in_channels) + (6,) * (rank - 2)
    _check(module, _randn(*shape, seed=4))


@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("groups", [1, 2, 4], ids=["plain", "grouped", "depthwise"])
def test_conv_half_precision(dtype, groups):
    x, w, b = _randn(2, 4, 7, 7, dtype=dtype, seed=1), _randn(4, 4 // groups, 3, 3, dtype=dtype, seed=2), \
        _randn(4, dtype=dtype, seed=3)
    _check(lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=groups), x, w, b, tol=HALF_TOL)


# -- softmax, log_softmax -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [torch.softmax, torch.log_softmax], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [-3, -2, -1, 0, 1, 2])
def test_softmax_along_each_dim(fn, dim):
    _check(lambda x: fn(x, dim), _randn(2, 3, 4, seed=5))


@pytest.mark.parametrize("fn", [torch.softmax, torch.log_softmax], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_softmax_half_precision(fn, dtype):
    _check(lambda x: fn(x, -1), _randn(3, 7, dtype=dtype, seed=6), tol=HALF_TOL)
    _check(lambda x: fn(x, 0, dtype=F32), _randn(4, 5, dtype=dtype, seed=7))      # upcast inside the op


@pytest.mark.parametrize("fn", [torch.softmax, torch.log_softmax], ids=["softmax", "log_softmax"])
def test_softmax_masked_and_0d(fn):
    x = torch.tensor([[0.5, -INF, 1.0, 2.0], [-INF, 3.0, -INF, -1.0]])             # attention masks
    if fn is torch.softmax:
        _check(lambda v: fn(v, -1), x)
    _check(lambda v: fn(v, 0), _randn(seed=8))                                     # a 0-d input: gradient 0


def test_attention_softmax():
    q, k, v = _randn(2, 2, 5, 4, seed=9), _randn(2, 2, 6, 4, seed=10), _randn(2, 2, 6, 4, seed=11)
    mask = torch.ones(5, 6, dtype=torch.bool).tril()
    _check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), q, k, v)


# -- layer_norm -----------------------------------------------------------------------------------------------------
# a bias normalised over every dim has the result's cotangent itself as its gradient, which makes
# lowering/autodiff/transform.py read a freed placeholder (a segfault; `x + y` does the same): skipped until fixed
_BIAS_IS_CT = pytest.mark.skip(reason="transform.py segfaults when a gradient is a cotangent unchanged")


@pytest.mark.parametrize("normalized, affine", [
    pytest.param(n, a, id=f"{name}-{a}", marks=[_BIAS_IS_CT] if name == "all" and a in ("both", "bias") else [])
    for name, n in (("last", (5,)), ("last2", (4, 5)), ("all", (3, 4, 5)))
    for a in ("both", "weight", "bias", "none")])
def test_layer_norm(normalized, affine):
    x = _randn(3, 4, 5, seed=12) * 3 + 1
    w = _randn(*normalized, seed=13) if affine in ("both", "weight") else None
    b = _randn(*normalized, seed=14) if affine in ("both", "bias") else None
    if affine == "both":
        _check(lambda x, w, b: F.layer_norm(x, normalized, w, b, eps=1e-3), x, w, b)
    elif affine == "weight":
        _check(lambda x, w: F.layer_norm(x, normalized, w, eps=1e-3), x, w)
    elif affine == "bias":
        _check(lambda x, b: F.layer_norm(x, normalized, None, b, eps=1e-3), x, b)
    else:
        _check(lambda x: F.layer_norm(x, normalized, eps=1e-3), x)


class _LossOf(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, y):
        return F.cross_entropy(self.model(x), y)


def test_batch_norm_cnn_training_gradients():
    """Two convolutions with batch norm in training mode, through a loss: the float32 variance accumulates in
    float64 as torch's CPU kernel does (in float32 every conv weight's gradient was ~1 % off eager's: 4e-4 at
    3e-2)."""
    torch.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 5))
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(8, 3, 16, 16, generator=gen)
    y = (x.flatten(1) @ torch.randn(768, 5, generator=gen)).argmax(1)
    model = _LossOf(cnn).train()
    exact = copy.deepcopy(model).double()
    exact(x.double(), y).backward()
    fast = copy.deepcopy(model)
    fxla.compile(fast)(x, y).backward()
    # float64 is the oracle's oracle: eager's float32 kernels are off by up to 2e-4 on some CPUs (AMD EPYC: conv
    # weight gradient 0.003303 where float64 gives 0.003479), fxla's by 1e-7
    for p, q in zip(fast.parameters(), exact.parameters()):
        torch.testing.assert_close(p.grad.double(), q.grad, rtol=1e-5, atol=1e-6)
    check_grad(model, (x, y), tol=3)


@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_layer_norm_half_precision(dtype):
    module = nn.LayerNorm(8).to(dtype)
    with torch.no_grad():
        module.weight.copy_(_randn(8, seed=15))
        module.bias.copy_(_randn(8, seed=16))
    _check(module, _randn(4, 8, dtype=dtype, seed=17), tol=HALF_TOL)


# -- max pooling ----------------------------------------------------------------------------------------------------
MAX_POOLS = {
    # name: (functional, input, kwargs)
    "1d_overlap": (F.max_pool1d, _ties(2, 3, 11), dict(kernel_size=3, stride=1)),
    "1d_pad_dil_ceil": (F.max_pool1d, _ties(1, 2, 10, seed=1), dict(kernel_size=3, stride=2, padding=1, dilation=2,
                                                                     ceil_mode=True)),
    "2d_overlap": (F.max_pool2d, _ties(2, 2, 7, 7, seed=2), dict(kernel_size=3, stride=2)),
    "2d_pad_ceil": (F.max_pool2d, _ties(1, 3, 8, 9, seed=3), dict(kernel_size=3, stride=2, padding=1,
                                                                   ceil_mode=True)),
    "2d_dilation_asym": (F.max_pool2d, _ties(2, 2, 9, 8, seed=4), dict(kernel_size=(3, 2), stride=(1, 2),
                                                                        padding=(1, 1), dilation=(2, 1))),
    "2d_unbatched": (F.max_pool2d, _ties(3, 6, 6, seed=5), dict(kernel_size=2, stride=1)),
    "2d_all_equal": (F.max_pool2d, torch.zeros(1, 2, 6, 6), dict(kernel_size=3, stride=2, padding=1)),
    "3d_overlap": (F.max_pool3d, _ties(1, 2, 5, 6, 5, seed=6), dict(kernel_size=(2, 3, 2), stride=(1, 2, 1),
                                                                     padding=(1, 1, 0), ceil_mode=True)),
    "3d_dilation": (F.max_pool3d, _ties(2, 1, 6, 6, 6, seed=7), dict(kernel_size=2, dilation=2, stride=1)),
}


@pytest.mark.parametrize("indices", [False, True], ids=["values", "with_indices"])
@pytest.mark.parametrize("name", list(MAX_POOLS))
def test_max_pool_ties_go_where_torch_picks(name, indices):
    fn, x, kwargs = MAX_POOLS[name]
    _check(lambda x: fn(x, return_indices=indices, **kwargs), x)


def test_max_pool_inf_and_nan_windows():
    x = _ties(1, 1, 6, 6, seed=8)
    x[0, 0, :3, :3] = -INF                          # a window of -inf only: its first element
    x[0, 0, 3:, 3:] = INF
    x[0, 0, 4, 0], x[0, 0, 5, 1] = NAN, NAN         # a window holding two NaN: the last one
    for indices in (False, True):
        _check(lambda v: F.max_pool2d(v, 3, stride=3, return_indices=indices), x)
        _check(lambda v: F.max_pool2d(v, 2, stride=1, padding=1, return_indices=indices), x)


@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_max_pool_half_precision(dtype):
    # overlapping windows add their cotangents in f32, rounded once
    _check(lambda x: F.max_pool2d(x, 3, stride=1, padding=1), torch.zeros(1, 2, 5, 5, dtype=dtype), tol=HALF_TOL)


def test_max_pool_module():
    _check(nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.MaxPool2d(2, ceil_mode=True)), _randn(2, 2, 7, 7, seed=9))


def test_legacy_max_pool2d():
    """``fxla.max_pool2d`` (no lowering emits it; old IR has it) differentiates like ``fxla.max_pool``."""
    x = _ties(2, 3, 7, 6, seed=10)

    def fn(v):
        return F.max_pool2d(v, 3, stride=2, padding=1, ceil_mode=True)
    pipeline = Pipeline()
    with torch.no_grad():
        program = pipeline.to_fxla(pipeline.prepare(fxla.compile(fn).graph_module, [x]))
    text = program.module.operation.get_asm()
    assert '"fxla.max_pool"(' in text
    with program.context:
        legacy = ir.Module.parse(text.replace('"fxla.max_pool"(', '"fxla.max_pool2d"('))
    program = dataclasses.replace(program, module=legacy)
    d = differentiate(program, differentiable_args(program), [0])
    ct = _randn(2, 3, 4, 4, seed=11)
    fwd = _run(d.forward, [x])
    res = list(fwd[len(fwd) - d.residuals:])
    (got,) = _run(d.backward, res + [ct] + [x for _ in d.inputs])
    leaf = x.clone().requires_grad_()
    (want,) = torch.autograd.grad(fn(leaf), leaf, ct)
    torch.testing.assert_close(from_device(got), want)


# -- average pooling ------------------------------------------------------------------------------------------------
AVG_POOLS = {
    "1d": (F.avg_pool1d, (2, 3, 11), dict(kernel_size=3, stride=2, padding=1)),
    "1d_ceil_no_pad_count": (F.avg_pool1d, (1, 2, 10), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True,
                                                             count_include_pad=False)),
    "2d_overlap": (F.avg_pool2d, (2, 2, 7, 7), dict(kernel_size=3, stride=1)),
    "2d_ceil_pad": (F.avg_pool2d, (1, 3, 8, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    "2d_ceil_pad_exclude": (F.avg_pool2d, (1, 3, 8, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                                              count_include_pad=False)),
    "2d_divisor_override": (F.avg_pool2d, (2, 2, 6, 7), dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 1),
                                                              divisor_override=5)),
    "2d_unbatched_gaps": (F.avg_pool2d, (3, 9, 9), dict(kernel_size=2, stride=3)),
    "3d_ceil_exclude": (F.avg_pool3d, (1, 2, 5, 6, 7), dict(kernel_size=(2, 3, 2), stride=2, padding=(1, 1, 0),
                                                             ceil_mode=True, count_include_pad=False)),
    "3d_divisor_override": (F.avg_pool3d, (2, 1, 4, 4, 4), dict(kernel_size=2, divisor_override=3)),
}


@pytest.mark.parametrize("name", list(AVG_POOLS))
def test_avg_pool(name):
    fn, shape, kwargs = AVG_POOLS[name]
    _check(lambda x: fn(x, **kwargs), _randn(*shape, seed=12))


@pytest.mark.parametrize("dtype", [F16, BF16, F64], ids=["f16", "bf16", "f64"])
def test_avg_pool_precision(dtype):
    _check(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
           _randn(1, 2, 7, 8, dtype=dtype, seed=13), tol=HALF_TOL if dtype != F64 else 1.0)


# -- the hinge of margin losses at exactly 0: aten's clamp_min passes the whole gradient, its kernels none -------
_HINGE_AT_ZERO = {
    # clamp_min(-y (a - b) + margin, 0) with a == b and margin 0: every term sits on the hinge
    "margin_ranking": (lambda a, b: F.margin_ranking_loss(a, b, torch.tensor([[1., -1., 1.], [-1., 1., 1.]])),
                       (_t := torch.tensor([[0.5, 1.0, 2.0], [1.0, 1.0, 0.0]]), _t.clone())),
    # clamp_min(margin - x, 0) where y == -1, x == margin in the first entry
    "hinge_embedding": (lambda x: F.hinge_embedding_loss(x, -torch.ones(1, 3), margin=1.0),
                        (torch.tensor([[1.0, 0.5, 2.0]]),)),
    # the multi-margin kernels count z > 0 only: margin - x[y] + x[j] == 0 gives nothing
    "multi_margin": (lambda x: F.multi_margin_loss(x, torch.tensor([0, 1])),
                     (torch.tensor([[1.0, 0.0, 0.5], [2.0, 1.0, 0.0]]),)),
    "multilabel_margin": (lambda x: F.multilabel_margin_loss(x, torch.tensor([[0, -1, 0], [1, -1, 0]])),
                          (torch.tensor([[1.0, 0.0, 0.5], [2.0, 1.0, 0.0]]),)),
}


@pytest.mark.parametrize("name", list(_HINGE_AT_ZERO))
def test_margin_losses_on_their_hinge(name):
    """A maximum(x, 0) there gave half the gradient at x == 0 (its tie convention): a wrong gradient."""
    fn, inputs = _HINGE_AT_ZERO[name]
    got, want = [], []
    for m, out in ((fxla.compile(fn), got), (fn, want)):
        leaves = [x.clone().requires_grad_() for x in inputs]
        m(*leaves).backward()
        out.extend(x.grad for x in leaves)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=0, atol=0)


@pytest.mark.parametrize("kw", [{}, {"label_smoothing": 0.1}, {"weight": "w"}], ids=["plain", "smoothing", "weight"])
def test_cross_entropy_with_every_target_ignored_has_torch_s_zero_gradient(kw):
    """Every target at ignore_index: torch's mean is nan (0/0) and its gradient zeros; fxla's gradient was the nan
    of 0/0's derivative.  With some targets counted, first and second derivatives equal eager's."""
    import torch.nn.functional as F
    kw = {k: torch.rand(5, generator=torch.Generator().manual_seed(0)) if v == "w" else v for k, v in kw.items()}
    x = torch.randn(3, 5, requires_grad=True)
    fast = fxla.compile(lambda a, b: F.cross_entropy(a, b, **kw))
    for t in (torch.full((3,), -100), torch.tensor([1, -100, 4])):
        for f in (lambda a, b: F.cross_entropy(a, b, **kw), fast):
            loss = f(x, t)
            (g,) = torch.autograd.grad(loss, x, create_graph=True)
            (h,) = torch.autograd.grad(g.pow(2).sum(), x)
            if f is fast:
                torch.testing.assert_close(loss, want[0], equal_nan=True)
                torch.testing.assert_close(g, want[1], rtol=1e-5, atol=1e-6)
                torch.testing.assert_close(h, want[2], rtol=1e-4, atol=1e-6)
            else:
                want = (loss, g, h)
