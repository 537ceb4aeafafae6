"""Every lowering rule of ``fxla.lowering.RULES`` against eager PyTorch on the CPU.

``CASES`` is the table: one :class:`Case` per (op object, form), each naming the ``RULES`` key it exercises.
A case runs once per dtype in its ``dtypes``; the compiled result must match eager in values *and* dtype, and
the traced graph must really contain the key (so a case cannot silently test some other rule).
``test_every_rule_has_a_case`` makes a new rule without a case fail the suite.
"""
from __future__ import annotations

import importlib
import operator
import pathlib
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Dict, Optional, Tuple

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils import _pytree as pytree

import fxla
from fxla.frontend import wrap
from fxla.frontend.passes import functionalize
from fxla.lowering import RULES
from fxla.lowering.registry import _label, op_key

F32, F16, BF16, F64 = torch.float32, torch.float16, torch.bfloat16, torch.float64
I64, I32, BOOL = torch.int64, torch.int32, torch.bool
FLOATS = (F32, F16, BF16)
NUMERIC = (F32, F16, BF16, I64)

#: base tolerance per dtype (relative, and absolute relative to the result's magnitude)
BASE_TOL = {F32: 1e-5, F64: 1e-12, F16: 2e-3, BF16: 1e-2}

SHORT = {F32: "f32", F16: "f16", BF16: "bf16", F64: "f64", I64: "i64", I32: "i32", BOOL: "bool",
         torch.uint8: "u8"}


@dataclass(frozen=True)
class T:
    """An input tensor: ``shape``; ``dtype`` (None: the case's dtype); ``kind`` of values."""

    shape: Tuple[int, ...]
    dtype: Optional[torch.dtype] = None
    kind: str = "normal"        # normal | positive | small (integer-valued, ties likely) | unit (|x| < 1)
    #                             | index (integers in [0, high)) | perm (along dim 0: distinct values < high)
    high: Optional[int] = None


def t(*shape, dtype=None, kind="normal", high=None) -> T:
    return T(tuple(shape), dtype, kind, high)


def index(*shape, high, dtype=None) -> T:
    """Valid indices for a dim of size ``high`` (int64 unless ``dtype``)."""
    return T(tuple(shape), dtype or torch.int64, "index", high)


def perm(*shape, high) -> T:
    """int64 indices, distinct along dim 0 (scatter targets without collisions)."""
    return T(tuple(shape), torch.int64, "perm", high)


@dataclass
class Case:
    keys: Tuple[Any, ...]                     # the RULES keys this case exercises
    name: str
    fn: Callable                              # the function, or (module=True) a factory of the nn.Module
    inputs: Tuple[T, ...]
    dtypes: Tuple[torch.dtype, ...] = (F32,)
    tol: float = 1.0                          # multiplier on BASE_TOL
    module: bool = False
    xfail: Dict[torch.dtype, str] = field(default_factory=dict)


def make(spec: T, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    dt = spec.dtype or dtype
    shape = spec.shape
    if dt == BOOL:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if spec.kind == "index":
        return torch.randint(0, spec.high, shape, generator=gen).to(dt)
    if spec.kind == "perm":
        return torch.rand((spec.high,) + shape[1:], generator=gen).argsort(0)[:shape[0]]
    if not dt.is_floating_point:
        low = 1 if spec.kind == "positive" else -5
        return torch.randint(low, 6, shape, generator=gen).to(dt)
    if spec.kind == "small":
        x = torch.randint(-3, 4, shape, generator=gen).float()
    else:
        x = torch.randn(shape, generator=gen)
        if spec.kind == "positive":
            x = x.abs() + 0.25
        elif spec.kind == "unit":
            x = torch.tanh(x)
    return x.to(dt)


def add_case(table, keys, name, fn, *inputs, dtypes=(F32,), tol=1.0, module=False, xfail=None):
    """Add a row to ``table``; ``keys`` is one RULES key or a tuple of them (all must appear in the traced graph).

    Every ``tests/test_ops*.py`` file has its own ``CASES`` table and ``case = partial(add_case, CASES)``.
    """
    keys = keys if isinstance(keys, tuple) else (keys,)
    table.append(Case(keys, name, fn, tuple(inputs), tuple(dtypes), tol, module, dict(xfail or {})))


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

# ---------------------------------------------------------------------------------------------------------------
# linear algebra
# ---------------------------------------------------------------------------------------------------------------
case(F.linear, "F.linear", lambda x, w, b: F.linear(x, w, b), t(2, 5, 8), t(3, 8), t(3), dtypes=FLOATS, tol=2)
case(F.linear, "F.linear_1d_weight", lambda x, w: F.linear(x, w), t(4, 8), t(8), tol=2)
case(F.linear, "F.linear_no_bias", lambda x, w: F.linear(x, w), t(4, 8), t(3, 8), tol=2)
case(nn.Linear, "nn.Linear", lambda: nn.Linear(8, 3), t(2, 4, 8), module=True, dtypes=(F32, F16), tol=2)
case(nn.Linear, "nn.Linear_no_bias", lambda: nn.Linear(8, 3, bias=False), t(5, 8), module=True, tol=2)
case(nn.Linear, "nn.Linear_1d_input", lambda: nn.Linear(8, 3), t(8), module=True, tol=2)

case(torch.matmul, "matmul_2d", lambda a, b: torch.matmul(a, b), t(3, 8), t(8, 4), dtypes=NUMERIC, tol=2)
case(torch.matmul, "matmul_1d_1d", lambda a, b: torch.matmul(a, b), t(8), t(8), tol=2)
case(torch.matmul, "matmul_1d_2d", lambda a, b: torch.matmul(a, b), t(8), t(8, 3), tol=2)
case(torch.matmul, "matmul_2d_1d", lambda a, b: torch.matmul(a, b), t(3, 8), t(8), tol=2)
case(torch.matmul, "matmul_3d_1d", lambda a, b: torch.matmul(a, b), t(2, 3, 8), t(8), tol=2)
case(torch.matmul, "matmul_1d_3d", lambda a, b: torch.matmul(a, b), t(8), t(2, 8, 3), tol=2)
case(torch.matmul, "matmul_batched_broadcast", lambda a, b: torch.matmul(a, b), t(2, 1, 3, 8), t(4, 8, 5),
     dtypes=(F32, BF16), tol=2)
case(operator.matmul, "op.matmul", lambda a, b: a @ b, t(2, 3, 8), t(8, 4), dtypes=(F32, F16), tol=2)
case(torch.mm, "torch.mm", lambda a, b: torch.mm(a, b), t(3, 8), t(8, 4), dtypes=(BF16,), tol=2)
case(torch.bmm, "torch.bmm", lambda a, b: torch.bmm(a, b), t(2, 3, 8), t(2, 8, 4), dtypes=(F16,), tol=2)
case((torch.Tensor.matmul, torch.Tensor.mm, torch.Tensor.bmm), "matmul_methods",
     lambda a, b, m, n: (a.matmul(b), m.mm(n), a.bmm(b)), t(2, 3, 8), t(2, 8, 4), t(3, 8), t(8, 4), tol=2)

# ---------------------------------------------------------------------------------------------------------------
# convolution and pooling
# ---------------------------------------------------------------------------------------------------------------
case(F.conv2d, "conv2d", lambda x, w, b: F.conv2d(x, w, b), t(2, 3, 7, 7), t(4, 3, 3, 3), t(4),
     dtypes=FLOATS, tol=3)
case(F.conv2d, "conv2d_int", lambda x, w: F.conv2d(x, w), t(1, 2, 5, 5), t(3, 2, 3, 3), dtypes=(I64,))
case(F.conv2d, "conv2d_stride_pad_dil", lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=(1, 2), dilation=2),
     t(1, 3, 9, 8), t(2, 3, 3, 3), tol=3)
case(F.conv2d, "conv2d_groups", lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=2), t(2, 4, 6, 6),
     t(6, 2, 3, 3), t(6), tol=3)
case(F.conv2d, "conv2d_depthwise", lambda x, w: F.conv2d(x, w, groups=3, stride=2), t(1, 3, 8, 8), t(3, 1, 3, 3),
     tol=3)
case(F.conv2d, "conv2d_same", lambda x, w: F.conv2d(x, w, padding="same"), t(1, 2, 6, 7), t(3, 2, 5, 3), tol=3)
case(F.conv2d, "conv2d_same_dilated", lambda x, w: F.conv2d(x, w, padding="same", dilation=2), t(1, 2, 6, 7),
     t(3, 2, 2, 3), tol=3)
case(F.conv2d, "conv2d_valid", lambda x, w: F.conv2d(x, w, padding="valid"), t(1, 2, 6, 7), t(3, 2, 2, 3), tol=3)
case(nn.Conv2d, "nn.Conv2d", lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), t(2, 3, 8, 8), module=True,
     dtypes=(F32, BF16), tol=3)
case(nn.Conv2d, "nn.Conv2d_groups_nobias", lambda: nn.Conv2d(4, 8, (3, 1), groups=4, bias=False, dilation=(1, 2)),
     t(1, 4, 6, 6), module=True, tol=3)
case(nn.Conv2d, "nn.Conv2d_same", lambda: nn.Conv2d(2, 3, 3, padding="same"), t(1, 2, 5, 6), module=True, tol=3)

case(F.max_pool2d, "F.max_pool2d", lambda x: F.max_pool2d(x, 2), t(2, 3, 8, 8), dtypes=NUMERIC)
case(F.max_pool2d, "F.max_pool2d_ceil", lambda x: F.max_pool2d(x, 3, stride=2, ceil_mode=True), t(1, 2, 8, 9),
     dtypes=(F32, BF16))
case(F.max_pool2d, "F.max_pool2d_ceil_pad", lambda x: F.max_pool2d(x, 3, 2, padding=1, ceil_mode=True),
     t(1, 2, 6, 7))
case(F.max_pool2d, "F.max_pool2d_pad_dil", lambda x: F.max_pool2d(x, (3, 2), (1, 2), (1, 1), dilation=(2, 1)),
     t(1, 2, 7, 8))
case(F.max_pool2d, "F.max_pool2d_3d_input", lambda x: F.max_pool2d(x, 2, stride=1), t(3, 5, 5))
case(torch.max_pool2d, "torch.max_pool2d", lambda x: torch.max_pool2d(x, 2, 2, 0, 1, True), t(1, 2, 5, 7),
     dtypes=(I64,))
case(nn.MaxPool2d, "nn.MaxPool2d", lambda: nn.MaxPool2d(3, stride=2, padding=1), t(2, 3, 8, 8), module=True)
case(nn.MaxPool2d, "nn.MaxPool2d_ceil", lambda: nn.MaxPool2d(2, ceil_mode=True), t(1, 2, 5, 5), module=True,
     dtypes=(F16,))

# ---------------------------------------------------------------------------------------------------------------
# normalisation, softmax, dropout
# ---------------------------------------------------------------------------------------------------------------
case(F.layer_norm, "F.layer_norm_affine", lambda x, w, b: F.layer_norm(x, (8,), w, b), t(2, 3, 8), t(8), t(8),
     dtypes=FLOATS, tol=5)
case(F.layer_norm, "F.layer_norm_plain", lambda x: F.layer_norm(x, (3, 8), eps=1e-3), t(2, 3, 8),
     dtypes=(F32, BF16), tol=5)
case(F.layer_norm, "F.layer_norm_weight_only", lambda x, w: F.layer_norm(x, [8], w), t(4, 8), t(8), tol=5)
case(nn.LayerNorm, "nn.LayerNorm", lambda: nn.LayerNorm(8), t(2, 3, 8), module=True, dtypes=(F32, F16), tol=5)
case(nn.LayerNorm, "nn.LayerNorm_no_affine", lambda: nn.LayerNorm((3, 8), elementwise_affine=False), t(2, 3, 8),
     module=True, tol=5)
case(nn.LayerNorm, "nn.LayerNorm_no_bias", lambda: nn.LayerNorm(8, bias=False), t(4, 8), module=True, tol=5)

case(torch.softmax, "torch.softmax", lambda x: torch.softmax(x, -1), t(3, 7), dtypes=FLOATS, tol=3)
case(torch.softmax, "torch.softmax_dtype", lambda x: torch.softmax(x, 0, dtype=torch.float32), t(4, 5),
     dtypes=(F16,), tol=3)
case(F.softmax, "F.softmax", lambda x: F.softmax(x, dim=1), t(2, 5, 3), tol=3)
case(F.softmax, "F.softmax_dtype", lambda x: F.softmax(x, dim=-1, dtype=torch.float64), t(2, 5), tol=3)
case(nn.Softmax, "nn.Softmax", lambda: nn.Softmax(dim=-1), t(3, 6), module=True, tol=3)
case(torch.log_softmax, "torch.log_softmax", lambda x: torch.log_softmax(x, 1), t(3, 7), dtypes=FLOATS, tol=3)
case(F.log_softmax, "F.log_softmax", lambda x: F.log_softmax(x, dim=-1), t(2, 5), tol=3)
case(F.log_softmax, "F.log_softmax_dtype", lambda x: F.log_softmax(x, 0, dtype=torch.float32), t(4, 5),
     dtypes=(BF16,), tol=3)
case((torch.Tensor.softmax, torch.Tensor.log_softmax), "softmax_methods",
     lambda x: (x.softmax(-2), x.log_softmax(0)), t(2, 5, 3), tol=3)
case(nn.LogSoftmax, "nn.LogSoftmax", lambda: nn.LogSoftmax(dim=1), t(3, 6), module=True, tol=3)

case(F.dropout, "F.dropout_eval", lambda x: F.dropout(x, 0.5, training=False) * 2, t(3, 4))
case(F.dropout, "F.dropout_p0", lambda x: F.dropout(x, p=0.0) + 1, t(3, 4))
case(nn.Dropout, "nn.Dropout_eval", lambda: nn.Dropout(0.3), t(3, 4), module=True, dtypes=(BF16,))
case(nn.Identity, "nn.Identity", nn.Identity, t(3, 4), module=True, dtypes=(I64,))

# ---------------------------------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------------------------------
case(torch.sum, "torch.sum_all", lambda x: torch.sum(x), t(4, 16, kind="unit"), dtypes=(F32, BF16, I64, BOOL),
     tol=3)
case(torch.sum, "torch.sum_dim_keepdim", lambda x: torch.sum(x, -1, keepdim=True), t(3, 4, 16, kind="unit"),
     dtypes=(F32, F16, I64), tol=3)
case(torch.sum, "torch.sum_dims", lambda x: torch.sum(x, (0, -1)), t(3, 4, 5), dtypes=(I64,))
case(torch.sum, "torch.sum_dtype", lambda x: torch.sum(x, 1, dtype=torch.float32), t(3, 64), dtypes=(F16, I32),
     tol=3)
case(torch.sum, "torch.sum_dtype_narrow_int", lambda x: (torch.sum(x, dtype=torch.int32),
                                                        torch.sum(x.int(), 0, dtype=torch.int16)),
     t(5, 3), dtypes=(BOOL, I64))
case(torch.sum, "torch.sum_i32_widens", lambda x: torch.sum(x, 0), t(5, 3, dtype=I32))
case((torch.Tensor.sum, torch.Tensor.mean), "sum_mean_methods", lambda x: (x.sum(dim=1), x.mean(-1)), t(3, 4, 5),
     tol=3)
case(torch.mean, "torch.mean_all", lambda x: torch.mean(x), t(4, 16, kind="unit"), dtypes=FLOATS, tol=3)
case(torch.mean, "torch.mean_dims_keepdim", lambda x: torch.mean(x, (-1, 1), keepdim=True), t(2, 3, 8),
     dtypes=(F32, BF16), tol=3)
case(torch.mean, "torch.mean_int_with_dtype", lambda x: torch.mean(x, 0, dtype=torch.float32), t(5, 3, dtype=I64))

# ---------------------------------------------------------------------------------------------------------------
# shape ops (dtype-preserving: checked on float, int and bool)
# ---------------------------------------------------------------------------------------------------------------
case((torch.Tensor.view, torch.Tensor.reshape, torch.reshape, torch.Tensor.view_as, torch.Tensor.reshape_as),
     "reshape_family",
     lambda x, y: (x.view(x.size(0), -1), x.view((4, 6)), x.reshape(-1, 2), torch.reshape(x, (3, -1)),
                   x.view_as(y), x.reshape_as(y)), t(2, 3, 4), t(4, 6), dtypes=(F32, I64, BOOL))
case((torch.flatten, torch.Tensor.flatten, torch.Tensor.unflatten, torch.unflatten), "flatten_family",
     lambda x: (torch.flatten(x, 1), x.flatten(), x.flatten(-2, -1), x.unflatten(1, (3, 1)),
                torch.unflatten(x, -1, (-1, 2))), t(2, 3, 4), dtypes=(BF16,))
case((torch.squeeze, torch.Tensor.squeeze, torch.unsqueeze, torch.Tensor.unsqueeze), "squeeze_family",
     lambda x: (torch.squeeze(x), torch.squeeze(x, 2), x.squeeze(0), x.squeeze(-1), torch.unsqueeze(x, 0),
                x.unsqueeze(-1)), t(1, 3, 1, 4, 1), dtypes=(F32, BOOL))
case((torch.Tensor.permute, torch.permute, torch.Tensor.transpose, torch.transpose, torch.swapaxes,
      torch.Tensor.swapaxes), "permute_family",
     lambda x: (x.permute(2, 0, 1), x.permute([-1, 0, -2]), torch.permute(x, (1, 2, 0)), x.transpose(1, 2),
                x.transpose(-1, -3), torch.transpose(x, 0, -1), torch.swapaxes(x, 0, 1), x.swapaxes(-2, -1)),
     t(2, 3, 4), dtypes=(F32, I64))
case((torch.Tensor.transpose, torch.Tensor.t), "transpose_0d", lambda x: (x.transpose(0, -1), x.t() + 1), t())
case((torch.Tensor.t, torch.t), "transpose_2d", lambda x, v: (x.t(), torch.t(x), v.t() * 2), t(3, 4), t(4),
     dtypes=(I64,))
case((torch.Tensor.contiguous, torch.Tensor.clone, torch.clone, torch.Tensor.detach, torch.detach),
     "identity_family",
     lambda x: (x.transpose(0, 1).contiguous(), x.clone() + 1, torch.clone(x) * 2, x.detach() - 1, torch.detach(x)),
     t(3, 4), dtypes=(I64,))
case(nn.Flatten, "nn.Flatten", nn.Flatten, t(2, 3, 4), module=True)
case(nn.Flatten, "nn.Flatten_dims", lambda: nn.Flatten(0, -2), t(2, 3, 4), module=True, dtypes=(BOOL,))
case(nn.Unflatten, "nn.Unflatten", lambda: nn.Unflatten(1, (3, 4)), t(2, 12), module=True)


# ---------------------------------------------------------------------------------------------------------------
# the runner
# ---------------------------------------------------------------------------------------------------------------
def params_of(cases):
    params = []
    for c in cases:
        for dtype in c.dtypes:
            marks = [pytest.mark.xfail(strict=True, reason=c.xfail[dtype])] if dtype in c.xfail else []
            params.append(pytest.param(c, dtype, id=f"{c.name.replace('/', '+')}-{SHORT[dtype]}", marks=marks))
    return params


class Holder(nn.Module):
    """The module under test as a submodule, so tracing records it as one ``call_module`` node."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)


def _build(c: Case, dtype: torch.dtype):
    if not c.module:
        return c.fn
    torch.manual_seed(0)
    mod = c.fn()
    if dtype.is_floating_point:
        mod = mod.to(dtype)
    return Holder(mod).eval()


def assert_matches(got, want, dtype: torch.dtype, tol: float):
    got_leaves, got_spec = pytree.tree_flatten(got)
    want_leaves, want_spec = pytree.tree_flatten(want)
    assert got_spec == want_spec
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        where = f"output {i}: " if len(want_leaves) > 1 else ""
        assert isinstance(g, torch.Tensor), f"{where}{type(g)}"
        assert g.dtype == w.dtype, f"{where}dtype {g.dtype}, eager gives {w.dtype}"
        assert g.shape == w.shape, f"{where}shape {tuple(g.shape)}, eager gives {tuple(w.shape)}"
        if w.dtype.is_floating_point:
            # tolerance of the least precise float dtype involved (the computation's or the result's)
            base = max(BASE_TOL.get(dtype, 0.0), BASE_TOL[w.dtype]) * tol
            scale = max(1.0, w.abs().max().item()) if w.numel() else 1.0
            torch.testing.assert_close(g, w, rtol=base, atol=base * scale, equal_nan=True,
                                       msg=lambda m: f"{where}{m}")
        else:
            assert torch.equal(g, w), f"{where}\ngot:  {g}\nwant: {w}"


def run_case(c: Case, dtype: torch.dtype):
    gen = torch.Generator().manual_seed(0)
    inputs = tuple(make(spec, dtype, gen) for spec in c.inputs)
    fn = _build(c, dtype)
    with torch.no_grad():
        want = fn(*(x.clone() for x in inputs))
    compiled = fxla.compile(fn)
    got = compiled(*inputs)
    gm = functionalize(compiled.graph_module)    # the graph lowering saw (shapes known after the call)
    keys = [op_key(n, gm) for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
    unused = [k for k in c.keys if not any(k is used for used in keys)]
    assert not unused, f"the traced graph does not use {unused} (it uses {keys})"
    assert_matches(got, want, dtype, c.tol)


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c: Case, dtype: torch.dtype):
    run_case(c, dtype)


def all_cases():
    """The case tables of every ``tests/test_ops*.py`` file."""
    here = pathlib.Path(__file__).resolve().parent
    return [c for path in sorted(here.glob("test_ops*.py")) for c in importlib.import_module(path.stem).CASES]


def test_every_rule_has_a_case():
    cases = all_cases()
    covered = {id(k) for c in cases for k in c.keys}
    missing = [_label(k) for k in RULES if id(k) not in covered]
    assert not missing, "lowering rules without a case in tests/test_ops*.py: " + ", ".join(missing)


def test_every_case_names_a_rule():
    stray = [(c.name, k) for c in all_cases() for k in c.keys if not any(k is r for r in RULES)]
    assert not stray, f"cases whose key has no lowering rule: {stray}"


def test_python_float_scalar_keeps_float64_precision():
    """A Python float next to a float64 tensor is used at float64 precision, as in torch (not rounded to f32)."""
    x = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64)
    eq, scaled = fxla.compile(lambda x: (x == 0.1, x * 0.1))(x)
    assert eq.tolist() == [True, False, False]
    assert torch.equal(scaled, x * 0.1)


def test_docs_ops_md_is_up_to_date():
    from fxla.lowering import coverage_doc
    path = pathlib.Path(__file__).resolve().parent.parent / "docs" / "ops.md"
    assert path.read_text() == coverage_doc.render_markdown(), \
        "regenerate with `.venv/bin/python -m fxla.lowering.coverage_doc > docs/ops.md`"
