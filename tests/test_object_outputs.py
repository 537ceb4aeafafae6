"""Objects among a program's outputs (issue 18, class 9; fxla.frontend.object_outputs): a plain Python object
whose attributes hold traced tensors -- a Hugging Face ``DynamicCache``, a user's own state class -- comes back
from a compiled call as an object of its class (fresh per call, every other attribute kept), and from a loaded
artifact as a dict of its tensors by attribute path."""
import os
import sys

import pytest
import torch
import torch.nn as nn

import fxla
from fxla.frontend import TraceError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.append(ROOT)


class Layer:
    def __init__(self, keys, values):
        self.keys, self.values, self.ready = keys, values, True


class State:
    def __init__(self, layers, step):
        self.layers, self.step, self.note, self.extra = layers, step, None, {"scale": 2.0}

    def total(self):
        return sum(layer.keys.sum() + layer.values.sum() for layer in self.layers)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        h = self.a(x)
        state = State([Layer(h, h * 2), Layer(self.b(h), torch.zeros(2, 4))], step=3)
        return h.relu(), {"state": state}


def test_an_object_output_comes_back_as_its_class():
    torch.manual_seed(0)
    model, x = Model(), torch.randn(2, 4)
    want = model(x)
    compiled = fxla.compile(model)
    got, again = compiled(x), compiled(x)
    torch.testing.assert_close(got[0], want[0])
    state, expected = got[1]["state"], want[1]["state"]
    assert type(state) is State and [type(layer) for layer in state.layers] == [Layer, Layer]
    assert (state.step, state.note, state.extra) == (3, None, {"scale": 2.0})
    assert all(layer.ready is True for layer in state.layers)
    for have, ref in zip(state.layers, expected.layers):
        torch.testing.assert_close(have.keys, ref.keys)
        torch.testing.assert_close(have.values, ref.values)
    torch.testing.assert_close(state.total(), expected.total())     # its methods work
    assert again[1]["state"] is not state and again[1]["state"].layers[0] is not state.layers[0]


def test_an_object_output_is_a_dict_by_attribute_path_after_export(tmp_path):
    torch.manual_seed(0)
    model, x = Model(), torch.randn(2, 4)
    want = model(x)[1]["state"]
    fxla.export(model, (x,), tmp_path / "m")
    state = fxla.load(tmp_path / "m")(x)[1]["state"]
    assert list(state) == ["layers.0.keys", "layers.0.values", "layers.1.keys", "layers.1.values"]
    torch.testing.assert_close(state["layers.1.keys"], want.layers[1].keys)
    torch.testing.assert_close(state["layers.0.values"], want.layers[0].values)


class Slotted:
    __slots__ = ("t",)

    def __init__(self, t):
        self.t = t


def test_an_object_with_slots_is_refused():
    with pytest.raises(TraceError, match="cannot be a graph output: cannot record an argument of type Slotted"):
        fxla.compile(lambda x: Slotted(x + 1))(torch.ones(2))


@pytest.mark.slow
@pytest.mark.parametrize("route", ["compile", "export"])
def test_hugging_face_kv_cache_output(route):
    """GPT-2 called with ``use_cache`` at its default returns a ``DynamicCache`` (zoo model hf_gpt2_cache)."""
    from utils.zoo import BY_NAME
    from utils.zoo.harness import eager_reference, run_route
    entry = BY_NAME["hf_gpt2_cache"]
    want, note = eager_reference(entry)
    assert note is None, note
    result = run_route(entry, route, want, timing=False)
    assert result.status == "ok", result.message
    if route == "compile":
        case = entry.build()
        with torch.no_grad():
            cache = fxla.compile(case.model, concrete_shapes=True)(*case.args, **case.kwargs).past_key_values
        assert type(cache).__name__ == "DynamicCache"
        assert cache.get_seq_length() == case.args[0].shape[1]
