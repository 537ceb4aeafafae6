"""Render the supported-op table: ``python -m fxla.lowering.coverage_doc > docs/ops.md``.

The table is generated from :func:`fxla.lowering.coverage` (every key of the rule table); the list of known
unsupported ops below is maintained by hand, with the reason for each.
"""
from __future__ import annotations

import sys

from . import coverage

#: (op, why it is not lowered) — kept short; grouped by reason.
KNOWN_UNSUPPORTED = (
    ("boolean-mask indexing `x[mask]`, `torch.nonzero`, `torch.masked_select`, `torch.unique`, `torch.where(cond)`",
     "the result shape depends on the data; fxla programs have static shapes"),
    ("in-place mutation (`x[i] = v`, `Tensor.add_`, `Tensor.scatter_`, `out=`)",
     "fxla programs are functional; use the out-of-place op"),
    ("indexing with several tensor indices (`x[i, j]`)", "only one advanced index is lowered; use torch.gather"),
    ("named-tuple fields `torch.max(x, 1).values`",
     "frontend shape propagation turns torch.return_types into plain tuples (index with [0]/[1] instead)"),
    ("`torch.zeros(x.size(0), 3)` and other size lists mixing traced ints",
     "the tracer cannot pass a traced int inside a size list to torch factories yet (use x.new_zeros or *_like)"),
    ("`F.dropout` / `nn.Dropout` in training mode", "random masks are not lowered; call model.eval()"),
    ("`scatter(reduce='multiply')`, `scatter_reduce`, `index_add`, `index_copy`",
     "not lowered yet; scatter and scatter_add are"),
    ("`torch.cumprod`, `cummax`, `logcumsumexp`, `torch.kron`, `torch.rot90`, `torch.special.*` (Bessel, i0e, erfcx)",
     "not lowered yet"),
    ("`torch.linalg.*`, `torch.fft.*`, complex dtypes", "no fxla ops for decompositions, FFTs or complex numbers"),
    ("RNNs (`nn.LSTM`, `nn.GRU`), `nn.Bilinear`, `nn.EmbeddingBag` with offsets (1-D input)", "not lowered yet"),
    ("`F.pad` modes other than constant, `F.interpolate` modes bicubic/area, `adaptive_max_pool*`, "
     "`adaptive_avg_pool3d`, `max_pool1d/3d`", "not lowered yet"),
    ("`torch.einsum` with a repeated subscript in one operand (diagonals)", "not lowered yet"),
    ("`batch_norm` with batch statistics (training mode)", "fxla lowers the eval form with running statistics"),
)


def render_markdown() -> str:
    cov = coverage()
    total = sum(len(v) for v in cov.values())
    lines = ["# Supported torch operations", "",
             "Generated from `fxla.lowering.coverage()` by `python -m fxla.lowering.coverage_doc`; do not edit by "
             "hand.", "",
             f"{total} op objects have a lowering rule: {len(cov['functions'])} functions, "
             f"{len(cov['methods'])} Tensor methods, {len(cov['modules'])} nn modules.  Every one is checked "
             "numerically against eager PyTorch by `tests/test_ops*.py`.", ""]
    for kind in ("functions", "methods", "modules"):
        lines += [f"## {kind.capitalize()}", "", "| op |", "|---|"]
        lines += [f"| `{name}` |" for name in cov[kind]]
        lines.append("")
    lines += ["## Known unsupported", "", "| op | why |", "|---|---|"]
    lines += [f"| {op} | {why} |" for op, why in KNOWN_UNSUPPORTED]
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render_markdown())
