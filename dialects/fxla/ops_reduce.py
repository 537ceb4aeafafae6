"""The ``reduce`` family: reductions, arg-reductions, sorting and top-k (part of the op table; see :mod:`.ops`).

Reductions take ``dims`` (empty: all) and ``keepdim`` like torch; ``argmax``/``argmin`` take one optional
``dim`` (absent: the flattened tensor).  ``sort`` and ``topk`` have two results: values and int64 indices.
"""
from __future__ import annotations

from functools import partial

from . import infer
from .infer import _dim
from .opdef import BOOL, I64, I64_ARRAY, Attr, FloatOperand, InferError, OpDef, Operand
from .types import UNSIGNED_TYPES, Sig, is_float

_X = (Operand("input"),)
_DIMS = (Attr("dims", I64_ARRAY, "dimensions to reduce; empty means all"),
         Attr("keepdim", BOOL, "keep reduced dimensions with size 1", default=False))
_KEEP = Attr("keepdim", BOOL, "keep reduced dimensions with size 1", default=False)


def _with_elem(ops, attrs, *, elem_of):
    (sig,) = infer.reduction(ops, attrs)
    return [Sig(sig.shape, elem_of(ops[0].elem))]


def _arg_reduce(ops, attrs) -> list:
    x = ops[0]
    if attrs["dim"] is None:
        shape = (1,) * x.rank if attrs["keepdim"] else ()
    else:
        (s,) = infer.reduction(ops, {"dims": (attrs["dim"],), "keepdim": attrs["keepdim"]})
        shape = s.shape
    return [Sig(shape, "i64")]


def _variance(ops, attrs) -> list:
    return infer.reduction(ops, attrs, float_only=True)


def _sort(ops, attrs) -> list:
    x = ops[0]
    _dim(attrs["dim"], x.rank)
    return [x, Sig(x.shape, "i64")]


def _topk(ops, attrs) -> list:
    x = ops[0]
    d = _dim(attrs["dim"], x.rank)
    size = x.shape[d] if x.rank else 1
    if not 0 <= attrs["k"] <= size:
        raise InferError(f"k={attrs['k']} is out of range for a dimension of size {size}")
    shape = list(x.shape)
    if shape:
        shape[d] = attrs["k"]
    return [Sig(tuple(shape), x.elem), Sig(tuple(shape), "i64")]


sum = OpDef("sum", "Sum over `dims`; bool/integer input gives i64.", _X, _DIMS,  # noqa: A001
            infer=partial(infer.reduction, widen_int=True), torch="torch.sum")
mean = OpDef("mean", "Arithmetic mean over `dims`.", (FloatOperand("input"),), _DIMS,
             infer=partial(infer.reduction, float_only=True), torch="torch.mean")
_NAN_TIES = Attr("nan_ties", BOOL, "set by torch.max(x) / torch.min(x) of all elements: where the result is NaN "
                 "the gradient is shared among the NaNs (torch's evenly_distribute_backward; unset, amax's: NaN)",
                 default=None)
amax = OpDef("amax", "Maximum over `dims` (NaN propagates).", _X, _DIMS + (_NAN_TIES,), infer=infer.reduction,
             torch="torch.amax")
amin = OpDef("amin", "Minimum over `dims` (NaN propagates).", _X, _DIMS + (_NAN_TIES,), infer=infer.reduction,
             torch="torch.amin")
argmax = OpDef("argmax", "Index (int64) of the first maximum along `dim`, or of the flattened tensor.", _X,
               (Attr("dim", I64, "the reduced dim; absent: the flattened tensor", default=None), _KEEP),
               infer=_arg_reduce, torch="torch.argmax")
argmin = OpDef("argmin", "Index (int64) of the first minimum along `dim`, or of the flattened tensor.", _X,
               (Attr("dim", I64, "the reduced dim; absent: the flattened tensor", default=None), _KEEP),
               infer=_arg_reduce, torch="torch.argmin")
prod = OpDef("prod", "Product over `dims`; bool/integer input gives i64.", _X, _DIMS,
             infer=partial(infer.reduction, widen_int=True), torch="torch.prod")
var = OpDef("var", "Variance over `dims`: sum((x - mean)**2) / (N - correction).", (FloatOperand("input"),),
            _DIMS + (Attr("correction", I64, "subtracted from the element count (1: Bessel)", default=1),),
            infer=_variance, torch="torch.var")
any = OpDef("any", "Whether any element over `dims` is nonzero (i1; ui8 input gives ui8).", _X, _DIMS,  # noqa: A001
            infer=partial(_with_elem, elem_of=lambda e: e if e in UNSIGNED_TYPES else "i1"), torch="torch.any")
all = OpDef("all", "Whether every element over `dims` is nonzero (i1; ui8 input gives ui8).", _X, _DIMS,  # noqa: A001
            infer=partial(_with_elem, elem_of=lambda e: e if e in UNSIGNED_TYPES else "i1"), torch="torch.all")
logsumexp = OpDef("logsumexp", "log(sum(exp(x))) over `dims`, computed stably; integer input gives float32.", _X,
                  _DIMS, infer=partial(_with_elem, elem_of=lambda e: e if is_float(e) else "f32"),
                  torch="torch.logsumexp")
sort = OpDef("sort", "Stable sort along `dim`: the sorted values and their original (int64) indices; NaN sorts "
             "as the largest value.", _X,
             (Attr("dim", I64, "the sorted dimension", default=-1),
              Attr("descending", BOOL, "largest first", default=False)),
             results=("values", "indices"), infer=_sort, torch="torch.sort")
topk = OpDef("topk", "The `k` largest (or smallest) values along `dim`, sorted, and their int64 indices.", _X,
             (Attr("k", I64, "how many"), Attr("dim", I64, "the searched dimension", default=-1),
              Attr("largest", BOOL, "largest (true) or smallest (false)", default=True)),
             results=("values", "indices"), infer=_topk, torch="torch.topk")

REDUCE_OPS = (sum, mean, amax, amin, argmax, argmin, prod, var, any, all, logsumexp, sort, topk)
