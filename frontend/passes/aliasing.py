"""Which nodes of a traced graph are (or may be) views of which tensors: the aliasing facts
:func:`fxla.frontend.passes.functionalize` needs to refuse a mutation eager PyTorch would make visible through
another tensor.

In eager PyTorch a *view* shares its base's memory: changing the base changes the view, and changing the view
changes the base.  The graph records values, not memory, so this module recognises the ops whose result is, or
may be, a view of (or the very tensor of) an argument -- torch's view ops (https://pytorch.org/docs/stable/
tensor_view.html: ``view``, ``expand``/``broadcast_to``, ``narrow``, ``select``, basic indexing, ``chunk``/
``split``/``unbind``/``tensor_split`` and the other tuple-returning splits, ``flatten``/``reshape``/``ravel``
(views when they can be), ``squeeze``/``unsqueeze``, ``t``/``transpose``/``permute``/``movedim``, ``diagonal``,
``unfold``, ``real``/``imag``/``view_as_real``, ``detach``, ...), the ops that return their input itself
(``contiguous``, ``to``/``float``... without a dtype change, ``cpu``, ``positive``, ``conj`` of a real tensor,
``atleast_2d``, ``nn.Identity``, dropout when it does not drop), and the multi-tensor ones
(``broadcast_tensors``, ``meshgrid``, one-operand ``einsum``).  :func:`aliases` follows them transitively, so a
view of a view (``y.flatten()[..., None]``, ``y.chunk(2)[0]``, ``y.unsqueeze(0).squeeze(0)``) counts.

The lists err on the side of "may be a view": a false "view" makes functionalize refuse a program (with a
:class:`~fxla.frontend.PassError` and a fix), a missed one would compute a wrong answer.
"""
from __future__ import annotations

import inspect
import operator
from typing import Dict, Iterator, List, Optional, Set, Tuple

import torch
import torch.nn.functional as F

from .. import meta as M
from ..graph_module import GraphModule
from ..interpreter import Interpreter
from ..node import Node, map_arg
from ..shape_prop import TensorMeta

__all__ = ["is_view", "view_sources", "aliases", "lineage", "broadcasts", "overlap", "whole_root", "index_path",
           "layout_sensitive_inputs", "drops_history"]

#: Tensor methods (and ``getattr`` attributes: ``x.T``, ``x.data``) whose result is, or may be, a view of self
VIEW_METHODS = frozenset({
    "view", "view_as", "reshape", "reshape_as", "flatten", "ravel", "unflatten", "squeeze", "unsqueeze",
    "transpose", "swapaxes", "swapdims", "t", "permute", "movedim", "moveaxis", "adjoint", "expand", "expand_as",
    "broadcast_to", "narrow", "select", "unfold", "diagonal", "as_strided", "detach", "detach_", "contiguous",
    "split", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes", "chunk", "unsafe_chunk", "unbind",
    "tensor_split", "hsplit", "vsplit", "dsplit", "real", "imag", "view_as_real", "positive", "conj",
    "resolve_conj", "resolve_neg", "sum_to_size", "requires_grad_", "cpu", "to", "type_as", "float", "half",
    "bfloat16", "double", "int", "long", "bool", "type", "__getitem__", "T", "mT", "H", "mH", "data"})

#: methods that return self itself when the dtype is already the requested one (a copy when it changes)
CASTS = frozenset({"to", "type_as", "float", "half", "bfloat16", "double", "int", "long", "bool", "type"})

#: torch functions whose result is, or may be, a view of their first argument
VIEW_FUNCTIONS = frozenset({
    torch.reshape, torch.flatten, torch.ravel, torch.unflatten, torch.squeeze, torch.unsqueeze, torch.transpose,
    torch.swapaxes, torch.swapdims, torch.t, torch.permute, torch.movedim, torch.moveaxis, torch.adjoint,
    torch.broadcast_to, torch.narrow, torch.select, torch.diagonal, torch.detach, torch.split,
    torch.split_with_sizes, torch.unsafe_split, torch.unsafe_split_with_sizes, torch.chunk, torch.unsafe_chunk,
    torch.unbind, torch.tensor_split, torch.hsplit, torch.vsplit, torch.dsplit, torch.as_strided,
    operator.getitem, torch.real, torch.imag, torch.view_as_real, torch.view_as_complex, torch.positive,
    torch.conj, torch.resolve_conj, torch.resolve_neg, operator.pos, torch.dropout, torch.alpha_dropout,
    torch.feature_dropout, torch.feature_alpha_dropout}) | frozenset(
    getattr(torch.Tensor, name) for name in VIEW_METHODS - CASTS
    if callable(getattr(torch.Tensor, name, None)))              # torch.Tensor.view(x, -1) spelled as a function

#: torch functions whose results may be views of *every* tensor argument (one result per argument)
MULTI_VIEW_FUNCTIONS = frozenset({torch.broadcast_tensors, torch.meshgrid, torch.atleast_1d, torch.atleast_2d,
                                  torch.atleast_3d, torch._VF.atleast_1d, torch._VF.atleast_2d,
                                  torch._VF.atleast_3d})     # (the _VF ones: a list argument, as traced)

#: functional dropouts: they return their input itself when they do not drop (not training, or p == 0)
DROPOUT_FUNCTIONS = frozenset({F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout,
                               F.feature_alpha_dropout})

#: leaf modules that return (a view of) their input
VIEW_MODULES = (torch.nn.Identity, torch.nn.Flatten, torch.nn.Unflatten)

#: results that broadcast their input (stride-0 dimensions): writing into them is refused by eager
EXPANDS_METHODS = frozenset({"expand", "expand_as", "broadcast_to"})


def _tensor_nodes(value) -> Iterator[Node]:
    if isinstance(value, Node):
        if M.TENSOR_META in value.meta:
            yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensor_nodes(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensor_nodes(v)


def _bound(fn, node: Node) -> Dict[str, object]:
    try:
        bound = inspect.signature(fn).bind(*node.args, **node.kwargs)
    except (TypeError, ValueError):
        return {}
    bound.apply_defaults()
    return dict(bound.arguments)


def _drops(p, training) -> bool:
    """Whether a dropout with these arguments computes a new tensor (else it returns its input)."""
    return training is True and isinstance(p, (int, float)) and p != 0


def _kind(gm: GraphModule, node: Node) -> str:
    """``"view"`` (a view of its first argument), ``"multi"`` (of each tensor argument) or ``""``."""
    if node.meta.get(M.FUNCTIONALIZED):                            # a new value made by functionalize
        return ""
    if node.op == "call_method":
        if node.target in CASTS:                                   # a copy when the dtype changes
            source = node.args[0] if node.args else None
            changes = isinstance(source, Node) and isinstance(source.meta.get(M.TENSOR_META), TensorMeta) \
                and isinstance(node.meta.get(M.TENSOR_META), TensorMeta) \
                and source.meta[M.TENSOR_META].dtype != node.meta[M.TENSOR_META].dtype
            return "" if changes else "view"
        return "view" if node.target in VIEW_METHODS else ""
    if node.op == "call_function":
        target = node.target
        if target is getattr:
            return "view" if node.args[1] in VIEW_METHODS else ""
        if target is operator.getitem and _advanced(node.args[1] if len(node.args) > 1 else None):
            return ""                                              # advanced indexing makes a copy
        if target in MULTI_VIEW_FUNCTIONS:
            return "multi"
        if target is torch.einsum:                                 # einsum("ij->ji", x) is a permuted view
            return "multi" if len(list(_tensor_nodes(node.args[1:]))) == 1 else ""
        if target in DROPOUT_FUNCTIONS:
            args = _bound(target, node)
            return "" if args and _drops(args.get("p"), args.get("training")) else "view"
        return "view" if target in VIEW_FUNCTIONS else ""
    if node.op == "call_module":
        try:
            mod = gm.get_submodule(node.target)
        except AttributeError:
            return ""
        if isinstance(mod, VIEW_MODULES):
            return "view"
        if isinstance(mod, torch.nn.modules.dropout._DropoutNd):
            return "" if _drops(mod.p, mod.training) else "view"
    return ""


def _advanced(index) -> bool:
    """Whether ``x[index]`` is advanced indexing (a list, or a bool or non-0-d integer tensor in it): a copy."""
    parts = index if isinstance(index, tuple) else (index,)
    for part in parts:
        meta = part.meta.get(M.TENSOR_META) if isinstance(part, Node) else None
        if isinstance(part, list) or (isinstance(meta, TensorMeta) and (meta.dtype == torch.bool or meta.shape)):
            return True
    return False


def is_view(gm: GraphModule, node: Node) -> bool:
    """Whether ``node``'s value is, or may be, a view of (or the same tensor as) one of its arguments."""
    return bool(_kind(gm, node))


def view_sources(gm: GraphModule, node: Node) -> List[Node]:
    """The tensor nodes ``node``'s value may be a view of (empty when it is not a view)."""
    kind = _kind(gm, node)
    if kind == "multi":
        return list(_tensor_nodes((node.args, node.kwargs)))
    if kind == "view" and node.args and isinstance(node.args[0], Node):
        return [node.args[0]]
    return []


def aliases(gm: GraphModule, base: Node) -> List[Node]:
    """Every node whose value is, or may be, a view of ``base`` -- directly or through other views (a view of a
    view, an element of a ``chunk``/``split``/``unbind`` result) -- in graph order of discovery."""
    found: List[Node] = []
    seen: Set[Node] = {base}
    stack = [base]
    while stack:
        source = stack.pop()
        for user in source.users:
            if user not in seen and source in view_sources(gm, user):
                seen.add(user)
                found.append(user)
                stack.append(user)
    return found


def lineage(gm: GraphModule, node: Node) -> Tuple[List[Node], List[Node]]:
    """``(views, roots)``: the views ``node`` is made through (``node`` first when it is a view) and the tensors
    at their start that are not views themselves (``node`` itself when it is not a view) -- the owners of the
    memory it may share."""
    views: List[Node] = []
    found: List[Node] = []
    seen: Set[Node] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        sources = view_sources(gm, current)
        if sources:
            views.append(current)
            stack.extend(sources)
        else:
            found.append(current)
    return views, found


def _shape(node) -> tuple:
    meta = node.meta.get(M.TENSOR_META) if isinstance(node, Node) else None
    return tuple(meta.shape) if isinstance(meta, TensorMeta) else ()


def broadcasts(node: Node) -> bool:
    """Whether ``node`` is an ``expand``/``expand_as``/``broadcast_to`` that repeats an element (a size-1 or new
    dimension made longer than 1): its result has several elements in one memory location."""
    if node.op == "call_method":
        if node.target not in EXPANDS_METHODS:
            return False
    elif node.op != "call_function" or node.target is not torch.broadcast_to:
        return False
    source, result = _shape(node.args[0] if node.args else None), _shape(node)
    if not result or not isinstance(node.args[0], Node):
        return False
    padded = (1,) * (len(result) - len(source)) + source
    return any(have == 1 and want > 1 for have, want in zip(padded, result))


#: view ops that copy instead when the input's layout (or device, dtype) asks for it: their result may not share
#: the input's memory, so a write into it is not surely a write into the input
MAY_COPY_METHODS = frozenset({"reshape", "reshape_as", "flatten", "ravel", "unflatten", "contiguous", "sum_to_size",
                              "type", "type_as", "cuda"})
MAY_COPY_FUNCTIONS = frozenset({torch.reshape, torch.flatten, torch.ravel, torch.unflatten}) | frozenset(
    getattr(torch.Tensor, name) for name in MAY_COPY_METHODS if callable(getattr(torch.Tensor, name, None)))
#: the device methods that return the tensor itself for fxla's inputs (torch tensors on the CPU)
_DEVICE_METHODS = frozenset({"to", "cpu"})


def _on_cpu(device) -> bool:
    try:
        return torch.device(device).type == "cpu"
    except (RuntimeError, TypeError):
        return False


def _never_copies(gm: GraphModule, node: Node) -> bool:
    """Whether ``node``, a view op (:func:`is_view`), returns its input itself or a view of it whatever the
    input's layout: not ``reshape``/``flatten``/``contiguous`` (copies for some strides), not a ``to`` with a
    ``copy=True`` or ``memory_format``, nor one to a device other than the CPU, where fxla's torch inputs are
    (``x.to(x.dtype)``, ``x.to("cpu")``, ``x.float()`` of a float32 tensor: the tensor itself)."""
    if node.op == "call_method":
        if node.target in MAY_COPY_METHODS:
            return False
        if node.target in _DEVICE_METHODS:
            devices = [a for a in (*node.args[1:], node.kwargs.get("device"))
                       if isinstance(a, (str, torch.device))]
            return not node.kwargs.get("copy") and "memory_format" not in node.kwargs \
                and all(_on_cpu(d) for d in devices)
        return "memory_format" not in node.kwargs
    if node.op == "call_function":
        return node.target not in MAY_COPY_FUNCTIONS
    if node.op == "call_module":
        try:
            return isinstance(gm.get_submodule(node.target), torch.nn.Identity)
        except AttributeError:
            return False
    return False


def drops_history(node: Node) -> bool:
    """Whether ``node`` is a view with its source's memory but none of its history: ``x.detach()``, ``x.data``."""
    if node.op == "call_method":
        return node.target == "detach"
    return node.op == "call_function" and (node.target in (torch.detach, torch.Tensor.detach) or
                                           (node.target is getattr and node.args[1:2] == ("data",)))


def whole_root(gm: GraphModule, node: Node):
    """The tensor ``node`` is all of, element for element, or ``None``: ``node`` is a view (:func:`is_view`) of one
    root tensor, with its shape and dtype and each element in the root's place, made through ops that never copy
    (``x.to(x.dtype)``, ``x.to("cpu")``, ``x.detach()``, ``x.view(x.shape)``, ``x[:]``, ``x.permute(0, 1)``).
    In eager a write into ``node`` then writes every element of the root, so the root's new value is ``node``'s."""
    views, roots = lineage(gm, node)
    if not views or len(roots) != 1 or not all(_never_copies(gm, v) for v in views):
        return None
    root = roots[0]
    have, want = node.meta.get(M.TENSOR_META), root.meta.get(M.TENSOR_META)
    if not isinstance(have, TensorMeta) or not isinstance(want, TensorMeta) or have.dtype != want.dtype \
            or tuple(have.shape) != tuple(want.shape):
        return None
    try:
        ids = _element_ids(gm, root, node)
    except Exception:                               # _Unknown, or an op that cannot run on the numbering
        return None
    whole = torch.arange(torch.Size(want.shape).numel()).reshape(tuple(want.shape))
    return root if ids.shape == whole.shape and torch.equal(ids, whole) else None


def _tensor_meta(node) -> Optional[TensorMeta]:
    meta = node.meta.get(M.TENSOR_META) if isinstance(node, Node) else None
    return meta if isinstance(meta, TensorMeta) else None


def _basic_index(node: Node):
    """``(source, index)`` when ``node`` is ``source[index]`` by basic indexing (ints, slices, ``None``,
    ``...``: a view of those elements), also spelled ``select(d, i)`` or ``narrow(d, start, length)`` with int
    arguments; else ``None``."""
    method = node.target if node.op == "call_method" else None
    function = node.target if node.op == "call_function" else None
    args = dict(enumerate(node.args))
    source = args.get(0)
    meta = _tensor_meta(source)
    if meta is None:
        return None
    if method == "__getitem__" or function in (operator.getitem, torch.Tensor.__getitem__):
        index = args.get(1)
        return None if index is None or _advanced(index) else (source, index)
    if method in ("select", "narrow") or function in (torch.select, torch.narrow, torch.Tensor.select,
                                                      torch.Tensor.narrow):
        name = method or function.__name__
        values = [args.get(i, node.kwargs.get(key)) for i, key in
                  enumerate(("input", "dim", "index" if name == "select" else "start", "length"))][1:]
        values = values[:2] if name == "select" else values
        if not all(type(v) is int for v in values) or not meta.shape:
            return None
        dim = values[0] % len(meta.shape)
        part = values[1] if name == "select" else slice(values[1], values[1] + values[2])
        return source, (slice(None),) * dim + (part,)
    return None


def index_path(gm: GraphModule, node: Node):
    """``[(source, index, view), ...]`` from a root tensor (not a view) down to ``node``, when ``node`` is made
    from it by basic indexing alone (``r[a:b]``, ``r[0][:, 1]``, ``r.select(0, 2)``, ``r.narrow(1, 0, 4)``); else
    ``None``.  A write into ``node`` then writes exactly those elements of the root in eager: its new value is
    ``setitem(root, index, new)``, level by level (what :func:`~fxla.frontend.passes.functionalize` records)."""
    path = []
    current = node
    while True:
        step = _basic_index(current)
        if step is None:
            break
        path.append((step[0], step[1], current))
        current = step[0]
    if not path or is_view(gm, current):
        return None
    return path[::-1]


#: the largest tensor :func:`overlap` numbers element by element (a larger one is assumed to overlap)
MAX_ELEMENTS = 1 << 22


class _Unknown(Exception):
    """The elements a view covers cannot be worked out here."""


def _element_ids(gm: GraphModule, root: Node, node: Node, index=None) -> torch.Tensor:
    """Which elements of ``root`` each element of ``node`` (a view of it; ``node[index]`` when given) is: the
    view ops replayed on ``arange`` numbering root's elements.  Which elements a view covers does not depend on
    root's memory layout (a ``reshape`` that copies in eager covers none: counting it is only cautious)."""
    meta = root.meta.get(M.TENSOR_META)
    if not isinstance(meta, TensorMeta) or torch.Size(meta.shape).numel() > MAX_ELEMENTS:
        raise _Unknown
    interp = Interpreter(gm)
    interp.env[root] = torch.arange(torch.Size(meta.shape).numel()).reshape(meta.shape)

    def value(n: Node):
        if n in interp.env:
            return interp.env[n]
        m = n.meta.get(M.TENSOR_META)
        if not view_sources(gm, n):                 # an argument that is not a view of root: its shape counts
            if isinstance(m, TensorMeta):
                return torch.zeros(m.shape, dtype=m.dtype)
            if M.VALUE not in n.meta:
                raise _Unknown
            return n.meta[M.VALUE]
        for arg in n.all_input_nodes:
            interp.env[arg] = value(arg)
        out = interp.run_node(n)
        if isinstance(m, TensorMeta) and (m.dtype != meta.dtype or tuple(out.shape) != tuple(m.shape)):
            raise _Unknown                          # a dtype view (view(torch.int32), view_as_real): not numbered
        interp.env[n] = out
        return out

    def index_value(n: Node):
        if isinstance(n.meta.get(M.TENSOR_META), TensorMeta):
            raise _Unknown                          # a tensor index: which elements depends on its values
        return value(n)

    ids = value(node)
    if index is not None:
        ids = ids[map_arg(index, index_value)]
    return ids


def overlap(gm: GraphModule, written: Node, other: Node, index=None) -> str:
    """How the elements ``other`` reads relate to those an in-place op writes (``written``, or
    ``written[index]``): ``"none"`` (no shared memory), ``"full"`` (the very same elements in the same places:
    each is read before it is written, so the value is what an out-of-place op computes) or ``"partial"``
    (eager refuses, or reads elements already written; also whatever cannot be worked out)."""
    _, written_roots = lineage(gm, written)
    _, other_roots = lineage(gm, other)
    if not set(written_roots) & set(other_roots):
        return "none"
    if len(written_roots) != 1 or len(other_roots) != 1:
        return "partial"
    try:
        w = _element_ids(gm, written_roots[0], written, index)
        o = _element_ids(gm, written_roots[0], other)
    except Exception:                               # _Unknown, or an op that cannot run on the numbering
        return "partial"
    if w.shape == o.shape and torch.equal(w, o):
        return "full"
    return "partial" if bool(torch.isin(o.reshape(-1), w.reshape(-1)).any()) else "none"


#: ops whose success depends on their input's strides (eager: "view size is not compatible with input tensor's
#: size and stride"); every other traced op computes the same values whatever the layout
LAYOUT_METHODS = frozenset({"view", "view_as"})


def layout_sensitive_inputs(gm: GraphModule) -> List[Node]:
    """The placeholders whose memory layout decides whether the program runs in eager: a ``view``/``view_as``
    of the input, or of a view of it (``x.t().view(-1)`` fails on a contiguous ``x`` while tracing already, but
    ``x.view(-1)`` fails in eager only for a non-contiguous ``x`` passed at call time, which tracing, on
    contiguous meta tensors, does not see).  A caller that knows the call's strides checks these inputs."""
    found: List[Node] = []
    for node in gm.graph.nodes:
        layout = (node.op == "call_method" and node.target in LAYOUT_METHODS) or (
            node.op == "call_function" and node.target in (torch.Tensor.view, torch.Tensor.view_as))
        if not layout or not node.args or not isinstance(node.args[0], Node):
            continue
        for root in lineage(gm, node.args[0])[1]:
            if root.op == "placeholder" and root not in found:
                found.append(root)
    return found
