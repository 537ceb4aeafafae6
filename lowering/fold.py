"""fxla-level cleanups run before conversion: ``fxla-fold-constants`` and ``fxla-dce``.

Constant folding evaluates an fxla op whose operands are all ``fxla.constant`` ops with numpy and replaces it by
an ``fxla.constant`` holding the result.  Only ops whose numpy evaluation is bit-identical to torch's (and to the
StableHLO fxla emits) are folded: exactly rounded arithmetic (``+ - * /``, ``neg``, ``abs``, ``maximum``,
``minimum``), comparisons, ``where``, ``reshape``, ``permute``, ``expand`` and ``convert``, on f32/f64, signed
integer and bool tensors (half precision is left to XLA), with results of at most :data:`MAX_FOLDED_ELEMENTS`
elements (folding must not blow up the IR with large literals).  Operands promote exactly as the op table says
(:func:`fxla.dialects.fxla.result_elem`).

Folding leaves the constants it consumed in place (run ``fxla-dce`` after it, as the default pipeline does).
Dead-code elimination erases fxla ops none of whose results are used (every fxla op is side-effect free).
"""
from __future__ import annotations

import math
from typing import Callable, Dict, Optional

import numpy as np

from fxla.dialects.fxla import BY_NAME, ops, result_elem, sig_of
from fxla.dialects.fxla.opdef import type_cache
from fxla.dialects.mlir import ir

#: the largest result (in elements) constant folding materialises
MAX_FOLDED_ELEMENTS = 4096

_NP = {"f32": np.float32, "f64": np.float64, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
       "i1": np.bool_}


def _np_type(elem: str):
    return _NP.get(elem)


def constant_value(op) -> Optional[np.ndarray]:
    """The value of an ``fxla.constant`` op as a numpy array (``None`` for element types not folded)."""
    attr = ir.DenseElementsAttr(op.attributes["value"])
    sig = sig_of(attr.type)
    dtype = _np_type(sig.elem)
    if dtype is None:
        return None
    if attr.is_splat:
        scalar = attr.get_splat_value()
        if sig.elem.startswith("f"):
            value = ir.FloatAttr(scalar).value
        elif sig.elem == "i1":
            # the bindings return i1 splats already down-cast to BoolAttr (there is no BoolAttr.isinstance)
            value = scalar.value if isinstance(scalar, ir.BoolAttr) else bool(ir.IntegerAttr(scalar).value)
        else:
            value = ir.IntegerAttr(scalar).value
        return np.full(sig.shape, value, dtype=dtype)
    return np.asarray(np.array(attr), dtype=dtype).reshape(sig.shape)


def _attr_of(array: np.ndarray, result_type: ir.Type) -> ir.Attribute:
    sig = sig_of(result_type)
    elem = ir.RankedTensorType(result_type).element_type
    array = np.ascontiguousarray(array.astype(_np_type(sig.elem)).reshape(sig.shape))
    if array.size and np.all(array.reshape(-1) == array.reshape(-1)[0]) and \
            not (sig.elem.startswith("f") and np.isnan(array.reshape(-1)[0])):
        first = array.reshape(-1)[0]
        scalar = ir.FloatAttr.get(elem, float(first)) if sig.elem.startswith("f") else \
            ir.IntegerAttr.get(elem, int(first))
        return ir.DenseElementsAttr.get_splat(ir.RankedTensorType(result_type), scalar)
    return ir.DenseElementsAttr.get(array, type=elem)


def _promoted(args, op) -> list:
    elem = result_elem([sig_of(v.type) for v in op.operands])
    dtype = _np_type(elem)
    if dtype is None:
        raise _Skip
    return [a.astype(dtype) for a in args]


class _Skip(Exception):
    """This op is not folded (unsupported type or form)."""


def _binary(fn):
    def fold(op, args, attrs):
        a, b = _promoted(args, op)
        with np.errstate(all="ignore"):
            return fn(a, b)
    return fold


def _true_div(op, args, attrs):
    dtype = _np_type(sig_of(op.results[0].type).elem)
    with np.errstate(all="ignore"):
        return np.divide(args[0].astype(dtype), args[1].astype(dtype))


def _where(op, args, attrs):
    cond, a, b = args
    elem = result_elem([sig_of(v.type) for v in list(op.operands)[1:]])
    dtype = _np_type(elem)
    if dtype is None:
        raise _Skip
    return np.where(cond, a.astype(dtype), b.astype(dtype))


def _convert(op, args, attrs):
    target = sig_of(op.results[0].type).elem
    x = args[0]
    if np.issubdtype(x.dtype, np.floating) and target not in ("i1",) and not target.startswith("f"):
        if not np.all(np.isfinite(x)):
            raise _Skip                      # NaN/inf -> int is implementation-defined; leave it to XLA
    return x.astype(np.bool_) if target == "i1" else x.astype(_np_type(target))


_FOLDERS: Dict[object, Callable] = {
    ops.add: _binary(np.add), ops.sub: _binary(np.subtract), ops.mul: _binary(np.multiply), ops.div: _true_div,
    ops.maximum: _binary(np.maximum), ops.minimum: _binary(np.minimum),
    ops.eq: _binary(np.equal), ops.ne: _binary(np.not_equal), ops.lt: _binary(np.less),
    ops.le: _binary(np.less_equal), ops.gt: _binary(np.greater), ops.ge: _binary(np.greater_equal),
    ops.neg: lambda op, args, attrs: np.negative(args[0]),
    ops.abs: lambda op, args, attrs: np.abs(args[0]),
    ops.where: _where,
    ops.reshape: lambda op, args, attrs: args[0].reshape(attrs["shape"]),
    ops.permute: lambda op, args, attrs: np.transpose(args[0], [d % max(args[0].ndim, 1) for d in attrs["dims"]]),
    ops.expand: lambda op, args, attrs: np.broadcast_to(args[0], attrs["shape"]),
    ops.convert: _convert,
}

#: the fxla ops ``fxla-fold-constants`` folds (for the docs and tests)
FOLDABLE = tuple(sorted(opdef.name for opdef in _FOLDERS))


def _is_constant(value) -> bool:
    owner = value.owner
    return isinstance(owner, ir.OpView) and owner.operation.name == ops.constant.name


def _ops_of(root: ir.Operation):
    found = []

    def visit(op):
        found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found


def fold_constants(module) -> None:
    """Replace every foldable fxla op whose operands are all ``fxla.constant`` by its value (in place)."""
    root = module.operation if isinstance(module, ir.Module) else module
    with root.context, type_cache():
        for op in _ops_of(root):
            opdef = BY_NAME.get(op.name)
            fold = _FOLDERS.get(opdef)
            if fold is None or not all(_is_constant(v) for v in op.operands):
                continue
            result_type = op.results[0].type
            sig = sig_of(result_type)
            if sig is None or _np_type(sig.elem) is None or math.prod(sig.shape) > MAX_FOLDED_ELEMENTS:
                continue
            args = [constant_value(v.owner.operation) for v in op.operands]
            if any(a is None for a in args):
                continue
            try:
                _, attrs = opdef.read(op)
                value = np.asarray(fold(op, args, attrs))
            except _Skip:
                continue
            with ir.InsertionPoint(op), op.location:
                folded = ops.constant.build([], {"value": _attr_of(value, result_type)}, [result_type], op.location)
            op.results[0].replace_all_uses_with(folded.result)
            op.erase()


def dead_code_elimination(module) -> None:
    """Erase fxla ops whose results are all unused, until none is left (in place)."""
    root = module.operation if isinstance(module, ir.Module) else module
    changed = True
    while changed:
        changed = False
        for op in reversed(_ops_of(root)):
            if op.name.startswith("fxla.") and all(next(iter(r.uses), None) is None for r in op.results):
                op.erase()
                changed = True
