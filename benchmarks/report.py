"""What the benchmarks share: the output, lines printed as they come and kept, so ``--markdown`` can write them too
(benchmarks/run.py, benchmarks/shapes.py and benchmarks/training.py all print through a ``Report``); the machine's
load; and :class:`WorkerProcess`, the parent's end of a worker subprocess (benchmarks/training.py,
benchmarks/distributed.py)."""
from __future__ import annotations

import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Report:
    """Prints lines and keeps them (``lines``); ``table`` prints a markdown table."""

    def __init__(self):
        self.lines: List[str] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def table(self, header: List[str], rows: List[List[str]]) -> None:
        self("| " + " | ".join(header) + " |")
        self("|" + "---|" * len(header))
        for row in rows:
            self("| " + " | ".join(row) + " |")


def load_average() -> str:
    """The 1/5/15-minute load averages, as "1.0/1.5/2.0" ("n/a" where the system has none)."""
    try:
        return "/".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


def machine_busy() -> bool:
    """Whether the 1-minute load average is above the number of cores (timings then are noisy)."""
    try:
        return os.getloadavg()[0] > (os.cpu_count() or 1)
    except OSError:
        return False


def median_seconds(call: Callable[[], object], runs: int, warmup: int = 1) -> float:
    """The median wall time of ``runs`` calls of ``call`` after ``warmup`` untimed ones (one process, a loop)."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def seconds_text(seconds) -> str:
    """``1.23 s`` or ``45.6 ms`` (``n/a`` for None)."""
    if seconds is None:
        return "n/a"
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1e3:.1f} ms"


def write_section(path: str, text: str, script: str) -> None:
    """Replace the block between ``script``'s BEGIN/END markers in ``path`` (which must have them) with ``text``,
    headings one level down (the block sits under a hand-written heading of the page)."""
    begin, end = f"<!-- {script}: BEGIN -->", f"<!-- {script}: END -->"
    with open(path) as f:
        old = f.read()
    if begin not in old or end not in old:
        raise SystemExit(f"{path} has no {begin} ... {end} markers: add them where the tables belong")
    with open(path, "w") as f:
        text = "\n".join("#" + line if line.startswith("## ") else line for line in text.strip().splitlines())
        f.write(old[:old.index(begin)] + f"{begin}\n{text}\n{end}" + old[old.index(end) + len(end):])


class WorkerProcess:
    """A worker subprocess (run in the repository root), read over its stdout: lines that start with ``prefix`` are
    JSON messages with a ``tag`` (other output is ignored), the last one tagged ``result``.  Any failure (an exit,
    no answer in time) kills it and is kept in ``error``; the result message is kept in ``result``."""

    def __init__(self, cmd: List[str], prefix: str, env: Optional[dict] = None):
        self.prefix = prefix
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr, bufsize=0)
        self._buffer = b""
        self.alive = True
        self.error: Optional[str] = None
        self.result: dict = {}

    def stderr_text(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def kill(self, why: Optional[str] = None) -> None:
        """End the process; ``why``: the failure to keep in ``error`` (with the last line of its stderr)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if why and self.error is None:
            tail = (self.stderr_text().strip().splitlines() or ["(nothing on stderr)"])[-1]
            self.error = f"{why} (status {self.proc.returncode}): {tail[:300]}"
        self.alive = False

    def send(self, text: str) -> None:
        try:
            self.proc.stdin.write(text.encode())
        except (BrokenPipeError, OSError):
            self.kill("the worker exited")

    def receive(self, deadline: float, late: str = "no answer in time") -> Optional[dict]:
        """The next message (its ``tag`` taken out) by ``deadline`` (``time.monotonic()``), or None after killing
        the process (``late``: the error if the time ran out).  After the ``result`` message the process is
        waited for (killed if it has not exited by the deadline) and no longer alive."""
        while self.alive:
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                    self.kill(late)
                    return None
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    self.kill("the worker exited")
                    return None
                self._buffer += chunk
            line, self._buffer = self._buffer.split(b"\n", 1)
            text = line.decode(errors="replace")
            if text.startswith(self.prefix):
                message = json.loads(text[len(self.prefix):])
                if message.pop("tag") == "result":
                    self.result = message
                    try:
                        self.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
                    except subprocess.TimeoutExpired:
                        self.kill()
                    self.alive = False
                return message
        return None


def serve_steps(step: Callable[[], float], say: Callable[..., None]) -> None:
    """A worker's side of the timing (the parent is a :class:`WorkerProcess`): for each ``step <n>`` line on stdin,
    run ``step()`` (which returns the loss) ``n`` times and report each step's wall and CPU seconds and loss with
    ``say("times", wall=..., cpu=..., losses=...)``; return at ``done`` or the end of stdin."""
    for line in sys.stdin:
        command = line.split()
        if not command or command[0] == "done":
            break
        wall, cpu, losses = [], [], []
        for _ in range(int(command[1])):
            c0, t0 = time.process_time(), time.perf_counter()
            losses.append(step())
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        say("times", wall=wall, cpu=cpu, losses=losses)
