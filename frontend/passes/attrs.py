"""Reading, installing and removing attributes of a module by qualified name (``'layer.0.weight'``)."""
from __future__ import annotations

from typing import Any, Tuple

import torch

from ..graph import Namespace

__all__ = ["fetch_attr", "has_attr", "set_attr", "del_attr", "fresh_attr_name"]


def fetch_attr(root: torch.nn.Module, qualname: str) -> Any:
    obj: Any = root
    for atom in qualname.split(".") if qualname else ():
        obj = getattr(obj, atom)
    return obj


def has_attr(root: torch.nn.Module, qualname: str) -> bool:
    try:
        fetch_attr(root, qualname)
    except AttributeError:
        return False
    return True


def _owner(root: torch.nn.Module, qualname: str) -> Tuple[torch.nn.Module, str]:
    *prefix, field = qualname.split(".")
    owner = root
    for atom in prefix:
        if atom not in owner._modules:
            owner.add_module(atom, torch.nn.Module())
        owner = owner._modules[atom]
    return owner, field


def set_attr(root: torch.nn.Module, qualname: str, value: Any) -> None:
    """Install ``value`` at ``qualname`` as a submodule, parameter, buffer or plain attribute
    (tensors that are not Parameters become buffers); replaces what was there."""
    owner, field = _owner(root, qualname)
    if hasattr(owner, field) and field not in owner._modules and field not in owner._parameters \
            and field not in owner._buffers:
        delattr(owner, field)
    if isinstance(value, torch.nn.Module):
        owner._parameters.pop(field, None), owner._buffers.pop(field, None)
        owner.add_module(field, value)
    elif isinstance(value, torch.nn.Parameter):
        owner._modules.pop(field, None), owner._buffers.pop(field, None)
        owner.register_parameter(field, value)
    elif isinstance(value, torch.Tensor):
        owner._modules.pop(field, None), owner._parameters.pop(field, None)
        owner.register_buffer(field, value)
    else:
        setattr(owner, field, value)


def del_attr(root: torch.nn.Module, qualname: str) -> None:
    owner, field = _owner(root, qualname)
    delattr(owner, field)


def fresh_attr_name(root: torch.nn.Module, hint: str) -> str:
    """A top-level attribute name based on ``hint`` that ``root`` does not have yet."""
    base = Namespace.sanitize(hint.replace(".", "_"))
    name, i = base, 1
    while hasattr(root, name):
        name, i = f"{base}_{i}", i + 1
    return name
