"""``fxla.compile``: trace once, then lower and compile per input signature, run through PJRT."""
from __future__ import annotations

import collections
import functools
import operator
import re
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import jax
import numpy as np
import torch
from torch.utils import _pytree as pytree

from fxla.errors import FxlaError
from fxla.frontend import GraphModule, Tracer
from fxla.frontend.graph_module import check_specialization, describe_input
from fxla.frontend.passes.aliasing import layout_sensitive_inputs
from fxla.frontend.shape_prop import TensorMeta, propagate_shapes
from fxla.lowering import FxlaProgram, UnsupportedOpError, lower_to_fxla, lower_to_stablehlo, verify_stablehlo
from fxla.lowering.passes import device_layouts
from fxla.runtime import Executable, compile_stablehlo, cpp_dispatch, from_device, resolve_device, to_device
from fxla.runtime._fastcall import Dispatch
from fxla.runtime.buffers import example_tensor, is_array, torch_dtype
from fxla.runtime.executable import numpy_dtype
from fxla.runtime.jax_interop import InteropError
from fxla.runtime.sharding import Partitioning, ShardingError, as_mesh, normalize_spec, signature_of

from .autocast import check_not_autocast
from .dispatch import call_plan, fast_key
from .gradients import GradientGuard, guard_for
from .per_shape import PerShapeTraces
from .weights import WeightWatch
from .write_back import InputMutationError, check_writable, write_back  # noqa: F401  (fxla.load uses both)


class OptionError(FxlaError):
    """An ``fxla.compile`` argument or option with a value fxla does not support (e.g. something that is not an
    ``nn.Module`` or function to compile)."""


class SignatureError(FxlaError):
    """The inputs of a call cannot be compiled (e.g. a rank or dtype the model cannot take)."""


class ArgumentError(FxlaError, TypeError):
    """A call of a compiled module with arguments its forward does not take (too many, a missing one, an unknown
    keyword); a ``TypeError`` too, as Python's own error for such a call is."""


#: how many input signatures a module keeps compiled by default (``fxla.compile(max_signatures=)``)
MAX_SIGNATURES = 64


@dataclass
class Stages:
    """The IR of every stage for one input signature (what ``fxla-dump`` prints)."""

    graph: str          # the captured graph (torch.fx-style listing)
    code: str           # Python regenerated from the graph
    fxla: str           # the fxla dialect module
    stablehlo: str      # verified StableHLO
    stablehlo_debug: str  # the same with source locations (what is compiled, so XLA's HLO keeps them)
    program: FxlaProgram


#: Tracing, lowering and compiling take this lock (one at a time per process: they write shared graph metadata,
#: and tracing patches torch's module classes); calls of compiled signatures run concurrently without it.
COMPILING = threading.RLock()


@dataclass
class _Entry:
    program: FxlaProgram
    executable: Executable
    stablehlo: str = ""                       # without source locations (for export / JAX interop)
    input_shardings: Optional[List[Any]] = None
    program_args: Tuple = ()                  # the call that compiled it (for error messages)
    params: List[Any] = None                  # the device buffers of the parameters, in the layout compiled for
    param_keys: List[Tuple[str, Tuple[int, ...]]] = None    # their keys in CompiledModule._params
    param_placements: List[Any] = None        # and where each lives (a device or a sharding)
    guard: Optional[GradientGuard] = None     # its torch outputs' autograd behaviour (see fxla.gradients)
    layout_sensitive: frozenset = frozenset()  # placeholders the program views (see CompiledModule._check_layouts)
    layouts: Dict[Tuple, str] = field(default_factory=dict)   # strides -> "" (runs) or eager's error


def _target_layouts(stages: Stages, device) -> Tuple[str, str, Dict[str, Tuple[int, ...]]]:
    """Run the layout passes for the device on the verified StableHLO of a single-device program
    (:func:`fxla.lowering.passes.device_layouts`: ``fxla-pool-layout`` on a CPU device, ``fxla-param-layout``).
    Returns the module text without and with locations, and ``{parameter:
    permutation}`` for the parameters stored permuted."""
    module = verify_stablehlo(stages.stablehlo_debug)
    changed, layouts = device_layouts(module, stages.program.param_names, device.platform)
    if not changed:
        return stages.stablehlo, stages.stablehlo_debug, {}
    return module.operation.get_asm(), module.operation.get_asm(enable_debug_info=True), layouts


def _leaf_key(leaf):
    if isinstance(leaf, torch.Tensor):
        return ("tensor", tuple(leaf.shape), leaf.dtype)
    if is_array(leaf):                      # a jax.Array: the same key as the equivalent torch tensor
        return ("tensor", tuple(leaf.shape), torch_dtype(leaf))
    return ("static", type(leaf), leaf)


def _leaves(args) -> Sequence[Any]:
    """The pytree leaves of the call's arguments (the common all-tensor call skips pytree work)."""
    if all(is_array(a) for a in args):
        return args
    return pytree.tree_leaves(args)


def _signature(args) -> Tuple:
    if all(is_array(a) for a in args):           # fast path: a flat tuple of tensors / jax arrays
        return ("flat", tuple(_leaf_key(a) for a in args))
    leaves, spec = pytree.tree_flatten(args)
    return (str(spec), tuple(_leaf_key(leaf) for leaf in leaves))


def _describe(value) -> str:
    if is_array(value):
        dtype = value.dtype if isinstance(value, torch.Tensor) else torch_dtype(value)
        return f"{str(dtype).rpartition('.')[2]}{list(value.shape)}"
    if isinstance(value, (tuple, list, dict)):
        return type(value).__name__ + "(" + ", ".join(
            _describe(v) for v in (value.values() if isinstance(value, dict) else value)) + ")"
    return repr(value)


def _meta(value):
    """What a specialisation records of a call argument (jax arrays described like torch tensors)."""
    if is_array(value) and not isinstance(value, torch.Tensor):
        return TensorMeta(tuple(value.shape), torch_dtype(value))
    if isinstance(value, (tuple, list)):
        return type(value)(_meta(v) for v in value)
    if isinstance(value, dict):
        return {k: _meta(v) for k, v in value.items()}
    return describe_input(value)


_INPUT_KEY = re.compile(r"^(input|output):(\d+)$")


def _carry_attribute_writes(source, graph) -> None:
    """Re-tracing a GraphModule runs its generated code, which does not assign the attributes the original
    forward did (``self.last = y``: node meta, see fxla.frontend.Tracer._assign); the re-traced nodes keep the
    original names, so the records move over by name."""
    if "attribute_constants" in source.meta:
        graph.meta["attribute_constants"] = list(source.meta["attribute_constants"])
    by_name = {n.name: n for n in graph.nodes}
    for node in source.nodes:
        writes = node.meta.get("attribute_writes")
        if writes:
            target = by_name.get(node.name)
            if target is None:
                raise FxlaError(f"internal error: re-tracing lost node %{node.name}, which holds the value of "
                                f"attribute {writes[0].name}\nfix: report this as an fxla bug")
            target.meta["attribute_writes"] = list(writes)


def _not_callable(fn) -> str:
    what = f"a {type(fn).__name__}" + (f" of {len(fn)} items" if isinstance(fn, (tuple, list)) else "")
    fix = "pass the model or function itself: fxla.compile(model), then call the result on the inputs"
    if isinstance(fn, (tuple, list)) and fn and callable(fn[0]):
        fix = (f"its first item is a {type(fn[0]).__name__}: unpack first (model, inputs = ...; "
               f"fast = fxla.compile(model); fast(*inputs))")
    return (f"fxla.compile expects an nn.Module or a function to compile, got {what}\n"
            f"why: fxla traces what it is given by calling it with proxies, so it must be callable\nfix: {fix}")


def _live(module_ref) -> "CompiledModule":
    module = module_ref()
    if module is None:
        raise FxlaError("this call belongs to a CompiledModule that has been deleted (its __call__ was kept)\n"
                        "fix: keep the CompiledModule itself and call it")
    return module


def _reupload(module_ref, names) -> None:
    _live(module_ref)._reupload(names)


def _plain_call(module_ref, *args, **kwargs):
    return _live(module_ref)._plan_call(*args, **kwargs)


def _cpp_miss(module_ref, *args, **kwargs):
    """What the C++ dispatcher of an ``output="jax"`` module runs for a call it has no fast path for: the Python
    call, and — when the call went through a plan with jax arrays in and out — the fast path for its signature
    (:func:`fxla.runtime.cpp_dispatch.fast_path`; its first call here compiles and records the plan)."""
    module = _live(module_ref)
    result = module._plan_call(*args, **kwargs)
    if kwargs:
        return result, None
    plan = module._plans.get(fast_key(args))
    if plan is None or plan.direct is None:    # torch tensors in, a mutating program, non-array arguments…
        return result, None
    return result, cpp_dispatch.fast_path(plan.executable, plan.direct[1], args, pytree.tree_leaves(result), result)


class CompiledModule:
    """A model or function compiled by fxla; call it like the original (positional or keyword arguments).

    The program is traced once, at construction (trace errors surface here), so what forward reads of the
    module then — its mode (``model.eval()`` / ``model.train()``), plain attributes — is fixed in it.  Each
    new input signature (shapes, dtypes, non-tensor arguments) is lowered, verified and compiled once and
    cached (at most ``max_signatures``, least recently used dropped first); parameters and buffers are uploaded
    to the device at their first use and stay there; a weight changed in place afterwards (``w.mul_(2)``,
    ``load_state_dict``, an optimizer step, ``w.data = t``) is uploaded again before the next call (fxla.weights;
    not a change through ``w.data`` nor a replaced parameter object: compile again after those, or after changing
    the mode).  Changes the program itself makes (``self.steps += 1``) are written back to the module and to the
    resident buffers, one call at a time.  Inputs may be torch tensors or ``jax.Array``\\ s; outputs are torch
    tensors (``output="jax"``: ``jax.Array``\\ s, left on the device; a signature of ``jax.Array``\\ s then runs
    through JAX's C++ dispatch after its first call, as a ``jax.jit`` call does — see docs/runtime.md).
    """

    def __init__(self, fn, *, device=None, concrete_args: Optional[Dict[str, Any]] = None,
                 tracer: Optional[Tracer] = None, output: str = "torch", dynamic: bool = False,
                 cache_dir=None, mesh=None, shard: Optional[Dict[str, Any]] = None, concrete_shapes: bool = False,
                 max_signatures: int = MAX_SIGNATURES):
        if not callable(fn):
            raise OptionError(_not_callable(fn))
        if output not in ("torch", "jax"):
            raise OptionError(f"output={output!r} is not supported\nfix: pass output='torch' (default) or "
                              f"output='jax'")
        if dynamic is not False:
            raise OptionError(f"dynamic={dynamic!r} is not supported: fxla specialises every program to the "
                              f"shapes of its inputs and compiles each new signature once\n"
                              f"fix: leave dynamic=False (the default); pad inputs to a few fixed sizes to "
                              f"bound the number of compilations")
        if not isinstance(max_signatures, int) or isinstance(max_signatures, bool) or max_signatures < 1:
            raise OptionError(f"max_signatures={max_signatures!r}: it must be a positive int\nfix: pass how many "
                              f"input signatures to keep compiled (default {MAX_SIGNATURES})")
        if shard and mesh is None:
            raise ShardingError("shard= was given without mesh=\nfix: pass mesh=fxla.runtime.Mesh({'x': 4}) "
                                "(or a jax.sharding.Mesh) as well")
        if mesh is not None and device is not None:
            raise ShardingError("pass either device= or mesh=, not both\nfix: a sharded program runs on every "
                                "device of its mesh; drop device=")
        self.original = fn
        self.output = output
        self.cache_dir = cache_dir
        self.mesh = as_mesh(mesh) if mesh is not None else None
        self.device = self.mesh.devices.flat[0] if self.mesh is not None else resolve_device(device)
        self.shard: Dict[str, Any] = dict(shard or {})
        self._cache: Dict[Tuple, _Entry] = collections.OrderedDict()   # signature -> entry, least recent first
        self.max_signatures = max_signatures
        self._plans: Dict[Tuple, Any] = {}             # fast_key -> call plan of a compiled signature
        self._params: Dict[Tuple[str, Tuple[int, ...]], Any] = {}   # (name, stored permutation) -> device buffer
        self._placeholder_nodes = None
        self._family: List["CompiledModule"] = [self]   # the modules sharing _params (per-shape traces)
        # what _params were uploaded from (shared like _params); a call runs it first (Dispatch(..., watch=))
        self._weights = WeightWatch(functools.partial(_reupload, weakref.ref(self)))
        self._state_lock = threading.RLock()           # held by calls that write module state (shared too)
        self._attribute_root = fn        # the module whose attributes forward assigns (see _set_attributes)
        functools.update_wrapper(self, fn, updated=())
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self._options = dict(device=device, output=output, cache_dir=cache_dir, mesh=mesh, shard=shard,
                             max_signatures=max_signatures)
        self._per_shape: Optional[PerShapeTraces] = None
        self._cpp_call = None                          # JAX's C++ dispatch object, when calls use one
        if output == "jax" and self.mesh is None and not concrete_shapes:
            me = weakref.ref(self)              # (the dispatcher must not keep the module alive)
            self._cpp_call = cpp_dispatch.dispatcher(self.__name__, functools.partial(_cpp_miss, me),
                                                     functools.partial(_plain_call, me))
        # the call through the compiled signatures' plans (in C; see __call__), else _general_call
        watch = self._weights if isinstance(fn, torch.nn.Module) else None    # (a function has no weights)
        self._plan_call = Dispatch(self._plans, self._general_call, watch=watch)
        # the plans of signatures JAX's C++ dispatch cannot run (torch tensors in): fxla's C dispatch in front of it
        self._front_plans: Dict[Tuple, Any] = {}
        self._dispatch = (Dispatch(self._front_plans, self._cpp_call, bypass=cpp_dispatch.ARRAY_TYPE, watch=watch)
                          if self._cpp_call is not None else self._plan_call)   # what a call runs (see __call__)
        if concrete_shapes:
            if tracer is not None:
                raise OptionError("concrete_shapes=True traces with fxla's own concrete-shape Tracer; a custom "
                                  "tracer= cannot be combined with it\nfix: drop one of the two options")
            self._per_shape = PerShapeTraces(self, fn, concrete_args)
            self.graph_module = None          # set by each new input signature's trace
            return
        tracer = tracer or Tracer()
        with COMPILING:
            graph = tracer.trace(fn, concrete_args=concrete_args)
        if isinstance(fn, GraphModule) and fn.specialization:     # re-traced: keep what it is valid for
            graph.meta["specialization"] = fn.specialization
        if isinstance(fn, GraphModule):
            _carry_attribute_writes(fn.graph, graph)
        name = type(fn).__name__ if isinstance(fn, torch.nn.Module) else getattr(fn, "__name__", "fn")
        self.graph_module = GraphModule(tracer.root, graph, class_name=name)
        self._check_shard_names()

    # -- compilation ---------------------------------------------------------------------------------------------
    def _placeholders(self):
        # computed once: the call path must not walk the whole graph on every call
        if self._placeholder_nodes is None:
            self._placeholder_nodes = [n for n in self.graph_module.graph.nodes if n.op == "placeholder"]
        return self._placeholder_nodes

    def _state_names(self):
        gm = self.graph_module
        return [n for n, _ in gm.named_parameters()] + [n for n, _ in gm.named_buffers()]

    def _check_shard_names(self) -> None:
        known = set(self._state_names()) | {n.target for n in self._placeholders()}
        bad = [k for k in self.shard if not (isinstance(k, str) and (k in known or _INPUT_KEY.match(k)))]
        if bad:
            raise ShardingError(f"shard= names {bad!r}, which this model does not have\n"
                                f"fix: use 'input:<i>' / 'output:<i>' (tensor inputs/outputs in order), an "
                                f"argument name ({[n.target for n in self._placeholders()]}) or a parameter/buffer "
                                f"name ({sorted(self._state_names())})")

    def lower(self, *example_inputs) -> Stages:
        """Trace/lower/verify for ``example_inputs`` and return the IR of every stage (nothing is executed)."""
        if self._per_shape is not None:
            module, values = self._per_shape.module_for(example_inputs, {})
            return module.lower(*values)
        example_inputs = pytree.tree_map(lambda v: example_tensor(v) if is_array(v) else v, example_inputs)
        with COMPILING:
            program = lower_to_fxla(self.graph_module, example_inputs)
            fxla_text = program.text()
            stablehlo = lower_to_stablehlo(program.module)
        return Stages(str(self.graph_module.graph), self.graph_module.code, fxla_text,
                      stablehlo.operation.get_asm(), stablehlo.operation.get_asm(enable_debug_info=True), program)

    def _describe_call(self, args, shown: int = 8) -> str:
        """``x=float32[2, 8], ...`` for an error message: the first ``shown`` inputs, then how many more (a
        TorchDynamo graph passes every parameter as an input)."""
        parts = [f"{node.target}={_describe(value)}" for node, value in zip(self._placeholders(), args)]
        if len(parts) > shown:
            parts = parts[:shown - 1] + [f"... {len(parts) - shown + 1} more"]
        return ", ".join(parts)

    def _lower_for_call(self, args) -> Stages:
        try:
            return self.lower(*args)
        except UnsupportedOpError:
            raise                                   # about the program, not about these inputs
        except FxlaError as err:
            seen = "; ".join(f"({self._describe_call(e.program_args)})" for e in self._cache.values()) or "none"
            note = f"while compiling {self.__name__} for inputs ({self._describe_call(args)}); compiled so far: {seen}"
            if type(err).__str__ is BaseException.__str__ and len(err.args) == 1 and isinstance(err.args[0], str):
                text = err.args[0]
                cut = text.rfind("\nfix:")
                err.args = (f"{text[:cut]}\n{note}{text[cut:]}" if cut >= 0 else f"{text}\n{note}",)
            else:
                err.add_note(note)
            raise
        except (RuntimeError, TypeError, ValueError, IndexError) as err:
            raise SignatureError(f"{self.__name__}: cannot compile for inputs ({self._describe_call(args)}): "
                                 f"{type(err).__name__}: {err}\n"
                                 f"why: running the captured graph on inputs of these shapes/dtypes failed\n"
                                 f"fix: pass inputs of a rank/dtype the model accepts") from err

    def _partitioning(self, program: FxlaProgram, args) -> Optional[Partitioning]:
        if self.mesh is None:
            return None
        tensors = [v for v in pytree.tree_leaves(args) if is_array(v)]
        by_index: Dict[int, str] = {}            # tensor-input index -> argument name (arguments that are one tensor)
        seen = 0
        for node, value in zip(self._placeholders(), args):
            if is_array(value):
                by_index[seen] = node.target
            seen += sum(1 for v in pytree.tree_leaves(value) if is_array(v))
        specs = []
        for i, t in enumerate(tensors):
            names = [k for k in (f"input:{i}", by_index.get(i)) if k in self.shard]
            if len(names) > 1:
                raise ShardingError(f"shard= gives tensor input {i} twice, as {names[0]!r} and {names[1]!r}\n"
                                    f"fix: keep one of them")
            key = names[0] if names else f"input:{i}"
            specs.append(normalize_spec(self.shard.get(key), len(t.shape), tuple(t.shape), self.mesh, key))
        for name in program.param_names:
            p = program.params[name]
            specs.append(normalize_spec(self.shard.get(name), p.dim(), tuple(p.shape), self.mesh, name))
        out_leaves = [v for v in program.output_static if v is None]
        for key in self.shard:
            m = _INPUT_KEY.match(key)
            if m and int(m.group(2)) >= (len(tensors) if m.group(1) == "input" else len(out_leaves)):
                raise ShardingError(f"shard= names '{key}', but the call has {len(tensors)} tensor inputs and "
                                    f"{len(out_leaves)} tensor outputs\nfix: count tensor inputs/outputs from 0")
        return Partitioning(self.mesh, specs, [])      # out_specs: filled in once the result types are known

    def _check_specialization(self, args) -> None:
        """A shape-specialised GraphModule (a concrete_shapes trace) only runs on the inputs it was traced for."""
        spec = self.graph_module.specialization
        if spec:
            check_specialization(self.__name__, spec,
                                 {node.target: _meta(value) for node, value in zip(self._placeholders(), args)})

    def _compile(self, args, key) -> _Entry:
        self._check_specialization(args)
        stages = self._lower_for_call(args)
        program = stages.program
        part = self._partitioning(program, args)
        if part is not None:
            outs = signature_of(stages.stablehlo)[1]
            part.out_specs = [normalize_spec(self.shard.get(f"output:{i}"), len(shape), shape, self.mesh,
                                             f"output:{i}") for i, (shape, _) in enumerate(outs)]
        text, debug_text, layouts = stages.stablehlo, stages.stablehlo_debug, {}
        if part is None:
            text, debug_text, layouts = _target_layouts(stages, self.device)
        executable = compile_stablehlo(debug_text, self.device, partitioning=part, cache_dir=self.cache_dir,
                                       cache_text=text, n_params=len(program.param_names))
        n_inputs = len(executable.in_shardings) - len(program.param_names) if part is not None else 0
        keys = [(name, layouts.get(name, ())) for name in program.param_names]
        placements = [executable.in_shardings[n_inputs + i] if part is not None else self.device
                      for i in range(len(keys))]
        entry = _Entry(program, executable, text, executable.in_shardings[:n_inputs] if part is not None else None,
                       args, self._resident(program, keys, placements), keys, placements,
                       guard_for(self.__name__, program.params, self.output),
                       frozenset(n.target for n in layout_sensitive_inputs(self.graph_module)))
        self._cache[key] = entry
        while len(self._cache) > self.max_signatures:     # the least recently used signature goes
            self._cache.popitem(last=False)
            self._drop_plans()
        return entry

    def _resident(self, program: FxlaProgram, keys, placements) -> List[Any]:
        """The device buffers of the parameters ``keys`` ((name, stored permutation)), uploading those not yet
        resident (shared by every signature, and by the per-shape modules of a concrete_shapes module)."""
        for (name, perm), placement in zip(keys, placements):
            if (name, perm) not in self._params:
                value = program.params[name]
                self._params[name, perm] = to_device(value.permute(perm).contiguous() if perm else value, placement)
                self._weights.record(name, value)
        return [self._params[k] for k in keys]

    def _drop_plans(self) -> None:
        """Forget every call plan and C++ fast path of the family (they hold executables and device buffers);
        the next call of each signature takes the general path and makes them again."""
        for module in self._family:
            module._plans.clear()
            module._front_plans.clear()
            if module._cpp_call is not None:
                cpp_dispatch.clear(module._cpp_call)

    def _reupload(self, names: Sequence[str]) -> None:
        """The weights ``names`` changed in the model (fxla.weights): upload them again and point every compiled
        signature of the family at the new buffers."""
        with self._state_lock:
            self._drop_params(names)
            self._refresh_entries()

    def _drop_params(self, names: Sequence[str]) -> None:
        """Forget the device buffers of the weights ``names`` (every stored layout) and what they came from."""
        for key in [k for k in self._params if k[0] in names]:
            del self._params[key]
        self._weights.forget(names)

    def _refresh_entries(self) -> None:
        self._drop_plans()               # plans hold the old buffers; the next general call rebuilds them
        for module in self._family:
            for entry in module._cache.values():
                entry.params = module._resident(entry.program, entry.param_keys, entry.param_placements)

    def clear_cache(self) -> None:
        """Drop every compiled signature, call plan and resident weight of this module (memory back; the next
        call of each signature compiles it again, from the on-disk cache when there is one)."""
        with COMPILING, self._state_lock:
            for module in self._family:
                module._cache.clear()
            if self._per_shape is not None:
                self._per_shape.compiled.clear()
            self._drop_plans()
            self._params.clear()
            self._weights.clear()

    def _store_state(self, program: FxlaProgram, values) -> None:
        """The program changed parameters/buffers in place (``self.steps += 1``): copy their new values into the
        module's tensors, make the results the resident buffers (single device; a mesh program re-uploads them),
        and point every compiled signature of this module (and its per-shape siblings) at them."""
        with torch.no_grad():
            for name, value in zip(program.mutated_params, values):
                program.params[name].copy_(from_device(value))
                self._drop_params([name])
                if self.mesh is None:
                    self._params[name, ()] = value
                    self._weights.record(name, program.params[name])   # (as of after the copy)
        self._refresh_entries()

    def _set_attributes(self, writes, values) -> None:
        """Set the module attributes forward assigns (``self.last = y``) to this call's values, as torch tensors."""
        results = iter(values)
        for w in writes:
            leaves = [from_device(next(results)) if leaf is None else leaf for leaf in w.leaves]
            owner, _, name = w.name.rpartition(".")
            setattr(self._attribute_root.get_submodule(owner), name, pytree.tree_unflatten(leaves, w.spec))

    def _entry(self, args) -> _Entry:
        key = _signature(args)
        entry = self._cache.get(key)
        if entry is None:
            with COMPILING:                       # another thread may have compiled it meanwhile
                entry = self._cache.get(key) or self._compile(args, key)
        else:
            try:
                self._cache.move_to_end(key)      # (most recently used last: see max_signatures)
            except KeyError:                      # dropped by another thread meanwhile
                pass
        return entry

    def executable_for(self, *args) -> Executable:
        """The compiled executable for ``args``' signature (compiling it if needed)."""
        if self._per_shape is not None:
            module, values = self._per_shape.module_for(args, {})
            return module.executable_for(*values)
        return self._entry(args).executable

    @property
    def cache_size(self) -> int:
        """How many input signatures have been compiled."""
        if self._per_shape is not None:
            return sum(m.cache_size for m in self._per_shape.compiled.values())
        return len(self._cache)

    # -- execution -----------------------------------------------------------------------------------------------
    def _bind(self, args: Tuple, kwargs: Dict[str, Any]) -> Tuple:
        """Arguments in placeholder order; keywords and placeholder defaults fill the rest."""
        placeholders = self._placeholders()
        if not kwargs and len(args) == len(placeholders):
            return args
        if len(args) > len(placeholders):
            raise ArgumentError(f"{self.__name__}() takes {len(placeholders)} arguments but {len(args)} were given"
                                f"\nfix: call it with the arguments of the model's forward "
                                f"({', '.join(n.target for n in placeholders)})")
        bound = list(args)
        kwargs = dict(kwargs)
        for node in placeholders[len(args):]:
            if node.target in kwargs:
                bound.append(kwargs.pop(node.target))
            elif node.args:
                bound.append(node.args[0])
            else:
                raise ArgumentError(f"{self.__name__}() missing required argument '{node.target}'\nfix: pass it "
                                    f"(the model's forward takes {', '.join(n.target for n in placeholders)})")
        if kwargs:
            raise ArgumentError(f"{self.__name__}() got unexpected keyword argument(s) {sorted(kwargs)}\nfix: use "
                                f"the names of the model's forward ({', '.join(n.target for n in placeholders)})")
        return tuple(bound)

    def _device_args(self, entry: _Entry, leaves) -> List[Any]:
        tensors = [t for t in leaves if is_array(t)]
        if entry.input_shardings is not None:
            buffers = [to_device(t, s) for t, s in zip(tensors, entry.input_shardings)]
        else:
            buffers = [to_device(t, self.device) for t in tensors]
        return buffers + entry.params

    # A call is ``self._dispatch(*args, **kwargs)``, looked up in C (a property over ``operator.attrgetter``: no
    # Python frame).  For ``output="jax"`` on one device that is a C dispatch over the plans of torch-tensor
    # signatures (``_front_plans``) in front of JAX's C++ dispatch object, which takes every other call and runs
    # each jax-array signature's executable without entering Python once it has been called (see
    # fxla.runtime.cpp_dispatch and _cpp_miss); otherwise ``_plan_call``, fxla's own C dispatch
    # (fxla.runtime._fastcall.Dispatch): a signature with a call plan runs its plan's shortcut (torch tensor in
    # and out, or jax arrays) or the plan itself from C; any other call is ``_general_call``.
    __call__ = property(operator.attrgetter("_dispatch"),
                        doc="Call the compiled model like the original (see the class docstring).")

    def _general_call(self, *args, **kwargs):
        """A call without a compiled plan for its signature (the first of each signature, keyword arguments,
        non-tensor arguments, per-shape traces); ``_plan_call`` sends such calls here."""
        if self._per_shape is not None:
            self._reject_unusable(pytree.tree_leaves((args, kwargs)))
            module, values = self._per_shape.module_for(args, kwargs)
            return module(*values)
        return self._call(args, kwargs)

    def _reject_unusable(self, leaves) -> None:
        """Raise a clear error for leaves a compiled call cannot take: JAX tracers, numpy arrays, unhashable
        non-tensor values (a non-tensor leaf is part of the signature, so it must be hashable)."""
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, jax.core.Tracer):        # (a jax.Array too, so checked first)
                raise InteropError(f"{self.__name__} was called with JAX tracers (inside jax.jit, jax.vmap, jax.grad "
                                   f"or another JAX transformation)\nwhy: a CompiledModule runs its own compiled "
                                   f"program on concrete arrays\nfix: call fast.as_jax_function(*example_inputs) "
                                   f"inside the transformation instead (it embeds the program in JAX's)")
            if isinstance(leaf, torch.Tensor) and (leaf.is_meta or leaf.layout != torch.strided):
                kind = "meta" if leaf.is_meta else f"{leaf.layout} (sparse)"
                raise SignatureError(
                    f"{self.__name__} was called with a {kind} tensor (input leaf {i}: "
                    f"{str(leaf.dtype).rpartition('.')[2]}{list(leaf.shape)})\n"
                    f"why: a compiled program computes on the values of dense (strided) tensors"
                    f"{'; a meta tensor has none' if leaf.is_meta else ''}\n"
                    f"fix: pass {'a real tensor (e.g. torch.randn(shape))' if leaf.is_meta else 'x.to_dense()'}")
            if is_array(leaf):
                continue
            if isinstance(leaf, np.ndarray):
                raise SignatureError(
                    f"{self.__name__} was called with a numpy array (input leaf {i}: {leaf.dtype}{list(leaf.shape)})\n"
                    f"why: a compiled module takes torch tensors or jax.Arrays; any other value is a constant of "
                    f"the trace\nfix: pass torch.from_numpy(a) (zero-copy) or jax.numpy.asarray(a)")
            try:
                hash(leaf)
            except TypeError:
                raise SignatureError(
                    f"{self.__name__} was called with an unhashable {type(leaf).__name__} (input leaf {i})\n"
                    f"why: a non-tensor input is baked into the compiled program and keys its cache, so it must be "
                    f"hashable\nfix: pass it as a tensor, a tuple/list/dict of tensors or numbers, or bind it "
                    f"with concrete_args=") from None

    def _call(self, args, kwargs):
        """The general call path; it also records the fast call plan of a signature (see fxla.dispatch)."""
        bound = self._bind(args, kwargs)
        leaves = _leaves(bound)
        self._reject_unusable(leaves)
        shared = any(isinstance(t, torch.Tensor) for t in leaves)   # device buffers aliasing torch memory
        if shared:
            check_not_autocast(self.__name__)
        entry = self._entry(bound)      # (the weights were checked by the Dispatch that sent the call here)
        if entry.layout_sensitive:
            self._check_layouts(entry, bound)
        program = entry.program
        writes = program.written_attributes
        mutates = bool(program.mutated_inputs or program.mutated_params or writes)
        if mutates:       # one call at a time reads and writes the module's state (and its inputs)
            with self._state_lock:
                return self._finish(entry, args, kwargs, bound, leaves, shared, mutates)
        return self._finish(entry, args, kwargs, bound, leaves, shared, mutates)

    def _check_layouts(self, entry: _Entry, bound) -> None:
        """Inputs the program views (``x.view(-1)``) must be laid out so that eager's view works: the trace saw
        contiguous inputs, so a call with a non-contiguous one runs the graph once on meta tensors of the call's
        strides (per stride pattern, remembered) and raises what eager would (``view size is not compatible``)."""
        if all(not isinstance(v, torch.Tensor) or v.is_contiguous() for v in pytree.tree_leaves(bound)):
            return
        strides = tuple(leaf.stride() for node, value in zip(self._placeholders(), bound)
                        if node.target in entry.layout_sensitive
                        for leaf in pytree.tree_leaves(value) if isinstance(leaf, torch.Tensor))
        verdict = entry.layouts.get(strides)
        if verdict is None:
            metas = pytree.tree_map(lambda v: torch.empty_strided(tuple(v.shape), v.stride(), dtype=v.dtype,
                                                                  device="meta")
                                    if isinstance(v, torch.Tensor) else v, bound)
            with COMPILING:
                try:
                    propagate_shapes(self.graph_module, *metas)
                    verdict = ""
                except FxlaError as err:
                    verdict = str(err)
            entry.layouts[strides] = verdict
        if verdict:
            raise SignatureError(f"{self.__name__}: the program cannot run on inputs laid out like these (strides "
                                 f"{list(strides)}), as eager PyTorch cannot:\n{verdict}\nfix: pass x.contiguous() "
                                 f"for non-contiguous inputs, or use .reshape() instead of .view() in the model")

    def _finish(self, entry: _Entry, args, kwargs, bound, leaves, shared: bool, mutates: bool):
        program = entry.program
        writes = program.written_attributes
        if program.mutated_inputs:   # before running: a refused input must leave the module's state as it was
            tensors = check_writable(self.__name__, program.mutated_inputs, leaves, entry.guard is not None)
        results = entry.executable(self._device_args(entry, leaves), wait=shared or mutates)
        if mutates:   # results: outputs, mutated inputs, mutated parameters, written attributes (see FxlaProgram)
            cut = len(results) - sum(leaf is None for w in writes for leaf in w.leaves)
            results, attributes = results[:cut], results[cut:]
            cut = len(results) - len(program.mutated_params)
            results, state = results[:cut], results[cut:]
            if program.mutated_inputs:     # checks every input before anything is written, the state included
                results = write_back(tensors, program.mutated_inputs, leaves, results, entry.guard)
            if state:
                self._store_state(program, state)
            if writes:
                self._set_attributes(writes, attributes)
        outputs = iter(results)
        convert = from_device if self.output == "torch" else (lambda a: a)
        values = [convert(next(outputs)) if static is None else static for static in program.output_static]
        if entry.guard is not None:
            values = entry.guard(leaves, values)
        if not kwargs and bound is args and all(is_array(a) for a in args) and entry.executable.partitioning is None \
                and not mutates and not entry.layout_sensitive:
            key = fast_key(args)
            if key is not None:
                plan = self._plans[key] = call_plan(self.__name__, entry.executable, args, entry.params,
                                                    self.output, program.output_spec, program.output_static,
                                                    results, entry.guard)
                if self._cpp_call is not None and plan.direct is None:
                    self._front_plans[key] = plan
        return pytree.tree_unflatten(values, program.output_spec)

    # -- interop -------------------------------------------------------------------------------------------------
    def as_jax_function(self, *example_inputs):
        """A JAX-traceable function for ``example_inputs``' signature: takes ``jax.Array``\\ s (same structure,
        shapes and dtypes as the examples) and returns ``jax.Array``\\ s; use it inside ``jax.jit`` / ``jax.vmap``.

        Parameters are passed as the extra arguments of the embedded program (under ``jax.jit`` they become
        constants of the surrounding program).  ``jax.grad`` is not supported (see docs/runtime.md).
        """
        from fxla.runtime.jax_interop import stablehlo_function
        if self._per_shape is not None:
            module, values = self._per_shape.module_for(example_inputs, {})
            return module.as_jax_function(*values)
        if self.mesh is not None:
            raise InteropError("as_jax_function does not support sharded (mesh=) modules\n"
                               "fix: compile without mesh= and shard with jax.jit around the function")
        args = tuple(example_inputs)
        entry = self._entry(args)
        program = entry.program
        if program.mutated_inputs or program.mutated_params or program.written_attributes:
            what = (f"tensor input(s) {program.mutated_inputs}" if program.mutated_inputs else
                    f"its parameters/buffers {program.mutated_params}" if program.mutated_params else
                    f"its attributes {[w.name for w in program.written_attributes]}")
            raise InputMutationError(f"{self.__name__} changes {what} in place (e.g. `x += 1`); a JAX function "
                                     f"cannot change its arguments or the module's state\n"
                                     f"fix: compute a new tensor in the model (y = x + 1) and return it")
        params = entry.params
        leaves, spec = pytree.tree_flatten(args)
        in_avals = [jax.core.ShapedArray(tuple(v.shape), to_device(v, self.device).dtype)
                    for v in leaves if is_array(v)] + [jax.core.ShapedArray(p.shape, p.dtype) for p in params]
        out_avals = [jax.core.ShapedArray(shape, numpy_dtype(dt)) for shape, dt in signature_of(entry.stablehlo)[1]]
        call = stablehlo_function(entry.stablehlo, in_avals, out_avals)
        statics = [None if is_array(v) else v for v in leaves]

        def fxla_function(*inputs):
            got, got_spec = pytree.tree_flatten(tuple(inputs))
            if got_spec != spec or [None if is_array(v) else v for v in got] != statics:
                raise InteropError(f"{self.__name__}: as_jax_function was built for inputs "
                                   f"({self._describe_call(args)}) and cannot take a different structure or "
                                   f"non-tensor values\nfix: call as_jax_function with new example inputs")
            arrays = [v if not isinstance(v, torch.Tensor) else to_device(v, self.device) for v in got if is_array(v)]
            values = iter(call(*arrays, *params))
            return pytree.tree_unflatten([next(values) if s is None else s for s in program.output_static],
                                         program.output_spec)

        fxla_function.__name__ = f"fxla_{self.__name__}"
        return fxla_function

    def __repr__(self) -> str:
        where = f"mesh={dict(self.mesh.shape)}" if self.mesh is not None else f"device={self.device}"
        return f"fxla.compile({type(self.original).__name__}, {where})"


def compile(fn=None, *, device=None, concrete_args=None, tracer=None, output="torch", dynamic=False,  # noqa: A001
            cache_dir=None, mesh=None, shard=None, concrete_shapes=False, max_signatures=MAX_SIGNATURES):
    """Compile an ``nn.Module`` or function: ``fast = fxla.compile(model)`` or ``@fxla.compile``.

    ``device``: ``"cpu"``, ``"gpu"``, ``"tpu"``, ``"cpu:1"``, a ``jax.Device`` or ``None`` (JAX's default).
    ``concrete_args``: arguments to bake in while tracing (as in torch.fx).  ``tracer``: a custom
    :class:`fxla.frontend.Tracer` (e.g. with its own ``is_leaf_module``).
    ``output``: ``"torch"`` (default) returns torch tensors; ``"jax"`` returns ``jax.Array``\\ s left on the device.
    ``dynamic``: only ``False`` — every input signature (shapes, dtypes, non-tensor values) is compiled once and
    cached; there are no symbolic shapes.
    ``cache_dir``: a folder for fxla's on-disk executable cache, so another process with the same program, device
    and jaxlib deserializes instead of recompiling (default: :func:`fxla.runtime.set_cache_dir`'s, else none).
    ``mesh`` / ``shard``: run SPMD-partitioned over ``mesh`` (``fxla.runtime.Mesh({"x": 4})`` or a
    ``jax.sharding.Mesh``); ``shard`` maps ``"input:<i>"``, an argument name, a parameter/buffer name or
    ``"output:<i>"`` to a spec with one entry per dimension (``None`` or mesh axis names), e.g.
    ``{"input:0": ("x", None), "fc1.weight": ("x", None)}``; unnamed values are replicated.
    ``concrete_shapes``: trace lazily, once per input signature, with concrete shapes (``Tracer(concrete_shapes=
    True)``), so models that branch on shapes or compute with sizes (Hugging Face transformers) compile directly;
    every signature's graph is shape-specialised and the parameters are shared.  Without it, the module is
    traced once, shape-agnostically, at construction.
    ``max_signatures``: how many input signatures stay compiled (default 64); a new one beyond that drops the least
    recently used (its next call compiles again).  ``fast.clear_cache()`` drops them all.
    """
    options = dict(device=device, concrete_args=concrete_args, tracer=tracer, output=output, dynamic=dynamic,
                   cache_dir=cache_dir, mesh=mesh, shard=shard, concrete_shapes=concrete_shapes,
                   max_signatures=max_signatures)
    if fn is None:
        return functools.partial(compile, **options)
    return CompiledModule(fn, **options)
