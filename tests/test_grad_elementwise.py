"""Gradients of the ``elementwise`` family's VJP rules (lowering/autodiff/elementwise.py) against torch.autograd,
at the points where torch picks a convention (ties, kinks, clamp boundaries, ``pow`` at 0, NaN), under
broadcasting and type promotion (f16/bf16/f32/f64, integer operands, Python scalars), and in half precision.
``tests/test_grad_ops.py`` covers the ops' ordinary cases; the harness is tests/grad_support.py."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from grad_support import check_grad

F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
NAN = float("nan")


def _t(*values, dtype=F32):
    return torch.tensor(values, dtype=dtype)


def _randn(*shape, dtype=F32, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _traceable(fn, arity):
    """``fn`` as a Python function of ``arity`` named parameters (fxla.compile traces a fixed signature, which
    builtins like torch.add do not have)."""
    return {1: lambda a: fn(a), 2: lambda a, b: fn(a, b), 3: lambda a, b, c: fn(a, b, c)}[arity]


def _check(fn, *inputs, tol=1.0):
    assert check_grad(_traceable(fn, len(inputs)), inputs, tol=tol), "nothing was differentiated"


# -- ties, kinks and NaN: torch's conventions -----------------------------------------------------------------------
TIES_A = _t(1.0, 2.0, 3.0, 2.0, -0.0, NAN, 5.0, NAN)
TIES_B = _t(1.0, 3.0, 2.0, 2.0, 0.0, 1.0, NAN, NAN)


@pytest.mark.parametrize("op", [torch.maximum, torch.minimum, torch.max, torch.min], ids=lambda f: f.__name__)
def test_maximum_minimum_ties_split_in_halves(op):
    # a tie gives each operand half the gradient (-0.0 == 0.0 ties too); NaN ties nothing: both get all of it
    _check(op, TIES_A, TIES_B)


@pytest.mark.parametrize("op", [torch.maximum, torch.minimum], ids=lambda f: f.__name__)
def test_maximum_minimum_broadcast_ties(op):
    x = torch.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])
    _check(op, x, _t(1.0, 1.0, 1.0).reshape(1, 3))          # ties spread over a broadcast operand, then summed
    _check(op, x, _t(1.0).reshape(()))


def test_maximum_with_constant_and_promotion():
    _check(lambda x: torch.maximum(x, torch.tensor(1.0)), _t(0.5, 1.0, 2.0))
    _check(lambda x, y: torch.maximum(x, y), _t(1.0, 2.0, 3.0, dtype=F16), _t(1.0, 3.0, 2.0))
    _check(lambda x, y: torch.minimum(x, y), _t(1.0, 2.0, 3.0), torch.tensor([1, 3, 2], dtype=torch.int32))


@pytest.mark.parametrize("op", [torch.relu, torch.abs, F.leaky_relu, F.elu, F.hardswish, F.hardsigmoid, F.relu6,
                                F.hardtanh],
                         ids=["relu", "abs", "leaky_relu", "elu", "hardswish", "hardsigmoid", "relu6", "hardtanh"])
def test_kinks(op):
    # relu/leaky_relu/elu at 0, abs at 0 and -0.0 (sign(0) = 0), hardswish/hardsigmoid at +-3, NaN
    _check(op, _t(-4.0, -3.0, -1.0, -0.0, 0.0, 1.0, 3.0, 4.0, 6.0, NAN))


def test_activation_parameters():
    x = _t(-4.0, -3.0, -1.0, -0.0, 0.0, 0.5, 3.0, 4.0, NAN)
    _check(lambda v: F.leaky_relu(v, 0.3), x)
    _check(lambda v: F.elu(v, alpha=2.0), x)
    # softplus: linear where beta * x > threshold (at the threshold itself: the smooth branch)
    _check(lambda v: F.softplus(v, beta=0.5, threshold=2.0), _t(-30.0, -1.0, 0.0, 3.9, 4.0, 4.1, 40.0))
    _check(lambda v: F.softplus(v, beta=2.0, threshold=20.0), _t(-30.0, -1.0, 0.0, 9.5, 10.0, 10.5, 40.0))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    _check(lambda v: F.gelu(v, approximate=approximate), torch.linspace(-8.0, 8.0, 33))


@pytest.mark.parametrize("op", [F.silu, F.mish, F.logsigmoid, torch.sigmoid, torch.tanh], ids=lambda f: f.__name__)
def test_smooth_activations_far_out(op):
    _check(op, torch.cat([torch.linspace(-30.0, 30.0, 25), _t(-100.0, 100.0)]))


# -- clamp at its bounds -------------------------------------------------------------------------------------------
X_CLAMP = _t(-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, NAN)


def test_clamp_scalar_bounds_pass_the_gradient_at_the_bounds():
    _check(lambda v: torch.clamp(v, -1.0, 1.0), X_CLAMP)
    _check(lambda v: torch.clamp(v, min=0.5), X_CLAMP)
    _check(lambda v: torch.clamp(v, max=0.5), X_CLAMP)
    _check(lambda v: v.clamp_min(0.0), X_CLAMP)
    _check(lambda v: v.clamp_max(0.0), X_CLAMP)
    _check(lambda v: torch.clamp(v, 1.0, -1.0), X_CLAMP)          # min > max: the result is max everywhere


def test_clamp_tensor_bounds():
    lo = _t(-1.0, -1.0, 0.0, 0.0, 0.5, 2.0, 3.0, 0.0)
    hi = _t(1.0, -1.0, 1.0, 0.0, 0.5, 1.0, 2.0, 1.0)              # ties with x and with each other, min > max
    _check(lambda v, a, b: torch.clamp(v, a, b), X_CLAMP, lo, hi)
    _check(lambda v, a: torch.clamp(v, min=a), X_CLAMP, lo)
    _check(lambda v, b: torch.clamp(v, max=b), X_CLAMP, hi)


def test_clamp_broadcast_and_promotion():
    x = torch.tensor([[-2.0, 0.0, 2.0], [0.5, -0.5, 1.0]])
    _check(lambda v, a, b: torch.clamp(v, a, b), x, _t(0.0, -1.0, 0.5).reshape(1, 3), _t(1.0).reshape(()))
    _check(lambda v, a: torch.clamp(v, min=a), x.to(F16), _t(0.0, -1.0, 0.5))
    _check(lambda v, a: torch.clamp(v, max=a), x, _t(0.0, -1.0, 0.5, dtype=F64))


# -- pow at 0 -------------------------------------------------------------------------------------------------------
def test_pow_tensor_tensor_at_zero():
    base = _t(0.0, 0.0, 0.0, 0.0, 2.0, -2.0, 0.0, 3.0)
    expo = _t(0.0, 1.0, 2.0, -1.0, 0.0, 3.0, 0.5, -0.5)
    _check(torch.pow, base, expo)


@pytest.mark.parametrize("exponent", [0, 1, 2, 3, 0.5, -1, -2.0])
def test_pow_scalar_exponent(exponent):
    _check(lambda v: v ** exponent, _t(0.0, 1.0, 2.0, 0.5, 3.0) if exponent in (0.5, -1, -2.0) else
           _t(-2.0, -0.0, 0.0, 0.5, 3.0))


@pytest.mark.parametrize("base", [2.0, 0.0, 0.5])
def test_pow_scalar_base(base):
    _check(lambda v: base ** v, _t(-2.0, -0.5, 0.0, 0.5, 3.0))
    _check(lambda v: torch.pow(base, v), _t(-2.0, 0.0, 3.0))


def test_pow_broadcast_and_promotion():
    _check(torch.pow, _randn(2, 1, 3).abs() + 0.1, _randn(4, 1, seed=1))
    _check(torch.pow, (_randn(3).abs() + 0.5).to(F16), _randn(3, seed=1))
    _check(torch.pow, _randn(3), torch.tensor([0, 1, 2], dtype=torch.int32))
    _check(torch.pow, torch.tensor([1, 2, 3], dtype=torch.int32), _randn(3))
    _check(lambda x: torch.square(x), _randn(4))


# -- broadcasting, promotion and Python scalars in the arithmetic -----------------------------------------------------
PAIRS = [(F32, F32), (F16, F32), (F32, BF16), (F16, BF16), (F64, F32), (BF16, BF16)]


@pytest.mark.parametrize("op", [torch.add, torch.sub, torch.mul, torch.div, torch.maximum, torch.fmod,
                                torch.remainder, torch.pow], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtypes", PAIRS, ids=lambda p: f"{p[0]}-{p[1]}".replace("torch.", ""))
def test_binary_broadcast_promotion(op, dtypes):
    a, b = _randn(2, 1, 4, dtype=dtypes[0]), _randn(3, 1, seed=1, dtype=dtypes[1])
    if op is torch.pow:
        a = a.abs() + 0.5
    if op in (torch.div, torch.fmod, torch.remainder):
        b = torch.where(b.abs() < 0.25, torch.ones_like(b), b)
    half = any(d in (F16, BF16) for d in dtypes)
    _check(op, a, b, tol=4.0 if half else 1.0)


@pytest.mark.parametrize("op", [torch.add, torch.sub, torch.mul, torch.div, torch.maximum, torch.minimum],
                         ids=lambda f: f.__name__)
def test_integer_operand_gets_no_gradient(op):
    ints = torch.tensor([[1, -2, 3], [4, 5, -6]], dtype=torch.int32)
    _check(op, ints, _randn(3, dtype=F16))
    _check(op, _randn(2, 3), ints)
    if op is not torch.sub:                                       # (torch refuses bool subtraction)
        _check(op, _randn(2, 3), torch.tensor([True, False, True]))


def test_zero_dim_operands():
    # a 0-d tensor does not raise a dimmed operand's width: f16 [3] + f32 0-d is f16, the 0-d gets its sum
    _check(torch.add, _randn(3, dtype=F16), _t(2.0).reshape(()))
    _check(torch.mul, _randn(3, dtype=BF16), _t(2.0).reshape(()))
    _check(torch.div, _t(2.0).reshape(()), _randn(3).abs() + 0.5)
    _check(torch.mul, _t(2.0).reshape(()), _t(3.0).reshape(()))


@pytest.mark.parametrize("dtype", [F32, F16, BF16, F64], ids=str)
def test_python_scalars(dtype):
    x = _randn(3, 4, dtype=dtype)
    tol = 2.0
    _check(lambda v: (v + 2, 2 - v, v * 2.5, 0.1 * v, v / 3, 3 / (v.abs() + 1), v - 0.5), x, tol=tol)
    _check(lambda v: torch.add(v, v, alpha=0.5) + torch.sub(v, 1.5, alpha=2), x, tol=tol)


def test_int_plus_float_and_converts():
    _check(lambda i, x: i + x, torch.tensor([1, 2, 3], dtype=torch.int32), _randn(3, dtype=F16))
    _check(lambda x: x.to(F16).to(F32) * 2, _randn(5))
    _check(lambda x: x.double() + x.half().float(), _randn(5))
    _check(lambda x: x.to(torch.int64).float() + x, _randn(5) * 3)      # through an integer: no gradient there


# -- unary math, in every float type ----------------------------------------------------------------------------------
UNARY = [
    (torch.exp, "any"), (torch.log, "positive"), (torch.sqrt, "positive"), (torch.rsqrt, "positive"),
    (torch.tanh, "any"), (torch.sigmoid, "any"), (torch.reciprocal, "positive"), (torch.sin, "any"),
    (torch.cos, "any"), (torch.tan, "small"), (torch.erf, "any"), (torch.log1p, "positive"),
    (torch.expm1, "any"), (torch.neg, "any"), (torch.abs, "any"), (torch.relu, "any"),
    (F.gelu, "any"), (F.silu, "any"), (F.mish, "any"), (F.softplus, "any"), (F.logsigmoid, "any"),
    (F.leaky_relu, "any"), (F.elu, "any"), (F.hardswish, "wide"), (F.hardsigmoid, "wide"),
]


def _unary_input(kind, dtype):
    x = _randn(4, 5, seed=3)
    x = {"positive": x.abs() + 0.1, "small": x.clamp(-1.2, 1.2), "wide": x * 3}.get(kind, x)
    return x.to(dtype)


@pytest.mark.parametrize("dtype", [F32, F64, F16, BF16], ids=str)
@pytest.mark.parametrize("op,kind", UNARY, ids=[f.__name__ for f, _ in UNARY])
def test_unary(op, kind, dtype):
    _check(op, _unary_input(kind, dtype), tol=2.0)


@pytest.mark.parametrize("op", [torch.exp, torch.sin, torch.sqrt, torch.log1p], ids=lambda f: f.__name__)
def test_unary_integer_input_is_not_differentiated(op):
    _check(lambda i, x: op(i) * x, torch.tensor([1, 2, 3]), _randn(3))


# -- fmod / remainder: torch's gradients for both operands -------------------------------------------------------------
@pytest.mark.parametrize("op", [torch.fmod, torch.remainder], ids=lambda f: f.__name__)
def test_fmod_remainder(op):
    a = _t(5.5, -5.5, 5.5, -5.5, 0.25, 7.0, -7.0, 3.0)
    b = _t(2.0, 2.0, -2.0, -2.0, 0.5, 3.5, 3.5, 0.7)
    _check(op, a, b)
    _check(lambda x: op(x, 1.5), a)
    _check(lambda x: op(x, torch.tensor([2, -3, 2, -3, 2, 3, 3, 1])), a)
    _check(op, a.to(BF16), b, tol=2.0)


# -- what torch does not differentiate, and zero gradients ------------------------------------------------------------
def test_floor_divide_is_refused_like_torch():
    assert not check_grad(_traceable(torch.floor_divide, 2), (_randn(3), _randn(3, seed=1).abs() + 0.5))


@pytest.mark.parametrize("op", [torch.floor, torch.ceil, torch.trunc, torch.round, torch.sign,
                                lambda v: torch.round(v, decimals=1)], ids=["floor", "ceil", "trunc", "round", "sign",
                                                                             "round_decimals"])
def test_zero_gradient_ops(op):
    _check(lambda v: op(v) + v * 0.5, _randn(6) * 3)
