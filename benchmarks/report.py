"""The output of the benchmarks: lines printed as they come and kept, so ``--markdown`` can write them too
(benchmarks/run.py, benchmarks/shapes.py and benchmarks/training.py all print through a ``Report``)."""
from __future__ import annotations

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
