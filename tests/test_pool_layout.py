"""fxla-pool-layout: a pool of a convolution's result is written channels-last (between transposes), so XLA CPU
keeps the convolution's NHWC layout instead of copying activations to NCHW and back; numerics unchanged."""
import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla
from fxla.lowering import DEFAULT_PIPELINE, passes
from fxla.lowering.pool_layout import WALK_LIMIT, pool_layout_pass
from support import run_stablehlo_pass


def _compiled(model, x):
    model = model.eval()
    fast = fxla.compile(model)
    with torch.no_grad():
        want = model(x)
    got = fast(x)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    return fast


def _copies(fast, x) -> int:
    """Transposes and copies in XLA's optimised program (layout changes of activations)."""
    return len(re.findall(r" (?:transpose|copy)\(", fast.executable_for(x).hlo_text()))


class _Stem(nn.Module):
    """ResNet's stem and a residual block: conv, BatchNorm, ReLU, max pool, two convs, add, adaptive pool."""

    def __init__(self, pool):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 7, stride=2, padding=3, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.pool = pool
        self.c1, self.c2 = nn.Conv2d(8, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)
        self.head = nn.AdaptiveAvgPool2d((1, 1))

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.conv(x))))
        x = F.relu(x + self.c2(F.relu(self.c1(x))))
        return self.head(x).flatten(1)


@pytest.mark.parametrize("pool", [nn.MaxPool2d(3, 2, 1), nn.MaxPool2d(2, ceil_mode=True), nn.AvgPool2d(3, 2, 1),
                                  nn.AvgPool2d(3, 2, 1, count_include_pad=False), nn.LPPool2d(2, 2),
                                  nn.MaxPool2d(3, 1, 1, dilation=1)])
def test_pools_of_convolutions_keep_numerics_and_the_nhwc_layout(pool, monkeypatch):
    torch.manual_seed(0)
    model = _Stem(pool)
    nn.init.uniform_(model.bn.running_mean, -0.5, 0.5)
    nn.init.uniform_(model.bn.running_var, 0.5, 2.0)
    x = torch.randn(4, 3, 32, 32)
    fast = _compiled(model, x)
    # left: the input's NCHW -> NHWC and the global pool's operand (a transpose and a copy each)
    assert _copies(fast, x) <= 4, fast.executable_for(x).hlo_text()
    # without the pass (and fxla-channels-last, which also moves a pool of a convolution channels-last): the
    # pool's copies and the add's
    monkeypatch.setattr(passes, "pool_layout_pass", lambda module: 0)     # what fxla.compile's layout step calls
    monkeypatch.setattr(passes, "channels_last_pass", lambda module: 0)
    assert _copies(_compiled(model, x), x) >= _copies(fast, x) + 4


@pytest.mark.parametrize("make, shape", [
    (lambda: nn.Sequential(nn.Conv1d(3, 6, 3), nn.ReLU(), nn.MaxPool1d(2)), (2, 3, 17)),
    (lambda: nn.Sequential(nn.Conv3d(2, 4, 3), nn.ReLU(), nn.AvgPool3d(2, stride=1)), (1, 2, 7, 7, 7)),
    (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.MaxPool2d(2), nn.MaxPool2d(2)), (2, 3, 19, 19)),
    (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveMaxPool2d((3, 2))), (2, 3, 11, 9)),
])
def test_other_ranks_and_chains_keep_numerics(make, shape):
    torch.manual_seed(0)
    _compiled(make(), torch.randn(shape))


def _run(text: str) -> str:
    return run_stablehlo_pass(text, pool_layout_pass)


_CONV = ("stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = "
         "[1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = "
         "1 : i64} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>")


def _pool(operand: str, window="1, 1, 2, 2") -> str:
    return (f'%p = "stablehlo.reduce_window"({operand}, %i) ({{\n^bb0(%a: tensor<f32>, %b: tensor<f32>):\n'
            f'  %m = stablehlo.maximum %a, %b : tensor<f32>\n  stablehlo.return %m : tensor<f32>\n'
            f'}}) {{window_dimensions = array<i64: {window}>, window_strides = array<i64: {window}>}} : '
            f'(tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x3x3xf32>')


def _module(body: str, args="%x: tensor<2x3x8x8xf32>, %k: tensor<4x3x3x3xf32>") -> str:
    return (f"func.func @main({args}) -> tensor<2x4x3x3xf32> {{\n"
            f"%i = stablehlo.constant dense<0xFF800000> : tensor<f32>\n{body}\nreturn %p : tensor<2x4x3x3xf32>\n}}")


def test_a_pool_of_an_argument_or_of_a_non_elementwise_op_is_left_alone():
    arg = _run(_module(_pool("%y"), args="%y: tensor<2x4x6x6xf32>"))
    assert "transpose" not in arg
    reshaped = _run(_module(f"%c = {_CONV}\n%r = stablehlo.reshape %c : (tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>\n"
                            + _pool("%r")))
    assert "transpose" not in reshaped


def test_a_pool_over_the_channel_dim_is_left_alone():
    text = _module(f"%c = {_CONV}\n" + _pool("%c", window="1, 2, 2, 2")).replace("tensor<2x4x3x3xf32>",
                                                                                 "tensor<2x2x3x3xf32>")
    assert "transpose" not in _run(text)


def test_a_pool_of_a_convolution_through_elementwise_ops_is_rewritten():
    text = _run(_module(f"%c = {_CONV}\n%e = stablehlo.exponential %c : tensor<2x4x6x6xf32>\n"
                        f"%s = stablehlo.add %e, %c : tensor<2x4x6x6xf32>\n" + _pool("%s")))
    assert re.search(r"stablehlo.transpose %\S+, dims = \[0, 2, 3, 1\] : \(tensor<2x4x6x6xf32>\) -> "
                     r"tensor<2x6x6x4xf32>", text), text
    assert "window_dimensions = array<i64: 1, 2, 2, 1>" in text
    assert re.search(r"dims = \[0, 3, 1, 2\] : \(tensor<2x3x3x4xf32>\) -> tensor<2x4x3x3xf32>", text), text


def test_the_walk_is_bounded():
    chain = "\n".join(f"%e{i} = stablehlo.negate %e{i - 1} : tensor<2x4x6x6xf32>" for i in range(1, WALK_LIMIT + 2))
    text = _module(f"%e0 = {_CONV}\n{chain}\n" + _pool(f"%e{WALK_LIMIT + 1}"))
    assert "transpose" not in _run(text)


def test_fxla_compile_runs_it_for_cpu_but_the_portable_stablehlo_has_no_such_choice():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.MaxPool2d(2)).eval()
    x = torch.randn(2, 3, 10, 10)
    fast = _compiled(model, x)
    assert "fxla-pool-layout" not in DEFAULT_PIPELINE
    assert "stablehlo.transpose" not in fast.lower(x).stablehlo               # export / as_jax_function carry this
    entry = next(iter(fast._cache.values()))
    assert "stablehlo.transpose" in entry.stablehlo                           # what XLA CPU compiled
