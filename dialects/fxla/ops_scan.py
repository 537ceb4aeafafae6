"""The ``scan`` family: inclusive prefix reductions: cumsum, cumprod, cummax/cummin (values and indices) and
logcumsumexp (part of the op table; see :mod:`.ops`).  Each scans along one `dim` (negative counts from the end);
a 0-d input is its own scan."""
from __future__ import annotations

from .infer import _dim
from .opdef import I64, Attr, FloatOperand, OpDef, Operand
from .types import Sig, is_float

_DIM = (Attr("dim", I64, "the scanned dimension"),)


def _scan(ops, attrs) -> list:
    x = ops[0]
    _dim(attrs["dim"], x.rank)
    return [Sig(x.shape, x.elem if is_float(x.elem) else "i64")]


def _values_indices(ops, attrs) -> list:
    x = ops[0]
    _dim(attrs["dim"], x.rank)
    return [x, Sig(x.shape, "i64")]


def _same(ops, attrs) -> list:
    _dim(attrs["dim"], ops[0].rank)
    return [ops[0]]


cumsum = OpDef("cumsum", "Inclusive prefix sum along `dim`; bool/integer input gives i64.", (Operand("input"),),
               _DIM, infer=_scan, torch="torch.cumsum")
cumprod = OpDef("cumprod", "Inclusive prefix product along `dim`; bool/integer input gives i64.", (Operand("input"),),
                _DIM, infer=_scan, torch="torch.cumprod")
cummax = OpDef("cummax", "Running maximum along `dim` and the int64 index where it was attained (the last index "
               "on ties; NaN propagates and takes the index of the latest NaN).", (Operand("input"),), _DIM,
               results=("values", "indices"), infer=_values_indices, torch="torch.cummax")
cummin = OpDef("cummin", "Running minimum along `dim` and the int64 index where it was attained (the last index "
               "on ties; NaN propagates and takes the index of the latest NaN).", (Operand("input"),), _DIM,
               results=("values", "indices"), infer=_values_indices, torch="torch.cummin")
logcumsumexp = OpDef("logcumsumexp", "log(cumsum(exp(x))) along `dim`, computed stably (-inf entries contribute "
                     "nothing).", (FloatOperand("input"),), _DIM, infer=_same, torch="torch.logcumsumexp")

SCAN_OPS = (cumsum, cumprod, cummax, cummin, logcumsumexp)
