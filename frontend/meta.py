"""The metadata stages hand each other on a graph: the known keys of ``node.meta`` and ``graph.meta``.

``node.meta`` and ``graph.meta`` are dicts any pass may add to, but a few keys are a contract between the
tracer, the passes, lowering and the tools.  Each has a constant here (use it instead of the string), a
type (:class:`NodeMeta` / :class:`GraphMeta` spell them) and a writer:

==========================  ====================================  ==========================================
key                         type                                  written by / meaning
==========================  ====================================  ==========================================
``node.meta[SOURCE]``       ``SourceLocation`` or ``None``        the tracer: the user's line that made the
                                                                  node (every traced node has one)
``node.meta[TENSOR_META]``  ``TensorMeta``, or a tuple/list/dict  shape propagation (and the concrete-shapes
                            of them (``None`` for non-tensors)    tracer): the shape and dtype of a value
                                                                  that holds tensors
``node.meta[VALUE]``        any Python value                      the same, for a value with no tensor (a
                                                                  size, a dtype): the value itself
``node.meta[ATTRIBUTE_      ``list`` of :class:`AttributeWrite`   the tracer's state capture: forward assigned
WRITES]``                                                         this node's value to a module attribute
``node.meta[STATE_          ``str`` (qualified name)              the tracer's state capture: this ``copy_``
ASSIGNMENT]``                                                     writes a parameter/buffer (``self.h = ...``)
``node.meta[FUNCTIONALIZED]``  ``bool``                           functionalization: a new value it made
``node.meta[GRAD_DISABLED]``  ``bool``                            the tracer: the call was made with grad mode
                                                                  off (``torch.no_grad()`` in forward;
                                                                  :mod:`~.passes.grad_mode`)
``node.meta[REPLACES]``     ``Node``                              functionalization: the value this in-place
                                                                  change's new value replaces
``node.meta[STATE_READS]``  ``dict``: qualified name -> Node      functionalization: a ``call_module``'s
                                                                  parameters/buffers forward changed before
                                                                  the call, and their values then
``node.meta[CLASS_          :class:`AssumedClass`                 the tracer's ``isinstance``: a placeholder
ASSUMED]``                                                        whose class the model's code asked while
                                                                  tracing, and the answers the trace gave
                                                                  (each call's value must give them too)
``graph.meta[               ``dict``: ``inputs`` (name ->         the concrete-shapes tracer: what the graph
SPECIALIZATION]``           TensorMeta or value), ``fixed``       is valid for
                            (name -> value), ``device``
``graph.meta[ATTRIBUTE_     ``list`` of ``(serial, qualified      the tracer's state capture: untraced values
CONSTANTS]``                name, value)``                        forward assigns to module attributes
``graph.meta[INPUT_         ``dict``: placeholder name -> Node    functionalization: each mutated input's
MUTATIONS]``                                                      final value
``graph.meta[STATE_         ``dict``: qualified name -> Node      functionalization: each mutated parameter /
MUTATIONS]``                                                      buffer's final value
``graph.meta[VALUE_         ``list`` of ``value_guards.Guard``    the concrete-shapes tracer with value guards:
GUARDS]``                                                         data-dependent values it decided
``graph.meta[QUIET_         ``frozenset`` of placeholder names    :mod:`~.passes.grad_mode`: the mutated inputs
MUTATIONS]``                                                      changed only under ``torch.no_grad()`` or
                                                                  through ``detach()``/``.data``
``graph.meta[GRAD_          ``SourceLocation`` or ``None``        the tracer (:mod:`~.grad_enables`): where
ENABLED_AT]``                                                     forward turns grad mode on
                                                                  (``torch.enable_grad()``)
``graph.meta[GRAD_MODE_     ``GradModeRead``                      the tracer (:mod:`~.grad_enables`): the
READ]``                                                           caller's grad mode forward read
                                                                  (``torch.is_grad_enabled()``), as the
                                                                  trace assumed it, and where
``graph.meta[CALLER_GRAD_   ``True``                              the tracer: the trace is made for a caller
OFF]``                                                            under ``no_grad`` (grad_enables)
``graph.meta[REQUIRES_      ``set`` of module paths               the tracer: modules whose parameters'
GRAD_READS]``                                                     ``requires_grad`` the program depends on
==========================  ====================================  ==========================================

:func:`node_meta_problem` / :func:`graph_meta_problem` check those types (``Graph.lint`` calls them); keys not
listed here are free-form.
"""
from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional, Tuple, TypedDict

import torch

from .source import SourceLocation

__all__ = ["SOURCE", "TENSOR_META", "VALUE", "ATTRIBUTE_WRITES", "STATE_ASSIGNMENT", "FUNCTIONALIZED",
           "GRAD_DISABLED", "REPLACES", "STATE_READS", "CLASS_ASSUMED", "AssumedClass",
           "SPECIALIZATION", "ATTRIBUTE_CONSTANTS", "ATTRIBUTE_STARTS", "ATTRIBUTE_READS",
           "INPUT_MUTATIONS", "STATE_MUTATIONS", "VALUE_GUARDS", "QUIET_MUTATIONS", "GRAD_ENABLED_AT",
           "GRAD_MODE_READ", "GradModeRead", "CALLER_GRAD_OFF", "REQUIRES_GRAD_READS",
           "NodeMeta", "GraphMeta", "AttributeWrite", "node_meta_problem", "graph_meta_problem"]

# ---- node.meta ----------------------------------------------------------------------------------------------------
SOURCE = "source"
TENSOR_META = "tensor_meta"
VALUE = "value"
ATTRIBUTE_WRITES = "attribute_writes"
STATE_ASSIGNMENT = "state_assignment"
FUNCTIONALIZED = "functionalized"
GRAD_DISABLED = "grad_disabled"
REPLACES = "replaces"
STATE_READS = "state_reads"
# ---- graph.meta ---------------------------------------------------------------------------------------------------
SPECIALIZATION = "specialization"
ATTRIBUTE_CONSTANTS = "attribute_constants"
ATTRIBUTE_STARTS = "attribute_starts"
ATTRIBUTE_READS = "attribute_reads"
INPUT_MUTATIONS = "input_mutations"
STATE_MUTATIONS = "state_mutations"
VALUE_GUARDS = "value_guards"
QUIET_MUTATIONS = "quiet_mutations"
CLASS_ASSUMED = "class_assumed"
GRAD_ENABLED_AT = "grad_enabled_at"
GRAD_MODE_READ = "grad_mode_read"
CALLER_GRAD_OFF = "caller_grad_off"
REQUIRES_GRAD_READS = "requires_grad_reads"


class GradModeRead(NamedTuple):
    """``graph.meta[GRAD_MODE_READ]``: forward's code read the grad mode (``torch.is_grad_enabled()``) while it was
    traced; the trace assumed the caller's mode was ``enabled``; ``where``: the first read (the user's line)."""

    enabled: bool
    where: Optional[SourceLocation]


class AssumedClass(NamedTuple):
    """``node.meta[CLASS_ASSUMED]`` of a placeholder: the class ``isinstance`` took it for while tracing (a
    shape-agnostic trace's inputs are tensors), where the first such check was, the remedies of the entry
    point that traced it (:mod:`fxla.frontend.remedies`), and each check's ``(cls, answer)``: a call's value
    must give the same answers."""

    cls: type
    where: Optional[SourceLocation]
    remedies: Any
    decisions: List[Tuple[Any, bool]]


class AttributeWrite(NamedTuple):
    """``module.attr = value`` in forward, recorded on the node of each traced leaf of ``value`` (its
    ``meta["attribute_writes"]``): ``serial`` orders the assignments (the last of a name wins), ``name`` is the
    qualified attribute name, ``spec`` the value's treespec, ``index`` this leaf's position in it and
    ``constants`` the value's untraced leaves by position."""

    serial: int
    name: str
    spec: Any
    index: int
    constants: Dict[int, Any]


class NodeMeta(TypedDict, total=False):
    """The known keys of ``node.meta`` and their types (see the module docstring for who writes each)."""

    source: Optional[SourceLocation]
    tensor_meta: Any            # TensorMeta, or a tuple/list/dict of TensorMeta / None
    value: Any
    attribute_writes: List[AttributeWrite]
    state_assignment: str
    functionalized: bool
    grad_disabled: bool
    replaces: Any               # Node
    state_reads: Dict[str, Any]     # qualified name -> Node
    class_assumed: AssumedClass


class GraphMeta(TypedDict, total=False):
    """The known keys of ``graph.meta`` and their types (see the module docstring for who writes each)."""

    specialization: Dict[str, Any]                  # {"inputs": {...}, "fixed": {...}, "device": torch.device}
    attribute_constants: List[Tuple[int, str, Any]]
    attribute_starts: Dict[str, Any]                # qualified name -> its value when the trace began
    attribute_reads: Dict[str, Any]                 # qualified name -> the plain attribute's value the trace read
    input_mutations: Dict[str, Any]                 # placeholder name -> Node
    state_mutations: Dict[str, Any]                 # qualified name -> Node
    value_guards: List[Any]                         # fxla.frontend.value_guards.Guard
    quiet_mutations: frozenset                      # placeholder names
    grad_enabled_at: Optional[SourceLocation]


def _is_tensor_meta(value: Any) -> bool:
    from .shape_prop import TensorMeta          # (shape_prop imports the graph machinery: imported when checked)
    if value is None or isinstance(value, TensorMeta):
        return True
    if isinstance(value, (tuple, list)):
        return all(_is_tensor_meta(v) for v in value)
    if isinstance(value, dict):
        return all(_is_tensor_meta(v) for v in value.values())
    return False


def _is_node(value: Any) -> bool:
    from .node import Node
    return isinstance(value, Node)


def _is_node_map(value: Any) -> bool:
    from .node import Node
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, Node) for k, v in value.items())


_NODE_CHECKS = {
    SOURCE: (lambda v: v is None or isinstance(v, SourceLocation), "a SourceLocation or None"),
    TENSOR_META: (_is_tensor_meta, "a TensorMeta or a tuple/list/dict of TensorMeta / None"),
    ATTRIBUTE_WRITES: (lambda v: isinstance(v, list) and all(isinstance(w, AttributeWrite) for w in v),
                       "a list of AttributeWrite"),
    STATE_ASSIGNMENT: (lambda v: isinstance(v, str), "a qualified parameter/buffer name (str)"),
    FUNCTIONALIZED: (lambda v: isinstance(v, bool), "a bool"),
    GRAD_DISABLED: (lambda v: isinstance(v, bool), "a bool"),
    REPLACES: (lambda v: _is_node(v), "a Node"),
    STATE_READS: (_is_node_map, "a dict of qualified name -> Node"),
    CLASS_ASSUMED: (lambda v: isinstance(v, AssumedClass), "an AssumedClass"),
}

_GRAPH_CHECKS = {
    SPECIALIZATION: (lambda v: isinstance(v, dict) and isinstance(v.get("inputs"), dict)
                     and isinstance(v.get("fixed"), dict) and isinstance(v.get("device"), (torch.device, str)),
                     "a dict of 'inputs' (dict), 'fixed' (dict) and 'device'"),
    ATTRIBUTE_CONSTANTS: (lambda v: isinstance(v, list) and all(
        isinstance(e, tuple) and len(e) == 3 and isinstance(e[0], int) and isinstance(e[1], str) for e in v),
        "a list of (serial, qualified name, value)"),
    ATTRIBUTE_STARTS: (lambda v: isinstance(v, dict) and all(isinstance(k, str) for k in v),
                       "a dict of qualified name -> value"),
    ATTRIBUTE_READS: (lambda v: isinstance(v, dict) and all(isinstance(k, str) for k in v),
                      "a dict of qualified name -> value"),
    INPUT_MUTATIONS: (_is_node_map, "a dict of placeholder name -> Node"),
    STATE_MUTATIONS: (_is_node_map, "a dict of qualified name -> Node"),
    VALUE_GUARDS: (lambda v: isinstance(v, list) and all(hasattr(g, "holds") for g in v), "a list of Guard"),
    QUIET_MUTATIONS: (lambda v: isinstance(v, frozenset) and all(isinstance(n, str) for n in v),
                      "a frozenset of placeholder names"),
    GRAD_ENABLED_AT: (lambda v: v is None or isinstance(v, SourceLocation), "a SourceLocation or None"),
    GRAD_MODE_READ: (lambda v: isinstance(v, GradModeRead), "a GradModeRead"),
    CALLER_GRAD_OFF: (lambda v: v is True, "True"),
    REQUIRES_GRAD_READS: (lambda v: isinstance(v, set) and all(isinstance(m, str) for m in v),
                          "a set of module paths"),
}


def _problem(meta: Dict[str, Any], checks, where: str) -> Optional[str]:
    for key, (ok, want) in checks.items():
        if key in meta and not ok(meta[key]):
            return f"{where}[{key!r}] is {type(meta[key]).__name__}, expected {want}"
    return None


def node_meta_problem(meta: Dict[str, Any]) -> Optional[str]:
    """What is wrong with the known keys of a ``node.meta`` (:class:`NodeMeta`), or None."""
    return _problem(meta, _NODE_CHECKS, "meta")


def graph_meta_problem(meta: Dict[str, Any]) -> Optional[str]:
    """What is wrong with the known keys of a ``graph.meta`` (:class:`GraphMeta`), or None."""
    return _problem(meta, _GRAPH_CHECKS, "graph.meta")
