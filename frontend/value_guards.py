"""Value guards: a concrete_shapes trace that decides data-dependent values from the call's own data, and the
checks that keep every later call honest.

A trace has no tensor *values*: ``if labels.max() >= vocab_size: raise ...`` (a Hugging Face speech model's label
check), ``(labels >= 0).nonzero()`` (a classifier's labelled rows), ``x[mask]`` or ``x.masked_select(mask)``
(CTC targets) cannot be decided from shapes.  ``fxla.compile(model, concrete_shapes=True)`` traces each input
signature on a real call, so it can decide them the way torch.export specialises a value and asserts it
(:class:`ValueGuards`, which a :class:`~fxla.frontend.concrete.ConcreteShapeTracer` made with
``value_guards=True`` holds):

* **a truth value or an int** of a traced value (``bool(t)``, ``if t:``, ``int(t)``, ``range(t)``): the value is
  computed from the call's inputs (:class:`RealValues`: the recorded ops replayed on the real tensors, under
  ``torch.no_grad``) and the trace goes on with it; the traced value becomes a *guard* expected to equal it;
* **a data-dependent shape** (``torch.nonzero(x)``, ``x.masked_select(mask)``, ``x[mask]`` with one boolean
  index): how many elements it selects, ``k``, is computed the same way; the op is recorded as a fixed-size
  equivalent (the positions of the selected elements by a cumulative sum and a scatter into ``k`` slots:
  :data:`DECOMPOSITIONS`), and the number of selected elements becomes a guard expected to equal ``k``.

The guards of a trace are ``graph.meta["value_guards"]`` (:class:`Guard`: node name, expected value, kind, the
user's source line).  :func:`guard_graph` makes the program that computes them from the same inputs; the caller
(``fxla.compile``'s per-signature traces, :mod:`fxla.per_shape`) runs it before each call and runs the main
program only when every guard has its expected value -- else it traces again for that call (another variant
of the signature).  So a program specialised to data never runs on data it was not traced for.

Not guarded (the trace fails with its usual :class:`~fxla.frontend.TraceError`): a value that depends on random
numbers (dropout in training mode, ``torch.rand``), on an in-place change (replaying it would change the
caller's tensors), or that is not a ``bool`` or ``int`` (a float ``.item()`` would be specialised to an exact
float); a boolean index among other indices.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

import torch

from . import meta as M
from .node import Node, map_arg
from .random_calls import RANDOM_FILLS, RANDOM_FUNCTIONS

__all__ = ["Guard", "ValueGuards", "RealValues", "NotGuardable", "guard_graph", "guards_of", "check_guards",
           "DECOMPOSITIONS", "draws"]


class NotGuardable(Exception):
    """The value cannot be computed from the call's inputs at trace time (the reason is the message)."""


@dataclass(frozen=True)
class Guard:
    """One guard: the value of node ``name`` must be ``expected`` (``kind`` ``"bool"`` or ``"int"``: how the
    value is read, as ``bool(t)`` / ``int(t)``); ``where`` is the user's source line that asked for it (a
    :class:`~fxla.frontend.SourceLocation`), ``what`` what was decided (``"value"``: a truth value or int the
    code asked for; else the data-dependent op whose number of selected elements it is: ``"nonzero"`` ...)."""
    name: str
    expected: Any
    kind: str
    where: Any
    what: str = "value"

    def holds(self, value: Any) -> bool:
        read = bool(value) if self.kind == "bool" else int(value)
        return read == self.expected

    def describe(self) -> str:
        return f"%{self.name} == {self.expected!r} (at {self.where})"


def guards_of(graph) -> List[Guard]:
    """The guards a trace recorded (empty for a graph without)."""
    return list(graph.meta.get(M.VALUE_GUARDS, ()))


def check_guards(guards: List[Guard], values) -> Optional[Guard]:
    """The first guard ``values`` (the guard program's results, in order) breaks, or ``None``."""
    for guard, value in zip(guards, values):
        if not guard.holds(value):
            return guard
    return None


# ---- the trace side ----------------------------------------------------------------------------------------------
#: the names of the functions and methods that may draw random numbers: torch's random functions and in-place
#: fills (fxla.frontend.random_calls), the dropouts and rrelu
_RANDOM_NAMES = frozenset(RANDOM_FUNCTIONS) | frozenset(RANDOM_FILLS) | frozenset({
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "rrelu"})


def draws(root: torch.nn.Module, node: Node) -> bool:
    """Whether ``node`` draws random numbers (its replay would not be the program's draw)."""
    if node.op == "call_module":
        try:
            module = root.get_submodule(node.target)
        except AttributeError:
            return False
        return module.training and type(module).__name__.lower().endswith(("dropout", "dropout1d", "dropout2d",
                                                                           "dropout3d", "rrelu"))
    name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
    return name in _RANDOM_NAMES


class RealValues:
    """The real value of a traced node, from the call's inputs: its ancestors replayed on real tensors, each once
    (``inputs``: placeholder node -> the call's value; ``root``: the traced module, whose parameters and buffers
    ``get_attr`` reads)."""

    def __init__(self, root: torch.nn.Module, pause: Callable[[bool], None]):
        self.root = root
        self.pause = pause
        self.env: Dict[Node, Any] = {}

    def set_input(self, node: Node, value: Any) -> None:
        self.env[node] = value

    def of(self, node: Node) -> Any:
        """The value of ``node`` (raises :class:`NotGuardable` with the reason)."""
        ancestors: List[Node] = []
        seen = set()
        stack = [node]
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            ancestors.append(n)
            stack.extend(n.all_input_nodes)
        self._check_unchanged(node, ancestors)
        order = {n: i for i, n in enumerate(node.graph.nodes)}
        for n in sorted((n for n in ancestors if n not in self.env), key=order.__getitem__):
            self.env[n] = self._run(n)
        return self.env[node]

    def _check_unchanged(self, node: Node, ancestors: List[Node]) -> None:
        """Refuse when an in-place op recorded so far changes the memory of a tensor ``node`` is computed from
        (``ancestors``, ``node`` among them): the graph records the change as its own node (functionalization
        applies it later), so replaying the ancestors alone (or reusing values replayed before the change) would
        read the old value."""
        from .passes.aliasing import lineage
        from .passes.functionalize import mutated_base
        owners = set()
        for n in ancestors:
            if M.TENSOR_META in n.meta:
                owners.update(lineage(self.root, n)[1])
        for n in node.graph.nodes:
            base = mutated_base(self.root, n) if n.op != "placeholder" else None
            if base is not None and owners.intersection(lineage(self.root, base)[1]):
                raise NotGuardable(f"an in-place change (%{n.name}) writes into a tensor it is computed from")

    def _run(self, n: Node) -> Any:
        from .passes.functionalize import mutated_base
        if n.op == "placeholder":
            raise NotGuardable(f"the input %{n.name} has no value here")
        if draws(self.root, n):
            raise NotGuardable(f"it depends on random numbers (%{n.name})")
        if n.op != "get_attr" and mutated_base(self.root, n) is not None:
            raise NotGuardable(f"it depends on an in-place change (%{n.name}), which replaying would repeat")
        args, kwargs = map_arg(n.args, self.env.__getitem__), map_arg(n.kwargs, self.env.__getitem__)
        self.pause(True)
        try:
            with torch.no_grad():
                if n.op == "get_attr":
                    value = self.root
                    for atom in n.target.split("."):
                        value = getattr(value, atom)
                    return value
                if n.op == "call_function":
                    return n.target(*args, **kwargs)
                if n.op == "call_method":
                    return getattr(args[0], n.target)(*args[1:], **kwargs)
                if n.op == "call_module":
                    return self.root.get_submodule(n.target)(*args, **kwargs)
        except NotGuardable:
            raise
        except Exception as e:
            raise NotGuardable(f"replaying %{n.name} on the call's tensors failed ({type(e).__name__}: {e})")
        finally:
            self.pause(False)
        raise NotGuardable(f"%{n.name} is a {n.op} node")


class ValueGuards:
    """The guards one trace records (see the module docstring); ``real``: the :class:`RealValues` of the trace."""

    def __init__(self, real: RealValues):
        self.real = real
        self.guards: List[Guard] = []

    def decide(self, node: Node, kind: str, where: Any, what: str = "value") -> Any:
        """The ``kind`` (``"bool"``/``"int"``) reading of ``node``'s real value, recorded as a guard (raises
        :class:`NotGuardable`)."""
        value = self.real.of(node)
        if isinstance(value, torch.Tensor) and value.numel() != 1:
            raise NotGuardable(f"%{node.name} has {value.numel()} elements, not one")
        floating = value.is_floating_point() if isinstance(value, torch.Tensor) else isinstance(value, float)
        if kind == "int" and floating:
            raise NotGuardable(f"%{node.name} is a floating-point value (a program specialised to an exact float "
                               f"would recompile for every value)")
        read = bool(value) if kind == "bool" else int(value)
        self.guards.append(Guard(node.name, read, kind, where, what))
        return read


# ---- fixed-size forms of the data-dependent ops ------------------------------------------------------------------
def _positions(guards: ValueGuards, flat_mask, where, what: str):
    """The positions of the true elements of the traced 1-D boolean ``flat_mask``, as a traced ``[k]`` int64
    tensor (``k`` decided from the call's data and guarded; ``what``: the op, for the guard)."""
    counted = flat_mask.long()
    count = counted.sum()
    k = guards.decide(count.node, "int", where, what)
    n = flat_mask.shape[0]
    slot = torch.where(flat_mask, torch.cumsum(counted, 0) - 1, k)      # each true element's place; the rest: k
    placed = torch.zeros(k + 1, dtype=torch.long).scatter(0, slot, torch.arange(n))
    return placed[:k]


def _nonzero(guards, where, input, *, as_tuple=False):
    if as_tuple is not False or input.dim() == 0:
        raise NotGuardable("nonzero(as_tuple=True) or of a 0-d tensor")
    lin = _positions(guards, (input != 0).reshape(-1), where, "nonzero")
    shape = tuple(input.shape)
    columns, stride = [], 1
    for size in reversed(shape):
        columns.append(torch.remainder(torch.div(lin, stride, rounding_mode="floor"), size))
        stride *= size
    return torch.stack(columns[::-1], dim=1)


def _masked_select(guards, where, input, mask):
    # (input and mask broadcast together by ops, not by shape arithmetic: sizes may be symbolic, traced values)
    mask = torch.logical_or(mask, torch.zeros_like(input, dtype=torch.bool))
    input = input.expand_as(mask)
    return input.reshape(-1)[_positions(guards, mask.reshape(-1), where, "masked_select")]


def _boolean_index(guards, where, input, index):
    if not isinstance(index, torch.Tensor) or index.dtype != torch.bool or index.dim() == 0:
        raise NotGuardable("an index other than one boolean tensor")
    rest = tuple(input.shape[index.dim():])
    return input.reshape((-1,) + rest)[_positions(guards, index.reshape(-1), where, "x[mask]")]


#: data-dependent ops -> their fixed-size form ``(guards, where, *args, **kwargs)`` on Proxies
DECOMPOSITIONS: Dict[Any, Callable] = {
    torch.nonzero: _nonzero, torch.Tensor.nonzero: _nonzero, "nonzero": _nonzero,
    torch.masked_select: _masked_select, torch.Tensor.masked_select: _masked_select, "masked_select": _masked_select,
    operator.getitem: _boolean_index, "__getitem__": _boolean_index,
}


# ---- the guard program --------------------------------------------------------------------------------------------
def guard_graph(graph):
    """A copy of ``graph`` that returns the values of its guards (a tuple, in order) and computes nothing else;
    ``None`` when it has no guards.  It has the same placeholders, so it takes the same arguments."""
    guards = guards_of(graph)
    if not guards:
        return None
    copy = graph.copy()
    by_name = {n.name: n for n in copy.nodes}
    out = copy.output_node
    copy.erase_node(out)
    result = copy.output(tuple(by_name[g.name] for g in guards))
    result.meta[M.SOURCE] = out.meta.get(M.SOURCE)
    copy.eliminate_dead_code()
    copy.meta.pop(M.VALUE_GUARDS, None)
    for key in (M.INPUT_MUTATIONS, M.STATE_MUTATIONS):
        copy.meta.pop(key, None)
    return copy
