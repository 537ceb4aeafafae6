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
``AdamW`` (amsgrad, weight decay, maximize); anything else raises :class:`StepError`.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch.utils import _pytree as pytree

from fxla.base.shown import abbreviate
from fxla.errors import FxlaError
from fxla.frontend.remedies import COMPILE_STEP, spelled_as
from fxla.lowering.optim import AdamRule, SGDRule, UpdateRule
from fxla.lowering.index_bounds import check_input_indices
from fxla.lowering.program import draw_seed
from fxla.lowering.train_step import StepLayout, build_step
from fxla.runtime import from_device, to_device
from fxla.runtime.buffers import is_array, owned_copy

from .pipeline import COMPILING
from .residency import Residency, resident_platform
from .signature import signature_key

__all__ = ["StepError", "TrainStep", "compile_step"]


class StepError(FxlaError):
    """``fxla.compile_step`` got an optimizer, option or model it does not support."""


class _Objective(torch.nn.Module):
    """The loss as a module: ``forward(*batch) = loss_fn(model, *batch)`` (its parameters are the model's, under
    ``model.``).  Traced graphs have a fixed number of inputs: :func:`_objective` makes the class of one arity."""

    def __init__(self, model: torch.nn.Module, loss_fn: Callable):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn

    def forward(self, *batch):
        return self.loss_fn(self.model, *batch)


def _objective(model, loss_fn, n: int) -> _Objective:
    """An :class:`_Objective` whose ``forward`` takes exactly ``n`` batch arguments (named after ``loss_fn``'s
    parameters when it names them)."""
    params = list(inspect.signature(loss_fn).parameters.values())[1:]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][:n]
    names += [f"batch{i}" for i in range(len(names), n)]

    def forward(self, *batch, **named):
        return self.loss_fn(self.model, *batch, *[named[name] for name in names[len(batch):]])
    forward.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)] +
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names])
    cls = type("Objective", (_Objective,), {"forward": forward})
    return cls(model, loss_fn)


#: how many distinct optimizer scalars a compiled step keeps on the device (see ``TrainStep._scalar``)
MAX_SCALARS = 256


def _rule(optimizer, group) -> Tuple[UpdateRule, Callable]:
    """The update rule of a parameter of ``group`` and the function giving its per-step scalars."""
    if group.get("differentiable") or group.get("capturable") or group.get("fused"):
        raise StepError(f"{type(optimizer).__name__} with differentiable/capturable/fused=True is not supported by "
                        f"fxla.compile_step\nfix: create the optimizer with those options left at False")
    if isinstance(optimizer, torch.optim.SGD):
        rule = SGDRule(momentum=group["momentum"] != 0, weight_decay=group["weight_decay"] != 0,
                       nesterov=bool(group["nesterov"]), maximize=bool(group["maximize"]))
        return rule, _sgd_scalars
    if isinstance(optimizer, torch.optim.Adam):      # (AdamW is an Adam with decoupled weight decay)
        decoupled = bool(group.get("decoupled_weight_decay", isinstance(optimizer, torch.optim.AdamW)))
        beta1 = float(group["betas"][0])
        rule = AdamRule(weight_decay=group["weight_decay"] != 0, decoupled=decoupled, amsgrad=bool(group["amsgrad"]),
                        maximize=bool(group["maximize"]), lerp_from_end=(1 - beta1) >= 0.5)
        return rule, _adam_scalars
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


def _adam_scalars(group, state) -> Dict[str, float]:
    step = float(state["step"]) + 1 if "step" in state else 1.0
    beta1, beta2 = (float(b) for b in group["betas"])
    lr, wd = float(group["lr"]), float(group["weight_decay"])
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    return {"decay_scale": 1 - lr * wd, "weight_decay": wd, "lerp_weight": 1 - beta1, "beta2": beta2,
            "one_minus_beta2": 1 - beta2, "bias_correction2_sqrt": bias_correction2 ** 0.5, "eps": float(group["eps"]),
            "neg_step_size": -(lr / bias_correction1)}


class TrainStep:
    """A compiled training step (see the module docstring); ``step(*batch)`` returns what ``loss_fn`` returns
    (detached)."""

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, loss_fn: Callable, *,
                 max_grad_norm: Optional[float] = None, accumulation_steps: int = 1, device=None,
                 concrete_shapes: bool = False):
        from .compile import CompiledModule
        if not isinstance(model, torch.nn.Module):
            raise StepError(f"fxla.compile_step expects the nn.Module to train, got {type(model).__name__}\n"
                            f"fix: fxla.compile_step(model, optimizer, loss_fn)")
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise StepError(f"fxla.compile_step expects a torch.optim optimizer, got {type(optimizer).__name__}\n"
                            f"fix: fxla.compile_step(model, torch.optim.AdamW(model.parameters()), loss_fn)")
        if not isinstance(accumulation_steps, int) or accumulation_steps < 1:
            raise StepError(f"accumulation_steps={abbreviate(accumulation_steps)}: it must be a positive int\n"
                            f"fix: pass how many micro-batches to sum gradients over before each update")
        for group in optimizer.param_groups:
            _rule(optimizer, group)                       # (refuses what is not supported, now)
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.max_grad_norm = max_grad_norm
        self.accumulation_steps = accumulation_steps
        self._options = dict(device=device, concrete_shapes=concrete_shapes)
        self._compiled_by_arity: Dict[int, Any] = {}      # number of batch arguments -> traced objective
        self.device = CompiledModule(torch.nn.Identity(), device=device).device
        self._residency = Residency(self.device) if resident_platform(self.device) else None
        self._scalars: Dict[Tuple[Any, torch.dtype], Any] = {}    # (value, dtype) -> its device scalar
        self._programs: Dict[Tuple, Tuple[Any, StepLayout, Any, Dict, frozenset]] = {}
        self._micro = 0
        self._accumulated: Optional[List[Any]] = None
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

    def _objective_program(self, batch):
        compiled = self._objective(len(batch))
        if compiled._per_shape is not None:
            compiled, batch = compiled._per_shape.module_for(batch, {})
        pipeline = compiled._pipeline
        prepared = pipeline.prepare(compiled.graph_module, batch)
        return pipeline, prepared, pipeline.to_fxla(prepared)

    def _trainable(self, program) -> Tuple[List[str], Dict[str, dict], Dict[str, str]]:
        """The names of the parameters the step updates, the optimizer group of each, and the other names of
        tied parameters (one tensor read under two names) -> the name the step uses."""
        groups = {id(p): g for g in self.optimizer.param_groups for p in g["params"]}
        names, group_of, first, tied = [], {}, {}, {}
        for name in program.param_names:
            tensor = program.params[name]
            if id(tensor) in first:
                tied[name] = first[id(tensor)]
                continue
            first[id(tensor)] = name
            if id(tensor) in groups and tensor.requires_grad:
                names.append(name)
                group_of[name] = groups[id(tensor)]
        if not names:
            raise StepError("none of the optimizer's parameters that require grad is read by the loss\n"
                            "fix: build the optimizer from the model's parameters: optimizer = "
                            "torch.optim.AdamW(model.parameters())")
        return names, group_of, tied

    def _key(self, batch, update: bool) -> Tuple:
        """What a step program depends on besides the weights' values: the batch's signature, update or
        micro-step, each group's rule (its flags), which parameters require grad and the model's mode (its
        modules' training flags: a step after ``model.eval()`` runs without dropout, with batch norm's running
        statistics)."""
        mode = self._objective(len(batch))._modes.mode
        return (signature_key(batch), update, tuple(_rule(self.optimizer, g)[0] for g in self.optimizer.param_groups),
                tuple(p.requires_grad for p in self.model.parameters()), self.max_grad_norm is not None, mode)

    def _variant(self, batch) -> Optional[int]:
        """The number of the data-dependent variant this batch's concrete-shapes trace is (its value guards
        checked on this batch: fxla.per_shape.Variants), or None: a step program is compiled per variant, so a
        batch whose data decides otherwise (how many labels are set) never runs another variant's program."""
        compiled = self._objective(len(batch))
        if compiled._per_shape is None:
            return None
        module, _ = compiled._per_shape.module_for(batch, {})
        return getattr(module, "variant", None)

    def _program(self, batch, update: bool):
        key = self._key(batch, update) + (self._variant(batch),)
        found = self._programs.get(key)
        if found is not None:
            return found
        with COMPILING:
            pipeline, prepared, objective = self._objective_program(batch)
            trainable, group_of, tied = self._trainable(objective)
            rules = {n: _rule(self.optimizer, group_of[n])[0] for n in trainable} if update else None
            program, layout = build_step(objective, trainable, rules, accumulators=self.accumulation_steps > 1,
                                         clip=update and self.max_grad_norm is not None, tied=tied)
            stages = pipeline.lower_program(program, prepared)
            target = pipeline.layout(stages, self.device.platform)
            consumed = _consumed(layout, update)
            donate = _donated(layout, len(_leaves(batch)) + bool(objective.random), update, consumed) \
                if self._residency is not None else ()
            executable = pipeline.compile(stages, target, self.device, donate=donate)
            self.compiles += 1
            found = self._programs[key] = (executable, layout, objective, group_of, consumed,
                                           stages.program.input_checks)
            return found

    # -- a step --------------------------------------------------------------------------------------------------
    def __call__(self, *batch):
        update = self._micro == self.accumulation_steps - 1
        executable, layout, objective, group_of, consumed, checks = self._program(batch, update)
        params = objective.params
        device = self.device
        leaves = _leaves(batch)
        if objective.random:             # dropout in training mode: a fresh seed per step (fxla.lowering.program)
            leaves.append(draw_seed())
        args = [to_device(t, device) for t in leaves]
        resident = self._residency
        if resident is None:
            args += [to_device(params[n], device) for n in layout.frozen + layout.trainable]
        else:
            args += [resident.argument(n, params[n]) if n in consumed else to_device(params[n], device)
                     for n in layout.frozen + layout.trainable]
        if checks:          # labels / token ids (or a buffer) used as indices: in range, as eager requires
            check_input_indices(type(self.model).__name__, checks, args)     # (numbers of the step's arguments)
        states = {}
        if update:
            self._hooks("pre")
            for n in layout.trainable:
                tensor = params[n]
                # (eager SGD without momentum keeps no state for a parameter: neither does this)
                keeps = bool(layout.rules[n].state) or isinstance(layout.rules[n], AdamRule)
                state = states[n] = self.optimizer.state[tensor] if keeps else {}
                if isinstance(layout.rules[n], AdamRule) and "step" not in state:
                    state["step"] = torch.tensor(0.0, dtype=torch.float32)     # (eager's key order: step first)
                for s in layout.rules[n].state:
                    value = state.get(s)
                    if resident is not None:
                        args.append(resident.argument((n, s), value, like=tensor))
                    else:
                        args.append(to_device(value if value is not None else torch.zeros_like(tensor), device))
        if layout.accumulators:
            if self._accumulated is None:
                zeros = owned_copy if resident is not None else to_device
                self._accumulated = [zeros(torch.zeros_like(params[n]), device) for n in layout.trainable]
            args += self._accumulated
        if update:
            for n in layout.trainable:
                scalars_of = _rule(self.optimizer, group_of[n])[1]
                values = scalars_of(group_of[n], states[n])
                dtype = params[n].dtype
                args += [self._scalar(values[s], dtype) for s in layout.rules[n].scalars]
            if layout.clip:
                args.append(self._scalar(float(self.max_grad_norm), torch.float32))
        results = executable(args, wait=True)
        value = self._write_back(results, layout, objective, states, update)
        if update:
            self.optimizer._opt_called = True      # (what a learning-rate scheduler checks: optimizer.step() ran)
            self._hooks("post")
        return value

    def _scalar(self, value, dtype: torch.dtype):
        """The device scalar of an optimizer hyperparameter ``value`` (a Python number) as ``dtype``: uploaded once
        per distinct value (a step's learning rate, momentum ... repeat across parameters and steps; a schedule's
        new rate is a new value), at most :data:`MAX_SCALARS` kept."""
        if type(value) not in (float, int, bool):            # (a tensor: uploaded as it is now)
            return to_device(torch.tensor(value, dtype=dtype), self.device)
        found = self._scalars.get((value, dtype))
        if found is None:
            if len(self._scalars) >= MAX_SCALARS:
                self._scalars.clear()
            found = self._scalars[value, dtype] = to_device(torch.tensor(value, dtype=dtype), self.device)
        return found

    def _hooks(self, when: str) -> None:
        """The optimizer's step hooks (global ones first), as ``optimizer.step()`` runs them; a pre-hook may not
        change the arguments (there are none)."""
        from torch.optim import optimizer as torch_optimizer
        hooks = (list(getattr(torch_optimizer, f"_global_optimizer_{when}_hooks").values()) +
                 list(getattr(self.optimizer, f"_optimizer_step_{when}_hooks").values()))
        for hook in hooks:
            hook(self.optimizer, (), {})

    def _write_back(self, results, layout: StepLayout, objective, states, update: bool):
        params = objective.params
        n_out = layout.n_outputs
        outputs = [from_device(r).clone() for r in results[:n_out]]
        rest = iter(results[n_out:])
        resident = self._residency
        with torch.no_grad():
            for name in layout.changed_buffers:
                _store(resident, name, params[name], next(rest))
            if not update:
                self._accumulated = [next(rest) for _ in layout.trainable]
                self._micro += 1
            else:
                for n in layout.trainable:
                    _store(resident, n, params[n], next(rest))
                for n in layout.trainable:
                    state, tensor = states[n], params[n]
                    for s in layout.rules[n].state:
                        state[s] = _store(resident, (n, s), state.get(s), next(rest), like=tensor)
                    if isinstance(layout.rules[n], AdamRule):
                        state["step"] += 1
                self._micro = 0
                self._accumulated = None
        values = iter(outputs)
        return pytree.tree_unflatten([next(values) if s is None else s for s in objective.output_static],
                                     objective.output_spec)


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
        donate += range(position, position + len(layout.trainable))
    return tuple(donate)


def _store(resident: Optional[Residency], slot, tensor: Optional[torch.Tensor], result, like=None) -> torch.Tensor:
    """A step's new value of ``slot`` into its torch tensor (made when None: an optimizer state's first value):
    a view of the donated result on the CPU (:class:`Residency`), else a copy."""
    if resident is not None:
        return resident.update(slot, tensor, result)
    if tensor is None:
        tensor = torch.empty_like(like)
    tensor.copy_(from_device(result))
    return tensor


def compile_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, loss_fn: Callable, *,
                 max_grad_norm: Optional[float] = None, accumulation_steps: int = 1, device=None,
                 concrete_shapes: bool = False) -> TrainStep:
    """A training step of ``model`` with ``optimizer`` as one compiled program: ``step = fxla.compile_step(model,
    optimizer, loss_fn)``, then ``loss = step(*batch)`` per batch (see docs/training.md).

    ``loss_fn(model, *batch)`` computes the loss (a 0-d tensor, first if it returns a tuple), e.g.
    ``lambda m, x, y: F.cross_entropy(m(x), y)`` or ``lambda m, ids, labels: m(input_ids=ids, labels=labels).loss``.
    ``max_grad_norm``: clip the gradients' total 2-norm before the update, as
    ``torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)``.  ``accumulation_steps``: sum the
    gradients of this many calls (micro-batches) and update on the last of them (divide the loss in ``loss_fn``
    to average, as with eager gradient accumulation).  ``concrete_shapes``: trace per input signature (Hugging Face
    models).  ``device``: as for :func:`fxla.compile`.
    """
    return TrainStep(model, optimizer, loss_fn, max_grad_norm=max_grad_norm, accumulation_steps=accumulation_steps,
                     device=device, concrete_shapes=concrete_shapes)
