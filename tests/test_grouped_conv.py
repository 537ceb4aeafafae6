"""fxla-grouped-conv (lowering/grouped_conv.py): grouped and depthwise convolutions as per-tap slices on XLA CPU.

Numerics against eager PyTorch through ``fxla.compile`` (where the cost model takes the rewrite, the compiled HLO
has no convolution left), the cost model's choices, the rewrite forced on wider groups, and what it leaves alone
(the portable StableHLO, half precision, transposed convolutions).  FileCheck tests of the rewritten IR are in
lit_tests/Transforms/grouped-conv.mlir.
"""
import pytest
import torch

import fxla
from fxla.lowering import verify_stablehlo
from fxla.lowering.grouped_conv import COSTS, estimate, grouped_conv_pass, pays
from fxla.runtime import compile_stablehlo, from_device, to_device

CONV = {1: torch.nn.Conv1d, 2: torch.nn.Conv2d, 3: torch.nn.Conv3d}


def _conv(dims, cin, cout, k, groups, **kw):
    torch.manual_seed(0)
    return CONV[dims](cin, cout, k, groups=groups, **kw).eval()


def _input(dims, n, c, size, dtype=torch.float32):
    torch.manual_seed(1)
    return torch.randn((n, c) + (size,) * dims, dtype=dtype)


def _hlo(fast, x) -> str:
    return fast.executable_for(x).hlo_text()


CASES = [  # dims, cin, cout, kernel, groups, extra Conv arguments, batch, size
    (2, 8, 8, 3, 8, dict(padding=1), 2, 12),                          # depthwise 3x3
    (2, 8, 8, 3, 8, dict(padding=1, stride=2), 1, 13),                # stride 2, odd size
    (2, 6, 6, 5, 6, dict(padding=4, dilation=2), 2, 11),              # dilation
    (2, 8, 8, 7, 8, dict(padding=3), 1, 14),                          # 7x7 (ConvNeXt)
    (2, 4, 12, 3, 4, dict(padding=1), 2, 9),                          # channel multiplier 3
    (2, 8, 8, 3, 4, dict(padding=1), 2, 10),                          # groups of 2 channels
    (2, 16, 32, 3, 4, dict(padding=1, stride=2), 2, 10),              # groups of 4, 8 outputs each
    (2, 8, 8, 3, 8, dict(padding=1, padding_mode="reflect"), 2, 9),   # padding modes (a pad before the conv)
    (2, 8, 8, 3, 8, dict(padding=1, padding_mode="circular"), 1, 9),
    (2, 8, 8, 3, 8, dict(padding=0, bias=False), 3, 8),               # no padding, no bias
    (2, 8, 8, (1, 5), 8, dict(padding=(0, 2)), 2, 9),                 # non-square kernel
    (1, 8, 8, 5, 8, dict(padding=2), 2, 20),                          # 1-D
    (3, 4, 4, 3, 4, dict(padding=1), 1, 6),                           # 3-D
]


@pytest.mark.parametrize("dims, cin, cout, k, groups, extra, batch, size", CASES)
def test_grouped_convolution_matches_eager_and_is_rewritten(dims, cin, cout, k, groups, extra, batch, size):
    model = _conv(dims, cin, cout, k, groups, **extra)
    x = _input(dims, batch, cin, size)
    fast = fxla.compile(model)
    with torch.no_grad():
        expected = model(x)
    torch.testing.assert_close(fast(x), expected, rtol=1e-5, atol=1e-5)
    assert "convolution(" not in _hlo(fast, x)          # the cost model took the per-tap form (Ci <= 4)


@pytest.mark.parametrize("mult", [1, 2])
def test_depthwise_after_a_convolution_runs_channels_last(mult):
    """MobileNet's expand -> depthwise: the taps work on the convolution's channels-last layout."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 1), torch.nn.ReLU6(),
                                torch.nn.Conv2d(8, 8 * mult, 3, padding=1, stride=2, groups=8)).eval()
    x = _input(2, 2, 3, 11)
    fast = fxla.compile(model)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x), rtol=1e-5, atol=1e-5)
    module = verify_stablehlo(fast.lower(x).stablehlo_debug)
    assert grouped_conv_pass(module) == 1
    assert "dims = [0, 2, 3, 1]" in module.operation.get_asm()        # the transpose to channels-last


def test_float64_is_rewritten_and_exact_to_rounding():
    model = _conv(2, 6, 6, 3, 6, padding=1).double()
    x = _input(2, 2, 6, 10, torch.float64)
    fast = fxla.compile(model)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x), rtol=1e-12, atol=1e-12)
    assert "convolution(" not in _hlo(fast, x)


def test_cost_model_takes_narrow_groups_only():
    assert all(pays(ci) for ci in (1, 2, 3, 4))
    assert not any(pays(ci) for ci in (8, 16, 32, 64, 512))
    xla, taps = zip(*(estimate(ci) for ci in (1, 2, 4, 8, 16, 32)))
    assert list(xla) == sorted(xla, reverse=True) and estimate(1) == COSTS[1] and estimate(1000) == COSTS[32]
    assert estimate(3)[0] < estimate(2)[0] and estimate(3)[0] > estimate(4)[0]        # log-interpolated


def test_wide_groups_keep_xla_convolution():
    model = _conv(2, 128, 128, 3, 16, padding=1)       # 16 groups of 8 channels (RegNetY's later stages)
    x = _input(2, 1, 128, 8)
    fast = fxla.compile(model)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x), rtol=1e-5, atol=1e-5)
    hlo = _hlo(fast, x)     # (neither the per-tap form nor the block-diagonal one: tests/test_block_diagonal_conv.py)
    assert "convolution(" in hlo and "feature_group_count=16" in hlo and "conditional(" not in hlo


def run_forced(model, x, rewrite) -> str:
    """Apply the pass ``rewrite`` (without the cost model) to ``model``'s StableHLO for ``x``, check that it
    rewrote one convolution and that the program computes eager's result; return the rewritten text."""
    stages = fxla.compile(model).lower(x)
    module = verify_stablehlo(stages.stablehlo_debug)
    assert rewrite(module) == 1
    text = module.operation.get_asm()
    device = fxla.runtime.resolve_device("cpu")
    params = [stages.program.params[n] for n in stages.program.param_names]
    executable = compile_stablehlo(text, device, n_params=len(params))
    (got,) = executable([to_device(x, device)] + [to_device(p, device) for p in params])
    with torch.no_grad():
        torch.testing.assert_close(from_device(got), model(x), rtol=1e-5, atol=1e-5)
    return text


@pytest.mark.parametrize("groups", [4, 2])
def test_forced_rewrite_of_wide_groups_matches_eager(groups):
    """``fxla-opt --fxla-grouped-conv`` rewrites every eligible convolution: wide groups compute the same."""
    text = run_forced(_conv(2, 32, 16, 3, groups, padding=1, stride=2), _input(2, 2, 32, 9), grouped_conv_pass)
    assert "stablehlo.convolution" not in text and "stablehlo.dot_general" in text


def test_portable_stablehlo_keeps_the_convolution():
    """A choice for XLA CPU: the verified StableHLO (what export and as_jax_function carry) is left alone."""
    model = _conv(2, 8, 8, 3, 8, padding=1)
    x = _input(2, 1, 8, 8)
    fast = fxla.compile(model)
    assert "stablehlo.convolution" in fast.lower(x).stablehlo and "convolution(" not in _hlo(fast, x)


def test_half_precision_and_transposed_keep_xla():
    model = _conv(2, 8, 8, 3, 8, padding=1).to(torch.bfloat16)
    x = _input(2, 1, 8, 8, torch.bfloat16)
    fast = fxla.compile(model)
    with torch.no_grad():
        torch.testing.assert_close(fast(x).float(), model(x).float(), rtol=2e-2, atol=2e-2)
    assert "convolution(" in _hlo(fast, x)
    torch.manual_seed(0)
    up = torch.nn.ConvTranspose2d(8, 8, 3, stride=2, groups=8).eval()
    fast = fxla.compile(up)
    with torch.no_grad():
        torch.testing.assert_close(fast(x.float()), up(x.float()), rtol=1e-5, atol=1e-5)
    assert "convolution(" in _hlo(fast, x.float())


def test_depthwise_weights_are_stored_tap_major():
    """The depthwise taps read their weights from the kernel transposed to [kh, kw, 1, C] (one contiguous slice
    per tap), and fxla-param-layout folds that transpose into the weight's stored layout: uploaded once, no
    transpose per call (ConvNeXt-Tiny's 7x7 depthwise: 2705 -> 2099 ms at batch 32, docs/performance.md)."""
    model = _conv(2, 8, 8, 7, 8, padding=3)
    x = _input(2, 2, 8, 14)
    fast = fxla.compile(model)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x), rtol=1e-5, atol=1e-5)
    (entry,) = fast._cache.values()
    assert ("module.weight", (2, 3, 1, 0)) in entry.param_keys       # stored [7, 7, 1, 8]


OVERHANGING = [  # dims, cin, cout, kernel, extra Conv arguments, batch, size: the kernel larger than the input
    (2, 16, 32, 3, dict(padding=1), 2, 2),                            # ResNet on 32x32 images: 2x2 maps
    (2, 16, 16, 3, dict(padding=1), 3, 1),                            # 1x1 maps
    (2, 8, 16, 3, dict(padding=1, stride=2), 2, 2),                   # stride 2 (the downsampling block)
    (2, 8, 8, 5, dict(padding=2, bias=False), 1, 3),                  # 5x5 on 3x3
    (2, 8, 8, 3, dict(padding=2, dilation=2), 2, 4),                  # dilated: extent 5 on 4x4
    (2, 8, 8, (3, 5), dict(padding=(1, 2)), 2, 2),                    # non-square
    (1, 8, 16, 3, dict(padding=1), 2, 2),                             # 1-D
    (3, 4, 8, 3, dict(padding=1), 1, 2),                              # 3-D
]


@pytest.mark.parametrize("dims, cin, cout, k, extra, batch, size", OVERHANGING)
def test_dense_convolution_overhanging_its_input_matches_eager_and_is_rewritten(dims, cin, cout, k, extra, batch,
                                                                                 size):
    """A dense convolution whose kernel is larger than its input (XLA CPU's is 4-70x slower there) runs as im2col,
    equal to eager; its weight is stored tap-major."""
    fast = _as_im2col(dims, cin, cout, k, extra, batch, size)
    (entry,) = fast._cache.values()
    assert ("module.weight", tuple(range(2, dims + 2)) + (1, 0)) in entry.param_keys


FEW_POSITIONS = [  # dims, cin, cout, kernel, extra Conv arguments, batch, size: at most 64 output positions
    (2, 32, 32, 3, dict(padding=1), 1, 7),                            # a ResNet's last maps at batch 1
    (2, 16, 32, 3, dict(padding=1, stride=2), 1, 14),                 # stride 2: 14x14 -> 7x7
    (2, 16, 32, 1, dict(stride=2, bias=False), 1, 14),                # the 1x1 downsampling convolution
    (1, 8, 16, 5, dict(padding=2), 4, 16),                            # 1-D: 4 x 16 positions
]


@pytest.mark.parametrize("dims, cin, cout, k, extra, batch, size", FEW_POSITIONS)
def test_dense_convolution_with_few_positions_matches_eager_and_is_rewritten(dims, cin, cout, k, extra, batch, size):
    """A dense convolution with at most 64 output positions (batch x map) runs as im2col and one dot, equal to
    eager (XLA CPU's convolution is 1.25-1.6x slower there)."""
    _as_im2col(dims, cin, cout, k, extra, batch, size)


def _as_im2col(dims, cin, cout, k, extra, batch, size):
    """``fxla.compile`` of a dense convolution, checked against eager and for no convolution left in its HLO."""
    model = _conv(dims, cin, cout, k, 1, **extra)
    x = _input(dims, batch, cin, size)
    fast = fxla.compile(model)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x), rtol=1e-5, atol=1e-5)
    assert "convolution(" not in _hlo(fast, x)
    return fast


def test_few_positions_keep_xla_where_the_dots_run_on_eigen():
    """With a matrix product of more than SMALL_DOT_MAX_ROWS rows in the program, XLA runs the dots on its own
    (Eigen) kernels, where im2col is slower than XLA's convolution: the convolution is kept."""
    from fxla.runtime.executable import SMALL_DOT_MAX_ROWS

    class Both(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.linear = _conv(2, 8, 8, 3, 1, padding=1), torch.nn.Linear(8, 8)

        def forward(self, x, rows):
            return self.conv(x), self.linear(rows)

    model, x = Both().eval(), _input(2, 1, 8, 7)
    fast = fxla.compile(model)
    with torch.no_grad():
        for n, rewritten in ((64, True), (SMALL_DOT_MAX_ROWS + 1, False)):
            rows = torch.randn(n, 8)
            got, want = fast(x, rows), model(x, rows)
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
            assert ("convolution(" not in fast.executable_for(x, rows).hlo_text()) == rewritten, n


def test_dense_convolution_on_a_larger_input_keeps_xla():
    """From more than 64 output positions up (and the kernel within the input), XLA's dense convolution is kept
    (it is as fast or faster)."""
    model = _conv(2, 8, 8, 3, 1, padding=1)
    x = _input(2, 2, 8, 6)
    fast = fxla.compile(model)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x), rtol=1e-5, atol=1e-5)
    assert "convolution(" in _hlo(fast, x)
