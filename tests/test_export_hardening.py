"""Export/load hardening found by a bug hunt (/tmp/s/hunt_g): a polymorphic artifact whose model has value guards
runs every size (its guard program is polymorphic too); metadata.json is bound to the artifact (an edit is an
ArtifactError at load) and its ``symbolic.outputs`` is checked at load; a destination whose parent cannot be made
is an ArtifactError; clearer messages for a size that is no multiple of its Dim and for an artifact folder holding
an extra file."""
from __future__ import annotations

import json
import os

import pytest
import torch

import fxla
from fxla import ArtifactError
from fxla.artifact_guards import GuardError
from fxla.runtime import artifact as artifact_format


class Branchy(torch.nn.Module):
    """A data-dependent branch whose decision depends on the size too (ones: sum = 2 * n)."""

    def forward(self, x):
        if x.sum() > 12:
            return x * 2
        return x * 3


def _export_branchy(path):
    fxla.export(Branchy(), (torch.ones(2, 5),), path, concrete_shapes=True,
                dynamic_shapes={"x": {1: fxla.Dim("n", max=50)}})
    return fxla.load(path)


def test_a_polymorphic_artifact_with_value_guards_runs_other_sizes(tmp_path):
    loaded = _export_branchy(tmp_path / "a")
    model = Branchy()
    for x in (torch.ones(2, 5), torch.ones(2, 3), torch.ones(2, 6), torch.full((2, 7), -1.0)):
        torch.testing.assert_close(loaded(x), model(x))       # the exported decision (sum <= 12) at any size
    for x in (torch.full((2, 5), 2.0), torch.ones(2, 7), torch.ones(2, 50)):      # the other decision: refused
        with pytest.raises(GuardError, match=r"these inputs give %.* = True, but the artifact was exported for "
                                             r"data where"):
            loaded(x)
    with pytest.raises(fxla.ShapeConstraintError, match="Dim 'n' = 51 is outside"):
        loaded(torch.ones(2, 51))


def test_the_polymorphic_guard_program_is_in_the_artifact(tmp_path):
    _export_branchy(tmp_path / "a")
    meta = json.loads((tmp_path / "a" / "metadata.json").read_text())
    assert "guards.polymorphic.mlirbc" in meta["files"] and meta["guard_symbolic"]["dims"][0]["name"] == "n"


def _edit(path, change, sign: bool = False):
    file = os.path.join(path, "metadata.json")
    with open(file) as f:
        meta = json.load(f)
    change(meta)
    if sign:                 # (an author who recomputes the digest: the fields are still checked one by one)
        meta["metadata_sha256"] = artifact_format.metadata_digest(meta)
    with open(file, "w") as f:
        json.dump(meta, f)


def _reshape(x):
    b, n, d = x.shape
    return x.reshape(b, n // 4, 4 * d) * 2


@pytest.fixture
def polymorphic(tmp_path):
    path = str(tmp_path / "poly")
    fxla.export(_reshape, (torch.randn(2, 8, 8),), path,
                dynamic_shapes={"x": {1: fxla.Dim("n", max=64, multiple_of=4)}})
    return path


def _loosen(meta):
    meta["symbolic"]["dims"][0]["multiple_of"] = 1
    meta["symbolic"]["guards"] = []


@pytest.mark.parametrize("change", [_loosen, lambda m: m.__setitem__("name", "other"),
                                    lambda m: m["symbolic"]["dims"][0].__setitem__("max", 1000)])
def test_an_edited_metadata_json_is_an_artifact_error(polymorphic, change):
    _edit(polymorphic, change)
    with pytest.raises(ArtifactError, match=r"metadata.json was modified after export \(its content does not match"):
        fxla.load(polymorphic)


def test_an_untouched_artifact_still_loads_and_refuses_what_eager_refuses(polymorphic):
    loaded = fxla.load(polymorphic)
    x = torch.randn(2, 12, 8)
    torch.testing.assert_close(loaded(x), _reshape(x))
    with pytest.raises(fxla.ShapeConstraintError, match=r"Dim 'n' = 10 is not a multiple of 4 \(the artifact runs "
                                                         r"n in \[2, 64\]"):
        loaded(torch.randn(2, 10, 8))


def test_an_artifact_without_the_digest_is_refused(polymorphic):
    _edit(polymorphic, lambda m: m.pop("metadata_sha256"))
    with pytest.raises(ArtifactError, match="metadata.json records no metadata_sha256"):
        fxla.load(polymorphic)


def test_an_older_format_version_is_refused(polymorphic):
    _edit(polymorphic, lambda m: m.__setitem__("version", 2), sign=True)
    with pytest.raises(ArtifactError, match="format version 2; this fxla reads version 3.*\nfix: export it again"):
        fxla.load(polymorphic)


@pytest.mark.parametrize("outputs", [[{"shape": None}], [], None, "x", [{"shape": [2, None]}], [{"shape": [2, 3, 32]}],
                                     [{"shape": [2, None, "32"]}], [{"shape": [2, None, 32], "extra": 1}],
                                     [{"shape": [2, None, 32]}, {"shape": [1]}], [{"shape": [-1, None, 32]}]])
def test_malformed_symbolic_outputs_are_refused_at_load(polymorphic, outputs):
    _edit(polymorphic, lambda m: m["symbolic"].__setitem__("outputs", outputs), sign=True)
    with pytest.raises(ArtifactError, match=r"'symbolic' 'outputs' .*\nfix: re-export"):
        fxla.load(polymorphic)


def test_well_formed_symbolic_outputs_load(polymorphic):
    _edit(polymorphic, lambda m: None, sign=True)
    meta = json.loads(open(os.path.join(polymorphic, "metadata.json")).read())
    assert meta["symbolic"]["outputs"] == [{"shape": [2, None, None]}]
    x = torch.randn(2, 16, 8)
    torch.testing.assert_close(fxla.load(polymorphic)(x), _reshape(x))


def test_export_under_a_file_is_an_artifact_error(tmp_path):
    (tmp_path / "file").write_text("mine")
    with pytest.raises(ArtifactError, match=r"(?s)cannot export to .*: its folder .* cannot be made or written "
                                            r"\(.*file' is a file, not a folder\).*\nfix: "):
        fxla.export(lambda x: x * 2, (torch.randn(3),), tmp_path / "file" / "art")
    assert (tmp_path / "file").read_text() == "mine"


def test_export_where_no_folder_can_be_written_is_an_artifact_error(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(artifact_format.tempfile, "mkdtemp", refuse)      # (as root, chmod would not stop it)
    with pytest.raises(ArtifactError, match=r"(?s)cannot export to .*: its folder .* cannot be made or written "
                                            r"\(Permission denied\).*\nfix: "):
        fxla.export(lambda x: x * 2, (torch.randn(3),), tmp_path / "art")
    assert os.listdir(tmp_path) == []


def test_an_artifact_with_an_extra_file_says_so(tmp_path):
    path = tmp_path / "a"
    fxla.export(lambda x: x * 2, (torch.randn(3),), path)
    (path / "mine.txt").write_text("mine")
    with pytest.raises(ArtifactError, match=r"it holds an fxla artifact, but also mine.txt, which export did not "
                                            r"write"):
        fxla.export(lambda x: x * 3, (torch.randn(3),), path, overwrite=True)
    assert (path / "mine.txt").read_text() == "mine"


class Positives(torch.nn.Module):
    def forward(self, x):
        return x[x > 0].sum() * x             # (how many elements x[mask] selects: an int guard)


def test_an_int_guard_is_checked_at_other_sizes(tmp_path):
    x = torch.tensor([[1., -1, 2, 3, -4], [1, 1, 1, -1, -1]])
    fxla.export(Positives(), (x,), tmp_path / "a", concrete_shapes=True,
                dynamic_shapes={"x": {1: fxla.Dim("n", max=50)}})
    loaded = fxla.load(tmp_path / "a")
    wider = torch.tensor([[1., -1, 2, 3, -4, -5], [1, 1, 1, -1, -1, -1]])      # 6 positives, as exported
    for x in (x, wider):
        torch.testing.assert_close(loaded(x), Positives()(x))
    with pytest.raises(GuardError, match=r"= 14, but the artifact was exported for data where %.* == 6"):
        loaded(torch.ones(2, 7))


def _blocks(x):
    b, n, d = x.shape
    return x.reshape(b, n // 4, 4 * d).cumsum(1)


def test_a_broken_constraint_says_which_sizes_the_artifact_runs(tmp_path):
    fxla.export(_blocks, (torch.randn(2, 8, 3),), tmp_path / "a",
                dynamic_shapes={"x": {1: fxla.Dim("n", min=4, max=64, multiple_of=4)}})
    loaded = fxla.load(tmp_path / "a")
    with pytest.raises(fxla.ShapeConstraintError, match=r"\(n = 4\) break a constraint .*: \(n // 4\) != 1 \(with "
                                                         r"this call's other sizes, it runs n = 8, 12, 16, 20, ...\)"):
        loaded(torch.randn(2, 4, 3))
