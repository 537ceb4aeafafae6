"""fxla-channels-last: the transposes that put channels-last values (depthwise taps, pools) back in torch's
``[N, C, spatial...]`` order sink into the ops that use them; numerics unchanged, and the ops that cannot take
channels-last data keep the transpose."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla
from fxla.lowering import DEFAULT_PIPELINE, passes
from fxla.lowering.channels_last import channels_last_pass
from fxla.pipeline import Pipeline
from support import run_stablehlo_pass


class _MBConv(nn.Module):
    """EfficientNet's block: expand, depthwise, BatchNorm + SiLU, squeeze-and-excitation, project, residual."""

    def __init__(self, c=8, expand=4, k=5, stride=1, dims=2):
        super().__init__()
        conv, bn = (nn.Conv1d, nn.BatchNorm1d) if dims == 1 else (nn.Conv2d, nn.BatchNorm2d) if dims == 2 else (
            nn.Conv3d, nn.BatchNorm3d)
        h = c * expand
        self.expand, self.bn0 = conv(c, h, 1, bias=False), bn(h)
        self.dw, self.bn1 = conv(h, h, k, stride, k // 2, groups=h, bias=False), bn(h)
        self.fc1, self.fc2 = conv(h, c // 2, 1), conv(c // 2, h, 1)
        self.project, self.bn2 = conv(h, c, 1, bias=False), bn(c)
        self.stride, self.dims = stride, dims
        for m in (self.bn0, self.bn1, self.bn2):
            nn.init.uniform_(m.running_mean, -0.5, 0.5)
            nn.init.uniform_(m.running_var, 0.5, 2.0)
            nn.init.uniform_(m.weight, 0.5, 1.5)

    def forward(self, x):
        h = F.silu(self.bn0(self.expand(x)))
        h = F.silu(self.bn1(self.dw(h)))
        pooled = h.mean(dim=tuple(range(2, 2 + self.dims)), keepdim=True)
        h = h * torch.sigmoid(self.fc2(F.silu(self.fc1(pooled))))
        h = self.bn2(self.project(h))
        return h + x if self.stride == 1 else h


class _ConvNeXtBlock(nn.Module):
    """ConvNeXt's block: depthwise 7x7, channels-last LayerNorm and MLP between permutes, layer scale, residual."""

    def __init__(self, c=16):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm, self.fc1, self.fc2 = nn.LayerNorm(c), nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(torch.rand(c, 1, 1))

    def forward(self, x):
        h = self.dw(x).permute(0, 2, 3, 1)
        h = self.fc2(F.gelu(self.fc1(self.norm(h)))).permute(0, 3, 1, 2)
        return x + self.gamma * h


class _Pooled(nn.Module):
    """A pool of a convolution (fxla-pool-layout's transposes), then a residual add with another convolution and
    a global average pool."""

    def __init__(self):
        super().__init__()
        self.c0, self.c1 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.c0(x)), 2)
        return F.adaptive_avg_pool2d(F.relu(h + self.c1(h)), 1).flatten(1)


def _spy(monkeypatch):
    counts = []

    def spy(module):
        counts.append(channels_last_pass(module))
        return counts[-1]
    monkeypatch.setattr(passes, "channels_last_pass", spy)     # what fxla.compile's layout step calls
    return counts


@pytest.mark.parametrize("make, shape", [
    (lambda: _MBConv(), (2, 8, 12, 12)),
    (lambda: _MBConv(k=3, stride=2), (1, 8, 13, 11)),
    (lambda: _MBConv(dims=1), (2, 8, 17)),
    (lambda: _MBConv(k=3, dims=3), (1, 8, 5, 6, 7)),
    (lambda: _ConvNeXtBlock(), (2, 16, 9, 9)),
    (lambda: _Pooled(), (2, 3, 10, 10)),
])
def test_rewritten_programs_match_eager(make, shape, monkeypatch):
    counts = _spy(monkeypatch)
    torch.manual_seed(0)
    model, x = make().eval(), torch.randn(shape)
    with torch.no_grad():
        want = model(x)
    got = fxla.compile(model)(x)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert counts and counts[-1] > 0             # the pass moved at least one transpose


def test_the_excitation_block_keeps_no_channels_first_transpose():
    torch.manual_seed(0)
    model, x = _MBConv().eval(), torch.randn(2, 8, 12, 12)
    stages = fxla.compile(model).lower(x)
    text = Pipeline().layout(stages, "cpu").text
    # every convolution writes channels-last ([b, 0, 1, f]); the depthwise taps, BatchNorm, SiLU, the pool, the
    # excitation's multiply and the projection read them so.  One transpose is left: the projection's result back
    # to [N, C, H, W] for the residual add with the block's input (a function argument, row-major channels-first)
    main = text.split("func.func @main")[1]
    assert "->[b, f, 0, 1]" not in main and "->[b, 0, 1, f]" in main
    transposes = [line for line in main.splitlines() if "stablehlo.transpose" in line]
    assert len(transposes) == 1 and "dims = [0, 3, 1, 2]" in transposes[0], transposes


def test_not_part_of_the_portable_pipeline():
    assert "fxla-channels-last" not in DEFAULT_PIPELINE
    assert "fxla-channels-last" in passes.FXLA_PASSES


def _run(text: str) -> str:
    return run_stablehlo_pass(text, channels_last_pass)


def test_a_reduction_whose_result_would_be_transposed_is_left_alone():
    # reducing the batch dim of [N, C, H, W] keeps [C, H, W]: channels-last that would be [H, W, C]
    text = _run("""
func.func @f(%s: tensor<2x6x6x4xf32>) -> tensor<4x6x6xf32> {
  %t = stablehlo.transpose %s, dims = [0, 3, 1, 2] : (tensor<2x6x6x4xf32>) -> tensor<2x4x6x6xf32>
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.reduce(%t init: %init) applies stablehlo.add across dimensions = [0] : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<4x6x6xf32>
  return %m : tensor<4x6x6xf32>
}""")
    assert "dims = [0, 3, 1, 2]" in text and "dimensions = [0]" in text


def test_an_elementwise_op_with_an_operand_of_unknown_layout_is_left_alone():
    # a select whose predicate is a function argument: transposing it would be a copy
    text = _run("""
func.func @f(%s: tensor<2x6x6x4xf32>, %p: tensor<2x4x6x6xi1>, %y: tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32> {
  %t = stablehlo.transpose %s, dims = [0, 3, 1, 2] : (tensor<2x6x6x4xf32>) -> tensor<2x4x6x6xf32>
  %r = stablehlo.select %p, %t, %y : tensor<2x4x6x6xi1>, tensor<2x4x6x6xf32>
  return %r : tensor<2x4x6x6xf32>
}""")
    assert text.count("stablehlo.transpose") == 1 and "tensor<2x6x6x4xf32>) -> tensor<2x4x6x6xf32>" in text


def test_scalar_operands_and_constants_follow():
    text = _run("""
func.func @f(%s: tensor<2x6x6x4xf32>) -> tensor<2x4x6x6xf32> {
  %t = stablehlo.transpose %s, dims = [0, 3, 1, 2] : (tensor<2x6x6x4xf32>) -> tensor<2x4x6x6xf32>
  %lo = stablehlo.constant dense<0.0> : tensor<f32>
  %hi = stablehlo.constant dense<6.0> : tensor<f32>
  %c = stablehlo.clamp %lo, %t, %hi : (tensor<f32>, tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x6x6xf32>
  %k = stablehlo.constant dense<2.0> : tensor<2x4x6x6xf32>
  %r = stablehlo.multiply %c, %k : tensor<2x4x6x6xf32>
  return %r : tensor<2x4x6x6xf32>
}""")
    # the clamp and the multiply channels-last; one transpose back for the result
    assert "-> tensor<2x6x6x4xf32>" in text.split("stablehlo.clamp")[1].split("\n")[0]
    assert text.count("dims = [0, 3, 1, 2]") == 1 and "return" in text.split("dims = [0, 3, 1, 2]")[1]


def test_a_transpose_to_channels_last_stays_where_moving_it_up_would_copy():
    # an add of two function arguments (row-major channels-first): transposing both would be two copies for one
    text = _run("""
func.func @f(%a: tensor<2x4x6x6xf32>, %b: tensor<2x4x6x6xf32>) -> tensor<2x6x6x4xf32> {
  %s = stablehlo.add %a, %b : tensor<2x4x6x6xf32>
  %t = stablehlo.transpose %s, dims = [0, 2, 3, 1] : (tensor<2x4x6x6xf32>) -> tensor<2x6x6x4xf32>
  return %t : tensor<2x6x6x4xf32>
}""")
    assert text.count("stablehlo.transpose") == 1 and "stablehlo.add %arg0, %arg1 : tensor<2x4x6x6xf32>" in text


@pytest.mark.parametrize("grad", [False, True])
def test_a_value_used_with_its_own_transpose_after_a_convolution(grad):
    # (a hoist erased the transpose another value of the same round was the result of: a crash, not an error)
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(8, 8, 3, padding=1)

        def forward(self, h):
            h = self.conv(h.transpose(1, 2)).transpose(1, 2)
            return h @ h.transpose(1, 2)

    torch.manual_seed(0)
    model, x = M(), torch.randn(2, 5, 8, requires_grad=grad)
    want = model(x)
    got = fxla.compile(model)(x)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    if grad:
        (gx,) = torch.autograd.grad(got.sum(), x)
        torch.testing.assert_close(gx, torch.autograd.grad(want.sum(), x)[0], atol=1e-5, rtol=1e-5)
