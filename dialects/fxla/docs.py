"""Render the op table as Markdown, family by family: ``python -m fxla.dialects.fxla.docs > docs/dialect.md``."""
from __future__ import annotations

import importlib
import re
import sys
from typing import List

from . import syntax
from .opdef import OpDef
from .ops import FAMILIES, LEGACY_BY_NAME, __doc__ as OPS_DOC
from .syntax import synopsis

_SEE_OPS = " (part of the op table; see :mod:`.ops`)"


def _family_summary(family: str) -> List[str]:
    """The first paragraph of ``ops_<family>.py``'s docstring, as Markdown lines."""
    doc = importlib.import_module(f"{__package__}.ops_{family}").__doc__ or ""
    first = " ".join(doc.strip().split("\n\n")[0].split())
    return [first.replace(_SEE_OPS, "").replace("``", "`")]


def _syntax_section() -> List[str]:
    """The dialect's textual syntax: :mod:`.syntax`'s docstring (its title line becomes the section's lead)."""
    doc = (syntax.__doc__ or "").strip().split("\n\n", 1)[1]
    doc = doc.replace("``", "`").replace(":class:`IRSyntaxError`", "`IRSyntaxError`")
    doc = re.sub(r":(?:func|class|mod|data):`~?\.?([\w.]+)`", r"`\1`", doc)
    doc = doc.replace("::\n", ":\n")
    return ["## Syntax", "", "fxla prints its ops in a syntax of their own (`fxla.dialects.fxla.syntax`); "
            "`fxla-opt` reads it and MLIR's generic form alike.  Each op section below shows its form.", "",
            doc, ""]


def _op_section(op: OpDef) -> List[str]:
    lines = [f"### `{op.name}`", "", op.summary + (f" Mirrors `{op.torch}`." if op.torch else ""), "",
             f"    {synopsis(op)}", ""]
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
    return lines


def render_markdown() -> str:
    lines = ["# The `fxla` dialect", "", "Generated from `dialects/fxla/ops*.py` by "
             "`python -m fxla.dialects.fxla.docs`; do not edit by hand.", ""]
    lines += OPS_DOC.strip().splitlines()[2:]
    lines.append("")
    lines.append("Families: " + ", ".join(f"[{family}](#{family})" for family in FAMILIES) + ".")
    lines.append("")
    lines += _syntax_section()
    for family, family_ops in FAMILIES.items():
        lines += [f"## {family}", "", f"`dialects/fxla/ops_{family}.py`, lowered by "
                  f"`lowering/patterns/{family}.py`, checked by `lit_tests/Conversion/FxlaToStablehlo/{family}.mlir`.",
                  ""]
        lines += _family_summary(family) + [""]
        for op in family_ops:
            lines += _op_section(op)
    if LEGACY_BY_NAME:
        lines += ["## Legacy spellings", "", "Former names still accepted in IR (they parse, verify, print back under "
                  "their own name and lower), never emitted by fxla and not part of the families above.", ""]
        for op in LEGACY_BY_NAME.values():
            lines += _op_section(op)
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render_markdown())
