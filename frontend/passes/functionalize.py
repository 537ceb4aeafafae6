"""``functionalize``: rewrite in-place tensor mutation into out-of-place ops (what ``torch.func.functionalize``
does for torch's graphs), so that every later use of a mutated tensor reads its new value.

fxla programs are functional (StableHLO has no mutation), so a traced ``y.add_(1)``, ``y[0] = v``,
``y += 1``, ``y.fill_(0)``, ``y.uniform_()`` (a random draw like ``y``), ``nn.ReLU(inplace=True)(y)`` or an op
writing ``out=y`` (``F.normalize(v, out=y)`` in ``spectral_norm``; a result of another shape is refused) becomes
a node computing the new value of ``y``,
and the uses of ``y`` *after* it (in graph order) read that node instead.  A Python alias (``z = y``) is the
same node, so it sees the change too, as in eager.  An in-place op keeps its tensor's dtype, so where the
out-of-place op may promote (``y.add_(v)``, ``y += v``, ``y.fill_(v)``) the new value is cast back,
``.type_as(y)``; an op flagged ``inplace=True`` on a floating-point tensor (``nn.ReLU(inplace=True)``, dropout)
computes in that dtype already, so it is the new value itself, with no cast.

A mutated graph input (``x += 1`` on a placeholder) is rewritten the same way, and the result graph's
``graph.meta["input_mutations"]`` maps the placeholder's name to the node of its final value; likewise
``graph.meta["state_mutations"]`` maps the qualified name of each mutated parameter or buffer
(``self.steps += 1``, ``self.cache[:, i] = k``) to its final value.  The lowering returns those values after
the program's outputs, and ``fxla.compile`` copies them into the caller's tensors and the module's state
after the call, as eager would have changed them.  A tensor assigned to a plain module attribute
(``self.last = y``, the tracer's ``meta["attribute_writes"]``) that is mutated later is written with its final
value: the attribute holds the same tensor in eager.  (Tensors the tracer made constants,
``_tensor_constant<N>``, are rewritten but never written back: eager makes a new one per call.  A tensor captured
from outside the traced code is such a constant too.  A tensor the code makes from constant sizes --
``torch.zeros(3, 4)``, a Hugging Face static KV cache made on its first call -- and changes with a traced value is
traced from its creation instead, :mod:`fxla.frontend.factories`: a local tensor here.)

A write into a view that is *all* of its base, element for element, made through ops that never copy --
``x.to("cpu")`` or ``x.float()`` that return ``x`` itself, ``x.detach()``, ``x.view(x.shape)``, ``x[:]``
(:func:`~fxla.frontend.passes.aliasing.whole_root`) -- is a write of the base: the base's later uses read the new
value, and an input or module state is written back (``cumulative_length.to(device).add_(n)`` in a Hugging Face
static cache changes the input in eager).

A write into a view made by basic indexing alone -- ``b[n:2 * n].zero_()`` (torchvision's Swin V2),
``r[1:][0].mul_(s)``, ``r.select(1, 2).add_(v)``, ``r.narrow(0, 1, 2).fill_(5)``, with int ``select``/``narrow``
arguments (:func:`~fxla.frontend.passes.aliasing.index_path`) -- is *written through*: the base's new value is
``setitem(base, index, new view)``, level by level up to the root, and the later uses of the root and of the
views on the way read the new values (a mutated input or module state is written back as above).

The rewrite needs the graph's shape metadata (run :func:`fxla.frontend.propagate_shapes` first; rewritten
graphs need it again).  It refuses, with a :class:`fxla.frontend.PassError` naming the source line, what it
cannot express without aliasing information:

* mutating a tensor that is (or may be) a *view* of another -- the result of ``view``, ``reshape``, ``x[...]``,
  ``transpose``, ``.T``, ``expand``, ``chunk(...)[i]``, ``detach``, ``contiguous`` ... (the list is
  :mod:`fxla.frontend.passes.aliasing`) -- when something sharing its memory is read afterwards, or its memory
  is an input or module state, because eager mutates the base tensor (and its other views) too; except a view
  that is all of its base, or one made by basic indexing (both above), whose base alone may be read
  afterwards.  (``y[i] += v``, which Python runs as ``t = y[i]; t += v; y[i] = t``, is rewritten as
  ``y[i] = y[i] + v``.);
* mutating a tensor after taking a view of it -- directly or through views of views, ``chunk``/``split``/
  ``unbind`` parts included -- that is used later or stored on the module (the view would change in eager);
* an in-place op eager refuses on a broadcast tensor (``x.expand(3, 4).add_(1)``: "more than one element of
  the written-to tensor refers to a single memory location"), with eager's reason;
* an in-place op whose other argument shares part of the memory it writes (``y.add_(y[0])``, ``v[1:] = v[:-1]``):
  eager refuses it or reads elements it already overwrote (:func:`~fxla.frontend.passes.aliasing.overlap`);
* in-place ops that change a tensor's shape or strides (``unsqueeze_``, ``t_``, ``resize_`` ...).
"""
from __future__ import annotations

import functools
import itertools
import operator
from typing import Dict, List, Optional

import torch
from torch.utils import _pytree as pytree

from .. import meta as M
from ..errors import PassError
from ..graph_module import GraphModule
from ..node import Node
from ..shape_prop import TensorMeta
from .aliasing import (DROPOUT_FUNCTIONS, _bound, _drops, aliases, broadcasts, drops_history, index_path, is_view,
                       lineage, overlap, whole_root)
from .grad_mode import keep_history

__all__ = ["functionalize", "setitem", "mutated_base"]


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

def _uniform(graph, base, from_=0.0, to=1.0, *, generator=None):
    drawn = graph.call_function(torch.rand_like, (base,), {"generator": generator} if generator else {})
    return graph.call_function(operator.add, (graph.call_function(operator.mul, (drawn, to - from_)), from_))


def _normal(graph, base, mean=0.0, std=1.0, *, generator=None):
    drawn = graph.call_function(torch.randn_like, (base,), {"generator": generator} if generator else {})
    return graph.call_function(operator.add, (graph.call_function(operator.mul, (drawn, std)), mean))


def _bernoulli(graph, base, p=0.5, *, generator=None):
    kwargs = {"generator": generator} if generator else {}
    if _is_tensor(p):
        return graph.call_function(torch.bernoulli, (graph.call_method("expand_as", (p, base)),), kwargs)
    return graph.call_function(torch.bernoulli, (base, p), kwargs)


#: in-place random fills -> their out-of-place value (a random draw like self; the others have no rule)
_RANDOM_FILLS = {"uniform_": _uniform, "normal_": _normal, "bernoulli_": _bernoulli}

#: in-place Python operators on tensors (``y += 1``): recorded as ``operator.iadd``..., computed out of place
_INPLACE_OPERATORS = frozenset({operator.iadd, operator.isub, operator.imul, operator.itruediv,
                                operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul,
                                operator.iand, operator.ior, operator.ixor, operator.ilshift, operator.irshift})

#: in-place methods that change shape/strides or storage: not expressible as a value
_METADATA_METHODS = frozenset({"unsqueeze_", "squeeze_", "t_", "transpose_", "swapdims_", "swapaxes_",
                               "resize_", "resize_as_", "as_strided_", "set_", "unflatten_"})

def _is_tensor(arg) -> bool:
    return isinstance(arg, Node) and M.TENSOR_META in arg.meta


def _error(node: Node, what: str, why: str, fix: str) -> PassError:
    return PassError(what, where=node.meta.get(M.SOURCE), why=why, fix=fix)


def _module_is_inplace(gm: GraphModule, node: Node) -> bool:
    try:
        mod = gm.get_submodule(node.target)
    except AttributeError:
        return False
    if isinstance(mod, torch.nn.modules.dropout._DropoutNd) and not _drops(mod.p, mod.training):
        return False        # Dropout(inplace=True) in eval mode (or p=0) returns its input: nothing is written
    return getattr(mod, "inplace", False) is True


def mutated_base(gm: GraphModule, node: Node, *, untyped: bool = False) -> Optional[Node]:
    """The tensor node ``node`` mutates in place, or ``None``.  ``untyped``: the graph has no shape metadata yet
    (dynamo's graph before fxla traces it): any node argument is taken for a tensor."""
    tensor = (lambda arg: isinstance(arg, Node)) if untyped else _is_tensor
    out = node.kwargs.get("out") if node.op in ("call_function", "call_method") else None
    if tensor(out):                                 # torch.div(a, b, out=v): v gets the result
        return out
    base = node.args[0] if node.args else None
    if not tensor(base):
        return None
    if node.op == "call_method":
        if node.target in _INPLACE_METHODS or node.target in ("fill_", "zero_", "copy_", *_RANDOM_FILLS) \
                or node.target in _METADATA_METHODS:
            return base
        return base if node.kwargs.get("inplace") is True else None
    if node.op == "call_function":
        if node.target is operator.setitem or node.target in _INPLACE_OPERATORS:
            return base
        if node.target in DROPOUT_FUNCTIONS:        # F.dropout(x, p, training, inplace) (positional: dynamo)
            args = _bound(node.target, node)
            return base if args and args.get("inplace") is True and _drops(args.get("p"), args.get("training")) \
                else None
        return base if node.kwargs.get("inplace") is True else None
    if node.op == "call_module" and _module_is_inplace(gm, node):
        return base
    return None


def _is_constant(gm: GraphModule, node: Node) -> bool:
    """A tensor the tracer made a constant (``torch.empty(3, 4)`` in the traced code: a new tensor per call in
    eager), not a parameter, buffer or tensor attribute of the user's module."""
    return node.op == "get_attr" and node.target.startswith("_tensor_constant") and node.target not in \
        dict(gm.named_parameters()) and node.target not in dict(gm.named_buffers())


def _check(gm: GraphModule, node: Node, base: Node, order: Dict[Node, int], origin: Dict[Node, Node],
           path=None) -> None:
    label = f"in-place {_label(node)} on %{base.name}"
    if node.op == "call_method" and node.target in _METADATA_METHODS:
        raise _error(node, f"{label} changes the tensor's shape or strides in place",
                     "fxla programs compute values; a tensor whose shape changes in place has no single type",
                     f"use the out-of-place form (y = y.{node.target[:-1]}(...))")
    assigned = node.meta.get(M.STATE_ASSIGNMENT)
    if assigned and _is_tensor(node.args[1]):
        have, want = node.args[1].meta[M.TENSOR_META], base.meta[M.TENSOR_META]
        if tuple(have.shape) != tuple(want.shape) or have.dtype != want.dtype:
            raise _error(node, f"assigning a {have.dtype} tensor of shape {list(have.shape)} to '{assigned}', a "
                               f"{want.dtype} tensor of shape {list(want.shape)}",
                         "eager PyTorch would replace the parameter/buffer with a tensor of another type; fxla "
                         "updates the module's state in place, keeping its shape and dtype",
                         "register the buffer with its final shape and dtype, or return the new tensor instead "
                         "of storing it on the module")
    if broadcasts(base) and not _writes_overlap(node):
        raise _error(node, f"{label}, the result of {_label(base)}: more than one element of the written-to "
                           f"tensor refers to a single memory location",
                     "eager PyTorch refuses this in-place op on a broadcast (stride-0) tensor (\"unsupported "
                     "operation: more than one element of the written-to tensor refers to a single memory "
                     "location\")",
                     f"clone the broadcast tensor first (%{base.name}.clone()), or use the out-of-place op")
    _check_overlap(gm, node, base, label)
    at = order[node]
    if is_view(gm, base):
        _check_view_write(gm, node, base, label, at, order, origin, path)
    for view in aliases(gm, base):
        if order.get(view, at) > at:            # a view taken after the change sees the new value
            continue
        late = [u for u in view.users if order.get(u, -1) > at]
        if late or M.ATTRIBUTE_WRITES in view.meta:
            user = f"by %{late[0].name}" if late else "stored on the module"
            raise _error(node, f"{label}, after %{view.name} took a view of it that is used later ({user})",
                         "eager PyTorch would change that view too (views share their base's memory, also "
                         "through views of views and the parts of chunk/split/unbind); fxla does not "
                         "recompute views",
                         f"clone the view (%{view.name}.clone()) or change the tensor before viewing it")


def _check_overlap(gm: GraphModule, node: Node, base: Node, label: str) -> None:
    """An argument of the in-place op that shares some, not all, of the memory it writes (``y.add_(y.t())``,
    ``y[1:] = y[:-1]``): eager refuses it or reads elements already written; fxla would read the old values."""
    if node.target is operator.setitem:
        reads, index = node.args[2:3], node.args[1]
    else:
        reads, index = [*node.args[1:], *node.kwargs.values()], None
    for arg in reads:
        if _is_tensor(arg) and arg is not base and overlap(gm, base, arg, index) == "partial":
            raise _error(node, f"{label} reads %{arg.name}, which shares part of the memory it writes",
                         "eager PyTorch refuses this (\"unsupported operation: some elements of the input tensor "
                         "and the written-to tensor refer to a single memory location\") or reads elements "
                         "already overwritten; fxla would compute from the old values",
                         f"clone the argument first (%{arg.name}.clone())")


def _check_view_write(gm: GraphModule, node: Node, base: Node, label: str, at: int, order: Dict[Node, int],
                      origin: Dict[Node, Node], path=None) -> None:
    """Writing into ``base``, a view: fine only when nothing that shares its memory is read afterwards (then the
    write changes ``base``'s value alone, as the rewrite computes); else eager's write would show elsewhere.
    ``origin``: the new values of inputs and module state made so far (``v = x.add_(1)`` is ``x`` itself).
    ``path``: ``base``'s :func:`~fxla.frontend.passes.aliasing.index_path` when the write is written through
    into the root (:func:`_write_path`): the root and the views on the way to ``base`` get their new values,
    so they may be read afterwards; the root's other views may not."""
    what = f"{label}, which is (or may be) a view of {_label(base)}'s input"
    why = "eager PyTorch would change the viewed tensor (and its other views) too; fxla does not write through views"
    fix = "call .clone() on the view before changing it, or use the out-of-place op"
    views, roots = lineage(gm, base)
    spread = [view for view in views if broadcasts(view)]
    if spread:                          # eager writes each memory location once or refuses: not a value update
        raise _error(node, f"{what}, a view of the broadcast %{spread[0].name}", why, fix)
    writeback = _writeback(node, base, at, order)
    until = order[writeback] if writeback is not None else len(order)    # reads after it see the written-back y
    whole = whole_root(gm, base)        # base is all of it: the write is the root's (its later uses are rewired)
    through = {source for source, _, _ in path or ()}     # written through: they read their new values
    for root in roots:
        state = origin.get(root, root)
        if state.op in ("placeholder", "get_attr") and writeback is None and root is not whole \
                and root not in through:
            raise _error(node, f"{what}, %{state.name} ({'an input' if state.op == 'placeholder' else 'module state'})",
                         why, fix)
        for member in [root] + aliases(gm, root):
            if member is base or member is whole or member in through or order.get(member, at) > at:
                continue
            late = [u for u in member.users if at < order.get(u, -1) < until]
            if late or M.ATTRIBUTE_WRITES in member.meta:
                user = f"by %{late[0].name}" if late else "stored on the module"
                raise _error(node, f"{what}, and %{member.name}, which shares its memory, is used later ({user})",
                             why, fix)


def _writeback(node: Node, base: Node, at: int, order: Dict[Node, int]) -> Optional[Node]:
    """The ``y[i] = v`` that writes the changed view ``base = y[i]`` back where it came from -- Python's
    ``y[i] += 1`` is ``v = y[i]; v += 1; y[i] = v`` -- or ``None``.  With it the write through the view is exactly
    ``y[i] = y[i] + 1`` (that setitem is then rewritten, and written back to an input or module state)."""
    if base.op != "call_function" or base.target is not operator.getitem or len(base.args) != 2:
        return None
    for user in node.users:
        if user.target is operator.setitem and order.get(user, -1) > at and len(user.args) == 3 \
                and user.args[0] is base.args[0] and user.args[2] is node and user.args[1] == base.args[1]:
            return user
    return None


def _write_path(gm: GraphModule, node: Node, base: Node, order: Dict[Node, int]):
    """The :func:`~fxla.frontend.passes.aliasing.index_path` of ``base`` when ``node``'s write into it is written
    through into its root (``b = r.clone(); b[n:2 * n].zero_()`` then reads of ``r``), else ``None``: ``base`` is
    a view made by basic indexing, not all of its root and not written back by a following ``y[i] = v``."""
    if not is_view(gm, base) or whole_root(gm, base) is not None or \
            _writeback(node, base, order[node], order) is not None:
        return None
    return index_path(gm, base)


def _write_through(graph, value: Node, path, at: int, order: Dict[Node, int]) -> Node:
    """After ``path[-1]``'s view got its new ``value``: each source on the path gets its new value,
    ``setitem(source, index, new view)`` from the view up to the root; the root's uses after the write (graph
    position ``at``) read the root's new value, and those of each view on the path read that view taken again from
    it, still a view of the root (a later write into it is written through again); returns the root's new value."""
    first = value
    for source, index, _ in reversed(path):
        with graph.inserting_after(value):
            written = graph.call_function(setitem, (source, index, value))
        _made_for(written, value)
        written.meta[M.TENSOR_META] = source.meta[M.TENSOR_META]
        written.meta[M.FUNCTIONALIZED] = True   # a new value, not a view of source (shapes are re-propagated)
        written.meta[M.REPLACES] = source       # (it keeps the history of what it replaces: passes.history)
        value = written
    root = path[0][0]
    for user in [u for u in root.users if order.get(u, -1) > at]:
        user.replace_input_with(root, value)
    again = value
    for k, (_, index, view) in enumerate(path):
        with graph.inserting_after(again):
            again = graph.call_function(operator.getitem, (again, index))
        again.meta.update({M.SOURCE: view.meta.get(M.SOURCE), M.TENSOR_META: view.meta[M.TENSOR_META]})
        if view.meta.get(M.GRAD_DISABLED):
            again.meta[M.GRAD_DISABLED] = True
        for old in (view, first) if k == len(path) - 1 else (view,):
            for user in [u for u in old.users if order.get(u, -1) > at]:
                user.replace_input_with(old, again)
    return value


#: in-place writes eager allows into a broadcast tensor (they write each memory location once, into the base)
_OVERLAP_WRITES = frozenset({"fill_", "zero_", "masked_fill_", "index_fill_"})


def _writes_overlap(node: Node) -> bool:
    return node.target is operator.setitem or (node.op == "call_method" and node.target in _OVERLAP_WRITES)


def _label(node: Node) -> str:
    if node.op == "call_method":
        return f".{node.target}()"
    if node.op == "call_module":
        return f"module '{node.target}'"
    return getattr(node.target, "__name__", str(node.target))


def _keeps_dtype(gm, node: Node, base: Node) -> bool:
    """Whether an op flagged in place (``inplace=True``: activations, dropout) computes its value in ``base``'s
    dtype when it runs out of place, so the cast back to that dtype (``type_as``, which an in-place op implies)
    would be a no-op: ``base`` is floating point, every tensor the op reads has its dtype, no number it takes is
    complex, and a module holds no tensors of its own.  (Augmented assignments, ``x += y``, and in-place methods,
    ``x.add_(y)``, may promote: they keep the cast.)"""
    if node.op == "call_function" and node.target in _INPLACE_OPERATORS:
        return False
    dtype = base.meta[M.TENSOR_META].dtype
    if not dtype.is_floating_point:
        return False
    if node.op == "call_module":
        module = gm.get_submodule(node.target) if gm is not None else None
        if module is None or next(itertools.chain(module.parameters(), module.buffers()), None) is not None:
            return False
    for arg in pytree.tree_leaves((node.args, node.kwargs)):
        if isinstance(arg, Node):
            meta = arg.meta.get(M.TENSOR_META)
            if not isinstance(meta, TensorMeta) or meta.dtype != dtype:
                return False
        elif isinstance(arg, (complex, torch.Tensor)):
            return False
    return True


def _state_reads(gm: GraphModule, node: Node, final: Dict[Node, Node]) -> None:
    """A ``call_module`` node (a layer fxla lowers whole, reading its parameters and buffers by name) after forward
    changed some of them in place (``self.lin.weight.clamp_(-c, c)``, a momentum encoder's update, a weight tied to
    another layer's): the node's ``meta["state_reads"]`` names their values at the call (the lowering reads those,
    as eager's layer does)."""
    module = gm.get_submodule(node.target)
    names: Dict[int, List[str]] = {}
    for name, t in itertools.chain(module.named_parameters(remove_duplicate=False),
                                   module.named_buffers(remove_duplicate=False)):
        names.setdefault(id(t), []).append(name)
    reads = {}
    for state, value in final.items():
        if state.op == "get_attr":
            tensor = functools.reduce(getattr, state.target.split("."), gm)
            reads.update({f"{node.target}.{name}": value for name in names.get(id(tensor), ())})
    if reads:
        node.meta[M.STATE_READS] = reads


def _check_out(node: Node, base: Node) -> None:
    have, want = node.meta.get(M.TENSOR_META), base.meta.get(M.TENSOR_META)
    if isinstance(have, TensorMeta) and isinstance(want, TensorMeta) and tuple(have.shape) != tuple(want.shape):
        raise _error(node, f"{_label(node)} writes a result of shape {list(have.shape)} into out= of shape "
                     f"{list(want.shape)}", "eager resizes the out= tensor; fxla keeps every tensor's shape",
                     "assign the result (y = op(...)) instead of passing out=")


def _made_for(new: Node, node: Node) -> None:
    """``new`` computes (part of) what ``node`` did: its source line, and whether grad mode was off."""
    new.meta[M.SOURCE] = node.meta.get(M.SOURCE)
    if node.meta.get(M.GRAD_DISABLED):
        new.meta[M.GRAD_DISABLED] = True


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
        elif node.op == "call_method" and node.target in _RANDOM_FILLS:
            value = _RANDOM_FILLS[node.target](graph, base, *node.args[1:], **node.kwargs)
        elif node.op == "call_method" and node.target == "copy_":
            value = graph.call_method("expand_as", (node.args[1], base))
        elif node.target is operator.setitem:
            value = graph.call_function(setitem, node.args)
        elif node.kwargs.get("out") is base:       # the op without out=: the new value
            _check_out(node, base)
            value = graph.create_node(node.op, node.target, node.args,
                                      {k: v for k, v in node.kwargs.items() if k != "out"})
        else:                                   # iadd..., inplace=True: the node already computes the value
            value = node
    if value is not node:
        _made_for(value, node)
    elif _keeps_dtype(graph.owning_module, node, base):   # `ReLU(inplace=True)`: the node is the new value as is
        node.meta[M.FUNCTIONALIZED] = True
        return node
    with graph.inserting_after(value):
        typed = graph.call_method("type_as", (value, base))      # in-place ops keep self's dtype
    _made_for(typed, node)
    typed.meta[M.TENSOR_META] = base.meta[M.TENSOR_META]
    typed.meta[M.FUNCTIONALIZED] = True     # same shape and dtype (shapes are re-propagated)
    if value is not node:
        node.replace_all_uses_with(typed)       # `y = x.add_(1)` returns x itself: its new value
        graph.erase_node(node)
    else:
        node.replace_all_uses_with(typed, lambda user: user is not typed)
    return typed


def _kept(graph, new: Node, whole: Node) -> Node:
    """``keep_history(new, whole)``: the new value of ``whole`` made by a write through a view without its history
    (``y.detach().add_(1)``, ``y.data.clamp_(-c, c)``): eager changes ``y``'s elements and keeps its history, so
    the gradient reaches what ``y`` reached (the write itself is not recorded)."""
    with graph.inserting_after(new):
        kept = graph.call_function(keep_history, (new, whole))
    kept.meta[M.SOURCE] = new.meta.get(M.SOURCE)
    kept.meta.update({M.TENSOR_META: whole.meta[M.TENSOR_META], M.FUNCTIONALIZED: True, M.REPLACES: whole})
    if new.meta.get(M.GRAD_DISABLED):
        kept.meta[M.GRAD_DISABLED] = True
    return kept


def functionalize(gm: GraphModule) -> GraphModule:
    """``gm`` with in-place tensor mutation rewritten out of place (see the module docstring); ``gm`` itself
    when it has none, else a new GraphModule on a copy of the graph (``gm`` is not changed).  Raises
    :class:`PassError` for the mutations listed in the module docstring."""
    for node in gm.graph.nodes:
        if isinstance(node.kwargs.get("out"), (tuple, list)):
            raise _error(node, f"{_label(node)} writes its results into out=(...), a tuple of tensors",
                         "fxla rewrites an out= of one tensor as an in-place write, not a tuple of them",
                         "assign the results instead (values, indices = torch.max(x, 0))")
    if not any(mutated_base(gm, n) is not None for n in gm.graph.nodes):
        return gm
    graph = gm.graph.copy()
    out = GraphModule(gm, graph, class_name=type(gm).__name__)
    order = {n: i for i, n in enumerate(graph.nodes)}
    origin: Dict[Node, Node] = {}              # a new value of a mutated input/parameter -> that placeholder/get_attr
    final: Dict[Node, Node] = {}               # placeholder/get_attr -> its value after the last mutation
    for node in list(graph.nodes):
        if node.op == "call_module" and final:  # a layer whose weight forward changed before calling it: its new value
            _state_reads(out, node, final)
        base = mutated_base(out, node)
        if base is None:
            continue
        path = _write_path(out, node, base, order)   # `b[n:2 * n].zero_()`: written through into b
        _check(out, node, base, order, origin, path)
        at = order[node]
        whole = whole_root(out, base)           # `x.to("cpu").add_(1)`: a write of all of x
        later = [(u, t) for t in (base, whole) if t is not None for u in t.users if order.get(u, -1) > at]
        new = _rewrite(graph, node, base)
        # (the new value keeps the history of what it replaces: passes.history and, under no_grad, grad_mode)
        new.meta[M.REPLACES] = whole if whole is not None else base
        if whole is not None and any(map(drops_history, lineage(out, base)[0])):
            new = _kept(graph, new, whole)      # `y.detach().add_(1)`: eager's y keeps its history
        for user, old in later:
            user.replace_input_with(old, new)
        target = whole if whole is not None else base
        if path:
            new, target = _write_through(graph, new, path, at, order), path[0][0]
        for holder in dict.fromkeys((base, target)):     # a module attribute holding this tensor sees its final value
            if M.ATTRIBUTE_WRITES in holder.meta:
                new.meta[M.ATTRIBUTE_WRITES] = holder.meta.pop(M.ATTRIBUTE_WRITES)
        state = target if target.op in ("placeholder", "get_attr") else origin.get(target)
        if state is not None and not _is_constant(out, state):
            origin[new] = state
            final[state] = new
    inputs = {n.target: final[n] for n in graph.nodes if n.op == "placeholder" and n in final}
    if inputs:
        graph.meta[M.INPUT_MUTATIONS] = inputs
    state = {}
    for n in graph.nodes:                      # one entry per qualified name (get_attr nodes may repeat)
        if n.op == "get_attr" and n in final:
            state[n.target] = final[n]
    if state:
        graph.meta[M.STATE_MUTATIONS] = state
    graph.lint()
    return out
