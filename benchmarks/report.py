"""The output of the benchmarks: lines printed as they come and kept, so ``--markdown`` can write them too
(benchmarks/run.py, benchmarks/shapes.py and benchmarks/training.py all print through a ``Report``)."""
from __future__ import annotations

import os
from typing import List


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
