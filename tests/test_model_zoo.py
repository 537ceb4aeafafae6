"""Differential tests on the model zoo (tests/zoo): hand-built ResNet/MobileNet/ViT/UNet/DLRM/TCN/GPT
nets and small offline Hugging Face models (GPT-2, BERT, RoBERTa, DistilBERT, T5, LLaMA, Mistral,
Qwen2, ViT; random weights from configs, no hub).

For every model, each of fxla's default tracer, fxla's ``concrete_shapes`` mode and
``torch.fx.symbolic_trace`` either traces -- and the GraphModule matches eager at rtol 1e-5 -- or
fails with the error the zoo entry (and the table in docs/tracing.md) says.  Where fxla's default
tracer and torch.fx both trace, the graphs must agree node for node.  HF models are traced in
default mode through an adapter with an explicit signature (their forwards are ``*args, **kwargs``
decorator wrappers), in concrete mode directly, keyword inputs and all.
"""
import copy
import operator
import os
import re

import pytest
import torch
import torch.fx
from torch.testing import assert_close

import fxla
from fxla.frontend import (GraphModule, Interpreter, SpecializationError, TensorMeta, TraceError, load,
                           propagate_shapes, save, symbolic_trace)
from zoo import BY_NAME, ZOO, hf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = [e.name for e in ZOO]
TOL = dict(rtol=1e-5, atol=1e-5)


def _entry(name):
    e = BY_NAME[name]
    if e.hf and hf.transformers is None:
        pytest.skip("transformers is not installed")
    return e


def _eager(model, inputs, entry):
    with torch.no_grad():
        if entry.hf:
            return model(**inputs, **hf.fixed_kwargs(model))       # a ModelOutput (fxla's keeps the type)
        return model(*copy.deepcopy(inputs))


def _call(gm, inputs):
    with torch.no_grad():
        return gm(**inputs) if isinstance(inputs, dict) else gm(*copy.deepcopy(inputs))


def _same(actual, expected):
    if isinstance(expected, dict):
        assert type(actual) is type(expected) and list(actual) == list(expected)
        for k in expected:
            _same(actual[k], expected[k])
    elif isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, b in zip(actual, expected):
            _same(a, b)
    else:
        assert_close(actual, expected, **TOL)


def _default_root(model, inputs, entry):
    """What the shape-agnostic tracers see: the model, or for HF an explicit-signature adapter."""
    if entry.hf:
        return hf.adapter(model, list(inputs)), tuple(inputs.values())
    return model, inputs


_FX_INPLACE = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
               operator.itruediv: operator.truediv}
_SHAPE_QUERIES = {"size", "dim", "numel"}
_SHAPE_ATTRS = {"shape", "dtype", "device", "ndim"}


def _shape_nodes(graph):
    """Nodes computing shape information (x.size(), x.shape, ...) and Python arithmetic on it."""
    derived = set()
    for n in graph.nodes:
        if (n.op == "call_method" and n.target in _SHAPE_QUERIES) or (
                n.op == "call_function" and n.target is getattr and n.args[1] in _SHAPE_ATTRS):
            derived.add(n)
        elif n.op == "call_function" and n.target.__module__ in ("_operator", "operator") and n.all_input_nodes \
                and all(i in derived for i in n.all_input_nodes):
            derived.add(n)
    return derived


@pytest.mark.parametrize("name", NAMES)
def test_fxla_default_mode(name):
    entry = _entry(name)
    model, inputs = entry.build()
    root, args = _default_root(model, inputs, entry)
    if entry.fxla_default is not None:
        with pytest.raises(TraceError, match=re.escape(entry.fxla_default)) as info:
            symbolic_trace(root)
        assert "fix:" in str(info.value) and "example_inputs" in str(info.value)  # points at concrete shapes
        return
    gm = symbolic_trace(root)
    gm.graph.lint()
    expected = _eager(model, inputs, entry)
    _same(_call(gm, args), expected)
    _same(Interpreter(gm).run(*copy.deepcopy(args)), expected)


@pytest.mark.parametrize("name", NAMES)
def test_torch_fx_and_node_for_node(name):
    entry = _entry(name)
    model, inputs = entry.build()
    root, args = _default_root(model, inputs, entry)
    if entry.torch_fx is not None:
        with pytest.raises(Exception, match=re.escape(entry.torch_fx)):
            torch.fx.symbolic_trace(copy.deepcopy(root))
        return
    fgm = torch.fx.symbolic_trace(copy.deepcopy(root))
    _same(_call(fgm, args), _eager(model, inputs, entry))
    if entry.fxla_default is None:  # both trace: same nodes, same order, same names
        gm = symbolic_trace(root)
        # torch.fx's Proxy has no __iadd__ (Python falls back to __add__); fxla records operator.iadd
        # (so node names may differ from there on: compare them for modules, inputs and attributes)
        norm = lambda n: (n.op, _FX_INPLACE.get(n.target, n.target),
                          n.name if n.op in ("placeholder", "get_attr", "call_module") else None)
        ours, theirs = [norm(n) for n in gm.graph.nodes], [norm(n) for n in fgm.graph.nodes]
        assert len(ours) == len(theirs) and ours == theirs


@pytest.mark.parametrize("name", NAMES)
def test_fxla_concrete_shapes(name):
    entry = _entry(name)
    model, inputs = entry.build()
    fixed = hf.fixed_kwargs(model) if entry.hf else None
    if entry.fxla_concrete is not None:
        with pytest.raises(TraceError, match=re.escape(entry.fxla_concrete)):
            symbolic_trace(model, example_inputs=inputs, concrete_args=fixed)
        return
    gm = symbolic_trace(model, example_inputs=inputs, concrete_args=fixed)
    gm.graph.lint()
    expected = _eager(model, inputs, entry)
    _same(_call(gm, inputs), expected)
    assert not _shape_nodes(gm.graph), "shape queries must be Python values in concrete_shapes mode"

    # the specialisation is recorded ...
    spec = gm.specialization
    tensors = inputs if entry.hf else dict(zip([n.target for n in gm.graph.find_nodes("placeholder")], inputs))
    assert spec["inputs"] == {k: TensorMeta(tuple(v.shape), v.dtype) for k, v in tensors.items()}
    assert spec["device"] == torch.device("cpu")
    assert set(spec["fixed"]).isdisjoint(tensors) and (entry.hf or spec["fixed"] == {})
    # ... and the shapes seen while tracing are those ShapeProp computes on the result
    traced = {n.name: n.meta.get("tensor_meta") for n in gm.graph.nodes if n.op != "output"}
    propagate_shapes(gm, *(inputs.values() if entry.hf else inputs))
    assert traced == {n.name: n.meta.get("tensor_meta") for n in gm.graph.nodes if n.op != "output"}
    # the generated code is shape-free Python: the default tracer retraces it node for node
    regm = symbolic_trace(gm)
    assert [(n.op, n.target) for n in regm.graph.nodes] == [(n.op, n.target) for n in gm.graph.nodes]


@pytest.mark.parametrize("name", [e.name for e in ZOO if e.fxla_default is None and e.fxla_concrete is None])
def test_concrete_graph_is_default_graph_without_shape_nodes(name):
    """Where both modes trace, concrete_shapes only removes the shape computations (x.size(0),
    x.shape, the int arithmetic on them) and turns shape-built factory calls into constants."""
    entry = _entry(name)
    model, inputs = entry.build()
    root, _ = _default_root(model, inputs, entry)
    default = symbolic_trace(root).graph
    concrete = symbolic_trace(model, example_inputs=inputs).graph
    drop = _shape_nodes(default)
    strip = lambda g, skip=(): [(n.op, n.target) for n in g.nodes
                                if n not in skip and n.op != "placeholder" and not str(n.target).startswith("_tensor_constant")]
    assert strip(default, drop) == strip(concrete)


def test_specialised_graph_is_valid_for_its_shapes_only():
    # tiny_gpt builds its causal mask and positions from idx.size(1): concrete mode bakes them in,
    # and view(b, t, ...) gets the traced batch size
    model, (idx,) = BY_NAME["tiny_gpt"].build()
    gm = symbolic_trace(model, example_inputs=(idx,))
    assert gm.specialization["inputs"] == {"idx": TensorMeta((2, 8), torch.int64)}
    consts = [getattr(gm, n.target) for n in gm.graph.nodes if n.op == "get_attr" and "_tensor_constant" in n.target]
    assert any(c.dtype == torch.bool and c.shape == (8, 8) for c in consts)
    assert "view(2, 8, 2, 16)" in gm.code
    other = torch.randint(0, 100, (2, 8))
    with torch.no_grad():
        assert_close(gm(other), model(other), **TOL)  # same shapes, other values: fine
        with pytest.raises(SpecializationError, match=r"idx=int64\[2, 8\].*idx=int64\[3, 8\]"):
            gm(torch.randint(0, 100, (3, 8)))  # another batch size: retrace


def test_hf_model_output_keeps_its_type_and_its_cache(tmp_path):
    if hf.transformers is None:
        pytest.skip("transformers is not installed")
    model, inputs = BY_NAME["llama"].build()
    gm = symbolic_trace(model, example_inputs=inputs, concrete_args={"use_cache": False})
    out = _call(gm, inputs)
    want = type(_eager(model, inputs, BY_NAME["llama"]))
    assert type(out) is want and list(out) == ["last_hidden_state"]
    assert "_fx_build_dict(_fx_BaseModelOutputWithPast, {'last_hidden_state': " in gm.code
    save(gm, tmp_path / "gm")                                   # saved with its type, loaded back as it
    assert type(_call(load(tmp_path / "gm"), inputs)) is want
    fast = fxla.compile(model, concrete_shapes=True, concrete_args={"use_cache": False})
    with torch.no_grad():
        got = fast(**inputs)
    assert type(got) is want and got.last_hidden_state.shape == out.last_hidden_state.shape
    # use_cache at its default: the output holds a DynamicCache, which a compiled call returns as one
    with torch.no_grad():
        cache = fxla.compile(model, concrete_shapes=True)(**inputs).past_key_values
    assert type(cache).__name__ == "DynamicCache" and cache.get_seq_length() == out.last_hidden_state.shape[1]


@pytest.mark.parametrize("name", ["bert", "llama"])
def test_hf_attention_mask_traces_like_eager(name):
    """masking_utils skips its shortcut on the mask's values (``if padding_mask.all(): mask = None``) when torch
    says it is compiling, as it is while fxla traces (torch.export's non-strict trace sets it too)."""
    if hf.transformers is None:
        pytest.skip("transformers is not installed")
    model, inputs = BY_NAME[name].build()
    for mask in (torch.ones(2, 8, dtype=torch.long), torch.tensor([[1] * 8, [0] * 3 + [1] * 5])):
        given = dict(inputs, attention_mask=mask)
        gm = symbolic_trace(model, example_inputs=given, concrete_args=hf.fixed_kwargs(model))
        _same(_call(gm, given), _eager(model, given, BY_NAME[name]))


def test_docs_table_matches_the_zoo():
    with open(os.path.join(ROOT, "docs", "tracing.md")) as f:
        text = f.read()
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 5 and cells[0].strip("`") in BY_NAME:
            rows[cells[0].strip("`")] = cells
    assert set(rows) == set(BY_NAME), set(BY_NAME) ^ set(rows)
    mark = lambda reason: "yes" if reason is None else "no"
    for e in ZOO:
        _, default, concrete, fx = rows[e.name][:4]
        assert default.startswith(mark(e.fxla_default)), (e.name, default)
        assert concrete.startswith(mark(e.fxla_concrete)), (e.name, concrete)
        assert fx.startswith(mark(e.torch_fx)), (e.name, fx)
