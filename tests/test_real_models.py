"""Real models compile through fxla and match eager: every tensor output at rtol 1e-4 (float32).

The models are the zoo's (tests/zoo: hand-built ResNet-18/50, MobileNetV2, ViT, UNet, DLRM, TCN, TinyGPT and
small offline Hugging Face configs with random weights), traced with ``concrete_shapes``
(``symbolic_trace(model, example_inputs=...)``) and compiled with ``fxla.compile``.  ``docs/ops.md`` lists
them (``fxla.lowering.coverage_doc.REAL_MODELS``); the table must name exactly the models tested here.
"""
import copy

import pytest
import torch
from torch.utils import _pytree as pytree

import fxla
from fxla.frontend import symbolic_trace
from fxla.lowering.coverage_doc import REAL_MODELS
from zoo import BY_NAME, hf

pytestmark = pytest.mark.slow

NAMES = [name for name, _ in REAL_MODELS]
RTOL = ATOL = 1e-4


def _leaves(out):
    if isinstance(out, dict):
        out = dict(out)                   # a ModelOutput
    return [x for x in pytree.tree_leaves(out) if isinstance(x, torch.Tensor)]


@pytest.mark.parametrize("name", NAMES)
def test_real_model_compiles_and_matches_eager(name):
    entry = BY_NAME[name]
    if entry.hf and hf.transformers is None:
        pytest.skip("transformers is not installed")
    model, inputs = entry.build()
    fixed = hf.fixed_kwargs(model) if entry.hf else {}
    with torch.no_grad():
        want = model(**inputs, **fixed) if isinstance(inputs, dict) else model(*copy.deepcopy(inputs))
    gm = symbolic_trace(model, example_inputs=inputs, concrete_args=fixed)
    compiled = fxla.compile(gm)
    got = compiled(**inputs) if isinstance(inputs, dict) else compiled(*copy.deepcopy(inputs))
    got, want = _leaves(got), _leaves(want)
    assert len(got) == len(want) and want, (len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, (i, g.dtype, w.dtype, g.shape, w.shape)
        scale = max(1.0, w.abs().max().item()) if w.is_floating_point() and w.numel() else 1.0
        torch.testing.assert_close(g, w, rtol=RTOL, atol=ATOL * scale, msg=lambda m: f"output {i}: {m}")


def test_real_models_table_is_the_zoo():
    assert len(set(NAMES)) == len(NAMES)
    assert all(name in BY_NAME for name in NAMES)
