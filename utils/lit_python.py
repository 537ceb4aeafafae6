"""A fork server for the Python commands of fxla's lit tests: torch, jax and fxla are imported once per lit run.

Every RUN line of ``lit_tests/`` that runs Python (``%python %s``, ``fxla-opt``, ``fxla-dump``, ``FileCheck``)
would otherwise start a fresh interpreter that imports torch and jax (5-20 s each on a loaded 2-core machine).
``lit_tests/lit.cfg.py`` starts one server per lit run and substitutes those commands with this file's client:

    python lit_python.py serve SOCKET MODULE...       # the server: bind SOCKET, import MODULEs, then serve
    python -I -S lit_python.py run SOCKET PYTHON ARGS...   # the client: what ``PYTHON ARGS...`` would do

The client hands its standard input, output and error (the file descriptors themselves), its argument list,
working directory and environment to the server, which forks a child (a copy of itself with everything already
imported) that runs the program the way ``PYTHON ARGS...`` would -- ``ARGS[0]`` is a script (a test file, or a
console script such as ``.venv/bin/fxla-opt``), or ``-m MODULE`` / ``-c CODE`` -- and the client exits with the
child's exit status.  Each command runs in its own fresh child, so nothing leaks from one test to the next.

The child runs with the client's environment, plus what the imports set (``TF_CPP_MIN_LOG_LEVEL``...).  The
server records which environment variables the imports looked up from Python (``os.environ``, ``os.getenv``); when
the client's value of one of them differs from the server's (``env JAX_ENABLE_X64=1 %python ...``), the child
``exec``s a fresh ``PYTHON ARGS...`` instead, so such a command sees what a fresh interpreter would.  (A variable
that native code reads with ``getenv`` while the modules import is not seen: the server's value counts.)

Whenever the server cannot take the command (an interpreter option it does not know, no server listening, the
server gone before it accepted the command), the client ``exec``s ``PYTHON ARGS...`` itself: a command never
depends on the server to run, only to run fast.  The server exits when its standard input reaches end of file,
i.e. when the lit process that started it (and holds the other end of the pipe) exits.
"""
from __future__ import annotations

import json
import os
import socket
import sys

_MAX_REQUEST = 1 << 20       # the request is JSON: argv, cwd, environment, and python + args to exec
_ACCEPTED = b"A"             # the server forked a child for the request
_STATUS = "!i"               # then the child's exit status


# --- client ---------------------------------------------------------------------------------------------------
def _program(args):
    """``(kind, target, argv)`` for the interpreter arguments ``args``, or ``None`` when the server cannot run them
    (an interpreter option, an interactive interpreter)."""
    if not args:
        return None
    if args[0] == "-m" and len(args) > 1:
        return "module", args[1], [args[1]] + args[2:]
    if args[0] == "-c" and len(args) > 1:
        return "code", args[1], ["-c"] + args[2:]
    if args[0].startswith("-"):
        return None
    return "script", os.path.abspath(args[0]), args


def _client(sock_path, python, args):
    program = _program(args)
    if program is not None:
        status = _submit(sock_path, python, args, program)
        if status is not None:
            return status
    os.execv(python, [python] + args)


def _submit(sock_path, python, args, program):
    """The exit status of ``program`` run by the server, or ``None`` when the server did not take it."""
    kind, target, argv = program
    request = json.dumps({"kind": kind, "target": target, "argv": argv, "cwd": os.getcwd(),
                          "env": dict(os.environ), "python": python, "args": args}).encode()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(sock_path)
        socket.send_fds(conn, [len(request).to_bytes(4, "big") + request], [0, 1, 2])
        if conn.recv(1) != _ACCEPTED:
            return None
    except OSError:
        return None
    reply = b""
    while len(reply) < 4:
        chunk = conn.recv(4 - len(reply))
        if not chunk:
            sys.stderr.write("lit_python: the server exited while running the command\n")
            return 1
        reply += chunk
    return int.from_bytes(reply, "big", signed=True)


# --- server ---------------------------------------------------------------------------------------------------
def _serve(sock_path, modules):
    import select
    import signal

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock_path)
    listener.listen(256)          # clients that connect while the modules import wait in the backlog
    try:
        environ = _preload(modules)           # (looked up, changed) at import
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        running = {}
        while True:
            ready, _, _ = select.select([listener, sys.stdin, wake_r], [], [])
            if wake_r in ready:
                os.read(wake_r, 4096)
            _reap(running)
            if sys.stdin in ready and not os.read(sys.stdin.fileno(), 4096):
                return
            if listener in ready:
                conn, _ = listener.accept()
                server_fds = [listener.fileno(), sys.stdin.fileno(), wake_r, wake_w]
                pid = _start(conn, server_fds + [other.fileno() for other in running.values()], environ)
                if pid is not None:
                    running[pid] = conn
    finally:
        os.unlink(sock_path)


def _preload(modules):
    """Import ``modules`` (one that fails is left to the commands that import it, which report the error as a
    fresh interpreter would).  Returns the environment variables they looked up, with the values they saw
    (``None``: unset), and the ones they set or removed (``None``: removed)."""
    import importlib

    before = dict(os.environ)
    environ_type = type(os.environ)
    lookup = environ_type.__getitem__
    seen = {}

    def recording_lookup(self, key):          # the first look-up of a name sees the environment as it was given
        if key not in seen:
            seen[key] = None
            seen[key] = lookup(self, key)
        return lookup(self, key)

    environ_type.__getitem__ = recording_lookup
    try:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:       # noqa: BLE001
                pass
    finally:
        environ_type.__getitem__ = lookup
    after = dict(os.environ)
    changed = {key: after.get(key) for key in set(before) | set(after) if after.get(key) != before.get(key)}
    return seen, changed


def _reap(running):
    while running:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = running.pop(pid, None)
        if conn is not None:
            try:
                conn.sendall(os.waitstatus_to_exitcode(wait_status).to_bytes(4, "big", signed=True))
            except OSError:
                pass
            conn.close()


def _start(conn, server_fds, environ):
    """Read one request from ``conn`` and fork the child that runs it; its pid, or ``None`` for a bad request."""
    try:
        conn.settimeout(10)
        data, fds, _, _ = socket.recv_fds(conn, _MAX_REQUEST, 3)
        size = int.from_bytes(data[:4], "big")
        while len(data) < size + 4:
            chunk = conn.recv(size + 4 - len(data))
            if not chunk:
                raise OSError("short request")
            data += chunk
        request = json.loads(data[4:])
        if len(fds) != 3:
            raise OSError("the request carries no standard streams")
    except (OSError, ValueError):
        conn.close()
        return None
    pid = os.fork()
    if pid == 0:
        _child(conn, fds, request, server_fds, environ)
    for fd in fds:
        os.close(fd)
    try:
        conn.sendall(_ACCEPTED)
    except OSError:
        pass                  # the client is gone; the child's status is dropped when it ends
    return pid


def _child(conn, fds, request, server_fds, environ):
    import signal

    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for fd in server_fds:
        os.close(fd)
    conn.close()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    env = request["env"]
    looked_up, changed = environ
    os.chdir(request["cwd"])
    if any(env.get(key) != value for key, value in looked_up.items()):
        # the preloaded modules saw another value of a variable at import: run a fresh interpreter instead
        os.execve(request["python"], [request["python"]] + request["args"], env)
    os.environ.clear()
    os.environ.update(env)
    for key, value in changed.items():        # as the imports left it in a fresh interpreter
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    _reopen_std_streams()
    os._exit(_run(request))


def _reopen_std_streams():
    """New ``sys.stdin``/``stdout``/``stderr`` over file descriptors 0, 1 and 2 (now the client's), made as the
    interpreter makes them at start-up: the server's objects describe the server's files (seekable, buffered)."""
    streams = []
    for fd, old, mode in ((0, sys.__stdin__, "r"), (1, sys.__stdout__, "w"), (2, sys.__stderr__, "w")):
        streams.append(open(fd, mode, encoding=old.encoding, errors=old.errors, newline="\n", closefd=False,
                            buffering=-1 if fd == 0 else 1 if fd == 2 or os.isatty(fd) else -1))
    sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams


def _run(request):
    """Run the request's program as ``python ARGS...`` would, in this process; its exit status."""
    import atexit
    import runpy

    sys.argv = list(request["argv"])
    kind, target = request["kind"], request["target"]
    sys.path[0] = os.path.dirname(target) if kind == "script" else os.getcwd()
    status = 0
    try:
        if kind == "script":
            runpy.run_path(target, run_name="__main__")
        elif kind == "module":
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            exec(compile(target, "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except BaseException:
        sys.excepthook(*sys.exc_info())
        status = 1
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                status = status or 120      # python's status when flushing standard output fails at exit
    return status


def _exit_status(code):
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    sys.stderr.write(f"{code}\n")
    return 1


def main(argv):
    if len(argv) >= 2 and argv[0] == "serve":
        _serve(argv[1], argv[2:])
    elif len(argv) >= 3 and argv[0] == "run":
        sys.exit(_client(argv[1], argv[2], argv[3:]))
    else:
        sys.exit("usage: lit_python.py serve SOCKET MODULE... | run SOCKET PYTHON ARGS...")


if __name__ == "__main__":
    main(sys.argv[1:])
