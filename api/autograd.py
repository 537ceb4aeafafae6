"""Autograd through compiled modules: a call that needs gradients runs a forward executable that also returns
the residuals its backward needs, and records one autograd node whose backward runs fxla's compiled backward.

A call of a compiled module with grad mode on, where a tensor input or a parameter requires grad, takes this
path (``output="torch"``; ``jax.Array`` outputs have no autograd).  Per compiled signature and per set of
tensors that require grad, fxla lowers the program again to the fxla dialect, differentiates it
(:func:`fxla.lowering.autodiff.differentiate`: gradients of the float inputs and parameters that require grad,
through the float outputs), and compiles both halves through the same pipeline as every program (their
StableHLO verified, device layout passes applied).  A module with ``dynamic=`` differentiates once per symbolic
signature and refines both halves per size (:mod:`fxla.symbolic_gradients`).  Float outputs that do not depend
on what requires grad get ``requires_grad=False``, as eager's.  The forward saves what the backward reads
(``remat=True``: nothing but the inputs, the backward recomputes); the backward is one executable fed with the
saved device buffers, the cotangents autograd passes in and the parameters as they were at the forward — no
Python-level recompute.  ``loss.backward()`` then fills ``.grad`` of the parameters and inputs as eager does.  A
program that draws random numbers (dropout in training mode) gets a fresh seed per forward; its backward reads the
forward's masks (saved, or with ``remat=True`` recomputed from the same seed), so the gradients are those of the
forward's own randomness.  A backward with ``create_graph=True`` (a gradient penalty, a Hessian-vector product)
returns gradients that are differentiable themselves: :mod:`fxla.higher_order`.

The saved values live as long as torch keeps the graph, as eager's saved tensors do: the autograd node saves one
empty tensor (``ctx.save_for_backward``) that owns the call's state (its residuals, and the parameters and inputs
its backward reads), so torch frees them itself — at a backward without ``retain_graph=True``, or when the graph
is dropped — and a second backward through a freed graph fails where eager's does.  A backward reads the
parameters and inputs as they were at the forward (a copy of those the call itself changes), and raises as eager
does when one was changed in place since (an optimizer step between two backwards through a retained graph).

Each gradient program is a compile of its own in the ``fxla.compile`` log and under ``dump_dir``
(:meth:`fxla.recompile.CompileControl._gradient_compile`): "the forward with residuals for input signature #n"
(at the first call that records gradients of that set of tensors), "the backward for input signature #n" (at
its first backward), and for ``jax.grad`` the two halves lowered for JAX, each with what it differentiates with
respect to, why it compiled, its seconds and phases, and a folder inside the signature's dump folder.
"""
from __future__ import annotations

import contextlib
import dataclasses
import weakref
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

import jax
import torch
from torch.utils import _pytree as pytree

from fxla.lowering.autodiff import (Differentiated, NotDifferentiableError, differentiable_args,
                                    differentiable_results)
from fxla.frontend.passes.history import input_source, source_argument
from fxla.lowering.autodiff.transform import main_function
from fxla.lowering.program import draw_seed
from fxla.runtime import Executable, from_device, to_device
from fxla.runtime.buffers import is_array

from .gradients import GradientError, GradientGuard, SavedValuesError, refuse_vmap
from .higher_order import Argument, Derivatives, first_derivative, hold, source_positions, stamp
from .outputs import ResultHandler
from .pipeline import COMPILING
from .symbolic_gradients import gradient_for
from .write_back import check_writable

__all__ = ["GradientEntry", "gradient_sources", "check_grad_enabled_regions", "run_with_grad", "guard_refused",
           "NotDifferentiableError", "SavedValuesError"]

#: how many of the tensors a gradient program differentiates with respect to its log record names
_SHOWN_SOURCES = 6


@dataclass
class GradientEntry:
    """The differentiated form of one compiled signature, for one set of tensors that require grad."""

    diff: Differentiated
    forward: Executable
    backward: Optional[Executable]
    forward_keys: List[Tuple[str, Tuple[int, ...]]]
    backward_keys: List[Tuple[str, Tuple[int, ...]]]
    handler: ResultHandler
    float_outputs: List[int]          # positions among the tensor outputs that take a cotangent
    prepared: Any = None              # the graph the halves come from (for the backward's compile)
    compiled: Any = None              # the signature's number and dump folder (fxla.recompile.CompiledSignature)
    sources: str = ""                 # what it differentiates with respect to (the compile log)
    backward_stablehlo: Optional[bytes] = None    # the polymorphic StableHLO the backward refines (dynamic=)
    derivatives: Optional[Derivatives] = None     # for a backward with create_graph=True (fxla.higher_order)
    #: per source: the outputs it has history in, as eager's graph (fxla.frontend.passes.history); a source in that
    #: of no output the backward came through gets None, not zeros (weight decay would move it)
    reach: List[FrozenSet[int]] = dataclasses.field(default_factory=list)
    #: per tensor input, then parameter, of the signature: its source in fxla.frontend.passes.history
    keys: List[Tuple[str, str]] = dataclasses.field(default_factory=list)
    #: the sources of this set of tensors that require grad
    active: FrozenSet[Tuple[str, str]] = frozenset()

    def backward_executable(self, module) -> Executable:
        """The backward, compiled at the first backward that needs it (a call under grad mode whose outputs
        are never differentiated compiles no backward).  Its parameters are plain arguments in their logical
        layout (``backward_keys``), so a forward knows which buffers to keep before the backward exists."""
        if self.backward is None:
            with COMPILING:
                if self.backward is None:
                    with module._gradient_compile(self.compiled, "backward", self.sources,
                                                  "the first backward through its forward") as record:
                        pipeline = module._pipeline
                        record.dump_fxla(self.diff.backward)
                        part = dataclasses.replace(self.diff.backward, param_names=[], params={})
                        stages = pipeline.lower_program(part, self.prepared, self.backward_stablehlo)
                        target = pipeline.layout(stages, module.device.platform)
                        self.backward = pipeline.compile(stages, target, module.device, cache_dir=module.cache_dir,
                                                         gradients=True)
        return self.backward


def gradient_sources(program, leaves) -> Optional[Tuple[bool, ...]]:
    """Per differentiable argument of ``program`` (float tensor inputs, then parameters), whether it requires
    grad now; ``None`` when grad mode is off or none does (the call then runs forward only)."""
    if not torch.is_grad_enabled():
        return None
    tensors = [t for t in leaves if is_array(t)]
    mask = tuple(isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point() for t in tensors) + \
        tuple(bool(getattr(program.params[n], "requires_grad", False)) for n in program.param_names)
    return mask if any(mask) else None


def check_grad_enabled_regions(name: str, program, leaves, where, sources=None) -> None:
    """Under ``torch.no_grad()``, refuse a call of a program whose forward turns grad mode on
    (:mod:`fxla.frontend.grad_enables`; ``where``: the line) when a tensor input or parameter requires grad: eager
    gives that region's results a history even then, and the call would run its forward alone.  ``sources``: only
    those tensors and parameters (by name) count (``(tensors, names)``, for a trace made for a ``no_grad`` caller,
    which knows which ones give an output a history)."""
    if torch.is_grad_enabled():
        return
    tensors, names = (leaves, program.param_names) if sources is None else \
        (sources[0], [n for n in program.param_names if n in sources[1]])
    if not any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors) and \
            not any(getattr(program.params[n], "requires_grad", False) for n in names):
        return
    raise GradientError(
        f"{name}'s forward turns grad mode on (torch.enable_grad() or set_grad_enabled(True)) and was called under "
        f"torch.no_grad()",
        where=where,
        why="eager gives what that region computes a history even under no_grad, so its gradients reach the "
            "parameters; a compiled call under no_grad runs the forward alone, and the region's gradients would be "
            "lost",
        fix="call it with grad mode on (outside torch.no_grad(); detach what needs no gradient), or turn the "
            "gradients off where none is wanted (model.requires_grad_(False))")


def _input_names(module, entry) -> List[str]:
    """The tensor inputs of the compiled signature ``entry``, by argument name (``name[i]`` for the i-th tensor of
    an argument holding several)."""
    inputs = []
    for node, value in zip(module._binding.placeholders, entry.program_args):
        arrays = [leaf for leaf in pytree.tree_leaves(value) if is_array(leaf)]
        inputs += [node.target] if len(arrays) == 1 and arrays[0] is value else \
            [f"{node.target}[{i}]" for i in range(len(arrays))]
    return inputs


def _sources_text(module, entry, mask) -> str:
    """The tensors ``mask`` marks (per tensor input, then per parameter: :func:`gradient_sources`) as the compile
    log names them: inputs by argument name, parameters by name; the first few, then how many more."""
    names = [n for n, m in zip(_input_names(module, entry) + list(entry.program.param_names), mask) if m]
    more = len(names) - _SHOWN_SOURCES
    return ", ".join(names[:_SHOWN_SOURCES]) + (f" and {more} more" if more > 0 else "")


def _compile_gradient(module, entry, args, mask) -> GradientEntry:
    pipeline = module._pipeline
    sources = _sources_text(module, entry, mask)
    number = entry.compiled.number if entry.compiled is not None else "?"
    def differentiate(program):
        wrt = sorted(source_positions(program, mask))     # (a random program's seed sits among the arguments)
        float_outputs = [i for i in differentiable_results(program) if i < program.layout.outputs]
        return pipeline.differentiate(program, wrt, float_outputs, remat=module._remat)

    with module._gradient_compile(entry.compiled, "forward with residuals", sources,
                                  f"the first call of input signature #{number} that records gradients of these "
                                  f"tensors") as record:
        # dynamic=: both halves refined from the polymorphic ones of the call's symbolic signature, where they can be
        found = None if module._dynamic is None else \
            gradient_for(module._dynamic, module, module.graph_module, args, (mask, module._remat), differentiate)
        polymorphic = (None, None)
        if found is not None:
            diff, prepared = found.diff, found.prepared
            polymorphic = (found.forward_stablehlo, found.backward_stablehlo)
        else:
            prepared = pipeline.prepare(module.graph_module, args)
            diff = differentiate(pipeline.to_fxla(prepared))
        program, float_outputs = diff.forward, diff.cotangents
        outputs = program.output_static
        record.dump_fxla(diff.forward)
        stages = pipeline.lower_program(diff.forward, prepared, polymorphic[0])
        target = pipeline.layout(stages, module.device.platform)
        forward = pipeline.compile(stages, target, module.device, cache_dir=module.cache_dir, gradients=True)
    forward_keys = [module._store.key(diff.forward, name, target.layouts.get(name, ()))
                    for name in diff.forward.param_names]
    # (its outputs are torch tensors already, made by _Call.forward: built as they are, with no guard)
    handler = ResultHandler(program.layout, program.output_spec, outputs, program.mutated_inputs, "jax", None,
                            module.__name__, remade=entry.program.output_views if module.output == "torch" else ())
    backward_keys = [module._store.key(diff.backward, n, ()) for n in diff.params]
    derivatives = Derivatives(module, entry.compiled, module.graph_module)     # (create_graph=True: made when asked)
    keys = _keys(module, entry)
    return GradientEntry(diff, forward, None, forward_keys, backward_keys, handler, float_outputs, prepared,
                         entry.compiled, sources, polymorphic[1], derivatives, _reach(entry, keys, mask), keys,
                         frozenset(key for key, m in zip(keys, mask) if m))


def _keys(module, entry) -> List[Tuple[str, str]]:
    """Per tensor input, then parameter, of the signature ``entry``: its source in
    :mod:`fxla.frontend.passes.history` (``mask``'s order)."""
    targets = []
    for node, value in zip(module._binding.placeholders, entry.program_args):
        if is_array(value):
            targets.append(input_source(node.target))
        else:                                   # a list, tuple or dict: each tensor its own source
            arrays = sum(1 for leaf in pytree.tree_leaves(value) if is_array(leaf))
            targets += [input_source(node.target, k) for k in range(arrays)]
    return targets + [("param", name) for name in entry.program.param_names]


def _reach(entry, keys, mask) -> List[FrozenSet[int]]:
    """Per source of the call (``mask``'s order; ``keys``: :func:`_keys`): the numbers of the tensor outputs it has
    history in."""
    histories, results = entry.program.histories, entry.program.layout.outputs
    return [histories.reached(key, results) if histories is not None else frozenset(range(results))
            for key, m in zip(keys, mask) if m]


@dataclass
class GradientTexts:
    """The differentiated halves of a signature as StableHLO text for JAX (``as_jax_function`` under
    ``jax.grad``): gradients of the float tensor inputs, parameters as constants in their logical layout.  The
    halves' fxla programs stay (``diff``), so JAX can differentiate them again (:meth:`derivative`)."""

    diff: Differentiated
    forward: str
    backward: str
    forward_params: List[Any]
    backward_params: List[Any]
    module: Any = None                # (a weak reference to the compiled module: its pipeline and compile log)
    prepared: Any = None
    compiled: Any = None              # the signature's number and dump folder (fxla.recompile.CompiledSignature)
    #: (id of a program, wrt, cotangents) -> (the program, its derivative, the derivative's StableHLO text)
    derivatives: Dict[Tuple, Tuple[Any, Differentiated, str]] = dataclasses.field(default_factory=dict)
    #: id of a program -> its order (the halves are of order 1) and, for fxla.interop, its JAX function
    orders: Dict[int, int] = dataclasses.field(default_factory=dict)
    functions: Dict[int, Tuple[Any, Any]] = dataclasses.field(default_factory=dict)

    def derivative(self, program, wrt: List[int], cotangents: List[int]) -> Tuple[Differentiated, str]:
        """``program`` (one of the halves or a derivative of one) differentiated for JAX with ``remat=True`` (its
        backward reads the cotangents and ``program``'s own arguments): that backward and its StableHLO text."""
        key = (id(program), tuple(wrt), tuple(cotangents))
        found = self.derivatives.get(key)
        if found is None:
            with COMPILING:
                found = self.derivatives.get(key)
                if found is None:
                    module = self.module()
                    order = self.orders.get(id(program), 1) + 1
                    with module._gradient_compile(self.compiled, f"JAX derivative of order {order}",
                                                  f"{len(wrt)} argument(s)", "a gradient of a gradient in JAX "
                                                  "through as_jax_function", verb="lowered") as record:
                        pipeline = module._pipeline
                        diff = pipeline.differentiate(program, wrt, cotangents, remat=True, higher=True)
                        record.dump_fxla(diff.backward)
                        text = pipeline.lower_program(diff.backward.copy(), self.prepared).stablehlo
                    self.orders[id(diff.backward)] = order
                    found = self.derivatives[key] = (program, diff, text)
        return found[1], found[2]


def gradient_texts(module, entry) -> GradientTexts:
    """:class:`GradientTexts` of the compiled signature ``entry`` of ``module`` (made once, then kept)."""
    key = ("jax", module._store.generation)          # (texts hold the weights of their making)
    found = entry.gradients.get(key)
    if found is not None:
        return found
    with COMPILING:
        pipeline = module._pipeline
        signature = entry.program      # (the arguments of the program lowered again below are the same)
        n_inputs = len(main_function(signature.module).regions[0].blocks[0].arguments) - len(signature.param_names)
        wrt = [k for k in differentiable_args(signature) if k < n_inputs]
        sources = _sources_text(module, entry, [k in wrt for k in range(n_inputs)])
        why = "jax.grad (or jax.vjp) through as_jax_function"
        with module._gradient_compile(entry.compiled, "JAX forward with residuals", sources, why,
                                      verb="lowered") as record:
            prepared = pipeline.prepare(module.graph_module, entry.program_args)
            program = pipeline.to_fxla(prepared)
            cotangents = [i for i in differentiable_results(program) if i < program.layout.outputs]
            diff = pipeline.differentiate(program, wrt, cotangents, remat=module._remat)
            record.dump_fxla(diff.forward)
            texts = [pipeline.lower_program(diff.forward.copy(), prepared).stablehlo]   # (the fxla forms stay)
        with module._gradient_compile(entry.compiled, "JAX backward", sources, why, verb="lowered") as record:
            record.dump_fxla(diff.backward)
            texts.append(pipeline.lower_program(diff.backward.copy(), prepared).stablehlo)
        store = module._store
        params = [store.resident(part, [store.key(part, n, ()) for n in part.param_names],
                                 [module.device] * len(part.param_names)) for part in (diff.forward, diff.backward)]
        found = entry.gradients[key] = GradientTexts(diff, texts[0], texts[1], params[0], params[1],
                                                       weakref.ref(module), prepared, entry.compiled)
    return found


def _same(value):
    return value


def _version(t: torch.Tensor) -> Optional[int]:
    """``t``'s version counter; None for an inference tensor, which has none (nor is changed outside inference
    mode)."""
    return None if t.is_inference() else t._version


def _before(array):
    """A copy of a device buffer that the call's own write-back is about to change (it may alias the tensor)."""
    return jax.device_put(array, may_alias=False).block_until_ready()


def _own_saved_values():
    """Around ``_CompiledCall.apply``: the node's saved anchor (see :class:`_CompiledCall`) is stored as it is, not
    through the user's ``saved_tensors_hooks`` (``save_on_cpu``, non-reentrant checkpointing): it is no activation,
    and the state it owns is fxla's device buffers, which no hook could move or recompute."""
    if torch._C._autograd._saved_tensors_hooks_is_enabled():
        return torch.autograd.graph.saved_tensors_hooks(_same, _same)
    return contextlib.nullcontext()     # (disabled hooks: then no hook of the user's is in force either)


def _changed(name: str, t: torch.Tensor, version: int, module_name: str) -> SavedValuesError:
    return SavedValuesError(
        f"one of the variables needed for gradient computation has been modified by an inplace operation: {name} "
        f"({str(t.dtype).replace('torch.', '')}{list(t.shape)}) of fxla-compiled {module_name} is at version "
        f"{t._version}; expected version {version} instead",
        why="why: the backward of a compiled call reads the parameters and inputs it needs as they were at its "
            "forward, as eager's saved tensors; an in-place change since then (an optimizer step, p.mul_(0.5), "
            "x.add_(1)) bumped the tensor's version counter, where eager raises too",
        fix="run every backward through the graph before changing them in place (optimizer.step() after the last "
            "backward), or run the forward again after the change")


class _CompiledCall(torch.autograd.Function):
    """One compiled call as an autograd node: ``forward(ctx, call, *sources)`` runs ``call.forward()`` and returns
    its tensor outputs; ``backward`` runs ``call.backward(cotangents)`` and returns one gradient per source.

    Torch decides how long the call's state lives: the node saves one empty tensor, the *anchor*, whose attribute
    ``fxla_call`` is the only reference to the :class:`_Call` (nothing else keeps it: no cycle through the
    outputs).  Torch frees saved tensors after a backward without ``retain_graph=True`` and when the graph is
    dropped, and with the anchor go the residuals; a backward after that finds ``ctx.saved_tensors`` freed, as an
    eager node would (:class:`SavedValuesError` from torch's own error)."""

    @staticmethod
    def forward(ctx, call, *sources):
        outputs = call.forward()
        hold(ctx, call)
        ctx.fxla_name = call.module.__name__
        ctx.mark_non_differentiable(*[o for i, o in enumerate(outputs) if i not in call.differentiable])
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *cts):
        refuse_vmap(cts, ctx.fxla_name)
        try:
            (anchor,) = ctx.saved_tensors
        except RuntimeError as err:         # torch freed the graph's saved values: a backward without retain_graph
            raise SavedValuesError(
                f"Trying to backward through the graph a second time, through fxla-compiled {ctx.fxla_name}: the "
                f"values it saved for its backward have already been freed",
                why="why: saved intermediate values of the graph are freed when you call .backward() or "
                    "autograd.grad(), as in eager: torch freed this call's residuals with the graph at the previous "
                    "backward",
                fix="Specify retain_graph=True in the earlier .backward() or autograd.grad() if you need to backward "
                    "through the graph a second time, or run the forward again") from err
        call = anchor.fxla_call
        # create_graph=True: gradients that have a graph themselves (fxla.higher_order)
        grads = call.backward_with_graph(cts) if torch.is_grad_enabled() else call.backward(cts)
        # a source in the history of no output the backward came through: None, as in eager (not zeros)
        given = {i for i, ct in enumerate(cts) if ct is not None}
        return (None, *(g if reach & given else None for g, reach in zip(grads, call.grad.reach)))


class _Call:
    """The state of one differentiated call from its forward to the graph's release (see :class:`_CompiledCall`)."""

    def __init__(self, module, entry, grad: GradientEntry, leaves, writable, mask):
        self.module, self.entry, self.grad = module, entry, grad
        self.leaves, self.writable, self.mask = leaves, writable, mask
        # (an output that does not depend on what requires grad has none, as in eager: requires_grad=False)
        self.differentiable = set(grad.float_outputs) & set(grad.diff.active_results)

    def forward(self) -> List[torch.Tensor]:
        module, grad = self.module, self.grad
        store = module._store
        program = self.entry.program
        tensors = [t for t in self.leaves if is_array(t)]
        n_tensors = len(tensors)
        if grad.diff.forward.random:     # a fresh seed; a backward that recomputes (remat) reads the same one
            tensors.append(draw_seed())
        inputs = [to_device(t.detach() if isinstance(t, torch.Tensor) else t, module.device) for t in tensors]
        placements = [module.device] * len(grad.forward_keys)
        params = store.resident(grad.diff.forward, grad.forward_keys, placements)
        # what the backward reads, as it is now (an optimizer step may replace the parameters before it runs);
        # a copy of what this call itself changes (below), whose buffer may alias the tensor's memory
        self.inputs = [_before(inputs[k]) if k in program.mutated_inputs else inputs[k] for k in grad.diff.inputs]
        self.backward_params = [_before(b) if n in program.mutated_params else b for n, b in zip(
            grad.diff.params, store.resident(grad.diff.backward, grad.backward_keys,
                                             [module.device] * len(grad.backward_keys)))]
        results = grad.forward(inputs + params, wait=True)
        n_res = grad.diff.residuals
        self.residuals = results[len(results) - n_res:]
        parts = grad.handler.split(results[:len(results) - n_res], self.leaves, self.writable)
        if parts.state:
            store.store_state(program, parts.state)
        if program.written_attributes:
            store.set_attributes(program.written_attributes, parts.attributes)
        # the caller's tensors the backward reads, with their version counters after the call (see _check)
        backward_params = grad.diff.backward.params
        self.watched = [(k, tensors[k], _version(tensors[k])) for k in grad.diff.inputs
                        if k < n_tensors and isinstance(tensors[k], torch.Tensor)] + \
            [(n, backward_params[n], _version(backward_params[n])) for n in grad.diff.params
             if isinstance(backward_params.get(n), torch.Tensor)]
        # every argument of the call's program as it was read, for a backward with create_graph=True
        self.arguments = tensors + [program.params[n] for n in program.param_names]
        self.stamps = [stamp(a) for a in self.arguments]
        self.leaves = self.writable = None
        outputs = [from_device(o) for o in parts.outputs]      # (not kept: they hold the node that holds this)
        self.out_meta = [(o.shape, o.dtype) for o in outputs]
        return outputs

    def _check(self) -> None:
        """Raise as eager does when a tensor the backward reads was changed in place since the call (an optimizer
        step between two backwards through a retained graph): the backward would read the forward's values or the
        new ones depending on whether its buffer aliases the tensor's memory.  Not seen, as in eager: changes
        through ``.data`` (``p.data = new`` leaves the forward's buffer as it was)."""
        for what, t, version in self.watched:
            if _version(t) != version:
                name = f"input {_input_names(self.module, self.entry)[what]!r}" if isinstance(what, int) else \
                    f"parameter {what!r}"
                raise _changed(name, t, version, self.module.__name__)

    def backward_with_graph(self, cts) -> List[torch.Tensor]:
        """:meth:`backward` under ``create_graph=True``: gradients that are differentiable themselves, computed by
        fxla's derivative of the call's program (:mod:`fxla.higher_order`)."""
        grad, program = self.grad, self.entry.program
        n_plain = len(self.arguments) - len(program.param_names)
        names = [f"input {n!r}" for n in _input_names(self.module, self.entry)]
        names += ["the random seed"] * (n_plain - len(names)) + [f"parameter {n!r}" for n in program.param_names]
        sources = source_positions(program, self.mask)
        arguments = [Argument(a, name, k in sources, s)
                     for k, (a, name, s) in enumerate(zip(self.arguments, names, self.stamps))]
        changed = set(program.mutated_inputs) | {n_plain + program.param_names.index(n) for n in program.mutated_params
                                                 if n in program.param_names}
        return first_derivative(grad.derivatives, self.entry, self.mask, arguments, changed, cts, grad.float_outputs)

    def backward(self, cts) -> List[Optional[torch.Tensor]]:
        self._check()
        grad, device = self.grad, self.module.device
        cotangents = []
        for i in grad.float_outputs:
            ct = cts[i]
            shape, dtype = self.out_meta[i]
            cotangents.append(to_device(ct.detach().contiguous() if ct is not None else torch.zeros(shape, dtype=dtype),
                                        device))
        args = list(self.residuals) + cotangents + self.inputs + self.backward_params
        results = grad.backward_executable(self.module)(args, wait=True)
        # one per source, in order; own memory (autograd may accumulate into a .grad in place)
        return [from_device(g).clone() for g in results]


def _unsupported(module, entry, leaves, mask) -> Optional[str]:
    """Why this call cannot record gradients through fxla (then its outputs are guarded: see fxla.gradients)."""
    if module.mesh is not None:
        return "fxla does not differentiate sharded (mesh=) programs yet"
    hooks = module._modes.watch.hooks
    if hooks is not None and hooks.backward_hooks():
        return ("the model has a backward hook (register_full_backward_hook / register_full_backward_pre_hook, "
                "on a module or global), which fxla's gradients do not run")
    quiet = entry.program.quiet_inputs     # (changed under torch.no_grad() only: no history to differentiate)
    changed = [k for k in entry.program.mutated_inputs if mask[k] and k not in quiet]
    if changed:
        return (f"the program changes input(s) {changed} in place, and they require grad: fxla does not "
                f"differentiate through in-place changes of its inputs")
    return None


def _guard_attributes(module, entry, active, leaves, guard: Optional[GradientGuard] = None) -> None:
    """The tensors forward assigned to module attributes (``self.aux_loss = ...``) that have history from what
    requires grad (``active``: those sources' keys): fxla does not differentiate through them yet, so a backward
    through one raises ``GradientError`` (it would silently miss their part of the gradient); ``guard``: the
    call's own when fxla could not differentiate the call at all."""
    program = entry.program
    histories = program.histories
    if not program.written_attributes or histories is None or not histories.attributes:
        return
    guard = guard or GradientGuard(module.__name__, program.params, reason=(
        "fxla does not differentiate through tensors forward assigns to module attributes (self.aux_loss = ...) "
        "yet; return the tensor from forward instead"))
    for w in program.written_attributes:
        if active & histories.attributes.get(w.name, frozenset()):
            module._store.guard_attribute(w.name, lambda values: guard(leaves, values))


def _guard_inputs(module, entry, active, keys, leaves, tensors, guard: Optional[GradientGuard] = None) -> None:
    """The inputs forward changed in place with what requires grad (``x.mul_(self.w)``; ``active``: those sources'
    keys, ``keys``: :func:`_keys`): eager gives them that history; fxla wrote their new values back without it, so
    each gets a history whose backward raises ``GradientError`` (it would silently miss that part of the
    gradient); ``guard``: the call's own when fxla could not differentiate the call at all."""
    program = entry.program
    histories = program.histories
    if not program.mutated_inputs or histories is None or not histories.inputs:
        return
    chosen = [k for k in program.mutated_inputs if isinstance(tensors[k], torch.Tensor) and not tensors[k].requires_grad
              and active & histories.inputs.get(source_argument(keys[k]), frozenset())]
    if not chosen:
        return
    guard = guard or GradientGuard(module.__name__, program.params, reason=(
        "fxla does not differentiate the new value of an input forward changes in place (x.mul_(self.w)) yet; "
        "compute a new tensor in forward and return it instead"))
    for k, value in zip(chosen, guard(leaves, [tensors[k].detach().clone() for k in chosen])):
        tensors[k].copy_(value)


def guard_refused(module, entry, leaves, mask) -> None:
    """After a call fxla could not differentiate (``mask``: :func:`gradient_sources`; the forward alone ran and
    its outputs carry the call's guard): the attributes it assigned and the inputs it changed in place that have
    history from what requires grad get that guard too, so a backward through them raises as through the
    outputs."""
    keys = _keys(module, entry)
    active = frozenset(key for key, m in zip(keys, mask) if m)
    tensors = [t for t in leaves if is_array(t)]
    _guard_attributes(module, entry, active, leaves, entry.guard)
    _guard_inputs(module, entry, active, keys, leaves, tensors, entry.guard)


def run_with_grad(module, entry, leaves, mask, args=None) -> Any:
    """Run the compiled signature ``entry`` of ``module`` on the call's flat ``leaves`` with autograd recording
    (``mask``: :func:`gradient_sources`); returns the call's value, or ``None`` when fxla cannot differentiate
    this call (the reason is then the guard's, ``entry.guard.reason``: the caller runs the forward alone and a
    backward through it raises ``GradientError`` naming it).  ``args``: the call's arguments in placeholder order
    (``leaves`` when omitted: a call of tensors alone)."""
    grad = entry.gradients.get(mask)
    if grad is None:
        with COMPILING:
            grad = entry.gradients.get(mask)
            if grad is None:
                try:
                    reason = _unsupported(module, entry, leaves, mask)
                    grad = reason if reason is not None else _compile_gradient(module, entry, entry.program_args,
                                                                               mask)
                except NotDifferentiableError as err:
                    grad = str(err)
                entry.gradients[mask] = grad
    if isinstance(grad, str):
        entry.guard.reason = grad
        return None
    program = entry.program
    writable = None
    if program.mutated_inputs:
        writable = check_writable(module.__name__, program.mutated_inputs, leaves, True, program.quiet_inputs)
    tensors = [t for t in leaves if is_array(t)]
    sources = [t for t, m in zip(tensors, mask) if m] + \
        [program.params[n] for n, m in zip(program.param_names, mask[len(tensors):]) if m]
    call = _Call(module, entry, grad, leaves, writable, mask)
    with _own_saved_values():
        outputs = _CompiledCall.apply(call, *sources)
    del call                             # (the node's saved anchor owns it now)
    _guard_attributes(module, entry, grad.active, leaves)
    _guard_inputs(module, entry, grad.active, grad.keys, leaves, tensors)
    return grad.handler.build(list(outputs), leaves, args)
