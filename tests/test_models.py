"""End to end: the demo models compile through every stage and match eager PyTorch."""
import pytest
import torch

import fxla
import models

FACTORIES = [models.mlp, models.small_cnn, models.encoder_block]


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.__name__)
def test_model_matches_eager(factory):
    model, inputs = factory()
    fast = fxla.compile(model)
    got = fast(*inputs)
    with torch.no_grad():
        want = model(*inputs)
    assert isinstance(got, torch.Tensor) and got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.__name__)
def test_every_stage_is_printed_and_fully_converted(factory):
    model, inputs = factory()
    stages = fxla.compile(model).lower(*inputs)
    assert "call_module" in stages.graph and "placeholder" in stages.graph
    assert "def forward(self" in stages.code
    assert "= fxla.linear " in stages.fxla and "func.func @main" in stages.fxla
    assert "stablehlo.dot_general" in stages.stablehlo
    assert "fxla." not in stages.stablehlo


def test_new_batch_size_recompiles_and_still_matches():
    model, (x,) = models.mlp()
    fast = fxla.compile(model)
    for batch in (8, 3, 8):
        xb = torch.randn(batch, x.shape[1])
        with torch.no_grad():
            torch.testing.assert_close(fast(xb), model(xb), rtol=1e-4, atol=1e-5)
    assert fast.cache_size == 2


def test_cnn_in_bfloat16():
    model, (x,) = models.small_cnn()
    model = model.to(torch.bfloat16)
    x = x.to(torch.bfloat16)
    got = fxla.compile(model)(x)
    with torch.no_grad():
        want = model(x)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want.float(), rtol=5e-2, atol=5e-2)


def test_graph_module_code_runs_like_the_model():
    model, inputs = models.encoder_block()
    gm = fxla.compile(model).graph_module
    with torch.no_grad():
        torch.testing.assert_close(gm(*inputs), model(*inputs))
