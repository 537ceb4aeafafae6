"""``fxla-dump --run``: a compiled model's outputs compared with eager PyTorch's, leaf by leaf.

An output may be any nesting of tensors, tuples (named tuples too), lists, dicts, dataclasses (a Hugging Face
``ModelOutput`` such as ``CausalLMOutputWithCrossAttentions`` is both a dataclass and an ``OrderedDict``),
other objects holding tensors in their attributes (a KV cache), ``None`` and Python numbers or strings.
:func:`leaves` walks one into ``(path, leaf)`` pairs, the path written as Python would reach the leaf
(``output.logits``, ``output[0]``, ``output['y']``); :func:`compare` pairs eager's leaves with the compiled
model's by path and judges each:

* tensors: same shape and dtype, and values within ``rtol``/``atol`` (see :data:`TOLERANCES`; integer and
  bool tensors exactly; NaN matches NaN);
* anything else: equal (``==``);
* a leaf that only one side has is a mismatch (the structures differ).
"""
from __future__ import annotations

import dataclasses
from typing import Any, List, NamedTuple, Optional, Tuple

import torch

#: (rtol, atol) by dtype; other floating dtypes (float32, float64) use ``DEFAULT_TOLERANCE``
TOLERANCES = {torch.float16: (1e-2, 1e-3), torch.bfloat16: (1e-2, 1e-2)}
DEFAULT_TOLERANCE = (1e-4, 1e-5)
#: leaves are not looked for deeper than this (a self-referencing object stops here)
MAX_DEPTH = 16
_ATOMS = (str, bytes, bool, int, float, complex, torch.dtype, torch.device, type)


class LeafResult(NamedTuple):
    """One leaf: where it is, what it is (``float32[2, 16, 128]``, ``int 3``), the largest ``|fxla - eager|``
    (tensors; ``None`` otherwise), whether it matches, and why not (``""`` when it does)."""

    path: str
    what: str
    diff: Optional[float]
    ok: bool
    problem: str


def leaves(value: Any, path: str = "output", _depth: int = 0) -> List[Tuple[str, Any]]:
    """``(path, leaf)`` for every leaf of ``value``, depth first, in the order the structure holds them."""
    if value is None or isinstance(value, (torch.Tensor,) + _ATOMS) or _depth >= MAX_DEPTH:
        return [(path, value)]
    if dataclasses.is_dataclass(value):
        if isinstance(value, dict):         # a ModelOutput: its set fields, as its keys
            items = [(f"{path}.{k}", v) for k, v in value.items()]
        else:
            items = [(f"{path}.{f.name}", getattr(value, f.name)) for f in dataclasses.fields(value)]
    elif isinstance(value, dict):
        items = [(f"{path}[{k!r}]", v) for k, v in value.items()]
    elif isinstance(value, tuple) and hasattr(value, "_fields"):          # a named tuple
        items = [(f"{path}.{k}", v) for k, v in zip(value._fields, value)]
    elif isinstance(value, (tuple, list)):
        items = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
    elif isinstance(getattr(value, "__dict__", None), dict):               # an object holding tensors
        items = [(f"{path}.{k}", v) for k, v in vars(value).items() if not k.startswith("_")]
    else:
        return [(path, value)]
    if not items:                           # an empty container is itself a leaf: it must match
        return [(path, value)]
    return [leaf for p, v in items for leaf in leaves(v, p, _depth + 1)]


def describe(value: Any) -> str:
    """``float32[2, 16]`` for a tensor, ``int 3`` for a number, the type's name otherwise."""
    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).replace('torch.', '')}{list(value.shape)}"
    if value is None:
        return "None"
    if isinstance(value, (bool, int, float, complex, str)):
        return f"{type(value).__name__} {value!r}"
    return type(value).__name__


def _compare_tensors(path: str, got: torch.Tensor, want: torch.Tensor) -> LeafResult:
    what = describe(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return LeafResult(path, what, None, False, f"fxla gave {describe(got)}")
    if not got.numel():
        return LeafResult(path, what, 0.0, True, "")
    a, b = got.detach().cpu(), want.detach().cpu()
    if not (want.is_floating_point() or want.is_complex()):
        differ = int((a != b).sum())
        return LeafResult(path, what, float((a.double() - b.double()).abs().max()) if differ else 0.0,
                          differ == 0, f"{differ} of {b.numel()} values differ" if differ else "")
    rtol, atol = TOLERANCES.get(want.dtype, DEFAULT_TOLERANCE)
    wide = torch.complex128 if want.is_complex() else torch.float64
    a, b = a.to(wide), b.to(wide)
    err = (a - b).abs()
    same = (torch.isnan(a) & torch.isnan(b)) | (a == b)          # (NaN where eager has NaN, equal infinities)
    err = torch.where(same, torch.zeros_like(err), err)
    finite = err[torch.isfinite(err)]
    diff = float(finite.max()) if finite.numel() else float("inf")
    bad = ~same & ~(err <= atol + rtol * b.abs())
    if bad.any():
        return LeafResult(path, what, diff, False, f"{int(bad.sum())} of {b.numel()} values off by more than "
                          f"rtol {rtol:g} / atol {atol:g}")
    return LeafResult(path, what, diff, True, "")


def _compare_values(path: str, got: Any, want: Any) -> LeafResult:
    what = describe(want)
    if isinstance(got, torch.Tensor) != isinstance(want, torch.Tensor):
        return LeafResult(path, what, None, False, f"fxla gave {describe(got)}")
    try:
        same = bool(got == want)
    except (RuntimeError, TypeError, ValueError) as err:
        return LeafResult(path, what, None, False, f"cannot compare: {type(err).__name__}: {err}")
    return LeafResult(path, what, None, same, "" if same else f"fxla gave {describe(got)}")


def compare(got: Any, want: Any) -> List[LeafResult]:
    """Every leaf of eager's output ``want`` and the compiled model's ``got``, paired by path (eager's order,
    then the leaves only ``got`` has), each judged (see the module docstring)."""
    got_leaves = dict(leaves(got))
    results = []
    for path, w in leaves(want):
        if path not in got_leaves:
            results.append(LeafResult(path, describe(w), None, False, "fxla's output has no such leaf"))
            continue
        g = got_leaves.pop(path)
        if isinstance(g, torch.Tensor) and isinstance(w, torch.Tensor):
            results.append(_compare_tensors(path, g, w))
        else:
            results.append(_compare_values(path, g, w))
    results += [LeafResult(path, describe(g), None, False, "eager's output has no such leaf")
                for path, g in got_leaves.items()]
    return results
