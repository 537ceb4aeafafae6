"""fxla.export / fxla.load: portable artifacts (StableHLO portable bytecode + JSON metadata + pickle-free
weights) that run without the model's code; tampered or truncated artifacts raise ArtifactError."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import jax
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla
from fxla import ArtifactError
from fxla.runtime import InputError


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)
        self.register_buffer("scale", torch.linspace(0.5, 2, 4))

    def forward(self, x, mask):
        h = F.gelu(self.fc1(x))
        y = self.fc2(h) * self.scale
        return {"y": y, "masked": (y * mask, x.shape[0])}


@pytest.fixture
def net():
    torch.manual_seed(0)
    return Net().eval()


@pytest.fixture
def inputs():
    torch.manual_seed(1)
    return torch.randn(3, 8), (torch.rand(3, 4) > 0.5).float()


@pytest.fixture
def artifact(net, inputs, tmp_path):
    path = tmp_path / "net"
    fxla.export(net, inputs, path)
    return path


def test_round_trip_structure_and_values(net, inputs, artifact):
    loaded = fxla.load(artifact)
    got, want = loaded(*inputs), net(*inputs)
    assert set(got) == {"y", "masked"} and got["masked"][1] == 3
    torch.testing.assert_close(got["y"], want["y"].detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got["masked"][0], want["masked"][0].detach(), rtol=1e-5, atol=1e-5)
    other = (torch.randn(3, 8), torch.ones(3, 4))
    torch.testing.assert_close(loaded(*other)["y"], net(*other)["y"].detach(), rtol=1e-5, atol=1e-5)
    y = fxla.load(artifact, output="jax")(*inputs)["y"]
    assert isinstance(y, jax.Array)


def test_layout_and_metadata(net, artifact):
    assert sorted(os.listdir(artifact)) == ["metadata.json", "program.mlirbc", "weights.bin"]
    meta = json.loads((artifact / "metadata.json").read_text())
    assert meta["format"] == "fxla.artifact" and meta["version"] == 3 and len(meta["metadata_sha256"]) == 64
    assert meta["inputs"] == [{"shape": [3, 8], "dtype": "float32"}, {"shape": [3, 4], "dtype": "float32"}]
    assert meta["outputs"] == [{"shape": [3, 4], "dtype": "float32"}] * 2
    assert sorted(p["name"] for p in meta["params"]) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight",
                                                          "scale"]
    assert meta["versions"]["jaxlib"] == jax.__version__ and meta["stablehlo_target_version"]
    assert len(meta["stablehlo_sha256"]) == 64 and set(meta["files"]) == {"program.mlirbc", "weights.bin"}
    assert (artifact / "weights.bin").read_bytes()[:8] == b"FXLATNS1"           # no pickle
    assert b"/" not in (artifact / "program.mlirbc").read_bytes().split(b"ML\xefR")[0]  # portable bytecode
    assert not [p for p in artifact.parent.iterdir() if p.name.startswith(".fxla")]      # no temp leftovers


def test_bf16_function_and_reexport(tmp_path):
    fn = lambda a, b: (a * b).sum(0)                                                        # noqa: E731
    a, b = torch.randn(4, 5).bfloat16(), torch.randn(4, 5).bfloat16()
    fxla.export(fn, (a, b), tmp_path / "f")
    fxla.export(fn, (a, b), tmp_path / "f", overwrite=True)     # replacing an existing artifact is fine
    out = fxla.load(tmp_path / "f")(a, b)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out, fn(a, b), rtol=2e-2, atol=2e-2)


@pytest.mark.slow
def test_runs_in_a_fresh_process_without_the_model(net, inputs, artifact, tmp_path):
    x, mask = inputs
    child = textwrap.dedent(f"""
        import sys, torch, fxla
        x = torch.tensor({x.tolist()}); mask = torch.tensor({mask.tolist()})
        out = fxla.load(sys.argv[1])(x, mask)
        print(repr(out["y"].tolist()))
    """)
    proc = subprocess.run([sys.executable, "-c", child, str(artifact)], capture_output=True, text=True,
                          timeout=120, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = torch.tensor(eval(proc.stdout.strip().splitlines()[-1]))                      # noqa: S307
    torch.testing.assert_close(got, net(*inputs)["y"].detach(), rtol=1e-5, atol=1e-5)


def test_wrong_inputs_are_input_errors(artifact, inputs):
    loaded = fxla.load(artifact)
    x, mask = inputs
    with pytest.raises(InputError, match=r"tensor input 0 is float32\[4, 8\].*exported for float32\[3, 8\]"):
        loaded(torch.randn(4, 8), mask)
    with pytest.raises(InputError, match="float64"):
        loaded(x.double(), mask)
    with pytest.raises(InputError, match="structure"):
        loaded(x)


def _damage(path, how):
    if how == "truncate_program":
        blob = (path / "program.mlirbc").read_bytes()
        (path / "program.mlirbc").write_bytes(blob[: len(blob) // 2])
    elif how == "flip_weights":
        blob = bytearray((path / "weights.bin").read_bytes())
        blob[-3] ^= 0x40
        (path / "weights.bin").write_bytes(bytes(blob))
    elif how == "remove_weights":
        os.unlink(path / "weights.bin")
    elif how == "bad_json":
        (path / "metadata.json").write_text("{ not json")
    elif how == "no_metadata":
        os.unlink(path / "metadata.json")
    elif how == "future_version":
        meta = json.loads((path / "metadata.json").read_text())
        meta["version"] = 99
        (path / "metadata.json").write_text(json.dumps(meta))
    elif how == "path_in_files":
        meta = json.loads((path / "metadata.json").read_text())
        meta["files"]["../evil"] = {"sha256": "0" * 64, "size": 1}
        (path / "metadata.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("how,why", [
    ("truncate_program", "program.mlirbc has"),
    ("flip_weights", "weights.bin does not match the SHA-256"),
    ("remove_weights", "weights.bin cannot be read"),
    ("bad_json", "not valid JSON"),
    ("no_metadata", "there is no metadata.json"),
    ("future_version", "format version 99"),
    ("path_in_files", "bad file name"),
])
def test_tampered_artifacts_raise_artifact_error(artifact, how, why):
    _damage(artifact, how)
    with pytest.raises(ArtifactError) as info:
        fxla.load(artifact)
    msg = str(info.value)
    assert isinstance(info.value, fxla.FxlaError) and why in msg and "\nfix: " in msg


def test_export_refuses_to_overwrite_other_folders(net, inputs, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(ArtifactError, match="not an fxla artifact"):
        fxla.export(net, inputs, tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_export_of_a_compiled_module(net, inputs, tmp_path):
    compiled = fxla.compile(net)
    fxla.export(compiled, inputs, tmp_path / "c")
    torch.testing.assert_close(fxla.load(tmp_path / "c")(*inputs)["y"], compiled(*inputs)["y"])


class _Keywords(nn.Module):
    """Shape asserts and ``**kwargs`` (what Hugging Face and timm forwards have): traceable with concrete shapes."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 3)

    def forward(self, x, mask=None, scale=1.0, **kwargs):
        assert x.shape[-1] == 4, "expected 4 features"
        y = self.proj(x) * scale
        return y if mask is None else y.masked_fill(mask[..., None] == 0, 0.0)


def test_export_with_concrete_shapes(tmp_path):
    """``concrete_shapes=True`` traces the example inputs' signature; its Python values (None, 2.0) are constants
    of the artifact, checked at each call of the loaded function."""
    model, x, mask = _Keywords().eval(), torch.randn(2, 5, 4), torch.tensor([[1, 1, 1, 0, 0], [1] * 5])
    with pytest.raises(fxla.TraceError):
        fxla.export(model, (x, mask, 2.0), str(tmp_path / "plain"))
    for name, args in (("masked", (x, mask, 2.0)), ("unmasked", (x, None, 0.5))):
        fxla.export(model, args, str(tmp_path / name), concrete_shapes=True)
        loaded = fxla.load(str(tmp_path / name))
        with torch.no_grad():
            torch.testing.assert_close(loaded(*args), model(*args))
    with pytest.raises(InputError, match="specialised to 0.5"):
        loaded(x, None, 1.0)


class _MaybeLoss(nn.Module):
    """nanoGPT's forward: (logits, None) without targets."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 3)

    def forward(self, x, targets=None):
        logits = self.head(x)
        return logits, (None if targets is None else F.cross_entropy(logits, targets))


def test_a_none_among_the_outputs_round_trips(tmp_path):
    model, x = _MaybeLoss().eval(), torch.randn(5, 4)
    meta = fxla.export(model, (x,), str(tmp_path / "a"), concrete_shapes=True)
    assert meta["output_spec"] == {"tuple": [None, {"none": []}]}
    logits, loss = fxla.load(str(tmp_path / "a"))(x)
    assert loss is None
    torch.testing.assert_close(logits, model(x)[0].detach())
