"""fxla.explain and fxla-explain: every problem between a model and compiling, in one report."""
import json
import os
import sys

import pytest
import torch
import torch.nn as nn

import fxla
from fxla.explain import KINDS, Explanation, survey_shapes
from fxla.tools import explain as explain_tool
from support import marker_line

HERE = os.path.abspath(__file__)


def at(marker: str) -> str:
    """The location a row gives for the line of this file marked ``# <marker>``."""
    return f"{os.path.relpath(HERE)}:{marker_line(HERE, marker)}"


class ManyProblems(nn.Module):
    """A branch on a size (concrete shapes get past it), a data-dependent shape, and two ops fxla has no rule
    for, the second after the data-dependent one (the check goes on past it)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        if x.shape[0] > 1:  # size-branch
            x = x * 2
        y = torch.lgamma(self.fc(x))  # unsupported-1
        idx = torch.nonzero(y > 0)  # data-dependent
        z = torch.special.bessel_j0(idx.float())  # unsupported-2
        return y.sum() + z.sum()


class Clean(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x, scale: float):
        return torch.relu(self.fc(x)) * scale


class Untraceable(nn.Module):
    def forward(self, x):
        if x.shape[1] == 8:  # size-branch-2
            x = x + 1
        if torch.rand(()) > 0.5:  # value-branch
            # (random numbers: not decided from the data)
            return x
        return -x


class DataBranch(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-branch
            return x
        return -x


class ViewWrite(nn.Module):
    def forward(self, x):
        y = x.view(-1)
        y.add_(1)  # view-write
        return x * 2, y


def test_every_problem_of_a_model_is_reported():
    model = ManyProblems()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    report = fxla.explain(model, torch.randn(2, 8))
    assert isinstance(report, Explanation)
    assert report.route == "fxla.compile(model, concrete_shapes=True)"
    assert not report.compiles and not report.lowered
    kinds = [p.kind for p in report.problems]
    assert kinds == sorted(kinds, key=KINDS.index)
    (untraceable,) = report.of_kind("untraceable")
    assert untraceable.location == at("size-branch") and not untraceable.blocking
    assert "gets past it" in untraceable.detail and "concrete_shapes=True" in untraceable.fix
    (data,) = report.of_kind("data-dependent shape")
    # decided from the example's data (a value guard): fxla.compile checks it per call, an artifact too
    assert data.location == at("data-dependent") and not data.blocking and "nonzero" in data.detail
    assert "an exported artifact checks it" in data.detail
    unsupported = report.of_kind("unsupported op")
    assert [p.location for p in unsupported] == [at("unsupported-1"), at("unsupported-2")]
    assert "torch.lgamma" in unsupported[0].detail and "bessel_j0" in unsupported[1].detail
    assert len(report.blocking) == 2
    # the signature: the input's shape, and the mode (the model was left in training mode)
    rows = report.of_kind("recompiles")
    assert any("x = float32[2, 8]" in p.detail and "traces and compiles" in p.detail for p in rows)
    assert any("training mode" in p.detail for p in rows)
    # estimated from the graph's size (nothing could be lowered)
    assert report.nodes > 0 and not report.compile_time.measured and "estimated" in report.compile_time.how
    # the model is unchanged
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_the_report_prints_as_a_table():
    text = str(fxla.explain(ManyProblems().eval(), torch.randn(2, 8)))
    lines = text.splitlines()
    assert lines[0] == "fxla.explain(ManyProblems): 2 problems block compiling"
    header = next(line for line in lines if line.startswith("kind"))
    assert [c.strip() for c in header.split("|")] == ["kind", "location", "detail", "fix"]
    for marker in ("size-branch", "data-dependent", "unsupported-1", "unsupported-2"):
        assert f":{marker_line(HERE, marker)}" in text
    assert all(len(line) <= 120 for line in lines[:-2])       # (the summary lines below the table run on)
    assert "compile time:" in lines[-1] and "route: fxla.compile(model, concrete_shapes=True)" in lines[-2]


def test_a_clean_model_compiles_and_says_what_recompiles():
    report = fxla.explain(Clean().eval(), torch.randn(2, 8), 0.5)
    assert report.compiles and report.lowered and not report.compiled
    assert report.route == "fxla.compile(model)"
    assert {p.kind for p in report.problems} == {"recompiles"} and not report.blocking
    number = next(p for p in report.problems if p.detail.startswith("scale = 0.5"))
    assert "each new value compiles" in number.detail and "torch.tensor(0.5)" in number.fix
    assert report.compile_time.measured is False and "lowering" in report.compile_time.how
    assert "StableHLO ops" in report.compile_time.how
    assert str(report).startswith("fxla.explain(Clean): compiles")


def test_compile_true_compiles_and_times_it():
    report = fxla.explain(Clean().eval(), torch.randn(2, 8), scale=0.5, compile=True)
    assert report.compiles and report.compiled
    assert report.compile_time.measured and "XLA compile for cpu" in report.compile_time.how
    assert report.compile_time.seconds > 0
    assert report.to_dict()["compile_time"]["measured"] is True


def test_no_route_traces_it():
    report = fxla.explain(Untraceable(), torch.randn(2, 8))
    assert report.route is None and not report.compiles
    first, second = report.of_kind("untraceable")
    assert first.location == at("size-branch-2") and "stops elsewhere" in first.detail and first.blocking
    assert second.location == at("value-branch") and second.detail.startswith("with concrete_shapes=True")
    assert "torch.where" in second.fix
    assert "route: none traces the model" in str(report)


def test_a_branch_on_data_is_decided_per_call():
    report = fxla.explain(DataBranch(), torch.randn(2, 8))
    assert report.route == "fxla.compile(model, concrete_shapes=True)" and not report.blocking
    (row,) = report.of_kind("data-dependent value")
    assert row.location == at("data-branch") and "checks it before every call" in row.detail


def test_an_in_place_write_it_cannot_rewrite():
    report = fxla.explain(ViewWrite(), torch.randn(2, 4))
    (row,) = report.of_kind("in-place mutation")
    assert row.location == at("view-write") and "view" in row.detail
    assert not report.of_kind("unsupported op")          # (add_ is rewritten, not lowered as such)


def test_data_dependent_item_as_a_size():
    def f(x):
        n = x.argmax().item()  # item
        return x[:, :n].sum() * torch.lgamma(x).sum()  # after-item

    report = fxla.explain(f, torch.randn(2, 8))
    (data,) = report.of_kind("data-dependent shape")
    assert data.location == at("item") and ".item()" in data.detail
    (unsupported,) = report.of_kind("unsupported op")
    assert unsupported.location == at("after-item")


def test_survey_goes_on_past_failures():
    gm = fxla.symbolic_trace(ManyProblems().eval(), example_inputs=(torch.randn(2, 8),))
    found = survey_shapes(gm, torch.randn(2, 8))
    assert [n.target for n, _ in found.data_dependent] == [torch.nonzero]
    assert not found.failed and not found.skipped
    bessel = next(n for n in gm.graph.nodes if "bessel" in n.name)
    assert "tensor_meta" in bessel.meta                   # checked past the stand-in


def test_bad_arguments_are_errors():
    with pytest.raises(fxla.OptionError, match="fxla.explain expects"):
        fxla.explain([nn.Linear(2, 2)], torch.randn(1, 2))
    with pytest.raises(fxla.ArgumentError):
        fxla.explain(Clean(), torch.randn(2, 8), 1.0, 2.0)


class RankChecked(nn.Module):
    def forward(self, x):
        assert x.dim() == 2  # rank-assert
        return x * 2


class BlockSize(nn.Module):
    """nanoGPT's check: plain fxla.compile stops at the size comparison, concrete shapes at the raise."""

    def forward(self, idx):
        if idx.shape[1] > 4:  # block-size-branch
            raise ValueError(f"Cannot forward sequence of length {idx.shape[1]}, block size is only 4")  # raise
        return idx * 2


class NeedsConcrete(nn.Module):
    def forward(self, x):
        assert isinstance(x.shape[0], int), "a concrete size"  # concrete-assert
        return x * 2


@fxla.wrap
def three_channels(x):
    if x.shape[-1] != 3:
        raise RuntimeError("three_channels needs 3 channels")  # wrapped-raise
    return x


class WrapsCheck(nn.Module):
    def forward(self, x):
        return three_channels(x) + 1


def test_the_models_own_exceptions_are_rows():
    report = fxla.explain(RankChecked(), torch.randn(2, 3, 4))      # (no traceback: the model's assert is a row)
    assert report.route is None and not report.compiles
    untraceable, model = report.problems
    assert untraceable.kind == "untraceable" and untraceable.location == at("rank-assert")
    assert "stops at this line too, for another reason" in untraceable.detail
    assert model.kind == "model error" and model.location == at("rank-assert") and model.blocking
    assert model.detail.startswith("with concrete_shapes=True: the model raised AssertionError")
    assert "(`assert x.dim() == 2" in model.detail
    assert isinstance(model.error, AssertionError) and "eager PyTorch" in model.fix

    report = fxla.explain(BlockSize(), torch.zeros(1, 8, dtype=torch.long))
    (model,) = report.of_kind("model error")
    assert model.location == at("raise") and report.of_kind("untraceable")[0].location == at("block-size-branch")
    assert "ValueError: Cannot forward sequence of length 8, block size is only 4" in model.detail
    assert report.to_dict()["problems"][1]["kind"] == "model error"
    assert fxla.explain(BlockSize(), torch.zeros(1, 4, dtype=torch.long)).compiles


def test_a_model_error_concrete_shapes_gets_past_does_not_block():
    report = fxla.explain(NeedsConcrete().eval(), torch.randn(2, 4))
    assert report.compiles and report.route == "fxla.compile(model, concrete_shapes=True)"
    (row,) = report.of_kind("model error")
    assert row.location == at("concrete-assert") and not row.blocking
    assert "AssertionError: a concrete size" in row.detail and "gets past it" in row.detail


def test_a_wrapped_function_that_raises_during_the_survey():
    report = fxla.explain(WrapsCheck().eval(), torch.randn(2, 4))
    (row,) = report.of_kind("model error")
    assert row.location == at("wrapped-raise") and row.detail.startswith("%three_channels, run on meta tensors")
    assert "RuntimeError: three_channels needs 3 channels" in row.detail
    assert not report.of_kind("shape error")


def break_the_tracer(monkeypatch):
    """An fxla bug: tracing fails inside fxla's own code (tracer.py calls None)."""
    import fxla.frontend.tracer as tracer
    monkeypatch.setattr(tracer, "_patched_torch", None)


def test_fxla_bugs_are_internal_error_rows(monkeypatch):
    break_the_tracer(monkeypatch)
    report = fxla.explain(Clean().eval(), torch.randn(2, 8), 0.5)
    (row,) = report.problems[:1]
    assert row.kind == "internal error" and row.blocking and report.route is None
    assert "fxla failed in its own code (" in row.detail and "tracer.py:" in row.detail
    assert "TypeError: 'NoneType' object" in row.detail and "stops here too" in row.detail
    assert "please report it" in row.fix and isinstance(row.error, TypeError)


def test_a_failing_stage_without_user_code_is_an_internal_error(monkeypatch):
    monkeypatch.setattr(sys.modules["fxla.explain"], "functionalize", None)     # (fxla.explain: the function)
    report = fxla.explain(Clean().eval(), torch.randn(2, 8), 0.5)
    (row,) = report.of_kind("internal error")
    assert row.detail.startswith("fxla failed functionalizing the graph (") and row.location == "-"
    assert not report.compiles


def test_python_structures_in_the_signature():
    class Scaled(nn.Module):
        def forward(self, x, scales, options):
            return x * scales[0] + options["shift"]

    report = fxla.explain(Scaled().eval(), torch.randn(2), [1, 2, 3], {"shift": 0.5, "name": "a"})
    scales = next(p for p in report.of_kind("recompiles") if p.detail.startswith("scales = "))
    assert scales.detail.startswith("scales = [1, 2, 3]: a Python list, part of the signature")
    assert "another length or value compiles a new program" in scales.detail and "number" not in scales.detail
    assert "torch.tensor([1, 2, 3])" in scales.fix and "torch.tensor(1)" not in scales.fix
    options = next(p for p in report.of_kind("recompiles") if p.detail.startswith("options = "))
    assert "a Python dict" in options.detail and "another key or value" in options.detail
    assert "tensors (in the same structure)" in options.fix and "concrete_args={'options': ...}" in options.fix


def test_tiny_gpt2():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=64)
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 128, (1, 16))
    report = fxla.explain(model, ids, use_cache=False)
    assert report.compiles and report.route == "fxla.compile(model, concrete_shapes=True)"
    assert report.of_kind("untraceable")[0].location.startswith("transformers/models/gpt2/modeling_gpt2.py:")
    details = [p.detail for p in report.of_kind("recompiles")]
    assert any(d.startswith("input_ids = int64[1, 16]") and "sequence length" in d for d in details)
    assert any(d.startswith("use_cache = False") for d in details)
    assert report.nodes > 50


# -- the command line ----------------------------------------------------------------------------------------------
MODELS = '''
import torch, torch.nn as nn

class Bad(nn.Module):
    def forward(self, x):
        return torch.lgamma(x) + torch.special.bessel_j0(x)

def bad():
    return Bad(), (torch.randn(2, 3),)

def good():
    return nn.Linear(3, 2)

def takes_flag(x, flag):
    return x * 2 if flag else x

def flagged():
    return takes_flag
'''


def run_cli(capsys, *argv):
    rc = explain_tool.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_reports_problems(capsys, tmp_path):
    f = tmp_path / "models.py"
    f.write_text(MODELS)
    rc, out, _ = run_cli(capsys, f"{f}:bad", "--width", "100")
    assert rc == 1 and out.startswith("fxla.explain(Bad): 2 problems block compiling")
    assert out.count("unsupported op") == 2 and "models.py:6" in out


def test_cli_clean_model_with_input_shape_and_json(capsys, tmp_path):
    f = tmp_path / "models.py"
    f.write_text(MODELS)
    rc, out, _ = run_cli(capsys, f"{f}:good", "--input-shape", "4x3", "--compile")
    assert rc == 0 and "compiles" in out.splitlines()[0] and "XLA compile for" in out
    rc, out, _ = run_cli(capsys, f"{f}:good", "--input-shape", "4x3", "--json")
    got = json.loads(out)
    assert rc == 0 and got["compiles"] is True and got["problems"][0]["kind"] == "recompiles"
    assert "float32[4, 3]" in got["problems"][0]["detail"]


def test_cli_concrete_args(capsys, tmp_path):
    f = tmp_path / "models.py"
    f.write_text(MODELS)
    rc, out, _ = run_cli(capsys, f"{f}:flagged", "--input-shape", "2x3", "--concrete-args", "flag=true", "--json")
    assert rc == 0 and json.loads(out)["compiles"] is True


def test_cli_prints_an_internal_errors_traceback(capsys, tmp_path, monkeypatch):
    f = tmp_path / "models.py"
    f.write_text(MODELS)
    break_the_tracer(monkeypatch)
    rc, out, err = run_cli(capsys, f"{f}:good", "--input-shape", "4x3")
    assert rc == 1 and "internal error" in out
    assert "internal error at -, the traceback to report:" in err and "Traceback (most recent call last)" in err
    assert "TypeError: 'NoneType' object is not callable" in err


@pytest.mark.parametrize("argv,needle", [(["nope.py:f"], "no such file"), (["no_colon"], "is not a model spec")])
def test_cli_bad_spec_is_a_clear_error(capsys, argv, needle):
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 2 and needle in err and "fix:" in err and "Traceback" not in err
