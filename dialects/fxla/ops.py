"""The ``fxla`` op table.  Every op mirrors one torch operation's semantics on static shapes.

Read this file as the dialect's specification; `docs/dialect.md` is generated from it
(`python -m fxla.dialects.fxla.docs`).  Shared conventions:

* ops are written in MLIR's generic form, e.g. `"fxla.add"(%a, %b) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>`;
* operands are ranked, statically shaped tensors; Python scalars enter as 0-d `fxla.constant` ops;
* elementwise ops broadcast like torch and promote element types like `torch.result_type` (0-d operands
  only raise the category); the lowering to StableHLO inserts the broadcasts and converts;
* ops with optional operands carry `operandSegmentSizes` (one 0/1 entry per declared operand);
* dims may be negative (counted from the end), as in torch.
"""
from __future__ import annotations

from functools import partial

from . import infer
from .opdef import BOOL, DENSE, F64, I64, I64_ARRAY, STR, Attr, FloatOperand, OpDef, Operand
from .types import FLOAT_TYPES, INT_TYPES
from .ops_indexing import (INDEXING_OPS, arange, concat, expand, flip, gather, index_select, pad, scatter,  # noqa: F401
                           slice, tril, triu, where)
from .ops_math import (MATH_OPS, bitwise_and, bitwise_not, bitwise_or, bitwise_xor, ceil, clamp, cos,  # noqa: F401
                       elu, erf, expm1, floor, floor_divide, fmod, hardsigmoid, hardswish, leaky_relu, log1p,
                       logical_and, logical_not, logical_or, logical_xor, logsigmoid, mish, reciprocal, remainder,
                       round, sign, silu, sin, softplus, tan, trunc)
from .ops_reduce import (REDUCE_OPS, all, amax, amin, any, argmax, argmin, cumsum, logsumexp, prod, sort,  # noqa: F401
                         topk, var)
from .ops_pool import POOL_OPS, max_pool, max_pool_with_indices  # noqa: F401
from .ops_scan import SCAN_OPS, cummax, cummin, cumprod, logcumsumexp  # noqa: F401

_X = (Operand("input"),)
_XY = (Operand("lhs"), Operand("rhs"))
_DIMS = (Attr("dims", I64_ARRAY, "dimensions to reduce; empty means all"),
         Attr("keepdim", BOOL, "keep reduced dimensions with size 1", default=False))


def _binary(mnemonic: str, torch_name: str, summary: str, **kw) -> OpDef:
    return OpDef(mnemonic, summary, _XY, infer=partial(infer.elementwise, **kw), torch=torch_name)


def _unary(mnemonic: str, torch_name: str, summary: str, **kw) -> OpDef:
    return OpDef(mnemonic, summary, _X, infer=partial(infer.elementwise, **kw), torch=torch_name)


add = _binary("add", "torch.add", "Elementwise sum with broadcasting and type promotion.")
sub = _binary("sub", "torch.sub", "Elementwise difference.")
mul = _binary("mul", "torch.mul", "Elementwise product.")
div = _binary("div", "torch.div", "True division; integer operands give a float result.", float_result=True)
maximum = _binary("maximum", "torch.maximum", "Elementwise maximum.")
minimum = _binary("minimum", "torch.minimum", "Elementwise minimum.")
pow = _binary("pow", "torch.pow", "Elementwise power.")  # noqa: A001  (mirrors torch.pow)
eq = _binary("eq", "torch.eq", "Elementwise ==, an i1 result.", result="i1")
ne = _binary("ne", "torch.ne", "Elementwise !=, an i1 result.", result="i1")
lt = _binary("lt", "torch.lt", "Elementwise <, an i1 result.", result="i1")
le = _binary("le", "torch.le", "Elementwise <=, an i1 result.", result="i1")
gt = _binary("gt", "torch.gt", "Elementwise >, an i1 result.", result="i1")
ge = _binary("ge", "torch.ge", "Elementwise >=, an i1 result.", result="i1")

_NUMBERS = (Operand("input", elems=INT_TYPES + FLOAT_TYPES),)   # torch rejects neg/abs on bool
neg = OpDef("neg", "Elementwise negation (unsigned integers wrap).", _NUMBERS, infer=infer.same_as_first,
            torch="torch.neg")
abs = OpDef("abs", "Elementwise absolute value (identity on unsigned integers).", _NUMBERS,  # noqa: A001
            infer=infer.same_as_first, torch="torch.abs")
relu = _unary("relu", "torch.relu", "max(x, 0).")
exp = _unary("exp", "torch.exp", "Elementwise e**x; integer input gives float32.", float_result=True)
log = _unary("log", "torch.log", "Natural logarithm; integer input gives float32.", float_result=True)
sqrt = _unary("sqrt", "torch.sqrt", "Square root; integer input gives float32.", float_result=True)
rsqrt = _unary("rsqrt", "torch.rsqrt", "1/sqrt(x); integer input gives float32.", float_result=True)
tanh = _unary("tanh", "torch.tanh", "Hyperbolic tangent; integer input gives float32.", float_result=True)
sigmoid = _unary("sigmoid", "torch.sigmoid", "1/(1+e**-x); integer input gives float32.", float_result=True)
gelu = OpDef("gelu", "Gaussian error linear unit.", (FloatOperand("input"),),
             (Attr("approximate", STR, "'none' (erf) or 'tanh'", default="none", choices=("none", "tanh")),),
             infer=infer.same_as_first, torch="torch.nn.functional.gelu")

softmax = OpDef("softmax", "Softmax along `dim`.", (FloatOperand("input"),),
                (Attr("dim", I64, "the normalised dimension"),), infer=infer.softmax,
                torch="torch.softmax")
log_softmax = OpDef("log_softmax", "log(softmax(x)) along `dim`, computed stably.", (FloatOperand("input"),),
                    (Attr("dim", I64, "the normalised dimension"),), infer=infer.softmax,
                    torch="torch.log_softmax")

linear = OpDef("linear", "y = x @ weight^T + bias over the last dimension of x.",
               (Operand("input", "[..., in]"), Operand("weight", "[out, in]"),
                Operand("bias", "[out]", optional=True)),
               infer=infer.linear, torch="torch.nn.functional.linear")
matmul = OpDef("matmul", "torch.matmul: 1-D/2-D products and broadcast batched matrix products.", _XY,
               infer=infer.matmul, torch="torch.matmul")

_SPATIAL2 = (Attr("stride", I64_ARRAY, "window strides, one per spatial dim"),
             Attr("padding", I64_ARRAY, "symmetric zero padding, one per spatial dim"),
             Attr("dilation", I64_ARRAY, "window dilation, one per spatial dim"))
conv = OpDef("conv", "N-d convolution (1-, 2- or 3-D: the spatial rank is the input rank - 2), NC... input; "
             "cross-correlation like torch.  `transposed` gives torch's conv_transpose*d (its gradient).",
             (Operand("input", "[N, C, *spatial]"),
              Operand("weight", "[O, C/groups, *kernel], transposed: [C, O/groups, *kernel]"),
              Operand("bias", "[O]", optional=True)),
             _SPATIAL2 + (Attr("groups", I64, "feature groups", default=1),
                          Attr("transposed", BOOL, "a transposed convolution (conv_transpose*d)", default=False),
                          Attr("output_padding", I64_ARRAY, "transposed only: extra size on the high end of each "
                               "spatial dim (empty: none)", default=())),
             infer=infer.conv, torch="torch.nn.functional.conv2d")
conv2d = conv   # the former name of the op
max_pool2d = OpDef("max_pool2d", "2-D max pooling over the last two dims (padding counts as -inf); the 2-D spelling "
                   "of `fxla.max_pool`, kept for existing IR (the lowering emits `fxla.max_pool`).",
                   (Operand("input", "[N, C, H, W] or [C, H, W]"),),
                   (Attr("kernel_size", I64_ARRAY, "window size"),) + _SPATIAL2 +
                   (Attr("ceil_mode", BOOL, "round output size up", default=False),),
                   infer=partial(infer.pool, spatial=2), torch="torch.nn.functional.max_pool2d")
avg_pool = OpDef("avg_pool", "N-d average pooling over the trailing len(kernel_size) dims (torch's avg_pool1d/2d/3d: "
                 "windows are clipped to the padded input; padding counts per `count_include_pad`).",
                 (FloatOperand("input", "[N, C, *spatial] or [C, *spatial]"),),
                 (Attr("kernel_size", I64_ARRAY, "window size"),
                  Attr("stride", I64_ARRAY, "window strides, one per spatial dim"),
                  Attr("padding", I64_ARRAY, "symmetric zero padding, one per spatial dim"),
                  Attr("ceil_mode", BOOL, "round output size up", default=False),
                  Attr("count_include_pad", BOOL, "padding elements count in the divisor", default=True),
                  Attr("divisor_override", I64, "divide by this instead (0: none)", default=0)),
                 infer=infer.pool, torch="torch.nn.functional.avg_pool2d")

reshape = OpDef("reshape", "Row-major reshape to a fully static `shape` (view/reshape/flatten).", _X,
                (Attr("shape", I64_ARRAY, "the result shape"),), infer=infer.reshape, torch="torch.reshape")
permute = OpDef("permute", "Permute dimensions: result dim i is input dim dims[i].", _X,
                (Attr("dims", I64_ARRAY, "a permutation of the input dims (negative allowed)"),),
                infer=infer.permute, torch="torch.permute")

sum = OpDef("sum", "Sum over `dims`; bool/integer input gives i64.", _X, _DIMS,
            infer=partial(infer.reduction, widen_int=True), torch="torch.sum")  # noqa: A001
mean = OpDef("mean", "Arithmetic mean over `dims`.", (FloatOperand("input"),), _DIMS,
             infer=partial(infer.reduction, float_only=True), torch="torch.mean")

layer_norm = OpDef("layer_norm", "Layer normalisation over the last `normalized_rank` dims.",
                   (FloatOperand("input"), FloatOperand("weight", optional=True),
                    FloatOperand("bias", optional=True)),
                   (Attr("normalized_rank", I64, "how many trailing dims are normalised"),
                    Attr("eps", F64, "added to the variance", default=1e-5)),
                   infer=infer.norm_last, torch="torch.nn.functional.layer_norm")

constant = OpDef("constant", "A tensor literal (also how Python scalars enter the IR, as 0-d tensors).", (),
                 (Attr("value", DENSE, "the elements; its type is the result type"),), infer=infer.constant,
                 torch="torch.tensor")
convert = OpDef("convert", "Element type conversion (Tensor.to(dtype)); the result type names the target.", _X,
                infer=infer.convert, torch="torch.Tensor.to")

#: The original core ops; the groups of ops_*.py follow them in ALL_OPS.
CORE_OPS = (add, sub, mul, div, maximum, minimum, pow, eq, ne, lt, le, gt, ge,
           neg, abs, relu, exp, log, sqrt, rsqrt, tanh, sigmoid, gelu, softmax, log_softmax,
           linear, matmul, conv, max_pool2d, avg_pool, reshape, permute, sum, mean, layer_norm, constant, convert)

#: Every op of the dialect, in documentation order.
ALL_OPS = CORE_OPS + INDEXING_OPS + MATH_OPS + REDUCE_OPS + POOL_OPS + SCAN_OPS

#: Op definitions by full name (``"fxla.add"``); used by the verifier and the parser-facing tools.
BY_NAME = {op.name: op for op in ALL_OPS}
