"""Value guards (fxla.frontend.value_guards, issue 18): ``fxla.compile(model, concrete_shapes=True)`` decides
data-dependent values -- ``if t:`` on a tensor, ``int(t)``, ``nonzero``, ``masked_select``, ``x[mask]`` -- from the
call's own data, and checks them before every later call: a call whose data decides otherwise is traced again
(another variant of its signature), so the program never runs on data it was not traced for."""
import logging
import os
import sys

import pytest
import torch

import fxla
from fxla.frontend import TraceError, symbolic_trace
from fxla.frontend.value_guards import guard_graph, guards_of
from fxla.artifact_guards import GuardError
from fxla.runtime.artifact import ArtifactError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.append(ROOT)


def labelled(x, labels):
    if labels.max() >= 10:                                  # (a Hugging Face speech model's label check)
        raise ValueError("label values must be < 10")
    rows = (labels >= 0).nonzero()                          # (DeBERTa-v2's labelled rows)
    if rows.size(0) > 0:
        return x[rows[:, 0]].sum(0) + labels.masked_select(labels > 2).float().sum() + x[labels > 0].sum()
    return x.sum(0)


CALLS = [[1, -1, 3, 4, -1], [1, -1, 3, 4, -1], [2, 0, 3, 7, -1], [-1, -1, -1, -1, -1], [1, -1, 3, 4, -1],
         [1, 5, 30, 4, -1], [4, 4, 4, 4, 4]]


def _run(fn, *args):
    try:
        return fn(*args)
    except ValueError as e:
        return e


def test_data_dependent_values_match_eager_for_every_call(caplog):
    compiled = fxla.compile(labelled, concrete_shapes=True)
    x = torch.randn(5, 3)
    with caplog.at_level(logging.INFO, logger="fxla.compile"):
        for values in CALLS:
            labels = torch.tensor(values)
            want, got = _run(labelled, x, labels), _run(compiled, x, labels)
            if isinstance(want, ValueError):
                assert isinstance(got, ValueError) and str(got) == str(want)
            else:
                torch.testing.assert_close(got, want)
    again = [r.getMessage() for r in caplog.records if "traced again for data-dependent values" in r.getMessage()]
    # [1,-1,3,4,-1] once; [2,0,3,7,-1], [-1]*5, [4]*5 each a new variant; [1,5,30,...] raises while tracing
    assert len(again) == 3, again
    assert "%ge == False" in again[0] and "test_value_guards.py:" in again[0]
    reasons = [r.getMessage().split("why: ")[1] for r in caplog.records if "compiled input signature" in r.getMessage()]
    assert reasons[0].startswith("the guard program of a trace that decided data-dependent values")
    assert reasons[1].startswith("a new input signature whose trace decided data-dependent values")
    assert any(r.startswith("the call's data decided data-dependent values otherwise: a new variant") for r in reasons)
    assert not any("dropped from the in-memory cache" in r for r in reasons)


def test_the_trace_records_fixed_size_ops_and_guards():
    x, labels = torch.randn(5, 3), torch.tensor([1, -1, 3, 4, -1])
    gm = symbolic_trace(labelled, example_inputs=(x, labels), value_guards=True)
    guards = guards_of(gm.graph)
    assert [(g.kind, g.expected) for g in guards] == [("bool", False), ("int", 3), ("int", 2), ("int", 3)]
    targets = {str(n.target) for n in gm.graph.nodes}
    assert not {"nonzero", "masked_select"} & targets and "<built-in method cumsum" in " ".join(targets)
    checks = guard_graph(gm.graph)
    assert [n.op for n in checks.nodes].count("output") == 1
    assert len(checks.output_node.args[0]) == 4 and not any(n.target == "scatter" for n in checks.nodes)
    with pytest.raises(TraceError, match="truth value"):         # without value guards: refused as before
        symbolic_trace(labelled, example_inputs=(x, labels))


def test_values_that_cannot_be_guarded_are_refused():
    def random_branch(x):
        if torch.rand(()) > 0.5:                            # random: the replay is not the program's draw
            return x + 1
        return x

    def float_value(x):
        return x * int(x.sum() * 0 + 2.5)                   # int() of a float: not specialised

    def in_place(x):
        y = x.clone()
        y.add_(1)
        if y.sum() > 0:                                     # replaying would repeat the change
            return x
        return -x

    def changed_after_a_guard(x):
        y = x.clone()
        if y.sum() > 0:
            y.add_(1)
        if y.max() > 1.5:                                   # y's value replayed before the change is stale
            return x
        return -x

    for fn in (random_branch, float_value, in_place, changed_after_a_guard):
        with pytest.raises(TraceError, match="symbolic value"):
            fxla.compile(fn, concrete_shapes=True)(torch.ones(3))


def test_an_artifact_checks_its_guards_per_call(tmp_path):
    """fxla.export writes the guard program beside the program; the loaded module runs it before every call and
    refuses data that decides otherwise (it cannot trace again)."""
    x = torch.randn(5, 3)
    fxla.export(labelled, (x, torch.tensor([1, -1, 3, 4, -1])), tmp_path / "a", concrete_shapes=True)
    assert sorted(os.listdir(tmp_path / "a")) == ["guards.mlirbc", "metadata.json", "program.mlirbc", "weights.bin"]
    loaded = fxla.load(tmp_path / "a")
    for values in ([1, -1, 3, 4, -1], [2, -1, 5, 6, -1]):         # the same decisions: runs
        labels = torch.tensor(values)
        torch.testing.assert_close(loaded(x, labels), labelled(x, labels))
    with pytest.raises(GuardError, match=r"these inputs give %sum_1 = 4, but the artifact was exported for data "
                                         r"where %sum_1 == 3 \(at test_value_guards.py:\d+\)") as info:
        loaded(x, torch.tensor([2, 0, 3, 7, -1]))
    assert "fix:" in str(info.value) and str(ROOT) not in open(tmp_path / "a" / "metadata.json").read()


def test_a_tampered_guard_entry_is_refused_at_load(tmp_path):
    import hashlib
    import json
    fxla.export(labelled, (torch.randn(5, 3), torch.tensor([1, -1, 3, 4, -1])), tmp_path / "a", concrete_shapes=True)
    path = tmp_path / "a" / "metadata.json"
    meta = json.loads(path.read_text())
    meta["guards"][0]["expected"] = "__import__('os')"
    path.write_text(json.dumps(meta))
    with pytest.raises(ArtifactError, match="a guard entry has a bad name, kind, expected value or location"):
        fxla.load(tmp_path / "a")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hf_deberta_v2", "hf_wav2vec2"])
def test_hugging_face_losses_with_data_dependent_labels(name):
    """DeBERTa-v2's classification loss (``(labels >= 0).nonzero()``) and Wav2Vec2's CTC loss (``labels.max() >=
    vocab_size`` and ``labels.masked_select(mask)``) through fxla.compile and export/load (zoo models)."""
    from utils.zoo import BY_NAME
    from utils.zoo.harness import eager_reference, run_route
    want, note = eager_reference(BY_NAME[name])
    assert note is None, note
    for route in ("compile", "export"):
        result = run_route(BY_NAME[name], route, want, timing=False)
        assert result.status == "ok", (route, result.message)


def test_a_training_step_compiles_a_program_per_variant():
    """fxla.compile_step(..., concrete_shapes=True) of a loss with a data-dependent count (the labelled rows):
    a batch whose data decides otherwise runs its own variant's program, matching eager step for step."""
    import copy
    import torch.nn as nn

    def loss_fn(model, x, labels):
        rows = (labels >= 0).nonzero()[:, 0]                 # only the labelled rows count
        return nn.functional.cross_entropy(model(x)[rows], labels[rows])

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    reference = copy.deepcopy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    step = fxla.compile_step(model, optimizer, loss_fn, concrete_shapes=True)
    x = torch.randn(6, 4)
    for labels in ([0, -1, 2, 1, -1, 0], [1, 1, -1, -1, -1, 2], [0, -1, 2, 1, -1, 0], [2, 2, 2, 2, 2, 2]):
        labels = torch.tensor(labels)
        got = step(x, labels)
        ref_optimizer.zero_grad()
        want = loss_fn(reference, x, labels)
        want.backward()
        ref_optimizer.step()
        torch.testing.assert_close(got, want.detach(), rtol=1e-5, atol=1e-6)
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    assert step.compiles == 3                                # one program per variant (4 rows, 2 rows, 6 rows)


def test_as_jax_function_refuses_a_program_specialised_to_data():
    from fxla.runtime.jax_interop import InteropError
    compiled = fxla.compile(labelled, concrete_shapes=True)
    with pytest.raises(InteropError, match="decided data-dependent values") as info:
        compiled.as_jax_function(torch.randn(5, 3), torch.tensor([1, -1, 3, 4, -1]))
    assert "%ge == False" in str(info.value) and "fix:" in str(info.value)


def test_cache_size_counts_every_variant():
    compiled = fxla.compile(labelled, concrete_shapes=True)
    x = torch.randn(5, 3)
    for values in ([1, -1, 3, 4, -1], [2, 0, 3, 7, -1]):
        compiled(x, torch.tensor(values))
    assert compiled.cache_size == 2
