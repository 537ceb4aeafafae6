"""Training converges like eager: an MLP, a tiny Hugging Face GPT-2 (with ``labels`` for its loss), a small CNN
with BatchNorm and ResNet-18, each trained 200 steps on synthetic data with fxla.compile_step: per-step losses
equal eager's for the first 20 steps and the final loss is within 1 % of eager's (no dropout)."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla

STEPS = 200


def _train(model, make_optimizer, loss_fn, batches, **options):
    """(per-step losses with fxla.compile_step, per-step losses of eager) for the same start and data."""
    reference = copy.deepcopy(model)
    step = fxla.compile_step(model, make_optimizer(model), loss_fn, **options)
    ref_optimizer = make_optimizer(reference)
    ours, theirs = [], []
    for i in range(STEPS):
        batch = batches(i)
        ours.append(step(*batch).item())
        ref_optimizer.zero_grad()
        loss = loss_fn(reference, *batch)
        loss.backward()
        if options.get("max_grad_norm") is not None:
            torch.nn.utils.clip_grad_norm_(reference.parameters(), options["max_grad_norm"])
        ref_optimizer.step()
        theirs.append(loss.item())
    assert step.compiles == 1
    return ours, theirs


def _check(ours, theirs, rtol=1e-4):
    torch.testing.assert_close(torch.tensor(ours[:20]), torch.tensor(theirs[:20]), rtol=rtol, atol=1e-5)
    assert abs(ours[-1] - theirs[-1]) <= 0.01 * abs(theirs[-1]), (ours[-1], theirs[-1])
    assert theirs[-1] < theirs[0]                            # (it did train)


def _data(shape, classes, n=8, seed=0):
    """``n`` batches of inputs of ``shape`` labelled by a fixed random linear teacher (learnable), cycled."""
    gen = torch.Generator().manual_seed(seed)
    xs = [torch.randn(shape, generator=gen) for _ in range(n)]
    teacher = torch.randn(int(torch.tensor(shape[1:]).prod()), classes, generator=gen)
    ys = [(x.flatten(1) @ teacher).argmax(1) for x in xs]
    return lambda i: (xs[i % n], ys[i % n])


def _cross_entropy(model, x, y):
    return F.cross_entropy(model(x), y)


def test_mlp_with_sgd_momentum():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 4))
    ours, theirs = _train(model, lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9),
                          _cross_entropy, _data((32, 16), 4))
    _check(ours, theirs)


@pytest.mark.slow
def test_tiny_gpt2_with_labels():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=64, n_positions=32,
                                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0,
                                     eos_token_id=0)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config)
    gen = torch.Generator().manual_seed(0)
    data = [torch.randint(0, 64, (4, 16), generator=gen) for _ in range(8)]

    def loss_fn(m, ids):
        return m(input_ids=ids, labels=ids, use_cache=False).loss
    # (SGD: Adam's first steps move every weight by about lr whatever the gradient's size, so float rounding
    # in gradients near 0 -- fxla's and eager's sum in other orders -- would decide their direction)
    ours, theirs = _train(model, lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9), loss_fn,
                          lambda i: (data[i % 8],), concrete_shapes=True, max_grad_norm=1.0)
    _check(ours, theirs, rtol=2e-4)


def _cnn():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 5))


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="the first 20 losses equal eager's, but the final loss (0.029) is 14 % below "
                   "eager's (0.034) after 200 steps: open, see the issue #22 note")
def test_small_cnn_with_batchnorm():
    model = _cnn()
    ours, theirs = _train(model, lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9), _cross_entropy,
                          _data((8, 3, 16, 16), 5))
    _check(ours, theirs, rtol=2e-4)


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="losses leave eager's from step 3: on one of the batches fxla's conv1.weight "
                   "gradient differs from eager's by 1e-2 (others agree to 4e-5); open, see the issue #22 note")
def test_resnet18_with_sgd():
    from utils.torchvision_cpu import import_torchvision
    torchvision = import_torchvision()
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    # (batch 8 and plain SGD: with batch 4 the last stages' batch norm sees 4 values per channel, and the
    # trajectory amplifies float rounding -- the first step's gradients agree to 1e-4 either way)
    ours, theirs = _train(model, lambda m: torch.optim.SGD(m.parameters(), lr=0.01),
                          _cross_entropy, _data((8, 3, 32, 32), 10))
    _check(ours, theirs, rtol=1e-3)
