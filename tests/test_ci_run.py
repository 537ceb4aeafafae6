""".ci/run, CI's entry point, in a sandbox: a copy of the script and tests/chromium.py, a Makefile whose ``test``
prints $CI, and a PATH of stand-ins (``id``, ``apt-get``, ``sudo``, a browser), so that no package is installed
and no test suite runs.  CI is set when unset, a browser under any name tests/chromium.py accepts is used as it
is, a missing one is installed once (quietly), and a user who cannot install it gets a clear message."""
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _script(path, text: str) -> None:
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)


@pytest.fixture
def sandbox(tmp_path):
    (tmp_path / ".ci").mkdir()
    (tmp_path / "tests").mkdir()
    shutil.copy(os.path.join(ROOT, ".ci", "run"), tmp_path / ".ci" / "run")
    shutil.copy(os.path.join(ROOT, "tests", "chromium.py"), tmp_path / "tests" / "chromium.py")
    (tmp_path / "Makefile").write_text("test:\n\t@echo make test with CI=$$CI\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "env", "make"):
        os.symlink(shutil.which(tool), bin_dir / tool)
    return tmp_path


def run_ci(sandbox, uid=0, env=()):
    """``(returncode, stdout, stderr)`` of the sandbox's .ci/run, as user ``uid`` (a stand-in ``id``)."""
    _script(sandbox / "bin" / "id", f'case "$1" in -u) echo {uid};; *) echo builder;; esac\n')
    environ = {"PATH": str(sandbox / "bin"), "PYTHON": sys.executable, "HOME": str(sandbox), **dict(env)}
    done = subprocess.run([str(sandbox / ".ci" / "run")], env=environ, capture_output=True, text=True,
                          timeout=60)
    return done.returncode, done.stdout, done.stderr


def installer(sandbox, name: str) -> None:
    """A stand-in ``name`` (apt-get or sudo) that logs its arguments; apt-get's install puts a chromium on PATH."""
    _script(sandbox / "bin" / name, f'echo "{name} $*" >> "{sandbox}/log"\n'
            + ('[ "$1" = install ] && printf "#!/bin/sh\\n" > "$(dirname "$0")/chromium" '
               f'&& {shutil.which("chmod")} +x "$(dirname "$0")/chromium"\nexit 0\n' if name == "apt-get" else 'exec "$@"\n'))


@pytest.mark.parametrize("browser", ["chromium", "chromium-browser", "google-chrome"])
def test_a_browser_under_any_accepted_name_is_used_and_ci_is_set(sandbox, browser):
    _script(sandbox / "bin" / browser, "exit 0\n")
    installer(sandbox, "apt-get")
    rc, out, err = run_ci(sandbox)
    assert (rc, out, err) == (0, "make test with CI=true\n", "")
    assert not (sandbox / "log").exists()                           # nothing installed
    assert run_ci(sandbox, env={"CI": "false"})[1] == "make test with CI=false\n"    # CI's own value kept


def test_a_missing_browser_is_installed_once_quietly(sandbox):
    installer(sandbox, "apt-get")
    installer(sandbox, "sudo")
    rc, out, err = run_ci(sandbox, uid=1000)
    assert (rc, out, err) == (0, "make test with CI=true\n", "")
    log = (sandbox / "log").read_text().splitlines()
    assert log[0] == "sudo apt-get update -qq" and log[2].startswith("sudo env DEBIAN_FRONTEND=noninteractive "
                                                                    "apt-get install -y -qq")
    assert "chromium fonts-dejavu-core" in log[2]
    assert run_ci(sandbox, uid=1000)[:2] == (0, "make test with CI=true\n") and len(
        (sandbox / "log").read_text().splitlines()) == len(log)           # the second run installs nothing


def test_a_user_without_sudo_gets_a_clear_message(sandbox):
    installer(sandbox, "apt-get")
    rc, out, err = run_ci(sandbox, uid=1000)
    assert rc == 1 and out == "" and "command not found" not in err
    assert "no Chromium on PATH (chromium, chromium-browser or google-chrome" in err
    assert "no sudo to install it as builder" in err and "fix: as root, apt-get install chromium" in err
    assert not (sandbox / "log").exists()


def test_no_apt_get_is_a_clear_message(sandbox):
    rc, out, err = run_ci(sandbox)
    assert rc == 1 and out == "" and "no apt-get to install it with" in err and "fix: " in err
