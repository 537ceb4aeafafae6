"""Gradients at the points where a formula written one way is right at the first order and wrong at the second,
or right as a value and NaN as a gradient: zeros of ``prod``/``cumprod``, norms and ``std`` at 0, ``|x|`` inside
smooth losses, ``torch.max(x)`` over NaNs, and the kinks where torch's double backward picks another side than
its first (ELU at 0, softplus at its threshold).  Every value is eager PyTorch's, through ``fxla.compile`` with
``create_graph=True`` and through ``jax.grad`` of ``jax.grad`` (found by a bug hunt, 2026-12-07)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import fxla

NAN = float("nan")


def _second(fn, x):
    """(first derivative, the gradient of its sum) of ``fn(x).sum()``: the Hessian's row sums."""
    x = x.clone().requires_grad_()
    (g,) = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    return g.detach(), h


def _t(*values):
    return torch.tensor(values)


SECOND = {
    "logsigmoid": (lambda x: F.logsigmoid(x), _t(0.0, 1.0, -2.0)),
    "bce_with_logits": (lambda x: F.binary_cross_entropy_with_logits(x, torch.zeros(3), reduction="none"),
                        _t(0.0, 1.0, -2.0)),
    "multilabel_soft_margin": (lambda x: F.multilabel_soft_margin_loss(x.view(1, 3), _t(1.0, 0.0, 1.0).view(1, 3),
                                                                       reduction="none"), _t(0.0, 1.0, -2.0)),
    "smooth_l1": (lambda x: F.smooth_l1_loss(x, torch.zeros(3), reduction="none"), _t(0.0, 0.5, 3.0)),
    "huber": (lambda x: F.huber_loss(x, torch.zeros(3), reduction="none", delta=2.0), _t(0.0, 0.5, 3.0)),
    "prod": (lambda x: x.prod() ** 2, _t(2.0, 0.0, 3.0)),
    "prod_two_zeros": (lambda x: x.prod() * 3, _t(2.0, 0.0, 3.0, 0.0)),
    "prod_dim": (lambda x: x.view(2, 2).prod(1) ** 2, _t(2.0, 0.0, 3.0, 1.5)),
    "cumprod": (lambda x: x.cumprod(0), _t(2.0, 0.0, 3.0)),
    "cumprod_squared": (lambda x: x.cumprod(0) ** 2, _t(2.0, 0.0, 3.0, 0.0, 1.5)),
    "cumprod_rows": (lambda x: x.view(3, 5).cumprod(1) * torch.arange(15.0).view(3, 5),
                     _t(1.5, 0.0, 2.0, -1.0, 0.5, 0.0, 0.0, 3.0, 1.0, 2.0, 1.0, 2.0, 0.5, -1.5, 0.0)),
    "cumprod_no_zero": (lambda x: x.cumprod(0).sin(), _t(1.5, -0.5, 2.0, 0.75, 1.25, -1.0, 0.5)),
    "elu": (F.elu, _t(0.0, -1.0, 1.0)),
    "softplus_threshold": (lambda x: F.softplus(x, 2.0, 1.0), _t(0.5, 0.0, 1.0)),
}


@pytest.mark.parametrize("name", list(SECOND))
def test_second_derivatives_match_eager(name):
    fn, x = SECOND[name]
    want_g, want_h = _second(fn, x)
    got_g, got_h = _second(fxla.compile(fn), x)
    torch.testing.assert_close(got_g, want_g, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got_h, want_h, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["prod", "cumprod_squared", "logsigmoid", "smooth_l1"])
def test_jax_second_derivatives_match_eager(name):
    fn, x = SECOND[name]
    f = fxla.compile(fn).as_jax_function(x)

    def total(v):
        out = f(v)
        return jnp.sum(out[0] if isinstance(out, (tuple, list)) else out)

    got = jax.grad(lambda v: jnp.sum(jax.grad(total)(v)))(jnp.asarray(x.numpy()))
    np.testing.assert_allclose(np.asarray(got), _second(fn, x)[1].numpy(), rtol=1e-5, atol=1e-6)


FIRST = {
    "std_constant_row": (lambda x: x.std(1), torch.tensor([[2.0, 2.0, 2.0], [1.0, 2.0, 3.0]])),
    "std_correction_0": (lambda x: x.std(correction=0), _t(5.0, 5.0)),
    "pairwise_distance_eps_0": (lambda x: F.pairwise_distance(x, torch.ones(1, 3), eps=0.0), torch.ones(2, 3)),
    "pairwise_distance_p3": (lambda x: F.pairwise_distance(x, torch.ones(1, 3), p=3.0, eps=0.0),
                             torch.tensor([[1.0, 1.0, 1.0], [0.5, 2.0, 1.0]])),
    "cosine_zero_vector": (lambda x: F.cosine_similarity(x, torch.tensor([[1.0, 0.5]])),
                           torch.tensor([[0.0, 0.0], [3e-9, -1e-9], [1.0, 2.0]])),
    "max_nan": (lambda x: x.max(), _t(1.0, NAN, 3.0, NAN)),
    "min_nan": (lambda x: x.min() * 2, _t(NAN, -1.0)),
    "max_ties": (lambda x: x.max(), _t(3.0, 1.0, 3.0)),
}


@pytest.mark.parametrize("name", list(FIRST))
def test_first_derivatives_at_zero_norms_and_nans_match_eager(name):
    fn, x = FIRST[name]
    grads = []
    for f in (fn, fxla.compile(fn)):
        xx = x.clone().requires_grad_()
        f(xx).sum().backward()
        grads.append(xx.grad)
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-5, atol=1e-6, equal_nan=True)
    assert not grads[1].isnan().any()


def test_cumprod_over_a_symbolic_dim_at_every_order():
    """The polymorphic backward (torch's O(n) zero-aware formula) is exact at the first order; derivatives of
    higher order are lowered for each call's sizes (the division-free scan)."""
    fast = fxla.compile(lambda x: x.cumprod(1) ** 2, dynamic={"x": {1: fxla.Dim("n")}})
    for n in (3, 5, 4):
        x = torch.tensor([[2.0, 0.0, 3.0, 1.5, 0.0][:n]])
        want, got = _second(lambda v: v.cumprod(1) ** 2, x), _second(fast, x)
        torch.testing.assert_close(got[0], want[0])
        torch.testing.assert_close(got[1], want[1])
        xx = x.clone().requires_grad_()
        fast(xx).sum().backward()
        torch.testing.assert_close(xx.grad, want[0])


def _affine():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh())


@pytest.mark.parametrize("route", ["general", "plan"])
def test_forward_mode_is_refused_not_dropped(route):
    """A dual tensor (torch.autograd.forward_ad) and torch.func's forward transforms: fxla differentiates in reverse
    mode only, so it refuses rather than return outputs without a tangent (before: tangent None, or a raw
    RuntimeError from inside torch.func)."""
    import torch.autograd.forward_ad as fw
    fast = fxla.compile(_affine())
    x, t = torch.randn(3, 2), torch.ones(3, 2)
    if route == "plan":
        fast(x)                                 # (the signature compiled: later calls take its plan, and its C path)
        fast(x)
    with fw.dual_level():
        with pytest.raises(fxla.GradientError, match="forward-mode .*\n  at .*test_gradient_edges.py"):
            fast(fw.make_dual(x, t))
        assert fast(x).shape == (3, 2)          # (no dual among the inputs: runs)
    for transform in (lambda: torch.func.jvp(fast, (x,), (t,)), lambda: torch.func.jacfwd(fast)(x),
                      lambda: torch.func.vmap(fast)(x.unsqueeze(1)), lambda: torch.func.grad(
                          lambda v: fast(v).sum())(x)):
        with pytest.raises(fxla.GradientError, match="dual tensor|torch.func transform"):
            transform()
    torch.testing.assert_close(fast(x), _affine()(x))
