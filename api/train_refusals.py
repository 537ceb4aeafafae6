"""What ``fxla.compile_step`` refuses rather than train differently from eager PyTorch: optimizer subclasses that
override the update, distinct parameters sharing memory, a batch argument that requires grad (a trained parameter
or not), an optimizer pre-step hook that changes the trained parameters (each a :class:`StepError` with why and
fix; :mod:`fxla.train_step` has the others, next to what they guard)."""
from __future__ import annotations

import inspect
from typing import Dict, List, Sequence

import torch
from torch.optim import optimizer as torch_optimizer

from fxla.errors import FxlaError

from .higher_order import stamp
from .train_mesh import _user_name as _user
from .weights import _data_mark
from .write_back import shares_memory

__all__ = ["StepError", "check_optimizer_class", "refuse_shared_storage", "refuse_trained_inputs", "batch_names",
           "run_step_hooks", "missing_state"]


class StepError(FxlaError):
    """``fxla.compile_step`` got an optimizer, option or model it does not support."""


def batch_names(loss_fn, n: int) -> List[str]:
    """The names of ``n`` batch arguments: ``loss_fn``'s parameters after the model, where it names them."""
    params = list(inspect.signature(loss_fn).parameters.values())[1:]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][:n]
    return names + [f"batch{i}" for i in range(len(names), n)]


_BASES = (torch.optim.AdamW, torch.optim.Adam, torch.optim.SGD)


def check_optimizer_class(optimizer) -> None:
    """Refuse a subclass of SGD/Adam/AdamW that overrides ``step`` or ``_init_group`` (the step is the base's)."""
    base = next((b for b in _BASES if isinstance(optimizer, b)), None)
    if base is None:
        return                                            # (_rule refuses it)
    for name in ("step", "_init_group"):
        own, base_method = getattr(type(optimizer), name, None), getattr(base, name, None)    # (torch wraps a
        if own is not None and inspect.unwrap(own) is not inspect.unwrap(base_method):     # class's step once)
            raise StepError(f"{type(optimizer).__name__} overrides torch.optim.{base.__name__}.{name}()\n"
                            f"why: fxla.compile_step compiles {base.__name__}'s update itself, so the override "
                            f"would never run\nfix: use torch.optim.{base.__name__} itself (its options and "
                            f"param_groups work), or train with fxla.compile(model) and this optimizer's eager "
                            f"step()")


def refuse_shared_storage(params: Dict[str, torch.Tensor], trainable: List[str]) -> None:
    """Refuse a trained parameter whose memory another parameter or buffer (a distinct tensor) overlaps
    (``out.weight.data = emb.weight.data``): eager updates the memory once per parameter, in turn."""
    spans: Dict[int, Dict[int, tuple]] = {}      # storage -> id(tensor) -> (name, tensor)
    for name, t in params.items():
        if t.numel():
            spans.setdefault(t.untyped_storage().data_ptr(), {}).setdefault(id(t), (name, t))
    for held in spans.values():
        held = list(held.values())
        for i, (a, ta) in enumerate(held):
            for b, tb in held[i + 1:]:      # (element by element: interleaved views, flat[0::2] and [1::2], do not)
                if (a in trainable or b in trainable) and shares_memory(ta, tb):
                    raise StepError(f"the parameters {_user(a)} and {_user(b)} are distinct tensors sharing memory "
                                    f"(tied through .data), and one of them is trained\nwhy: eager's optimizer "
                                    f"updates the shared memory once per parameter, in turn; fxla.compile_step "
                                    f"computes every update from the values before the step\nfix: tie them as one "
                                    f"Parameter (model.out.weight = model.emb.weight), or freeze one of them")


def refuse_trained_inputs(step, batch, leaves) -> None:
    """Refuse a batch tensor that requires grad: one the optimizer trains (``step(x, y, temperature)``) would
    never be updated; any other (adversarial training's ``x.requires_grad_()``, an output of another model not
    detached) would get no gradient, where eager's ``backward()`` fills ``x.grad`` or reaches what made it."""
    trained = {id(p) for g in step.optimizer.param_groups for p in g["params"]}
    names = batch_names(step.loss_fn, len(batch))
    for t in leaves:
        if not getattr(t, "requires_grad", False):
            continue
        where = next((f"batch argument {n!r}" for n, b in zip(names, batch) if b is t), "a batch argument")
        if id(t) in trained:
            raise StepError(f"{where} is a parameter of the optimizer (shape {tuple(t.shape)})\nwhy: "
                            f"fxla.compile_step updates the parameters it reads from the model or loss_fn's "
                            f"closure, never a batch input\nfix: make it a model attribute (model.t = "
                            f"nn.Parameter(...)) or read it from loss_fn's closure, not from step()'s arguments")
        raise StepError(f"{where} requires grad (shape {tuple(t.shape)})\nwhy: fxla.compile_step differentiates "
                        f"the loss with respect to the optimizer's parameters only, so the input would get no "
                        f".grad (and whatever made it no gradient), where eager's backward() gives them one\nfix: "
                        f"pass it detached (x.detach()) when its gradient is not wanted; for an input gradient "
                        f"(adversarial training) compute it with fxla.compile(model) and torch.autograd.grad, "
                        f"then call the step")


def missing_state(name: str, key: str) -> StepError:
    """The error for an Adam state without ``key`` after it has stepped (``amsgrad`` switched on mid-training):
    eager's ``step()`` raises ``KeyError`` there."""
    return StepError(f"the optimizer state of {_user(name)} has no {key!r} although it has stepped before (amsgrad "
                     f"switched on after training started?)\nwhy: eager's Adam makes its state once, at a "
                     f"parameter's first step, and raises KeyError: {key!r} here; fxla.compile_step does not start it "
                     f"from zeros instead\nfix: set amsgrad when the optimizer is made, or add the state yourself "
                     f"(optimizer.state[p][{key!r}] = torch.zeros_like(p))")


def run_step_hooks(optimizer, when: str, trained: Sequence[tuple] = ()) -> bool:
    """Run the optimizer's step hooks ``when`` (``"pre"`` or ``"post"``; global ones first), as
    ``optimizer.step()`` runs them (with no arguments: a hook may not change them); whether there were any.  A
    pre-hook that changes a ``trained`` tensor (tuples starting ``(name, tensor)``: in place, through ``.data`` or
    by rebinding it) is refused: eager's ``backward()`` ran before it, so its update applies the gradient of the
    weights as they were to the changed ones, while the step's one program computes both from the same values."""
    global_hooks = getattr(torch_optimizer, f"_global_optimizer_{when}_hooks")
    own_hooks = getattr(optimizer, f"_optimizer_step_{when}_hooks")
    if not global_hooks and not own_hooks:
        return False
    marks = [(stamp(t), _data_mark(t)) for _, t, *_ in trained]
    for hook in list(global_hooks.values()) + list(own_hooks.values()):
        hook(optimizer, (), {})
    changed = [n for (n, t, *_), mark in zip(trained, marks) if (stamp(t), _data_mark(t)) != mark]
    if changed:
        raise StepError(f"an optimizer pre-step hook changed the trained parameter {_user(changed[0])}"
                        f"{f' (and {len(changed) - 1} more)' if len(changed) > 1 else ''}\nwhy: eager computes "
                        f"the gradient before optimizer.step() runs the hook and updates the changed weights with "
                        f"it; fxla.compile_step computes the gradient and the update in one program, from the "
                        f"weights as they are before the step\nfix: change the weights before calling the step "
                        f"(or in a post-step hook), not in a pre-step hook")
    return True
