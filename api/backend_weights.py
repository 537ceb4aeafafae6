"""The parameters of a TorchDynamo graph, held by its compiled program as ``fxla.compile`` holds a model's.

Dynamo hands the backend a module's parameters as graph inputs, one placeholder each.  Taken as inputs they would
be handed to XLA at every call in torch's layout, and ``fxla-param-layout`` (docs/runtime.md: a dot's weight
stored ``[in, out]``, a convolution's kernel HWIO, uploaded once) could not apply, so XLA transposed every weight on
every call: torchvision's ResNet-18 at batch 2 (32x32) took 23 ms a call through the backend against 2.9 ms through
``fxla.compile`` (eager: 7.4 ms).  :func:`hold_parameters` turns each placeholder whose example input is an
``nn.Parameter`` the graph only reads into a ``get_attr`` of that very parameter on the converted graph.  The
compiled program then treats it as ``fxla.compile`` treats a model's weight: uploaded once in the layout its
consumers want, uploaded again when it changes (its version counter or data pointer: an optimizer step,
``load_state_dict``, docs/runtime.md "Weights that change"), and differentiated as a parameter (``.grad``).

Dynamo does not promise that a graph always receives the same parameter objects (with inlined ``nn.Module``\\ s one
graph may serve every instance of a class), so every call checks, by identity, that the held positions hold the
parameters held (:class:`DynamoCall`, about a microsecond for dozens of weights).  A call with the parameters of
another instance gets a compiled module holding those (its XLA program is the same, found in the on-disk
cache); with more sets, or with tensors that are not parameters there, the call runs the
graph with every input passed as dynamo passes it (what the backend compiled before it held weights), built once.
Each is logged to ``fxla.dynamo``; none computes with weights the call did not pass.

Not held (they stay inputs): a parameter the graph changes in place, returns or returns a view of (eager's output is
the parameter, or shares its memory: docs/tracing.md "Outputs that share memory"), one whose example has symbolic
sizes, a meta, sparse or inference tensor (an inference tensor has no version counter to see a change by), and a
Python-number position.  A call where an input the graph writes shares memory with a held parameter (dynamo does
not guard that) passes every input.  Holding a parameter keeps it alive as long as dynamo keeps the compiled
graph, which is the life of the process (``torch._dynamo.reset()`` does not drop dynamo's compiled functions):
at most :data:`MAX_HELD_SETS` sets per graph, and :func:`release_parameters` lets go of them all.
"""
from __future__ import annotations

import logging
import operator
import weakref
from typing import Any, Callable, List, Optional, Sequence, Tuple

import torch
from torch.utils import _pytree as pytree

from fxla.base.logs import DYNAMO
from fxla.frontend import GraphModule, Node
from fxla.frontend import meta as M
from fxla.frontend.passes.aliasing import is_view
from fxla.frontend.passes.functionalize import mutated_base

__all__ = ["DynamoCall", "hold_parameters", "release_parameters", "written_inputs"]


def _symbolic(example) -> bool:
    return isinstance(example, torch.Tensor) and any(isinstance(d, torch.SymInt) for d in example.shape)


def _writes(gm: GraphModule, user, group) -> bool:
    """Whether ``user`` may write a tensor of ``group`` in place (conservative: dynamo's graph has no shapes yet;
    ``torch.relu_(w)``, ``aten.add_.Tensor`` and the like count by their trailing underscore)."""
    if mutated_base(gm, user, untyped=True) in group:
        return True
    name = getattr(user.target, "__name__", "") if user.op == "call_function" else ""
    return name.split(".")[0].endswith("_") and not name.endswith("__") and any(
        a in group for a in pytree.tree_leaves((user.args, user.kwargs)))


def _group(gm: GraphModule, node):
    """``node`` and every node that may be a view of it, found without shape metadata (conservative: every result
    of a view function counts, ``broadcast_tensors``/``atleast_2d``'s and a one-operand ``einsum``'s included)."""
    group, stack = {node}, [node]
    while stack:
        for user in stack.pop().users:
            if user not in group and (is_view(gm, user) or user.target is torch.einsum):
                group.add(user)
                stack.append(user)
    return group


def _changed(gm: GraphModule, group) -> bool:
    """Whether the graph may write a tensor of ``group`` (a node and its views) in place."""
    return any(_writes(gm, user, group) for member in group for user in member.users)


def _only_read(gm: GraphModule, node, outputs) -> bool:
    """Whether the graph neither returns ``node`` (or a view of it) nor writes it (or a view of it) in place."""
    group = _group(gm, node)
    return not group & outputs and not _changed(gm, group)


def _holdable(value, example) -> bool:
    return (type(value) is torch.nn.Parameter and not value.is_meta and value.layout is torch.strided
            and not value.is_inference() and not _symbolic(example))


def written_inputs(gm: GraphModule) -> List[int]:
    """The positions of the converted dynamo graph's inputs it may write in place (before :func:`hold_parameters`)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return [i for i, node in enumerate(placeholders) if _changed(gm, _group(gm, node))]


def hold_parameters(gm: GraphModule, example_inputs: Sequence[Any], examples: Sequence[Any],
                    skip: Sequence[int] = ()) -> List[Tuple[int, torch.nn.Parameter]]:
    """Rewrite the converted dynamo graph ``gm`` in place: each placeholder whose example input (``example_inputs``,
    what dynamo passed; ``examples``: dynamo's example values of the placeholders, which carry its symbols) is a
    parameter the graph only reads becomes a ``get_attr`` of that parameter, registered on ``gm`` under the
    placeholder's name.  ``skip``: positions that are not tensors (Python numbers).  Returns the ``(position,
    parameter)`` pairs held, in position order (see the module docstring)."""
    graph = gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    out = graph.output_node
    outputs = {n for n in pytree.tree_leaves(out.args[0]) if isinstance(n, Node)} if out is not None else set()
    chosen = [(i, node, value) for i, (node, value, example) in enumerate(zip(placeholders, example_inputs, examples))
              if i not in skip and _holdable(value, example) and not hasattr(gm, node.name)
              and _only_read(gm, node, outputs)]
    if not chosen:
        return []
    for position, node, value in chosen:
        gm.register_parameter(node.name, value)
        with graph.inserting_after(placeholders[-1]):
            attr = graph.get_attr(node.name)
        attr.meta[M.SOURCE] = node.meta.get(M.SOURCE)
        node.replace_all_uses_with(attr)
        graph.erase_node(node)
    gm.recompile()
    return [(position, value) for position, _, value in chosen]


def _picker(positions: Sequence[int]) -> Callable[[Sequence[Any]], Tuple[Any, ...]]:
    """A function from a call's arguments to the tuple of those at ``positions``."""
    if len(positions) == 1:
        only = positions[0]
        return lambda args: (args[only],)
    return operator.itemgetter(*positions) if positions else (lambda args: ())


#: the sets of parameters one dynamo graph holds at most (each a compiled module of its own; further ones run the
#: graph with every parameter an input): each set stays alive with the graph (see the module docstring)
MAX_HELD_SETS = 2

#: every DynamoCall that holds parameters (what :func:`release_parameters` empties)
_HOLDERS: "weakref.WeakSet[DynamoCall]" = weakref.WeakSet()


def release_parameters() -> int:
    """Let go of every parameter the ``torch.compile(backend="fxla")`` graphs of this process hold, with their
    compiled modules and device copies (dynamo keeps its compiled graphs for the life of the process, even after
    ``torch._dynamo.reset()``).  A graph called again holds the parameters of that call (compiled again; its XLA
    program comes from the on-disk cache).  Returns how many sets were let go."""
    released = 0
    for call in list(_HOLDERS):
        released += call.release()
    return released


class DynamoCall:
    """What the backend returns for a dynamo graph whose inputs need more than fxla's compiled module: the
    inputs at ``numbers`` arrive as 0-d tensors and are passed on as Python numbers (``.item()``: dynamo's
    unspecialised numbers), and the parameters ``held`` (``(position, parameter)`` pairs, :func:`hold_parameters`)
    are not passed: ``compiled`` (the :class:`~fxla.CompiledModule`) holds them.

    A call whose held positions hold other parameters (another instance of the module's class: dynamo gives it
    the same graph) gets a compiled module holding those, made by ``make(args)`` (which returns the module and
    what it holds, as :func:`hold_parameters`), up to :data:`MAX_HELD_SETS` sets; with more sets, or other tensors
    than parameters there, the call runs ``make(None)``'s module: the graph with every input passed, built once.

    Slots, no ``__dict__``: dynamo wraps the backend's callable with ``functools.wraps``, which copies the wrapped
    object's ``__dict__`` into the wrapper, where :meth:`release` could not reach the parameters it holds."""

    __slots__ = ("compiled", "numbers", "weights", "_positions", "_held", "_rest", "_written", "_storages", "_make",
                 "_label", "_released", "_sets", "_every", "__weakref__")

    def __init__(self, compiled, count: int, numbers: Sequence[int] = (),
                 held: Sequence[Tuple[int, torch.nn.Parameter]] = (), make: Optional[Callable] = None,
                 label: str = "the graph", written: Sequence[int] = ()):
        self.compiled = compiled
        self.numbers = tuple(numbers)
        self.weights = tuple(w for _, w in held)
        self._positions = [p for p, _ in held]
        self._held = _picker(self._positions)
        self._rest = _picker([i for i in range(count) if i not in set(self._positions)])
        #: the inputs the graph writes in place (``written``): a call where one shares memory with a held parameter
        #: (dynamo does not guard that) passes every input, so that the program reads what it wrote
        self._written = _picker(list(written)) if written and held else None
        self._storages: Optional[Tuple[tuple, frozenset]] = None
        self._make, self._label = make, label
        self._released = False
        self._sets: List[Tuple[tuple, Any]] = [(self.weights, compiled)]
        self._every = None
        if self.weights:
            _HOLDERS.add(self)

    def release(self) -> int:
        """Drop the held sets (and the every-input module): the next call holds its own parameters again.  Returns
        how many sets were dropped (see :func:`release_parameters`)."""
        if not self.weights:
            return 0
        released = len(self._sets)
        self._sets, self._every = [], None
        self.compiled, self.weights = None, ()
        self._released = True
        return released

    def __call__(self, *args):
        if self.numbers:
            args = list(args)
            for i in self.numbers:
                args[i] = args[i].item()
        if not self.weights:
            if self._released and not self._hold_again(args):
                return self._every_input("called after its parameters were released with other tensors")(*args)
            if not self.weights:
                return self.compiled(*args)
        given = self._held(args)
        if self._written is not None and self._shared(given, args):
            return self._every_input("an input it writes shares memory with a parameter it holds")(*args)
        if all(map(operator.is_, given, self.weights)):
            return self.compiled(*self._rest(args))
        return self._other(given, args)

    def _hold_again(self, args) -> bool:
        """The first call after :meth:`release`: hold this call's parameters; ``False`` when they are not all
        parameters that can be held (the call then passes every input)."""
        compiled, held = self._make(args)
        if [p for p, _ in held] != self._positions:
            return False
        self._released = False
        self.compiled, self.weights = compiled, tuple(w for _, w in held)
        self._sets = [(self.weights, compiled)]
        _HOLDERS.add(self)
        return True

    def _shared(self, given, args) -> bool:
        """Whether an input the graph writes shares memory with a tensor at a held position."""
        written = [a.untyped_storage().data_ptr() for a in self._written(args) if isinstance(a, torch.Tensor)]
        if not written:
            return False
        pointers = tuple([w.data_ptr() if isinstance(w, torch.Tensor) else 0 for w in given])
        if self._storages is None or self._storages[0] != pointers:      # (kept while no tensor moved)
            self._storages = (pointers, frozenset(w.untyped_storage().data_ptr() for w in given
                                                  if isinstance(w, torch.Tensor)))
        return not self._storages[1].isdisjoint(written)

    def _other(self, given, args):
        for weights, compiled in self._sets[1:]:
            if all(map(operator.is_, given, weights)):
                return compiled(*self._rest(args))
        if len(self._sets) < MAX_HELD_SETS and all(type(w) is torch.nn.Parameter for w in given):
            compiled, held = self._make(args)
            if [p for p, _ in held] == self._positions:
                self._sets.append((tuple(w for _, w in held), compiled))
                _log("%s: called with other parameters than it holds (another instance of the module, or parameters "
                     "replaced): holding those too (set %d of at most %d)", self._label, len(self._sets),
                     MAX_HELD_SETS)
                return compiled(*self._rest(args))
        return self._every_input("called with other tensors than the parameters it holds, and no further set can "
                                 "be held")(*args)

    def _every_input(self, why: str):
        if self._every is None:
            _log("%s: %s: compiling it again with every parameter passed as an input", self._label, why)
            self._every = self._make(None)[0]
        return self._every


def _log(message: str, *args) -> None:
    if DYNAMO.isEnabledFor(logging.INFO):
        DYNAMO.info(message, *args)
