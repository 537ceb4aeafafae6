"""Family ``elementwise`` (lowering/rules/elementwise.py) against eager: arithmetic with broadcasting, Python
scalars and type promotion, comparisons, unary math, the basic activations and dtype conversions.
The harness is tests/test_ops.py."""
from __future__ import annotations

import operator
from functools import partial

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla
from fxla.frontend import wrap
from fxla.frontend.autocast import autocast_cast
from test_ops import BF16, BOOL, F16, F32, F64, FLOATS, I32, I64, NUMERIC, add_case, params_of, run_case, t

CASES = []
case = partial(add_case, CASES)


# ---------------------------------------------------------------------------------------------------------------
# elementwise arithmetic, broadcasting, Python scalars and type promotion
# ---------------------------------------------------------------------------------------------------------------
def _iadd(x, y):
    x += y
    return x


def _isub(x, y):
    x -= y
    return x


def _imul(x, y):
    x *= y
    return x


def _itruediv(x, y):
    x /= y
    return x


case(operator.add, "add", lambda x, y: x + y, t(3, 4), t(3, 4), dtypes=NUMERIC)
case(operator.add, "add_broadcast", lambda x, y: x + y, t(2, 1, 4), t(3, 1))
case(operator.add, "add_int_scalar", lambda x: x + 2, t(3, 4), dtypes=(F16, I64))
case(operator.add, "int_plus_float_scalar", lambda x: x + 2.5, t(3, 4, dtype=I64))
case(operator.add, "bool_plus_bool", lambda x, y: x + y, t(8, dtype=BOOL), t(8, dtype=BOOL))
case(operator.add, "bool_plus_int_scalar", lambda x: x + 1, t(5, dtype=BOOL))
case(operator.add, "half_plus_0d_f32", lambda x, y: x + y, t(3, 4), t(dtype=F32), dtypes=(BF16,))
case(operator.add, "int_plus_0d_f64", lambda x, y: x + y, t(3, dtype=I64), t(dtype=F64))
case(operator.add, "i32_plus_0d_i64", lambda x, y: x + y, t(3, dtype=I32), t(dtype=I64))
case(operator.add, "i32_plus_f16", lambda x, y: x + y, t(3, dtype=I32), t(3, dtype=F16))
case(operator.add, "f16_plus_bf16", lambda x, y: x + y, t(3, dtype=F16), t(3, dtype=BF16))
case(operator.add, "0d_plus_float_scalar", lambda x: x + 0.5, t(), dtypes=(F16, I64))
case(operator.add, "0d_i32_plus_int_scalar", lambda x: x + 2, t(dtype=I32))
case(operator.add, "f64_plus_float_scalar", lambda x: x + 0.1, t(4), dtypes=(F64,))
case(operator.iadd, "iadd", _iadd, t(3, 4), t(4))
case((torch.add, torch.Tensor.add), "torch.add/Tensor.add",
     lambda x, y: (torch.add(x, y), x.add(y, alpha=0.5), torch.add(x, 1.5, alpha=2)), t(3, 4), t(4))
case(torch.add, "torch.add_alpha_int", lambda x, y: torch.add(x, y, alpha=2), t(3, 4), t(4), dtypes=(I64,))

case(operator.sub, "sub", lambda x, y: x - y, t(3, 4), t(1, 4), dtypes=NUMERIC)
case(operator.sub, "scalar_minus_tensor", lambda x: 2 - x, t(3, 4), dtypes=(F32, I64))
case(operator.sub, "float_scalar_minus_int", lambda x: 1.5 - x, t(3, 4, dtype=I64))
case(operator.isub, "isub", _isub, t(3, 4), t(3, 4))
case((torch.sub, torch.Tensor.sub), "torch.sub/Tensor.sub",
     lambda x, y: (torch.sub(x, y, alpha=3), x.sub(y)), t(3, 4), t(3, 4), dtypes=(I64,))
case(torch.rsub, "torch.rsub_scalar", lambda x: torch.rsub(x, 2), t(3, 4), dtypes=(I64,))
case(torch.rsub, "torch.rsub_tensor", lambda x, y: torch.rsub(x, y, alpha=2), t(3, 4), t(3, 4))

case(operator.mul, "mul", lambda x, y: x * y, t(3, 4), t(3, 4), dtypes=NUMERIC)
case(operator.mul, "mul_int_scalar", lambda x: x * 2, t(3, 4), dtypes=(BF16, I64))
case(operator.mul, "float_scalar_mul", lambda x: 0.5 * x, t(3, 4), dtypes=(F32, I64))
case(operator.mul, "bool_mul_bool", lambda x, y: x * y, t(6, dtype=BOOL), t(6, dtype=BOOL))
case(operator.imul, "imul", _imul, t(2, 3), t(3))
case((torch.mul, torch.Tensor.mul), "torch.mul/Tensor.mul", lambda x, y: (torch.mul(x, y), x.mul(3)),
     t(2, 3), t(2, 1), dtypes=(F32, I64))

case(operator.truediv, "div", lambda x, y: x / y, t(3, 4), t(3, 4, kind="positive"), dtypes=FLOATS)
case(operator.truediv, "int_div_int", lambda x, y: x / y, t(3, 4), t(3, 4, kind="positive"), dtypes=(I64,))
case(operator.truediv, "div_int_scalar", lambda x: x / 4, t(3, 4), dtypes=(F16, I64))
case(operator.truediv, "scalar_div", lambda x: 1.0 / x, t(3, 4, kind="positive"))
case(operator.itruediv, "itruediv", _itruediv, t(3, 4), t(4, kind="positive"))
case((torch.div, torch.true_divide, torch.Tensor.div, torch.Tensor.true_divide), "div_functions_and_methods",
     lambda x, y: (torch.div(x, y), torch.true_divide(x, 3), x.div(y), x.true_divide(y)),
     t(3, 4), t(4, kind="positive"), dtypes=(F32, I64))

case(torch.maximum, "torch.maximum", lambda x, y: torch.maximum(x, y), t(3, 4), t(4), dtypes=NUMERIC)
case(torch.minimum, "torch.minimum", lambda x, y: torch.minimum(x, y), t(3, 4), t(3, 1), dtypes=NUMERIC)
case(torch.maximum, "maximum_tensor_constant", lambda x: torch.maximum(x, torch.tensor(0.5)), t(3, 4))
case(torch.maximum, "maximum_int_float", lambda x, y: torch.maximum(x, y), t(3, dtype=I64), t(3, dtype=F32))
case((torch.Tensor.maximum, torch.Tensor.minimum), "Tensor.maximum/minimum",
     lambda x, y: (x.maximum(y), x.minimum(y)), t(3, 4), t(3, 4))

case(operator.pow, "pow_int_scalar", lambda x: x ** 2, t(3, 4), dtypes=NUMERIC, tol=2)
case(operator.pow, "pow_cube_negative_base", lambda x: x ** 3, t(3, 4), tol=2)
case(operator.pow, "pow_tensor", lambda x, y: x ** y, t(3, 4, kind="positive"), t(3, 4), dtypes=FLOATS, tol=4)
case(operator.pow, "scalar_pow", lambda x: 2 ** x, t(3, 4), tol=2)
case(operator.pow, "int_pow_float_scalar", lambda x: x ** 0.5, t(3, 4, dtype=I64, kind="positive"), tol=2)
case(torch.pow, "torch.pow", lambda x, y: torch.pow(x, y), t(3, 4, kind="positive"), t(4), tol=4)
case(torch.pow, "torch.pow_int", lambda x: torch.pow(x, 3), t(3, 4), dtypes=(I64,))
case(torch.Tensor.pow, "Tensor.pow", lambda x: x.pow(0.5), t(3, 4, kind="positive"), tol=2)

# ---------------------------------------------------------------------------------------------------------------
# comparisons (bool results); "small" inputs are integer-valued so ties occur
# ---------------------------------------------------------------------------------------------------------------
_S = dict(kind="small")
_CMP_OPS = (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge)
_CMP_TORCH = (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge)
_CMP_METHODS = (torch.Tensor.eq, torch.Tensor.ne, torch.Tensor.lt, torch.Tensor.le, torch.Tensor.gt,
                torch.Tensor.ge)
case(_CMP_OPS, "compare_operators",
     lambda x, y: (x == y, x != y, x < y, x <= y, x > y, x >= y), t(4, 5, **_S), t(4, 5, **_S), dtypes=NUMERIC)
case(_CMP_OPS, "compare_operators_scalar",
     lambda x: (x == 1, x != 1, x < 1, x <= 1, x > 1, x >= 1), t(4, 5, **_S), dtypes=(F32, I64))
case(_CMP_TORCH, "compare_torch_broadcast",
     lambda x, y: (torch.eq(x, y), torch.ne(x, y), torch.lt(x, y), torch.le(x, y), torch.gt(x, y),
                   torch.ge(x, y)), t(4, 5, **_S), t(5, **_S), dtypes=(I64,))
case(_CMP_METHODS, "compare_methods",
     lambda x, y: (x.eq(y), x.ne(y), x.lt(y), x.le(y), x.gt(y), x.ge(y)), t(4, 5, **_S), t(4, 5, **_S))
case(operator.lt, "int_lt_float_scalar", lambda x: x < 0.5, t(6, dtype=I64))
case(operator.eq, "int_eq_float_tensor", lambda x, y: x == y, t(6, dtype=I64), t(6, **_S))
case(operator.eq, "bool_eq_bool", lambda x, y: x == y, t(6, dtype=BOOL), t(6, dtype=BOOL))

# ---------------------------------------------------------------------------------------------------------------
# unary elementwise and activations
# ---------------------------------------------------------------------------------------------------------------
case(operator.neg, "op.neg", lambda x: -x, t(3, 4), dtypes=NUMERIC)
case(operator.abs, "op.abs", lambda x: abs(x), t(3, 4), dtypes=NUMERIC)
case((torch.neg, torch.abs, torch.Tensor.neg, torch.Tensor.abs), "neg_abs_functions_and_methods",
     lambda x: (torch.neg(x), torch.abs(x), x.neg(), x.abs()), t(3, 4), dtypes=(F32, I64))

_UNARY_TORCH = (torch.exp, torch.log, torch.sqrt, torch.rsqrt, torch.tanh, torch.sigmoid)
case(_UNARY_TORCH, "unary_torch",    # integer inputs give float32 results
     lambda x: (torch.exp(x), torch.log(x), torch.sqrt(x), torch.rsqrt(x), torch.tanh(x), torch.sigmoid(x)),
     t(3, 4, kind="positive"), dtypes=NUMERIC, tol=3)
case((torch.exp, torch.tanh, torch.sigmoid), "unary_torch_signed",
     lambda x: (torch.exp(x), torch.tanh(x), torch.sigmoid(x)), t(3, 4), dtypes=FLOATS, tol=3)
case((torch.Tensor.exp, torch.Tensor.log, torch.Tensor.sqrt, torch.Tensor.rsqrt, torch.Tensor.tanh,
      torch.Tensor.sigmoid), "unary_methods",
     lambda x: (x.exp(), x.log(), x.sqrt(), x.rsqrt(), x.tanh(), x.sigmoid()), t(3, 4, kind="positive"), tol=3)

# F.tanh/F.sigmoid call Tensor.tanh()/sigmoid() without a torch-function hook, so tracing never records
# them; fxla.frontend.wrap makes them leaves so that their own rules are exercised.
case((F.tanh, F.sigmoid), "F.tanh/F.sigmoid", lambda x: (wrap(F.tanh)(x), wrap(F.sigmoid)(x)), t(3, 4),
     dtypes=FLOATS, tol=3)
case(nn.Tanh, "nn.Tanh", nn.Tanh, t(3, 4), module=True, tol=3)
case(nn.Sigmoid, "nn.Sigmoid", nn.Sigmoid, t(3, 4), module=True, tol=3)

case(torch.relu, "torch.relu", lambda x: torch.relu(x), t(3, 4), dtypes=NUMERIC)
case((F.relu, torch.Tensor.relu), "F.relu/Tensor.relu", lambda x: (F.relu(x), x.relu()), t(3, 4),
     dtypes=(F32, I64))
case(nn.ReLU, "nn.ReLU", nn.ReLU, t(3, 4), module=True)
case(F.gelu, "F.gelu", lambda x: F.gelu(x), t(3, 4), dtypes=FLOATS, tol=3)
case(F.gelu, "F.gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), t(3, 4), dtypes=FLOATS, tol=3)
case(nn.GELU, "nn.GELU", nn.GELU, t(3, 4), module=True, tol=3)
case(nn.GELU, "nn.GELU_tanh", lambda: nn.GELU(approximate="tanh"), t(3, 4), module=True, dtypes=(BF16,), tol=3)

# ---------------------------------------------------------------------------------------------------------------
# dtype conversions
# ---------------------------------------------------------------------------------------------------------------
_CONVERT_METHODS = (torch.Tensor.float, torch.Tensor.half, torch.Tensor.bfloat16, torch.Tensor.double,
                    torch.Tensor.long, torch.Tensor.int, torch.Tensor.bool)
case(_CONVERT_METHODS, "conversion_methods",    # float -> int truncates toward zero, nonzero -> True
     lambda x: (x.float(), x.half(), x.bfloat16(), x.double(), x.long(), x.int(), x.bool()),
     t(3, 4, kind="small"), dtypes=(F32, BF16, I64, BOOL))
case(torch.Tensor.double, "double_arith", lambda x: x.double() * 3, t(3, 4))
case(torch.Tensor.to, "to_dtype", lambda x: x.to(torch.float16), t(3, 4), dtypes=(BF16, I64))
case(torch.Tensor.to, "to_dtype_kw", lambda x: x.to(dtype=torch.bfloat16), t(3, 4))
case(torch.Tensor.to, "to_int_truncates", lambda x: x.to(torch.int64) * 1, t(3, 4), dtypes=(F32, BF16))
case(torch.Tensor.to, "to_same_dtype", lambda x: x.to(torch.float32) + 1, t(3, 4))

# The rule accepts .to("cpu"), but shape propagation runs the graph on meta tensors and cannot copy them to cpu.
case(torch.Tensor.to, "to_cpu_and_dtype", lambda x: x.to("cpu", torch.float16), t(3, 4))
case(torch.Tensor.to, "to_cpu", lambda x: x.to("cpu") * 2, t(3, 4))
case(torch.Tensor.type, "Tensor.type", lambda x: x.type(torch.int32), t(3, 4))

case(torch.Tensor.type_as, "type_as", lambda x, y, i: (x.type_as(y), y.type_as(x), x.type_as(i), i.type_as(x)),
     t(3, 4), t(3, dtype=F16), t(2, dtype=I64))

case(torch.div, "div_rounding_mode",
     lambda a, b: (torch.div(a, b, rounding_mode="floor"), torch.div(a, b, rounding_mode="trunc"),
                   a.div(3, rounding_mode="trunc"), torch.div(a, -2, rounding_mode="floor")),
     t(4, 5), t(4, 5, kind="positive"), dtypes=(F32, BF16, I64))


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)


def test_python_float_scalar_keeps_float64_precision():
    """A Python float next to a float64 tensor is used at float64 precision, as in torch (not rounded to f32)."""
    x = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64)
    eq, scaled = fxla.compile(lambda x: (x == 0.1, x * 0.1))(x)
    assert eq.tolist() == [True, False, False]
    assert torch.equal(scaled, x * 0.1)


# -- a CPU autocast region the forward enters: the casts eager autocast makes (fxla.frontend.autocast) -------------
def _autocast_region(x, w, y):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = torch.tanh(x @ w)                       # matmul in bf16, tanh follows its input
        return h, F.mse_loss(h, y)                  # mse_loss in f32


case(autocast_cast.__wrapped__, "autocast_region", _autocast_region, t(3, 4), t(4, 5), t(3, 5))
