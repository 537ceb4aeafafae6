"""The ``indexing`` family: ops that pick, place or mask elements by position: slices, gathers, scatters, selection
and triangular masks (part of the op table; see :mod:`.ops`).

``x[...]`` with ints, slices, ``None`` and ``...`` lowers to ``fxla.slice`` + ``fxla.reshape``; an integer
tensor index to ``fxla.index_select``.  Splitting ops (``split``, ``chunk``, ``unbind``) become several
``fxla.slice`` ops.
"""
from __future__ import annotations

from . import infer_indexing as inf
from .opdef import I64, I64_ARRAY, STR, Attr, OpDef, Operand
from .types import BOOL_TYPES, SIGNED_TYPES

_X = (Operand("input"),)
_DIM = Attr("dim", I64, "the indexed dimension (negative counts from the end)")
_INDEX = Operand("index", "integer indices (torch requires int64)", elems=SIGNED_TYPES)

slice = OpDef(  # noqa: A001  (the fxla op name)
    "slice", "Strided slice: dim i keeps elements start[i], start[i]+stride[i], … below limit[i] "
    "(basic indexing x[a:b:c], narrow, select, split).", _X,
    (Attr("start", I64_ARRAY, "first element per dim, non-negative"),
     Attr("limit", I64_ARRAY, "exclusive end per dim, start <= limit <= size"),
     Attr("stride", I64_ARRAY, "positive step per dim")),
    infer=inf.slice_, torch="torch.Tensor.__getitem__")
gather = OpDef("gather", "out[i][j][k] = input[index[i][j][k]][j][k] for dim=0 (and likewise for other dims).",
               (Operand("input"), _INDEX), (_DIM,), infer=inf.gather, torch="torch.gather")
index_select = OpDef("index_select", "Select the entries `index` (1-D) along `dim` (also embedding lookups and "
                     "x[idx]).", (Operand("input"), Operand("index", "[n]", elems=SIGNED_TYPES)), (_DIM,),
                     infer=inf.index_select, torch="torch.index_select")
scatter = OpDef("scatter", "Functional scatter: a copy of input with self[index[i][j]][j] = src[i][j] "
                "(dim=0); `reduce` combines each scattered value with the one already there instead "
                "(scatter_add, scatter_reduce with include_self=True: sum, prod, amax, amin).",
                (Operand("input"), _INDEX, Operand("src", "at least index's shape; only that part is used")),
                (_DIM, Attr("reduce", STR, "'none' (overwrite), 'add', 'multiply', 'amax' or 'amin' (NaN "
                            "propagates)", default="none", choices=("none", "add", "multiply", "amax", "amin"))),
                infer=inf.scatter, torch="torch.scatter")
where = OpDef("where", "condition ? input : other, broadcasting all three; input/other promote like torch.where.",
              (Operand("condition", elems=BOOL_TYPES), Operand("input"), Operand("other")), infer=inf.where,
              torch="torch.where")
tril = OpDef("tril", "Zero the elements above the `diagonal`-th diagonal of the last two dims.", _X,
             (Attr("diagonal", I64, "0: main diagonal, > 0 above it, < 0 below it", default=0),),
             infer=inf.triangle, torch="torch.tril")
triu = OpDef("triu", "Zero the elements below the `diagonal`-th diagonal of the last two dims.", _X,
             (Attr("diagonal", I64, "0: main diagonal, > 0 above it, < 0 below it", default=0),),
             infer=inf.triangle, torch="torch.triu")

INDEXING_OPS = (slice, gather, index_select, scatter, where, tril, triu)
