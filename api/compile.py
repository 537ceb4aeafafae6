"""``fxla.compile``: trace once, then lower and compile per input signature, run through PJRT."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

import torch
from torch.utils import _pytree as pytree

from fxla.frontend import GraphModule, Tracer
from fxla.lowering import FxlaProgram, lower_to_fxla, lower_to_stablehlo
from fxla.runtime import Executable, compile_stablehlo, from_device, resolve_device, to_device


@dataclass
class Stages:
    """The IR of every stage for one input signature (what ``fxla-dump`` prints)."""

    graph: str          # the captured graph (torch.fx-style listing)
    code: str           # Python regenerated from the graph
    fxla: str           # the fxla dialect module
    stablehlo: str      # verified StableHLO
    stablehlo_debug: str  # the same with source locations (what is compiled, so XLA's HLO keeps them)
    program: FxlaProgram


@dataclass
class _Entry:
    program: FxlaProgram
    executable: Executable


def _signature(args) -> Tuple:
    leaves, spec = pytree.tree_flatten(args)
    key = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            key.append(("tensor", tuple(leaf.shape), leaf.dtype))
        else:
            key.append(("static", type(leaf), leaf))
    return (str(spec), tuple(key))


class CompiledModule:
    """A model or function compiled by fxla; call it like the original (positional or keyword arguments).

    The program is traced once, at construction (trace errors surface here).  Each new input signature
    (shapes, dtypes, non-tensor arguments) is lowered, verified and compiled once and cached; parameters and
    buffers are uploaded to the device at their first use and stay there, so later in-place changes to the
    model's weights are not seen — compile again after changing them.  Outputs are torch tensors.
    """

    def __init__(self, fn, *, device=None, concrete_args: Optional[Dict[str, Any]] = None,
                 tracer: Optional[Tracer] = None):
        self.original = fn
        self.device = resolve_device(device)
        tracer = tracer or Tracer()
        graph = tracer.trace(fn, concrete_args=concrete_args)
        root = tracer.root
        name = type(fn).__name__ if isinstance(fn, torch.nn.Module) else getattr(fn, "__name__", "fn")
        self.graph_module = GraphModule(root, graph, class_name=name)
        self._cache: Dict[Tuple, _Entry] = {}
        self._params: Dict[str, Any] = {}
        functools.update_wrapper(self, fn, updated=())
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)

    # -- compilation ---------------------------------------------------------------------------------------------
    def lower(self, *example_inputs) -> Stages:
        """Trace/lower/verify for ``example_inputs`` and return the IR of every stage (nothing is executed)."""
        program = lower_to_fxla(self.graph_module, example_inputs)
        fxla_text = program.text()
        stablehlo = lower_to_stablehlo(program.module)
        return Stages(str(self.graph_module.graph), self.graph_module.code, fxla_text,
                      stablehlo.operation.get_asm(), stablehlo.operation.get_asm(enable_debug_info=True), program)

    def _compile(self, args, key) -> _Entry:
        stages = self.lower(*args)
        entry = _Entry(stages.program, compile_stablehlo(stages.stablehlo_debug, self.device))
        for name in stages.program.param_names:
            if name not in self._params:
                self._params[name] = to_device(stages.program.params[name], self.device)
        self._cache[key] = entry
        return entry

    def executable_for(self, *args) -> Executable:
        """The compiled executable for ``args``' signature (compiling it if needed)."""
        key = _signature(args)
        return (self._cache.get(key) or self._compile(args, key)).executable

    @property
    def cache_size(self) -> int:
        """How many input signatures have been compiled."""
        return len(self._cache)

    # -- execution -----------------------------------------------------------------------------------------------
    def _bind(self, args: Tuple, kwargs: Dict[str, Any]) -> Tuple:
        """Arguments in placeholder order; keywords and placeholder defaults fill the rest."""
        placeholders = [n for n in self.graph_module.graph.nodes if n.op == "placeholder"]
        if len(args) > len(placeholders):
            raise TypeError(f"{self.__name__}() takes {len(placeholders)} arguments but {len(args)} were given")
        bound = list(args)
        kwargs = dict(kwargs)
        for node in placeholders[len(args):]:
            if node.target in kwargs:
                bound.append(kwargs.pop(node.target))
            elif node.args:
                bound.append(node.args[0])
            else:
                raise TypeError(f"{self.__name__}() missing required argument '{node.target}'")
        if kwargs:
            raise TypeError(f"{self.__name__}() got unexpected keyword argument(s) {sorted(kwargs)}")
        return tuple(bound)

    def __call__(self, *args, **kwargs):
        args = self._bind(args, kwargs)
        key = _signature(args)
        entry = self._cache.get(key) or self._compile(args, key)
        leaves = pytree.tree_leaves(args)
        buffers = [to_device(t, self.device) for t in leaves if isinstance(t, torch.Tensor)]
        buffers += [self._params[name] for name in entry.program.param_names]
        outputs = iter(entry.executable(buffers))
        program = entry.program
        values = [from_device(next(outputs)) if static is None else static for static in program.output_static]
        return pytree.tree_unflatten(values, program.output_spec)

    def __repr__(self) -> str:
        return f"fxla.compile({type(self.original).__name__}, device={self.device})"


def compile(fn=None, *, device=None, concrete_args=None, tracer=None):  # noqa: A001  (mirrors torch.compile)
    """Compile an ``nn.Module`` or function: ``fast = fxla.compile(model)`` or ``@fxla.compile``.

    ``device``: ``"cpu"``, ``"gpu"``, ``"tpu"``, ``"cpu:1"``, a ``jax.Device`` or ``None`` (JAX's default).
    ``concrete_args``: arguments to bake in while tracing (as in torch.fx).  ``tracer``: a custom
    :class:`fxla.frontend.Tracer` (e.g. with its own ``is_leaf_module``).
    """
    if fn is None:
        return functools.partial(compile, device=device, concrete_args=concrete_args, tracer=tracer)
    return CompiledModule(fn, device=device, concrete_args=concrete_args, tracer=tracer)
