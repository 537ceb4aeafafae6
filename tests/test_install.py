"""The development install (``make``: ``pip install -e`` plus utils/install_finder.py) cannot be shadowed: a
script next to a folder named ``fxla`` (a clone of this repository, say) still imports the real package."""
import os
import subprocess
import sys

import pytest

import fxla

REAL = os.path.realpath(fxla.__file__)
# cheap: `import fxla` imports no stage (fxla.compile would import torch and jax)
CHECK = "import fxla, os; print(os.path.realpath(fxla.__file__)); print('compile' in fxla.__all__)"


def _run(args, cwd):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.fixture
def shadow(tmp_path):
    (tmp_path / "fxla").mkdir()                           # an empty folder named like the package
    (tmp_path / "fxla" / "api").mkdir()                   # ... or a clone's (no __init__.py at its top)
    (tmp_path / "script.py").write_text(CHECK + "\n")
    return tmp_path


def test_script_next_to_a_folder_named_fxla_gets_the_real_package(shadow):
    assert _run(["script.py"], shadow) == [REAL, "True"]


def test_command_in_a_folder_holding_fxla_gets_the_real_package(shadow):
    assert _run(["-c", CHECK], shadow) == [REAL, "True"]


def test_stage_packages_come_from_their_folders(shadow):
    code = ("import importlib.util, os; print(*[os.path.basename(os.path.dirname(importlib.util.find_spec(m).origin)) "
            "for m in ('fxla.base', 'fxla.frontend', 'fxla.lowering', 'fxla.runtime')])")
    assert _run(["-c", code], shadow) == ["base", "frontend", "lowering", "runtime"]
