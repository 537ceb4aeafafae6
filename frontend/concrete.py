"""The :class:`ConcreteShapeTracer`: a shape-specialising :class:`~fxla.frontend.tracer.Tracer`."""
from __future__ import annotations

import itertools
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

from . import meta as M
from .errors import TraceError
from .graph_module import rebuilt
from .node import Node, Target, map_aggregate, map_arg
from .proxy import Proxy
from .shape_prop import (MetaMemo, TensorMeta, _as_meta_device, _contains_tensor, at_traced_sizes,
                         call_module_on_meta, data_dependent_op, describe, meta_function, set_node_meta, to_meta)
from .source import user_frame_location
from .symbolic import is_symbolic, observe_node, plain
from .tracer import _UNSET, Tracer, _check_names, _Inputs
from .value_guards import DECOMPOSITIONS, NotGuardable, RealValues, ValueGuards

__all__ = ["ConcreteShapeTracer"]


class _DecidedSizes:
    """What a :class:`ConcreteShapeTracer` with symbolic sizes decides from a size the user's Python reads as a
    value (a truth value, a number, text): the traced sizes' answer, recorded as a guard of the node that asked."""

    symbols: Any
    _meta_values: Dict[Node, Any]

    def decided_size(self, proxy: Proxy, kind: Optional[str] = None) -> Any:
        """What the user's Python reads of a value whose meta value is a symbolic size, condition or shape: the
        traced sizes' answer, which the ``ShapeEnv`` records as a guard of ``proxy``'s node (an ``int`` of a symbol
        fixes it: the program is then not polymorphic in that dim).  ``kind`` (``"bool"`` / ``"int"`` /
        ``"float"``) converts a size or condition (``seq > 512``); without one -- text, ``f"got {x.shape}"`` -- a
        size keeps its own kind and a shape is decided as a ``torch.Size`` (text holds eager's numbers).  None
        for anything else."""
        value = self._meta_values.get(proxy.node)
        scalar = isinstance(value, (torch.SymInt, torch.SymBool, torch.SymFloat))
        if self.symbols is None or not (scalar or kind is None and isinstance(value, tuple) and is_symbolic(value)):
            return None
        with self.symbols.observing():
            observe_node(proxy.node)
            if not scalar:                          # (a shape: meta values hold it as a tuple)
                return torch.Size(int(n) for n in value)
            return _KINDS[kind or type(value)](value)


_KINDS = {"bool": bool, "int": int, "float": float, torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}


class ConcreteShapeTracer(_DecidedSizes, Tracer):
    """The shape-specialising tracer (like Hugging Face's old ``HFTracer``); ``Tracer(concrete_shapes=True)``
    and ``symbolic_trace(model, example_inputs=...)`` make one.

    :meth:`trace` needs ``example_inputs`` (a tuple of positional inputs, or a dict by parameter name): their
    shapes and dtypes seed a *meta value* per Proxy -- each recorded op is also run on ``meta`` tensors as it is
    recorded (:meth:`meta_value`).  So ``x.shape``, ``x.size(i)``, ``x.dim()``, ``len(x)``, ``x.dtype`` and
    ``x.device`` (the example inputs' device, :attr:`device`) are concrete Python values with no node, and
    Python control flow on them just runs; a call whose result is such a value (a size, a dtype) is folded to
    the value.  Tensor *values* stay symbolic: ``if x.sum() > 0`` still raises :class:`TraceError`.

    Parameters given neither an example input nor a concrete arg are fixed at their default (``*args`` /
    ``**kwargs`` as empty).  The graph is valid for the traced inputs only: their shapes, the fixed values and
    the device are recorded in ``graph.meta["specialization"]``.  Every node's meta value is recorded as its
    ``meta["tensor_meta"]`` (or ``meta["value"]``), as shape propagation would.

    With :attr:`symbols` (a :class:`~fxla.frontend.symbolic.SymbolicShapes`; ``fxla.compile(model,
    concrete_shapes=True, dynamic=...)``) the example inputs are its FakeTensors, whose marked sizes are symbols,
    and the meta values are computed on FakeTensors of its ``ShapeEnv``.  A size that is a symbol (``x.size(1)``,
    ``x.shape``, ``seq * 2``) is then a node of the graph with a ``SymInt`` meta value, not a number, so the graph
    holds for every size; Python that decides something from it (``if seq > 512``, ``int(seq)``) gets the traced
    size's answer and the ``ShapeEnv`` records it as a guard, attributed to the node that asked (its source
    line): the caller checks those guards (:meth:`~fxla.frontend.symbolic.SymbolicShapes.violation`) before
    running the graph on other sizes.  ``graph.meta["specialization"]`` has the traced sizes (the GraphModule called
    directly checks no guard, so it runs those alone) and, as ``"symbolic_inputs"``, ``None`` for symbolic dims.
    """

    concrete_shapes = True
    #: decide data-dependent values from the example inputs, which are the real call's, and guard them
    #: (:mod:`fxla.frontend.value_guards`; ``symbolic_trace(..., value_guards=True)``)
    value_guards = False
    #: the symbols of a trace whose example inputs have symbolic sizes (see the class docstring), or None
    symbols = None
    #: with :attr:`symbols`: the call's real inputs by parameter name (what value guards decide from), or None
    real_inputs = None

    def __init__(self, concrete_shapes: bool = True) -> None:
        super().__init__()
        self._guards: Optional[ValueGuards] = None
        self._data_dependent: set = set()
        self._meta_values: Dict[Node, Any] = {}
        self._meta_errors: Dict[Node, str] = {}
        self._meta_memo: Optional[MetaMemo] = None
        #: the device ``x.device`` answers: the example inputs' (else the root's parameters'), else the CPU
        self.device = torch.device("cpu")

    # ---- meta values ----------------------------------------------------------------------------------------------
    def meta_value(self, p: Proxy) -> Any:
        """The meta value of ``p`` (a meta tensor, or a structure/Python value); raises LookupError if it is
        unknown (the op failed on meta tensors)."""
        node = p.node
        if node in self._meta_values:
            return self._meta_values[node]
        raise LookupError(self._meta_errors.get(node, "no meta value recorded"))

    def meta_error(self, p: Proxy) -> Optional[str]:
        """Why ``p`` has no meta value (None if it has one)."""
        return self._meta_errors.get(p.node)

    def _set_meta(self, node: Node, value: Any) -> None:
        self._meta_values[node] = value
        set_node_meta(node, value)

    def _record_meta(self, node: Node) -> None:
        missing: List[Node] = []

        def lookup(n: Node) -> Any:
            if n not in self._meta_values:
                missing.append(n)
                return None
            return self._meta_values[n]
        args, kwargs = map_arg(node.args, lookup), map_arg(node.kwargs, lookup)
        if missing:
            why = self._meta_errors.get(missing[0])
            self._meta_errors[node] = f"its input %{missing[0].name} has no meta value" + (f" ({why})" if why else "")
            return
        args, kwargs = map_aggregate(args, _as_meta_device), map_aggregate(kwargs, _as_meta_device)
        self._paused = True
        try:
            if self.symbols is not None:
                with self.symbols.tracing():        # (FakeTensors of the symbols' ShapeEnv; guards are node's)
                    observe_node(node)
                    value = self._run_on_meta(node, args, kwargs)
                if free_unbacked_symbols(value):    # (a data-dependent size: FakeTensors give it a new symbol)
                    raise LookupError("a data-dependent size")
                self._set_meta(node, plain(value))  # (sizes the trace fixed: plain numbers, foldable)
                return
            if self._meta_memo is not None:
                value = self._meta_memo.run(node.op, node.target, args, kwargs, self.root.get_submodule,
                                            lambda: self._run_on_meta(node, args, kwargs))
            else:
                value = self._run_on_meta(node, args, kwargs)
        except Exception as e:  # data-dependent shapes (nonzero, x[mask], .item()), non-meta kernels, ...
            if self.symbols is not None:            # (found on meta tensors of the traced sizes)
                args, kwargs = at_traced_sizes((args, kwargs))
            op = data_dependent_op(lambda: self._run_on_meta(node, args, kwargs))
            if op is not None:
                self._data_dependent.add(node)
            self._meta_errors[node] = (
                f"%{node.name} ({op}) has an output shape or value that depends on the tensor's data, so a "
                f"fixed-shape program cannot compute it (fix that first: torch.where(mask, x, 0) instead of "
                f"x[mask], masked reductions, a fixed-size torch.topk instead of torch.nonzero, a 0-d tensor "
                f"instead of .item())" if op is not None else
                f"running %{node.name} on meta tensors failed: {type(e).__name__}: {e}")
            return
        finally:
            self._paused = False
        self._set_meta(node, value)

    def _run_on_meta(self, node: Node, args: Tuple, kwargs: Dict[str, Any]) -> Any:
        op, target = node.op, node.target
        if op == "get_attr":
            obj = self.root
            for atom in target.split("."):
                obj = getattr(obj, atom)
            return to_meta(obj)
        if op == "call_function":
            meta = meta_function(target) if self.symbols is not None else None   # (sizes kept symbolic)
            return to_meta((meta or target)(*args, **kwargs))
        if op == "call_method":
            self_obj, *rest = args
            if target in ("cpu", "cuda") and isinstance(self_obj, torch.Tensor):
                return self_obj
            meta = meta_function(getattr(torch.Tensor, target, None)) if self.symbols is not None else None
            if meta is not None:
                return to_meta(meta(*args, **kwargs))
            return to_meta(getattr(self_obj, target)(*rest, **kwargs))
        if op == "output":
            return args[0]
        if op == "call_module":
            return to_meta(call_module_on_meta(self.root.get_submodule(target), args, kwargs))
        raise LookupError(op)

    def _foldable(self, node: Node) -> bool:
        from .wrap import wrapper_for
        if node not in self._meta_values or node.is_impure():
            return False
        if node.op == "call_function" and wrapper_for(node.target) is not None:
            return False  # a user leaf stays in the graph
        v = self._meta_values[node]
        return type(v) in (bool, int, float, torch.Size, torch.dtype) and not is_symbolic(v)

    # ---- recording: every node gets its meta value ----------------------------------------------------------------
    def create_node(self, kind: str, target: Target, args: Tuple, kwargs: Dict[str, Any],
                    name: Optional[str] = None, type_expr: Optional[Any] = None) -> Node:
        """:meth:`Tracer.create_node`, then the node's meta value (placeholders get theirs from the example
        inputs, the output node in :meth:`_create_output`)."""
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        if kind not in ("placeholder", "output"):
            self._record_meta(node)
        return node

    def create_proxy(self, kind: str, target: Target, args: Tuple, kwargs: Dict[str, Any],
                     name: Optional[str] = None, type_expr: Optional[Any] = None) -> Any:
        """:meth:`Tracer.create_proxy`, except that a call whose meta value is a size, a dtype or a number is
        no node: its value is returned."""
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr)
        node = proxy.node
        if node in self._data_dependent and self._guards is not None:
            fixed = self._fixed_size(node)          # nonzero / masked_select / x[mask], with k from the data
            if fixed is not None:
                return fixed
        if kind in ("call_function", "call_method") and self._foldable(node):
            value = self._meta_values[node]
            self.graph.erase_node(node)  # a shape-derived Python value: no node, just the value
            return value
        return proxy

    # ---- value guards (fxla.frontend.value_guards) ----------------------------------------------------------------
    def guarded_value(self, proxy: Proxy, kind: str) -> Any:
        if proxy.tracer is not self:
            return None
        if self.symbols is not None:
            decided = self.decided_size(proxy, kind)
            if decided is not None:
                return decided
        if self._guards is None or kind not in ("bool", "int"):     # (value guards decide truth values and ints)
            return None
        try:
            return self._guards.decide(proxy.node, kind, user_frame_location(self.module_path))
        except NotGuardable:
            return None

    def _fixed_size(self, node: Node) -> Optional[Proxy]:
        """The fixed-size form of the data-dependent ``node`` (just recorded, unused), or None."""
        form = DECOMPOSITIONS.get(node.target)
        if form is None:
            return None
        args, kwargs = map_arg(node.args, self.proxy), map_arg(node.kwargs, self.proxy)
        try:
            result = form(self._guards, user_frame_location(self.module_path), *args, **kwargs)
        except NotGuardable as e:
            self._meta_errors[node] = f"{self._meta_errors.get(node)} (not decided from the call's data: {e})"
            return None
        if not node.users:
            self.graph.erase_node(node)
        return result

    # ---- the steps of trace() -------------------------------------------------------------------------------------
    def _start(self, root: Any) -> Any:
        self._meta_values, self._meta_errors = {}, {}
        self._data_dependent = set()
        # equal ops on equal meta arguments are computed once per trace (not when a subclass changes how)
        self._meta_memo = MetaMemo() if type(self)._run_on_meta is ConcreteShapeTracer._run_on_meta and \
            self.symbols is None else None
        started = super()._start(root)
        self._guards = ValueGuards(RealValues(self.root, self._pause)) if self.value_guards and \
            (self.symbols is None or self.real_inputs is not None) else None
        return started

    def _pause(self, paused: bool) -> None:
        self._paused = paused

    def _bind_examples(self, params, concrete_args, example_inputs, def_loc) -> Dict[str, Any]:
        if example_inputs is None:
            raise TraceError(
                "concrete_shapes tracing needs example inputs", where=def_loc,
                why="shapes are made concrete by running each op on meta tensors shaped like the inputs",
                fix="call tracer.trace(model, example_inputs=(x, ...)) or "
                    "symbolic_trace(model, example_inputs=(x, ...))")
        free = [p for p in params if p.name not in concrete_args]
        if isinstance(example_inputs, dict):
            examples = dict(example_inputs)
            _check_names(examples, free, "example_inputs", "unknown (or concrete)", "free parameters", def_loc)
        else:
            if not isinstance(example_inputs, (tuple, list)):
                example_inputs = (example_inputs,)
            positional = [p for p in free if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if len(example_inputs) > len(positional):
                raise TraceError(
                    f"{len(example_inputs)} example inputs for {len(positional)} positional parameter(s)",
                    where=def_loc,
                    why=f"the free positional parameters are {[p.name for p in positional]}",
                    fix="pass fewer example inputs, or a dict of them by parameter name")
            examples = {p.name: v for p, v in zip(positional, example_inputs)}
        devices: List[torch.device] = []
        map_aggregate(examples, lambda v: devices.append(v.device) if isinstance(v, torch.Tensor) else v)
        if not devices and isinstance(self.root, torch.nn.Module):
            devices = [t.device for t in itertools.chain(self.root.parameters(), self.root.buffers())][:1]
        self.device = devices[0] if devices else torch.device("cpu")
        return examples

    def _fixed_input(self, p, examples: Dict[str, Any], def_loc) -> Any:
        """A parameter with no example input is fixed at its default (``*args``/``**kwargs``: empty)."""
        if p.name in examples:
            return _UNSET
        if p.kind == p.VAR_POSITIONAL:
            return ()
        if p.kind == p.VAR_KEYWORD:
            return {}
        if p.default is p.empty:
            raise TraceError(
                f"concrete_shapes tracing needs an example input for parameter '{p.name}'", where=def_loc,
                why="each graph input's meta value is computed from its example input",
                fix=f"pass example_inputs={{'{p.name}': ...}} (or a value in concrete_args)")
        return p.default

    def _placeholder(self, p, examples: Dict[str, Any], def_loc) -> Node:
        node = super()._placeholder(p, examples, def_loc)
        if self.symbols is not None:
            with self.symbols.tracing():
                self._set_meta(node, to_meta(examples[p.name]))
        else:
            self._set_meta(node, to_meta(examples[p.name]))
        if self._guards is not None:
            self._guards.real.set_input(node, (examples if self.symbols is None else self.real_inputs)[p.name])
        return node

    def _create_output(self, result: Any, def_loc) -> Node:
        out = super()._create_output(result, def_loc)
        self._record_meta(out)
        return out

    def _finish(self, inputs: _Inputs) -> None:
        super()._finish(inputs)
        if self._guards is not None and self._guards.guards:
            self.graph.meta[M.VALUE_GUARDS] = list(self._guards.guards)
        described = {k: describe(v) if _contains_tensor(v) else v for k, v in inputs.examples.items()}
        self.graph.meta[M.SPECIALIZATION] = {"inputs": {k: _unsized(v, hint=True) for k, v in described.items()},
                                             "fixed": inputs.fixed, "device": self.device}
        if self.symbols is not None:      # (what the compiled module, which checks the trace's guards, accepts)
            self.graph.meta[M.SPECIALIZATION]["symbolic_inputs"] = {k: _unsized(v) for k, v in described.items()}


def _unsized(meta: Any, hint: bool = False) -> Any:
    """``meta`` (what :func:`describe` gives) with each symbolic size as None (any size), or as the traced size
    (``hint``: a GraphModule called directly does not check the trace's guards, so it takes the traced sizes)."""
    if isinstance(meta, TensorMeta):
        return TensorMeta(tuple((int(n.node.hint) if hint else None) if is_symbolic(n) else n for n in meta.shape),
                          meta.dtype)
    if isinstance(meta, (tuple, list)):
        return rebuilt(meta, [_unsized(m, hint) for m in meta])
    if isinstance(meta, dict):
        return {k: _unsized(v, hint) for k, v in meta.items()}
    return meta
