"""utils/lit_python.py, the fork server lit runs Python RUN lines through: a command run by it behaves as
``python ARGS...`` would (output, input, exit status, argv, working directory, environment), and runs all the
same when no server is listening."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "utils", "lit_python.py")
PROBE = """import os
SEEN = os.environ.get("FXLA_LPT_SEEN")      # looked up at import: the server's value counts
os.environ["FXLA_LPT_SET"] = "by-import"    # set at import: every command sees it, as in a fresh interpreter
"""


@pytest.fixture
def server(tmp_path):
    (tmp_path / "lpt_probe.py").write_text(PROBE)   # the preload (lit's are torch, jax and fxla)
    folder = tempfile.mkdtemp(prefix="fxla-lpt-")    # a short path: unix socket paths are limited
    sock = os.path.join(folder, "s")
    proc = subprocess.Popen([sys.executable, SCRIPT, "serve", sock, "lpt_probe"], stdin=subprocess.PIPE,
                            env=_env(FXLA_LPT_SEEN="server", PYTHONPATH=str(tmp_path)))
    deadline = time.monotonic() + 60
    while not os.path.exists(sock) and time.monotonic() < deadline:
        time.sleep(0.05)
    yield sock
    proc.stdin.close()                   # end of file: the server exits and removes its socket
    assert proc.wait(timeout=60) == 0
    assert not os.path.exists(sock)
    os.rmdir(folder)


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXLA_LPT_")}
    env.update(extra)
    return env


def run(sock, *args, input=None, env=None, cwd=None):
    command = [sys.executable, "-I", "-S", SCRIPT, "run", sock, sys.executable, *args]
    return subprocess.run(command, input=input, capture_output=True, text=True, timeout=120, env=env, cwd=cwd)


def test_a_script_gets_its_argv_streams_cwd_and_exit_status(server, tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import os, sys\n"
                      "print(sys.argv[1:], os.getcwd(), sys.path[0], __name__, sys.stdin.read().upper())\n"
                      "print('to stderr', file=sys.stderr)\n"
                      "sys.exit(3)\n")
    done = run(server, str(script), "a", "b c", input="abc", cwd=str(tmp_path))
    assert done.returncode == 3, done.stderr
    assert done.stdout == f"['a', 'b c'] {tmp_path} {tmp_path} __main__ ABC\n"
    assert done.stderr == "to stderr\n"


def test_code_module_exceptions_and_atexit(server, tmp_path):
    assert run(server, "-c", "import sys; print(sys.argv)", "x").stdout == "['-c', 'x']\n"
    assert run(server, "-m", "json.tool", input='{"a": 1}').stdout == '{\n    "a": 1\n}\n'
    failed = run(server, "-c", "raise KeyError('boom')")
    assert failed.returncode == 1 and "KeyError: 'boom'" in failed.stderr and "Traceback" in failed.stderr
    exits = run(server, "-c", "import atexit, os, sys\n"
                              "atexit.register(lambda: (print('bye', flush=True), os._exit(5)))\nprint('hi')")
    assert (exits.returncode, exits.stdout) == (5, "hi\nbye\n")
    assert run(server, "-c", "import sys; sys.exit('why')").returncode == 1


def test_environment_is_the_clients_and_a_changed_import_time_variable_gets_a_fresh_interpreter(server, tmp_path):
    code = ("import os, sys; preloaded = 'lpt_probe' in sys.modules; import lpt_probe; "
            "print(preloaded, lpt_probe.SEEN, os.environ.get('FXLA_LPT_NEW'), os.environ['FXLA_LPT_SET'])")
    same = _env(FXLA_LPT_SEEN="server", FXLA_LPT_NEW="1", PYTHONPATH=str(tmp_path))
    assert run(server, "-c", code, env=same).stdout == "True server 1 by-import\n"
    other = dict(same, FXLA_LPT_SEEN="client")
    assert run(server, "-c", code, env=other).stdout == "False client 1 by-import\n"


def test_without_a_server_the_client_runs_python_itself(tmp_path):
    done = run(str(tmp_path / "no-such-socket"), "-c", "import sys; print(sys.argv); sys.exit(4)", "y")
    assert (done.returncode, done.stdout) == (4, "['-c', 'y']\n")
    # an interpreter option the server does not take is run by python itself too
    assert run(str(tmp_path / "no-such-socket"), "-S", "-c", "print(7)").stdout == "7\n"


def test_the_server_takes_commands_while_others_run(server):
    slow = subprocess.Popen([sys.executable, "-I", "-S", SCRIPT, "run", server, sys.executable, "-c",
                             "import time; time.sleep(2); print('slow')"], stdout=subprocess.PIPE, text=True)
    started = time.monotonic()
    assert run(server, "-c", "print('fast')").stdout == "fast\n"
    assert time.monotonic() - started < 2
    assert slow.communicate(timeout=60)[0] == "slow\n"
