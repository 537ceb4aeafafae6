"""fxla.autograd: calls that need gradients are differentiated by fxla (a forward executable that saves residuals,
a backward executable), through fxla.compile (general path and call plans) and torch.compile(backend="fxla"),
with gradients equal to eager's."""
from __future__ import annotations

import copy
import weakref

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla
from fxla.autograd import SavedValuesError
from fxla.gradients import GradientError

TOL = dict(rtol=1e-4, atol=1e-5)


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))


def assert_grads_match(model, reference):
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert p.grad is not None, name
        torch.testing.assert_close(p.grad, q.grad, **TOL, msg=lambda m: f"{name}: {m}")


def test_a_training_loop_matches_eager_step_for_step():
    model = mlp()
    reference = copy.deepcopy(model)
    fast = fxla.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    x, target = torch.randn(5, 8), torch.randn(5, 4)
    for step in range(4):                     # general path first, then the call plan
        opt.zero_grad()
        ref_opt.zero_grad()
        loss = F.mse_loss(fast(x), target)
        ref_loss = F.mse_loss(reference(x), target)
        torch.testing.assert_close(loss, ref_loss, **TOL)
        assert loss.grad_fn is not None
        loss.backward()
        ref_loss.backward()
        assert_grads_match(model, reference)
        opt.step()
        ref_opt.step()
    assert fast.cache_size == 1
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, **TOL)


def test_inputs_that_require_grad_get_gradients_and_frozen_parameters_none():
    model = mlp().requires_grad_(False)
    fast = fxla.compile(model)
    for _ in range(2):
        x = torch.randn(3, 8, requires_grad=True)
        x2 = x.detach().clone().requires_grad_()
        fast(x).square().sum().backward()
        model(x2).square().sum().backward()
        torch.testing.assert_close(x.grad, x2.grad, **TOL)
    assert all(p.grad is None for p in model.parameters())


def test_a_loss_that_adds_other_terms_trains_both():
    model = mlp()
    reference = copy.deepcopy(model)
    x = torch.randn(3, 8)
    loss = fxla.compile(model)(x).square().mean() + 1e-3 * model[0].weight.square().sum()
    ref = reference(x).square().mean() + 1e-3 * reference[0].weight.square().sum()
    loss.backward()
    ref.backward()
    assert_grads_match(model, reference)


def test_integer_outputs_are_not_differentiable_and_float_ones_are():
    def f(x, w):
        y = torch.tanh(x @ w)
        return y, y.argmax(-1)
    x, w = torch.randn(2, 3), torch.randn(3, 4, requires_grad=True)
    y, i = fxla.compile(f)(x, w)
    assert y.requires_grad and not i.requires_grad and i.dtype == torch.int64
    y.sum().backward()
    w2 = w.detach().clone().requires_grad_()
    f(x, w2)[0].sum().backward()
    torch.testing.assert_close(w.grad, w2.grad, **TOL)


def test_unused_outputs_get_zero_cotangents():
    def f(x):
        return x.exp(), x.sin() if False else x * 3
    x = torch.randn(4, requires_grad=True)
    a, _ = fxla.compile(f)(x)
    a.sum().backward()
    torch.testing.assert_close(x.grad, x.detach().exp(), **TOL)


def test_remat_saves_nothing_and_gives_the_same_gradients():
    model = mlp()
    reference = copy.deepcopy(model)
    fast = fxla.compile(model, remat=True)
    x = torch.randn(5, 8)
    fast(x).square().sum().backward()
    reference(x).square().sum().backward()
    assert_grads_match(model, reference)
    entry = next(iter(fast._cache.values()))
    (grad,) = entry.gradients.values()
    assert grad.diff.residuals == 0


def _call_state(out):
    """A weak reference to the state fxla keeps for the backward of the compiled call whose output is ``out``
    (its residuals): it is owned by the tensor the autograd node saves, so it lives as long as torch keeps it."""
    node = out.grad_fn
    while type(node).__name__ != "_CompiledCallBackward":
        node = node.next_functions[0][0]
    return weakref.ref(node.saved_tensors[0].fxla_call)


def test_two_backwards_with_retain_graph_accumulate_eagers_gradients():
    model = mlp()
    reference = copy.deepcopy(model)
    fast = fxla.compile(model)
    x = torch.randn(5, 8, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    for _ in range(2):                        # general path, then the call plan
        loss = fast(x).square().sum()
        ref = reference(x2).square().sum()
        for retain in (True, True, False):    # three backwards through one graph: the gradients add up
            loss.backward(retain_graph=retain)
            ref.backward(retain_graph=retain)
            assert_grads_match(model, reference)
            torch.testing.assert_close(x.grad, x2.grad, **TOL)
    torch.testing.assert_close(x.grad, 6 * torch.autograd.grad(model(x).square().sum(), x)[0], **TOL)


def test_autograd_grad_twice_through_a_retained_graph():
    model = mlp()
    fast = fxla.compile(model)
    x = torch.randn(3, 8, requires_grad=True)
    y = fast(x).tanh().sum()
    wrt = [x, model[0].weight, model[2].bias]
    first = torch.autograd.grad(y, wrt, retain_graph=True)
    second = torch.autograd.grad(y, wrt)
    expected = torch.autograd.grad(model(x).tanh().sum(), wrt)
    for a, b, e in zip(first, second, expected):
        torch.testing.assert_close(a, e, **TOL)
        torch.testing.assert_close(b, e, **TOL)
    assert all(p.grad is None for p in model.parameters())


def test_a_second_backward_without_retain_graph_raises_eagers_error():
    model = mlp()
    fast = fxla.compile(model)
    out = fast(torch.randn(2, 8)).sum()       # (sum saves nothing: the compiled call's node is the one to fail)
    state = _call_state(out)
    out.backward()
    assert state() is None                    # freed at the backward, as eager frees its saved tensors
    with pytest.raises(SavedValuesError, match="Trying to backward through the graph a second time") as info:
        out.backward()
    assert isinstance(info.value, GradientError) and isinstance(info.value, RuntimeError)
    assert "fix: Specify retain_graph=True" in str(info.value)
    eager = model(torch.randn(2, 8)).square().sum()
    eager.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        eager.backward()
    out = fast(torch.randn(2, 8)).sum()
    torch.autograd.grad(out, model[0].weight)
    with pytest.raises(SavedValuesError, match="Specify retain_graph=True"):
        torch.autograd.grad(out, model[0].weight)


def test_retained_graphs_free_their_saved_values_when_dropped():
    import jax
    fast = fxla.compile(mlp())

    def step():
        out = fast(torch.randn(4, 8, requires_grad=True)).square().sum()
        out.backward(retain_graph=True)
        out.backward(retain_graph=True)
        return _call_state(out)

    for _ in range(3):
        step()
    before = len(jax.live_arrays())
    states = [step() for _ in range(50)]
    assert all(state() is None for state in states)      # no reference cycle: freed without the garbage collector
    assert len(jax.live_arrays()) <= before
    out = fast(torch.randn(4, 8, requires_grad=True)).sum()
    state = _call_state(out)
    del out                                   # a graph dropped without any backward frees them too
    assert state() is None


def test_a_step_between_two_backwards_raises_as_eager_and_rebinding_data_reads_the_forwards_values():
    model = mlp()
    reference = copy.deepcopy(model)
    fast = fxla.compile(model)
    x = torch.randn(5, 8)
    loss, ref = fast(x).square().sum(), reference(x).square().sum()
    loss.backward(retain_graph=True)
    ref.backward(retain_graph=True)
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    torch.optim.SGD(reference.parameters(), lr=0.1).step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ref.backward()
    with pytest.raises(SavedValuesError, match="modified by an inplace operation: parameter '2.weight'") as info:
        loss.backward()
    assert "fix:" in str(info.value)
    # p.data = ... keeps the saved values (eager's saved tensors keep the old storage): the same gradients again
    loss, ref = fast(x).square().sum(), reference(x).square().sum()
    loss.backward(retain_graph=True)
    ref.backward(retain_graph=True)
    for p, q in zip(model.parameters(), reference.parameters()):
        p.data, q.data = p.data * 0.5, q.data * 0.5
        p.grad = q.grad = None
    loss.backward()
    ref.backward()
    assert_grads_match(model, reference)


def test_an_input_changed_in_place_before_the_backward_raises_as_eager():
    model = mlp()
    fast = fxla.compile(model)
    x = torch.randn(5, 8)                     # the backward reads it (the first layer's weight gradient)
    loss = fast(x).sum()
    x.mul_(2)
    with pytest.raises(SavedValuesError, match="modified by an inplace operation: input 'input'"):
        loss.backward()


def test_a_buffer_the_call_changes_is_read_by_its_backward_as_it_was_before_the_call():
    """With ``remat=True`` the backward recomputes from the buffer's value before the call, which the call's own
    write-back then changes (the device buffer may alias the tensor's memory): the backward reads a copy."""
    class Counted(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4))
            self.register_buffer("count", torch.ones(4))

        def forward(self, x):
            self.count += 1
            return x * self.w * self.count
    model = Counted()
    reference = copy.deepcopy(model)
    fast = fxla.compile(model, remat=True)
    for _ in range(3):
        x = torch.randn(4)
        loss, ref = fast(x).sum(), reference(x).sum()
        loss.backward(retain_graph=True)
        ref.backward(retain_graph=True)
        loss.backward()                       # (the buffer changed since only through the call itself)
        ref.backward()
        torch.testing.assert_close(model.w.grad, reference.w.grad, **TOL)
        torch.testing.assert_close(model.count, reference.count)


def test_no_grad_calls_do_not_differentiate():
    model = mlp()
    fast = fxla.compile(model)
    with torch.no_grad():
        out = fast(torch.randn(2, 8))
    assert not out.requires_grad
    assert all(not e.gradients for e in fast._cache.values())


def test_torch_compile_backend_trains_like_eager():
    model = mlp()
    reference = copy.deepcopy(model)
    compiled = torch.compile(model, backend="fxla")
    x = torch.randn(3, 8)
    for _ in range(2):
        compiled(x).square().sum().backward()
        reference(x).square().sum().backward()
    assert_grads_match(model, reference)


def test_weights_changed_by_the_optimizer_are_used_by_the_next_forward_and_backward():
    model = mlp()
    reference = copy.deepcopy(model)
    fast = fxla.compile(model)
    x = torch.randn(3, 8)
    for lr in (0.5, 0.25):
        fast(x).sum().backward()
        reference(x).sum().backward()
        assert_grads_match(model, reference)
        with torch.no_grad():
            for p, q in zip(model.parameters(), reference.parameters()):
                p -= lr * p.grad
                q -= lr * q.grad
                p.grad = q.grad = None


def test_unfreezing_after_the_call_plan_was_made_is_seen():
    model = mlp().requires_grad_(False)
    reference = copy.deepcopy(model)
    fast = fxla.compile(model)
    x = torch.randn(3, 8)
    for _ in range(2):                        # general path, then the plan (and its C shortcut)
        assert not fast(x).requires_grad
    model.requires_grad_(True)
    reference.requires_grad_(True)
    fast(x).sum().backward()
    reference(x).sum().backward()
    assert_grads_match(model, reference)


def test_as_jax_function_under_jax_grad_uses_fxlas_backward():
    import jax
    import jax.numpy as jnp
    import numpy as np
    model = mlp()
    x = torch.randn(5, 8)
    f = fxla.compile(model).as_jax_function(x)
    xj = jnp.asarray(x.numpy())
    grad = jax.grad(lambda a: jnp.sum(f(a) ** 2))(xj)
    xt = x.clone().requires_grad_()
    (model(xt) ** 2).sum().backward()
    np.testing.assert_allclose(np.asarray(grad), xt.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_jax_grad_of_a_program_saving_int64_indices_says_x64_is_needed():
    import jax
    import jax.numpy as jnp
    import numpy as np
    x = torch.randn(3, 4)
    f = fxla.compile(lambda t: t.max(-1).values).as_jax_function(x)
    xj = jnp.asarray(x.numpy())
    np.testing.assert_allclose(np.asarray(f(xj)), x.max(-1).values.numpy())      # (the forward is 32-bit)
    with pytest.raises(fxla.FxlaError, match=r"its backward saves int64 values(.|\n)*fix: enable x64"):
        jax.grad(lambda a: jnp.sum(f(a)))(xj)
    with jax.enable_x64(True):
        grad = jax.grad(lambda a: jnp.sum(f(a)))(jnp.asarray(x.numpy()))
    xt = x.clone().requires_grad_()
    xt.max(-1).values.sum().backward()
    np.testing.assert_allclose(np.asarray(grad), xt.grad.numpy())


def test_outputs_that_do_not_depend_on_what_requires_grad_have_no_grad_as_in_eager():
    """A float output computed from sizes or through an integer op has no history in eager (requires_grad False,
    a backward through it alone raises); fxla's autograd node gave it one."""
    def f(x):
        return torch.arange(x.shape[0], dtype=torch.float32), x * 2, x.argmax().float(), \
            torch.div(x, 0.3, rounding_mode="floor")
    x = torch.randn(4, requires_grad=True)
    fast = fxla.compile(f)
    # (a floor division has history and a zero gradient)
    assert [t.requires_grad for t in fast(x)] == [t.requires_grad for t in f(x)] == [False, True, False, True]
    with pytest.raises(RuntimeError, match="does not require grad"):
        fast(x)[0].sum().backward()
    out = fast(x)
    (out[1].sum() + out[3].sum()).backward()
    torch.testing.assert_close(x.grad, torch.full((4,), 2.0))


def test_linspace_and_logspace_of_tensor_endpoints_have_no_gradient_as_in_eager():
    """torch's linspace/logspace have no derivative: a tensor endpoint (x.min()) gets no gradient through them, and
    their result requires none; fxla differentiated through the endpoints (a gradient eager never has)."""
    def f(x):
        return (torch.linspace(x.min(), x.max(), 7) * 3).sum() + (x * x).sum(), \
            torch.logspace(0, x.max().clamp(max=3), 4)
    x = torch.randn(5, 7)
    got, want = (x.clone().requires_grad_() for _ in range(2))
    fast = fxla.compile(f)
    out, ref = fast(got), f(want)
    assert [t.requires_grad for t in out] == [t.requires_grad for t in ref] == [True, False]
    out[0].backward()
    ref[0].backward()
    torch.testing.assert_close(got.grad, want.grad)


@pytest.mark.parametrize("route", ["compile", "backend"])
@pytest.mark.parametrize("make", [lambda ps: torch.optim.Adam(ps, lr=0.1, fused=True),
                                  lambda ps: torch.optim.AdamW(ps, lr=0.1, fused=True),
                                  lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, fused=True)],
                         ids=["adam", "adamw", "sgd"])
def test_fused_optimizer_steps_are_seen(route, make):
    """torch's fused optimizers change the parameters in place without bumping their version counters: the
    compiled module computed with the weights of before the step (silently drifting from eager).  fxla's global
    optimizer step post-hook bumps the counters it watches (fxla.weights)."""
    model, reference = mlp(), mlp()
    fast = fxla.compile(model) if route == "compile" else torch.compile(model, backend="fxla")
    opt, ref_opt = make(model.parameters()), make(reference.parameters())
    for step in range(4):
        x = torch.randn(5, 8, generator=torch.Generator().manual_seed(step))
        for m, f, o in ((reference, reference, ref_opt), (model, fast, opt)):
            o.zero_grad()
            loss = f(x).pow(2).mean()
            loss.backward()
            o.step()
            if m is reference:
                want = loss.detach()
        torch.testing.assert_close(loss.detach(), want, **TOL, msg=lambda m: f"step {step}: {m}")


class _Heads(nn.Module):
    """Two heads; b.bias also reaches the output through a comparison only."""

    def __init__(self):
        super().__init__()
        self.body, self.a, self.b = nn.Linear(4, 8), nn.Linear(8, 1), nn.Linear(8, 1)

    def forward(self, x):
        h = torch.tanh(self.body(x))
        return self.a(h), self.b(h), (h > 0).float().sum() * (self.b.bias > 0).float()


@pytest.mark.parametrize("route", ["compile", "backend", "dynamic"])
def test_a_parameter_in_the_graph_of_no_used_output_gets_no_gradient_as_in_eager(route):
    """A head whose output the loss does not use: eager leaves its parameters' .grad None (AdamW then does not
    decay them); fxla gave zeros, and AdamW moved them."""
    torch.manual_seed(0)
    model = _Heads()
    reference = copy.deepcopy(model)
    fast = {"compile": fxla.compile, "dynamic": lambda m: fxla.compile(m, dynamic=True),
            "backend": lambda m: torch.compile(m, backend="fxla")}[route](model)
    opts = [torch.optim.AdamW(m.parameters(), lr=0.1, weight_decay=0.5) for m in (model, reference)]
    for step in range(3):
        x = torch.randn(3 + step, 4)
        for f, opt in ((fast, opts[0]), (reference, opts[1])):
            opt.zero_grad()
            out = f(x)
            (out[0].sum() + out[2] * 0).backward()      # (the third output in the graph, its history none)
            opt.step()
    assert model.b.weight.grad is None and reference.b.weight.grad is None
    assert model.b.bias.grad is None and reference.b.bias.grad is None
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, **TOL, msg=lambda m: f"{name}: {m}")


def test_values_overwritten_or_sliced_away_keep_their_zero_gradient_as_in_eager():
    """Eager keeps the history of a value overwritten whole (h[:] = 0, h.zero_()) and of an empty slice joined to
    another: their sources get zeros, not None (the lowered program has a constant there, or nothing)."""
    class Overwritten(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 3)

        def forward(self, x):
            h = self.a(x)
            h[:] = 0
            g = self.b(x)
            g.zero_()
            e = torch.cat([self.c(x)[:0], x])
            return (h + g).sum() + e.sum()

    torch.manual_seed(0)
    model = Overwritten()
    reference = copy.deepcopy(model)
    x = torch.randn(2, 3)
    fxla.compile(model)(x).backward()
    reference(x).backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert q.grad is not None and p.grad is not None, name
        torch.testing.assert_close(p.grad, q.grad, **TOL, msg=lambda m: f"{name}: {m}")


def test_a_tensor_assigned_to_an_attribute_refuses_a_backward_through_it():
    """``self.aux_loss = ...`` in forward: fxla does not differentiate through it yet, so a loss that adds it raises
    GradientError (it silently missed that part of the gradient); one without history stays a plain tensor."""
    class Aux(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)

        def forward(self, x):
            h = self.a(x)
            self.aux_loss = h.pow(2).mean()
            self.last = x.detach() * 2
            return h.sum()

    torch.manual_seed(0)
    model = Aux()
    fast = fxla.compile(model)
    fast(torch.randn(3, 4)).backward()
    with pytest.raises(fxla.GradientError, match="module attributes"):
        (fast(torch.randn(3, 4)) + model.aux_loss).backward()
    x = torch.randn(3, 4)
    (fast(x) + model.last.sum()).backward()
    torch.testing.assert_close(model.aux_loss.detach(), model.a(x).pow(2).mean().detach(), **TOL)


def test_an_input_changed_with_a_parameter_refuses_a_backward_through_it():
    """``x.mul_(self.w)`` in forward: eager gives x that history; fxla wrote x back without it, so a loss reading x
    afterwards silently missed w's gradient. Now a backward through x raises GradientError."""
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4))

        def forward(self, x):
            x.mul_(self.w)
            return x.sum() * 0

    torch.manual_seed(0)
    model = Scale()
    x, want = torch.ones(3, 4), torch.ones(3, 4) * model.w.detach()
    out = fxla.compile(model)(x)
    torch.testing.assert_close(x.detach(), want, **TOL)
    assert x.requires_grad
    with pytest.raises(fxla.GradientError, match="changes in place"):
        (out + x.pow(2).sum()).backward()


def test_a_call_fxla_cannot_differentiate_guards_its_attributes_and_changed_inputs():
    """A call whose gradient fxla refuses runs its forward alone, its outputs guarded; the tensors it assigns to
    attributes and the inputs it changes with a parameter get that guard too, so a loss that reads them alone
    raises GradientError naming the reason instead of silently missing the parameter's gradient."""
    class Refused(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4))

        def forward(self, x, s):
            x.add_(1)                       # an input that requires grad changed in place: refused
            s.mul_(self.w)
            self.aux = (x * self.w).sum()
            return x * 2

    torch.manual_seed(0)
    model = Refused()
    fast = fxla.compile(model)
    extra = torch.ones((), requires_grad=True)
    x, s = torch.randn(3, 4, requires_grad=True) * 1, torch.ones(3, 4)
    fast(x, s)
    with pytest.raises(fxla.GradientError, match="in place"):
        (model.aux + extra).backward()
    with pytest.raises(fxla.GradientError, match="in place"):
        (s.sum() + extra).backward()
    torch.testing.assert_close(s.detach(), torch.ones(3, 4) * model.w.detach(), **TOL)


def test_tensors_of_list_and_dict_arguments_are_sources_of_their_own():
    """A tensor of a list or dict argument that no output has history from keeps ``.grad`` None, as in eager (it
    got zeros: the tensors of one argument counted as one source); the others get eager's gradients."""
    class Parts(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, xs, d):
            with torch.no_grad():
                skipped = xs[2] * 2
            return self.lin(xs[0]).sum() + d["a"].sum() * 3 + skipped.sum() + torch.stack(d["pair"]).pow(2).sum()

    torch.manual_seed(0)
    model = Parts()
    grads = []
    for fn in (model, fxla.compile(model)):
        torch.manual_seed(1)
        xs = [torch.randn(2, 4, requires_grad=True) for _ in range(3)]
        d = {"a": torch.randn(3, requires_grad=True), "b": torch.randn(3, requires_grad=True),
             "pair": (torch.randn(2, requires_grad=True), torch.randn(2, requires_grad=True))}
        fn(xs, d).backward()
        grads.append([t.grad for t in xs + [d["a"], d["b"], *d["pair"]]])
    for i, (want, got) in enumerate(zip(*grads)):
        assert (want is None) == (got is None), i
        if want is not None:
            torch.testing.assert_close(got, want, **TOL)
    assert grads[1][1] is None and grads[1][2] is None and grads[1][4] is None
