"""Qualified names of Python callables that resolve back to the very same object."""
from __future__ import annotations

import math
import operator
from typing import Any, List, Optional

import torch

__all__ = ["ROOT_MODULES", "qualified_name", "resolve"]

#: Modules whose dotted names are used in printed targets and generated code.
ROOT_MODULES = {"torch": torch, "operator": operator, "math": math}
# Public homes of torch's C-implemented functions, in order of preference.
_TORCH_NAMESPACES = ("torch", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft",
                     "torch.Tensor")


def resolve(dotted: str) -> Any:
    """``'torch.nn.functional.relu'`` -> the object (AttributeError if it does not resolve)."""
    root, *rest = dotted.split(".")
    if root not in ROOT_MODULES:
        raise AttributeError(dotted)
    obj = ROOT_MODULES[root]
    for atom in rest:
        obj = getattr(obj, atom)
    return obj


def _candidates(obj: Any) -> List[str]:
    module = getattr(obj, "__module__", None) or ""
    name = getattr(obj, "__name__", None)
    qualname = getattr(obj, "__qualname__", None) or name
    if not isinstance(name, str) or not isinstance(qualname, str) or "<" in qualname:
        return []
    names = []
    if module.startswith("torch") or module == "" or qualname.startswith("_VariableFunctions"):
        names += [f"{ns}.{name}" for ns in _TORCH_NAMESPACES]
    if module:
        names.append(f"{module.lstrip('_')}.{qualname}")
    return names


def qualified_name(obj: Any) -> Optional[str]:
    """A dotted name under ``torch``/``operator``/``math`` that resolves to ``obj``, or None."""
    for dotted in _candidates(obj):
        try:
            if resolve(dotted) is obj:
                return dotted
        except AttributeError:
            continue
    return None
