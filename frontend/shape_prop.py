"""Shape propagation: run a graph on ``meta`` tensors and record shapes/dtypes per node."""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Dict, Tuple

import torch

from .interpreter import Interpreter
from .node import Node, map_aggregate

__all__ = ["TensorMeta", "ShapeProp", "propagate_shapes"]


@dataclass(frozen=True)
class TensorMeta:
    """Static description of a tensor value: its shape and dtype."""

    shape: Tuple[int, ...]
    dtype: torch.dtype


def to_meta(value: Any) -> Any:
    """Replace every tensor in (nested) ``value`` by an empty ``meta`` tensor of the same shape/dtype."""
    def convert(v: Any) -> Any:
        if isinstance(v, torch.Tensor) and not (v.device.type == "meta" and type(v) is torch.Tensor):
            return torch.empty(tuple(v.shape), dtype=v.dtype, device="meta")
        return v
    return map_aggregate(value, convert)


def _as_meta_device(v: Any) -> Any:
    """Device arguments (``torch.device`` or a device string such as ``'cpu'``/``'cuda:0'``) -> ``'meta'``."""
    if isinstance(v, torch.device):
        return torch.device("meta")
    if isinstance(v, str) and v.split(":")[0] in _DEVICE_TYPES:
        return "meta"
    return v


_DEVICE_TYPES = ("cpu", "cuda", "mps", "xpu", "hip", "xla")


def _contains_tensor(v: Any) -> bool:
    found = []
    map_aggregate(v, lambda x: found.append(x) if isinstance(x, torch.Tensor) else x)
    return bool(found)


def describe(value: Any) -> Any:
    """TensorMeta for a tensor; same-structure tuple/list/dict of TensorMeta/None otherwise."""
    if isinstance(value, torch.Tensor):
        return TensorMeta(tuple(value.shape), value.dtype)
    if isinstance(value, (tuple, list)):
        items = [describe(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {k: describe(v) for k, v in value.items()}
    return None


def set_node_meta(node: Node, value: Any) -> None:
    """Record ``value`` on ``node``: ``meta['tensor_meta']`` if it holds tensors, else ``meta['value']``."""
    node.meta.pop("tensor_meta", None)
    node.meta.pop("value", None)
    if _contains_tensor(value):
        node.meta["tensor_meta"] = describe(value)
    else:
        node.meta["value"] = value


class ShapeProp(Interpreter):
    """An :class:`Interpreter` over meta tensors that fills in node metadata:

    * ``node.meta['tensor_meta']``: a :class:`TensorMeta` if the node's value is a tensor,
      or a tuple/list/dict of the same structure (TensorMeta for tensors, None otherwise)
      if the value is a container holding tensors;
    * ``node.meta['value']``: the concrete value otherwise (ints from ``x.size(0)``,
      ``torch.Size``, floats, bools, None, dtypes, ...).

    Parameters and buffers are read as meta tensors; leaf modules run through
    ``torch.func.functional_call`` with meta versions of their state, so nothing real is
    computed or allocated.  Device arguments are retargeted to ``meta``.
    """

    def run(self, *args: Any) -> Any:
        return super().run(*to_meta(args))

    def fetch_args_kwargs_from_env(self, n: Node) -> Tuple[Tuple, Dict[str, Any]]:
        # everything runs on the meta device, so device arguments (x.to('cpu'), device=...) are retargeted
        args, kwargs = super().fetch_args_kwargs_from_env(n)
        return map_aggregate(args, _as_meta_device), map_aggregate(kwargs, _as_meta_device)

    def run_node(self, n: Node) -> Any:
        result = to_meta(super().run_node(n))
        set_node_meta(n, result)
        return result

    def get_attr(self, target, args, kwargs) -> Any:
        return to_meta(super().get_attr(target, args, kwargs))

    def call_module(self, target, args, kwargs) -> Any:
        mod = self.fetch_attr(target)
        state: Dict[str, torch.Tensor] = {
            name: to_meta(t) for name, t in itertools.chain(mod.named_parameters(), mod.named_buffers())}
        return torch.func.functional_call(mod, state, tuple(args), dict(kwargs))


def propagate_shapes(gm: torch.nn.Module, *example_inputs: Any) -> Any:
    """Run :class:`ShapeProp` on ``gm`` and return the output node's metadata
    (``tensor_meta`` if the output holds tensors, else its ``value``)."""
    ShapeProp(gm).run(*example_inputs)
    out = gm.graph.output_node
    return out.meta.get("tensor_meta", out.meta.get("value"))
