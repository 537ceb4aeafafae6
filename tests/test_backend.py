"""torch.compile(model, backend="fxla"): dynamo's FX graphs compiled by fxla."""
import pytest
import torch
import torch._dynamo

import models
from fxla.backend import graph_module_from_fx
from support import tiny_gpt2


pytestmark = pytest.mark.usefixtures("fresh_dynamo")      # (tests/conftest.py)


def test_backend_is_registered_by_entry_point():
    assert "fxla" in torch._dynamo.list_backends()


@pytest.mark.parametrize("factory", [models.mlp, models.encoder_block], ids=lambda f: f.__name__)
def test_models_match_eager(factory):
    model, inputs = factory()
    compiled = torch.compile(model, backend="fxla")
    with torch.no_grad():
        torch.testing.assert_close(compiled(*inputs), model(*inputs), rtol=1e-4, atol=1e-5)


def test_graph_breaks_are_left_to_dynamo():
    calls = []

    def fn(x):
        y = torch.relu(x) * 2
        if y.sum() > 0:          # data-dependent: dynamo breaks the graph here and runs the branch in Python
            calls.append("positive")
            return torch.tanh(y) + 1
        return y - 1

    compiled = torch.compile(fn, backend="fxla")
    x = torch.randn(4, 5).abs()
    torch.testing.assert_close(compiled(x), fn(x))
    torch.testing.assert_close(compiled(-x), fn(-x))
    assert "positive" in calls


def test_unsupported_op_is_an_error_not_a_silent_fallback():
    def fn(x):
        return torch.special.bessel_j0(x) + torch.special.i0e(x)

    with pytest.raises(Exception, match="fxla cannot lower 2 ops"):
        torch.compile(fn, backend="fxla")(torch.randn(3))


def test_conversion_keeps_targets_and_names():
    model, (x,) = models.small_cnn()
    fx_gm = torch.fx.symbolic_trace(model)
    gm = graph_module_from_fx(fx_gm)
    ours = [(n.op, n.target, n.name) for n in gm.graph.nodes]
    theirs = [(n.op, n.target, n.name) for n in fx_gm.graph.nodes]
    assert ours == theirs
    with torch.no_grad():
        torch.testing.assert_close(gm(x), model(x))


def test_input_mutation_in_a_dynamo_graph_is_written_back():
    def fn(x, y):
        x += y                   # dynamo hands fxla a graph that mutates its input
        x[:, 0] = 0
        return x.relu().sum(1)

    x, y = torch.randn(3, 4), torch.randn(4)
    xe = x.clone()
    want = fn(xe, y)
    torch.testing.assert_close(torch.compile(fn, backend="fxla")(x, y), want)
    torch.testing.assert_close(x, xe)


def test_buffer_mutation_in_a_dynamo_graph_updates_the_module():
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("steps", torch.zeros(()))
            self.lin = torch.nn.Linear(3, 3)

        def forward(self, x):
            self.steps += 1
            return self.lin(x) * self.steps

    model, eager = Counter(), Counter()
    eager.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend="fxla")
    for _ in range(3):
        x = torch.randn(2, 3)
        torch.testing.assert_close(compiled(x), eager(x))
    assert model.steps.item() == eager.steps.item() == 3


@pytest.mark.slow
def test_hf_generate_with_a_kv_cache_through_the_backend_matches_eager():
    """use_cache=True: the DynamicCache starts from torch.tensor([]) and torch.cat skips 1-D empty inputs."""
    model, ids = tiny_gpt2(layers=2)
    from transformers import GenerationConfig
    greedy = GenerationConfig(max_new_tokens=4, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        want = model.generate(ids, generation_config=greedy)
        eager_logits = model(ids).logits
        model.forward = torch.compile(model.forward, backend="fxla")
        torch.testing.assert_close(model(ids).logits, eager_logits, rtol=1e-4, atol=1e-4)
        assert model.generate(ids, generation_config=greedy).tolist() == want.tolist()


def test_operator_methods_dynamo_records_are_lowered_as_the_operators():
    # HF's masking code calls mask.__and__(other): dynamo records call_method __and__
    def f(x, m):
        return (x > 0).__and__(m), (x > 1).__or__(m), (x > 2).__xor__(m), m.__invert__()
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="fxla")
    x, m = torch.randn(6), torch.tensor([True, False, True, True, False, False])
    for got, want in zip(compiled(x, m), f(x, m)):
        assert torch.equal(got, want)


def test_a_misspelt_option_gets_a_suggestion():
    """torch.compile(..., options={...}) with a misspelt key: the closest option named (base/suggest.py), every
    unknown key listed, no guess for a key close to nothing."""
    from fxla.compile import OptionError

    def unwrap(err):           # dynamo's BackendCompilerFailed keeps the backend's error as inner_exception
        return getattr(err, "inner_exception", err)

    with pytest.raises(Exception) as info:
        torch.compile(torch.nn.ReLU(), backend="fxla", options={"devcie": "cpu"})(torch.randn(2))
    err = unwrap(info.value)
    assert isinstance(err, OptionError)
    assert err.what == "torch.compile(backend='fxla') got unknown option 'devcie'; did you mean 'device'?"
    assert err.fix.startswith("pass only device, max_signatures, dump_dir")
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(torch.nn.ReLU(), backend="fxla", options={"max_sigs": 2, "zzz": 1})(torch.randn(2))
    assert unwrap(info.value).what == ("torch.compile(backend='fxla') got unknown options 'max_sigs', 'zzz'; did you "
                                       "mean 'max_signatures' for 'max_sigs'?")
