"""fxla.compile(model, concrete_shapes=True) re-traces per input signature; a shape-specialised GraphModule
refuses inputs of other shapes instead of silently computing with the traced ones."""
from __future__ import annotations

import jax.numpy as jnp
import pytest
import torch

import fxla
from zoo import hf


class ShapeBranch(torch.nn.Module):
    """Branches on and computes with the batch size: not traceable shape-agnostically."""

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(3.0))

    def forward(self, x, offset: float = 0.0):
        b = x.shape[0]
        y = x.reshape(b, -1).sum(1) if b > 1 else x.sum()
        return y * self.scale + offset


def test_specialised_graph_module_refuses_other_shapes():
    gm = fxla.symbolic_trace(ShapeBranch(), example_inputs=(torch.randn(2, 3, 4),))
    fast = fxla.compile(gm)
    x = torch.randn(2, 3, 4)
    torch.testing.assert_close(fast(x), ShapeBranch()(x).detach())
    for run in (fast, gm):                                   # compiled, and the GraphModule run eagerly
        with pytest.raises(fxla.SpecializationError) as info:
            run(torch.randn(4, 3, 4))                        # would silently reshape(2, -1)
        text = str(info.value)
        assert "traced with concrete shapes for inputs (x=float32[2, 3, 4])" in text
        assert "cannot run on (x=float32[4, 3, 4])" in text
        assert "fix:" in text and "concrete_shapes=True" in text
    with pytest.raises(fxla.SpecializationError, match=r"\(x=float32\[2, 3, 4\]\).*\(x=float16\[2, 3, 4\]\)"):
        gm(torch.randn(2, 3, 4).half())
    torch.testing.assert_close(gm(x=x), ShapeBranch()(x).detach())   # keywords are checked (and pass) too
    assert fxla.compile(gm)(jnp.asarray(x.numpy())).shape == (2,)     # jax arrays are described like tensors


def test_concrete_shapes_traces_per_signature():
    model = ShapeBranch()
    fast = fxla.compile(model, concrete_shapes=True)
    assert fast.graph_module is None and fast.cache_size == 0
    for b in (2, 4, 1, 4, 2):
        x = torch.randn(b, 3, 4)
        torch.testing.assert_close(fast(x), model(x).detach())
    assert fast.cache_size == 3
    torch.testing.assert_close(fast(torch.ones(2, 3, 4), offset=1.5), model(torch.ones(2, 3, 4), 1.5).detach())
    assert fast.cache_size == 4                              # a keyword given: its own trace
    stages = fast.lower(torch.randn(5, 3, 4))
    assert "tensor<5x12xf32>" in stages.fxla and "fxla.reshape" in stages.fxla


def test_concrete_shapes_share_parameters():
    model = ShapeBranch()
    fast = fxla.compile(model, concrete_shapes=True)
    fast(torch.randn(2, 3))
    fast(torch.randn(3, 3))
    modules = list(fast._per_shape.compiled.values())
    assert len(modules) == 2 and modules[0]._params is modules[1]._params is fast._params
    assert [n for n, _ in fast._params] == ["scale"]


def test_each_trace_reads_its_own_constants():
    """Two signatures' traces make constants with the same name and other values (``torch.full(..., n)`` with
    ``n`` a size, ``torch.arange(seq)``): each program reads its own, never the other trace's (this was a wrong
    answer: the device copy of the first trace's ``_tensor_constant0`` served both)."""
    def fn(x, y):
        return x + torch.full((3,), float(y.shape[0])), torch.arange(y.shape[0]) * 2

    compiled = fxla.compile(fn, concrete_shapes=True)
    x = torch.zeros(3)
    for n in (2, 5, 2, 3):
        y = torch.zeros(n)
        for got, want in zip(compiled(x, y), fn(x, y)):
            torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_a_list_of_numbers_argument_can_be_iterated():
    """``sum(x)`` / ``for v in x`` over a Python list argument: its elements are the trace's constants (this was
    a raw AttributeError in the tracer's iteration)."""
    def fn(t, xs):
        return t * sum(xs) + torch.stack([t * v for v in xs]).sum(0)

    compiled = fxla.compile(fn, concrete_shapes=True)
    t = torch.ones(2)
    for xs in ([1, 2, 3], [0.5, 4]):
        torch.testing.assert_close(compiled(t, xs), fn(t, xs))


def test_concrete_shapes_rejects_bad_calls_and_options():
    fast = fxla.compile(ShapeBranch(), concrete_shapes=True)
    with pytest.raises(TypeError, match="ShapeBranch"):
        fast(torch.randn(2), 1.0, 2.0)
    with pytest.raises(fxla.OptionError, match="tracer="):
        fxla.compile(ShapeBranch(), concrete_shapes=True, tracer=fxla.Tracer())


@pytest.mark.skipif(hf.transformers is None, reason="transformers is not installed")
def test_hugging_face_model_compiles_directly():
    model, inputs = hf.gpt2()
    model.eval()
    fixed = hf.fixed_kwargs(model)
    fast = fxla.compile(model, concrete_shapes=True, concrete_args=fixed)
    for ids in (inputs["input_ids"], inputs["input_ids"][:, :5]):
        with torch.no_grad():
            want = model(input_ids=ids, **fixed).last_hidden_state
        got = fast(input_ids=ids)["last_hidden_state"]
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert fast.cache_size == 2


class _Flags(torch.nn.Module):
    def forward(self, x, use_cache=True, scale=1.0, mode="add"):
        if use_cache:                              # branches on Python arguments: each value is its own trace
            x = x * scale
        return x + scale if mode == "add" else x - scale


def test_python_arguments_are_constants_of_their_trace():
    """A plain Python value given as an argument (``use_cache=False``: issue 18, class 13) is specialised: its
    trace sees the value, and another value is another signature."""
    model, x = _Flags(), torch.randn(3)
    compiled = fxla.compile(model, concrete_shapes=True)
    calls = [((), dict(use_cache=False)), ((), dict(use_cache=True, scale=2.0)), ((False, 3.0, "sub"), {}),
             ((), dict(use_cache=False)), ((), {})]
    for args, kwargs in calls:
        torch.testing.assert_close(compiled(x, *args, **kwargs), model(x, *args, **kwargs))
    assert compiled.cache_size == 4
    module, values = compiled._per_shape.module_for((x,), dict(use_cache=False, scale=2.0))
    assert len(values) == 1 and values[0] is x
    assert [n.op for n in module.graph_module.graph.nodes].count("placeholder") == 1


def test_a_namedtuple_argument_and_its_plain_fields():
    """A namedtuple argument's number is a constant of its trace (a RecursionError before); another value is another
    signature."""
    import collections
    Config = collections.namedtuple("Config", "beta")

    class Scaled(torch.nn.Module):
        def forward(self, x, cfg):
            return x * cfg.beta

    model, x = Scaled(), torch.randn(3)
    fast = fxla.compile(model, concrete_shapes=True)
    for beta in (1.5, 2.5, 1.5):
        torch.testing.assert_close(fast(x, Config(beta)), model(x, Config(beta)))


@pytest.mark.parametrize("options", [{}, {"concrete_shapes": True}], ids=["default", "concrete_shapes"])
def test_deciding_from_requires_grad_is_a_clear_error(options):
    class Branches(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = torch.nn.Linear(4, 4)

        def forward(self, x):
            h = self.l(x)
            return h * 2 if h.requires_grad else h * 3

    with pytest.raises(fxla.TraceError, match=r"`.requires_grad` of a traced tensor(.|\n)*test_compile_concrete"
                                              r"(.|\n)*fix: branch on torch.is_grad_enabled\(\)"):
        fxla.compile(Branches(), **options)(torch.randn(2, 4))


@pytest.mark.parametrize("options", [{}, {"concrete_shapes": True}], ids=["default", "concrete_shapes"])
def test_a_parameters_requires_grad_is_read_and_watched(options):
    """``self.pos.requires_grad`` of a parameter is its flag (timm's CrossViT reads one): a trace per flag."""
    class Flags(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pos, self.l = torch.nn.Parameter(torch.randn(4)), torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.l(x) + self.pos if self.pos.requires_grad else self.l(x) - self.pos

    model, x = Flags(), torch.randn(2, 4)
    fast = fxla.compile(model, **options)
    for flag in (True, False, True):
        model.pos.requires_grad_(flag)
        torch.testing.assert_close(fast(x), model(x))
