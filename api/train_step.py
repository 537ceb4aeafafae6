"""``fxla.compile_step``: a whole training step — forward, loss, backward, gradient clipping and the optimizer
update — as one XLA program, driven from a normal PyTorch loop::

    step = fxla.compile_step(model, optimizer, loss_fn)     # loss_fn(model, *batch) -> loss
    for x, y in loader:
        loss = step(x, y)          # zero_grad + forward + backward + optimizer.step(), compiled
        scheduler.step()           # learning-rate schedulers work as usual (no recompile)

The user's model and ``torch.optim`` optimizer stay the source of truth: every step reads the parameters, the
optimizer's state (``optimizer.state[p]``) and hyperparameters (``optimizer.param_groups``: a scheduler's new
``lr`` is the next step's), and writes the new parameters, state and changed buffers (BatchNorm's running
statistics) back into them, so ``model.state_dict()`` / ``optimizer.state_dict()`` are eager's, checkpoints
save and load mid-training, and eager code between steps (evaluation) sees the current weights.  The model's
mode is read at each step (``model.train()`` / ``model.eval()``; fxla.modes); dropout draws a fresh seed from
torch's default generator per step, so ``torch.manual_seed`` makes a run reproducible.  Per input
signature, and per set of optimizer flags that change the math (``nesterov``, ``amsgrad``, ...), fxla lowers
the loss, differentiates it (:mod:`fxla.lowering.autodiff`) and builds the step
(:func:`fxla.lowering.train_step.build_step`, update math in :mod:`fxla.lowering.optim`).

Supported optimizers: ``torch.optim.SGD`` (momentum, dampening, nesterov, weight decay, maximize), ``Adam`` and
``AdamW`` (amsgrad, weight decay, maximize); anything else (a subclass's own ``step``) raises :class:`StepError`.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from operator import is_
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import torch
from torch._dynamo.eval_frame import OptimizedModule
from torch.optim import optimizer as torch_optimizer
from torch.utils import _pytree as pytree

from fxla.base.shown import abbreviate
from fxla.frontend.remedies import COMPILE_STEP, spelled_as
from fxla.lowering.optim import AdamRule, SGDRule, UpdateRule
from fxla.lowering.index_bounds import check_input_indices
from fxla.lowering.program import draw_seed
from fxla.lowering.train_step import StepLayout, build_step
from fxla.lowering.value_checks import raise_failed, read_code
from fxla.runtime import to_device as _to_device
from fxla.runtime.buffers import InputBuffers, is_array, owned_copy, viewer
from fxla.runtime.host_memory import retain_after_compile
from fxla.runtime.multihost import place_sharded

from .gradients import check_torch_call
from .pipeline import COMPILING
from .residency import Residency, resident_platform
from .symbolic_gradients import step_for
from .train_mesh import MeshResidency, _user_name as _user, step_sharding as _step_sharding, \
    unplaced as _unplaced, unplaced_input as _unplaced_input
from .signature import signature_key
from .train_refusals import (StepError, batch_names, check_optimizer_class, refuse_shared_storage,
                             missing_state, refuse_trained_inputs, run_step_hooks)

__all__ = ["StepError", "TrainStep", "compile_step"]


class _Objective(torch.nn.Module):
    """The loss as a module: ``forward(*batch) = loss_fn(model, *batch)`` (its parameters are the model's, under
    ``model.``).  Traced graphs have a fixed number of inputs: :func:`_objective` makes the class of one arity."""

    def __init__(self, model: torch.nn.Module, loss_fn: Callable):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn
        self._fxla_traced_functions = (loss_fn,)     # (its plain globals are watched: fxla.frontend.global_reads)

    def forward(self, *batch):
        return _loss_first(self.loss_fn(self.model, *batch))


class _MappingLoss(NamedTuple):
    """The objective's result for a mapping (dict, ``ModelOutput``): its ``"loss"``, then the mapping itself."""
    loss: Any
    output: Any


def _loss_first(out):
    """``loss_fn``'s result with the loss as its first tensor: a mapping's ``"loss"`` (as Hugging Face's)."""
    if isinstance(out, Mapping):
        if "loss" not in out:
            raise StepError(f"loss_fn returned a {type(out).__name__} without a 'loss' key (keys: "
                            f"{abbreviate(list(out.keys()))})\nwhy: fxla.compile_step minimises a mapping's "
                            f"'loss' entry, and none of its other entries is known to be the loss\nfix: return "
                            f"the loss tensor (or a tuple with the loss first), or put it under 'loss'")
        return _MappingLoss(out["loss"], out)
    return out


def _refuse_backward_hooks(compiled) -> None:
    """A step program differentiates with fxla's own gradients, which do not run backward hooks."""
    hooks = compiled._modes.watch.hooks
    if hooks is not None and hooks.backward_hooks():
        raise StepError("the model has a backward hook (register_full_backward_hook / "
                        "register_full_backward_pre_hook, on a module or global), which fxla's gradients do not "
                        "run\nfix: remove the hook, or train this model eagerly (or with torch.compile)")


def _objective(model, loss_fn, n: int) -> _Objective:
    """An :class:`_Objective` whose ``forward`` takes exactly ``n`` batch arguments (named after ``loss_fn``'s
    parameters when it names them)."""
    names = batch_names(loss_fn, n)

    def forward(self, *batch, **named):
        return _loss_first(self.loss_fn(self.model, *batch, *[named[name] for name in names[len(batch):]]))
    forward.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)] +
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names])
    cls = type("Objective", (_Objective,), {"forward": forward})
    return cls(model, loss_fn)


#: how many distinct scalar packs (see ``TrainStep._pack``) and optimizer scalars a compiled step keeps on the device
MAX_SCALARS = 256


class _Scalars(NamedTuple):
    """How a rule's per-step scalars are computed: ``values(group, state)`` (scalar name -> float, computed as
    torch computes them) depends on the group's hyperparameters and on ``state_key(state)`` of the parameter's
    optimizer state only, so a step computes it once per group and state key, not once per parameter."""
    values: Callable[[dict, dict], Dict[str, float]]
    state_key: Callable[[dict], Any]


def _rule(optimizer, group) -> Tuple[UpdateRule, _Scalars]:
    """The update rule of a parameter of ``group`` and how its per-step scalars are computed."""
    if group.get("differentiable") or group.get("capturable") or group.get("fused"):
        raise StepError(f"{type(optimizer).__name__} with differentiable/capturable/fused=True is not supported by "
                        f"fxla.compile_step\nfix: create the optimizer with those options left at False")
    if isinstance(optimizer, torch.optim.SGD):
        rule = SGDRule(momentum=group["momentum"] != 0, weight_decay=group["weight_decay"] != 0,
                       nesterov=bool(group["nesterov"]), maximize=bool(group["maximize"]))
        return rule, _SGD_SCALARS
    if isinstance(optimizer, torch.optim.Adam):      # (AdamW is an Adam with decoupled weight decay)
        decoupled = bool(group.get("decoupled_weight_decay", isinstance(optimizer, torch.optim.AdamW)))
        beta1 = float(group["betas"][0])
        rule = AdamRule(weight_decay=group["weight_decay"] != 0, decoupled=decoupled, amsgrad=bool(group["amsgrad"]),
                        maximize=bool(group["maximize"]), lerp_from_end=(1 - beta1) >= 0.5)
        return rule, _ADAM_SCALARS
    raise StepError(f"fxla.compile_step does not support {type(optimizer).__name__}\n"
                    f"why: fxla compiles the optimizer's update itself and knows SGD, Adam and AdamW\n"
                    f"fix: use torch.optim.SGD, Adam or AdamW, or train with fxla.compile(model) and an eager "
                    f"optimizer step (gradients are still fxla's)")


def _sgd_scalars(group, state) -> Dict[str, float]:
    first = "momentum_buffer" not in state or state["momentum_buffer"] is None
    momentum = float(group["momentum"])
    return {"neg_lr": -float(group["lr"]), "weight_decay": float(group["weight_decay"]),
            "buf_scale": 0.0 if first else momentum, "grad_scale": 1.0 if first else 1.0 - float(group["dampening"]),
            "momentum": momentum}


def _sgd_state_key(state) -> bool:
    return state.get("momentum_buffer") is None          # (the first step's buffer is the gradient itself)


def _adam_scalars(group, state) -> Dict[str, float]:
    step = float(state["step"]) + 1 if "step" in state else 1.0
    beta1, beta2 = (float(b) for b in group["betas"])
    lr, wd = float(group["lr"]), float(group["weight_decay"])
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    return {"decay_scale": 1 - lr * wd, "weight_decay": wd, "lerp_weight": 1 - beta1, "beta2": beta2,
            "one_minus_beta2": 1 - beta2, "bias_correction2_sqrt": bias_correction2 ** 0.5, "eps": float(group["eps"]),
            "neg_step_size": -(lr / bias_correction1)}


def _adam_state_key(state) -> Optional[float]:
    return float(state["step"]) if "step" in state else None       # (the bias corrections' step)


_SGD_SCALARS = _Scalars(_sgd_scalars, _sgd_state_key)
_ADAM_SCALARS = _Scalars(_adam_scalars, _adam_state_key)


def _group_snapshot(optimizer) -> List[Tuple[dict, list, tuple]]:
    """What the optimizer's groups are now (each group dict, its ``params`` list and that list's members), held
    (not ids: a dict freed and another made at its address must not look the same; the members: a list changed
    in place, ``g["params"][:] = ...``, moves parameters between groups)."""
    return [(g, g["params"], tuple(g["params"])) for g in optimizer.param_groups]


def _opmath(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _rounded(value: float, dtype: torch.dtype) -> float:
    return torch.tensor(value, dtype=dtype).item()


class _Program:
    """A compiled step program and its call plan, resolved once when it is built: the torch tensors of its
    parameter arguments, per trainable parameter its rule, optimizer group and scalar computation, and the
    converters of its results, so that a step's host work is a few loops over prebuilt lists."""

    def __init__(self, executable, layout: StepLayout, objective, group_of: Dict[str, dict], consumed: frozenset,
                 checks, n_inputs: int, optimizer):
        self.executable, self.layout, self.objective, self.consumed = executable, layout, objective, consumed
        params = objective.params
        #: (name, tensor, consumed) of each parameter/buffer argument, in order
        self.slots = [(n, params[n], n in consumed) for n in layout.frozen + layout.trainable]
        self._trainable = frozenset(layout.trainable)
        #: what the program was built for besides its key: each argument tensor's requires_grad (with the
        #: optimizer's groups it decides which parameters are trained)
        self._requires_grad = [t.requires_grad for _, t, _ in self.slots]
        self.checks = tuple(dict.fromkeys(checks or ()))      # (a loss reading its labels twice checks them once)
        # (a check of a parameter or buffer used as indices: numbers past the batch's)
        self.checks_params = any(c.input >= n_inputs for c in self.checks)
        #: per trainable parameter of an update: (name, tensor, rule, keeps state, Adam, scalars, pack)
        self.updates: List[tuple] = []
        self.pack_dtypes: List[torch.dtype] = []
        self.pack_half: List[Optional[torch.dtype]] = []
        if layout.rules is not None:
            pack_of = {n: i for i, members in enumerate(layout.scalar_packs) for n in members}
            for n in layout.trainable:
                rule = layout.rules[n]
                adam = isinstance(rule, AdamRule)
                # (eager SGD without momentum keeps no state for a parameter: neither does this)
                self.updates.append((n, params[n], rule, bool(rule.state) or adam, adam,
                                     _rule(optimizer, group_of[n])[1], pack_of.get(n)))
            # (f16/bf16 parameters: float32 scalars, as torch's opmath reads Python scalars; fxla.lowering.optim)
            #: per pack, the half type of its parameters (or None): the scalars torch rounds to it are rounded
            self.pack_half = [params[m[0]].dtype if _opmath(params[m[0]].dtype) != params[m[0]].dtype else None
                              for m in layout.scalar_packs]
            self.pack_dtypes = [_opmath(params[members[0]].dtype) for members in layout.scalar_packs]
        self.groups = [group_of[n] for n in layout.trainable]       # each trainable parameter's group
        #: the tensors whose gradients the step computes (trainable, then clipping's: StepLayout.differentiated)
        self.differentiated = [params[n] for n in layout.differentiated]
        self._snapshot = _group_snapshot(optimizer)
        self.converters: Optional[List[Callable]] = None           # per result: device array -> torch tensor
        self.labels: Optional[List[str]] = None     # partitioned: what a multi-process mismatch calls each argument

    def applies(self, optimizer) -> bool:
        """Whether the program is still the step of the model and ``optimizer`` as they are now (beyond its key):
        the same tensors require grad, and the optimizer's groups train the same parameters with the same rules.
        :attr:`groups` are re-read when the groups changed (``optimizer.load_state_dict`` makes new group dicts,
        with the checkpoint's learning rate; ``add_param_group`` adds one)."""
        if [t.requires_grad for _, t, _ in self.slots] != self._requires_grad:
            return False
        current, snapshot = optimizer.param_groups, self._snapshot
        if len(current) == len(snapshot) and all(
                g is held and g["params"] is params and len(params) == len(members) and all(map(is_, params, members))
                for g, (held, params, members) in zip(current, snapshot)):
            return True
        by_param = {id(p): g for g in current for p in g["params"]}
        for n, tensor, _ in self.slots:           # (trained: in a group and requiring grad, as _trainable says)
            if (id(tensor) in by_param and tensor.requires_grad) != (n in self._trainable):
                return False
        groups = [by_param[id(tensor)] for _, tensor, *_ in self.updates]
        if any(_rule(optimizer, g)[0] != rule for g, (_, _, rule, *_) in zip(groups, self.updates)):
            return False
        if self.updates:
            self.groups = groups
        self._snapshot = _group_snapshot(optimizer)
        return True


class TrainStep:
    """A compiled training step (see the module docstring); ``step(*batch)`` returns what ``loss_fn`` returns
    (detached)."""

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, loss_fn: Callable, *,
                 max_grad_norm: Optional[float] = None, accumulation_steps: int = 1, device=None,
                 concrete_shapes: bool = False, mesh=None, shard: Optional[Dict[str, Any]] = None, dynamic=None):
        from .compile import CompiledModule
        if not isinstance(model, torch.nn.Module):
            raise StepError(f"fxla.compile_step expects the nn.Module to train, got {type(model).__name__}\n"
                            f"fix: fxla.compile_step(model, optimizer, loss_fn)")
        if isinstance(model, OptimizedModule):
            raise StepError("fxla.compile_step was given a torch.compile'd model (an OptimizedModule)\nwhy: the step "
                            "traces, differentiates and compiles the model's own forward itself; dynamo's wrapper "
                            "cannot be traced\nfix: pass the module itself: fxla.compile_step(model._orig_mod, "
                            "optimizer, loss_fn), or leave out torch.compile")
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise StepError(f"fxla.compile_step expects a torch.optim optimizer, got {type(optimizer).__name__}\n"
                            f"fix: fxla.compile_step(model, torch.optim.AdamW(model.parameters()), loss_fn)")
        if not isinstance(accumulation_steps, int) or accumulation_steps < 1:
            raise StepError(f"accumulation_steps={abbreviate(accumulation_steps)}: it must be a positive int\n"
                            f"fix: pass how many micro-batches to sum gradients over before each update")
        for group in optimizer.param_groups:
            _rule(optimizer, group)                       # (refuses what is not supported, now)
        check_optimizer_class(optimizer)
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.max_grad_norm = max_grad_norm
        self.accumulation_steps = accumulation_steps
        if dynamic and mesh is not None:
            raise StepError("fxla.compile_step(dynamic=..., mesh=...): a partitioned step takes static shapes\n"
                            "fix: drop dynamic= (each batch shape is then a step program of its own), or mesh=")
        self._options = dict(device=device, concrete_shapes=concrete_shapes)
        if dynamic:
            self._options["dynamic"] = dynamic
        self._compiled_by_arity: Dict[int, Any] = {}      # number of batch arguments -> traced objective
        #: the step's partitioning over ``mesh`` (fxla.train_mesh), or None: one device
        self._sharding = _step_sharding(model, mesh, shard, device, concrete_shapes)
        if self._sharding is None:
            self.device = CompiledModule(torch.nn.Identity(), device=device).device
            self._residency = Residency(self.device) if resident_platform(self.device) else None
        else:
            self.device = self._sharding.mesh.devices.flat[0]
            self._residency = MeshResidency()
        self._scalars: Dict[Tuple[Any, torch.dtype], Any] = {}    # (values, dtype) -> its device array
        self.pack_uploads = 0                                      # scalar packs placed on the device
        self._programs: Dict[Tuple, List[_Program]] = {}       # key -> its programs, the latest first
        self._inputs = InputBuffers(self.device)                   # the batch's device buffers, kept while unchanged
        self._micro = 0
        #: the gradient accumulators of this update's earlier micro-steps: name -> (its tensor, accumulator)
        self._accumulated: Optional[Dict[str, Tuple[torch.Tensor, Any]]] = None
        self.compiles = 0

    # -- compilation ---------------------------------------------------------------------------------------------
    def _objective(self, n: int):
        """The traced objective of ``n`` batch arguments, switched to the model's current mode (train()/eval():
        fxla.modes)."""
        from .compile import CompiledModule
        compiled = self._compiled_by_arity.get(n)
        if compiled is None:
            with spelled_as(COMPILE_STEP):              # (trace errors name fxla.compile_step's options)
                compiled = self._compiled_by_arity[n] = CompiledModule(_objective(self.model, self.loss_fn, n),
                                                                       **self._options)
        compiled._modes.watch()
        return compiled

    def _objective_program(self, compiled, batch):
        """The objective's program for ``batch`` (``compiled``: its compiled objective, routed: see _program)."""
        if compiled._per_shape is not None:
            compiled, batch = compiled._shaped(batch, {})
        pipeline = compiled._pipeline
        prepared = pipeline.prepare(compiled.graph_module, batch)
        return pipeline, prepared, pipeline.to_fxla(prepared)

    def _trainable(self, program) -> tuple:
        """The names of the parameters the step updates, the optimizer group of each, the other names of tied
        parameters (one tensor read under two names) -> the name the step uses, and when clipping the names of
        the other model parameters with a gradient (they count in ``clip_grad_norm_(model.parameters())``) and
        of the trained ones that are not the model's (they do not)."""
        groups = {id(p): g for g in self.optimizer.param_groups for p in g["params"]}
        names, group_of, first, tied, in_loss = [], {}, {}, {}, _in_loss(program)
        clip_only, unclipped = [], []
        model = {id(p) for p in self.model.parameters()} if self.max_grad_norm is not None else None
        for name in program.param_names:
            tensor = program.params[name]
            if id(tensor) in first:
                tied[name] = first[id(tensor)]
                continue
            first[id(tensor)] = name
            if not tensor.requires_grad or id(tensor) not in in_loss:
                continue
            if id(tensor) in groups:
                names.append(name)
                group_of[name] = groups[id(tensor)]
                if model is not None and id(tensor) not in model:
                    unclipped.append(name)
            elif model is not None and id(tensor) in model:
                clip_only.append(name)
        if not names:
            raise StepError("none of the optimizer's parameters that require grad is read by the loss\n"
                            "fix: build the optimizer from the model's parameters: optimizer = "
                            "torch.optim.AdamW(model.parameters())")
        refuse_shared_storage(program.params, names)
        return names, group_of, tied, clip_only, unclipped

    def _program(self, batch, update: bool) -> _Program:
        """The step program of this call: per what it depends on besides the weights' values: the batch's
        signature, update or micro-step, each group's rule (its flags), clipping, the model's mode (its modules'
        training flags: a step after ``model.eval()`` runs without dropout, with batch norm's running
        statistics), and for a concrete-shapes trace the number of the data-dependent variant this batch is (its
        value guards checked on this batch: fxla.per_shape.Variants), so a batch whose data decides otherwise (how
        many labels are set) never runs another variant's program; then which of its tensors require grad and
        which the optimizer's groups hold (:meth:`_Program.applies`)."""
        compiled = self._objective(len(batch))
        variant = None
        if compiled._per_shape is not None:
            module, _ = compiled._shaped(batch, {})
            variant = getattr(module, "variant", None)
        optimizer = self.optimizer
        key = (signature_key(batch), update, tuple(_rule(optimizer, g)[0] for g in optimizer.param_groups),
               self.max_grad_norm is not None, compiled._modes.mode, variant,
               compiled._history.restructured,      # (a trace that changed the structure: older programs are stale)
               compiled._modes.generation)          # (... or the hooks: fxla.modes.HookWatch)
        programs = self._programs.setdefault(key, [])
        for program in programs:
            if program.applies(optimizer):
                return program
        _refuse_backward_hooks(compiled)
        with COMPILING:
            # dynamic=: the step program refined from the polymorphic one of the batch's symbolic signature
            # (None batch arguments: the objective's trace with them fixed at None, fxla.none_inputs)
            routed, values = (compiled, batch) if compiled._per_shape is not None else compiled._routed(batch, {})
            found = _polymorphic_step(self, routed, values, update) if routed._dynamic is not None else None
            if found is not None:
                pipeline, prepared, objective = compiled._pipeline, found.prepared, found.objective
                program, (layout, group_of) = found.program, found.extra
            else:
                pipeline, prepared, objective = self._objective_program(routed, values)
                program, (layout, group_of) = _build(self, objective, update)
            stages = pipeline.lower_program(program, prepared, found.stablehlo if found is not None else None)
            sharding = self._sharding
            target = pipeline.layout(stages, self.device.platform, partitioned=sharding is not None)
            consumed = _consumed(layout, update)
            n_inputs = len(_leaves(batch)) + bool(objective.random)
            donate = _donated(layout, n_inputs, update, consumed) if isinstance(self._residency, Residency) else ()
            part = labels = None
            if sharding is not None:
                names = batch_names(self.loss_fn, len(batch))
                sharding.check_names(self.model, names)
                part, labels = sharding.partitioning(layout, names, batch, objective.random, update,
                                                     stages.stablehlo)
            executable = pipeline.compile(stages, target, self.device, donate=donate, partitioning=part,
                                          gradients=True)
            self.compiles += 1
            if self.device.platform == "cpu":       # (fxla.runtime.keep_host_memory: from now on, keep it)
                retain_after_compile()
            program = _Program(executable, layout, objective, group_of, consumed, stages.program.input_checks,
                               n_inputs, optimizer)
            program.labels = labels
            programs.insert(0, program)
            return program

    # -- a step --------------------------------------------------------------------------------------------------
    def __call__(self, *batch):
        update = self._micro == self.accumulation_steps - 1
        with torch.enable_grad():           # (a step computes gradients: traced for a caller with grad mode on)
            program = self._program(batch, update)
        layout = program.layout
        device = self.device
        leaves = list(batch) if all(map(is_array, batch)) else _leaves(batch)
        check_torch_call(type(self.model).__name__, leaves)    # (an ambient torch.autocast, forward-mode AD)
        if any(getattr(t, "requires_grad", False) for t in leaves):
            refuse_trained_inputs(self, batch, leaves)
        _clear_grads(program)
        if program.objective.random:    # dropout in training mode: a fresh seed per step (fxla.lowering.program)
            leaves.append(draw_seed())
        # (partitioned: the arguments are collected as they are and placed at once, below)
        to_device = _to_device if self._sharding is None else _unplaced
        put = self._inputs.put if self._sharding is None else _unplaced_input   # (unchanged inputs: kept buffers)
        args = [put(i, t) for i, t in enumerate(leaves)]
        resident = self._residency
        if resident is None:
            args += [to_device(t, device) for _, t, _ in program.slots]
        else:
            argument = resident.argument
            args += [argument(n, t) if consumed else to_device(t, device) for n, t, consumed in program.slots]
        check = None
        if program.checks:  # labels / token ids (or a buffer) used as indices: in range, as eager requires
            # (read from the torch tensors, numbered as the step's arguments; partitioned: when placed)
            values = leaves + [t for _, t, _ in program.slots] if program.checks_params else leaves
            check = functools.partial(_check_indices, type(self.model).__name__, program.checks, values)
            if self._sharding is None:
                check()
        states = []
        if update:
            if run_step_hooks(self.optimizer, "pre", program.updates) and \
                    not program.applies(self.optimizer):
                raise StepError("an optimizer pre-step hook changed which parameters are trained (their groups, "
                                "rules or requires_grad) after the step was chosen\nfix: change the optimizer's "
                                "groups before calling the step, not in a step pre-hook")
            optimizer_state = self.optimizer.state
            for n, tensor, rule, keeps, adam, _, _ in program.updates:
                state = optimizer_state[tensor] if keeps else {}
                if adam and "step" not in state:       # (eager's key order and dtype: step first, float64 when the
                    state["step"] = torch.tensor(0.0, dtype=torch_optimizer._get_scalar_dtype())   # default is)
                states.append(state)
                for s in rule.state:
                    value = state.get(s)
                    if value is None and adam and "exp_avg" in state:    # (amsgrad switched on mid-training)
                        raise missing_state(n, s)
                    if resident is not None:
                        args.append(resident.argument((n, s), value, like=tensor))
                    else:
                        args.append(to_device(value if value is not None else torch.zeros_like(tensor), device))
        if layout.accumulators:
            args += _accumulators(self, program)
        if update:
            args += _packs(self, program, states)
            if layout.clip:
                args.append(self._scalar(float(self.max_grad_norm),
                                         torch.float64 if layout.clip_dtype == "f64" else torch.float32))
        if self._sharding is not None:         # (the processes of a multi-process run compare them first)
            args = place_sharded(args, program.executable.in_shardings, program.executable.label, check=check,
                                 names=program.labels)
        results = program.executable(args, wait=True)
        value = self._write_back(results, program, states, update)
        if update:
            self.optimizer._opt_called = True      # (what a learning-rate scheduler checks: optimizer.step() ran)
            run_step_hooks(self.optimizer, "post")
        return value

    def _pack(self, values: tuple, dtype: torch.dtype):
        """The device array of the scalar pack ``values`` (Python floats) as ``dtype``: placed once per distinct
        content, at most :data:`MAX_SCALARS` kept (``pack_uploads`` counts the placements)."""
        return self._scalar(values, dtype, pack=True)

    def _scalar(self, value, dtype: torch.dtype, pack: bool = False):
        """The device scalar of a Python number ``value`` as ``dtype`` (the clipping norm), or of a tuple of them
        (``pack``: counted in ``pack_uploads``), placed once per value."""
        key = (value, dtype)
        found = self._scalars.get(key)
        if found is None:
            if len(self._scalars) >= MAX_SCALARS:
                self._scalars.clear()
            found = self._scalars[key] = self._host_scalar(value, dtype)
            self.pack_uploads += pack
        return found

    def _host_scalar(self, value, dtype: torch.dtype):
        """A scalar (pack) as the step takes it: on the device, or as a torch tensor placed with the partitioned
        step's other arguments."""
        t = torch.tensor(value, dtype=dtype)
        return t if self._sharding is not None else _to_device(t, self.device)

    def executable_for(self, *batch):
        """The compiled executable of the update step for ``batch``'s signature (compiled if needed; its
        ``hlo_text()`` is XLA's optimised HLO)."""
        return self._program(batch, True).executable

    def _write_back(self, results, program: _Program, states: List[dict], update: bool):
        layout, objective = program.layout, program.objective
        params = objective.params
        if program.converters is None:              # (per result position, resolved once: fxla.runtime.buffers)
            program.converters = [viewer(r) for r in results]
        n_out = layout.n_outputs
        # a failed value check (fxla.value_checks): the program returned every donated state as it was given,
        # which is stored back before raising, and nothing of the step counts
        failed = bool(layout.value_checks) and read_code(results[-1]) != 0
        outputs = [convert(r).clone() for convert, r in zip(program.converters, results[:n_out])]
        rest = zip(program.converters[n_out:], results[n_out:])
        resident = self._residency
        with torch.no_grad():
            for name in layout.changed_buffers:
                _store(resident, name, params[name], *next(rest))
            if not update:
                if not failed or layout.accumulators:     # (per parameter name: its tensor and accumulator)
                    self._accumulated = {n: (t, r) for n, t, (_, r) in
                                         zip(layout.differentiated, program.differentiated, rest)}
                self._micro += not failed
            else:
                for n, tensor, *_ in program.updates:
                    _store(resident, n, tensor, *next(rest))
                for (n, tensor, rule, _, adam, _, _), state in zip(program.updates, states):
                    for s in rule.state:
                        state[s] = _store(resident, (n, s), state.get(s), *next(rest), like=tensor)
                    if adam and not failed:
                        state["step"] += 1
                if not failed:
                    self._micro = 0
                    self._accumulated = None
        if failed:
            raise_failed(layout.value_checks, results[-1], type(self.model).__name__)
        values = iter(outputs)
        value = pytree.tree_unflatten([next(values) if s is None else s for s in objective.output_static],
                                      objective.output_spec)
        return value.output if isinstance(value, _MappingLoss) else value


def _accumulators(step: "TrainStep", program: _Program) -> List[Any]:
    """Per differentiated parameter, its accumulator from the earlier micro-steps, or zeros (eager's ``.grad``
    is this step's alone); a parameter accumulated that this program does not differentiate is refused."""
    held = step._accumulated or {}
    wanted = {id(t) for t in program.differentiated}
    lost = [n for n, (t, _) in held.items() if id(t) not in wanted]
    if lost:
        raise StepError(f"micro-step {step._micro + 1} of accumulation_steps={step.accumulation_steps} does not "
                        f"compute a gradient for {', '.join(_user(n) for n in lost[:4])}"
                        f"{' ...' if len(lost) > 4 else ''}, accumulated by the earlier micro-step(s)\nwhy: the "
                        f"parameters trained changed within one accumulation (requires_grad, the optimizer's "
                        f"groups, or which parameters the loss reads for this batch); eager would still "
                        f"update them from their .grad, which fxla.compile_step cannot\nfix: change which "
                        f"parameters are trained only after an update (every accumulation_steps calls)")
    by_tensor = {id(t): array for t, array in held.values()}
    zeros = owned_copy if isinstance(step._residency, Residency) else _to_device
    return [by_tensor[id(t)] if id(t) in by_tensor else zeros(torch.zeros_like(t), step.device)
            for t in program.differentiated]


def _packs(step: "TrainStep", program: _Program, states: List[dict]) -> List[Any]:
    """The scalar packs of an update (see :class:`~fxla.lowering.train_step.StepLayout`): each parameter's
    scalars, computed from its group's hyperparameters and its state as torch computes them, once per group
    and state key (:class:`_Scalars`); each pack is a device array kept per distinct content, so a step
    whose hyperparameters did not change (no scheduler step) places nothing, and a changed learning rate is
    a new pack: keyed by the values themselves, never stale."""
    memo: Dict[tuple, tuple] = {}
    packs: List[list] = [[] for _ in program.pack_dtypes]
    for (_, _, rule, _, _, scalars, pack), group, state in zip(program.updates, program.groups, states):
        if pack is None:
            continue
        # (a group decides its parameters' rule; groups are held by program.groups, so their ids stay theirs)
        half = program.pack_half[pack]
        key = (id(group), scalars.state_key(state), half)
        values = memo.get(key)
        if values is None:
            computed = scalars.values(group, state)
            values = memo[key] = tuple(_rounded(computed[s], half) if half and s in rule.rounded else computed[s]
                                       for s in rule.scalars)
        packs[pack] += values
    return [step._pack(tuple(values), dtype) for values, dtype in zip(packs, program.pack_dtypes)]


_INDEX_DTYPES = frozenset((torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8))


def _check_indices(name: str, checks, values) -> None:
    """Raise :class:`~fxla.lowering.index_bounds.IndexOutOfRangeError` where a checked tensor holds an index out of
    its range (one ``aminmax`` each when all are in range)."""
    if not _indices_in_range(checks, values):
        check_input_indices(name, checks, values)


def _indices_in_range(checks, values) -> bool:
    """Whether each checked tensor's values all lie in its check's ``[low, high)`` (one ``aminmax`` each): then
    :func:`~fxla.lowering.index_bounds.check_input_indices` passes (it also lets a loss's ``ignore_index``
    through); False sends it the call, to decide and name an offending value."""
    for check in checks:
        t = values[check.input]
        if type(t) is not torch.Tensor or t.dtype not in _INDEX_DTYPES or t.numel() == 0:
            return False
        t = check.part(t)
        if t.numel() == 0:
            return False
        low, high = torch.aminmax(t)
        if int(low) < check.low or int(high) >= check.high:
            return False
    return True


def _leaves(batch) -> List[Any]:
    return [t for t in pytree.tree_leaves(batch) if is_array(t)]


def _consumed(layout: StepLayout, update: bool) -> frozenset:
    """The parameters and buffers a step program takes and returns new values of (CPU: donated, see
    :mod:`fxla.api.residency`): the buffers it changes, and on an update the trainable parameters."""
    return frozenset(layout.changed_buffers) | (frozenset(layout.trainable) if update else frozenset())


def _donated(layout: StepLayout, n_inputs: int, update: bool, consumed: frozenset) -> Tuple[int, ...]:
    """The positions of a step program's arguments that a call consumes (CPU: :mod:`fxla.api.residency`): the
    ``consumed`` parameters and buffers (:func:`_consumed`), on an update the optimizer state, on a micro-step the
    gradient accumulators; ``n_inputs``: how many arguments come before the parameters (batch and seed)."""
    names = layout.frozen + layout.trainable
    donate = [n_inputs + i for i, n in enumerate(names) if n in consumed]
    position = n_inputs + len(names)
    if update:
        n_state = sum(len(layout.rules[n].state) for n in layout.trainable)
        donate += range(position, position + n_state)
        position += n_state
    if layout.accumulators and not update:      # (an update reads them and returns none: nothing to reuse)
        donate += range(position, position + len(layout.differentiated))
    return tuple(donate)


def _store(resident: Optional[Residency], slot, tensor: Optional[torch.Tensor], convert: Callable, result,
           like=None) -> torch.Tensor:
    """A step's new value of ``slot`` into its torch tensor (made when None: an optimizer state's first value):
    a view of the donated result on the CPU (:class:`Residency`), else a copy; ``convert``: the result
    position's converter to torch (:func:`fxla.runtime.buffers.viewer`)."""
    if resident is not None:
        return resident.update(slot, tensor, result, convert)
    if tensor is None:
        tensor = torch.empty_like(like)
    tensor.copy_(convert(result))
    return tensor


def _clear_grads(program: _Program) -> None:
    """Refuse gradient hooks on the parameters a step differentiates, and set their ``.grad`` to None (as
    ``optimizer.zero_grad()``): the step's gradients stay in the program, an earlier ``.grad`` would be stale."""
    for t in program.differentiated:
        if t._backward_hooks or t._post_accumulate_grad_hooks:
            name = next(n for n, u, _ in program.slots if u is t)
            raise StepError(f"the parameter {_user(name)} has a gradient hook (Tensor.register_hook or "
                            f"register_post_accumulate_grad_hook)\nwhy: fxla.compile_step computes and applies "
                            f"the gradients inside one compiled program, where a Python hook cannot run\nfix: "
                            f"remove the hook (freeze a parameter with requires_grad_(False); mask a gradient in "
                            f"loss_fn), or train this model with fxla.compile(model) and an eager optimizer")
        if t.grad is not None:
            t.grad = None


def _in_loss(program) -> set:
    """The ids of the parameters in the loss's history (its result 0): eager gives the others no gradient, None,
    and the optimizer leaves them as they are, weight decay included (one used only under no_grad, or in a
    comparison)."""
    histories, results = program.histories, program.layout.outputs
    return {id(program.params[n]) for n in program.param_names
            if histories is None or 0 in histories.reached(("param", n), results)}


def _build(step: TrainStep, objective, update: bool):
    """``(the step program of objective, (its StepLayout, the optimizer group of each trained parameter))``."""
    trainable, group_of, tied, clip_only, unclipped = step._trainable(objective)
    changed = [n for n in objective.mutated_params if tied.get(n, n) in trainable]
    if changed:
        raise StepError(f"forward changes the trained parameter(s) {', '.join(changed)} in place (e.g. clamping a "
                        f"weight)\nwhy: fxla.compile_step updates each parameter from its value before the step, so "
                        f"the change would be lost, where eager's optimizer updates the changed tensor\nfix: make the "
                        f"change in the training loop after step(), or train with fxla.compile(model) and the "
                        f"optimizer")
    rules = {n: _rule(step.optimizer, group_of[n])[0] for n in trainable} if update else None
    program, layout = build_step(objective, trainable, rules, accumulators=step.accumulation_steps > 1,
                                 clip=update and step.max_grad_norm is not None, tied=tied, clip_only=clip_only,
                                 unclipped=unclipped)
    return program, (layout, group_of)


def _polymorphic_step(step: TrainStep, compiled, batch, update: bool):
    """The step program for ``batch`` refined from the polymorphic step of its symbolic signature
    (:func:`fxla.symbolic_gradients.step_for`; made once per signature and per what the step depends on besides
    the batch's sizes: update or micro-step, the groups' rules, clipping, accumulation, which parameters are
    trained), or ``None`` where it is built for the batch's shapes alone."""
    optimizer = step.optimizer
    trained = tuple((id(p), p.requires_grad, i) for i, g in enumerate(optimizer.param_groups) for p in g["params"])
    if step.max_grad_norm is not None:      # (the model's other parameters with a gradient count in the norm)
        trained += tuple(p.requires_grad for p in step.model.parameters())
    key = (update, tuple(_rule(optimizer, g)[0] for g in optimizer.param_groups), step.max_grad_norm is not None,
           step.accumulation_steps > 1, trained)
    return step_for(compiled._dynamic, compiled, compiled.graph_module, batch, key,
                    lambda objective: _build(step, objective, update))


def compile_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, loss_fn: Callable, *,
                 max_grad_norm: Optional[float] = None, accumulation_steps: int = 1, device=None,
                 concrete_shapes: bool = False, mesh=None, shard: Optional[Dict[str, Any]] = None,
                 dynamic=None) -> TrainStep:
    """A training step of ``model`` with ``optimizer`` as one compiled program: ``step = fxla.compile_step(model,
    optimizer, loss_fn)``, then ``loss = step(*batch)`` per batch (see docs/training.md).

    ``loss_fn(model, *batch)`` computes the loss (a 0-d tensor, first of a tuple, a mapping's ``"loss"``), e.g.
    ``lambda m, x, y: F.cross_entropy(m(x), y)`` or ``lambda m, ids, labels: m(input_ids=ids, labels=labels).loss``.
    ``max_grad_norm``: clip the gradients' total 2-norm before the update, as ``clip_grad_norm_(model.parameters(),
    max_grad_norm)`` after ``model.zero_grad()`` and the backward (docs/training.md).  ``accumulation_steps``: sum the
    gradients of this many calls (micro-batches) and update on the last of them (divide the loss in ``loss_fn``
    to average, as with eager gradient accumulation).  ``concrete_shapes``: trace per input signature (Hugging Face
    models).  ``device``: as for :func:`fxla.compile`.  ``mesh`` / ``shard``: partition the step over a mesh (of
    this process's devices or, with :mod:`fxla.distributed`, several processes'): ``shard`` gives batch tensors
    (``"input:<i>"`` or the loss function's argument name) and parameters (by name: the parameter, its optimizer
    state and its new value) a spec per dimension, e.g. ``{"x": ("data", None)}`` for data parallelism or
    :func:`fxla.distributed.fsdp` for fully sharded parameters (:mod:`fxla.train_mesh`, docs/distributed.md).
    ``dynamic``: as :func:`fxla.compile`'s, naming the loss function's batch arguments (``{"ids": {1:
    fxla.Dim("seq")}}``, or ``True``): the step is traced, lowered and differentiated once for every size of the
    marked dims and refined per batch shape (docs/training.md, "Changing shapes"); not with ``mesh``.
    """
    return TrainStep(model, optimizer, loss_fn, max_grad_norm=max_grad_norm, accumulation_steps=accumulation_steps,
                     device=device, concrete_shapes=concrete_shapes, mesh=mesh, shard=shard, dynamic=dynamic)
