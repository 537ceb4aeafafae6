"""Daily-use papercuts (issue 20, item 5): device spellings, models and tensors on the meta device, long values
in messages, misspelt sharding names, warnings from fxla's own code paths."""
import collections
import inspect
import warnings

import jax
import pytest
import torch

import fxla
from fxla.base.shown import abbreviate
from fxla.runtime import resolve_device
from fxla.runtime.devices import DeviceError


def _line_of(fragment: str) -> int:
    """The line of this file that holds ``fragment``."""
    lines = inspect.getsource(inspect.getmodule(_line_of)).splitlines()
    return next(i for i, text in enumerate(lines, 1) if fragment in text and "_line_of" not in text)


# -- devices -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spelling", [torch.device("cuda", 0), "CUDA:0", "Cuda"])
def test_more_cuda_spellings_mean_gpu(spelling):
    if any(d.platform == "gpu" for d in jax.devices()):
        assert resolve_device(spelling).platform == "gpu"
        return
    with pytest.raises(DeviceError, match="no 'gpu' device is available"):
        resolve_device(spelling)


@pytest.mark.parametrize("spelling", ["mps", torch.device("meta"), "xpu:0"])
def test_a_device_jax_does_not_have_says_which_ones_it_has(spelling):
    with pytest.raises(DeviceError) as info:
        fxla.compile(torch.nn.Linear(2, 2), device=spelling)
    platforms = sorted({d.platform for d in jax.devices()})
    assert "device is available" in str(info.value) and str(platforms) in info.value.fix


# -- the meta device ---------------------------------------------------------------------------------------------
def test_a_model_built_under_the_meta_device_context_is_refused():
    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())
    for build in (lambda: fxla.compile(model), lambda: fxla.export(model, (torch.randn(2, 3),), "/nonexistent/m")):
        with pytest.raises(fxla.OptionError) as info:
            build()
        text = str(info.value)
        assert text.startswith("cannot compile a Sequential") and "0.weight, 0.bias" in text
        assert "to_empty" in info.value.fix and "load_state_dict" in info.value.fix


def test_a_meta_tensor_a_function_closes_over_is_refused_at_its_line():
    weight = torch.empty(3, 3, device="meta")

    def project(x):
        return x @ weight       # reads a meta tensor

    with pytest.raises(fxla.OptionError) as info:
        fxla.compile(project)(torch.randn(2, 3))
    err = info.value
    assert "project reads tensor(s) on the meta device" in err.what
    assert err.where.file == __file__ and err.where.line == _line_of("return x @ weight")
    assert "no data" in err.why and "torch.empty_like" in err.fix


def test_torch_compile_of_a_meta_model_is_an_fxla_error():
    with torch.device("meta"):
        model = torch.nn.Linear(3, 3)
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(model, backend="fxla")(torch.empty(2, 3, device="meta"))
    text = str(info.value)
    assert "OptionError: torch.compile(backend='fxla') got graph inputs on the meta device" in text
    assert "parameters_weight" in text and "to_empty(device='cpu')" in text
    assert "NotImplementedError" not in text


# -- long values in messages -------------------------------------------------------------------------------------
def test_abbreviate():
    assert abbreviate(list(range(10000))) == "[0, 1, 2, 3, 4, 5, ... 9994 more]"
    assert abbreviate(tuple(range(3))) == "(0, 1, 2)" and abbreviate((1,)) == "(1,)"
    assert abbreviate({"a": [1, [2, [3, [4]]]]}) == "{'a': [1, [2, [...]]]}"
    assert abbreviate(collections.OrderedDict(a=1)) == "OrderedDict({'a': 1})"
    assert abbreviate("x" * 500) == repr("x" * 80) + "... (500 chars)"
    assert abbreviate([torch.zeros(2, 3)] * 100) == "[" + "float32[2, 3], " * 6 + "... 94 more]"
    assert len(abbreviate(object.__new__(type("Long", (), {"__repr__": lambda self: "y" * 999})))) == 80
    assert abbreviate(3, lambda v: "three" if v == 3 else None) == "three"


@pytest.mark.parametrize("call", [
    lambda: fxla.compile(lambda x: x + 1)(list(range(10000))),                            # a call argument
    lambda: fxla.compile(lambda x: x + 1)([float(i) for i in range(10000)]),
    lambda: fxla.compile(lambda x, n: x + n, concrete_args={"n": list(range(10000))})(torch.randn(2)),  # a constant
    lambda: fxla.compile(lambda x, n: x + n, concrete_shapes=True)(torch.randn(2), list(range(10000))),
    lambda: fxla.compile(lambda x: x, output=list(range(10000))),                          # an option
    lambda: fxla.compile(lambda x: x, device=list(range(10000))),
])
def test_a_long_list_is_abbreviated_in_the_message(call):
    with pytest.raises(fxla.FxlaError) as info:
        call()
    text = str(info.value)
    assert len(text) < 1500, text[:3000]
    assert "... 9994 more]" in text


# -- sharding names ----------------------------------------------------------------------------------------------
def test_a_misspelt_mesh_axis_gets_a_suggestion():
    from fxla.runtime.sharding import Mesh, ShardingError, normalize_spec
    mesh = Mesh({"batch": 1})
    with pytest.raises(ShardingError, match=r"unknown mesh axis 'bacth' \(did you mean 'batch'\?\)") as info:
        normalize_spec(("bacth", None), 2, (4, 4), mesh, "input 0")
    assert "['batch']" in info.value.fix
    with pytest.raises(ShardingError) as info:                 # nothing close: no guess
        normalize_spec(("zzz",), 1, (4,), mesh, "input 0")
    assert "did you mean" not in str(info.value)
