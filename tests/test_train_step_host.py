"""fxla.compile_step's per-step host work: what a step keeps between calls (the batch's device buffers, the
device arrays of the optimizer's scalars, each parameter's optimizer group) is reused only while it is provably
current, so every step still reads the model, the batch and the optimizer as they are now."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla

from test_train_step import TOL, assert_same_state, eager_step, mlp, mse


def test_scalars_are_placed_once_per_distinct_value():
    """The update's scalars (learning rate, momentum, ...) go to the device as one pack per distinct content: a
    step whose hyperparameters did not change places nothing, a scheduler's new rate places a new pack."""
    model, reference = mlp(), mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 2, 0.5)
    ref_scheduler = torch.optim.lr_scheduler.StepLR(ref_optimizer, 2, 0.5)
    step = fxla.compile_step(model, optimizer, mse)
    x, y = torch.randn(6, 8), torch.randn(6, 4)
    uploads = []
    for _ in range(6):
        torch.testing.assert_close(step(x, y), eager_step(reference, ref_optimizer, mse, (x, y)).detach(), **TOL)
        uploads.append(step.pack_uploads)
        scheduler.step()
        ref_scheduler.step()
    # steps 1 and 2 (first momentum step, then later ones) at lr 0.1; 3-4 at 0.05; 5-6 at 0.025
    assert uploads == [1, 2, 3, 3, 4, 4]
    assert_same_state(model, reference, optimizer, ref_optimizer)


def test_an_optimizer_loading_a_state_dict_mid_training_is_read_anew():
    """``optimizer.load_state_dict`` replaces the group dicts (with the checkpoint's learning rate): the next step
    reads the new ones."""
    model, reference = mlp(), mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    step = fxla.compile_step(model, optimizer, mse)
    x, y = torch.randn(6, 8), torch.randn(6, 4)
    for _ in range(2):
        step(x, y), eager_step(reference, ref_optimizer, mse, (x, y))
    saved = copy.deepcopy(optimizer.state_dict())
    saved["param_groups"][0]["lr"] = 0.5
    optimizer.load_state_dict(copy.deepcopy(saved))
    ref_optimizer.load_state_dict(copy.deepcopy(saved))
    for _ in range(2):
        torch.testing.assert_close(step(x, y), eager_step(reference, ref_optimizer, mse, (x, y)).detach(), **TOL)
    assert_same_state(model, reference, optimizer, ref_optimizer)
    assert step.compiles == 1                   # (same parameters, same rules: the program still applies)


def test_a_group_added_mid_training_is_trained():
    """``add_param_group`` with a parameter the step held frozen: the next step trains it too."""
    model, reference = mlp(), mlp()
    optimizer = torch.optim.Adam(model[2].parameters(), lr=1e-2)
    ref_optimizer = torch.optim.Adam(reference[2].parameters(), lr=1e-2)
    step = fxla.compile_step(model, optimizer, mse)
    x, y = torch.randn(6, 8), torch.randn(6, 4)
    for _ in range(2):
        step(x, y), eager_step(reference, ref_optimizer, mse, (x, y))
    optimizer.add_param_group({"params": list(model[0].parameters()), "lr": 5e-3})
    ref_optimizer.add_param_group({"params": list(reference[0].parameters()), "lr": 5e-3})
    for _ in range(2):
        torch.testing.assert_close(step(x, y), eager_step(reference, ref_optimizer, mse, (x, y)).detach(), **TOL)
    assert_same_state(model, reference, optimizer, ref_optimizer)


def test_requires_grad_switched_between_steps_is_seen():
    model, reference = mlp(), mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    step = fxla.compile_step(model, optimizer, mse)
    x, y = torch.randn(6, 8), torch.randn(6, 4)
    for frozen in (False, True, True, False):
        for m in (model, reference):
            m[0].weight.requires_grad_(not frozen)
        torch.testing.assert_close(step(x, y), eager_step(reference, ref_optimizer, mse, (x, y)).detach(), **TOL)
    assert_same_state(model, reference, optimizer, ref_optimizer)
    assert step.compiles == 2


def test_a_batch_changed_in_place_between_steps_is_read_anew():
    """The batch's device buffers are kept while the same tensors come back; they alias the tensors' memory, so
    a change in place (through torch or through a numpy view, which torch does not count) is read."""
    model, reference = mlp(), mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    step = fxla.compile_step(model, optimizer, mse)
    x, y = torch.randn(6, 8), torch.randn(6, 4)
    changes = [lambda: None, lambda: x.mul_(2.0), lambda: x.numpy().__setitem__(slice(None), 0.5),
               lambda: y.data.add_(1.0)]
    for change in changes:
        change()
        torch.testing.assert_close(step(x, y), eager_step(reference, ref_optimizer, mse, (x, y)).detach(), **TOL)
    assert_same_state(model, reference, optimizer, ref_optimizer)


def test_labels_out_of_range_are_refused_and_ignore_index_passes():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    reference = copy.deepcopy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)

    def loss_fn(m, x, y):
        return F.cross_entropy(m(x), y)
    step = fxla.compile_step(model, optimizer, loss_fn)
    x = torch.randn(5, 4)
    for labels in ([0, 1, 2, 1, 0], [0, -100, 2, -100, 1]):
        y = torch.tensor(labels)
        torch.testing.assert_close(step(x, y), eager_step(reference, ref_optimizer, loss_fn, (x, y)).detach(),
                                   **TOL)
    y = torch.tensor([0, 1, 2, 1, 0])
    step(x, y)
    before = [p.detach().clone() for p in model.parameters()]
    y[2] = 3                                    # (the same tensor, changed in place: checked again)
    with pytest.raises(fxla.IndexOutOfRangeError, match="holds 3"):
        step(x, y)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))    # (refused before it ran)


def test_a_pre_hook_changing_the_learning_rate_is_seen():
    """The optimizer's step pre-hooks run before the scalars are computed, as eager's run before its update."""
    model, reference = mlp(), mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)

    def halve(opt, args, kwargs):
        for group in opt.param_groups:
            group["lr"] *= 0.5
    optimizer.register_step_pre_hook(halve)
    ref_optimizer.register_step_pre_hook(halve)
    step = fxla.compile_step(model, optimizer, mse)
    x, y = torch.randn(6, 8), torch.randn(6, 4)
    for _ in range(3):
        torch.testing.assert_close(step(x, y), eager_step(reference, ref_optimizer, mse, (x, y)).detach(), **TOL)
    assert_same_state(model, reference, optimizer, ref_optimizer)
