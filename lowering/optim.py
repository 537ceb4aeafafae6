"""Optimizer updates as fxla ops: the math of ``torch.optim.SGD``, ``Adam`` and ``AdamW`` (their single-tensor
CPU implementations, op for op), emitted into a training-step program (:mod:`fxla.lowering.train_step`).

An :class:`UpdateRule` names the per-parameter device state it keeps (``exp_avg``, ``momentum_buffer``: tensors
shaped like the parameter, as in ``optimizer.state[p]``) and the per-parameter *scalars* it reads (learning
rate, betas, bias corrections: computed on the host for every step, in double precision as torch computes them,
and passed as 0-d arguments, so a learning-rate scheduler changes them without a recompile).  The flags that
change the program's structure (``nesterov``, ``maximize``, ``amsgrad``, decoupled or no weight decay) are the
rule's fields: a change of one compiles a new step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple

from fxla.dialects.fxla import ops
from fxla.dialects.mlir import ir

__all__ = ["UpdateRule", "SGDRule", "AdamRule"]


@dataclass(frozen=True)
class UpdateRule:
    """One optimizer's update of one parameter (subclasses give ``state``, ``scalars`` and :meth:`emit`)."""

    state = ()            # names of the per-parameter state tensors, in argument order
    scalars = ()          # names of the per-parameter host scalars, in argument order

    def emit(self, ctx, param: ir.Value, grad: ir.Value, state: Dict[str, ir.Value],
             scalars: Dict[str, ir.Value]) -> Tuple[ir.Value, Dict[str, ir.Value]]:
        """The new parameter and new state values (fxla ops emitted through ``ctx``)."""
        raise NotImplementedError


def _add(ctx, a, b):
    return ctx.emit(ops.add, a, b)


def _mul(ctx, a, b):
    return ctx.emit(ops.mul, a, b)


@dataclass(frozen=True)
class SGDRule(UpdateRule):
    """``torch.optim.SGD``: ``g = ±grad (+ weight_decay * p)``; with momentum ``buf = a * buf + b * g`` (first
    step: ``a = 0, b = 1``, i.e. ``buf = g``; later ``a = momentum, b = 1 - dampening``), then ``g = buf`` or,
    nesterov, ``g + momentum * buf``; ``p - lr * g``."""

    momentum: bool = False
    weight_decay: bool = False
    nesterov: bool = False
    maximize: bool = False

    @property
    def state(self):
        return ("momentum_buffer",) if self.momentum else ()

    @property
    def scalars(self):
        return ("neg_lr",) + (("weight_decay",) if self.weight_decay else ()) + \
            (("buf_scale", "grad_scale", "momentum") if self.momentum else ())

    def emit(self, ctx, param, grad, state, scalars):
        g = ctx.emit(ops.neg, grad) if self.maximize else grad
        if self.weight_decay:
            g = _add(ctx, g, _mul(ctx, param, scalars["weight_decay"]))
        new_state = {}
        if self.momentum:
            buf = _add(ctx, _mul(ctx, state["momentum_buffer"], scalars["buf_scale"]),
                       _mul(ctx, g, scalars["grad_scale"]))
            new_state["momentum_buffer"] = buf
            g = _add(ctx, g, _mul(ctx, buf, scalars["momentum"])) if self.nesterov else buf
        return _add(ctx, param, _mul(ctx, g, scalars["neg_lr"])), new_state


@dataclass(frozen=True)
class AdamRule(UpdateRule):
    """``torch.optim.Adam`` / ``AdamW`` (``decoupled``): weight decay (``p * (1 - lr * wd)``, or ``g + wd * p``),
    ``exp_avg.lerp_(g, 1 - beta1)``, ``exp_avg_sq * beta2 + (1 - beta2) * g * g``, (amsgrad: the running
    maximum), ``denom = sqrt(v) / sqrt(bias_correction2) + eps``, ``p + (-lr / bias_correction1) * m / denom``."""

    weight_decay: bool = False
    decoupled: bool = False
    amsgrad: bool = False
    maximize: bool = False
    lerp_from_end: bool = False      # torch's lerp with weight >= 0.5 computes end - (end - self) * (1 - w)

    @property
    def state(self):
        return ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if self.amsgrad else ())

    @property
    def scalars(self):
        decay = (("decay_scale",) if self.decoupled else ("weight_decay",)) if self.weight_decay else ()
        return decay + ("lerp_weight", "beta2", "one_minus_beta2", "bias_correction2_sqrt", "eps", "neg_step_size")

    def emit(self, ctx, param, grad, state, scalars):
        g = ctx.emit(ops.neg, grad) if self.maximize else grad
        if self.weight_decay:
            if self.decoupled:
                param = _mul(ctx, param, scalars["decay_scale"])
            else:
                g = _add(ctx, g, _mul(ctx, param, scalars["weight_decay"]))
        m, v = state["exp_avg"], state["exp_avg_sq"]
        w = scalars["lerp_weight"]
        if self.lerp_from_end:       # end - (end - self) * (1 - w)
            one_minus_w = ctx.emit(ops.sub, ctx.tensor(1.0, like=w), w)
            m = ctx.emit(ops.sub, g, _mul(ctx, ctx.emit(ops.sub, g, m), one_minus_w))
        else:                        # self + w * (end - self)
            m = _add(ctx, m, _mul(ctx, w, ctx.emit(ops.sub, g, m)))
        v = _add(ctx, _mul(ctx, v, scalars["beta2"]), _mul(ctx, _mul(ctx, g, g), scalars["one_minus_beta2"]))
        new_state = {"exp_avg": m, "exp_avg_sq": v}
        second = v
        if self.amsgrad:
            second = new_state["max_exp_avg_sq"] = ctx.emit(ops.maximum, state["max_exp_avg_sq"], v)
        denom = _add(ctx, ctx.emit(ops.div, ctx.emit(ops.sqrt, second), scalars["bias_correction2_sqrt"]),
                     scalars["eps"])
        # addcdiv_: self + value * t1 / t2, in that order (torch's CPU kernel)
        return _add(ctx, param, ctx.emit(ops.div, _mul(ctx, scalars["neg_step_size"], m), denom)), new_state
