"""Declarative op definitions: the schema every ``fxla`` op is built, read and verified against.

An :class:`OpDef` states an op's operands (:class:`Operand`, possibly optional), its results, its attributes
(:class:`Attr` with an :class:`AttrKind`), a type-inference function over :class:`~.types.Sig` and an optional
extra verifier.  From that one table fxla derives builders (``opdef.build``), readers (``opdef.read``),
the verifier (:mod:`.verifier`) and the reference docs (:mod:`.docs`).

Ops are created in generic form (``"fxla.add"(%a, %b) : (…) -> …``) in fxla's own MLIR context, where
unregistered dialects are allowed; the table, not MLIR, is the source of truth for their structure.
Ops with optional operands carry MLIR's standard ``operandSegmentSizes`` attribute.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..mlir import ir
from . import symbolic
from .symbolic import DYNAMIC, SYM_ATTR, UNKNOWN, has_sym, is_result_slot, is_sym, result_slot
from .types import ALL_TYPES, FLOAT_TYPES, Sig

SEGMENTS = "operandSegmentSizes"
#: the element type of an inferred result that the op leaves to its creator (e.g. ``convert``'s)
ANY_ELEM = "*"
_REQUIRED = object()


@dataclass(frozen=True)
class AttrKind:
    """How one kind of attribute maps between Python values and MLIR attributes."""

    name: str                                  # as shown in docs, e.g. "i64", "array<i64>"
    to_mlir: Callable[[Any], ir.Attribute]
    to_python: Callable[[ir.Attribute], Any]   # raises (TypeError/ValueError) on a wrong kind


def _int_attr(value):
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))


def _int_value(attr):
    return ir.IntegerAttr(attr).value


def _float_attr(value):
    return ir.FloatAttr.get(ir.F64Type.get(), float(value))


def _float_value(attr):
    return ir.FloatAttr(attr).value


def _array_value(attr):
    return tuple(ir.DenseI64ArrayAttr(attr))


def _dense_value(attr):
    return ir.DenseElementsAttr(attr)


I64 = AttrKind("i64", _int_attr, _int_value)
F64 = AttrKind("f64", _float_attr, _float_value)
BOOL = AttrKind("bool", lambda v: ir.BoolAttr.get(bool(v)), lambda a: ir.BoolAttr(a).value)
STR = AttrKind("string", lambda v: ir.StringAttr.get(str(v)), lambda a: ir.StringAttr(a).value)
I64_ARRAY = AttrKind("array<i64>", lambda v: ir.DenseI64ArrayAttr.get([int(x) for x in v]), _array_value)
DENSE = AttrKind("dense elements", lambda v: v, _dense_value)


@dataclass(frozen=True)
class Operand:
    """One operand: a ranked tensor whose element type is one of ``elems``."""

    name: str
    doc: str = ""
    optional: bool = False
    elems: Tuple[str, ...] = ALL_TYPES
    variadic: bool = False          # one or more values (the op's only operand; its Sig arrives as a list)


def FloatOperand(name: str, doc: str = "", optional: bool = False) -> Operand:  # noqa: N802 (a constructor)
    return Operand(name, doc, optional, FLOAT_TYPES)


def Variadic(name: str, doc: str = "", elems: Tuple[str, ...] = ALL_TYPES) -> Operand:  # noqa: N802
    """One or more tensors (e.g. the inputs of ``fxla.concat``); must be the op's only operand."""
    return Operand(name, doc, False, elems, variadic=True)


@dataclass(frozen=True)
class Attr:
    """One attribute: its name, kind, doc and default (``choices`` restricts string/int values)."""

    name: str
    kind: AttrKind
    doc: str = ""
    default: Any = _REQUIRED
    choices: Tuple[Any, ...] = ()

    @property
    def required(self) -> bool:
        """Whether the attribute has no default (it must be given)."""
        return self.default is _REQUIRED


InferFn = Callable[[Sequence[Optional[Sig]], Dict[str, Any]], List[Optional[Sig]]]
VerifyFn = Callable[[Sequence[Optional[Sig]], Dict[str, Any]], Optional[str]]


@dataclass(frozen=True, eq=False)
class OpDef:
    """The definition of one ``fxla`` op.  Identity-hashed: lowering tables are keyed by these objects.

    ``infer(operands, attrs)`` receives one :class:`Sig` per declared operand (``None`` for an absent optional
    one) and the attributes as Python values with defaults filled in.  It returns one ``Sig`` per result; a
    result whose element type the op leaves to its creator (``convert``) has ``elem == ANY_ELEM``.  It raises
    :class:`InferError` with a readable reason when the operands do not fit.
    """

    mnemonic: str
    summary: str
    operands: Tuple[Operand, ...]
    attributes: Tuple[Attr, ...] = ()
    results: Tuple[str, ...] = ("result",)
    infer: Optional[InferFn] = None
    torch: str = ""                       # the torch semantics it mirrors, for the docs
    description: str = ""
    attr_index: Dict[str, Attr] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "attr_index", {a.name: a for a in self.attributes})
        # derived once: read on every build/read/verify of an op
        object.__setattr__(self, "_variadic", any(o.variadic for o in self.operands))
        object.__setattr__(self, "_optional", any(o.optional for o in self.operands))
        object.__setattr__(self, "_name", f"fxla.{self.mnemonic}")
        if self.is_variadic and len(self.operands) != 1:
            raise ValueError(f"{self.name}: a variadic operand must be the op's only operand")

    @property
    def is_variadic(self) -> bool:
        """Whether an operand is variadic (e.g. ``fxla.concat``'s inputs)."""
        return self._variadic

    @property
    def name(self) -> str:
        """The op's full name, ``fxla.<mnemonic>``."""
        return self._name

    @property
    def has_optional(self) -> bool:
        """Whether an operand is optional."""
        return self._optional

    # -- building -----------------------------------------------------------------------------------------------
    def build(self, operands: Sequence[Optional[ir.Value]], attrs: Optional[Dict[str, Any]] = None,
              result_types: Optional[Sequence[ir.Type]] = None, loc: Optional[ir.Location] = None) -> ir.Operation:
        """Create the op at the current insertion point.

        ``operands`` has one entry per declared operand (``None`` for an absent optional one; a list for a
        variadic one).  ``attrs`` are
        Python values (defaults are stored explicitly so the printed IR is self-describing).  Without
        ``result_types`` the result types are inferred from the op table.
        """
        if len(operands) != len(self.operands):
            raise ValueError(f"{self.name} takes {len(self.operands)} operands, got {len(operands)}")
        scope = symbolic.current()
        if scope is not None:
            return self._build_symbolic(scope, operands, attrs, result_types, loc)
        mlir_attrs = {a.name: a.kind.to_mlir(value) for a, value in self._attr_values(attrs) if value is not None}
        present, sigs = self._operands(operands, _static_sig)
        if self.has_optional:
            mlir_attrs[SEGMENTS] = ir.DenseI32ArrayAttr.get([0 if v is None else 1 for v in operands])
        if result_types is None:
            inferred = self._infer_cached(sigs, mlir_attrs)
            if any(s.elem == ANY_ELEM for s in inferred):
                raise ValueError(f"{self.name}: result type cannot be inferred; pass result_types")
            result_types = [type_of(s) for s in inferred]
        return ir.Operation.create(self.name, results=list(result_types), operands=present,
                                   attributes=mlir_attrs, loc=loc)

    def _attr_values(self, attrs: Optional[Dict[str, Any]]):
        """``(Attr, Python value or None)`` of each declared attribute (defaults filled in); an unknown or missing
        required one is a ``ValueError``."""
        attrs = attrs or {}
        unknown = set(attrs) - set(self.attr_index)
        if unknown:
            raise ValueError(f"{self.name} has no attribute(s) {sorted(unknown)}")
        for a in self.attributes:
            value = attrs.get(a.name, None if a.required else a.default)
            if value is None and a.required:
                raise ValueError(f"{self.name} requires attribute '{a.name}'")
            yield a, value

    def _operands(self, operands, sig: Callable[[ir.Value], Optional[Sig]]):
        """``(the present operand values, one Sig per declared operand -- a list for a variadic one)``."""
        if self.is_variadic:
            values = list(operands[0])
            if not values:
                raise ValueError(f"{self.name} needs at least one '{self.operands[0].name}' operand")
            return values, [[sig(v) for v in values]]
        return [v for v in operands if v is not None], [None if v is None else sig(v) for v in operands]

    def _build_symbolic(self, scope, operands, attrs, result_types, loc) -> ir.Operation:
        """``build`` while a polymorphic program is lowered (:mod:`.symbolic`): operands may have symbolic
        shapes, attributes symbolic sizes (stored as ``?`` and passed as trailing size operands, named by
        ``fxla.sym``), and the results' symbolic shapes are recorded in ``scope``."""
        python, mlir_attrs, slots, sizes = {}, {}, [], []
        for a, value in self._attr_values(attrs):
            if value is None:
                python[a.name] = None
                continue
            if a.kind is I64_ARRAY:
                value = tuple(scope.normalize(v) for v in value)
                stored = []
                for i, v in enumerate(value):
                    if is_sym(v):
                        slots.append(f"{a.name}.{i}")
                        sizes.append(scope.materialize(v))
                        v = DYNAMIC
                    stored.append(v)
                mlir_attrs[a.name] = a.kind.to_mlir(stored)
            elif a.kind is I64 and is_sym(scope.normalize(value)):
                value = scope.normalize(value)
                slots.append(a.name)
                sizes.append(scope.materialize(value))
                mlir_attrs[a.name] = a.kind.to_mlir(DYNAMIC)
            else:
                mlir_attrs[a.name] = a.kind.to_mlir(value)
            python[a.name] = value
        present, sigs = self._operands(operands, value_sig)
        if self.has_optional:
            mlir_attrs[SEGMENTS] = ir.DenseI32ArrayAttr.get([0 if v is None else 1 for v in operands])
        inferred = None
        if self.infer is not None and (result_types is None or
                                       any(not ir.ShapedType(t).has_static_shape for t in result_types)):
            inferred = [Sig(tuple(scope.normalize(d) for d in s.shape), s.elem) for s in self.infer(sigs, python)]
        if result_types is None:
            if inferred is None or any(s.elem == ANY_ELEM for s in inferred):
                raise ValueError(f"{self.name}: result type cannot be inferred; pass result_types")
            result_types = [type_of(s) for s in inferred]
        elif inferred is not None:         # (the creator's element types, the inferred symbolic shapes)
            inferred = [Sig(s.shape, sig_of_elem(t)) for s, t in zip(inferred, result_types)]
        for r, (t, s) in enumerate(zip(result_types, inferred or ())):   # (every ? result dim's size)
            if not ir.ShapedType(t).has_static_shape:
                for d, size in enumerate(s.shape):
                    value = scope.reify(size) if is_sym(size) else None
                    if value is not None:
                        slots.append(result_slot(r, d))
                        sizes.append(value)
        if slots:
            mlir_attrs[SYM_ATTR] = ir.ArrayAttr.get([ir.StringAttr.get(n) for n in slots])
        op = ir.Operation.create(self.name, results=list(result_types), operands=present + sizes,
                                 attributes=mlir_attrs, loc=loc)
        if op.results and any(not is_result_slot(slot) for slot in slots):
            scope.attrs[op.results[0]] = python
        for i, t in enumerate(result_types):
            if not ir.ShapedType(t).has_static_shape:
                if inferred is None:
                    raise ValueError(f"{self.name}: a result with symbolic dims needs the op's type inference")
                scope.sigs[op.results[i]] = inferred[i]
        return op

    def _infer_cached(self, sigs, mlir_attrs: Dict[str, ir.Attribute]) -> List[Sig]:
        """``infer`` on the op's operand sigs and attributes; inside a :func:`type_cache` block each distinct
        (op, operand sigs, attributes) is inferred once (attributes are uniqued MLIR objects: compared exactly)."""
        caches = _CACHES.get()
        if caches is None:
            return self.infer(sigs, self.python_attrs_from(mlir_attrs))
        key = (self, tuple(tuple(s) if type(s) is list else s for s in sigs), tuple(mlir_attrs.items()))
        inferred = caches.infer.get(key)
        if inferred is None:
            inferred = caches.infer[key] = tuple(self.infer(sigs, self.python_attrs_from(mlir_attrs)))
        return list(inferred)

    def __call__(self, *operands, loc=None, result_type=None, **attrs):
        """``ops.add(a, b)`` — build the op and return its value (a tuple of values for a multi-result op).

        ``result_type`` is one type, or a sequence of types for a multi-result op.
        """
        types = None if result_type is None else \
            (list(result_type) if isinstance(result_type, (list, tuple)) else [result_type])
        op = self.build(list(operands), attrs, types, loc)
        return op.result if len(self.results) == 1 else tuple(op.results)

    # -- reading ------------------------------------------------------------------------------------------------
    def python_attrs_from(self, mlir_attrs: Dict[str, ir.Attribute]) -> Dict[str, Any]:
        """The op's attributes as Python values, absent optional ones at their defaults."""
        values = {}
        for a in self.attributes:
            if a.name in mlir_attrs:
                values[a.name] = a.kind.to_python(mlir_attrs[a.name])
            elif not a.required:
                values[a.name] = a.default
        return values

    def read(self, op: ir.Operation) -> Tuple[List[Optional[ir.Value]], Dict[str, Any]]:
        """Operands (``None`` for absent optional ones) and Python attribute values of a verified op."""
        op_attrs = op.attributes
        attrs = {name: op_attrs[name] for name in op_attrs}
        values = list(op.operands)
        if SYM_ATTR in attrs:                   # (the trailing size operands of symbolic attributes)
            values = values[:len(values) - len(ir.ArrayAttr(attrs[SYM_ATTR]))]
        if self.is_variadic:
            return [values], self.python_attrs_from(attrs)
        if self.has_optional:
            sizes = list(ir.DenseI32ArrayAttr(attrs[SEGMENTS]))
            it = iter(values)
            values = [next(it) if size else None for size in sizes]
        return values, self.python_attrs_from(attrs)


def attr_names(op: ir.Operation) -> List[str]:
    """Names of all attributes on ``op``."""
    return list(op.attributes)


# The same few types and op forms recur in every op of a module (each operand and result, in every pass), so
# inside a ``type_cache()`` block sig_of and type inference remember their answers.  Keys are ``ir.Type`` /
# ``ir.Attribute`` objects (hashed and compared by MLIR's uniqued pointer); each key keeps its context alive, so a
# cached pointer cannot be reused for another type while the block lasts, and the caches are dropped when the
# outermost block ends (nothing outlives one lowering / one pass).
class _Caches:
    __slots__ = ("sigs", "infer")

    def __init__(self) -> None:
        self.sigs: Dict[Any, Optional[Sig]] = {}       # ir.Type -> Sig (or None)
        self.infer: Dict[tuple, tuple] = {}            # (OpDef, operand sigs, MLIR attributes) -> result sigs


_CACHES: contextvars.ContextVar = contextvars.ContextVar("fxla_type_caches", default=None)


@contextlib.contextmanager
def type_cache():
    """Remember :func:`sig_of` answers and inferred result types for the duration of the block (nested blocks
    share the outermost one's caches)."""
    if _CACHES.get() is not None:
        yield
        return
    token = _CACHES.set(_Caches())
    try:
        yield
    finally:
        _CACHES.reset(token)


_FLOAT_ELEMS = {ir.F16Type: "f16", ir.BF16Type: "bf16", ir.F32Type: "f32", ir.F64Type: "f64"}


def _elem_name(et: ir.Type) -> str:
    """MLIR's spelling of an element type, without printing it for the common ones."""
    name = _FLOAT_ELEMS.get(type(et))
    if name is not None:
        return name
    if type(et) is ir.IntegerType:
        if et.is_signless:
            return f"i{et.width}"
        if et.is_unsigned:
            return f"ui{et.width}"
    return str(et)


def _sig_of(t: ir.Type) -> Optional[Sig]:
    rt = t if isinstance(t, ir.RankedTensorType) else t.maybe_downcast()
    if not isinstance(rt, ir.RankedTensorType):
        return None
    if not rt.has_static_shape:
        return None
    return Sig(tuple(rt.shape), _elem_name(rt.element_type))


def sig_of_shaped(t: ir.Type) -> Optional[Sig]:
    """The :class:`Sig` of a ranked tensor type, static or not (a ``?`` dim is :data:`~.symbolic.UNKNOWN`: equal
    to ``DYNAMIC``, but no arithmetic)."""
    sig = sig_of(t)
    if sig is not None:
        return sig
    rt = t if isinstance(t, ir.RankedTensorType) else t.maybe_downcast()
    if not isinstance(rt, ir.RankedTensorType):
        return None
    return Sig(tuple(UNKNOWN if rt.is_dynamic_dim(i) else rt.get_dim_size(i) for i in range(rt.rank)),
               _elem_name(rt.element_type))


def sig_of(t: ir.Type) -> Optional[Sig]:
    """The :class:`Sig` of a ranked static tensor type, else ``None``."""
    caches = _CACHES.get()
    if caches is None:
        return _sig_of(t)
    cache = caches.sigs
    sig = cache.get(t, cache)
    if sig is cache:
        sig = cache[t] = _sig_of(t)
    return sig


_ELEM_TYPES = {"f16": ir.F16Type.get, "bf16": ir.BF16Type.get, "f32": ir.F32Type.get, "f64": ir.F64Type.get,
               "i1": lambda: ir.IntegerType.get_signless(1), "i8": lambda: ir.IntegerType.get_signless(8),
               "i16": lambda: ir.IntegerType.get_signless(16), "i32": lambda: ir.IntegerType.get_signless(32),
               "i64": lambda: ir.IntegerType.get_signless(64), "ui8": lambda: ir.IntegerType.get_unsigned(8)}


def elem_type(elem: str) -> ir.Type:
    """The MLIR element type spelled ``elem`` (``'f32'``, ``'ui8'`` …) in the current context."""
    make = _ELEM_TYPES.get(elem)
    return make() if make is not None else ir.Type.parse(elem)


def type_of(sig: Sig) -> ir.RankedTensorType:
    """The MLIR tensor type of ``sig`` (the inverse of :func:`sig_of`; a symbolic dim is ``?``); needs an active
    MLIR context."""
    shape = sig.shape
    if has_sym(shape) or DYNAMIC in shape:         # (a symbolic size, or an Unknown ? size)
        shape = [DYNAMIC if is_sym(d) or d == DYNAMIC else d for d in shape]
    return ir.RankedTensorType.get(list(shape), elem_type(sig.elem))


def _static_sig(value: ir.Value) -> Optional[Sig]:
    return sig_of(value.type)


def sig_of_elem(t: ir.Type) -> str:
    """The element type (MLIR spelling) of the ranked tensor type ``t``, static or not."""
    return _elem_name(ir.RankedTensorType(t).element_type)


def value_sig(value: ir.Value) -> Optional[Sig]:
    """The :class:`Sig` of ``value``: from its type when static, else (a polymorphic program being built) its
    symbolic shape recorded by the active :class:`~.symbolic.SymbolicScope`."""
    sig = sig_of(value.type)
    if sig is None:
        scope = symbolic.current()
        if scope is not None:
            return scope.sigs.get(value)
    return sig


class InferError(Exception):
    """Raised by an op's type inference when its operands/attributes are inconsistent (a verifier finding)."""


class ElementTypeMismatch(InferError):
    """Operands whose element types torch itself refuses to mix for this op (it does not promote there, and eager
    raises too): the caller's dtype mistake, not a form fxla lacks."""
