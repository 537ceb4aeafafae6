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
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile

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


# --- environment ----------------------------------------------------------------------------------------------
config.environment["PATH"] = os.pathsep.join([tools_dir, config.environment.get("PATH", "")])
for var in ("HOME", "JAX_PLATFORMS", "JAX_ENABLE_X64", "XLA_FLAGS", "CUDA_VISIBLE_DEVICES", "TORCH_HOME"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# fxla's on-disk executable cache is on by default in the user's cache folder ($XDG_CACHE_HOME/fxla): the tests
# use one of their own, under lit's output folder, so they never read or write the user's
config.environment["XDG_CACHE_HOME"] = os.path.join(config.test_exec_root, "xdg-cache")


# --- Python commands: one fork server per lit run -----------------------------------------------------------
# Every Python command of a RUN line (%python, fxla-opt, fxla-dump, FileCheck) goes through utils/lit_python.py:
# a client that hands the command to a server started here, which imports torch, jax and fxla once and forks a
# fresh child per command (the child runs it exactly as `python ARGS...` would; without the server, the client
# runs `python ARGS...` itself).  The server exits with this lit process (end of file on its standard input).
PRELOAD = ("fxla", "fxla.testing", "fxla.tools.opt", "fxla.tools.dump", "filecheck.main")
_client_script = os.path.join(os.path.dirname(config.test_source_root), "utils", "lit_python.py")


def _start_server():
    """Start the fork server; the socket path its clients connect to."""
    sock_dir = tempfile.mkdtemp(prefix="fxla-lit-")   # short: a unix socket path has at most 107 bytes
    sock = os.path.join(sock_dir, "python.sock")
    server = subprocess.Popen([python, _client_script, "serve", sock, *PRELOAD], stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, env=dict(config.environment),
                              close_fds=True)

    def stop():
        server.stdin.close()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(sock_dir, ignore_errors=True)

    atexit.register(stop)
    return sock


def _is_python_script(path):
    try:
        with open(path, "rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


_via_server = [python, "-I", "-S", _client_script, "run", _start_server(), python]
config.substitutions.append(("%python", " ".join(_via_server)))
for tool, exe in (("fxla-opt", "fxla-opt"), ("fxla-dump", "fxla-dump"), ("FileCheck", "filecheck")):
    path = _tool(exe)
    config.substitutions.append((_word(tool), " ".join(_via_server + [path]) if _is_python_script(path) else path))
