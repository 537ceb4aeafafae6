"""Grad mode inside a graph: what ``torch.no_grad()`` in ``forward`` means for gradients.

A region of ``forward`` under ``torch.no_grad()`` (``torch.set_grad_enabled(False)``, a method decorated with
``@torch.no_grad()``, ``torch.inference_mode()``) computes values with no history: no gradient flows back through
them (a distillation teacher, an EMA target, a momentum encoder), and parameters used only there get none.  fxla's
tracer traces with grad mode on and marks each call it records with grad mode off, ``node.meta["grad_disabled"]``
(the switches run for real while it traces: the user's own ``with`` blocks, and the ``_set_grad_enabled`` calls of
the graphs TorchDynamo hands the ``torch.compile`` backend).  The caller's grad mode is not part of the graph.

:func:`apply_grad_mode` makes the regions explicit after functionalization.  Where a value made in a region is read
outside it (by a call made with grad mode on, or as an output), that read gets

* ``value.detach()``: eager's result has no history;
* ``keep_history(value, before)`` where ``value`` is a tensor's new value after an in-place change made in the
  region (``self.w.div_(n)``, ``h.mul_(2)``, an EMA buffer's ``mul_``): eager changes the tensor and keeps the
  history it had, so the gradient reaches what it reached before the change (``before``: the value the change
  replaced, functionalization's ``node.meta["replaces"]``, followed back out of the region);
* ``unknown_history(value)`` for ``x.contiguous()`` made in the region from a tensor with history: eager returns
  ``x`` itself (with its history) when it is contiguous and a copy without otherwise, which a graph without
  strides cannot tell.  A gradient asked through it is a ``NotDifferentiableError``; values are unaffected.

A tuple made in a region and read whole outside (``torch.cat(h.split(2))``, ``h.max(-1)`` returned) is made from
detached inputs; one a module made (an ``nn.LSTM``'s) is read as a tuple of its parts, each as above.  Ops that return their input itself (``x.float()`` of a float32 tensor, ``x.to("cpu")``,
``nn.Identity``, a dropout that drops nothing) and taking a part of a tuple are not computations: their value has
the history of their input, as in eager.  A view made in a region (``w.view(-1)``, ``w[0]``) has no history
either: eager gives it ``requires_grad=True`` but passes it no gradient.
"""
from __future__ import annotations

import operator
from typing import Dict, Optional

import torch

from .. import meta as M
from ..graph_module import GraphModule
from ..node import CALL_OPCODES, Node
from ..shape_prop import TensorMeta
from ..custom_functions import custom_function_output
from ..wrap import wrap
from .aliasing import CASTS, DROPOUT_FUNCTIONS, _bound, _drops, _on_cpu

__all__ = ["apply_grad_mode", "keep_history", "unknown_history", "has_regions", "regions", "mark_quiet_mutations"]

#: methods and functions that return the tensor itself when its shape and dtype stay (and, on fxla's CPU inputs,
#: its device): casts, ``flatten`` that merges no dims, ``atleast_nd`` of a tensor that has the dims, ``conj`` of a
#: real tensor ...
_SELF_METHODS = CASTS | {"cpu", "flatten", "conj", "resolve_conj", "resolve_neg", "positive"}
_SELF_FUNCTIONS = frozenset({torch.flatten, torch.atleast_1d, torch.atleast_2d, torch.atleast_3d, torch.conj,
                             torch.resolve_conj, torch.resolve_neg, torch.positive, operator.pos})


class _KeepHistory(torch.autograd.Function):
    @staticmethod
    def forward(ctx, value, before):
        return value.clone()

    @staticmethod
    def backward(ctx, grad):
        return None, grad


def keep_history(value: torch.Tensor, before: torch.Tensor) -> torch.Tensor:
    """``value``, with the gradient of ``before`` (the tensor an in-place change under ``torch.no_grad()`` changed;
    lowered to ``fxla.keep_history``)."""
    return _KeepHistory.apply(value, before)


def unknown_history(value: torch.Tensor) -> torch.Tensor:
    """``value`` (an ``x.contiguous()`` made under ``torch.no_grad()``), through which fxla refuses a gradient: eager
    passes one when ``x`` is contiguous and none otherwise (lowered to ``fxla.no_gradient``)."""
    return value


# (tracing leaves: a graph holding them, traced again, records them as they are)
wrap(keep_history)
wrap(unknown_history)


def has_regions(gm: GraphModule) -> bool:
    """Whether ``gm``'s graph holds a call made with grad mode off."""
    return any(n.meta.get(M.GRAD_DISABLED) for n in gm.graph.nodes)


def _tensor(node) -> bool:
    return isinstance(node, Node) and isinstance(node.meta.get(M.TENSOR_META), TensorMeta)


def _returns_input(gm: GraphModule, node: Node) -> bool:
    """Whether ``node`` returns its first argument itself: a part of a tuple, or an op that copies nothing."""
    source = node.args[0] if node.args else None
    if not isinstance(source, Node):
        return False
    if _is_part(node):
        return True
    if not _tensor(source) or not _tensor(node):
        return False
    if node.meta[M.TENSOR_META] != source.meta[M.TENSOR_META]:
        return False
    if node.op == "call_function" and (node.target in _SELF_FUNCTIONS or
                                       (node.target is getattr and node.args[1:] == ("real",))):
        return True
    if node.op == "call_method" and node.target in _SELF_METHODS:
        devices = [a for a in (*node.args[1:], node.kwargs.get("device")) if isinstance(a, (str, torch.device))]
        return not node.kwargs.get("copy") and "memory_format" not in node.kwargs and all(_on_cpu(d) for d in devices)
    if node.op == "call_function" and node.target in DROPOUT_FUNCTIONS:
        args = _bound(node.target, node)
        return bool(args) and not _drops(args.get("p"), args.get("training"))
    if node.op == "call_module":
        module = gm.get_submodule(node.target)
        if isinstance(module, torch.nn.modules.dropout._DropoutNd):
            return not _drops(module.p, module.training)
        return isinstance(module, (torch.nn.Identity, torch.nn.Flatten))
    return False


def _is_part(node: Node) -> bool:
    """A part of a tuple or a named tuple (not an index into a tensor): the object itself, as in eager."""
    source = node.args[0] if node.args else None
    return node.op == "call_function" and node.target in (operator.getitem, getattr) and isinstance(source, Node) \
        and not _tensor(source)


class _Regions:
    """Which values of the graph are made with grad mode off, and what a read of one outside its region gets."""

    def __init__(self, gm: GraphModule):
        self.gm, self.graph = gm, gm.graph
        self.off: Dict[Node, bool] = {}
        self.read: Dict[Node, object] = {}
        for node in self.graph.nodes:
            if node.op not in CALL_OPCODES:
                self.off[node] = False
            elif _returns_input(gm, node):
                self.off[node] = self.off.get(node.args[0], False)
            else:
                self.off[node] = bool(node.meta.get(M.GRAD_DISABLED))

    def rewrite(self) -> None:
        for node in list(self.graph.nodes):
            if self.off.get(node, True) or node.op not in (*CALL_OPCODES, "output") \
                    or node.target is custom_function_output:
                continue            # (a custom Function's forward runs with grad mode off: its output has history)
            for arg in node.all_input_nodes:
                if self.off.get(arg):
                    node.replace_input_with(arg, self.outside(arg, node))
            reads = node.meta.get(M.STATE_READS, {})        # (a layer's weights changed in a region before it)
            for name, value in reads.items():
                if self.off.get(value):
                    reads[name] = self.outside(value, node)

    def outside(self, node: Node, user: Node):
        """What ``node``, made in a region, is when read outside it (a Node, or a tuple/list of them)."""
        if node not in self.read:
            self.read[node] = self._outside(node)
        return self.read[node]

    def _outside(self, node: Node):
        meta = node.meta.get(M.TENSOR_META)
        if isinstance(meta, (tuple, list)) and (node.op == "call_module" or _is_part(node)):
            return self._parts(node, meta, self._outside)        # (a layer's output, or a part of one)
        if isinstance(meta, (tuple, list, dict)):    # (a structure an op made, of any type, e.g. x.max(-1)'s)
            for arg in {a: None for a in node.all_input_nodes}:
                cut = self._cut(arg)
                if cut is not arg:
                    node.replace_input_with(arg, cut)
            return node
        if not isinstance(meta, TensorMeta):
            return node                                  # (a number, a dtype: no history)
        before = self._before(node)
        if before is not None:
            return self._call(node, keep_history, (node, before))
        source = node.args[0] if node.args else None
        if node.op == "call_method" and node.target == "contiguous" and isinstance(source, Node) \
                and not self.off.get(source) and meta.dtype.is_floating_point:
            return self._call(node, unknown_history, (node,))
        return self._call(node, torch.Tensor.detach, (node,))

    def _parts(self, node: Node, meta, each):
        """``node``'s value (a tuple or list of ``meta``'s structure) rebuilt from its parts, each read through
        ``each``."""
        parts = []
        for i, part in enumerate(meta):
            with self.graph.inserting_after(node):
                item = self.graph.call_function(operator.getitem, (node, i))
            item.meta.update({M.SOURCE: node.meta.get(M.SOURCE), M.TENSOR_META: part})
            parts.append(each(item) if isinstance(part, (TensorMeta, tuple, list)) else item)
        return type(meta)(parts) if isinstance(meta, tuple) else parts

    def _cut(self, node: Node):
        """``node`` with no history: detached (part by part for a tuple or list)."""
        meta = node.meta.get(M.TENSOR_META)
        if isinstance(meta, TensorMeta):
            return self._call(node, torch.Tensor.detach, (node,))
        if isinstance(meta, (tuple, list)):
            return self._parts(node, meta, self._cut)
        return node

    def _before(self, node: Node) -> Optional[Node]:
        """The value with history that the in-place changes in the region giving ``node`` replaced, if any."""
        seen = set()
        while node.meta.get(M.REPLACES) is not None and node not in seen:
            seen.add(node)
            node = node.meta[M.REPLACES]
            if not self.off.get(node, False):
                return node if node in self.off else None
        return None

    def _call(self, node: Node, target, args) -> Node:
        with self.graph.inserting_after(node):
            made = self.graph.call_function(target, args)
        made.meta.update({M.SOURCE: node.meta.get(M.SOURCE), M.TENSOR_META: node.meta[M.TENSOR_META]})
        return made


def regions(gm: GraphModule) -> Dict[Node, bool]:
    """Per node of ``gm``'s graph: whether its value is made in a ``torch.no_grad()`` region (an op that returns its
    input itself, or takes a part of a tuple, is where its input is)."""
    return _Regions(gm).off if has_regions(gm) else {}


def _quietly_changed(final: Node) -> bool:
    """Whether every in-place change leading to ``final`` (an input's value after the call) is one autograd does not
    record: made under grad mode off, or through a view without history (``x.detach().add_(1)``, ``x.data`` ...:
    functionalization's ``keep_history``).  The chain of values each change replaced reaches the input through such
    changes alone."""
    node = final
    while node.op != "placeholder":
        if node.op == "call_function" and node.target is keep_history:
            node = node.args[1]
            continue
        if not node.meta.get(M.GRAD_DISABLED) or node.meta.get(M.REPLACES) is None:
            return False
        node = node.meta[M.REPLACES]
    return True


def mark_quiet_mutations(gm: GraphModule) -> None:
    """Name the inputs ``gm`` changes in place only in ways autograd does not record (under ``torch.no_grad()``,
    through ``detach()``/``.data``): ``graph.meta["quiet_mutations"]``; eager allows that on a tensor that requires
    grad."""
    mutations = gm.graph.meta.get(M.INPUT_MUTATIONS, {})
    quiet = frozenset(name for name, final in mutations.items() if _quietly_changed(final))
    if quiet:
        gm.graph.meta[M.QUIET_MUTATIONS] = quiet


def apply_grad_mode(gm: GraphModule) -> None:
    """Make the ``torch.no_grad()`` regions of ``gm``'s graph explicit, in place (see the module docstring)."""
    regions = _Regions(gm)
    regions.rewrite()
    gm.graph.lint()
    gm.recompile()
