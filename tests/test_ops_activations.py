"""Family ``activations`` (lowering/rules/activations.py) against eager: rounding, sign, trigonometry,
logic/bitwise, integer division, clamp and the nn activations.
The harness is tests/test_ops.py."""
from __future__ import annotations

import operator
from functools import partial

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from test_ops import BF16, BOOL, F16, F32, FLOATS, I32, I64, NUMERIC, add_case, params_of, run_case, t

CASES = []
case = partial(add_case, CASES)


# rounding: identity on integers; "small"-kind halves (x.5) exercise round-half-even
case((torch.floor, torch.ceil, torch.trunc, torch.fix, torch.round), "rounding_functions",
     lambda x: (torch.floor(x), torch.ceil(x), torch.trunc(x), torch.fix(x), torch.round(x), torch.round(x / 2)),
     t(4, 5, kind="small"), dtypes=NUMERIC)
case((torch.Tensor.floor, torch.Tensor.ceil, torch.Tensor.trunc, torch.Tensor.fix, torch.Tensor.round),
     "rounding_methods", lambda x: (x.floor(), x.ceil(), x.trunc(), x.fix(), x.round(), x.round(decimals=1),
                                    x.round(decimals=-1)), t(4, 5), dtypes=(F32,))
case(torch.round, "round_decimals", lambda x: torch.round(x * 100, decimals=-2), t(4, 5), dtypes=(F32, F16))
case((torch.sign, torch.Tensor.sign), "sign", lambda x: (torch.sign(x), x.sign()), t(3, 4, kind="small"),
     dtypes=NUMERIC + (BOOL,))
case(torch.sign, "sign_u8", lambda x: torch.sign(x), t(6, dtype=torch.uint8))

_FLOAT_UNARY = (torch.reciprocal, torch.sin, torch.cos, torch.tan, torch.erf, torch.log1p, torch.expm1)
case(_FLOAT_UNARY, "float_unary",   # integer inputs give float32 results
     lambda x: (torch.reciprocal(x), torch.sin(x), torch.cos(x), torch.tan(x / 4), torch.erf(x), torch.log1p(x),
                torch.expm1(x / 2)), t(3, 4, kind="positive"), dtypes=NUMERIC, tol=4)
case((torch.Tensor.reciprocal, torch.Tensor.sin, torch.Tensor.cos, torch.Tensor.tan, torch.Tensor.erf,
      torch.Tensor.log1p, torch.Tensor.expm1, torch.special.erf), "float_unary_methods",
     lambda x: (x.reciprocal(), x.sin(), x.cos(), x.tan(), x.erf(), x.log1p(), x.expm1(), torch.special.erf(x)),
     t(3, 4, kind="unit"), tol=4)
case((torch.square, torch.Tensor.square), "square", lambda x: (torch.square(x), x.square()), t(3, 4),
     dtypes=NUMERIC + (BOOL,))

# logic and bitwise (bool results for logical ops; int/bool for bitwise)
case((torch.logical_not, torch.logical_and, torch.logical_or, torch.logical_xor), "logical",
     lambda x, y: (torch.logical_not(x), torch.logical_and(x, y), torch.logical_or(x, y), torch.logical_xor(x, y)),
     t(4, 5, kind="small"), t(5, kind="small"), dtypes=(F32, I64, BOOL))
case((torch.Tensor.logical_not, torch.Tensor.logical_and, torch.Tensor.logical_or, torch.Tensor.logical_xor),
     "logical_methods", lambda x, y: (x.logical_not(), x.logical_and(y), x.logical_or(y), x.logical_xor(y)),
     t(4, 5, dtype=BOOL), t(4, 5, kind="small"), dtypes=(BF16,))
case((torch.bitwise_not, torch.bitwise_and, torch.bitwise_or, torch.bitwise_xor), "bitwise",
     lambda x, y: (torch.bitwise_not(x), torch.bitwise_and(x, y), torch.bitwise_or(x, 6), torch.bitwise_xor(x, y)),
     t(4, 5), t(5), dtypes=(I64, I32, BOOL))
case((operator.invert, operator.and_, operator.or_, operator.xor), "bitwise_operators",
     lambda x, y: (~x, x & y, x | y, x ^ y, ~(x > 0)), t(4, 5, dtype=I64), t(4, 5, dtype=I32))
# a real tensor on the left of an operator calls its dunder method with the traced one (Hugging Face's
# masking_utils: `result & mask(...)`)
case((torch.Tensor.__and__, torch.Tensor.__or__, torch.Tensor.__xor__), "dunder_methods",
     lambda x, y: (torch.tensor([True, False, True]) & x, torch.tensor([1, 0, 3]) | y, torch.tensor([5, 6, 7]) ^ y),
     t(3, dtype=BOOL), t(3, dtype=I64))
case((torch.Tensor.bitwise_not, torch.Tensor.bitwise_and, torch.Tensor.bitwise_or, torch.Tensor.bitwise_xor),
     "bitwise_methods", lambda x, y: (x.bitwise_not(), x.bitwise_and(y), x.bitwise_or(y), x.bitwise_xor(y)),
     t(6, dtype=BOOL), t(6, dtype=BOOL))

# integer-style division: negative operands on both sides
case((torch.floor_divide, torch.remainder, torch.fmod), "division_family",
     lambda x, y: (torch.floor_divide(x, y), torch.remainder(x, y), torch.fmod(x, y), torch.remainder(x, -3),
                   torch.fmod(x, 2)), t(4, 6, kind="small"), t(4, 6, kind="positive"),
     dtypes=(F32, I64))
case((operator.floordiv, operator.mod), "division_operators", lambda x, y: (x // y, x % y, x // 2, -7 % y),
     t(4, 6), t(6, kind="positive"), dtypes=(F32, F16, I64), tol=2)
case((torch.Tensor.floor_divide, torch.Tensor.remainder, torch.Tensor.fmod), "division_methods",
     lambda x, y: (x.floor_divide(y), x.remainder(y), x.fmod(y)), t(4, 6), t(4, 6, kind="positive"),
     dtypes=(I64,))

# clamp and its spellings
case((torch.clamp, torch.clip), "clamp",
     lambda x, lo, hi: (torch.clamp(x, -0.5, 0.5), torch.clamp(x, min=0), torch.clamp(x, max=1), torch.clip(x, lo, hi),
                        torch.clamp(x, lo)), t(3, 4), t(4), t(3, 1), dtypes=NUMERIC)
case(torch.clamp, "clamp_int_float_bound", lambda x: torch.clamp(x, 0.5, 2.5), t(3, 4, dtype=I64))
case((torch.Tensor.clamp, torch.Tensor.clip, torch.clamp_min, torch.clamp_max, torch.Tensor.clamp_min,
      torch.Tensor.clamp_max), "clamp_methods",
     lambda x: (x.clamp(-1, 1), x.clip(min=0), torch.clamp_min(x, 0.1), torch.clamp_max(x, 0), x.clamp_min(-0.2),
                x.clamp_max(0.3)), t(3, 4), dtypes=(F32, BF16))

# activations
case((F.hardtanh, F.relu6), "hardtanh_relu6", lambda x: (F.hardtanh(x), F.hardtanh(x, -0.5, 2.0), F.relu6(x * 4)),
     t(3, 8), dtypes=FLOATS + (I64,))
case(nn.Hardtanh, "nn.Hardtanh", lambda: nn.Hardtanh(-2, 0.5), t(3, 8), module=True)
case(nn.ReLU6, "nn.ReLU6", nn.ReLU6, t(3, 8, kind="small"), module=True, dtypes=(F32, BF16))
_ACT = (F.silu, F.mish, F.hardswish, F.hardsigmoid, F.logsigmoid, F.leaky_relu, F.elu, F.softplus)
case(_ACT, "activations_functional",
     lambda x: (F.silu(x), F.mish(x), F.hardswish(x * 3), F.hardsigmoid(x * 3), F.logsigmoid(x * 5),
                F.leaky_relu(x), F.leaky_relu(x, 0.2), F.elu(x), F.elu(x, alpha=0.5), F.softplus(x),
                F.softplus(x * 10, beta=2, threshold=5)), t(4, 8), dtypes=FLOATS, tol=3)
for _mod, _factory in ((nn.SiLU, nn.SiLU), (nn.Mish, nn.Mish), (nn.Hardswish, nn.Hardswish),
                       (nn.Hardsigmoid, nn.Hardsigmoid), (nn.LogSigmoid, nn.LogSigmoid),
                       (nn.LeakyReLU, lambda: nn.LeakyReLU(0.3)), (nn.ELU, lambda: nn.ELU(2.0)),
                       (nn.Softplus, lambda: nn.Softplus(beta=0.5, threshold=3))):
    case(_mod, f"nn.{_mod.__name__}", _factory, t(4, 8, kind="small"), module=True, dtypes=(F32, BF16), tol=3)


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)
