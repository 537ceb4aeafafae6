"""fxla.higher_order: a backward through a compiled call with ``create_graph=True`` returns gradients that are
differentiable themselves (fxla differentiates its own backward program), equal to eager's at every order, on
every route (fxla.compile, dynamic=, the torch.compile backend); what it cannot compute exactly is refused."""
from __future__ import annotations

import copy
import logging

import pytest
import torch
import torch.nn as nn

import fxla
from fxla.autograd import SavedValuesError
from fxla.gradients import GradientError
from fxla.lowering.autodiff import NotDifferentiableError

TOL = dict(rtol=1e-4, atol=1e-5)


def _penalty_grads(model, f, x):
    """A WGAN-GP style gradient penalty: the input gradient (made with create_graph=True), then the penalty's
    gradients of the input and of every parameter."""
    x = x.detach().clone().requires_grad_()
    (g,) = torch.autograd.grad(f(x).pow(2).sum(), x, create_graph=True)
    penalty = (g.flatten(1).norm(dim=1) - 1).pow(2).mean()
    model.zero_grad()
    penalty.backward()
    return {"input gradient": g.detach(), "x.grad": x.grad,
            **{name: p.grad for name, p in model.named_parameters()}}


def _assert_same(got, want, scale_tol=None):
    assert got.keys() == want.keys()
    for name in want:
        a, b = got[name], want[name]
        assert (a is None) == (b is None), name       # (eager's None: the penalty does not depend on it)
        if b is not None:
            tol = TOL if scale_tol is None else dict(rtol=scale_tol, atol=scale_tol * float(b.abs().max()))
            torch.testing.assert_close(a, b, **tol, msg=lambda m: f"{name}: {m}")


def test_a_gradient_penalty_matches_eager():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 16), nn.GELU(), nn.LayerNorm(16),
                          nn.Linear(16, 1))
    x = torch.randn(6, 4)
    _assert_same(_penalty_grads(model, fxla.compile(model), x), _penalty_grads(model, model, x))


def test_a_gradient_penalty_through_a_cnn_in_training_mode():
    """Convolutions (grouped too), batch norm with batch statistics, ReLU, max and average pooling: the second
    derivative of each, through the parameters."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 4, 3, groups=4), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 1))
    x = torch.randn(2, 3, 8, 8)
    reference = copy.deepcopy(model)
    want = _penalty_grads(reference, reference, x)
    got = _penalty_grads(model, fxla.compile(model), x)
    # the first conv's bias has no effect through batch norm: its gradient is rounding (~1e-8 of either), skipped
    got.pop("0.bias"), want.pop("0.bias")
    _assert_same(got, want, scale_tol=1e-4)
    torch.testing.assert_close(model[1].running_mean, reference[1].running_mean)


def test_a_parameter_read_only_under_no_grad_gets_no_gradient_of_a_gradient():
    # (eager leaves its .grad None; a zero would let AdamW's weight decay step it)
    class Distilled(nn.Module):
        def __init__(self):
            super().__init__()
            self.student, self.teacher = nn.Linear(4, 5), nn.Linear(4, 5)

        def forward(self, x):
            with torch.no_grad():
                target = self.teacher(x)
            return (torch.tanh(self.student(x)) - target).pow(2).sum()

    torch.manual_seed(0)
    eager = Distilled()
    model = copy.deepcopy(eager)
    fast = fxla.compile(model)
    for m, f in ((eager, eager), (model, fast)):
        x = torch.randn(3, 4, generator=torch.Generator().manual_seed(1), requires_grad=True)
        (gx,) = torch.autograd.grad(f(x), x, create_graph=True)
        gx.pow(2).sum().backward()
    assert model.teacher.weight.grad is None and eager.teacher.weight.grad is None
    torch.testing.assert_close(model.student.weight.grad, eager.student.weight.grad, rtol=1e-4, atol=1e-5)


def test_third_derivatives_and_hessians():
    f = fxla.compile(lambda t: torch.tanh(t * 1.5).sum())
    t = torch.randn(5, requires_grad=True)

    def derivatives(fn):
        (d1,) = torch.autograd.grad(fn(t), t, create_graph=True)
        (d2,) = torch.autograd.grad(d1.sum(), t, create_graph=True)
        (d3,) = torch.autograd.grad(d2.sum(), t)
        return d1, d2, d3

    for got, want in zip(derivatives(f), derivatives(lambda t: torch.tanh(t * 1.5).sum())):
        torch.testing.assert_close(got, want, **TOL)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Softplus(), nn.Linear(8, 1))
    fast = fxla.compile(model)
    x, v = torch.randn(3, 4), torch.randn(3, 4)
    loss = lambda m: (lambda a: m(a).sum())         # noqa: E731
    torch.testing.assert_close(torch.autograd.functional.hvp(loss(fast), x, v)[1],
                               torch.autograd.functional.hvp(loss(model), x, v)[1], **TOL)
    torch.testing.assert_close(torch.autograd.functional.hessian(loss(fast), x),
                               torch.autograd.functional.hessian(loss(model), x), **TOL)


def test_a_physics_informed_loss_trains_the_parameters_as_eager():
    """u(x), its second derivative in x through the compiled call, a residual loss on it, gradients into the
    parameters: the pattern of physics-informed networks."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
    reference = copy.deepcopy(model)
    x = torch.linspace(-1, 1, 7).unsqueeze(1)

    def loss(m, f):
        xx = x.clone().requires_grad_()
        u = f(xx)
        (du,) = torch.autograd.grad(u.sum(), xx, create_graph=True)
        (d2u,) = torch.autograd.grad(du.sum(), xx, create_graph=True)
        value = (d2u + torch.sin(xx) - u).pow(2).mean()
        m.zero_grad()
        value.backward()
        return value.detach()

    fast = fxla.compile(model)
    for _ in range(2):          # (the second call runs the compiled derivatives)
        torch.testing.assert_close(loss(model, fast), loss(reference, reference), **TOL)
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad, **TOL, msg=lambda m: f"{name}: {m}")


def test_the_routes_dynamic_and_the_torch_compile_backend():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))

    def second(f, n):
        x = torch.randn(n, 4, generator=torch.Generator().manual_seed(n), requires_grad=True)
        (g,) = torch.autograd.grad(f(x).sum(), x, create_graph=True)
        (h,) = torch.autograd.grad(g.pow(2).sum(), x)
        return g.detach(), h

    for f in (fxla.compile(model, dynamic=True), torch.compile(model, backend="fxla")):
        for n in (3, 5, 7):
            for got, want in zip(second(f, n), second(model, n)):
                torch.testing.assert_close(got, want, **TOL)


def test_random_programs_differentiate_their_own_draws():
    """Dropout in training mode: the create_graph gradient reads the forward's seed, so it equals the plain
    gradient of the same forward (to rounding: another program computes it); its own gradient exists."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 32), nn.Dropout(0.5), nn.Tanh(), nn.Linear(32, 1)).train()
    x = torch.randn(8, 4, requires_grad=True)
    y = fxla.compile(model)(x).sum()
    (plain,) = torch.autograd.grad(y, x, retain_graph=True)
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad
    torch.testing.assert_close(g.detach(), plain, rtol=1e-5, atol=1e-6)
    (h,) = torch.autograd.grad(g.pow(2).sum(), x)
    assert torch.isfinite(h).all() and h.abs().sum() > 0


def test_the_forwards_trace_is_differentiated_after_a_mode_switch():
    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return torch.tanh(self.lin(x) * (2.0 if self.training else 3.0)).sum()

    torch.manual_seed(0)
    model = Branchy().train()
    fast = fxla.compile(model)
    x = torch.randn(2, 3, requires_grad=True)
    y = fast(x)
    model.eval()
    fast(x.detach())        # (the eval trace now exists too)
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    model.train()
    (g0,) = torch.autograd.grad(model(x), x, create_graph=True)
    (h0,) = torch.autograd.grad(g0.sum(), x)
    torch.testing.assert_close(g, g0, **TOL)
    torch.testing.assert_close(h, h0, **TOL)


def test_a_parameter_changed_in_place_since_the_forward_raises_as_in_eager():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    x = torch.randn(3, 4, requires_grad=True)
    y = fxla.compile(model)(x).sum()
    with torch.no_grad():
        model[0].weight.mul_(2)
    with pytest.raises(SavedValuesError, match="'0.weight'.*version") as info:
        torch.autograd.grad(y, x, create_graph=True)
    assert "fix:" in str(info.value)


def test_an_input_the_call_changes_in_place_is_refused():
    """The derivative reads the call's arguments again; one the call changed no longer holds what it read."""
    def f(x, buf):
        buf.add_(1)
        return torch.tanh(x * buf).sum()

    x, buf = torch.randn(4, requires_grad=True), torch.randn(4)
    y = fxla.compile(f)(x, buf)
    with pytest.raises(GradientError, match="changed in place") as info:
        torch.autograd.grad(y, x, create_graph=True)
    assert "fix:" in str(info.value)
    (g,) = torch.autograd.grad(fxla.compile(f)(x, buf.clone()), x)      # (a first-order gradient still works)
    assert g.shape == x.shape


def test_an_op_without_a_second_derivative_is_named():
    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(4, 8, batch_first=True)

        def forward(self, x):
            return self.lstm(x)[0].sum()

    x = torch.randn(2, 5, 4, requires_grad=True)
    (g,) = torch.autograd.grad(fxla.compile(Tagger())(x), x, create_graph=True)     # (the first order: as eager's)
    with pytest.raises(NotDifferentiableError, match="lstm_backward") as info:
        g.pow(2).sum().backward()
    assert "fix:" in str(info.value) and "recurrent" in str(info.value)


def test_each_order_compiles_once_and_is_logged(caplog):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    fast = fxla.compile(model)
    with caplog.at_level(logging.INFO, logger="fxla"):
        for _ in range(3):
            x = torch.randn(3, 4, requires_grad=True)
            (g,) = torch.autograd.grad(fast(x).sum(), x, create_graph=True)
            g.pow(2).sum().backward()
    text = caplog.text
    assert text.count("compiled the derivative of order 1") == 1, text
    assert text.count("compiled the derivative of order 2") == 1, text
    assert "why: a backward with create_graph=True" in text


def test_a_gradient_that_depends_on_nothing_that_requires_grad_has_no_graph_as_in_eager():
    """d/dx of x * w + b is w: it requires grad through w, not through b; the gradient of a linear function of x
    alone is a constant (requires_grad=False), as eager's."""
    w = torch.randn(3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    x = torch.randn(3, requires_grad=True)

    def f(x, w, b):
        return (x * w + b).sum(), (x * 2.0).sum()

    fast = fxla.compile(f)
    for fn in (f, fast):
        y, z = fn(x, w, b)
        gx, gw, gb = torch.autograd.grad(y, (x, w, b), create_graph=True)
        assert gx.requires_grad and gw.requires_grad and not gb.requires_grad
        (gz,) = torch.autograd.grad(z, x, create_graph=True)
        assert not gz.requires_grad
        torch.testing.assert_close(gx, w)


def test_jax_differentiates_as_jax_function_to_any_order_in_reverse_mode():
    """Each program JAX runs is a custom_vjp whose backward is fxla's derivative of it: jax.grad of jax.grad,
    jax.jacrev twice (a Hessian) and a third order match torch's; forward mode stays JAX's clear refusal."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    import numpy as np
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
    x = torch.randn(3, 4)
    f = fxla.compile(model).as_jax_function(x)
    xj = jnp.asarray(x.numpy())

    def inner(b):
        return jax.grad(lambda c: jnp.sum(f(c) ** 2))(b)

    gg = jax.jit(jax.grad(lambda a: jnp.sum(inner(a) ** 2)))(xj)
    hessian = jax.jacrev(jax.jacrev(lambda a: jnp.sum(f(a))))(xj)
    third = jax.grad(lambda a: jnp.sum(jax.grad(lambda b: jnp.sum(jax.grad(
        lambda c: jnp.sum(jnp.tanh(f(c))))(b) ** 2))(a)))(xj)

    xt = x.clone().requires_grad_()
    (g,) = torch.autograd.grad((model(xt) ** 2).sum(), xt, create_graph=True)
    (gg0,) = torch.autograd.grad((g ** 2).sum(), xt)
    (g1,) = torch.autograd.grad(torch.tanh(model(xt)).sum(), xt, create_graph=True)
    (g2,) = torch.autograd.grad((g1 ** 2).sum(), xt, create_graph=True)
    (third0,) = torch.autograd.grad(g2.sum(), xt)
    for got, want in ((gg, gg0), (hessian, torch.autograd.functional.hessian(lambda a: model(a).sum(), x)),
                      (third, third0)):
        np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeError, match="forward-mode"):
        jax.jvp(f, (xj,), (xj,))


def _tanh_net(requires_grad=True):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)).requires_grad_(requires_grad)


@pytest.mark.parametrize("change", ["parameter", "input", "grad_outputs", "rebound"])
def test_a_tensor_changed_before_a_higher_order_backward_raises(change):
    """Every order reads its arguments again: one changed since it was read (in place, or rebound through .data)
    raises, at the second order as at the first, never a derivative of other values."""
    model = _tanh_net()
    x = torch.randn(3, 4, requires_grad=True)
    v = torch.randn(3, 1)
    (g,) = torch.autograd.grad(fxla.compile(model)(x), x, grad_outputs=v, create_graph=True)
    with torch.no_grad():
        if change == "parameter":
            model[0].weight.mul_(2)
        elif change == "input":
            x.mul_(2)
        elif change == "grad_outputs":
            v.mul_(3)
        else:
            model[0].weight.data = model[0].weight.data * 2
    with pytest.raises(SavedValuesError, match="rebound" if change == "rebound" else "version") as info:
        torch.autograd.grad(g.pow(2).sum(), x)
    assert "fix:" in str(info.value) and "create_graph=True" in str(info.value)


def test_a_straight_through_first_derivative_is_not_differentiated_again():
    """binary_cross_entropy's input gradient is torch's exact formula through a straight-through term: its first
    derivative equals eager's under create_graph=True, and a second one is refused (through torch and JAX),
    never the zero the detached term would give."""
    import torch.nn.functional as F
    f = lambda z, t: F.binary_cross_entropy(torch.sigmoid(z), t)       # noqa: E731
    t, z = torch.tensor([0.0, 1.0, 0.5]), torch.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    (g,) = torch.autograd.grad(fxla.compile(f)(z, t), z, create_graph=True)
    torch.testing.assert_close(g, torch.autograd.grad(f(z, t), z)[0], **TOL)
    with pytest.raises(NotDifferentiableError, match="first derivative of binary_cross_entropy") as info:
        torch.autograd.grad(g.sum(), z)
    assert "fix:" in str(info.value)
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    fj = fxla.compile(lambda z: F.binary_cross_entropy(torch.sigmoid(z), t)).as_jax_function(z.detach())
    zj = jnp.asarray(z.detach().numpy())
    assert jnp.allclose(jax.grad(fj)(zj), jnp.asarray(g.detach().numpy()), rtol=1e-4)
    with pytest.raises(NotDifferentiableError, match="first derivative of binary_cross_entropy"):
        jax.grad(lambda a: jnp.sum(jax.grad(fj)(a)))(zj)


def test_the_gradient_of_a_relu_net_requires_grad_as_in_eager():
    """With frozen parameters, a ReLU net's input gradient depends on the input only through comparisons: eager's
    requires grad (its second derivative is zeros), and so does fxla's."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).requires_grad_(False)
    for f in (net, fxla.compile(net)):
        x = torch.randn(2, 4, requires_grad=True)
        (g,) = torch.autograd.grad(f(x).sum(), x, create_graph=True)
        assert g.requires_grad
        g.pow(2).sum().backward()
        assert torch.equal(x.grad, torch.zeros_like(x))


def test_a_parameter_unfrozen_after_the_forward_gets_no_gradient_as_in_eager():
    grads = []
    for compiled in (False, True):
        model = _tanh_net()
        model[0].weight.requires_grad_(False)
        x = torch.randn(3, 4, requires_grad=True)
        y = (fxla.compile(model) if compiled else model)(x).sum()
        model[0].weight.requires_grad_(True)
        (g,) = torch.autograd.grad(y, x, create_graph=True)
        g.pow(2).sum().backward()
        grads.append((model[0].weight.grad, model[0].bias.grad))
    assert grads[0][0] is None and grads[1][0] is None
    torch.testing.assert_close(grads[1][1], grads[0][1], **TOL)


def test_vectorized_jacobians_are_refused_with_a_fix():
    """torch.autograd.functional's vectorize=True runs the backward under vmap with batched cotangents, which no
    compiled program takes: fxla's error with the fix, not torch's raw batching or storage error."""
    fast = fxla.compile(_tanh_net())
    x = torch.randn(4)
    for run in (lambda: torch.autograd.functional.jacobian(fast, x, vectorize=True),
                lambda: torch.autograd.functional.hessian(lambda a: fast(a).sum(), x, vectorize=True)):
        with pytest.raises(GradientError, match="vectorize=True") as info:
            run()
        assert "fix: pass vectorize=False" in str(info.value)
    torch.autograd.functional.hessian(lambda a: fast(a).sum(), x)      # (the loop form works)
