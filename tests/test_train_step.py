"""fxla.compile_step: a whole training step (forward, loss, backward, clipping, optimizer update) as one XLA
program; the model and the torch.optim optimizer stay the source of truth and match eager step for step."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla

TOL = dict(rtol=1e-5, atol=1e-6)


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))


def mse(model, x, y):
    return F.mse_loss(model(x), y)


def eager_step(model, optimizer, loss_fn, batch, max_grad_norm=None):
    optimizer.zero_grad()
    loss = loss_fn(model, *batch)
    loss.backward()
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    return loss


def assert_same_state(model, reference, optimizer, ref_optimizer, tol=TOL):
    for (name, p), q in zip(model.state_dict().items(), reference.state_dict().values()):
        torch.testing.assert_close(p, q, **tol, msg=lambda m: f"{name}: {m}")
    mine, theirs = optimizer.state_dict(), ref_optimizer.state_dict()
    assert mine["param_groups"] == theirs["param_groups"]
    assert mine["state"].keys() == theirs["state"].keys()
    for k, state in theirs["state"].items():
        assert list(mine["state"][k]) == list(state), k             # same keys, same order
        for key, value in state.items():
            torch.testing.assert_close(mine["state"][k][key], value, **tol, msg=lambda m: f"state {k}.{key}: {m}")


OPTIMIZERS = [
    (torch.optim.SGD, dict(lr=0.1)),
    (torch.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=1e-2)),
    (torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    (torch.optim.Adam, dict(lr=1e-2)),
    (torch.optim.Adam, dict(lr=1e-2, weight_decay=1e-2, amsgrad=True)),
    (torch.optim.AdamW, dict(lr=1e-2, betas=(0.4, 0.99))),
    (torch.optim.AdamW, dict(lr=1e-2, weight_decay=0.1, maximize=True)),
]


@pytest.mark.parametrize("opt_cls,kwargs", OPTIMIZERS, ids=lambda v: getattr(v, "__name__", None) or
                         ",".join(f"{k}={v}" for k, v in v.items()))
def test_steps_match_eager_with_a_scheduler_and_clipping(opt_cls, kwargs):
    model, reference = mlp(), mlp()
    optimizer, ref_optimizer = opt_cls(model.parameters(), **kwargs), opt_cls(reference.parameters(), **kwargs)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 2, 0.5)
    ref_scheduler = torch.optim.lr_scheduler.StepLR(ref_optimizer, 2, 0.5)
    step = fxla.compile_step(model, optimizer, mse, max_grad_norm=0.3)
    x, y = torch.randn(6, 8), torch.randn(6, 4)
    for _ in range(5):
        loss = step(x, y)
        ref_loss = eager_step(reference, ref_optimizer, mse, (x, y), max_grad_norm=0.3)
        torch.testing.assert_close(loss, ref_loss.detach(), **TOL)
        scheduler.step()
        ref_scheduler.step()
    assert_same_state(model, reference, optimizer, ref_optimizer)
    assert step.compiles == 1                                    # the learning rate is an argument


def test_a_learning_rate_set_back_to_an_earlier_value_is_used():
    """The step keeps the device scalars of the hyperparameters it has seen (one upload per distinct value):
    setting the rate back and forth by hand must use each step's own value."""
    model, reference = mlp(), mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    step = fxla.compile_step(model, optimizer, mse)
    x, y = torch.randn(6, 8), torch.randn(6, 4)
    for lr in (0.1, 0.01, 0.1, 0.5, 0.01):
        for group in optimizer.param_groups + ref_optimizer.param_groups:
            group["lr"] = lr
        torch.testing.assert_close(step(x, y), eager_step(reference, ref_optimizer, mse, (x, y)).detach(), **TOL)
    assert_same_state(model, reference, optimizer, ref_optimizer)


def test_param_groups_with_their_own_options_and_frozen_parameters():
    model, reference = mlp(), mlp()
    for m in (model, reference):
        m[0].bias.requires_grad_(False)

    def groups(m):
        return [{"params": [m[0].weight], "weight_decay": 0.1}, {"params": [m[2].weight, m[2].bias], "lr": 0.05}]
    optimizer, ref_optimizer = torch.optim.AdamW(groups(model), lr=0.01), torch.optim.AdamW(groups(reference), lr=0.01)
    step = fxla.compile_step(model, optimizer, mse)
    x, y = torch.randn(6, 8), torch.randn(6, 4)
    for _ in range(3):
        step(x, y)
        eager_step(reference, ref_optimizer, mse, (x, y))
    assert_same_state(model, reference, optimizer, ref_optimizer)


def test_gradient_accumulation_sums_micro_batches_like_eager():
    model, reference = mlp(), mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.5)

    def loss_fn(m, x, y):
        return F.mse_loss(m(x), y) / 3
    step = fxla.compile_step(model, optimizer, loss_fn, accumulation_steps=3)
    batches = [(torch.randn(4, 8), torch.randn(4, 4)) for _ in range(6)]
    for i, batch in enumerate(batches):
        step(*batch)
        loss_fn(reference, *batch).backward()
        if i % 3 == 2:
            ref_optimizer.step()
            ref_optimizer.zero_grad()
        if i in (0, 1):                                          # nothing updated before the third micro-batch
            torch.testing.assert_close(model[0].weight, mlp()[0].weight)
    assert_same_state(model, reference, optimizer, ref_optimizer)
    assert step.compiles == 2                                    # a micro-step and an update


def test_a_checkpoint_saved_mid_training_resumes_exactly():
    model = mlp()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    step = fxla.compile_step(model, optimizer, mse)
    data = [(torch.randn(5, 8), torch.randn(5, 4)) for _ in range(6)]
    for batch in data[:3]:
        step(*batch)
    checkpoint = copy.deepcopy({"model": model.state_dict(), "opt": optimizer.state_dict()})
    for batch in data[3:]:
        step(*batch)
    resumed = mlp()
    resumed_opt = torch.optim.Adam(resumed.parameters(), lr=1e-2)
    resumed.load_state_dict(checkpoint["model"])
    resumed_opt.load_state_dict(checkpoint["opt"])
    resumed_step = fxla.compile_step(resumed, resumed_opt, mse)
    for batch in data[3:]:
        resumed_step(*batch)
    assert_same_state(resumed, model, resumed_opt, optimizer)


def test_eager_code_between_steps_sees_the_current_weights():
    model = mlp()
    step = fxla.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.5), mse)
    x, y = torch.randn(5, 8), torch.randn(5, 4)
    first = step(x, y)
    with torch.no_grad():
        after = mse(model, x, y)                                 # eager evaluation with the updated weights
    assert after < first
    torch.testing.assert_close(step(x, y), after, **TOL)        # the next step starts from them too


def test_unsupported_optimizers_and_losses_are_clear_errors():
    model = mlp()
    with pytest.raises(fxla.StepError, match="does not support RMSprop"):
        fxla.compile_step(model, torch.optim.RMSprop(model.parameters()), mse)
    step = fxla.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1), lambda m, x: m(x))
    with pytest.raises(fxla.LoweringError, match="0-d floating-point loss"):
        step(torch.randn(2, 8))


class Tied(nn.Module):
    """An embedding and an output layer sharing one weight (a language model's tied weights)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(10, 6)
        self.hidden = nn.Linear(6, 6)
        self.out = nn.Linear(6, 10, bias=False)
        self.out.weight = self.embed.weight

    def forward(self, ids):
        return self.out(torch.tanh(self.hidden(self.embed(ids))))


def test_tied_weights_get_the_sum_of_their_gradients():
    model, reference = Tied(), Tied()

    def loss_fn(m, ids, target):
        return F.cross_entropy(m(ids).flatten(0, 1), target.flatten())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.5, momentum=0.9)
    step = fxla.compile_step(model, optimizer, loss_fn)
    ids, target = torch.randint(0, 10, (3, 5)), torch.randint(0, 10, (3, 5))
    for _ in range(3):
        step(ids, target)
        eager_step(reference, ref_optimizer, loss_fn, (ids, target))
    assert model.out.weight is model.embed.weight
    assert_same_state(model, reference, optimizer, ref_optimizer)


def test_autocast_bfloat16_inside_the_step_with_float32_master_weights():
    model, reference = mlp(), mlp()

    def loss_fn(m, x, y):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return F.mse_loss(m(x), y)                           # linear in bf16, the loss in f32
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    ref_optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-2)
    step = fxla.compile_step(model, optimizer, loss_fn)
    x, y = torch.randn(6, 8), torch.randn(6, 4)
    for _ in range(3):
        loss = step(x, y)
        ref = eager_step(reference, ref_optimizer, loss_fn, (x, y))
        assert loss.dtype == ref.dtype == torch.float32
        torch.testing.assert_close(loss, ref.detach(), rtol=2e-2, atol=2e-2)
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert_same_state(model, reference, optimizer, ref_optimizer, tol=dict(rtol=2e-2, atol=2e-2))


# -- resident, donated state (CPU: fxla.api.residency) --------------------------------------------------------------
def _bn_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.Tanh(), nn.Linear(16, 4))


def test_parameters_state_and_buffers_stay_resident_and_are_donated():
    model, reference = _bn_model(), _bn_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    step = fxla.compile_step(model, optimizer, mse)
    x, y = torch.randn(6, 8), torch.randn(6, 4)
    slots = 6 + 6 + 3           # parameters, their momentum, the batch norm's running stats and count
    for i in range(4):
        step(x, y)
        eager_step(reference, ref_optimizer, mse, (x, y))
        # after the first step every slot is a view of its last result, consumed by the next step: no copies
        assert step._residency.donated == slots * i
    assert_same_state(model, reference, optimizer, ref_optimizer)
    weight = model[0].weight
    assert weight.data_ptr() == step._residency._arrays["model.0.weight"][0].unsafe_buffer_pointer()
    assert isinstance(weight, nn.Parameter) and weight is optimizer.param_groups[0]["params"][0]


def test_tensors_the_user_holds_see_each_update_in_place_like_eager():
    """A view of a parameter or a state_dict() entry held across steps sees the updates (eager's optimizer
    updates in place): those slots are not donated, and stay valid memory."""
    model, reference = mlp(), mlp()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    ref_optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-2)
    step = fxla.compile_step(model, optimizer, mse)
    x, y = torch.randn(5, 8), torch.randn(5, 4)
    step(x, y), eager_step(reference, ref_optimizer, mse, (x, y))
    held, ref_held = model[0].weight.data, reference[0].weight.data
    snapshot = model.state_dict()
    for _ in range(3):
        step(x, y), eager_step(reference, ref_optimizer, mse, (x, y))
    torch.testing.assert_close(held, ref_held, **TOL)
    torch.testing.assert_close(snapshot["2.bias"], reference[2].bias, **TOL)
    assert held.data_ptr() == model[0].weight.data_ptr()
    assert_same_state(model, reference, optimizer, ref_optimizer)
    del held, snapshot                          # nothing else holds them now: donated again from the next step
    before = step._residency.donated
    step(x, y), step(x, y)
    assert step._residency.donated - before >= 4 * 3       # (4 parameters, exp_avg, exp_avg_sq)


def test_tensors_replaced_or_changed_between_steps_are_read_as_they_are():
    model, reference = mlp(), mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    step = fxla.compile_step(model, optimizer, mse)
    x, y = torch.randn(5, 8), torch.randn(5, 4)
    for _ in range(2):
        step(x, y), eager_step(reference, ref_optimizer, mse, (x, y))
    with torch.no_grad():
        for m in (model, reference):
            m[0].weight.data = torch.full_like(m[0].weight, 0.01)     # replaced
            m[2].weight.mul_(0.5)                                     # changed in place
            m[2].bias.data.add_(1.0)                                  # changed through .data
    for o in (optimizer, ref_optimizer):
        o.state[o.param_groups[0]["params"][1]]["momentum_buffer"].zero_()
    for _ in range(2):
        step(x, y), eager_step(reference, ref_optimizer, mse, (x, y))
    assert_same_state(model, reference, optimizer, ref_optimizer)
