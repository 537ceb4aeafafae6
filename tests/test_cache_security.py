"""The on-disk executable cache as an attacker or a careless neighbour would use it (issue #16, items 1, 2, 13,
16): nothing in an entry is unpickled, an entry is bound to its key, unsafe folders and files are refused
without reading them, and every refusal is a CacheWarning followed by a normal compile."""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import stat
import threading
import warnings

import pytest
import torch
import torch.nn as nn

import fxla
from fxla.base import jax_private
from fxla.runtime import CacheWarning, compile_stats
from fxla.runtime import cache as cache_mod
from fxla.runtime import executable as executable_mod


def _mlp(seed=0, width=16):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, width), nn.ReLU(), nn.Linear(width, 4)).eval().requires_grad_(False)


def _close(got, want):
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def _entries(folder):
    return sorted(p for p in folder.iterdir() if p.name.endswith(cache_mod.SUFFIX))


def _compile_into(folder, model, x):
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        return fxla.compile(model, cache_dir=folder)(x)


class _Marker:
    """Unpickling this creates the file named by ``path`` (what a forged entry would do)."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _forge(entry, payload):
    """Rewrite ``entry`` keeping its (valid) header's key, with ``payload`` and a matching checksum."""
    blob = entry.read_bytes()
    head = len(cache_mod.MAGIC) + 8
    size = int.from_bytes(blob[len(cache_mod.MAGIC):head], "big")
    header = json.loads(blob[head:head + size])
    header.update(payload_size=len(payload), payload_sha256=hashlib.sha256(payload).hexdigest())
    data = json.dumps(header).encode()
    entry.write_bytes(cache_mod.MAGIC + len(data).to_bytes(8, "big") + data + payload)


@pytest.mark.parametrize("old_format", [False, True])
def test_a_forged_pickle_entry_never_runs(tmp_path, monkeypatch, old_format):
    model, x = _mlp(), torch.randn(2, 8)
    cache = tmp_path / "cache"
    _compile_into(cache, model, x)
    (entry,) = _entries(cache)
    marker = tmp_path / "pwned"
    evil = pickle.dumps(_Marker(str(marker)))
    if old_format:   # what fxla <= format 2 would have unpickled: magic + checksum + pickle
        entry.write_bytes(b"FXLAEXE1" + hashlib.sha256(evil).digest() + evil)
    else:
        _forge(entry, evil)

    def refuse(*a, **k):
        raise AssertionError("fxla unpickled a cache entry")
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    before = compile_stats()
    with pytest.warns(CacheWarning, match="ignoring cache entry"):
        _close(fxla.compile(model, cache_dir=cache)(x), model(x).detach())
    assert not marker.exists()
    assert compile_stats()["compiles"] == before["compiles"] + 1


def test_an_entry_holds_no_pickle(tmp_path):
    _compile_into(tmp_path / "c", _mlp(), torch.randn(2, 8))
    (entry,) = _entries(tmp_path / "c")
    blob = entry.read_bytes()
    assert blob.startswith(b"FXLAEXE3")
    head = len(cache_mod.MAGIC) + 8
    size = int.from_bytes(blob[len(cache_mod.MAGIC):head], "big")
    header = json.loads(blob[head:head + size])
    assert set(header["key"]) == {"program_sha256", "fingerprint", "jax", "jaxlib", "format"}
    assert b"\x80\x04\x95" not in blob[head + size:head + size + 8]      # no pickle protocol-4 frame up front


def test_a_hit_runs_the_stored_executable_without_compiling(tmp_path, monkeypatch):
    model, x = _mlp(), torch.randn(2, 8)
    _compile_into(tmp_path, model, x)

    def no_xla(*a, **k):
        raise AssertionError("XLA compiled on a cache hit")
    monkeypatch.setattr(jax_private, "_jax_compile_or_get_cached", no_xla)     # JAX's compile step
    hits = compile_stats()["disk_hits"]
    _close(_compile_into(tmp_path, model, x), model(x).detach())
    assert compile_stats()["disk_hits"] == hits + 1


def test_another_programs_entry_under_this_name_is_refused(tmp_path):
    x = torch.randn(2, 8)
    a, b = _mlp(0, 16), _mlp(1, 32)
    _compile_into(tmp_path / "a", a, x)
    _compile_into(tmp_path / "b", b, x)
    (entry_a,), (entry_b,) = _entries(tmp_path / "a"), _entries(tmp_path / "b")
    entry_b.write_bytes(entry_a.read_bytes())          # A's valid entry under B's file name
    with pytest.warns(CacheWarning, match="recorded key differs"):
        got = fxla.compile(b, cache_dir=tmp_path / "b")(x)
    _close(got, b(x).detach())


def test_the_folder_is_created_private(tmp_path):
    folder = tmp_path / "new" / "cache"
    _compile_into(folder, _mlp(), torch.randn(2, 8))
    assert stat.S_IMODE(os.stat(folder).st_mode) & 0o077 == 0


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_a_folder_writable_by_others_is_not_used(tmp_path, mode):
    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, mode)
    model, x = _mlp(), torch.randn(2, 8)
    with pytest.warns(CacheWarning, match="not using the cache directory.*writable by"):
        _close(fxla.compile(model, cache_dir=folder)(x), model(x).detach())
    assert not list(folder.iterdir())                 # nothing read, nothing written


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
def test_a_folder_owned_by_another_user_is_not_used(tmp_path):
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    os.chown(folder, 4242, -1)
    model, x = _mlp(), torch.randn(2, 8)
    with pytest.warns(CacheWarning, match="owned by user id 4242"):
        _close(fxla.compile(model, cache_dir=folder)(x), model(x).detach())
    assert not list(folder.iterdir())


def _replace_entry(tmp_path, make):
    model, x = _mlp(), torch.randn(2, 8)
    _compile_into(tmp_path, model, x)
    (entry,) = _entries(tmp_path)
    entry.unlink()
    make(entry)
    done = []

    def call():
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            done.append((fxla.compile(model, cache_dir=tmp_path)(x), seen))
    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(60)
    assert done, "the compile hung on the cache entry"
    got, seen = done[0]
    _close(got, model(x).detach())
    return [str(w.message) for w in seen if issubclass(w.category, CacheWarning)]


def test_an_entry_that_is_a_symlink_to_dev_zero_is_not_read(tmp_path):
    messages = _replace_entry(tmp_path, lambda e: os.symlink("/dev/zero", e))
    assert any("cannot be opened as a regular file" in m for m in messages), messages


def test_an_entry_that_is_a_fifo_does_not_hang(tmp_path):
    messages = _replace_entry(tmp_path, lambda e: os.mkfifo(e))
    assert any("not a regular file" in m for m in messages), messages


def test_an_oversized_entry_is_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_mod, "MAX_ENTRY_BYTES", 64)
    messages = _replace_entry(tmp_path, lambda e: e.write_bytes(b"x" * 65))
    assert any("larger (65 bytes) than fxla reads" in m for m in messages), messages


@pytest.mark.parametrize("header", [b"{", b"[]", b'{"key": 1}', b"[" * 5000 + b"]" * 5000])
def test_a_bad_header_is_a_warning(tmp_path, header):
    def write(entry):
        entry.write_bytes(cache_mod.MAGIC + len(header).to_bytes(8, "big") + header + b"payload")
    messages = _replace_entry(tmp_path, write)
    assert any("ignoring cache entry" in m for m in messages), messages


def test_a_deserialize_error_with_an_empty_message_is_a_warning(tmp_path, monkeypatch):
    model, x = _mlp(), torch.randn(2, 8)
    _compile_into(tmp_path, model, x)

    def fail(*a, **k):
        raise RuntimeError("")
    monkeypatch.setattr(executable_mod, "_deserialize", fail)
    with pytest.warns(CacheWarning, match=r"could not be deserialized \(RuntimeError\)"):
        _close(fxla.compile(model, cache_dir=tmp_path)(x), model(x).detach())
