"""``fxla.compile``: trace once, then lower and compile per input signature, run through PJRT.

:class:`CompiledModule` is a facade over named parts: :mod:`fxla.pipeline` (the stages, run per signature),
:mod:`fxla.signature` (binding a call, its signature key, input checks), :mod:`fxla.params` (compiled signatures
and the device-resident weights), :mod:`fxla.outputs` (results, shared with ``fxla.load``), :mod:`fxla.dispatch`
(call plans), :mod:`fxla.shard_plan` (``mesh=``/``shard=``), :mod:`fxla.interop` (``as_jax_function``) and
:mod:`fxla.per_shape` (``concrete_shapes=True``).
"""
from __future__ import annotations

import functools
import operator
import time
import weakref
from typing import Any, Dict, Optional, Sequence

import torch
from torch.utils import _pytree as pytree

from fxla.errors import FxlaError
from fxla.frontend import GraphModule, Tracer
from fxla.frontend import meta as M
from fxla.frontend.remedies import COMPILE, COMPILE_DYNAMIC, Remedies, current, spelled_as
from fxla.frontend.passes.aliasing import layout_sensitive_inputs
from fxla.lowering import UnsupportedOpError
from fxla.lowering.index_bounds import check_input_indices
from fxla.lowering.program import draw_seed
from fxla.runtime import Executable, cpp_dispatch, resolve_device
from fxla.runtime._fastcall import Dispatch
from fxla.runtime.buffers import is_array
from fxla.runtime.sharding import ShardingError, as_mesh

from .autograd import check_grad_enabled_regions, gradient_sources, gradient_texts, guard_refused, run_with_grad
from .dispatch import call_plan, checked_plan, fast_key
from .gradients import check_torch_call, guard_for
from .input_aliases import NO_VARIANT as _NO_VARIANT, AliasVariants
from .interop import jax_function
from .compile_options import (MAX_SIGNATURES, META_FIX, META_WHY, OptionError,  # noqa: F401  (fxla.compile's names)
                              check_options, not_callable, option_error, refuse_meta_tensors)
from .modes import CallWatch, ModeTraces
from .none_inputs import NoneVariants, none_inputs
from .outputs import ResultHandler
from .params import Entry, ParameterStore, SignatureCache
from .per_shape import PerShapeTraces, drop_traces, modules_of
from .recompile import CompileControl, CompileHistory, log_trace, logger, phase_observer
from .pipeline import COMPILING, Pipeline, Stages  # noqa: F401  (Stages: fxla.Stages)
from .shard_plan import ShardPlan
from fxla.frontend import grad_enables
from fxla.frontend.grad_enables import history_sources, reads_grad_mode
from fxla.frontend.state_capture import watched_attributes
from .symbolic import SymbolicPrograms
from .signature import ArgumentError, CallBinding, SignatureError, call_leaves, reject_unusable, signature_key  # noqa: F401
from .write_back import (InputMutationError, SharedInputError,  # noqa: F401  (public names of fxla.compile)
                         check_writable, write_back)


def _check_materialized_state(owner: str, program, graph) -> None:
    """The tensors a traced program reads (parameters, buffers, tensors a function closes over) must have data:
    one on the meta device is refused, at the line that reads it, before anything is uploaded."""
    reads = {n.target: n.meta.get(M.SOURCE) for n in graph.nodes if n.op == "get_attr"}
    refuse_meta_tensors(((name, program.params[name]) for name in program.param_names),
                        f"{owner} reads tensor(s)", where=reads.get)


def _carry_attribute_writes(source, graph) -> None:
    """Re-tracing a GraphModule runs its generated code, which does not assign the attributes the original
    forward did (``self.last = y``: node meta, see fxla.frontend.state_capture.StateCapture); the re-traced
    nodes keep the original names, so the records move over by name."""
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


def _trace(fn, tracer: Optional[Tracer], concrete_args, remedies: Remedies = COMPILE) -> GraphModule:
    """Trace the module or function ``fn`` as it is now (its current mode: fxla.modes); trace errors name
    ``remedies`` (the entry point the user called: fxla.frontend.remedies)."""
    tracer = tracer or Tracer()
    started = time.perf_counter()
    with COMPILING, spelled_as(remedies):
        graph = tracer.trace(fn, concrete_args=concrete_args)
    log_trace(fn, graph, started)
    if isinstance(fn, GraphModule) and fn.specialization:     # re-traced: keep what it is valid for
        graph.meta["specialization"] = fn.specialization
    if isinstance(fn, GraphModule):
        _carry_attribute_writes(fn.graph, graph)
    name = type(fn).__name__ if isinstance(fn, torch.nn.Module) else getattr(fn, "__name__", "fn")
    return GraphModule(tracer.root, graph, class_name=name)


def _new_trace(module: "CompiledModule"):
    """A trace of the model in its current mode (fxla.modes): the graph, or (``concrete_shapes``) a new, empty set
    of per-shape traces."""
    if module._per_shape is not None:
        return {}
    made = _trace(module.original, *module._tracing)
    _drop_stale_traces(module)
    return made


def _made(module: "CompiledModule", gm: GraphModule, symbols=None) -> "CompiledModule":
    """The compiled module of a concrete_shapes trace just made (``module._member``), after the traces it made
    stale went."""
    _drop_stale_traces(module)
    return _member(module, gm, symbols)


def _drop_stale_traces(module: "CompiledModule") -> None:
    """After a trace: where it changed the model's structure (forward registered, replaced or removed a submodule,
    parameter or buffer -- ``self.register_buffer("cache", ...)`` for a longer sequence), the programs of every
    other trace and the resident weights hold the old objects, so all of them go (the next call of another
    signature or mode traces the model again as it is now, as eager would compute it)."""
    structure = module._modes.watch.structure
    if structure is None or not structure.moved():
        return
    _drop_programs(module)
    module._history.restructured = (module._history.compiles,
                                    f"a trace changed the model's structure ({structure.describe()})")
    logger.info("%s: %s: the programs of its other traces were dropped", module.__name__,
                module._history.restructured[1])


def _drop_programs(module: "CompiledModule") -> None:
    """Every trace's programs and the resident weights go (the next call traces and compiles again)."""
    # (not under the store's lock: a state-writing call holds it while it may wait for COMPILING, which the
    # caller holds; a call already under way finishes with the entry it has)
    if module._per_shape is not None:
        for made in {id(m): m for m in module._modes.traces.values()}.values():
            drop_traces(made, module._drop_member)
        module._per_shape.drop_no_grad()
    else:
        module._modes.traces.clear()
        module._nones.clear()
    if module._dynamic is not None:
        module._dynamic.forget()
    module._store.clear()


def _hooks_changed(module_ref) -> None:
    """A forward or backward hook was registered on (or removed from) the model since its trace (fxla.modes
    HookWatch): the programs ran the old hooks, so they go before the model is traced again."""
    module = _live(module_ref)
    _drop_programs(module)
    module._history.restructured = (module._history.compiles, "a hook was registered on or removed from the model")
    logger.info("%s: a hook was registered or removed since the model was traced: it is traced again",
                module.__name__)


def _mode_traces(module: "CompiledModule", fn) -> ModeTraces:
    """The traces of ``module`` (of ``fn``), one per mode (fxla.modes)."""
    return ModeTraces(fn, functools.partial(_new_trace, module), functools.partial(_use_trace, module),
                      functools.partial(_hooks_changed, weakref.ref(module)))


def _use_trace(module: "CompiledModule", made):
    """``module`` runs the mode's trace ``made`` from now on; the call plans of the old one go (fxla.modes).
    Returns ``made``."""
    # (not under the store's lock, which a state-writing call holds while it may wait for COMPILING, held here)
    module._store.drop_plans()
    if module._per_shape is not None:
        module._per_shape.compiled = made
    else:
        module._set_graph(made)
        module._modes.watch.watch_state(module._store.root, watched_attributes(made.graph))
    return made


def _random_refused(name: str, where: str, fix: str) -> str:
    return (f"{name} draws random numbers (dropout in training mode, torch.rand ...), which fxla does not support "
            f"in {where} yet\nfix: call model.eval() first (dropout is then the identity), or {fix}")


def _live(module_ref) -> "CompiledModule":
    module = module_ref()
    if module is None:
        raise FxlaError("this call belongs to a CompiledModule that has been deleted (its __call__ was kept)\n"
                        "fix: keep the CompiledModule itself and call it")
    return module


def _record_plan(module: "CompiledModule", key, entry: Entry, args, results) -> None:
    """Record the call plan of ``module``'s signature ``entry`` for the positional call ``args`` (fxla.dispatch): a
    checked plan where each call must be checked against its inputs (writes them back, views them, reads indices
    or random bits), else the plan with its shortcuts.  None where a call under ``no_grad`` takes another trace
    (``_routed``): every call is routed then."""
    if module._nones is not None and reads_grad_mode(module.graph_module.graph):
        return
    program = entry.program
    from_inputs = any(v.base[0] == "input" for v in entry.handler.remade)     # (outputs made from the arguments)
    if entry.handler.layout.mutates or entry.layout_sensitive or program.random or program.input_checks or \
            program.value_checks or from_inputs or entry.grad_enabled_at is not False:   # (value_checks: its
        # check code is read after each call, fxla.value_checks; grad_enabled_at: the grad mode, _run_elsewhere)
        sensitive = [i for i, node in enumerate(module._binding.placeholders) if node.target in entry.layout_sensitive]
        shared = any(isinstance(a, torch.Tensor) for a in args)
        run = functools.partial(_run_planned, weakref.ref(module), entry, shared)
        plan = checked_plan(module.__name__, entry.executable, run, args, sensitive,
                            module._store.lock if entry.handler.layout.mutates else None, module._general_call)
    else:
        plan = call_plan(module.__name__, entry.executable, args, entry.params, module.output, program.output_spec,
                         program.output_static, results, entry.guard,
                         grad_call=functools.partial(_grad_call, weakref.ref(module), entry),
                         remade=entry.handler.remade)
    module._plans[key] = plan
    if module._cpp_call is not None and plan.direct is None:
        module._front_plans[key] = plan


def _run_planned(module_ref, entry: Entry, shared: bool, args):
    """A checked plan's call (fxla.dispatch.checked_plan) of its compiled module: the general call's run of
    ``entry`` on the positional arrays ``args`` (no binding: they are the program's inputs, in order; ``shared``:
    some are torch tensors, whose memory the device buffers alias)."""
    return _live(module_ref)._run(entry, args, {}, args, args, shared, planned=True)


#: what :func:`_run_elsewhere` returns for a call whose value it did not make
_NOT_RUN = object()
_IS_GRAD_ENABLED = torch._C.is_grad_enabled      # (not the one a trace reads through: fxla.frontend.grad_enables)


def _run_elsewhere(module: "CompiledModule", entry: Entry, bound, leaves):
    """Before a call runs its forward alone: ``(value, None, None)`` when another path made the call's value --
    autograd recording it (fxla.autograd), or, for a changed input sharing memory with another input (the
    ``SharedInputError`` of the checks, which run before anything is written), a variant of the graph
    (fxla.input_aliases) -- else ``(_NOT_RUN, mask, writable)``: ``mask`` the gradient sources of a call fxla could
    not differentiate (what else the call makes gets its outputs' guard: fxla.autograd.guard_refused), or ``None``;
    ``writable``: the handler's check of the changed inputs (:meth:`ResultHandler.writable`)."""
    handler, program = entry.handler, entry.program
    try:
        check_input_indices(module.__name__, () if entry.input_shardings else program.input_checks, leaves)
        if entry.grad_enabled_at is not False:          # (forward's torch.enable_grad() under a no_grad call)
            check_grad_enabled_regions(module.__name__, program, leaves, entry.grad_enabled_at,
                                       _history_inputs(module, entry, bound))
        mask = gradient_sources(program, leaves) if entry.guard is not None else None
        value = run_with_grad(module, entry, leaves, mask, bound) if mask is not None else None
        if value is not None:
            return value, None, None
        return _NOT_RUN, mask, handler.writable(leaves, entry.guard is not None)   # (refused before the run)
    except SharedInputError:
        value = module._aliases.run(module.graph_module, bound, handler.mutated_inputs)
        if value is _NO_VARIANT:
            raise
        return value, None, None


def _history_inputs(module: "CompiledModule", entry: Entry, bound):
    """``None`` (every tensor input and parameter counts), or ``(tensors, parameter names)``: the call's tensors and
    the parameters that give an output a history in eager's call under ``no_grad`` (:func:`_grad_regions`)."""
    sources = entry.history_sources
    if sources is None:
        return None
    inputs = {name for kind, name in sources if kind == "input"}
    tensors = [leaf for node, value in zip(module._binding.placeholders, bound) if node.target in inputs
               for leaf in pytree.tree_leaves(value)]
    return tensors, {name for kind, name in sources if kind == "param"}


def _alias_member(module_ref, gm: GraphModule) -> "CompiledModule":
    """The compiled module of a variant graph (fxla.input_aliases, fxla.none_inputs)."""
    module = _live(module_ref)
    graph_module = module.graph_module
    try:
        return _member(module, gm)
    finally:
        module.graph_module = graph_module


def _none_member(module_ref, nones, grad: bool = True) -> "CompiledModule":
    """The compiled module of a trace with the inputs ``nones`` fixed at ``None`` (fxla.none_inputs) made for a
    caller whose grad mode is ``grad`` (fxla.frontend.grad_enables)."""
    module = _live(module_ref)
    tracer, concrete_args, remedies = module._tracing
    if nones:
        logger.info("%s: a call gives None to %s: traced with %s fixed at None", module.__name__, ", ".join(nones),
                    "it" if len(nones) == 1 else "them")
    if not grad:
        logger.info("%s: a call under no_grad of a model that reads the grad mode or turns it on: traced for it",
                    module.__name__)
    with grad_enables.assuming(grad):
        gm = _trace(module.original, tracer, {**(concrete_args or {}), **dict.fromkeys(nones)}, remedies)
    structure = module._modes.watch.structure
    if structure is not None and structure.moved():     # (it registered a buffer: the mode's trace holds the old)
        _drop_stale_traces(module)
        with grad_enables.assuming(True):
            module._modes.traces[module._modes.mode] = _use_trace(module, _trace(module.original, *module._tracing))
    graph_module, options = module.graph_module, module._options     # (a None input takes no shard= spec)
    module._options = dict(options, shard={k: v for k, v in module.shard.items() if k not in nones})
    try:
        member = _member(module, gm)
    finally:
        module.graph_module, module._options = graph_module, options
    if module._dynamic is not None:
        member._dynamic = SymbolicPrograms(module._dynamic.spec.restricted(member._binding.names), option_error)
    return member


def _grad_regions(module: "CompiledModule"):
    """``(where, sources)`` of the signature being compiled: where forward turns grad mode on (``False``: nowhere)
    and, for a trace made for a ``no_grad`` caller, the inputs and parameters eager's call then gives an output a
    history from (``None``: any that requires grad; fxla.frontend.grad_enables)."""
    graph = module.graph_module.graph
    if not graph.meta.get(M.CALLER_GRAD_OFF):
        return graph.meta.get(M.GRAD_ENABLED_AT, False), None
    sources, where = history_sources(graph, module.graph_module)
    return (where if sources else False), sources


def _grad_call(module_ref, entry, args):
    """A planned call that needs gradients (fxla.autograd), or ``None`` when none is needed after all."""
    mask = gradient_sources(entry.program, args)
    return None if mask is None else run_with_grad(_live(module_ref), entry, list(args), mask)


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


def _lowered(module: "CompiledModule", args) -> Stages:
    """``module.lower(*args)``, its errors told which call they come from (and what compiled before)."""
    try:
        return module.lower(*args)
    except UnsupportedOpError:
        raise                                   # about the program, not about these inputs
    except FxlaError as err:
        seen = "; ".join(f"({module._describe_call(e.program_args)})" for e in module._cache.values()) or "none"
        note = f"while compiling {module.__name__} for inputs ({module._describe_call(args)}); compiled so far: {seen}"
        if type(err).__str__ is BaseException.__str__:
            err.add_context(note)             # (a line before the fix: line)
        else:
            err.add_note(note)
        raise
    except (RuntimeError, TypeError, ValueError, IndexError) as err:
        raise SignatureError(f"{module.__name__}: cannot compile for inputs ({module._describe_call(args)}): "
                             f"{type(err).__name__}: {err}\n"
                             f"why: running the captured graph on inputs of these shapes/dtypes failed\n"
                             f"fix: pass inputs of a rank/dtype the model accepts") from err


def _jax_function(module: "CompiledModule", example_inputs):
    """What :meth:`CompiledModule.as_jax_function` returns."""
    from fxla.runtime.jax_interop import InteropError
    if module._per_shape is not None:
        member, values = module._shaped(example_inputs, {})
        if getattr(member, "value_guards", None):
            raise InteropError(
                f"as_jax_function: {module.__name__}'s trace for these inputs decided data-dependent values from "
                f"their data ({'; '.join(g.describe() for g in member.value_guards[:3])})\nwhy: a JAX function "
                f"cannot check them per call (fxla.compile does, and traces again), so it would compute a wrong "
                f"answer for other data\nfix: keep the decision in the program (torch.where instead of an `if` "
                f"on tensor values, fixed-size ops instead of nonzero / x[mask])")
        return member.as_jax_function(*values)
    if module.mesh is not None:
        raise InteropError("as_jax_function does not support sharded (mesh=) modules\n"
                           "fix: compile without mesh= and shard with jax.jit around the function")
    args = tuple(example_inputs)
    module._modes.watch()
    module._store.weights()                         # (weights changed in place: uploaded again first)
    target, values = module._routed(args, {})     # (None inputs: their variant's program takes the rest)
    entry = target._entry(args if target is module else values)
    if entry.program.random:
        raise InteropError(_random_refused(module.__name__, "as_jax_function (JAX would pass a key)",
                                           "pass the noise as an input"))
    made = (target.graph_module, module._store.generation)

    def gradient():     # (made at the first jax.grad: from the trace and weights the function was made with)
        module._store.weights()
        if (target.graph_module, module._store.generation) != made:
            raise InteropError(f"{module.__name__}: jax.grad of a function as_jax_function made before the module "
                               f"changed (its weights, train()/eval() or a value its trace read): its gradient "
                               f"would be the changed module's\nfix: call as_jax_function again after the change, "
                               f"and take jax.grad of the new function")
        return gradient_texts(target, entry)
    return jax_function(module.__name__, entry, args, module.device, module._describe_call(args), gradient=gradient)


def _member(owner: "CompiledModule", gm: GraphModule, symbols=None) -> "CompiledModule":
    """The compiled module of a concrete_shapes trace (``symbols``: its sizes' symbols, ``dynamic=``) or a variant
    graph: ``owner``'s parameter store, name and watched attributes (fxla.modes); its own signature cache, plans
    and lowerings."""
    member = object.__new__(type(owner))
    member._dynamic = symbols and SymbolicPrograms.seeded(owner._dynamic.spec, gm, symbols, option_error)
    member.original, member.__name__, member._options, member._per_shape = gm, owner.__name__, owner._options, None
    member._remat, member._history = owner._remat, owner._history    # (numbers, budget and dumps: shared)
    member._nones = None                    # (its owner's calls with None inputs went to their variant)
    member._configure(**owner._options)
    member._store = owner._store
    member._modes = ModeTraces(None, None, None, hooks=owner._modes.watch.hooks)     # (the owner checks them)
    member._setup_calls(gm, jax_dispatch=True)
    member._set_graph(gm)
    owner._modes.changed_state(owner._store.root, watched_attributes(gm.graph))
    owner.graph_module = gm
    return member


def _routed(module: "CompiledModule", args, kwargs):
    """``(module, arguments)``: ``module`` and the call bound to its placeholders, or the module of the call's
    variant and the other arguments: for a call giving ``None`` to some inputs, the trace with those fixed at
    ``None`` (fxla.none_inputs); for a call under ``no_grad`` whose trace reads the grad mode or turns it on, the
    trace made for such a caller (fxla.frontend.grad_enables)."""
    bound = module._binding.bind(args, kwargs)
    if module._nones is None:
        return module, bound
    nones = none_inputs(module._binding.names, bound) if any(v is None for v in bound) else ()
    target = module._nones.member(nones) if nones else module
    if not _IS_GRAD_ENABLED() and reads_grad_mode(target.graph_module.graph):
        target = module._nones.member(nones, grad=False)
    return target, (bound if not nones else tuple(v for v in bound if v is not None))


def _per_shape_module(module: "CompiledModule", args, kwargs):
    """``(module, values)``: the per-shape trace (concrete_shapes) of a call, made now if new; under ``no_grad``,
    where that trace reads the grad mode or turns it on, the one made for such a caller."""
    found = module._per_shape.module_for(args, kwargs)
    if _IS_GRAD_ENABLED() or not reads_grad_mode(found[0].graph_module.graph):
        return found
    with grad_enables.assuming(False):
        return module._per_shape.for_no_grad(module._modes.mode).module_for(args, kwargs)


class CompiledModule(CompileControl):
    """A model or function compiled by fxla; call it like the original (positional or keyword arguments).

    The program is traced at construction (trace errors surface here); after ``model.eval()`` / ``model.train()``
    or a change of a plain attribute forward reads (``model.scale = 3.0``) the next call runs the trace of the new
    mode (traced once per mode; fxla.modes; a replaced submodule or parameter is a ModelStructureError).  Each
    new input signature (shapes, dtypes, non-tensor arguments) is lowered, verified and compiled once and
    cached (at most ``max_signatures``, least recently used dropped first); parameters and buffers are uploaded
    to the device at their first use and stay there; a weight changed in place afterwards (``w.mul_(2)``,
    ``load_state_dict``, an optimizer step, ``w.data = t``, ``w.data.mul_(2)``) is uploaded again before the next
    call (fxla.weights).  Changes the
    program itself makes (``self.steps += 1``, batch norm's running statistics in training mode) are written back
    to the module and to the resident buffers, one call at a time.  Random ops (dropout in training mode,
    ``torch.rand`` ...) draw a seed from torch's default generator per call (docs/training.md).  Inputs may be
    torch tensors or ``jax.Array``\\ s; outputs are torch tensors (``output="jax"``: ``jax.Array``\\ s, left on the
    device; a signature of ``jax.Array``\\ s then runs through JAX's C++ dispatch after its first call, as a
    ``jax.jit`` call does — see docs/runtime.md).
    """

    #: the model or function that was compiled
    original: Any
    #: the traced program (an :class:`fxla.GraphModule`: ``.graph`` its nodes, ``.code`` its Python); with
    #: ``concrete_shapes=True`` the trace of the latest new input signature (None before the first call)
    graph_module: Optional[GraphModule]
    #: the ``jax.Device`` programs run on (with ``mesh=``: the mesh's first device)
    device: Any
    #: the ``jax.sharding.Mesh`` of a sharded module (``mesh=``), else None
    mesh: Any
    #: ``"torch"`` or ``"jax"``: what a call returns (``output=``)
    output: str
    #: the folder of the on-disk executable cache (``cache_dir=``); None: :func:`fxla.runtime.set_cache_dir`'s, if any
    cache_dir: Any
    #: how many input signatures stay compiled (``max_signatures=``)
    max_signatures: int

    def __init__(self, fn, *, device=None, concrete_args: Optional[Dict[str, Any]] = None,
                 tracer: Optional[Tracer] = None, output: str = "torch", dynamic: bool = False,
                 cache_dir=None, mesh=None, shard: Optional[Dict[str, Any]] = None, concrete_shapes: bool = False,
                 max_signatures: int = MAX_SIGNATURES, remat: bool = False, dump_dir=None):
        check_options(fn, output, dynamic, max_signatures, mesh, shard, device, concrete_shapes, tracer)
        self._dynamic = SymbolicPrograms(dynamic, option_error) if dynamic else None
        self.original = fn
        self._remat, self._history = bool(remat), CompileHistory(dump_dir)    # (fxla.recompile, fxla.dumps)
        functools.update_wrapper(self, fn, updated=())
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self._options = dict(device=device, output=output, cache_dir=cache_dir, mesh=mesh, shard=shard,
                             max_signatures=max_signatures)
        self._configure(**self._options)
        self._store = ParameterStore(fn, self.mesh)
        self._per_shape: Optional[PerShapeTraces] = None
        # (the remedies trace errors name: fxla.export sets its own around this)
        self._tracing = (tracer, concrete_args, current(COMPILE_DYNAMIC if dynamic else COMPILE))
        self._modes = _mode_traces(self, fn)
        self._setup_calls(fn, jax_dispatch=not concrete_shapes)
        self._nones = NoneVariants(functools.partial(_none_member, weakref.ref(self)), self._drop_member,
                                   functools.partial(getattr, self._modes, "mode"), COMPILING)
        if concrete_shapes:     # (each new input signature is traced: graph_module is the latest's)
            self._per_shape = PerShapeTraces(self.__name__, fn, concrete_args, functools.partial(_made, self),
                                             self._drop_member, max_signatures, self._dynamic.spec if dynamic else None)
            self.graph_module = None
        self._modes.first(self._per_shape.compiled if concrete_shapes else _use_trace(self, _new_trace(self)))

    def _configure(self, *, device, output, cache_dir, mesh, shard, max_signatures) -> None:
        self.output = output
        self.cache_dir = cache_dir
        self.mesh = as_mesh(mesh) if mesh is not None else None
        self.device = self.mesh.devices.flat[0] if self.mesh is not None else resolve_device(device)
        self.shard: Dict[str, Any] = dict(shard or {})
        self.max_signatures = max_signatures
        self._shard_plan = ShardPlan(self.mesh, self.shard) if self.mesh is not None else None
        self._pipeline = Pipeline(observers=[phase_observer(self)], name=self.__name__)

    def _setup_calls(self, fn, jax_dispatch: bool) -> None:
        """The call path (see ``__call__``) over a new signature cache registered with the parameter store."""
        cpp_call = None
        if self.output == "jax" and self.mesh is None and jax_dispatch:
            me = weakref.ref(self)              # (the dispatcher must not keep the module alive)
            cpp_call = cpp_dispatch.dispatcher(self.__name__, functools.partial(_cpp_miss, me),
                                               functools.partial(_plain_call, me))
        self._signatures = SignatureCache(self.max_signatures, cpp_call, self.__name__)
        self._aliases = AliasVariants(functools.partial(_alias_member, weakref.ref(self)), self._drop_member)
        self._store.caches.append(self._signatures)
        self._cache, self._plans = self._signatures.entries, self._signatures.plans
        self._front_plans, self._cpp_call = self._signatures.front_plans, cpp_call
        # the call through the compiled signatures' plans (in C; see __call__), else _general_call
        watch = self._store.weights             # (a function's: the global and closure tensors it reads)
        if self._modes.watch.modules or self._modes.watch.state_names:
            # train()/eval() since the trace, plain attributes, a function's globals (fxla.modes), then weights
            watch = CallWatch(self._modes.watch, watch)
        self._plan_call = Dispatch(self._plans, self._general_call, watch=watch)
        # the plans of signatures JAX's C++ dispatch cannot run (torch tensors in): fxla's C dispatch in front of it
        self._dispatch = (Dispatch(self._front_plans, cpp_call, bypass=cpp_dispatch.ARRAY_TYPE, watch=watch)
                          if cpp_call is not None else self._plan_call)   # what a call runs (see __call__)

    def _set_graph(self, gm: GraphModule) -> None:
        self.graph_module = gm
        self._binding = CallBinding(self.__name__, [n for n in gm.graph.nodes if n.op == "placeholder"])
        self._layout_sensitive = frozenset(n.target for n in layout_sensitive_inputs(gm))
        if self._shard_plan is not None:
            self._shard_plan.check_names(self._binding.names, [n for n, _ in gm.named_parameters()]
                                         + [n for n, _ in gm.named_buffers()])

    def _drop_member(self, member: "CompiledModule") -> None:
        """A concrete_shapes trace was dropped: its signatures no longer follow the parameter store."""
        if member._signatures in self._store.caches:
            self._store.caches.remove(member._signatures)

    @property
    def _params(self):
        """The device buffers of the weights, by (name, stored permutation) (shared by a module's family)."""
        return self._store.buffers

    # -- compilation ---------------------------------------------------------------------------------------------
    def lower(self, *example_inputs) -> Stages:
        """Trace/lower/verify for ``example_inputs`` and return the IR of every stage (nothing is executed)."""
        self._modes.watch()
        if self._per_shape is not None:
            module, values = self._shaped(example_inputs, {})
            return module.lower(*values)
        target, values = self._routed(example_inputs, {})     # (defaults bound, as a call binds them)
        if target is not self:
            return target.lower(*values)
        with COMPILING:
            stages = self._pipeline.lower(self.graph_module, values) if self._dynamic is None else \
                self._dynamic.lower(self, self.graph_module, values)
        stages.compile_for_hlo = functools.partial(self.executable_for, *values)     # (Stages.hlo)
        return stages

    def trace_for(self, *args, **kwargs):
        """``(graph_module, placeholder_args)``: the traced graph a call with these arguments runs, and the
        call's arguments in the order of its placeholders (keywords and defaults bound); nothing is lowered or
        run.  With ``concrete_shapes=True`` it is the trace of this call's signature (traced now if new; plain
        Python arguments are constants of it, so not among ``placeholder_args``)."""
        self._modes.watch()
        if self._per_shape is not None:
            module, values = _per_shape_module(self, args, kwargs)
            return module.graph_module, values
        module, values = self._routed(args, kwargs)
        return module.graph_module, values

    _routed = _routed                   # (module-level functions: the routes of a call, fxla.none_inputs ...)
    _shaped = _per_shape_module         # (... and fxla.per_shape)

    def _describe_call(self, args, shown: int = 8) -> str:
        return self._binding.describe(args, shown)

    def _lower_for_call(self, args) -> Stages:
        return _lowered(self, args)

    def _compile(self, args, key) -> Entry:
        started = self._compile_started(args)
        self._binding.check_specialization(self.graph_module.specialization, args)
        stages = self._lower_for_call(args)
        program = stages.program
        _check_materialized_state(self.__name__, program, self.graph_module.graph)
        part = None
        if self._shard_plan is not None and program.random:
            raise ShardingError(_random_refused(self.__name__, "sharded (mesh=) programs", "compile without mesh="))
        if self._shard_plan is not None:
            part = self._shard_plan.partitioning(program, self._binding.names, args)
            self._shard_plan.set_outputs(part, stages.stablehlo)
        target = self._pipeline.layout(stages, self.device.platform, partitioned=part is not None)
        executable = self._pipeline.compile(stages, target, self.device, partitioning=part,
                                            cache_dir=self.cache_dir)
        n_inputs = len(executable.in_shardings) - len(program.param_names) if part is not None else 0
        keys = [self._store.key(program, name, target.layouts.get(name, ())) for name in program.param_names]
        placements = [executable.in_shardings[n_inputs + i] if part is not None else self.device
                      for i in range(len(keys))]
        guard = guard_for(self.__name__, program.params, self.output)
        entry = Entry(program, executable, target.text, executable.in_shardings[:n_inputs] if part is not None
                      else None, args, self._store.resident(program, keys, placements), keys, placements, guard,
                      self._layout_sensitive,
                      handler=ResultHandler(program.layout, program.output_spec, program.output_static,
                                            program.mutated_inputs, self.output, guard, self.__name__,
                                            program.quiet_inputs,
                                            program.output_views if self.output == "torch" else ()))
        entry.grad_enabled_at, entry.history_sources = _grad_regions(self)
        self._signatures.put(key, entry)
        entry.compiled = self._log_compile(args, started)    # (fxla.recompile: the log, budget and dump folder)
        return entry

    def _entry(self, args) -> Entry:
        key = (self._modes.mode, signature_key(args))          # (each mode's trace compiles its own signatures)
        entry = self._signatures.get(key)
        if entry is None:
            with COMPILING:                       # another thread may have compiled it meanwhile
                entry = self._signatures.get(key) or self._compile(args, key)
        return entry

    def clear_cache(self) -> None:
        """Drop every compiled signature, call plan and resident weight of this module (memory back; the next
        call of each signature compiles it again, from the on-disk cache when there is one)."""
        with COMPILING, self._store.lock:
            if self._per_shape is not None:
                for compiled in self._modes.traces.values():     # (every mode's traces)
                    compiled.clear()
            self._store.clear()

    def executable_for(self, *args) -> Executable:
        """The compiled executable for ``args``' signature (compiling it if needed)."""
        self._modes.watch()
        if self._per_shape is not None:
            module, values = self._shaped(args, {})
            return module.executable_for(*values)
        module, values = self._routed(args, {})
        return self._entry(values).executable if module is self else module.executable_for(*values)

    @property
    def cache_size(self) -> int:
        """How many input signatures have been compiled."""
        if self._per_shape is not None:
            return sum(m.cache_size for entry in self._per_shape.compiled.values() for m in modules_of(entry))
        return len(self._cache) + (self._nones.cache_size() if self._nones is not None else 0)

    # -- execution -----------------------------------------------------------------------------------------------
    def _device_args(self, entry: Entry, leaves) -> Sequence[Any]:
        tensors = [t for t in leaves if is_array(t)]
        if entry.program.random:                    # a fresh seed per call, from torch's default generator
            tensors.append(draw_seed())
        if entry.input_shardings is not None:
            buffers = entry.place_sharded(tensors, self._store, self.__name__, leaves)   # (index checks in it)
        else:                                       # (the same unchanged tensors: their kept device buffers)
            buffers = entry.input_buffers(self.device).put_all(tensors)
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
            reject_unusable(self.__name__, pytree.tree_leaves((args, kwargs)))
            module, values = _per_shape_module(self, args, kwargs)
            return module(*values)
        module, bound = self._routed(args, kwargs)
        if module is not self:                  # (None inputs: fxla.none_inputs)
            return module(*bound)
        leaves = call_leaves(bound)
        reject_unusable(self.__name__, leaves)
        shared = any(isinstance(t, torch.Tensor) for t in leaves)   # device buffers aliasing torch memory
        if shared:
            check_torch_call(self.__name__, leaves)
        entry = self._entry(bound)      # (the weights were checked by the Dispatch that sent the call here)
        if entry.layout_sensitive:
            self._binding.check_layouts(self.graph_module, entry, bound)
        if entry.handler.layout.mutates:   # one call at a time reads and writes the module's state (and inputs)
            with self._store.lock:
                return self._run(entry, args, kwargs, bound, leaves, shared)
        return self._run(entry, args, kwargs, bound, leaves, shared)

    def _run(self, entry: Entry, args, kwargs, bound, leaves, shared: bool, planned: bool = False):
        """Run ``entry``'s program on the call's ``leaves`` (``planned``: a checked plan's call, whose signature has
        its plan already)."""
        program, handler = entry.program, entry.handler
        value, refused, writable = _run_elsewhere(self, entry, bound, leaves)
        if value is not _NOT_RUN:
            return value
        mutates = handler.layout.mutates          # (the layout computed once, when the signature was compiled)
        results = entry.executable(self._device_args(entry, leaves), wait=shared or mutates)
        parts = handler.split(results, leaves, writable)   # (changed inputs written back)
        entry.written_back(writable)
        if parts.state:
            self._store.store_state(program, parts.state)
        if program.written_attributes:
            self._store.set_attributes(program.written_attributes, parts.attributes)
        if refused is not None:                     # (not differentiated: what else it made is guarded too)
            guard_refused(self, entry, leaves, refused)
        value = handler.build(parts.outputs, leaves, bound)
        if planned:
            return value
        if not kwargs and bound is args and all(is_array(a) for a in args) and entry.executable.partitioning is None:
            key = fast_key(args)
            if key is not None:
                _record_plan(self, key, entry, args, results)
        return value

    # -- interop -------------------------------------------------------------------------------------------------
    def as_jax_function(self, *example_inputs):
        """A JAX-traceable function for ``example_inputs``' signature: takes ``jax.Array``\\ s (same structure,
        shapes and dtypes as the examples) and returns ``jax.Array``\\ s; use it inside ``jax.jit`` / ``jax.vmap``.

        Parameters are the embedded program's extra arguments (constants under ``jax.jit``).  ``jax.grad`` /
        ``jax.vjp`` work, to any order, with fxla's backward; forward mode does not (see docs/runtime.md).
        """
        return _jax_function(self, example_inputs)

    def __repr__(self) -> str:
        where = f"mesh={dict(self.mesh.shape)}" if self.mesh is not None else f"device={self.device}"
        return f"fxla.compile({type(self.original).__name__}, {where})"


#: the polymorphic programs of ``dynamic=`` (:mod:`fxla.symbolic`); per-shape members (built without __init__) have none
CompiledModule._dynamic = None


def compile(fn=None, *, device=None, concrete_args=None, tracer=None, output="torch", dynamic=False,  # noqa: A001
            cache_dir=None, mesh=None, shard=None, concrete_shapes=False, max_signatures=MAX_SIGNATURES,
            remat=False, dump_dir=None):
    """Compile an ``nn.Module`` or function: ``fast = fxla.compile(model)`` or ``@fxla.compile``.

    ``device``: ``"cpu"``, ``"gpu"``, ``"tpu"``, ``"cpu:1"``, torch's spellings (``torch.device("cpu")``,
    ``"cuda"`` for ``"gpu"``), a ``jax.Device`` or ``None`` (JAX's default).
    ``concrete_args``: arguments to bake in while tracing (as in torch.fx).  ``tracer``: a custom
    :class:`fxla.frontend.Tracer` (e.g. with its own ``is_leaf_module``).
    ``output``: ``"torch"`` (default) returns torch tensors; ``"jax"`` returns ``jax.Array``\\ s left on the device.
    ``dynamic``: ``False`` (default) — every input signature (shapes, dtypes, non-tensor values) is traced once,
    lowered and compiled once, and cached.  ``{argument name: {dim: fxla.Dim("seq", max=512)}}`` (or a tuple with a
    ``Dim``/``None`` per dim) marks dims symbolic, ``True`` every dim of every tensor input: the program is lowered
    once for all their sizes (a polymorphic fxla program, docs/shapes.md), each new size only refines it and
    compiles it in XLA, and the constraints it relies on are checked per call
    (:class:`~fxla.ShapeConstraintError`, naming the constraint and the line that made it).
    ``cache_dir``: a folder for fxla's on-disk executable cache, so another process with the same program, device
    and jaxlib deserializes instead of recompiling (default: :func:`fxla.runtime.set_cache_dir`'s, else none).
    ``mesh`` / ``shard``: run SPMD-partitioned over ``mesh`` (``fxla.runtime.Mesh({"x": 4})`` or a
    ``jax.sharding.Mesh``); ``shard`` maps ``"input:<i>"``, an argument name, a parameter/buffer name or
    ``"output:<i>"`` to a spec with one entry per dimension (``None`` or mesh axis names), e.g.
    ``{"input:0": ("x", None), "fc1.weight": ("x", None)}``; unnamed values are replicated.
    ``concrete_shapes``: trace lazily, once per input signature, with concrete shapes (``Tracer(concrete_shapes=
    True)``), so models that branch on shapes or compute with sizes (Hugging Face transformers) compile directly;
    every signature's graph is shape-specialised and the parameters are shared.  Without it, the module is
    traced once, shape-agnostically, at construction; a call that gives ``None`` to an input (passed, or a default)
    runs a trace with those parameters fixed at ``None``, one per set of them (``if mask is None:`` answers as in
    eager: :mod:`fxla.none_inputs`).  With ``dynamic=`` as well, the marked dims stay symbolic in
    each trace (one trace for all their sizes; what the model's Python decides from a size is a guard checked per
    call: docs/shapes.md, "Models that branch on shapes").
    ``max_signatures``: how many input signatures stay compiled (default 64) per trace (the variants of calls
    with ``None`` inputs or under ``no_grad`` -- at most 8 -- each keep their own); a new one beyond that drops the
    least recently used (its next call compiles again).  ``fast.clear_cache()`` drops them all.
    ``remat``: for calls that record gradients (grad mode on and an input or parameter requiring grad: see
    docs/training.md), save nothing but the inputs and recompute the forward in the backward program (less
    memory, more compute); by default the forward saves the values the backward reads.
    ``dump_dir``: a folder to write every stage of every compiled signature to (graph, code, fxla, StableHLO, HLO,
    why it compiled, phase times; :mod:`fxla.dumps`, docs/debugging.md): one new folder per graph and signature,
    and in a signature's folder one per gradient program a training step compiles for it (the forward with
    residuals, the backward); fxla never overwrites or deletes a file there.
    """
    options = dict(device=device, concrete_args=concrete_args, tracer=tracer, output=output, dynamic=dynamic,
                   cache_dir=cache_dir, mesh=mesh, shard=shard, concrete_shapes=concrete_shapes,
                   max_signatures=max_signatures, remat=remat, dump_dir=dump_dir)
    if fn is None:
        return functools.partial(compile, **options)
    return CompiledModule(fn, **options)
