"""The on-disk executable cache is on by default, in the user's cache folder (XDG base directory convention).

Each case runs fresh processes (the test session itself turns the default off, see conftest.py) with
``XDG_CACHE_HOME`` pointing into a temporary folder, never the user's.
"""
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

PROGRAM = r"""
import json, warnings, torch, fxla
from fxla.runtime import compile_stats, get_cache_dir
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    fast = fxla.compile(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval().requires_grad_(False))
    y = fast(torch.randn(2, 4))
print(json.dumps(dict(dir=get_cache_dir(), stats=compile_stats(),
                      warnings=[str(w.message) for w in caught])))
"""


def _run(env_xdg, home):
    env = dict(os.environ, XDG_CACHE_HOME=env_xdg, HOME=home)
    out = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_second_process_deserializes_instead_of_compiling(tmp_path):
    xdg = str(tmp_path / "xdg")
    first, second = _run(xdg, str(tmp_path)), _run(xdg, str(tmp_path))
    assert first["dir"] == os.path.join(xdg, "fxla")
    assert first["stats"]["compiles"] == 1 and first["stats"]["disk_writes"] == 1
    assert second["stats"]["compiles"] == 0 and second["stats"]["disk_hits"] == 1
    folder = tmp_path / "xdg" / "fxla"
    assert oct(folder.stat().st_mode & 0o777) == "0o700" and len(list(folder.iterdir())) == 1


def test_without_xdg_cache_home_the_folder_is_under_home(tmp_path):
    got = _run("", str(tmp_path))           # unset / not absolute: ~/.cache/fxla
    assert got["dir"] == os.path.join(str(tmp_path), ".cache", "fxla") and got["stats"]["disk_writes"] == 1


def test_a_default_folder_that_cannot_be_made_is_a_warning_not_an_error(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder's parent would be")
    got = _run(str(blocker), str(tmp_path))
    assert got["stats"]["compiles"] == 1 and got["stats"]["disk_writes"] == 0
    assert any("compiling without the on-disk cache" in w for w in got["warnings"])


def test_a_chosen_folder_that_cannot_be_made_is_an_error(tmp_path):
    import torch

    import fxla
    blocker = tmp_path / "file"
    blocker.write_text("x")
    fast = fxla.compile(torch.nn.Linear(2, 2), cache_dir=str(blocker / "cache"))
    with pytest.raises(fxla.runtime.CacheError, match="cannot use"):
        fast(torch.randn(1, 2))
