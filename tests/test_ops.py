"""The harness that checks every lowering rule of ``fxla.lowering.RULES`` against eager PyTorch on the CPU.

The cases live next to their rules' family: ``tests/test_ops_<family>.py`` holds the cases of
``lowering/rules/<family>.py`` (``tests/test_families.py`` checks the names; ``ctc`` shares ``test_ops_losses.py``).
Each such file has a ``CASES`` table: one :class:`Case` per (op object, form), each naming the ``RULES`` keys it
exercises (its first key names its family).  A case runs once per dtype in its ``dtypes``; the compiled result must
match eager in values *and* dtype, and the traced graph must really contain the keys (so a case cannot silently
test some other rule).  ``test_every_rule_has_a_case`` makes a new rule without a case fail the suite.
"""
from __future__ import annotations

import importlib
import pathlib
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Tuple

import pytest
import torch
import torch.nn as nn
from torch.utils import _pytree as pytree

import fxla
from fxla.frontend.passes import functionalize
from fxla.lowering import RULES
from fxla.lowering.registry import _label, op_key

F32, F16, BF16, F64 = torch.float32, torch.float16, torch.bfloat16, torch.float64
I64, I32, BOOL = torch.int64, torch.int32, torch.bool
FLOATS = (F32, F16, BF16)
NUMERIC = (F32, F16, BF16, I64)

#: base tolerance per dtype (relative, and absolute relative to the result's magnitude)
BASE_TOL = {F32: 1e-5, F64: 1e-12, F16: 2e-3, BF16: 1e-2}

SHORT = {F32: "f32", F16: "f16", BF16: "bf16", F64: "f64", I64: "i64", I32: "i32", BOOL: "bool",
         torch.uint8: "u8"}


@dataclass(frozen=True)
class T:
    """An input tensor: ``shape``; ``dtype`` (None: the case's dtype); ``kind`` of values."""

    shape: Tuple[int, ...]
    dtype: Optional[torch.dtype] = None
    kind: str = "normal"        # normal | positive | small (integer-valued, ties likely) | unit (|x| < 1)
    #                             | index (integers in [0, high)) | perm (along dim 0: distinct values < high)
    high: Optional[int] = None


def t(*shape, dtype=None, kind="normal", high=None) -> T:
    return T(tuple(shape), dtype, kind, high)


def index(*shape, high, dtype=None) -> T:
    """Valid indices for a dim of size ``high`` (int64 unless ``dtype``)."""
    return T(tuple(shape), dtype or torch.int64, "index", high)


def perm(*shape, high) -> T:
    """int64 indices, distinct along dim 0 (scatter targets without collisions)."""
    return T(tuple(shape), torch.int64, "perm", high)


@dataclass
class Case:
    keys: Tuple[Any, ...]                     # the RULES keys this case exercises
    name: str
    fn: Callable                              # the function, or (module=True) a factory of the nn.Module
    inputs: Tuple[T, ...]
    dtypes: Tuple[torch.dtype, ...] = (F32,)
    tol: float = 1.0                          # multiplier on BASE_TOL
    module: bool = False
    xfail: Dict[torch.dtype, str] = field(default_factory=dict)


def make(spec: T, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    dt = spec.dtype or dtype
    shape = spec.shape
    if dt == BOOL:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if spec.kind == "index":
        return torch.randint(0, spec.high, shape, generator=gen).to(dt)
    if spec.kind == "perm":
        return torch.rand((spec.high,) + shape[1:], generator=gen).argsort(0)[:shape[0]]
    if not dt.is_floating_point:
        low = 1 if spec.kind == "positive" else -5
        return torch.randint(low, 6, shape, generator=gen).to(dt)
    if spec.kind == "small":
        x = torch.randint(-3, 4, shape, generator=gen).float()
    else:
        x = torch.randn(shape, generator=gen)
        if spec.kind == "positive":
            x = x.abs() + 0.25
        elif spec.kind == "unit":
            x = torch.tanh(x)
    return x.to(dt)


def add_case(table, keys, name, fn, *inputs, dtypes=(F32,), tol=1.0, module=False, xfail=None):
    """Add a row to ``table``; ``keys`` is one RULES key or a tuple of them (all must appear in the traced graph).

    Every ``tests/test_ops_<family>.py`` file has its own ``CASES`` table and ``case = partial(add_case, CASES)``.
    """
    keys = keys if isinstance(keys, tuple) else (keys,)
    table.append(Case(keys, name, fn, tuple(inputs), tuple(dtypes), tol, module, dict(xfail or {})))


# ---------------------------------------------------------------------------------------------------------------
# the runner
# ---------------------------------------------------------------------------------------------------------------
def params_of(cases):
    params = []
    for c in cases:
        for dtype in c.dtypes:
            marks = [pytest.mark.xfail(strict=True, reason=c.xfail[dtype])] if dtype in c.xfail else []
            params.append(pytest.param(c, dtype, id=f"{c.name.replace('/', '+')}-{SHORT[dtype]}", marks=marks))
    return params


class Holder(nn.Module):
    """The module under test as a submodule, so tracing records it as one ``call_module`` node."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)


def _build(c: Case, dtype: torch.dtype):
    if not c.module:
        return c.fn
    torch.manual_seed(0)
    mod = c.fn()
    if dtype.is_floating_point:
        mod = mod.to(dtype)
    return Holder(mod).eval()


def assert_matches(got, want, dtype: torch.dtype, tol: float):
    got_leaves, got_spec = pytree.tree_flatten(got)
    want_leaves, want_spec = pytree.tree_flatten(want)
    assert got_spec == want_spec
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        where = f"output {i}: " if len(want_leaves) > 1 else ""
        assert isinstance(g, torch.Tensor), f"{where}{type(g)}"
        assert g.dtype == w.dtype, f"{where}dtype {g.dtype}, eager gives {w.dtype}"
        assert g.shape == w.shape, f"{where}shape {tuple(g.shape)}, eager gives {tuple(w.shape)}"
        if w.dtype.is_floating_point:
            # tolerance of the least precise float dtype involved (the computation's or the result's)
            base = max(BASE_TOL.get(dtype, 0.0), BASE_TOL[w.dtype]) * tol
            scale = max(1.0, w.abs().max().item()) if w.numel() else 1.0
            torch.testing.assert_close(g, w, rtol=base, atol=base * scale, equal_nan=True,
                                       msg=lambda m: f"{where}{m}")
        else:
            assert torch.equal(g, w), f"{where}\ngot:  {g}\nwant: {w}"


def run_case(c: Case, dtype: torch.dtype):
    gen = torch.Generator().manual_seed(0)
    inputs = tuple(make(spec, dtype, gen) for spec in c.inputs)
    fn = _build(c, dtype)
    want = pytree.tree_map(lambda v: v.detach() if isinstance(v, torch.Tensor) else v,    # (eager in the mode
                           fn(*(x.clone() for x in inputs)))                               # of the call below)
    compiled = fxla.compile(fn)
    got = compiled(*inputs)
    gm = functionalize(compiled.graph_module)    # the graph lowering saw (shapes known after the call)
    keys = [op_key(n, gm) for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
    unused = [k for k in c.keys if not any(k is used for used in keys)]
    assert not unused, f"the traced graph does not use {unused} (it uses {keys})"
    assert_matches(got, want, dtype, c.tol)


def all_cases():
    """The case tables of every ``tests/test_ops_<family>.py`` file."""
    here = pathlib.Path(__file__).resolve().parent
    return [c for path in sorted(here.glob("test_ops_*.py")) for c in importlib.import_module(path.stem).CASES]


def test_every_rule_has_a_case():
    cases = all_cases()
    covered = {id(k) for c in cases for k in c.keys}
    missing = [_label(k) for k in RULES if id(k) not in covered]
    assert not missing, "lowering rules without a case in tests/test_ops_*.py: " + ", ".join(missing)


def test_every_case_names_a_rule():
    stray = [(c.name, k) for c in all_cases() for k in c.keys if not any(k is r for r in RULES)]
    assert not stray, f"cases whose key has no lowering rule: {stray}"


def test_docs_ops_md_is_up_to_date():
    from fxla.lowering import coverage_doc
    path = pathlib.Path(__file__).resolve().parent.parent / "docs" / "ops.md"
    assert path.read_text() == coverage_doc.render_markdown(), \
        "regenerate with `.venv/bin/python -m fxla.lowering.coverage_doc > docs/ops.md`"
