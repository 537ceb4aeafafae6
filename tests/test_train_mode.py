"""Training mode against eager: batch norm with batch statistics and its running statistics written back (every
form: BatchNorm1d/2d/3d, momentum=None's cumulative average, track_running_stats=False, F.batch_norm and instance
norm with running statistics), their gradients, a compiled training step of a small CNN with batch norm, and
``model.train()`` / ``model.eval()`` after compiling (fxla.modes)."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla
from grad_support import check_grad


def _assert_state_equal(got: nn.Module, want: nn.Module, tol: float = 1e-5) -> None:
    for (name, a), (_, b) in zip(got.state_dict().items(), want.state_dict().items()):
        assert a.dtype == b.dtype, name
        torch.testing.assert_close(a, b, rtol=tol, atol=tol, msg=lambda m: f"{name}: {m}")


def _run_both(model: nn.Module, shape, calls: int = 3, dtype=torch.float32):
    """Call a compiled copy and the eager model ``calls`` times on the same inputs; compare outputs and state."""
    torch.manual_seed(0)
    eager = copy.deepcopy(model)
    fast = fxla.compile(model)
    for _ in range(calls):
        x = torch.randn(shape, dtype=dtype) * 2 + 0.5
        with torch.no_grad():
            got, want = fast(x), eager(x)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        _assert_state_equal(model, eager)
    return fast, eager


# -- batch norm in training mode ------------------------------------------------------------------------------
@pytest.mark.parametrize("make,shape", [
    (lambda: nn.BatchNorm1d(3), (6, 3)),
    (lambda: nn.BatchNorm1d(3, momentum=0.3), (4, 3, 5)),
    (lambda: nn.BatchNorm2d(4), (3, 4, 5, 6)),
    (lambda: nn.BatchNorm3d(2, affine=False), (2, 2, 3, 2, 4)),
    (lambda: nn.BatchNorm2d(4, momentum=None), (3, 4, 2, 2)),
    (lambda: nn.BatchNorm2d(4, track_running_stats=False), (3, 4, 2, 2)),
], ids=["1d", "1d-3d-input-momentum", "2d", "3d-no-affine", "2d-cumulative-average", "2d-no-running-stats"])
def test_batch_norm_training_matches_eager(make, shape):
    torch.manual_seed(1)
    bn = make().train()
    if bn.affine:
        nn.init.normal_(bn.weight)
        nn.init.normal_(bn.bias)
    _run_both(bn, shape)


def test_batch_norm_half_precision_input_with_float32_statistics():
    torch.manual_seed(2)
    bn = nn.BatchNorm2d(3).train()
    eager = copy.deepcopy(bn)
    x = torch.randn(4, 3, 5, 5).to(torch.bfloat16)
    y = fxla.compile(bn)(x)
    with torch.no_grad():
        want = eager(x)
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y.float(), want.float(), rtol=2e-2, atol=2e-2)
    _assert_state_equal(bn, eager, tol=1e-3)


def test_batch_norm_module_called_twice_in_one_forward():
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(4, momentum=None)

        def forward(self, x):
            y = self.bn(x) + self.bn(x * 3)
            return y, self.bn.running_mean * 1, self.bn.num_batches_tracked + 0   # read after the updates
    torch.manual_seed(3)
    model = Twice().train()
    eager = copy.deepcopy(model)
    x = torch.randn(5, 4)
    with torch.no_grad():
        got, want = fxla.compile(model)(x), eager(x)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)
    _assert_state_equal(model, eager)


def test_functional_batch_norm_updates_module_buffers():
    class Functional(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.zeros(3))
            self.register_buffer("var", torch.ones(3))

        def forward(self, x):
            return F.batch_norm(x, self.mean, self.var, training=self.training, momentum=0.2)
    _run_both(Functional().train(), (4, 3, 6))


def test_functional_batch_norm_updates_inputs():
    torch.manual_seed(4)
    x = torch.randn(5, 3, 4)
    mean, var = torch.randn(3), torch.rand(3) + 0.5
    mean2, var2 = mean.clone(), var.clone()
    fast = fxla.compile(lambda x, m, v: F.batch_norm(x, m, v, training=True, momentum=0.4))
    torch.testing.assert_close(fast(x, mean, var), F.batch_norm(x, mean2, var2, training=True, momentum=0.4))
    torch.testing.assert_close(mean, mean2)
    torch.testing.assert_close(var, var2)


def test_running_statistics_made_in_the_function_are_updated_but_not_kept():
    """Running statistics the traced code creates (``torch.zeros(3)``: a new tensor per call in eager) are updated
    for the rest of the call and not written back: every call starts from zeros again, as eager's does."""
    def fn(x):
        mean, var = torch.zeros(3), torch.ones(3)
        F.batch_norm(x, mean, var, training=True, momentum=0.5)
        return F.batch_norm(x, mean, var, training=False)       # reads the updated statistics
    fast = fxla.compile(fn)
    x = torch.randn(6, 3)
    for _ in range(2):
        torch.testing.assert_close(fast(x), fn(x))


def test_instance_norm_running_statistics_in_training_mode():
    torch.manual_seed(5)
    _run_both(nn.InstanceNorm2d(3, affine=True, track_running_stats=True).train(), (4, 3, 5, 5))
    _run_both(nn.InstanceNorm1d(2, track_running_stats=True, momentum=0.5).train(), (2, 7))


@pytest.mark.parametrize("make,shape", [(lambda: nn.GroupNorm(2, 4), (3, 4, 5)), (lambda: nn.LayerNorm(6), (3, 6)),
                                        (lambda: nn.InstanceNorm2d(3), (2, 3, 4, 4))])
def test_norms_without_running_statistics_are_the_same_in_both_modes(make, shape):
    for mode in (True, False):
        _run_both(make().train(mode), shape, calls=1)


@pytest.mark.parametrize("make,shape", [(lambda: nn.BatchNorm2d(3), (4, 3, 3, 3)),
                                        (lambda: nn.BatchNorm1d(5, momentum=None), (6, 5)),
                                        (lambda: nn.BatchNorm1d(2, track_running_stats=False), (3, 2, 4))])
def test_batch_norm_training_gradients_match_eager(make, shape):
    torch.manual_seed(6)
    bn = make().train()
    if bn.affine:
        nn.init.normal_(bn.weight)
        nn.init.normal_(bn.bias)
    assert check_grad(bn, (torch.randn(shape),))


def test_batch_norm_training_through_autograd_matches_eager():
    torch.manual_seed(7)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 3),
                          nn.BatchNorm1d(3, momentum=None)).train()
    eager = copy.deepcopy(model)
    x = torch.randn(5, 3, 6, 6)
    y, want = fxla.compile(model)(x), eager(x)
    g = torch.randn_like(want)
    y.backward(g)
    want.backward(g)
    torch.testing.assert_close(y, want, rtol=1e-5, atol=1e-5)
    for (name, p), (_, q) in zip(model.named_parameters(), eager.named_parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-4, msg=lambda m: f"{name}.grad: {m}")
    _assert_state_equal(model, eager)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        # (no conv bias before a batch norm: its exact gradient is 0, and Adam would amplify the rounding noise)
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8, momentum=None)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean((2, 3)))


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_compile_step_cnn_with_batch_norm_matches_eager(optimizer):
    torch.manual_seed(8)
    model = SmallCNN().train()
    eager = copy.deepcopy(model)

    def make(m):
        if optimizer == "sgd":
            return torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
        return torch.optim.AdamW(m.parameters(), lr=1e-2)
    opt, eager_opt = make(model), make(eager)

    def loss_fn(m, x, t):
        return F.cross_entropy(m(x), t)
    step = fxla.compile_step(model, opt, loss_fn)
    for i in range(4):
        x, t = torch.randn(6, 3, 8, 8), torch.randint(0, 4, (6,))
        loss = step(x, t)
        eager_opt.zero_grad()
        want = loss_fn(eager, x, t)
        want.backward()
        eager_opt.step()
        torch.testing.assert_close(loss, want.detach(), rtol=1e-4, atol=1e-4, msg=lambda m: f"step {i}: {m}")
    _assert_state_equal(model, eager, tol=1e-4)
    got_state, want_state = opt.state_dict()["state"], eager_opt.state_dict()["state"]
    assert sorted(got_state) == sorted(want_state)
    for index, want in want_state.items():
        for key in want:
            torch.testing.assert_close(got_state[index][key], want[key], rtol=1e-4, atol=1e-4,
                                       msg=lambda m: f"parameter {index} {key}: {m}")


# -- train() / eval() after compiling ---------------------------------------------------------------------------
class DropNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.bn = nn.BatchNorm1d(16)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.bn(self.fc(x)))


def test_eval_after_compiling_is_seen_on_the_fast_path():
    torch.manual_seed(9)
    model = DropNet().train()
    fast = fxla.compile(model)
    x = torch.randn(8, 16)
    with torch.no_grad():
        a, b = fast(x), fast(x)
    assert not torch.equal(a, b), "training mode: dropout draws a new mask per call"
    assert (a == 0).any() and model.bn.num_batches_tracked.item() == 2
    model.eval()
    stats = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        want = model(x)
        got = fast(x)
        again = fast(x)                  # the C fast path, with the plan made by the call before
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(again, want, rtol=1e-5, atol=1e-5)
    assert fast._plans, "an eval-mode, no_grad call of a deterministic program has a call plan"
    _assert_state_equal_to(model, stats)                       # eval mode does not touch the running statistics
    model.train()
    with torch.no_grad():
        c, d = fast(x), fast(x)
    assert not torch.equal(c, d) and model.bn.num_batches_tracked.item() == 4
    assert fast.cache_size == 2, "one compiled signature per mode, both kept"


def _assert_state_equal_to(model, stats):
    for k, v in model.state_dict().items():
        assert torch.equal(v, stats[k]), k


def test_a_submodule_switched_alone_is_seen():
    torch.manual_seed(10)
    model = DropNet().train()
    fast = fxla.compile(model)
    x = torch.randn(8, 16)
    with torch.no_grad():
        fast(x)
        model.drop.eval()                # batch norm still trains
        eager = copy.deepcopy(model)
        torch.testing.assert_close(fast(x), eager(x), rtol=1e-5, atol=1e-5)
    _assert_state_equal(model, eager)


def test_forward_branching_on_self_training_is_retraced():
    class Branch(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            y = self.fc(x)
            return y * 2 if self.training else y - 1
    model = Branch().train()
    fast = fxla.compile(model)
    x = torch.randn(3, 4)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x))
        model.eval()
        torch.testing.assert_close(fast(x), model(x))
        model.train()
        torch.testing.assert_close(fast(x), model(x))


def test_mode_switch_with_grad_and_with_concrete_shapes():
    torch.manual_seed(11)
    for concrete in (False, True):
        model = DropNet().train()
        fast = fxla.compile(model, concrete_shapes=concrete)
        x = torch.randn(8, 16)
        fast(x).sum().backward()
        model.eval()
        eager = copy.deepcopy(model)
        y = fast(x)
        w = eager(x)
        torch.testing.assert_close(y, w, rtol=1e-5, atol=1e-5)
        model.zero_grad()
        eager.zero_grad()
        y.sum().backward()
        w.sum().backward()
        for (name, p), (_, q) in zip(model.named_parameters(), eager.named_parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {m}")


def test_compile_step_sees_eval():
    torch.manual_seed(12)
    model = SmallCNN().train()
    eager = copy.deepcopy(model)
    opt, eager_opt = torch.optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(eager.parameters(), lr=0.1)

    def loss_fn(m, x, t):
        return F.cross_entropy(m(x), t)
    step = fxla.compile_step(model, opt, loss_fn)
    for mode in (True, False, True):
        model.train(mode)
        eager.train(mode)
        x, t = torch.randn(4, 3, 8, 8), torch.randint(0, 4, (4,))
        loss = step(x, t)
        eager_opt.zero_grad()
        want = loss_fn(eager, x, t)
        want.backward()
        eager_opt.step()
        torch.testing.assert_close(loss, want.detach(), rtol=1e-4, atol=1e-4)
        _assert_state_equal(model, eager, tol=1e-4)
    assert step.compiles == 2


# -- dropout inside torch's attention, transformer and recurrent layers -----------------------------------------
class _Call(nn.Module):
    def __init__(self, layer, fn):
        super().__init__()
        self.layer, self.fn = layer, fn

    def forward(self, x):
        return self.fn(self.layer, x)


def test_multihead_attention_drops_out_its_weights_in_training_mode():
    """The returned weights are eval mode's scaled by 1/(1-p) where kept and 0 elsewhere (torch's formula); the
    output is linear in them, so its mean over many calls is eval mode's output."""
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True)
    x = torch.randn(2, 6, 8)
    model = _Call(mha, lambda m, x: m(x, x, x, average_attn_weights=False))
    compiled = fxla.compile(model)
    with torch.no_grad():
        mha.eval()
        want_out, want_w = model(x)
        mha.train()
        runs = [compiled(x) for _ in range(300)]
    for out, w in runs[:3]:
        kept = w != 0
        torch.testing.assert_close(w[kept], want_w[kept] * 2, rtol=1e-5, atol=1e-6)
        assert 0.35 < kept.float().mean() < 0.65
    assert not torch.equal(runs[0][1], runs[1][1])                  # a fresh mask per call
    mean = torch.stack([out for out, _ in runs]).mean(0)
    assert (mean - want_out).abs().max() < 0.15 * want_out.abs().max()
    torch.manual_seed(3)
    first = compiled(x)[1]
    torch.manual_seed(3)
    torch.testing.assert_close(compiled(x)[1], first)                # torch.manual_seed reproduces it


@pytest.mark.parametrize("make", [
    lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.3, batch_first=True),
    lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.3), 2, enable_nested_tensor=False),
    lambda: nn.LSTM(8, 8, num_layers=3, dropout=0.3, batch_first=True),
    lambda: nn.GRU(8, 8, num_layers=2, dropout=0.3)], ids=["encoder_layer", "encoder", "lstm", "gru"])
def test_layers_with_dropout_train_with_fresh_masks(make):
    """Training mode draws a mask per call (different outputs, reproducible under torch.manual_seed); with the
    dropout modules' p set to 0 training mode equals eager's; gradients flow through (compile_step trains)."""
    torch.manual_seed(0)
    layer = make().train()
    rnn = isinstance(layer, nn.RNNBase)
    model = _Call(layer, (lambda m, x: m(x)[0]) if rnn else (lambda m, x: m(x)))
    x = torch.randn(2, 5, 8)
    compiled = fxla.compile(model)
    with torch.no_grad():
        a, b = compiled(x), compiled(x)
        assert not torch.equal(a, b)
        torch.manual_seed(7)
        c = compiled(x)
        torch.manual_seed(7)
        torch.testing.assert_close(compiled(x), c)
    target = torch.randn(2, 5, 8)
    step = fxla.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1),
                             lambda m, x: F.mse_loss(m(x), target))
    before = [p.detach().clone() for p in model.parameters()]
    step(x)
    changed = [not torch.equal(p, q) for p, q in zip(model.parameters(), before)]
    assert all(changed), [n for (n, _), c in zip(model.named_parameters(), changed) if not c]
    without = copy.deepcopy(model)
    for m in without.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        if isinstance(m, (nn.RNNBase, nn.MultiheadAttention)):
            m.dropout = 0.0
    with torch.no_grad():
        torch.testing.assert_close(fxla.compile(without)(x), without(x), rtol=1e-5, atol=1e-5)


def test_spectral_norm_power_iteration_gradients_and_steps_match_eager():
    """torch.nn.utils.parametrizations.spectral_norm: its power iteration (torch.vdot) updates the ``_u``/``_v``
    buffers in training mode as eager does; gradients and compiled training steps follow eager."""
    from torch.nn.utils.parametrizations import spectral_norm
    torch.manual_seed(0)
    model = spectral_norm(torch.nn.Linear(4, 3))
    twin = copy.deepcopy(model)
    fast = fxla.compile(model, concrete_shapes=True)
    x = torch.randn(2, 4)
    for _ in range(3):
        got, want = fast(x), twin(x)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(model.parametrizations.weight[0]._u, twin.parametrizations.weight[0]._u,
                                   rtol=1e-5, atol=1e-6)
    got.sum().backward()
    want.sum().backward()
    torch.testing.assert_close(model.parametrizations.weight.original.grad,
                               twin.parametrizations.weight.original.grad, rtol=1e-5, atol=1e-6)
    opt, twin_opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, twin))
    step = fxla.compile_step(model, opt, lambda m, x: m(x).square().mean(), concrete_shapes=True)
    for _ in range(3):
        twin_opt.zero_grad()
        loss = twin(x).square().mean()
        loss.backward()
        twin_opt.step()
        torch.testing.assert_close(step(x).detach(), loss.detach(), rtol=1e-5, atol=1e-6)
