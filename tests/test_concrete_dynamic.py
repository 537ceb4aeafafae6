"""``fxla.compile(model, concrete_shapes=True, dynamic=...)`` (issue #21, item 1): models that branch on shapes
(Hugging Face's) are traced once with symbolic sizes, their Python's decisions about sizes kept as guards checked
per call, and lowered once into a polymorphic program (api/per_shape.py, frontend/concrete.py)."""
from __future__ import annotations

import copy

import pytest
import torch

import fxla
from fxla import per_shape
from support import marker_line, relu_static_only
from zoo import hf


class SizeBranch(torch.nn.Module):
    """Reads its sizes as Python values, branches on one and returns one."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 16)

    def forward(self, x):
        b, s, _ = x.shape
        if s > 20:                                                  # size branch
            y = self.lin(x * 2).view(b, s, 4, 4)
        else:
            y = self.lin(x).view(b, s, 4, 4)
        return y.sum(-1) + torch.arange(s)[None, :, None], s * 2


class IntOfSize(torch.nn.Module):
    def forward(self, x):
        n = int(x.shape[1])                                         # int of a size
        return x * n


@pytest.fixture
def traces(monkeypatch):
    """How many traces the concrete_shapes modules made."""
    made = []

    def counting(*args, **kwargs):
        made.append(kwargs.get("symbols"))
        return trace(*args, **kwargs)
    trace = per_shape.symbolic_trace
    monkeypatch.setattr(per_shape, "symbolic_trace", counting)
    return made


def _members(fast):
    return [m for entry in fast._per_shape.compiled.values() for m in per_shape.modules_of(entry)]


def test_one_trace_for_every_size_and_a_new_one_past_a_branch(traces):
    model = SizeBranch()
    fast = fxla.compile(model, concrete_shapes=True, dynamic=True)
    with torch.no_grad():
        for s in (10, 17, 5, 20):
            x = torch.randn(3, s, 8)
            out, n = fast(x)
            ref, m = model(x)
            torch.testing.assert_close(out, ref)
            assert n == m == 2 * s
        assert len(traces) == 1 and traces[0] is not None       # (symbolic sizes)
        assert [m._dynamic.lowerings for m in _members(fast)] == [1]
        assert fast.cache_size == 4                               # (one XLA executable per size)
        for s in (21, 40):                                        # the other branch: traced again, once
            x = torch.randn(3, s, 8)
            torch.testing.assert_close(fast(x)[0], model(x)[0])
        assert len(traces) == 2 and len(_members(fast)) == 2
        x = torch.randn(3, 7, 8)                                  # (the first trace still serves its sizes)
        torch.testing.assert_close(fast(x)[0], model(x)[0])
    assert len(traces) == 2


def test_a_named_dim_names_the_branch_it_breaks():
    model = SizeBranch()
    fast = fxla.compile(model, concrete_shapes=True, dynamic={"x": {1: fxla.Dim("seq")}})
    with torch.no_grad():
        for s in (10, 13):
            x = torch.randn(3, s, 8)
            torch.testing.assert_close(fast(x)[0], model(x)[0])
        with pytest.raises(fxla.ShapeConstraintError) as info:
            fast(torch.randn(3, 30, 8))
    text = str(info.value)
    assert "the sizes of this call (seq = 30) break the constraint seq <= 20" in text
    assert f"{__file__}:{marker_line(__file__, 'size branch')}" in text
    assert "the model's Python decided something from the sizes while tracing" in text


def test_a_size_read_as_a_number():
    """``int(size)`` fixes the dim: a named Dim says where; dynamic=True traces each size (still right)."""
    with pytest.raises(fxla.ShapeConstraintError, match=r"Dim 'seq' cannot stay symbolic: the model's Python reads "
                                                        r"it as the number 6") as info:
        fxla.compile(IntOfSize(), concrete_shapes=True, dynamic={"x": {1: fxla.Dim("seq")}})(torch.randn(2, 6))
    assert f"{__file__}:{marker_line(__file__, 'int of a size')}" in str(info.value)
    fast = fxla.compile(IntOfSize(), concrete_shapes=True, dynamic=True)
    for s in (6, 9, 6):
        x = torch.randn(2, s)
        torch.testing.assert_close(fast(x), x * s)
    assert len(_members(fast)) == 2


class LabelledRows(torch.nn.Module):
    """Decides values from the data: a label check and the labelled rows (``x[mask]``: a data-dependent count)."""

    def forward(self, x, labels):
        if labels.max() >= x.shape[-1]:
            raise ValueError("a label out of range")
        rows = x[labels >= 0]
        return torch.nn.functional.cross_entropy(rows, labels[labels >= 0]), rows.shape[0]


def test_data_dependent_values_are_decided_with_symbolic_sizes(traces):
    """Value guards (docs/tracing.md) with symbolic sizes: the count of labelled rows is decided from the call's
    data and checked per call by a guard program, which is polymorphic too; another count traces again."""
    model = LabelledRows()
    fast = fxla.compile(model, concrete_shapes=True, dynamic={"x": {0: fxla.Dim("b")}, "labels": {0: fxla.Dim("b")}})
    fast.recompile_budget = 32                                  # (a model and a guard program per size)
    torch.manual_seed(0)
    for b, k in ((4, 2), (6, 2), (6, 3), (8, 2), (9, 3)):
        x, labels = torch.randn(b, 5), torch.randint(0, 5, (b,))
        labels[k:] = -1
        loss, n = fast(x, labels)
        expected, m = model(x, labels)
        torch.testing.assert_close(loss, expected)
        assert n == m == k
    assert len(traces) == 2                                     # (one per count of labelled rows)
    (variants,) = fast._per_shape.compiled.values()
    assert [item.checker._dynamic.lowerings for item in variants.items] == [1, 1]
    with pytest.raises(ValueError, match="a label out of range"):
        fast(torch.randn(4, 5), torch.tensor([0, 7, -1, -1]))


@pytest.mark.parametrize("name", ["gpt2", "bert", "llama", "t5"])
def test_hugging_face_models_trace_once(name, traces):
    """An attention mask with padding, three sequence lengths and two batch sizes: one trace, one lowering."""
    torch.manual_seed(0)
    model, inputs = hf.HF_MODELS[name]()
    model.eval()
    fixed = hf.fixed_kwargs(model)
    fast = fxla.compile(model, concrete_shapes=True, dynamic=True)
    for batch, seq in ((2, 8), (2, 13), (3, 21)):
        given = {k: torch.randint(0, hf.VOCAB, (batch, seq + v.shape[1] - 8)) for k, v in inputs.items()}
        given.update({k: torch.zeros_like(given[k]) for k in ("token_type_ids",) if k in given})
        given["attention_mask"] = torch.ones_like(given["input_ids"])
        given["attention_mask"][0, :3] = 0
        with torch.no_grad():
            out, ref = fast(**given, **fixed), model(**given, **fixed)
        torch.testing.assert_close(out.last_hidden_state, ref.last_hidden_state, rtol=1e-4, atol=1e-5)
    assert len(traces) == 1
    assert [m._dynamic.lowerings for m in _members(fast)] == [1]


def test_hugging_face_polymorphic_export(tmp_path):
    model, _ = hf.HF_MODELS["gpt2"]()
    model.eval()
    seq = fxla.Dim("seq", max=64)
    ids = torch.randint(0, hf.VOCAB, (2, 7))
    path = str(tmp_path / "gpt2")
    meta = fxla.export(model, (ids, None, torch.ones_like(ids)), path, concrete_shapes=True,
                       dynamic_shapes={"input_ids": {1: seq}, "attention_mask": {1: seq}})
    assert meta["symbolic"]["dims"] == [{"name": "seq", "min": 2, "max": 64, "multiple_of": 1,
                                         "uses": [[0, 1], [1, 1]]}]
    loaded = fxla.load(path)
    for s in (3, 12, 64):
        ids = torch.randint(0, hf.VOCAB, (2, s))
        mask = torch.ones_like(ids)
        mask[1, :2] = 0
        with torch.no_grad():
            ref = model(input_ids=ids, attention_mask=mask)
        torch.testing.assert_close(loaded(ids, None, mask)["last_hidden_state"], ref.last_hidden_state,
                                   rtol=1e-4, atol=1e-5)
    with pytest.raises(fxla.ShapeConstraintError, match=r"Dim 'seq' = 65 is outside \[2, 64\]"):
        loaded(torch.zeros(2, 65, dtype=torch.long), None, torch.ones(2, 65, dtype=torch.long))


def test_hugging_face_training_step_over_lengths(traces):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=64, n_positions=32, resid_pdrop=0.0,
                                     embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    model = transformers.GPT2LMHeadModel(config)
    eager = copy.deepcopy(model)
    opt, eager_opt = (torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (model, eager))

    def loss_fn(m, ids):
        return m(input_ids=ids, labels=ids, use_cache=False).loss
    step = fxla.compile_step(model, opt, loss_fn, concrete_shapes=True, dynamic={"ids": {1: fxla.Dim("seq")}})
    gen = torch.Generator().manual_seed(0)
    for seq in (8, 13, 8, 21):
        ids = torch.randint(0, 64, (2, seq), generator=gen)
        loss = step(ids)
        eager_opt.zero_grad()
        expected = loss_fn(eager, ids)
        expected.backward()
        eager_opt.step()
        torch.testing.assert_close(loss, expected.detach(), rtol=2e-4, atol=1e-5)
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=2e-4, atol=2e-5, msg=name)
    assert len(traces) == 1


class _Branch(SizeBranch):
    def forward(self, x):
        return super().forward(x)[0]


def test_an_export_stores_the_branch_it_took_as_a_constraint(tmp_path):
    model = _Branch()
    path = str(tmp_path / "branch")
    meta = fxla.export(model, (torch.randn(2, 10, 8),), path, concrete_shapes=True,
                       dynamic_shapes={"x": {1: fxla.Dim("seq")}})
    assert meta["symbolic"]["guards"] == [{"expr": {"op": "le", "args": [{"dim": "seq"}, 20]}, "node": "gt"}]
    loaded = fxla.load(path)
    with torch.no_grad():
        for s in (5, 20):
            x = torch.randn(2, s, 8)
            torch.testing.assert_close(loaded(x), model(x))
    with pytest.raises(fxla.ShapeConstraintError, match=r"\(made by %gt\): seq <= 20"):
        loaded(torch.randn(2, 25, 8))


class _Checked(torch.nn.Module):
    def forward(self, x):
        torch._assert(x.dim() == 3, f"expected 3 dims, got {x.shape}")                  # formatted
        return x * 2


def test_a_formatted_size_is_read_as_its_number(traces):
    """Text made from a size could steer anything after it, so formatting a symbolic size decides it as a number,
    as int() does (torchvision's ViT formats its shapes in assert messages): a named Dim says where; with
    dynamic=True each size gets its trace, and the text is eager's."""
    with pytest.raises(fxla.ShapeConstraintError, match=r"Dim 'b' cannot stay symbolic: the model's Python reads it "
                                                        r"as the number 2") as info:
        fxla.compile(_Checked(), concrete_shapes=True, dynamic={"x": {0: fxla.Dim("b")}})(torch.randn(2, 5, 4))
    assert f"{__file__}:{marker_line(__file__, 'formatted')}" in str(info.value)

    def described(x):
        return x + 1, f"shape {x.shape}, length {x.shape[1]:d}"
    fast = fxla.compile(described, concrete_shapes=True, dynamic=True)
    for b, s in ((2, 5), (3, 7), (2, 5)):
        x = torch.randn(b, s)
        out, text = fast(x)
        assert text == described(x)[1]
        torch.testing.assert_close(out, x + 1)
    assert len(traces) == 3


def test_python_arguments_of_another_type_get_their_own_trace():
    def scaled(x, scale):
        return x * scale
    fast = fxla.compile(scaled, concrete_shapes=True, dynamic=True)
    x = torch.arange(12).reshape(3, 4)
    assert fast(x, 2).dtype == torch.int64 and fast(x, 2.0).dtype == torch.float32    # (2 == 2.0 in Python)


def test_the_traced_graph_module_called_directly_takes_the_traced_sizes_alone():
    """The compiled module checks the trace's guards before running it; the GraphModule itself checks none."""
    fast = fxla.compile(SizeBranch(), concrete_shapes=True, dynamic=True)
    x = torch.randn(2, 10, 8)
    gm, _ = fast.trace_for(x)
    torch.testing.assert_close(gm(x)[0], SizeBranch.forward(fast.original, x)[0])
    with pytest.raises(fxla.SpecializationError, match=r"traced with concrete shapes for inputs \(x=float32\[2, 10, "
                                                      r"8\]\) and cannot run on \(x=float32\[2, 30, 8\]\)"):
        gm(torch.randn(2, 30, 8))


def test_a_trace_that_cannot_keep_sizes_symbolic():
    """dynamic=True traces such a model per shape (logged); a named Dim is the trace's error, which says why."""
    def f(x):
        return x * torch.tensor(x.shape[1])                                               # a size as data
    fast = fxla.compile(f, concrete_shapes=True, dynamic=True)
    for s in (3, 5, 3):
        torch.testing.assert_close(fast(torch.ones(2, s)), torch.full((2, s), float(s)))
    assert len(fast._per_shape.static) == 1
    with pytest.raises(fxla.TraceError, match=r"cannot take len\(\) of a symbolic size") as info:
        fxla.compile(f, concrete_shapes=True, dynamic={"x": {1: fxla.Dim("s")}})(torch.ones(2, 4))
    assert f"{__file__}:{marker_line(__file__, 'a size as data')}" in str(info.value)
    assert "fix: make the tensor from a traced value (torch.full((), x.size(1))" in str(info.value)


def test_masked_select_with_symbolic_sizes(traces):
    def f(x):
        return torch.masked_select(x, x > 0.5)
    fast = fxla.compile(f, concrete_shapes=True, dynamic=True)
    torch.manual_seed(0)
    for s in (6, 9):
        x = torch.rand(2, s)
        torch.testing.assert_close(fast(x), f(x))


def test_a_trace_whose_lowering_failed_is_no_variant_whose_guards_later_sizes_break(monkeypatch):
    """Nothing is compiled from a trace whose polymorphic lowering failed: a later size is traced again and meets
    that error, not 'the sizes of this call (n = 7) break the constraint n > 8' of a program that never existed."""
    relu_static_only(monkeypatch)

    def fn(x):
        return torch.relu(x * 2 if x.shape[1] > 8 else x)
    fast = fxla.compile(fn, concrete_shapes=True, dynamic={"x": {1: fxla.Dim("n", max=64)}})
    for n in (10, 7, 11):
        with pytest.raises(fxla.ShapeConstraintError, match="cannot be lowered once for every size of its Dims: "
                                                            "relu: a . size for the test"):
            fast(torch.randn(3, n))
    monkeypatch.undo()                       # (the rule as it is)
    for n in (7, 5):                         # (the failed traces are gone: this branch is traced and lowered afresh)
        x = torch.randn(3, n)
        torch.testing.assert_close(fast(x), fn(x))
