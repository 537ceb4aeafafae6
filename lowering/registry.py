"""The lowering-rule table: graph op object -> rule that emits fxla ops.

Keys are the op objects themselves, as in JAX's ``interpreters/mlir.py``: torch functions (``torch.relu``),
``operator`` functions (``operator.add``), Tensor methods (``torch.Tensor.view``; a ``call_method`` node's target
names one) and ``nn.Module`` classes (``torch.nn.Linear``) for ``call_module`` nodes.

A rule is ``rule(ctx, *operands, **params)``: ``ctx`` (:class:`~fxla.lowering.context.LoweringContext`) first,
then the node's arguments exactly as torch takes them (tensors arrive as ``ir.Value``\\ s, everything shape-like
as concrete Python values), static parameters keyword-only.  Module rules also get the module instance as the
keyword ``mod``.  A rule returns an ``ir.Value`` (or a tuple/list of them).
"""
from __future__ import annotations

from typing import Callable, Dict, Optional

import torch

Rule = Callable[..., object]

#: op object -> rule
RULES: Dict[object, Rule] = {}


def register(*keys) -> Callable[[Rule], Rule]:
    """Decorator: ``@register(torch.relu, torch.Tensor.relu, torch.nn.ReLU)``."""
    def deco(rule: Rule) -> Rule:
        for key in keys:
            RULES[key] = rule
        return rule
    return deco


def op_key(node, root: torch.nn.Module) -> Optional[object]:
    """The op object a ``call_*`` node stands for (the key of its rule)."""
    if node.op == "call_function":
        return node.target
    if node.op == "call_method":
        return getattr(torch.Tensor, node.target, None)
    if node.op == "call_module":
        return type(root.get_submodule(node.target))
    return None


def describe(key, node) -> str:
    """A readable name for an op object, e.g. ``torch.nn.functional.embedding`` or ``Tensor.scatter_``."""
    if isinstance(key, type):
        return f"module {key.__module__}.{key.__qualname__} (call_module '{node.target}')"
    if node.op == "call_method":
        return f"method Tensor.{node.target}"
    module = getattr(key, "__module__", None) or ""
    name = getattr(key, "__qualname__", None) or getattr(key, "__name__", None) or repr(key)
    return f"function {module + '.' if module else ''}{name}"


def coverage() -> Dict[str, list]:
    """Supported op objects grouped by kind: ``{'functions': [...], 'methods': [...], 'modules': [...]}``."""
    groups = {"functions": [], "methods": [], "modules": []}
    methods = {v for k, v in vars(torch.Tensor).items() if callable(v)} | \
        {getattr(torch.Tensor, k) for k in dir(torch.Tensor) if not k.startswith("__")}
    for key in RULES:
        if isinstance(key, type):
            groups["modules"].append(f"{key.__module__}.{key.__qualname__}")
        elif key in methods and getattr(torch.Tensor, getattr(key, "__name__", ""), None) is key:
            groups["methods"].append(f"Tensor.{key.__name__}")
        else:
            module = getattr(key, "__module__", None) or ""
            groups["functions"].append(f"{module}.{getattr(key, '__name__', repr(key))}")
    return {k: sorted(set(v)) for k, v in groups.items()}
