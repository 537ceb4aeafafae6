"""The block-diagonal form of grouped convolutions (lowering/block_diagonal.py): a few groups of several channels
(RegNetY's first stage: 6 groups of 8) as one dense convolution with a block-diagonal kernel on XLA CPU, behind a
test that the input is finite (``inf * 0`` is NaN: a non-finite input element must not reach other groups).

Numerics against eager PyTorch through ``fxla.compile`` (where the cost model takes the form, the compiled HLO has
the conditional), non-finite inputs equal to eager's NaN pattern, the cost model's choices, and the unconditional
pass (``fxla-opt --fxla-block-diagonal-conv``) on wider groups.  FileCheck tests of the rewritten IR are in
lit_tests/Transforms/block-diagonal-conv.mlir.
"""
import pytest
import torch

import fxla
from fxla.lowering.grouped_conv import BLOCK_DIAGONAL_MIN_MACS, block_diagonal_conv_pass, pays, pays_block_diagonal
from test_grouped_conv import _conv as _model, _input, run_forced

CASES = [  # dims, cin, cout, kernel, groups, extra Conv arguments, batch, size (>= 2 M multiply-adds: taken)
    (2, 48, 48, 3, 6, dict(padding=1, stride=2), 2, 40),             # RegNetY-400MF's first stage
    (2, 16, 16, 3, 2, dict(padding=1), 2, 32),                       # 2 groups of 8
    (2, 24, 48, 3, 3, dict(padding=2, dilation=2), 1, 28),           # 16 outputs per group, dilation
    (2, 16, 16, (1, 5), 2, dict(padding=(0, 2), bias=False), 2, 48),  # non-square kernel, no bias
    (2, 16, 16, 3, 2, dict(padding=1, padding_mode="reflect"), 2, 32),  # a pad before the convolution
    (2, 16, 16, 3, 2, dict(padding="same"), 2, 32),
    (1, 24, 24, 5, 3, dict(padding=2, stride=2), 2, 2200),           # 1-D
    (3, 16, 16, 3, 2, dict(padding=1), 1, 9),                        # 3-D
]


@pytest.mark.parametrize("dims, cin, cout, k, groups, extra, batch, size", CASES)
def test_block_diagonal_form_matches_eager(dims, cin, cout, k, groups, extra, batch, size):
    model = _model(dims, cin, cout, k, groups, **extra)
    x = _input(dims, batch, cin, size)
    fast = fxla.compile(model)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x), rtol=1e-5, atol=1e-5)
    hlo = fast.executable_for(x).hlo_text()
    assert "conditional(" in hlo                       # the cost model took the block-diagonal form


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_a_non_finite_input_stays_in_its_group(value):
    """An inf or NaN in one input channel makes only its own group's outputs non-finite, as in eager: the dense
    form's zero weights would spread it (inf * 0 is NaN), so the finite test sends the call to the grouped one."""
    model = _model(2, 48, 48, 3, 6, padding=1)
    x = _input(2, 2, 48, 24)
    x[1, 5, 3, 4] = value                              # channel 5: group 0
    fast = fxla.compile(model)
    with torch.no_grad():
        want, got = model(x), fast(x)
        torch.testing.assert_close(fast(_input(2, 2, 48, 24)), model(_input(2, 2, 48, 24)), rtol=1e-5, atol=1e-5)
    assert want[:, 8:].isfinite().all() and not want[1, :8].isfinite().all()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
    assert "conditional(" in fast.executable_for(x).hlo_text()


def test_non_finite_weights_stay_in_their_group():
    """The block-diagonal kernel selects the weights (a product with zero would turn an inf weight into NaNs in
    the other groups' entries)."""
    model = _model(2, 16, 16, 3, 2, padding=1)
    with torch.no_grad():
        model.weight[3, 2, 1, 1] = float("inf")        # output 3: group 0
    x = _input(2, 2, 16, 32)
    fast = fxla.compile(model)
    with torch.no_grad():
        want = model(x)
        torch.testing.assert_close(fast(x), want, rtol=1e-5, atol=1e-5, equal_nan=True)
    assert want[:, 8:].isfinite().all()
    assert "conditional(" in fast.executable_for(x).hlo_text()


def test_float64_matches_eager():
    model = _model(2, 16, 16, 3, 2, padding=1).double()
    x = _input(2, 2, 16, 32, torch.float64)
    fast = fxla.compile(model)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x), rtol=1e-12, atol=1e-12)
    assert "conditional(" in fast.executable_for(x).hlo_text()


def test_cost_model_takes_few_groups_of_eight_channels():
    assert pays_block_diagonal(8, 6) and pays_block_diagonal(8, 2) and pays_block_diagonal(8, 11)
    assert not pays_block_diagonal(8, 12) and not pays_block_diagonal(8, 55)
    assert not pays_block_diagonal(16, 2) and not pays_block_diagonal(32, 2)      # (XLA's grouped one is faster)
    assert not pays_block_diagonal(8, 6, macs=BLOCK_DIAGONAL_MIN_MACS - 1)        # (the guard's cost dominates)
    assert not any(pays_block_diagonal(ci, 2) for ci in (1, 2, 4))               # (the per-tap form: pays)
    assert all(pays(ci) for ci in (1, 2, 4))


def test_small_or_wide_grouped_convolutions_keep_xla():
    for model, x in ((_model(2, 24, 24, 3, 3, padding=1, stride=2), _input(2, 2, 24, 16)),    # 0.2 M: too small
                     (_model(2, 64, 64, 3, 2, padding=1), _input(2, 2, 64, 16))):             # groups of 32
        fast = fxla.compile(model)
        with torch.no_grad():
            torch.testing.assert_close(fast(x), model(x), rtol=1e-5, atol=1e-5)
        hlo = fast.executable_for(x).hlo_text()
        assert "conditional(" not in hlo and "feature_group_count" in hlo


@pytest.mark.parametrize("groups", [16, 32])
def test_forced_rewrite_of_many_groups_matches_eager(groups):
    """``fxla-opt --fxla-block-diagonal-conv`` rewrites every eligible grouped convolution: the guarded dense
    form computes the same for groups the cost model leaves with XLA."""
    text = run_forced(_model(2, 64, 64, 3, groups, padding=1, stride=2), _input(2, 2, 64, 9),
                      block_diagonal_conv_pass)
    assert "stablehlo.if" in text and "stablehlo.is_finite" in text and "feature_group_count = 1" in text


def test_gradients_through_the_block_diagonal_form_match_eager():
    model = _model(2, 16, 16, 3, 2, padding=1, stride=2)
    x = _input(2, 2, 16, 64).requires_grad_()
    fast = fxla.compile(model)
    fast(x).square().sum().backward()
    got = (x.grad.clone(), model.weight.grad.clone())
    x.grad = None
    model.zero_grad()
    model(x).square().sum().backward()
    torch.testing.assert_close(got[0], x.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(got[1], model.weight.grad, rtol=1e-4, atol=1e-4)
