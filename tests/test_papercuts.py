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


def test_every_meta_device_check_shares_one_message_with_abbreviated_names():
    """fxla.compile, a traced program's tensors and the torch.compile backend refuse meta tensors through one
    function (fxla.compile.refuse_meta_tensors): one why, one fix, the names abbreviated as abbreviate() does."""
    from fxla.compile import META_FIX, META_WHY, refuse_meta_tensors
    named = [(f"w{i}", torch.empty(1, device="meta")) for i in range(10)] + [("real", torch.zeros(1))]
    with pytest.raises(fxla.OptionError) as info:
        refuse_meta_tensors(named, "these read tensors")
    assert info.value.what == "these read tensors on the meta device: [w0, w1, w2, w3, w4, w5, ... 4 more]"
    assert (info.value.why, info.value.fix) == (META_WHY, META_FIX)
    refuse_meta_tensors(named[-1:], "nothing on meta")                      # no meta tensor: nothing raised

    with torch.device("meta"):
        model = torch.nn.Sequential(*[torch.nn.Linear(2, 2) for _ in range(5)])
    with pytest.raises(fxla.OptionError) as info:
        fxla.compile(model)
    assert info.value.what.endswith("on the meta device: [0.weight, 0.bias, 1.weight, 1.bias, 2.weight, 2.bias, "
                                    "... 4 more]")
    assert info.value.fix == META_FIX
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(model, backend="fxla")(torch.empty(3, 2, device="meta"))
    text = str(info.value)
    assert "got graph inputs on the meta device: [" in text and "... 5 more]" in text
    assert META_WHY in text and META_FIX in text


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
    with pytest.raises(ShardingError, match=r"unknown mesh axis 'bacth'; did you mean 'batch'\?\n") as info:
        normalize_spec(("bacth", None), 2, (4, 4), mesh, "input 0")
    assert "['batch']" in info.value.fix
    with pytest.raises(ShardingError) as info:                 # nothing close: no guess
        normalize_spec(("zzz",), 1, (4,), mesh, "input 0")
    assert "did you mean" not in str(info.value)


# -- warnings ----------------------------------------------------------------------------------------------------
def test_fxla_own_code_paths_warn_nothing(tmp_path):
    """make test printed torch deprecation warnings; those left come from tests that check torch's legacy forms
    on purpose (filtered in pyproject.toml).  fxla's own paths -- compile, torch.compile, export/load -- warn
    nothing."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(inplace=True), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 6 * 6, 5))
    x = torch.randn(2, 3, 8, 8)
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fast = fxla.compile(model)
        fast(x), fast(x)
        torch.compile(model, backend="fxla")(x)
        fxla.export(model, (x,), tmp_path / "m")
        fxla.load(tmp_path / "m")(x)


# -- the functional stage ----------------------------------------------------------------------------------------
def _functional_targets(model, x):
    from fxla.frontend.passes import prepare_graph
    prepared = prepare_graph(fxla.symbolic_trace(model), (x.clone(),))
    assert prepared.functionalized
    return [n.target for n in prepared.graph_module.graph.nodes]


def test_relu_inplace_leaves_no_type_as_in_the_functional_graph():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(inplace=True), torch.nn.Conv2d(4, 4, 3),
                                torch.nn.ReLU(inplace=True), torch.nn.Dropout(0.5, inplace=True)).train()
    x = torch.randn(1, 3, 8, 8)
    assert "type_as" not in _functional_targets(model, x)
    model.eval()
    torch.testing.assert_close(fxla.compile(model)(x), model(x))

    class Functional(torch.nn.Module):
        def forward(self, x):                       # an input written in place, then a half-precision one
            x = torch.nn.functional.relu(x, inplace=True)
            return x, torch.nn.functional.leaky_relu(x.half() + 1, 0.1, inplace=True)

    x = torch.randn(2, 3)
    assert "type_as" not in _functional_targets(Functional(), x)
    eager_input, fxla_input = x.clone(), x.clone()
    want, got = Functional()(eager_input), fxla.compile(Functional())(fxla_input)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(fxla_input, eager_input)          # the input is written back


def test_an_inplace_op_that_may_promote_keeps_its_cast():
    class AddInPlace(torch.nn.Module):
        def forward(self, x, y):
            return x.relu().add_(y)                 # a float16 tensor plus a float32 one stays float16

    x, y = torch.randn(2, 3).half(), torch.randn(2, 3)
    from fxla.frontend.passes import prepare_graph
    prepared = prepare_graph(fxla.symbolic_trace(AddInPlace()), (x, y))
    assert "type_as" in [n.target for n in prepared.graph_module.graph.nodes]
    torch.testing.assert_close(fxla.compile(AddInPlace())(x, y), AddInPlace()(x, y))


# -- the API reference -------------------------------------------------------------------------------------------
def test_the_api_reference_covers_testing_attributes_and_stages():
    from fxla.tools import apidoc
    text = apidoc.render_markdown()
    assert "## fxla.testing — FileCheck cases for lowering rules" in text
    for name in ("case", "t", "print_fxla", "op_name", "CaseError", "failures"):
        assert f"### `fxla.testing.{name}`" in text
    compiled = text[text.index("### `fxla.CompiledModule`"):text.index("### `fxla.Stages`")]
    assert "* **`graph_module`**: `Optional[GraphModule]` — the traced program" in compiled
    assert "* **`device`**: `Any` — the `jax.Device`" in compiled
    stages = text[text.index("### `fxla.Stages`"):]
    stages = stages[:stages.index("\n### ")]
    for field in ("graph", "code", "fxla", "stablehlo", "stablehlo_debug", "program", "prepared"):
        assert f"* **`{field}`**" in stages
    if hasattr(fxla.Stages, "hlo"):
        assert "* **`hlo`** (property)" in stages


def test_class_attributes_reads_annotations_and_their_comments():
    from fxla.tools.apidoc import class_attributes

    class Declared:
        plain: int          # an end-of-line comment
        #: a comment above,
        #: on two lines
        commented: "Optional[str]" = None   # (not this one)
        text: str = "a#b"
        _private: int = 0

    assert list(class_attributes(Declared)) == [("plain", "int", "an end-of-line comment"),
                                                ("commented", "Optional[str]", "a comment above, on two lines"),
                                                ("text", "str", "")]
