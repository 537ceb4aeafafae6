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
another instance gets a compiled module holding those (up to :data:`MAX_HELD_SETS` sets; its XLA program is the
same, found in the on-disk cache); with more sets, or with tensors that are not parameters there, the call runs the
graph with every input passed as dynamo passes it (what the backend compiled before it held weights), built once.
Each is logged to ``fxla.dynamo``; none computes with weights the call did not pass.

Not held (they stay inputs): a parameter the graph changes in place, returns or returns a view of (eager's output is
the parameter, or shares its memory: docs/tracing.md "Outputs that share memory"), one whose example has symbolic
sizes, a meta, sparse or inference tensor (an inference tensor has no version counter to see a change by), and a
Python-number position.  Holding a parameter keeps it alive as long as dynamo keeps the compiled graph, as an
``fxla.compile`` of the model keeps the model: ``torch._dynamo.reset()`` lets them go.
"""
from __future__ import annotations

import logging
import operator
from typing import Any, Callable, List, Optional, Sequence, Tuple

import torch
from torch.utils import _pytree as pytree

from fxla.base.logs import DYNAMO
from fxla.frontend import GraphModule, Node
from fxla.frontend import meta as M
from fxla.frontend.passes.aliasing import aliases
from fxla.frontend.passes.functionalize import mutated_base

__all__ = ["DynamoCall", "hold_parameters"]


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


def _only_read(gm: GraphModule, node, outputs) -> bool:
    """Whether the graph neither returns ``node`` (or a view of it) nor writes it (or a view of it) in place."""
    group = {node, *aliases(gm, node)}
    if group & outputs:
        return False
    return not any(_writes(gm, user, group) for member in group for user in member.users)


def _holdable(value, example) -> bool:
    return (type(value) is torch.nn.Parameter and not value.is_meta and value.layout is torch.strided
            and not value.is_inference() and not _symbolic(example))


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
#: graph with every parameter an input)
MAX_HELD_SETS = 4


class DynamoCall:
    """What the backend returns for a dynamo graph whose inputs need more than fxla's compiled module: the
    inputs at ``numbers`` arrive as 0-d tensors and are passed on as Python numbers (``.item()``: dynamo's
    unspecialised numbers), and the parameters ``held`` (``(position, parameter)`` pairs, :func:`hold_parameters`)
    are not passed: ``compiled`` (the :class:`~fxla.CompiledModule`) holds them.

    A call whose held positions hold other parameters (another instance of the module's class: dynamo gives it
    the same graph) gets a compiled module holding those, made by ``make(args)`` (which returns the module and
    what it holds, as :func:`hold_parameters`), up to :data:`MAX_HELD_SETS` sets; with more sets, or other tensors
    than parameters there, the call runs ``make(None)``'s module: the graph with every input passed, built once."""

    def __init__(self, compiled, count: int, numbers: Sequence[int] = (),
                 held: Sequence[Tuple[int, torch.nn.Parameter]] = (), make: Optional[Callable] = None,
                 label: str = "the graph"):
        self.compiled = compiled
        self.numbers = tuple(numbers)
        self.weights = tuple(w for _, w in held)
        self._positions = [p for p, _ in held]
        self._held = _picker(self._positions)
        self._rest = _picker([i for i in range(count) if i not in set(self._positions)])
        self._make, self._label = make, label
        self._sets: List[Tuple[tuple, Any]] = [(self.weights, compiled)]
        self._every = None

    def __call__(self, *args):
        if self.numbers:
            args = list(args)
            for i in self.numbers:
                args[i] = args[i].item()
        if not self.weights:
            return self.compiled(*args)
        given = self._held(args)
        if all(map(operator.is_, given, self.weights)):
            return self.compiled(*self._rest(args))
        return self._other(given, args)

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
        if self._every is None:
            _log("%s: called with other tensors than the parameters it holds, and no further set can be held: "
                 "compiling it again with every parameter passed as an input", self._label)
            self._every = self._make(None)[0]
        return self._every(*args)


def _log(message: str, *args) -> None:
    if DYNAMO.isEnabledFor(logging.INFO):
        DYNAMO.info(message, *args)
