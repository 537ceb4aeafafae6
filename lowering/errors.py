"""Errors of the lowering stage."""
from __future__ import annotations

from typing import Sequence, Tuple

from fxla.base.errors import FxlaError, format_location


class LoweringError(FxlaError):
    """A graph node or fxla op could not be lowered (bad arguments, an unsupported configuration, …)."""


class UnsupportedOpError(LoweringError):
    """The graph uses ops fxla has no lowering rule for.  ``ops`` lists ``(description, SourceLocation)``."""

    def __init__(self, ops: Sequence[Tuple[str, object]]):
        self.ops = list(ops)
        lines = [f"fxla cannot lower {len(self.ops)} op{'s' * (len(self.ops) != 1)} of this program:"]
        for what, loc in self.ops:
            lines.append(f"- {what}")
            lines.append("  " + format_location(loc).lstrip().replace("\n", "\n  "))
        super().__init__("\n".join(lines),
                         why="why: these torch ops have no lowering rule in fxla yet "
                             "(fxla.lowering.coverage() lists the supported ones).",
                         fix="rewrite them with supported ops, mark the enclosing module as a leaf only if it is "
                             "supported, or add a rule with @fxla.lowering.register(<op>).")


def node_error(node, what: str, why: str, fix: str) -> LoweringError:
    """A :class:`LoweringError` pointing at the user's source line of ``node``."""
    return LoweringError(f"{what} (graph node '{node.name}')", where=node.meta.get("source"), why=why, fix=fix)
