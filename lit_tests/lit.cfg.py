# -*- Python -*-
"""lit configuration for fxla's compiler tests (fxla-opt / fxla-dump + FileCheck).

Works two ways:

* directly from the source tree, with no site config:  ``.venv/bin/lit -sv lit_tests``
  (tools are taken from the directory of the Python running lit; outputs go to lit_tests/Output/,
  which is gitignored);
* through the CMake-configured site config ``<build>/lit_tests/lit.site.cfg.py``, which sets
  ``fxla_obj_root`` / ``fxla_tools_dir`` / ``python_executable`` and then loads this file
  (``cmake --build build --target check-fxla-lit``).
"""
import os
import re
import shutil
import sys

import lit.formats

config.name = "fxla"
# lit's internal shell (execute_external=True is deprecated in lit >= 23 and raises).
config.test_format = lit.formats.ShTest()
# .py: the torch -> fxla tests of TorchToFxla/ (Python programs printing IR through fxla.testing); helper
# modules do not live under lit_tests/ (fxla.testing is part of the package), so every other .py is excluded.
config.suffixes = [".mlir", ".py"]
config.excludes = ["Inputs", "Output", "CMakeLists.txt", "README.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "lit.local.cfg", "__init__.py", "__pycache__"]

config.test_source_root = os.path.dirname(os.path.abspath(__file__))
_obj_root = getattr(config, "fxla_obj_root", None)
if _obj_root:
    config.test_exec_root = os.path.join(_obj_root, "lit_tests")
else:
    config.test_exec_root = os.path.join(config.test_source_root, "Output")

# --- tools ----------------------------------------------------------------------------------------------------
python = getattr(config, "python_executable", None) or sys.executable
tools_dir = getattr(config, "fxla_tools_dir", None) or os.path.dirname(python)


def _tool(name):
    """Absolute path of a console script: next to the Python in use (or the site's tools dir), else on PATH."""
    candidate = os.path.join(tools_dir, name)
    if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which(name)
    if found:
        return found
    lit_config.fatal(f"cannot find '{name}' in {tools_dir} or on PATH "
                     f"(install fxla and its test extras: pip install -e '.[test]')")


def _word(name):
    """A regex matching ``name`` as a whole command word, not inside a path or a longer name."""
    return r"(?<![\w./-])" + re.escape(name) + r"(?![\w./-])"


config.substitutions.append(("%python", python))
for tool, exe in (("fxla-opt", "fxla-opt"), ("fxla-dump", "fxla-dump"), ("FileCheck", "filecheck")):
    config.substitutions.append((_word(tool), _tool(exe)))

# --- environment ----------------------------------------------------------------------------------------------
config.environment["PATH"] = os.pathsep.join([tools_dir, config.environment.get("PATH", "")])
for var in ("HOME", "JAX_PLATFORMS", "JAX_ENABLE_X64", "XLA_FLAGS", "CUDA_VISIBLE_DEVICES", "TORCH_HOME"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
