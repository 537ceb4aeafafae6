"""Export artifacts as a careless user or a tamperer would treat them (issue #16, items 3, 11, 13, 17): export
never deletes or overwrites what it did not write; loading reads only regular files of recorded size, checks
every metadata field against the program's own interface, and answers anything off with ArtifactError (never
another exception, a hang, code run from the metadata, or a write into the caller's tensors)."""
from __future__ import annotations

import copy
import hashlib
import json
import os
import sys
import threading

import pytest
import torch
import torch.nn as nn

import fxla
from fxla import ArtifactError


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x, extra=None):
        self.calls += 1
        return {"y": self.fc(x), "n": x.shape[0]}


class Mutating(nn.Module):
    def forward(self, x):
        x.mul_(2)
        return x + 1


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    torch.manual_seed(0)
    model = Tiny().eval()
    path = tmp_path_factory.mktemp("art") / "tiny"
    fxla.export(model, (torch.randn(2, 3),), path)
    return model, path


def _copy(src, dst):
    os.makedirs(dst)
    for name in os.listdir(src):
        with open(os.path.join(src, name), "rb") as f, open(os.path.join(dst, name), "wb") as g:
            g.write(f.read())
    return dst


def _meta(path):
    return json.loads((path / "metadata.json").read_text())


def _write_meta(path, meta):
    (path / "metadata.json").write_text(json.dumps(meta))


def _rehash(path, name):
    meta = _meta(path)
    data = (path / name).read_bytes()
    meta["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    _write_meta(path, meta)


def _load_bounded(path, seconds=60):
    """fxla.load(path) on a thread: (result or exception); fails the test if it hangs."""
    box = []

    def run():
        try:
            box.append(fxla.load(path))
        except BaseException as err:  # noqa: BLE001
            box.append(err)
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert box, f"fxla.load({path}) hung"
    return box[0]


# ---------------------------------------------------------------------------------------------------------------
# export never deletes or overwrites what it did not write (item 3)
# ---------------------------------------------------------------------------------------------------------------
def test_export_into_a_project_folder_with_a_metadata_json_deletes_nothing(tmp_path):
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    files = {"metadata.json": '{"experiment": 1}', "train.py": "print('train')", "data/x.csv": "1,2"}
    for name, text in files.items():
        (project / name).write_text(text)
    with pytest.raises(ArtifactError, match="not an fxla artifact") as info:
        fxla.export(Tiny(), (torch.randn(2, 3),), project, overwrite=True)
    assert "\nfix: " in str(info.value)
    assert {n: (project / n).read_text() for n in files} == files
    assert sorted(os.listdir(tmp_path)) == ["project"]            # no temporary folders left behind


def test_replacing_an_artifact_needs_overwrite(exported, tmp_path):
    model, src = exported
    path = _copy(src, tmp_path / "a")
    before = (path / "metadata.json").read_bytes()
    with pytest.raises(ArtifactError, match="already there.*\nfix: pass overwrite=True"):
        fxla.export(Mutating(), (torch.randn(2, 3),), path)
    assert (path / "metadata.json").read_bytes() == before
    fxla.export(Mutating(), (torch.randn(2, 3),), path, overwrite=True)
    x = torch.randn(2, 3)
    want = x * 2 + 1
    torch.testing.assert_close(fxla.load(path)(x), want)
    assert sorted(os.listdir(tmp_path)) == ["a"]


def test_an_artifact_folder_with_a_user_file_is_not_replaced(exported, tmp_path):
    _, src = exported
    path = _copy(src, tmp_path / "a")
    (path / "notes.txt").write_text("mine")
    with pytest.raises(ArtifactError, match="not an fxla artifact"):
        fxla.export(Tiny(), (torch.randn(2, 3),), path, overwrite=True)
    assert (path / "notes.txt").read_text() == "mine" and len(os.listdir(path)) == 4


def test_export_into_an_empty_folder_and_onto_a_file(tmp_path):
    (tmp_path / "empty").mkdir()
    fxla.export(Tiny(), (torch.randn(2, 3),), tmp_path / "empty")
    assert sorted(os.listdir(tmp_path / "empty")) == ["metadata.json", "program.mlirbc", "weights.bin"]
    (tmp_path / "file").write_text("keep")
    with pytest.raises(ArtifactError, match="not a folder"):
        fxla.export(Tiny(), (torch.randn(2, 3),), tmp_path / "file", overwrite=True)
    assert (tmp_path / "file").read_text() == "keep"


# ---------------------------------------------------------------------------------------------------------------
# the program is the source of truth (item 11)
# ---------------------------------------------------------------------------------------------------------------
def test_edited_output_static_is_refused(exported, tmp_path):
    _, src = exported
    path = _copy(src, tmp_path / "a")
    meta = _meta(path)
    meta["output_static"] = [5 if isinstance(v, dict) else v for v in meta["output_static"]]
    _write_meta(path, meta)
    with pytest.raises(ArtifactError, match="does not fit its program"):
        fxla.load(path)


def test_edited_mutated_inputs_cannot_write_into_the_callers_tensor(exported, tmp_path):
    _, src = exported
    path = _copy(src, tmp_path / "a")
    meta = _meta(path)
    meta["mutated_inputs"] = [0]
    _write_meta(path, meta)
    with pytest.raises(ArtifactError, match="the program returns"):
        fxla.load(path)


def test_a_mutating_artifact_still_writes_back(tmp_path):
    fxla.export(Mutating(), (torch.randn(2, 3),), tmp_path / "m")
    assert _meta(tmp_path / "m")["mutated_inputs"] == [0]
    x = torch.randn(2, 3)
    want_x, want = x * 2, x * 2 + 1
    got = fxla.load(tmp_path / "m")(x)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x, want_x)


def test_metadata_cannot_import_modules(exported, tmp_path):
    """torch's treespec_loads imports the module a defaultdict's factory names; fxla's decoder imports nothing."""
    _, src = exported
    path = _copy(src, tmp_path / "a")
    meta = _meta(path)
    meta["output_spec"] = [1, {"type": "collections.defaultdict", "context": json.dumps(
        {"default_factory_module": "fxla_planted_module", "default_factory_name": "x", "dict_context": []}),
        "children_spec": []}]
    _write_meta(path, meta)
    (tmp_path / "fxla_planted_module.py").write_text("import pathlib; pathlib.Path(__file__).with_name('ran').touch()")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ArtifactError):
            fxla.load(path)
    finally:
        sys.path.remove(str(tmp_path))
    assert not (tmp_path / "ran").exists() and "fxla_planted_module" not in sys.modules


def test_a_text_program_is_refused(exported, tmp_path):
    _, src = exported
    path = _copy(src, tmp_path / "a")
    (path / "program.mlirbc").write_text("module {\n  func.func @main() {\n    return\n  }\n}\n")
    _rehash(path, "program.mlirbc")
    err = _load_bounded(path)
    assert isinstance(err, ArtifactError), err


# ---------------------------------------------------------------------------------------------------------------
# only regular files of recorded size (item 13)
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["weights.bin", "program.mlirbc", "metadata.json"])
@pytest.mark.parametrize("kind", ["dev_zero", "fifo", "outside"])
def test_special_files_are_refused_without_reading(exported, tmp_path, name, kind):
    _, src = exported
    path = _copy(src, tmp_path / "a")
    target = path / name
    if kind == "outside":
        outside = tmp_path / ("copy-" + name)
        outside.write_bytes(target.read_bytes())
    target.unlink()
    if kind == "dev_zero":
        os.symlink("/dev/zero", target)
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        os.symlink(outside, target)
    err = _load_bounded(path, seconds=30)
    assert isinstance(err, ArtifactError), err
    assert "regular file" in str(err)


def test_a_file_larger_than_recorded_is_not_read_whole(exported, tmp_path):
    _, src = exported
    path = _copy(src, tmp_path / "a")
    with open(path / "weights.bin", "ab") as f:
        f.write(b"\0" * 1_000_000)
    with pytest.raises(ArtifactError, match="more than recorded"):
        fxla.load(path)


# ---------------------------------------------------------------------------------------------------------------
# every metadata edit: ArtifactError or a correct load (item 17)
# ---------------------------------------------------------------------------------------------------------------
_DEEP = [[]]
for _ in range(200):
    _DEEP = [_DEEP]


def _edits():
    """(label, function editing the metadata dict in place)."""
    def put(key, value):
        return lambda m: m.__setitem__(key, value)

    def delete(key):
        return lambda m: m.pop(key)

    cases = []
    keys = ["name", "inputs", "input_spec", "input_static", "outputs", "output_spec", "output_static",
            "mutated_inputs", "mutated_params", "written_attributes", "params", "files", "format", "version"]
    for key in keys:
        cases.append((f"del-{key}", delete(key)))
        for label, value in (("none", None), ("int", 7), ("str", "x"), ("list", []), ("dict", {}),
                             ("deep", _DEEP), ("bool", True), ("huge", 10 ** 40)):
            cases.append((f"{key}={label}", put(key, copy.deepcopy(value))))
    cases += [
        ("inputs-dtype", lambda m: m["inputs"][0].__setitem__("dtype", "complex32")),
        ("inputs-shape-neg", lambda m: m["inputs"][0].__setitem__("shape", [-2, 3])),
        ("inputs-shape-wrong", lambda m: m["inputs"][0].__setitem__("shape", [4, 3])),
        ("inputs-shape-str", lambda m: m["inputs"][0].__setitem__("shape", "2x3")),
        ("inputs-extra", lambda m: m["inputs"].append({"shape": [1], "dtype": "float32"})),
        ("outputs-dtype", lambda m: m["outputs"][0].__setitem__("dtype", "int64")),
        ("mutated-5", put("mutated_inputs", [5])),
        ("mutated-neg", put("mutated_inputs", [-1])),
        ("mutated-dup", put("mutated_inputs", [0, 0])),
        ("mutated-str", put("mutated_inputs", ["0"])),
        ("mutated-params-unknown", put("mutated_params", ["nope"])),
        ("mutated-params-none", put("mutated_params", [])),
        ("params-renamed", lambda m: m["params"][0].__setitem__("name", "other")),
        ("params-swapped", lambda m: m["params"].reverse()),
        ("params-shape", lambda m: m["params"][0].__setitem__("shape", [9])),
        ("params-dup", lambda m: m["params"].append(dict(m["params"][0]))),
        ("input-spec-set", put("input_spec", {"set": []})),
        ("input-spec-type", put("input_spec", {"builtins.tuple": [None]})),
        ("input-spec-deep", put("input_spec", {"tuple": [_DEEP]})),
        ("input-spec-dict-keys", put("input_spec", {"dict": [[[1], None]]})),
        ("input-static-extra", lambda m: m["input_static"].append(None)),
        ("input-static-value", put("input_static", [3])),
        ("output-spec-more", put("output_spec", {"tuple": [None, None, None]})),
        ("output-spec-none-children", put("output_spec", {"tuple": [None, {"none": [None]}]})),
        ("output-spec-none", put("output_spec", {"tuple": [None, {"none": []}]})),
        ("output-static-5", put("output_static", [5, 5])),
        ("input-static-tensor-index", put("input_static", [{"tensor": 1}, None])),
        ("output-static-tensor-0", put("output_static", [{"tensor": 0}, {"tensor": 0}])),
        ("written-bad", put("written_attributes", [{"name": "a"}])),
        ("written-extra", put("written_attributes", [{"name": "a", "spec": None, "leaves": [None]}])),
        ("files-size", lambda m: m["files"]["weights.bin"].__setitem__("size", 10 ** 12)),
        ("files-size-str", lambda m: m["files"]["weights.bin"].__setitem__("size", "12")),
        ("files-name-escape", lambda m: m["files"].__setitem__("../x", {"sha256": "0", "size": 1})),
        ("files-hidden", lambda m: m["files"].__setitem__(".x", {"sha256": "0", "size": 1})),
        ("files-no-weights", lambda m: m["files"].pop("weights.bin")),
        ("name-harmless", put("name", "renamed")),
    ]
    return cases


def test_every_metadata_edit_is_an_artifact_error_or_a_correct_load(exported, tmp_path):
    model, src = exported
    x = torch.randn(2, 3)
    with torch.no_grad():
        want = model.fc(x)
    failures = []
    for i, (label, edit) in enumerate(_edits()):
        path = _copy(src, tmp_path / f"e{i}")
        meta = _meta(path)
        try:
            edit(meta)
        except (KeyError, IndexError, TypeError, AttributeError):
            continue
        _write_meta(path, meta)
        result = _load_bounded(path)
        if isinstance(result, ArtifactError):
            if "\nfix: " not in str(result):
                failures.append(f"{label}: no fix line: {result}")
            continue
        if isinstance(result, BaseException):
            failures.append(f"{label}: {type(result).__name__}: {str(result)[:200]}")
            continue
        try:
            got = result(x, None)
            torch.testing.assert_close(got["y"], want)
            assert got["n"] == 2
        except Exception as err:  # noqa: BLE001
            failures.append(f"{label}: loaded, but the call gave {type(err).__name__}: {str(err)[:200]}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("depth", [100_000])
def test_a_deeply_nested_metadata_json_is_an_artifact_error(exported, tmp_path, depth):
    _, src = exported
    path = _copy(src, tmp_path / "a")
    (path / "metadata.json").write_text("[" * depth + "]" * depth)
    with pytest.raises(ArtifactError):
        fxla.load(path)


def test_non_utf8_metadata_is_an_artifact_error(exported, tmp_path):
    _, src = exported
    path = _copy(src, tmp_path / "a")
    (path / "metadata.json").write_bytes(b"\xff\xfe{")
    with pytest.raises(ArtifactError, match="not valid JSON"):
        fxla.load(path)
