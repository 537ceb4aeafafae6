"""Elementwise arithmetic, comparisons, activations and dtype conversions."""
from __future__ import annotations

import operator
from functools import partial

import torch
import torch.nn.functional as F

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.types import UNSIGNED_TYPES, is_float
from fxla.dialects.mlir import ir

from fxla.frontend.autocast import autocast_cast

from ..dtypes import ELEM_TO_TORCH, elem_of
from ..emit import compute_elem
from ..registry import register, register_module
from ..value_checks import check_divisor


def _binary(ctx, input, other, *, opdef):
    # a Python scalar is materialised in the element type of the tensor next to it (torch's wrapped numbers)
    return ctx.emit(opdef, ctx.tensor(input, like=other), ctx.tensor(other, like=input))


def _opmath_scalar(ctx, input, other, *, opdef):
    """input * or / a Python number: for f16/bf16 tensors torch keeps the number in f32 (it is not rounded to
    the tensor's dtype first, unlike add/sub's) and rounds the f32 result once."""
    elem = ctx.result_sig.elem
    if opdef is ops.mul and not isinstance(input, ir.Value):
        input, other = other, input                     # 0.5 * x is x * 0.5
    if compute_elem(elem) != elem and isinstance(input, ir.Value) and isinstance(other, (int, float)) \
            and not isinstance(other, bool):
        x = ctx.convert(input, compute_elem(elem))
        return ctx.convert(ctx.emit(opdef, x, ctx.tensor(float(other), like=x)), elem)
    return _binary(ctx, input, other, opdef=opdef)


def _checked_alpha(ctx, alpha, elem: str):
    """alpha as torch uses it: refused where torch refuses it, then converted to the result dtype (an alpha that
    overflows it is refused, as torch does) and back to a Python number."""
    if isinstance(alpha, bool) and elem != "i1":
        raise ctx.error(f"alpha={alpha!r} with a {elem} result", "torch accepts a boolean alpha only for boolean "
                        "results ('Boolean alpha only supported for Boolean results')", "pass a number as alpha")
    if isinstance(alpha, float) and not is_float(elem):
        raise ctx.error(f"alpha={alpha!r} with a {elem} result", "torch refuses a floating-point alpha for integral "
                        "operands ('argument alpha must not be a floating point number')",
                        "pass an integer alpha, or convert the operands to a float dtype first")
    if not isinstance(alpha, (bool, int, float)):
        raise ctx.error(f"alpha={alpha!r} is not a Python number", "fxla folds alpha into the program as a constant",
                        "pass alpha as a bool, int or float")
    dtype = ELEM_TO_TORCH[elem]
    if elem != "i1":
        info = torch.finfo(dtype) if is_float(elem) else torch.iinfo(dtype)
        low = -info.max if elem in UNSIGNED_TYPES else info.min      # torch lets negatives wrap into unsigned
        if alpha == alpha and abs(alpha) != float("inf") and not low <= alpha <= info.max:
            raise ctx.error(f"alpha={alpha!r} does not fit the {elem} result", "torch converts alpha to the result "
                            "dtype and refuses one that overflows it", "use a smaller alpha or a wider dtype")
    return torch.tensor(alpha).to(dtype).item()


def _scaled(ctx, input, other, *, opdef, alpha=1, out=None):
    """input + alpha * other (or -): torch promotes both operands to the result dtype first, converts alpha to it,
    and computes ``input op alpha * other`` in the kernel's math type (f32 for f16/bf16), rounding once."""
    if out is not None:
        raise ctx.error("out= is not supported", "fxla programs are functional", "drop out= and use the result")
    if alpha == 1 and not isinstance(alpha, bool):
        return _binary(ctx, input, other, opdef=opdef)
    elem = ctx.result_sig.elem
    alpha = _checked_alpha(ctx, alpha, elem)
    if elem == "i1":                 # bool: input or (other and alpha)
        return _binary(ctx, input, other if alpha else False, opdef=opdef)
    # the tensor operand(s) in the result dtype first, then a Python number next to them takes that dtype too
    input, other = (ctx.convert(v, elem) if isinstance(v, ir.Value) else v for v in (input, other))
    like = input if isinstance(input, ir.Value) else other
    math = compute_elem(elem)
    a, b = (ctx.convert(ctx.tensor(v, like=like), math) for v in (input, other))
    scaled = ctx.emit(ops.mul, b, ctx.tensor(alpha, like=b))
    return ctx.convert(ctx.emit(opdef, a, scaled), elem)


def _rsub(ctx, input, other, *, alpha=1):
    return _scaled(ctx, other, input, opdef=ops.sub, alpha=alpha)


def _div(ctx, input, other, *, rounding_mode=None):
    if rounding_mode is None:
        return _opmath_scalar(ctx, input, other, opdef=ops.div)
    if rounding_mode == "floor":
        check_divisor(ctx, ctx.tensor(other, like=input), ctx.result_sig.elem)
        quotient = _binary(ctx, input, other, opdef=ops.floor_divide)
        # torch's div(rounding_mode='floor') has a zero gradient and keeps its history (the result requires grad):
        # floor of the (integral) quotient is the quotient, and floor's gradient is zero (a detach would drop the
        # history: requires_grad False, unlike eager)
        return ctx.emit(ops.floor, quotient) if is_float(ctx.sig(quotient).elem) else quotient
    if rounding_mode != "trunc":
        raise ctx.error(f"div with rounding_mode={rounding_mode!r} is unknown", "torch accepts None, 'trunc' and "
                        "'floor'", "use one of those")
    a, b = ctx.tensor(input, like=other), ctx.tensor(other, like=input)
    if is_float(ctx.result_sig.elem):
        return ctx.emit(ops.trunc, ctx.emit(ops.div, a, b))
    # integers: x - fmod(x, y) is an exact multiple of y, so floor division of it is the truncated quotient
    check_divisor(ctx, b, ctx.result_sig.elem)
    return ctx.emit(ops.floor_divide, ctx.emit(ops.sub, a, ctx.emit(ops.fmod, a, b)), b)


register(operator.add, operator.iadd, torch.add, torch.Tensor.add)(partial(_scaled, opdef=ops.add))
register(operator.sub, operator.isub, torch.sub, torch.Tensor.sub)(partial(_scaled, opdef=ops.sub))
register(torch.rsub)(_rsub)
register(operator.mul, operator.imul, torch.mul, torch.Tensor.mul)(partial(_opmath_scalar, opdef=ops.mul))
register(operator.truediv, operator.itruediv, torch.div, torch.true_divide, torch.Tensor.div,
         torch.Tensor.true_divide)(_div)

for _opdef, _keys in (
    (ops.maximum, (torch.maximum, torch.Tensor.maximum)),
    (ops.minimum, (torch.minimum, torch.Tensor.minimum)),
    (ops.pow, (operator.pow, torch.pow, torch.Tensor.pow)),
    (ops.eq, (operator.eq, torch.eq, torch.Tensor.eq)),
    (ops.ne, (operator.ne, torch.ne, torch.Tensor.ne)),
    (ops.lt, (operator.lt, torch.lt, torch.Tensor.lt)),
    (ops.le, (operator.le, torch.le, torch.Tensor.le)),
    (ops.gt, (operator.gt, torch.gt, torch.Tensor.gt)),
    (ops.ge, (operator.ge, torch.ge, torch.Tensor.ge)),
):
    register(*_keys)(partial(_binary, opdef=_opdef))


def _unary(ctx, input, *, opdef):
    return ctx.emit(opdef, ctx.tensor(input))


def _relu(ctx, input, inplace=False):
    return ctx.emit(ops.relu, input)


for _opdef, _keys, _module in (
    (ops.neg, (operator.neg, torch.neg, torch.Tensor.neg), None),
    (ops.abs, (operator.abs, torch.abs, torch.Tensor.abs), None),
    (ops.exp, (torch.exp, torch.Tensor.exp), None),
    (ops.log, (torch.log, torch.Tensor.log), None),
    (ops.sqrt, (torch.sqrt, torch.Tensor.sqrt), None),
    (ops.rsqrt, (torch.rsqrt, torch.Tensor.rsqrt), None),
    (ops.tanh, (torch.tanh, F.tanh, torch.Tensor.tanh), torch.nn.Tanh),
    (ops.sigmoid, (torch.sigmoid, F.sigmoid, torch.Tensor.sigmoid), torch.nn.Sigmoid),
):
    register(*_keys)(partial(_unary, opdef=_opdef))
    if _module is not None:
        register_module(_module, _keys[0])

register(torch.relu, F.relu, torch.Tensor.relu)(_relu)
register_module(torch.nn.ReLU, F.relu)


@register(F.gelu)
def _gelu(ctx, input, approximate="none"):
    return ctx.emit(ops.gelu, input, approximate=approximate)


register_module(torch.nn.GELU, F.gelu, attrs=("approximate",))


def _convert(ctx, input, dtype=None):
    if ctx.sig(input) == ctx.result_sig:
        return input
    return ctx.emit(ops.convert, input, result_type=ctx.result_type)


@register(torch.Tensor.type_as)
def _type_as(ctx, input, other):
    if ctx.sig(input).elem == ctx.result_sig.elem:
        return input
    return ctx.emit(ops.convert, input, result_type=ctx.result_type)


@register(torch.Tensor.to, torch.Tensor.type)
def _to(ctx, input, *args, **kwargs):
    dtype = kwargs.pop("dtype", None)
    for a in args:
        if isinstance(a, torch.dtype):
            dtype = a
        elif not isinstance(a, (str, torch.device)) or (isinstance(a, str) and a != "cpu"):
            raise ctx.error(f"Tensor.to({a!r}) is not supported", "fxla places tensors itself and converts "
                            "only element types", "use .to(dtype) inside the model; choose the device with "
                            "fxla.compile(..., device=...)")
    kwargs.pop("non_blocking", None), kwargs.pop("copy", None), kwargs.pop("device", None)
    if kwargs:
        raise ctx.error(f"Tensor.to(**{kwargs}) is not supported", "unknown keyword arguments", "drop them")
    return input if dtype is None else _convert(ctx, input, dtype)


def _convert_method(ctx, input, memory_format=None, *, dtype):
    return _convert(ctx, input, dtype)


for _method, _dtype in ((torch.Tensor.float, torch.float32), (torch.Tensor.half, torch.float16),
                        (torch.Tensor.bfloat16, torch.bfloat16), (torch.Tensor.double, torch.float64),
                        (torch.Tensor.long, torch.int64), (torch.Tensor.int, torch.int32),
                        (torch.Tensor.bool, torch.bool)):
    register(_method)(partial(_convert_method, dtype=_dtype))


# -- the casts torch.autocast makes, recorded by the tracer in autocast regions (fxla.frontend.autocast) ----------
@register(autocast_cast.__wrapped__)
def _autocast_cast(ctx, x, dtype):
    if not isinstance(x, ir.Value) or not is_float(ctx.sig(x).elem):
        return x                                   # (autocast casts floating-point tensors only)
    return ctx.convert(x, elem_of(dtype))
