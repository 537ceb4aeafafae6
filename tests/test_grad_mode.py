"""fxla.frontend.passes.grad_mode: ``torch.no_grad()`` (and ``inference_mode``, ``set_grad_enabled``, a
``@torch.no_grad()`` method) inside ``forward`` cuts gradients as in eager, through fxla.compile (the tracer marks
what it records with grad mode off) and torch.compile(backend="fxla") (dynamo's graphs switch the mode while fxla
traces them).  Before, both routes ignored the region: a distillation teacher got gradients, and gradients flowed
back through values eager computes without history."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn

import fxla

TOL = dict(rtol=1e-5, atol=1e-6)


class Distill(nn.Module):
    """A student trained towards a teacher that runs under no_grad on the student's own features."""

    def __init__(self):
        super().__init__()
        self.student, self.teacher, self.head = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 2)

    def forward(self, x):
        h = torch.tanh(self.student(x))
        with torch.no_grad():
            t = self.teacher(h) * 2                       # (its history, and h's through it, cut)
            t = t.softmax(-1)
        out = self.head(h)
        return (out - t[:, :2]).pow(2).mean() + (h * t).sum()


class Switches(nn.Module):
    """A tuple made by a ``@torch.no_grad()`` method, ``set_grad_enabled``, ``enable_grad`` inside ``no_grad``,
    ``inference_mode``, and ops that return their input itself (their history kept)."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)

    @torch.no_grad()
    def target(self, x):
        return self.b(x).relu(), self.b(x).sigmoid()

    def forward(self, x):
        r, s = self.target(x)
        h = self.a(x)
        with torch.set_grad_enabled(False):
            scale = h.abs().mean()
            same = h.float()                               # (h itself: with its history, as in eager)
            with torch.enable_grad():
                u = self.c(h)                              # (enabled again: gradients to c and through h)
        with torch.inference_mode():
            v = self.b(x).tanh()
        return (h * r + s * scale + same * u + v * 0.5).sum()


class Tuples(nn.Module):
    """Tuples made in a region and used outside: an LSTM's output unpacked, split parts joined, a max returned."""

    def __init__(self):
        super().__init__()
        self.a, self.lstm = nn.Linear(4, 4), nn.LSTM(4, 4, batch_first=True)

    def forward(self, x):
        h = self.a(x)
        with torch.no_grad():
            r = self.lstm(h.unsqueeze(0))
            parts = h.split(2, -1)
        out, (hn, cn) = r
        joined = torch.cat(parts, -1)
        return (h * joined + out[0] + hn[0] + cn[0]).sum()


class EncoderState(nn.Module):
    """A frozen encoder's LSTM state (hn, cn), a tuple made under no_grad, handed whole to a decoder; a flatten
    that merges no dims (eager returns the tensor itself, with its history)."""

    def __init__(self):
        super().__init__()
        self.enc, self.dec = nn.LSTM(4, 4, batch_first=True), nn.LSTM(4, 4, batch_first=True)
        self.a, self.flat = nn.Linear(4, 4), nn.Flatten()

    def forward(self, x):
        h = self.a(x)
        with torch.no_grad():
            _, state = self.enc(h.unsqueeze(0))
            f, g, k = h.flatten(1), torch.flatten(h, 1), self.flat(h)
        out, _ = self.dec(h.unsqueeze(0), state)
        return (out[0] * f * g * k).sum()


class AddToTeacher(nn.Module):
    """A value made under no_grad, then changed in place with grad on: its history is the change's alone."""

    def __init__(self):
        super().__init__()
        self.teacher, self.student = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        with torch.no_grad():
            t = self.teacher(x)
        t.add_(self.student(x))
        return t.pow(2).sum()


def _check_grads(model, reference, xs, tol=TOL):
    torch.testing.assert_close(xs[1].grad, xs[0].grad, **tol)
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert (p.grad is None) == (q.grad is None), (name, p.grad, q.grad)     # (used only under no_grad: None)
        if q.grad is not None:
            torch.testing.assert_close(p.grad, q.grad, **tol, msg=lambda m: f"{name}: {m}")


def _fast(route, model):
    return {"compile": lambda: fxla.compile(model), "dynamic": lambda: fxla.compile(model, dynamic=True),
            "backend": lambda: torch.compile(model, backend="fxla")}[route]()


@pytest.mark.parametrize("route", ["compile", "backend", "dynamic"])
@pytest.mark.parametrize("build", [Distill, Switches, Tuples, AddToTeacher, EncoderState])
def test_gradients_through_a_no_grad_region_match_eager(route, build):
    torch.manual_seed(0)
    model = build()
    reference = copy.deepcopy(model)
    fast = _fast(route, model)
    for n in (5, 7):
        x = torch.randn(n, 4, generator=torch.Generator().manual_seed(n))
        xs = [x.clone().requires_grad_() for _ in range(2)]
        for m, f, xx in ((reference, reference, xs[0]), (model, fast, xs[1])):
            m.zero_grad(set_to_none=True)
            f(xx).backward()
        _check_grads(model, reference, xs)
    assert torch.is_grad_enabled()


class Renorm(nn.Module):
    """A weight normalised in place under no_grad in forward (it stays a leaf: its gradient is x^T 1)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 3))

    def forward(self, x):
        with torch.no_grad():
            self.w.div_(self.w.abs().sum())
        return (x @ self.w).sum()


class ScaleActivation(nn.Module):
    """An activation changed in place under no_grad: its history is kept, the change is not differentiated."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)

    def forward(self, x):
        h = self.a(x)
        with torch.no_grad():
            h.mul_(2)
            h[:, 0] = 1.0
        return (h * h).sum()


class Ema(nn.Module):
    """A buffer updated in place under no_grad (the momentum-encoder pattern), read after the update."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.register_buffer("ema", torch.zeros(3))

    def forward(self, x):
        h = self.lin(x)
        with torch.no_grad():
            self.ema.mul_(0.9).add_(h.mean(0) * 0.1)
        return (h - self.ema).pow(2).sum()


class ClampInput(nn.Module):
    """The input itself, a leaf that requires grad, clamped in place under no_grad: eager allows it."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)

    def forward(self, x):
        with torch.no_grad():
            x.clamp_(-0.5, 0.5)
        return self.a(x).pow(2).sum()


class DetachActivation(nn.Module):
    """An activation changed in place through ``detach()`` and ``.data`` (outside no_grad): eager changes its values
    and keeps its history (the change itself is not recorded)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)

    def forward(self, x):
        h = self.a(x) * 1
        h.detach().mul_(2)
        h.data.clamp_(-0.3, 0.3)
        return (h * h).sum()


class ClipWeight(nn.Module):
    """WGAN-style weight clipping in forward through ``.data``: the parameter changes, its gradient is eager's."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)

    def forward(self, x):
        self.a.weight.data.clamp_(-0.2, 0.2)
        return self.a(x).pow(2).sum()


class DetachInput(nn.Module):
    """The input, a leaf that requires grad, scaled in place through ``detach()``: eager allows it."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)

    def forward(self, x):
        x.detach().mul_(0.5)
        return self.a(x).pow(2).sum()


@pytest.mark.parametrize("route", ["compile", "backend"])
@pytest.mark.parametrize("build", [Renorm, ScaleActivation, Ema, ClampInput, DetachActivation, ClipWeight, DetachInput])
def test_in_place_changes_under_no_grad_keep_the_history(route, build):
    torch.manual_seed(0)
    model = build()
    reference = copy.deepcopy(model)
    fast = _fast(route, model)
    for step in range(3):
        x = torch.randn(5, 4, generator=torch.Generator().manual_seed(step))
        xs = [x.clone().requires_grad_() for _ in range(2)]
        for m, f, xx in ((reference, reference, xs[0]), (model, fast, xs[1])):
            m.zero_grad(set_to_none=True)
            f(xx).backward()
        torch.testing.assert_close(xs[1], xs[0], **TOL)           # (ClampInput: written back, as eager changes it)
        _check_grads(model, reference, xs)
        for (name, b), c in zip(model.named_buffers(), reference.buffers()):
            torch.testing.assert_close(b, c, **TOL, msg=lambda m: f"{name}: {m}")
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            torch.testing.assert_close(p, q, **TOL, msg=lambda m: f"{name}: {m}")


def test_compiled_and_first_called_under_no_grad_still_differentiates():
    """The caller's grad mode is not part of the graph: a trace made under no_grad records the model's own region
    only, and the caller's mode is as it was after every call (a shape error inside a region included)."""
    torch.manual_seed(0)
    model = Distill()
    reference = copy.deepcopy(model)
    with torch.no_grad():
        fast = fxla.compile(model)
        fast(torch.randn(3, 4))
        assert not torch.is_grad_enabled()
        with pytest.raises(Exception):
            fast(torch.randn(3, 5))
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled()
    x = torch.randn(3, 4)
    xs = [x.clone().requires_grad_() for _ in range(2)]
    fast(xs[1]).backward()
    reference(xs[0]).backward()
    _check_grads(model, reference, xs)


def test_the_prepared_graph_shows_the_region_and_runs_eagerly_as_the_model():
    """The prepared graph holds the region explicitly (keep_history, detach; no grad-mode switch), the captured
    one is as traced, and the prepared graph run eagerly gives the model's value and gradients."""
    from fxla.frontend.passes import prepare_graph
    torch.manual_seed(0)
    model = ScaleActivation()
    captured = fxla.symbolic_trace(model)
    x = torch.randn(2, 4)
    prepared = prepare_graph(captured, (x,))
    code = prepared.graph_module.code
    assert "keep_history" in code and "_set_grad_enabled" not in code
    assert "keep_history" not in captured.code
    reference = copy.deepcopy(model)
    prepared.graph_module(x).backward()
    reference(x).backward()
    torch.testing.assert_close(model.a.weight.grad, reference.a.weight.grad, **TOL)


def test_a_gradient_through_contiguous_under_no_grad_is_refused():
    """Eager's ``x.contiguous()`` is x itself (with history) when x is contiguous and a copy without otherwise;
    fxla's graph has no strides, so it refuses a gradient through it and computes the value."""
    class Contiguous(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)

        def forward(self, x):
            h = self.a(x)
            with torch.no_grad():
                c = h.contiguous()
            return (c * 2).sum()

    torch.manual_seed(0)
    model = Contiguous()
    fast = fxla.compile(model)
    x = torch.randn(2, 4)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x), **TOL)
    with pytest.raises(fxla.GradientError, match=r"(?s)contiguous\(\) under torch.no_grad\(\).*does not know the strides"):
        fast(x).backward()


def test_a_saved_graph_keeps_its_regions(tmp_path):
    """fxla.frontend.save / load keep which calls were made under no_grad: the loaded graph compiles to the same
    gradients."""
    from fxla.frontend import load, save
    torch.manual_seed(0)
    model = Distill()
    save(fxla.symbolic_trace(model), tmp_path / "g")
    loaded = load(tmp_path / "g")
    x = torch.randn(3, 4)
    xs = [x.clone().requires_grad_() for _ in range(2)]
    fxla.compile(loaded)(xs[1]).backward()
    model(xs[0]).backward()
    torch.testing.assert_close(xs[1].grad, xs[0].grad, **TOL)


@pytest.mark.parametrize("dynamic", [False, True])
def test_compile_step_leaves_a_no_grad_teacher_alone_as_eager(dynamic):
    """A teacher used only under no_grad gets no gradient (None) in eager, so AdamW's weight decay and state skip
    it; fxla.compile_step decayed it."""
    torch.manual_seed(0)
    model = Distill()
    reference = copy.deepcopy(model)
    opts = [torch.optim.AdamW(m.parameters(), lr=0.05, weight_decay=0.1) for m in (model, reference)]
    step = fxla.compile_step(model, opts[0], lambda m, x: m(x), **({"dynamic": True} if dynamic else {}))
    for i in range(3):
        x = torch.randn(4 + i, 4, generator=torch.Generator().manual_seed(i))
        step(x)
        opts[1].zero_grad()
        reference(x).backward()
        opts[1].step()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {m}")
    assert len(opts[0].state) == len(opts[1].state)


class MomentumEncoder(nn.Module):
    """MoCo's key encoder: an EMA of the query encoder's weights, updated in forward under no_grad, then called."""

    def __init__(self):
        super().__init__()
        self.q, self.k = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        with torch.no_grad():
            self.k.weight.mul_(0.9).add_(self.q.weight * 0.1)
            self.k.bias.mul_(0.9).add_(self.q.bias * 0.1)
            key = self.k(x)
        return (self.q(x) * key).sum()


class ClipThenCall(nn.Module):
    """WGAN-style weight clipping in forward, then the layer: it reads the clipped weight, with its history."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        with torch.no_grad():
            self.lin.weight.clamp_(-0.2, 0.2)
        return self.lin(x).pow(2).sum()


class SpectralNorm(nn.Module):
    """nn.utils.spectral_norm: a forward pre-hook runs a power iteration under no_grad (F.normalize(..., out=u)
    updates the buffers) and computes the weight the layer reads."""

    def __init__(self):
        super().__init__()
        self.a = nn.utils.spectral_norm(nn.Linear(4, 3))

    def forward(self, x):
        return self.a(x).pow(2).sum()


@pytest.mark.parametrize("route", ["compile", "backend"])
@pytest.mark.parametrize("build", [MomentumEncoder, ClipThenCall, SpectralNorm])
def test_layers_read_weights_forward_changed_as_eager(route, build):
    """A layer fxla lowers whole (nn.Linear) reads its weights as forward left them: changed in place before the
    call, or computed by a hook; before, it read the weights from before the change (or the hook's stale one)."""
    torch.manual_seed(0)
    model = build()
    reference = copy.deepcopy(model)
    fast = _fast(route, model)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1, weight_decay=0.1) for m in (model, reference)]
    for step in range(3):
        x = torch.randn(5, 4, generator=torch.Generator().manual_seed(step))
        xs = [x.clone().requires_grad_() for _ in range(2)]
        for f, opt, xx in ((reference, opts[1], xs[0]), (fast, opts[0], xs[1])):
            opt.zero_grad()
            f(xx).backward()
            opt.step()
        _check_grads(model, reference, xs)
        for (name, t), u in zip(model.state_dict().items(), reference.state_dict().values()):
            torch.testing.assert_close(t, u, **TOL, msg=lambda m: f"{name}: {m}")


def test_a_change_through_parameters_while_tracing_is_refused():
    """``for p in self.k.parameters(): p.mul_(...)`` runs on the tensors themselves while fxla traces (they are
    not traced values): the change would happen once, at the trace, and never in the compiled program."""
    class ThroughParameters(MomentumEncoder):
        def forward(self, x):
            with torch.no_grad():
                for pk, pq in zip(self.k.parameters(), self.q.parameters()):
                    pk.mul_(0.9).add_(pq * 0.1)
            return (self.q(x) * self.k(x)).sum()

    with pytest.raises(fxla.TraceError, match=r"(?s)forward changed 'k.weight', 'k.bias' in place.*fix: reach"):
        fxla.compile(ThroughParameters())(torch.randn(2, 4))


def _hooked(root):
    torch.manual_seed(0)
    if root == "layer":
        model = nn.utils.weight_norm(nn.Linear(4, 3))
    else:
        model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.utils.weight_norm(nn.Linear(4, 3)))
        model[0].register_forward_hook(lambda mod, inp, out: out * 2)
        model[2].register_forward_pre_hook(lambda mod, inp: (inp[0] + 1,))
    model.register_forward_hook(lambda mod, inp, out: out - 0.5)
    return model


@pytest.mark.parametrize("root", ["layer", "inside"])
def test_forward_hooks_run_as_in_eager(root):
    """Hooks on torch layers (fxla lowers a layer whole) and on the compiled module itself: before, a layer's hooks
    were skipped, and the old nn.utils.weight_norm (a pre-hook computing the weight) read a stale weight with no
    gradient to g and v."""
    model, reference = _hooked(root), _hooked(root)
    fast = fxla.compile(model)
    fast(torch.randn(2, 4))
    for m in (model, reference):                     # (changed after compiling: the hook computes the weight again)
        with torch.no_grad():
            next(p for n, p in m.named_parameters() if n.endswith("weight_g")).mul_(2)
    x = torch.randn(5, 4)
    xs = [x.clone().requires_grad_() for _ in range(2)]
    fast(xs[1]).sum().backward()
    reference(xs[0]).sum().backward()
    _check_grads(model, reference, xs)


def test_an_exported_program_keeps_inputs_changed_under_no_grad_writable(tmp_path):
    """fxla.export records the inputs forward changes only under no_grad: the loaded program writes a leaf input
    that requires grad back as eager changes it (it refused, "eager refuses this too")."""
    torch.manual_seed(0)
    model = ClampInput()
    x = torch.randn(5, 4) * 2
    fxla.export(model, (x.clone(),), tmp_path / "a")
    loaded = fxla.load(tmp_path / "a")
    xs = [x.clone().requires_grad_() for _ in range(2)]
    loaded(xs[1])
    model(xs[0])
    torch.testing.assert_close(xs[1], xs[0], **TOL)


def test_inference_tensors_made_by_the_caller_are_inputs():
    """Tensors made under the caller's torch.inference_mode() have no version counter: fxla places them anew each
    call (it raised a raw RuntimeError at the first call)."""
    torch.manual_seed(0)
    layer = nn.Linear(4, 4)
    fast = fxla.compile(layer)
    with torch.inference_mode():
        x = torch.randn(5, 4)
        first = fast(x)
        x.add_(1)                                   # (changed in place: no version counter to see it by)
        torch.testing.assert_close(fast(x), layer(x), **TOL)
    torch.testing.assert_close(first, layer(x - 1), **TOL)


@pytest.mark.parametrize("layer", ["bn", "lstm", "mha"])
def test_hooks_on_layers_fxla_lowers_whole(layer):
    """A layer fxla lowers whole stays one node with its hooks run around it (its forward cannot be traced); a
    pre-hook rescales its argument, a hook changes its result, and a root pre-hook sees the arguments by
    position."""
    torch.manual_seed(0)
    inner = {"bn": lambda: nn.BatchNorm1d(4), "lstm": lambda: nn.LSTM(4, 4, batch_first=True),
             "mha": lambda: nn.MultiheadAttention(4, 2, batch_first=True)}[layer]()

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.inner = nn.Linear(4, 4), inner

        def forward(self, x):
            h = self.a(x)
            out = self.inner(h, h, h) if layer == "mha" else self.inner(h)
            return out[0] if isinstance(out, tuple) else out

    model = Model()
    model.inner.register_forward_pre_hook(lambda mod, args: tuple(a * 0.5 for a in args))
    model.inner.register_forward_hook((lambda mod, args, out: out + 1) if layer == "bn" else
                                      (lambda mod, args, out: (out[0] + 1, out[1])))
    model.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    reference = copy.deepcopy(model)
    x = torch.randn(3, 5, 4) if layer != "bn" else torch.randn(6, 4)
    xs = [x.clone().requires_grad_() for _ in range(2)]
    fxla.compile(model)(xs[1]).sum().backward()
    reference(xs[0]).sum().backward()
    _check_grads(model, reference, xs, dict(rtol=1e-4, atol=1e-5))


def test_a_weight_tied_to_one_changed_in_forward_is_read_changed():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)
            self.b.weight = self.a.weight

        def forward(self, x):
            with torch.no_grad():
                self.a.weight.clamp_(-0.1, 0.1)
            return self.b(x).sum()

    torch.manual_seed(0)
    model = Tied()
    reference = copy.deepcopy(model)
    x = torch.randn(3, 4)
    torch.testing.assert_close(fxla.compile(model)(x), reference(x), **TOL)


def test_a_custom_function_through_the_backend_is_refused_for_gradients():
    """Dynamo runs a custom autograd.Function's forward with grad mode off, as eager does; its output has the
    Function's history (fxla refuses a gradient through it: its backward is the user's Python), not none."""
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)

        def forward(self, x):
            return Double.apply(self.a(x))

    out = torch.compile(Model(), backend="fxla")(torch.randn(3, 4))
    assert out.requires_grad
    with pytest.raises(fxla.GradientError, match="cannot differentiate"):
        out.sum().backward()


def test_compile_step_refuses_a_trained_parameter_forward_changes():
    torch.manual_seed(0)
    model = ClipThenCall()
    step = fxla.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1), lambda m, x: m(x))
    with pytest.raises(fxla.StepError, match=r"(?s)forward changes the trained parameter.*lin.weight.*fix: make"):
        step(torch.randn(3, 4))


def test_hooks_registered_or_removed_after_compiling_are_seen():
    """A hook registered or removed after the trace ran stale programs (the old hooks) silently; now the model is
    traced again at the next call, also in fxla.compile_step.  Backward hooks, which fxla's gradients do not run,
    make the call's backward (and compile_step) refuse instead of silently skipping them."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    fast = fxla.compile(model)
    x = torch.randn(3, 4)
    torch.testing.assert_close(fast(x), model(x), **TOL)
    handle = model[0].register_forward_hook(lambda mod, inp, out: out * 10)
    torch.testing.assert_close(fast(x), model(x), **TOL)
    glob = nn.modules.module.register_module_forward_pre_hook(lambda mod, inp: None if mod is not model[2] else
                                                               (inp[0] - 1,))
    try:
        torch.testing.assert_close(fast(x), model(x), **TOL)
    finally:
        glob.remove()
    handle.remove()
    torch.testing.assert_close(fast(x), model(x), **TOL)
    back = model[2].register_full_backward_hook(lambda mod, gi, go: None)
    xs = torch.randn(3, 4, requires_grad=True)
    with pytest.raises(fxla.GradientError, match="backward hook"):
        fast(xs).sum().backward()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = fxla.compile_step(model, opt, lambda m, a: m(a).square().mean())
    with pytest.raises(fxla.StepError, match="backward hook"):
        step(x)
    back.remove()
    want = model(x).square().mean().item()
    assert abs(step(x).item() - want) < 1e-5
    model[0].register_forward_hook(lambda mod, inp, out: out.relu())
    with torch.no_grad():
        want = model(x).square().mean().item()
    assert abs(step(x).item() - want) < 1e-5


def test_hooks_that_change_hooks_and_backward_hooks_with_concrete_shapes():
    """A hook that removes itself runs on the first call only, as in eager (the hooks are recorded before a trace,
    so the change it makes is seen at the next call); a backward hook also refuses the gradient of a
    concrete_shapes model (its per-shape traces share the model's hook watch)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    fast = fxla.compile(model)
    x = torch.randn(3, 4)
    handles = []

    def once(mod, inp, out):
        handles[0].remove()
        return out * 3
    handles.append(model[0].register_forward_hook(once))
    want = model(x)                             # (eager: the hook runs once and goes)
    handles[0] = model[0].register_forward_hook(once)
    torch.testing.assert_close(fast(x), want, **TOL)
    torch.testing.assert_close(fast(x), model(x), **TOL)
    model[2].register_forward_hook(lambda mod, inp, out: out + 4)
    torch.testing.assert_close(fast(x), model(x), **TOL)
    model[2]._forward_hooks = type(model[2]._forward_hooks)()       # (the dict replaced, not changed)
    torch.testing.assert_close(fast(x), model(x), **TOL)
    concrete = fxla.compile(model, concrete_shapes=True)
    concrete(x)
    model[2].register_full_backward_hook(lambda mod, gi, go: None)
    with pytest.raises(fxla.GradientError, match="backward hook"):
        concrete(torch.randn(3, 4, requires_grad=True)).sum().backward()


def test_a_traced_value_a_hook_stored_is_an_error_when_used():
    """A forward hook that stores its output (feature collection) ran once, while tracing, and stored a Proxy; using
    it later silently recorded into a finished graph.  Now that use is a TraceError that says why and what to do."""
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    features = []
    model[0].register_forward_hook(lambda mod, inp, out: features.append(out))
    fxla.compile(model)(torch.randn(2, 4))
    with pytest.raises(fxla.TraceError, match="used after fxla's trace had finished") as info:
        features[0] * 2
    assert "fix: return the tensors from forward" in str(info.value)


class _EnablesGrad(nn.Module):
    """An energy-model style forward: its own torch.enable_grad() region, and a no_grad one."""

    def __init__(self):
        super().__init__()
        self.l, self.k = nn.Linear(3, 3), nn.Linear(3, 3)

    def forward(self, x):
        with torch.no_grad():
            x = self.k(x)
        with torch.enable_grad():
            return torch.tanh(self.l(x))


@pytest.mark.parametrize("route", ["compile", "backend"])
def test_forward_enabling_grad_under_a_no_grad_call_is_refused_not_run_without_its_gradients(route):
    torch.manual_seed(0)
    eager = _EnablesGrad()
    model = copy.deepcopy(eager)
    fast = fxla.compile(model) if route == "compile" else torch.compile(model, backend="fxla")
    x = torch.randn(2, 3)
    with torch.no_grad(), pytest.raises(fxla.GradientError, match=r"turns grad mode on(.|\n)*fix: call it with "
                                                                   r"grad mode on"):
        fast(x)
    # with grad mode on it is an ordinary call: eager's gradients
    fast(x).sum().backward()
    eager(x).sum().backward()
    for p, q in zip(model.parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad) if q.grad is not None else None
    assert model.k.weight.grad is None and model.l.weight.grad is not None
    # nothing requires grad: nothing to lose, it runs
    model.requires_grad_(False)
    eager.requires_grad_(False)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), eager(x))


def test_a_no_grad_region_alone_runs_under_a_no_grad_call():
    class OnlyNoGrad(nn.Module):
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(3, 3)

        def forward(self, x):
            with torch.no_grad():
                y = self.l(x)
            return torch.tanh(y) + x

    model, x = OnlyNoGrad(), torch.randn(2, 3)
    fast = fxla.compile(model)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x))
        torch.testing.assert_close(fast(x), model(x))           # (the planned call too)


class _FollowsCallersMode(nn.Module):
    """Switches grad mode with set_grad_enabled: back to the caller's mode, and by a flag."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.finetune = nn.Linear(4, 4), nn.Linear(4, 4), True

    def forward(self, x):
        grad = torch.is_grad_enabled()
        with torch.no_grad():
            stats = self.a(x).mean()
        with torch.set_grad_enabled(self.finetune):
            h = self.b(x)
        with torch.set_grad_enabled(grad):
            return h - stats


def test_set_grad_enabled_following_the_caller_runs_under_a_no_grad_call():
    torch.manual_seed(0)
    model, x = _FollowsCallersMode(), torch.randn(3, 4)
    fast = fxla.compile(model)
    fast(x)
    model.eval()
    with torch.no_grad():
        want = model(x)
        got = fast(x)
    torch.testing.assert_close(got, want)
    assert not got.requires_grad and not want.requires_grad


class _SetsGradTrue(nn.Module):
    """torch.set_grad_enabled(True) written with the constant: the same switch as torch.enable_grad()."""

    def __init__(self, plain_call: bool):
        super().__init__()
        self.l, self.plain_call = nn.Linear(3, 3), plain_call

    def forward(self, x):
        if self.plain_call:
            torch.set_grad_enabled(True)
            return torch.tanh(self.l(x))
        with torch.set_grad_enabled(True):
            return torch.tanh(self.l(x))


@pytest.mark.parametrize("plain_call", [False, True], ids=["with", "call"])
def test_set_grad_enabled_true_under_a_no_grad_call_is_refused(plain_call):
    torch.manual_seed(0)
    eager = _SetsGradTrue(plain_call)
    model = copy.deepcopy(eager)
    fast = fxla.compile(model)
    x = torch.randn(2, 3)
    try:
        with torch.no_grad():
            assert eager(x).requires_grad              # (eager: a history even under no_grad)
            torch.set_grad_enabled(False)
            with pytest.raises(fxla.GradientError, match=r"set_grad_enabled\(True\)(.|\n)*at .*test_grad_mode"):
                fast(x)
    finally:
        torch.set_grad_enabled(True)
    fast(x).sum().backward()
    eager(x).sum().backward()
    torch.testing.assert_close(model.l.weight.grad, eager.l.weight.grad)
