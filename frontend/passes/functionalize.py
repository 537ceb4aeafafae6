"""``functionalize``: rewrite in-place tensor mutation into out-of-place ops (what ``torch.func.functionalize``
does for torch's graphs), so that every later use of a mutated tensor reads its new value.

fxla programs are functional (StableHLO has no mutation), so a traced ``y.add_(1)``, ``y[0] = v``,
``y += 1``, ``y.fill_(0)`` or ``nn.ReLU(inplace=True)(y)`` becomes a node computing the new value of ``y``,
and the uses of ``y`` *after* it (in graph order) read that node instead.  A Python alias (``z = y``) is the
same node, so it sees the change too, as in eager.

A mutated graph input (``x += 1`` on a placeholder) is rewritten the same way, and the result graph's
``graph.meta["input_mutations"]`` maps the placeholder's name to the node of its final value; likewise
``graph.meta["state_mutations"]`` maps the qualified name of each mutated parameter or buffer
(``self.steps += 1``, ``self.cache[:, i] = k``) to its final value.  The lowering returns those values after
the program's outputs, and ``fxla.compile`` copies them into the caller's tensors and the module's state
after the call, as eager would have changed them.  A tensor assigned to a plain module attribute
(``self.last = y``, the tracer's ``meta["attribute_writes"]``) that is mutated later is written with its final
value: the attribute holds the same tensor in eager.  (Tensors the tracer made constants,
``_tensor_constant<N>`` -- ``torch.empty(3, 4)`` with static sizes -- are rewritten but never written back:
eager makes a new one per call.  A tensor captured from outside the traced code is such a constant too.)

The rewrite needs the graph's shape metadata (run :func:`fxla.frontend.propagate_shapes` first; rewritten
graphs need it again).  It refuses, with a :class:`fxla.frontend.PassError` naming the source line, what it
cannot express without aliasing information:

* mutating a tensor that is (or may be) a *view* of another -- the result of ``view``, ``reshape``,
  ``x[...]``, ``transpose``, ``.T``, ``expand``, ``detach``, ``contiguous`` ... -- because eager mutates the
  base tensor too;
* mutating a tensor after taking a view of it that is used later (the view would change in eager);
* in-place ops that change a tensor's shape or strides (``unsqueeze_``, ``t_``, ``resize_`` ...).
"""
from __future__ import annotations

import operator
from typing import Dict, Optional

import torch

from fxla.errors import format_message

from ..errors import PassError
from ..graph_module import GraphModule
from ..node import Node

__all__ = ["functionalize", "setitem"]


def setitem(tensor: torch.Tensor, index, value) -> torch.Tensor:
    """Out-of-place ``tensor[index] = value``: a copy of ``tensor`` with the indexed part replaced (the op
    :func:`functionalize` records for ``operator.setitem``)."""
    out = tensor.clone()
    out[index] = value
    return out


#: in-place Tensor methods -> their out-of-place method (same arguments; the result is cast to self's dtype)
_INPLACE_METHODS: Dict[str, str] = {f"{name}_": name for name in (
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow", "neg", "abs",
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "square", "sign",
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "sigmoid", "relu", "erf",
    "floor", "ceil", "round", "trunc", "frac", "clamp", "clamp_min", "clamp_max", "clip", "lerp", "hypot",
    "addcmul", "addcdiv", "addmm", "baddbmm", "masked_fill", "masked_scatter", "index_fill", "index_add",
    "index_copy", "scatter", "scatter_add", "scatter_reduce", "tril", "triu", "copysign", "logical_not",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "eq", "ne", "lt", "le", "gt", "ge", "nan_to_num", "fill_diagonal", "maximum", "minimum", "where", "renorm",
    "float_power", "xlogy", "heaviside", "logit", "digamma", "lgamma", "erfinv", "mvlgamma", "polygamma")}

#: in-place Python operators on tensors (``y += 1``): recorded as ``operator.iadd``..., computed out of place
_INPLACE_OPERATORS = frozenset({operator.iadd, operator.isub, operator.imul, operator.itruediv,
                                operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul,
                                operator.iand, operator.ior, operator.ixor, operator.ilshift, operator.irshift})

#: in-place methods that change shape/strides or storage: not expressible as a value
_METADATA_METHODS = frozenset({"unsqueeze_", "squeeze_", "t_", "transpose_", "swapdims_", "swapaxes_",
                               "resize_", "resize_as_", "as_strided_", "set_", "unflatten_"})

#: methods / functions whose result is, or may be, a view of their first argument
_VIEW_METHODS = frozenset({"view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "squeeze",
                           "unsqueeze", "transpose", "swapaxes", "swapdims", "t", "permute", "movedim",
                           "moveaxis", "expand", "expand_as", "narrow", "select", "unfold", "diagonal",
                           "as_strided", "detach", "contiguous", "split", "chunk", "unbind", "tensor_split",
                           "real", "to", "type_as", "float", "half", "bfloat16", "double", "int", "long",
                           "bool", "type", "__getitem__", "view_as_real", "T", "mT", "H", "mH", "data"})
_VIEW_FUNCTIONS = frozenset({torch.reshape, torch.flatten, torch.unflatten, torch.squeeze, torch.unsqueeze,
                             torch.transpose, torch.swapaxes, torch.t, torch.permute, torch.movedim,
                             torch.narrow, torch.select, torch.diagonal, torch.detach, torch.split, torch.chunk,
                             torch.unbind, torch.tensor_split, torch.as_strided, operator.getitem,
                             torch.real, torch.view_as_real})


#: methods that return their input itself when it already has the requested dtype
_CASTS = frozenset({"to", "type_as", "float", "half", "bfloat16", "double", "int", "long", "bool", "type"})


def _is_tensor(arg) -> bool:
    return isinstance(arg, Node) and "tensor_meta" in arg.meta


def _error(node: Node, what: str, why: str, fix: str) -> PassError:
    return PassError(format_message(what, node.meta.get("source"), why=why, fix=fix))


def _module_is_inplace(gm: GraphModule, node: Node) -> bool:
    try:
        mod = gm.get_submodule(node.target)
    except AttributeError:
        return False
    return getattr(mod, "inplace", False) is True


def _mutated(gm: GraphModule, node: Node) -> Optional[Node]:
    """The tensor node ``node`` mutates in place, or ``None``."""
    base = node.args[0] if node.args else None
    if not _is_tensor(base):
        return None
    if node.op == "call_method":
        if node.target in _INPLACE_METHODS or node.target in ("fill_", "zero_", "copy_") \
                or node.target in _METADATA_METHODS:
            return base
        return base if node.kwargs.get("inplace") is True else None
    if node.op == "call_function":
        if node.target is operator.setitem or node.target in _INPLACE_OPERATORS:
            return base
        return base if node.kwargs.get("inplace") is True else None
    if node.op == "call_module" and _module_is_inplace(gm, node):
        return base
    return None


def _is_view(node: Node) -> bool:
    if node.meta.get("functionalized"):                            # a new value made by this pass
        return False
    if node.op == "call_method" and node.target in _CASTS:        # a copy when the dtype changes
        source = node.args[0] if node.args else None
        return not (_is_tensor(source) and "tensor_meta" in node.meta
                    and source.meta["tensor_meta"].dtype != node.meta["tensor_meta"].dtype)
    if node.op == "call_method":
        return node.target in _VIEW_METHODS
    if node.op == "call_function":
        if node.target is getattr:
            return node.args[1] in _VIEW_METHODS
        return node.target in _VIEW_FUNCTIONS
    return False


def _is_constant(gm: GraphModule, node: Node) -> bool:
    """A tensor the tracer made a constant (``torch.empty(3, 4)`` in the traced code: a new tensor per call in
    eager), not a parameter, buffer or tensor attribute of the user's module."""
    return node.op == "get_attr" and node.target.startswith("_tensor_constant") and node.target not in \
        dict(gm.named_parameters()) and node.target not in dict(gm.named_buffers())


def _check(gm: GraphModule, node: Node, base: Node, order: Dict[Node, int]) -> None:
    label = f"in-place {_label(node)} on %{base.name}"
    if node.op == "call_method" and node.target in _METADATA_METHODS:
        raise _error(node, f"{label} changes the tensor's shape or strides in place",
                     "fxla programs compute values; a tensor whose shape changes in place has no single type",
                     f"use the out-of-place form (y = y.{node.target[:-1]}(...))")
    assigned = node.meta.get("state_assignment")
    if assigned and _is_tensor(node.args[1]):
        have, want = node.args[1].meta["tensor_meta"], base.meta["tensor_meta"]
        if tuple(have.shape) != tuple(want.shape) or have.dtype != want.dtype:
            raise _error(node, f"assigning a {have.dtype} tensor of shape {list(have.shape)} to '{assigned}', a "
                               f"{want.dtype} tensor of shape {list(want.shape)}",
                         "eager PyTorch would replace the parameter/buffer with a tensor of another type; fxla "
                         "updates the module's state in place, keeping its shape and dtype",
                         "register the buffer with its final shape and dtype, or return the new tensor instead "
                         "of storing it on the module")
    if _is_view(base):
        raise _error(node, f"{label}, which is (or may be) a view of {_label(base)}'s input",
                     "eager PyTorch would change the viewed tensor too; fxla does not track views",
                     "call .clone() on the view before changing it, or use the out-of-place op")
    at = order[node]
    for view in base.users:
        if view is node or order.get(view, at) > at or not _is_view(view):
            continue
        late = [u for u in view.users if order.get(u, -1) > at]
        if late:
            raise _error(node, f"{label}, after %{view.name} took a view of it that is used later "
                               f"(by %{late[0].name})",
                         "eager PyTorch would change that view too; fxla does not track views",
                         f"clone the view (%{view.name}.clone()) or change the tensor before viewing it")


def _label(node: Node) -> str:
    if node.op == "call_method":
        return f".{node.target}()"
    if node.op == "call_module":
        return f"module '{node.target}'"
    return getattr(node.target, "__name__", str(node.target))


def _rewrite(graph, node: Node, base: Node) -> Node:
    """Insert the out-of-place computation of ``base``'s new value after ``node``; returns its node."""
    with graph.inserting_after(node):
        if node.op == "call_method" and node.target in _INPLACE_METHODS:
            value = graph.call_method(_INPLACE_METHODS[node.target], node.args, node.kwargs)
        elif node.op == "call_method" and node.target == "fill_":
            fill = node.args[1] if len(node.args) > 1 else node.kwargs["value"]
            value = graph.call_method("expand_as", (fill, base)) if _is_tensor(fill) else \
                graph.call_function(torch.full_like, (base, fill))
        elif node.op == "call_method" and node.target == "zero_":
            value = graph.call_function(torch.zeros_like, (base,))
        elif node.op == "call_method" and node.target == "copy_":
            value = graph.call_method("expand_as", (node.args[1], base))
        elif node.target is operator.setitem:
            value = graph.call_function(setitem, node.args)
        else:                                   # iadd..., inplace=True: the node already computes the value
            value = node
    if value is not node:
        value.meta["source"] = node.meta.get("source")
    with graph.inserting_after(value):
        typed = graph.call_method("type_as", (value, base))      # in-place ops keep self's dtype
    typed.meta["source"] = node.meta.get("source")
    typed.meta["tensor_meta"] = base.meta["tensor_meta"]
    typed.meta["functionalized"] = True     # same shape and dtype (shapes are re-propagated)
    if value is not node:
        node.replace_all_uses_with(typed)       # `y = x.add_(1)` returns x itself: its new value
        graph.erase_node(node)
    else:
        node.replace_all_uses_with(typed, lambda user: user is not typed)
    return typed


def functionalize(gm: GraphModule) -> GraphModule:
    """``gm`` with in-place tensor mutation rewritten out of place (see the module docstring); ``gm`` itself
    when it has none, else a new GraphModule on a copy of the graph (``gm`` is not changed).  Raises
    :class:`PassError` for the mutations listed in the module docstring."""
    if not any(_mutated(gm, n) is not None for n in gm.graph.nodes):
        return gm
    graph = gm.graph.copy()
    out = GraphModule(gm, graph, class_name=type(gm).__name__)
    order = {n: i for i, n in enumerate(graph.nodes)}
    origin: Dict[Node, Node] = {}              # a new value of a mutated input/parameter -> that placeholder/get_attr
    final: Dict[Node, Node] = {}               # placeholder/get_attr -> its value after the last mutation
    for node in list(graph.nodes):
        base = _mutated(out, node)
        if base is None:
            continue
        _check(out, node, base, order)
        at = order[node]
        later = [u for u in base.users if order.get(u, -1) > at]
        new = _rewrite(graph, node, base)
        for user in later:
            user.replace_input_with(base, new)
        if "attribute_writes" in base.meta:     # a module attribute holding this tensor sees its final value
            new.meta["attribute_writes"] = base.meta.pop("attribute_writes")
        state = base if base.op in ("placeholder", "get_attr") else origin.get(base)
        if state is not None and not _is_constant(out, state):
            origin[new] = state
            final[state] = new
    inputs = {n.target: final[n] for n in graph.nodes if n.op == "placeholder" and n in final}
    if inputs:
        graph.meta["input_mutations"] = inputs
    state = {}
    for n in graph.nodes:                      # one entry per qualified name (get_attr nodes may repeat)
        if n.op == "get_attr" and n in final:
            state[n.target] = final[n]
    if state:
        graph.meta["state_mutations"] = state
    graph.lint()
    return out
