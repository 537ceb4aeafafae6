"""Render the op table as Markdown: ``python -m fxla.dialects.fxla.docs > docs/dialect.md``."""
from __future__ import annotations

import sys

from .ops import ALL_OPS, __doc__ as OPS_DOC


def render_markdown() -> str:
    lines = ["# The `fxla` dialect", "", "Generated from `dialects/fxla/ops.py` by "
             "`python -m fxla.dialects.fxla.docs`; do not edit by hand.", ""]
    lines += OPS_DOC.strip().splitlines()[2:]
    lines.append("")
    for op in ALL_OPS:
        lines += [f"## `{op.name}`", "", op.summary + (f" Mirrors `{op.torch}`." if op.torch else ""), ""]
        if op.operands:
            lines.append("| operand | element types | notes |")
            lines.append("|---|---|---|")
            for o in op.operands:
                note = ("optional; " if o.optional else "") + ("variadic; " if o.variadic else "") + o.doc
                lines.append(f"| `{o.name}` | {', '.join(o.elems)} | {note} |")
            lines.append("")
        if op.attributes:
            lines.append("| attribute | kind | default | meaning |")
            lines.append("|---|---|---|---|")
            for a in op.attributes:
                default = "required" if a.required else f"`{a.default!r}`"
                lines.append(f"| `{a.name}` | {a.kind.name} | {default} | {a.doc} |")
            lines.append("")
        lines.append("Results: " + ", ".join(f"`{r}`" for r in op.results) + ".")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render_markdown())
