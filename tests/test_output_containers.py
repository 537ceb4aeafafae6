"""Output containers keep their type through tracing, codegen, save/load, compile and export: named tuples,
and the dict subclasses torch's pytree flattens (OrderedDict, defaultdict, Hugging Face ModelOutput); other
dict subclasses become plain dicts."""
from __future__ import annotations

import collections
import json

import pytest
import torch

import fxla
from fxla.frontend import SerializationError, load, save, symbolic_trace
from fxla.frontend.node import build_dict, empty_dict_like
from support import tiny_gpt2  # noqa: E402  (tests/ is on sys.path)


class Ordered(torch.nn.Module):
    def forward(self, x):
        return collections.OrderedDict(b=x * 2, a=x + 1)


class Plain(dict):                       # a dict subclass torch's pytree does not know
    pass


class Unknown(torch.nn.Module):
    def forward(self, x):
        out = Plain()
        out["y"] = x - 1
        return out


def test_ordered_dict_output_is_kept_by_the_graph_code_and_interpreter():
    gm = symbolic_trace(Ordered())
    assert "return _fx_build_dict(_fx_OrderedDict, {'b': mul, 'a': add})" in gm.code
    assert "return OrderedDict({'b': %mul, 'a': %add})" in str(gm.graph)
    x = torch.arange(3.0)
    out = gm(x)
    assert type(out) is collections.OrderedDict and list(out) == ["b", "a"]
    torch.testing.assert_close(out["a"], x + 1)
    from fxla.frontend import Interpreter
    assert type(Interpreter(gm).run(x)) is collections.OrderedDict


def test_ordered_dict_output_through_compile_and_export(tmp_path):
    x = torch.arange(3.0)
    out = fxla.compile(Ordered())(x)
    assert type(out) is collections.OrderedDict and list(out) == ["b", "a"]
    torch.testing.assert_close(out["b"], x * 2)
    fxla.export(Ordered(), (x,), tmp_path / "art")
    loaded = fxla.load(tmp_path / "art")(x)
    assert type(loaded) is collections.OrderedDict and list(loaded) == ["b", "a"]


def test_saved_graph_records_the_dict_type_and_loads_it_back(tmp_path):
    save(symbolic_trace(Ordered()), tmp_path / "m")
    assert '"type": "collections:OrderedDict"' in (tmp_path / "m" / "graph.json").read_text()
    out = load(tmp_path / "m")(torch.ones(2))
    assert type(out) is collections.OrderedDict


@pytest.mark.parametrize("name, why", [
    ("fxla_not_imported_module:Foo", "which is not imported; import fxla_not_imported_module before loading it"),
    ("os:PathLike", "is not a dict subclass torch's pytree flattens"),
], ids=["module not imported", "not a registered dict"])
def test_loading_an_unresolvable_dict_type_is_a_serialization_error(tmp_path, name, why):
    save(symbolic_trace(Ordered()), tmp_path / "m")
    path = tmp_path / "m" / "graph.json"
    text = path.read_text().replace('"collections:OrderedDict"', json.dumps(name))
    path.write_text(text)
    with pytest.raises(SerializationError) as info:
        load(tmp_path / "m")
    assert why in str(info.value), str(info.value)


def test_unregistered_dict_subclass_becomes_a_plain_dict():
    gm = symbolic_trace(Unknown())
    out = gm(torch.ones(2))
    assert type(out) is dict and list(out) == ["y"]
    assert type(fxla.compile(Unknown())(torch.ones(2))) is dict


def test_named_tuple_and_defaultdict_outputs():
    Pair = collections.namedtuple("Pair", "lo hi")

    def f(x):
        d = collections.defaultdict(list)
        d["s"] = x.sum()
        return Pair(x.min(), x.max()), d
    pair, d = fxla.compile(f)(torch.tensor([3.0, -1.0, 2.0]))
    assert type(pair) is Pair and pair.lo.item() == -1.0 and pair.hi.item() == 3.0
    assert type(d) is collections.defaultdict and d["s"].item() == 4.0


def test_empty_dict_like_and_build_dict():
    assert type(empty_dict_like({"a": 1})) is dict
    assert type(empty_dict_like(collections.OrderedDict(a=1))) is collections.OrderedDict
    assert empty_dict_like(collections.defaultdict(int)).default_factory is int
    assert type(empty_dict_like(Plain(a=1))) is dict
    built = build_dict(collections.OrderedDict, {"x": 1, "y": 2})
    assert type(built) is collections.OrderedDict and list(built.items()) == [("x", 1), ("y", 2)]


@pytest.mark.slow
def test_hf_model_output_attributes_work_on_compiled_calls():
    model, ids = tiny_gpt2()
    fast = fxla.compile(model, concrete_shapes=True, concrete_args={"use_cache": False})
    with torch.no_grad():
        got, want = fast(ids), model(ids, use_cache=False)
        assert type(got) is type(want) and list(got) == list(want) == ["logits"]
        torch.testing.assert_close(got.logits, want.logits, rtol=1e-4, atol=1e-4)
        got, want = fast(ids, labels=ids), model(ids, labels=ids, use_cache=False)
        assert list(got) == list(want) == ["loss", "logits"]
        torch.testing.assert_close(got.loss, want.loss, rtol=1e-4, atol=1e-4)


def test_artifacts_hold_built_in_containers_only(tmp_path):
    Pair = collections.namedtuple("Pair", "a b")

    def f(x):
        return Pair(x + 1, x * 2), x.max(0), collections.OrderedDict(s=x.sum())
    x = torch.ones(2, 3)
    fxla.export(f, (x,), tmp_path / "art")
    pair, top, od = fxla.load(tmp_path / "art")(x)
    assert type(pair) is tuple and type(top) is tuple and type(od) is collections.OrderedDict
    torch.testing.assert_close(pair[1], x * 2)
    torch.testing.assert_close(top[1], torch.zeros(3, dtype=torch.int64))
    compiled = fxla.compile(f)(x)
    assert type(compiled[0]) is Pair and type(compiled[1]) is torch.return_types.max


@pytest.mark.slow
def test_hf_artifact_loads_as_a_dict_in_a_process_without_transformers(tmp_path):
    import subprocess
    import sys
    model, ids = tiny_gpt2(head=False)
    gm = fxla.symbolic_trace(model, example_inputs={"input_ids": ids}, concrete_args={"use_cache": False})
    fxla.export(gm, (ids,), tmp_path / "art")
    torch.save(ids, tmp_path / "ids.pt")
    code = ("import sys, torch, fxla; out = fxla.load(sys.argv[1])(torch.load(sys.argv[2])); "
            "print(type(out).__name__, list(out), 'transformers' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "art"), str(tmp_path / "ids.pt")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["dict", "['last_hidden_state']", "False"]


def test_export_with_a_named_tuple_input_is_an_artifact_error(tmp_path):
    Pair = collections.namedtuple("Pair", "a b")
    with pytest.raises(fxla.ArtifactError, match=r"(?s)cannot export a program whose inputs have the structure.*"
                                                 r"fix: pass the inputs as tensors in tuples, lists or dicts"):
        fxla.export(lambda p: p.a + p.b, (Pair(torch.ones(2), torch.ones(2)),), tmp_path / "art")


class Sizes(torch.nn.Module):
    def forward(self, x):
        return x * 2, x.shape, {"s": [x.size(), x.shape[1:]], "n": x.size(0)}


def _assert_sizes(out, x):
    torch.testing.assert_close(out[0], x * 2)
    assert type(out[1]) is torch.Size and out[1] == x.shape
    assert [type(s) for s in out[2]["s"]] == [torch.Size, torch.Size]
    assert out[2]["s"] == [x.shape, x.shape[1:]] and out[2]["n"] == x.shape[0]


@pytest.mark.parametrize("route", ["compile", "concrete_shapes", "dynamic", "backend"])
def test_torch_size_outputs_stay_torch_sizes(route):
    """torch's pytree unflattens a torch.Size as a tuple; a compiled call returns eager's torch.Size."""
    model = Sizes()
    compiled = {"compile": lambda: fxla.compile(model), "dynamic": lambda: fxla.compile(model, dynamic=True),
                "concrete_shapes": lambda: fxla.compile(model, concrete_shapes=True),
                "backend": lambda: torch.compile(model, backend="fxla", dynamic=False)}[route]()
    for shape in [(2, 3), (4, 5)]:
        x = torch.randn(shape)
        _assert_sizes(compiled(x), x)
    _assert_sizes(model(x), x)               # (eager, the reference)


def test_torch_size_outputs_through_export_and_as_jax_function(tmp_path):
    x = torch.randn(2, 3)
    fxla.export(Sizes(), (x,), tmp_path / "art")
    assert json.loads((tmp_path / "art" / "metadata.json").read_text())["output_spec"]["tuple"][1] == \
        {"size": [None, None]}
    _assert_sizes(fxla.load(tmp_path / "art")(x), x)



def test_a_jax_function_returns_sizes_as_tuples_under_jit_and_vmap():
    """A JAX function returns JAX pytrees: jax.jit and jax.vmap take a tuple of numbers, not a torch.Size."""
    import jax
    import jax.numpy as jnp
    f = fxla.compile(Sizes()).as_jax_function(torch.randn(2, 3))
    for out in (f(jnp.ones((2, 3))), jax.jit(f)(jnp.ones((2, 3)))):
        assert type(out[1]) is tuple and tuple(int(n) for n in out[1]) == (2, 3)
        assert [type(s) for s in out[2]["s"]] == [tuple, tuple]
    assert jax.vmap(f)(jnp.ones((4, 2, 3)))[0].shape == (4, 2, 3)


@pytest.mark.parametrize("edit,why", [
    (lambda m: m["output_spec"]["tuple"].__setitem__(1, {"size": [{"tuple": [None]}, None]}),
     "'size' structure entry holds more than numbers"),
    (lambda m: m["output_static"].__setitem__(1, 10 ** 30), "'size' output holds 1000000000000000000000000000000"),
    (lambda m: m["output_static"].__setitem__(1, -1), "'size' output holds -1, not a size"),
    (lambda m: m["output_static"].__setitem__(2, "3"), "'size' output holds 3, not a size"),
    (lambda m: m["output_static"].__setitem__(2, True), "'size' output holds True, not a size"),
    (lambda m: m.__setitem__("input_spec", {"size": [None]}), "unknown container 'size'"),
    (lambda m: m["output_static"].__setitem__(1, None), "an output leaf is null"),
])
def test_a_size_output_that_is_not_a_size_is_an_artifact_error(tmp_path, edit, why):
    x = torch.randn(2, 3)
    fxla.export(Sizes(), (x,), tmp_path / "art")
    path = tmp_path / "art" / "metadata.json"
    meta = json.loads(path.read_text())
    assert meta["output_static"][1:3] == [2, 3]
    edit(meta)
    path.write_text(json.dumps(meta))
    with pytest.raises(fxla.ArtifactError, match=why):
        fxla.load(tmp_path / "art")


class SizeAttributes(torch.nn.Module):
    def forward(self, x):
        self.last = x.shape
        self.both = (x.shape, x.shape[0], None)
        return x * 2


@pytest.mark.parametrize("options", [{}, {"concrete_shapes": True}, {"dynamic": True}])
def test_a_torch_size_assigned_to_an_attribute_stays_a_torch_size(options):
    model = SizeAttributes()
    compiled = fxla.compile(model, **options)
    for shape in [(2, 3), (4, 5)]:
        compiled(torch.randn(shape))
        assert type(model.last) is torch.Size and model.last == shape
        assert type(model.both[0]) is torch.Size and model.both[1:] == (shape[0], None)


def test_an_exported_torch_size_attribute_loads_as_one(tmp_path):
    """(fxla.export wrote such an attribute as a list, which fxla.load refused)"""
    x = torch.randn(2, 3)
    fxla.export(SizeAttributes(), (x,), tmp_path / "art")
    loaded = fxla.load(tmp_path / "art")
    loaded(x)
    assert loaded.attributes == {"last": torch.Size([2, 3]), "both": (torch.Size([2, 3]), 2, None)}
    assert type(loaded.attributes["last"]) is torch.Size and type(loaded.attributes["both"][0]) is torch.Size
