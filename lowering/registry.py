"""The lowering-rule table: graph op object -> rule that emits fxla ops.

Keys are the op objects themselves, as in JAX's ``interpreters/mlir.py``: torch functions (``torch.relu``),
``operator`` functions (``operator.add``), Tensor methods (``torch.Tensor.view``; a ``call_method`` node's target
names one) and ``nn.Module`` classes (``torch.nn.Linear``) for ``call_module`` nodes.

A rule is ``rule(ctx, *operands, **params)``: ``ctx`` (:class:`~fxla.lowering.context.LoweringContext`) first,
then the node's arguments exactly as torch takes them (tensors arrive as ``ir.Value``\\ s, everything shape-like
as concrete Python values), static parameters keyword-only.  Module rules also get the module instance as the
keyword ``mod``.  A rule returns an ``ir.Value`` (or a tuple/list of them).

Most module classes only call their functional form with attributes of the module: they are registered with
:func:`register_module`, which says so declaratively (``register_module(nn.LeakyReLU, F.leaky_relu,
negative_slope="negative_slope")``).  A module rule is written by hand only where the module does more than
forward (RNNs, nn.MultiheadAttention, the Transformer layers, a conv's padding modes...).
"""
from __future__ import annotations

import functools
import importlib

from typing import Callable, Dict, Optional, Sequence

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


def register_module(module: type, op, *, params: Sequence[str] = (), attrs: Sequence[str] = (),
                    **attributes) -> Rule:
    """Register the ``nn.Module`` class ``module`` as a call of the functional ``op`` (a key with a rule).

    The module's rule calls ``op``'s rule with the call's own arguments plus keywords: each name in ``params``
    is a parameter or buffer of the module, passed as the keyword of the same name (``None`` where the module
    has none, e.g. ``bias=False``; they become program arguments in this order); each name in ``attrs`` passes
    the module's attribute of that name as the keyword of that name; each ``keyword=attribute`` in
    ``attributes`` passes the module's attribute of that name, or ``attribute(module)`` when it is a function.
    ``register_module(nn.Linear, F.linear, params=("bias", "weight"))`` lowers ``nn.Linear(4, 2)(x)`` as
    ``F.linear(x, weight=<weight>, bias=<bias>)``.
    """
    def rule(ctx, *args, mod, **kwargs):
        for name in params:
            kwargs[name] = ctx.module_param(name, mod, ctx.node.target)
        for name in attrs:
            kwargs[name] = getattr(mod, name)
        for keyword, attribute in attributes.items():
            kwargs[keyword] = attribute(mod) if callable(attribute) else getattr(mod, attribute)
        return RULES[op](ctx, *args, **kwargs)
    rule.__name__ = rule.__qualname__ = f"{module.__name__}_rule"
    rule.__doc__ = f"``{module.__name__}``: the rule of {getattr(op, '__name__', op)} with the module's attributes."
    rule.forwards_to = op
    RULES[module] = rule
    return rule


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
        return f"module {_label(key)} (call_module '{node.target}')"
    if node.op == "call_method":
        return f"method Tensor.{node.target}"
    return f"function {_label(key)}"


def _kind(key) -> str:
    if isinstance(key, type):
        return "modules"
    name = getattr(key, "__name__", "")
    return "methods" if getattr(torch.Tensor, name, None) is key else "functions"


_PUBLIC_NAMESPACES = ("torch", "torch.nn.functional", "torch.nn", "torch.special", "torch.linalg", "torch.fft",
                      "operator", "math", "builtins")


@functools.lru_cache(maxsize=None)
def _public_names() -> Dict[int, str]:
    """id(op object) -> its public spelling, first namespace wins (``torch.special.bessel_j0``, not ``torch._C…``)."""
    names: Dict[int, str] = {}
    for prefix in _PUBLIC_NAMESPACES:
        namespace = importlib.import_module(prefix)
        for name, value in vars(namespace).items():
            if not name.startswith("_"):
                names.setdefault(id(value), f"{prefix}.{name}")
    return names


def _label(key) -> str:
    """The public spelling of an op object: ``torch.nn.functional.gelu``, ``torch.nn.Linear``, ``Tensor.view``."""
    name = getattr(key, "__name__", repr(key))
    if _kind(key) == "methods":
        return f"Tensor.{name}"
    public = _public_names().get(id(key))
    if public is not None:
        return public
    module = getattr(key, "__module__", None)
    return f"{module}.{getattr(key, '__qualname__', name)}" if module else name


def coverage() -> Dict[str, list]:
    """Supported op objects by kind: ``{'functions': [...], 'methods': [...], 'modules': [...]}`` (sorted names)."""
    groups: Dict[str, set] = {"functions": set(), "methods": set(), "modules": set()}
    for key in RULES:
        groups[_kind(key)].add(_label(key))
    return {kind: sorted(names) for kind, names in groups.items()}
