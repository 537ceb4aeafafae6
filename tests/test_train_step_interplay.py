"""fxla.compile_step beside the rest of a training loop, against eager PyTorch: a module compiled with
``fxla.compile`` (an evaluation forward, or training with an eager optimizer in between) sees every step's new
weights and buffers, as eager code between steps does; optimizer groups changed in place and step hooks; what
is refused rather than computed differently (a pre-step hook changing the weights, an input requiring grad)."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla
from fxla.train_step import StepError


def _ce(m, x, y):
    return F.cross_entropy(m(x), y)


def _batch(g):
    return torch.randn(6, 4, generator=g), torch.randint(0, 3, (6,), generator=g)


def test_a_compiled_forward_sees_each_steps_weights():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    step = fxla.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.5), _ce)
    fast = fxla.compile(model)
    g, x_eval = torch.Generator().manual_seed(1), torch.randn(2, 4)
    for _ in range(4):
        version = model.weight._version
        step(*_batch(g))
        assert model.weight._version > version           # as eager's in-place update bumps it
        with torch.no_grad():
            torch.testing.assert_close(fast(x_eval), model(x_eval), rtol=1e-5, atol=1e-6)


def test_steps_alternating_with_a_compiled_forward_and_an_eager_optimizer_match_eager():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.l, self.bn, self.o = nn.Linear(4, 8, bias=False), nn.BatchNorm1d(8), nn.Linear(8, 3)

        def forward(self, x):
            return self.o(torch.relu(self.bn(self.l(x))))

    torch.manual_seed(0)
    ref = Net()
    model = copy.deepcopy(ref)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step, fast = fxla.compile_step(model, opt, _ce), fxla.compile(model)
    g = torch.Generator().manual_seed(2)
    for i in range(6):
        x, y = _batch(g)
        opt_ref.zero_grad()
        _ce(ref, x, y).backward()
        opt_ref.step()
        if i % 2 == 0:
            step(x, y)
        else:
            opt.zero_grad()
            F.cross_entropy(fast(x), y).backward()
            opt.step()
    for (name, a), b in zip(ref.state_dict().items(), model.state_dict().values()):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6, msg=name)


def test_parameters_moved_between_groups_in_place_take_their_new_groups_options():
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 3), nn.Linear(4, 3)

        def forward(self, x):
            return self.a(x) + self.b(x)

    torch.manual_seed(0)
    ref = Two()
    model = copy.deepcopy(ref)

    def make(m):
        return torch.optim.SGD([{"params": list(m.a.parameters()), "lr": 0.5},
                                {"params": list(m.b.parameters()), "lr": 0.0}], lr=0.1)

    opt, opt_ref = make(model), make(ref)
    step = fxla.compile_step(model, opt, _ce)
    g = torch.Generator().manual_seed(1)
    for i in range(4):
        x, y = _batch(g)
        if i == 2:                  # the same lists, the same lengths: the heads swap roles
            for o, m in ((opt, model), (opt_ref, ref)):
                o.param_groups[0]["params"][:] = list(m.b.parameters())
                o.param_groups[1]["params"][:] = list(m.a.parameters())
        opt_ref.zero_grad()
        _ce(ref, x, y).backward()
        opt_ref.step()
        step(x, y)
    for (name, a), b in zip(ref.state_dict().items(), model.state_dict().values()):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6, msg=name)


def test_a_pre_step_hook_changing_the_trained_weights_is_refused():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = fxla.compile_step(model, opt, _ce)
    x, y = _batch(torch.Generator().manual_seed(1))
    step(x, y)
    handle = opt.register_step_pre_hook(lambda o, args, kwargs: o.param_groups[0].update(lr=0.05))
    step(x, y)                      # (a hook changing the learning rate only is fine)
    handle.remove()

    def shrink(o, args, kwargs):
        with torch.no_grad():
            model.bias.mul_(0.5)

    opt.register_step_pre_hook(shrink)
    with pytest.raises(StepError, match=r"pre-step hook changed the trained parameter bias(.|\n)*fix: change the "):
        step(x, y)


def test_a_batch_input_that_requires_grad_is_refused():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    step = fxla.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1), _ce)
    x, y = _batch(torch.Generator().manual_seed(1))
    with pytest.raises(StepError, match=r"batch argument 'x' requires grad(.|\n)*fix: pass it detached"):
        step(x.requires_grad_(), y)
    step(x.detach(), y)


def test_a_step_called_under_an_ambient_autocast_is_refused():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    step = fxla.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1), _ce)
    x, y = _batch(torch.Generator().manual_seed(1))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with pytest.raises(fxla.AutocastError):
            step(x, y)


def test_a_torch_compiled_model_is_refused_with_the_module_to_pass():
    model = nn.Linear(4, 3)
    with pytest.raises(StepError, match=r"torch.compile'd model(.|\n)*fix: pass the module itself"):
        fxla.compile_step(torch.compile(model), torch.optim.SGD(model.parameters(), lr=0.1), _ce)


def test_a_class_weighted_loss_module_in_the_loss_closure_trains_as_eager():
    torch.manual_seed(0)
    ref = nn.Linear(4, 3)
    model = copy.deepcopy(ref)
    weight = torch.tensor([1.0, 2.0, 3.0])
    criterion = nn.CrossEntropyLoss(weight=weight)          # (its weight is a buffer)

    def loss_fn(m, x, y):
        return criterion(m(x), y)

    opt_ref, opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (ref, model))
    step = fxla.compile_step(model, opt, loss_fn)
    g = torch.Generator().manual_seed(3)
    for i in range(3):
        x, y = _batch(g)
        if i == 2:
            weight.mul_(0.5)                                # (changed in place between steps: seen)
        opt_ref.zero_grad()
        want = loss_fn(ref, x, y)
        want.backward()
        opt_ref.step()
        torch.testing.assert_close(step(x, y), want.detach())
    torch.testing.assert_close(model.weight, ref.weight)
    # a module with trainable parameters outside the model is still refused, saying where it can go
    other = nn.Linear(3, 3)
    step = fxla.compile_step(model, opt, lambda m, x, y: F.cross_entropy(other(m(x)), y))
    with pytest.raises(fxla.TraceError, match=r"not a submodule(.|\n)*fxla.compile_step: an attribute of the model"):
        step(*_batch(g))


def test_amsgrad_switched_on_mid_training_is_refused_as_eager_fails():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    step = fxla.compile_step(model, opt, _ce)
    g = torch.Generator().manual_seed(1)
    step(*_batch(g))
    opt.param_groups[0]["amsgrad"] = True
    with pytest.raises(StepError, match=r"has no 'max_exp_avg_sq' although it has stepped(.|\n)*KeyError"):
        step(*_batch(g))
    ref = copy.deepcopy(model)
    ref_opt = torch.optim.Adam(ref.parameters(), lr=0.01)
    ref_opt.zero_grad()
    _ce(ref, *_batch(g)).backward()
    ref_opt.step()
    ref_opt.param_groups[0]["amsgrad"] = True
    _ce(ref, *_batch(g)).backward()
    with pytest.raises(KeyError):             # (what eager does)
        ref_opt.step()
