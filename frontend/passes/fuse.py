"""``fuse_conv_bn``: fold eval-mode ``BatchNorm2d`` into the ``Conv2d`` that feeds it."""
from __future__ import annotations

import copy
from typing import Dict, Optional, Tuple

import torch

from ..graph_module import GraphModule
from ..node import Node
from .attrs import del_attr, fresh_attr_name, set_attr

__all__ = ["fuse_conv_bn", "fuse_conv_bn_weights", "fuse_conv_bn_eval"]


def fuse_conv_bn_weights(conv_w: torch.Tensor, conv_b: Optional[torch.Tensor], mean: torch.Tensor,
                         var: torch.Tensor, eps: float, gamma: Optional[torch.Tensor],
                         beta: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
    """Weights and bias of one convolution computing ``bn(conv(x))`` (computed in float64)::

        scale = gamma / sqrt(var + eps)
        w'    = w * scale   (per output channel)
        b'    = (b - mean) * scale + beta
    """
    f64 = lambda t, default: (t.detach().double() if t is not None else default)  # noqa: E731
    var64 = var.detach().double()
    scale = f64(gamma, torch.ones_like(var64)) * torch.rsqrt(var64 + eps)
    w = conv_w.detach().double() * scale.reshape((-1,) + (1,) * (conv_w.dim() - 1))
    b = (f64(conv_b, torch.zeros_like(var64)) - mean.detach().double()) * scale + f64(beta, torch.zeros_like(var64))
    return w.to(conv_w.dtype), b.to(conv_w.dtype)


def fuse_conv_bn_eval(conv: torch.nn.Conv2d, bn: torch.nn.BatchNorm2d) -> torch.nn.Conv2d:
    """A copy of ``conv`` whose output equals ``bn(conv(x))`` for eval-mode ``bn``."""
    fused = copy.deepcopy(conv)
    w, b = fuse_conv_bn_weights(conv.weight, conv.bias, bn.running_mean, bn.running_var, bn.eps,
                                bn.weight, bn.bias)
    fused.weight = torch.nn.Parameter(w, conv.weight.requires_grad)
    fused.bias = torch.nn.Parameter(b, conv.weight.requires_grad)
    return fused


def _fusible(node: Node, modules: Dict[str, torch.nn.Module]) -> bool:
    """``node`` is ``bn(conv(x))`` with an eval-mode BatchNorm2d reading a Conv2d nobody else reads."""
    if node.op != "call_module" or len(node.args) != 1 or node.kwargs:
        return False
    bn, conv_node = modules.get(node.target), node.args[0]
    if not (isinstance(bn, torch.nn.BatchNorm2d) and not bn.training and bn.running_mean is not None):
        return False
    if not (isinstance(conv_node, Node) and conv_node.op == "call_module" and len(conv_node.users) == 1):
        return False
    conv = modules.get(conv_node.target)
    return isinstance(conv, torch.nn.Conv2d) and conv.out_channels == bn.num_features


def fuse_conv_bn(gm: GraphModule) -> GraphModule:
    """A copy of ``gm`` in which every ``call_module`` BatchNorm2d (eval mode, tracking
    running stats, called on the output of a ``call_module`` Conv2d that has no other user)
    is folded into a new Conv2d with fused weights and bias; the bn node is removed.

    The input module is not modified. The fused conv replaces the original conv at its
    qualified name, or is installed under a fresh name if that conv module is also called
    elsewhere. BatchNorm submodules no node refers to any more are deleted. Functional
    ``F.batch_norm`` / ``F.conv2d`` calls and training-mode BatchNorm are left alone.
    """
    gm = copy.deepcopy(gm)
    modules = dict(gm.named_modules())
    graph = gm.graph
    for node in list(graph.nodes):
        if not _fusible(node, modules):
            continue
        conv_node = node.args[0]
        fused = fuse_conv_bn_eval(modules[conv_node.target], modules[node.target])
        conv_module = modules[conv_node.target]
        shared = any(n is not conv_node and n.op == "call_module" and modules.get(n.target) is conv_module
                     for n in graph.nodes)
        target = fresh_attr_name(gm, f"{conv_node.target}_bn_fused") if shared else conv_node.target
        set_attr(gm, target, fused)
        modules[target] = fused
        conv_node.target = target
        node.replace_all_uses_with(conv_node)
        graph.erase_node(node)
    in_use = {n.target for n in graph.nodes if n.op in ("call_module", "get_attr")}
    for name, m in list(gm.named_modules()):
        if name and isinstance(m, torch.nn.BatchNorm2d) and not any(
                t == name or t.startswith(name + ".") or name.startswith(t + ".") for t in in_use):
            del_attr(gm, name)
    graph.lint()
    gm.recompile()
    return gm
