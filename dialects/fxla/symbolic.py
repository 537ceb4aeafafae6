"""Symbolic dimensions in the fxla dialect: ``?`` dims, and the shape arithmetic that gives their sizes.

A *polymorphic* fxla program (``fxla.compile(model, dynamic=...)``, :mod:`fxla.frontend.symbolic`) is lowered
once for every size of its symbolic dims.  Its tensor types have MLIR's dynamic size ``?`` where a dim is
symbolic (``tensor<2x?x64xf32>``), and every size the program needs as a number is computed by ops:

* ``fxla.dim_size %x {dim = k}`` -- the size of dim ``k`` of ``%x`` as a ``tensor<i64>`` (the symbols are read
  off the function's arguments this way);
* ``fxla.add`` / ``sub`` / ``mul`` / ``floor_divide`` / ``remainder`` / ``maximum`` / ``minimum`` on ``tensor<i64>``
  -- the arithmetic of sizes (``seq // heads``, ``2 * seq``);
* an op whose static attribute is a symbolic size (``fxla.reshape``'s ``shape``, ``fxla.slice``'s ``limit``) holds
  ``?`` (:data:`DYNAMIC`) at that position and takes the size as an extra trailing operand; its ``fxla.sym``
  attribute names the positions, in operand order: ``["shape.1", "limit.2"]`` (attribute ``shape``, index 1;
  a plain integer attribute is named alone, ``"dim"``);
* every ``?`` dim of an op's results is given too, as a trailing size operand named ``"result<r>.<d>"`` (result
  ``r``, dim ``d``; after the attribute positions), so the program states every symbolic size it has as a value:
  the conversion to polymorphic StableHLO (:func:`fxla.lowering.to_stablehlo.convert_polymorphic`) builds
  StableHLO's dynamic ops (``dynamic_broadcast_in_dim``, ``dynamic_reshape``, ``dynamic_iota``...) from them.

:func:`fxla.lowering.refine.refine` turns such a program into an ordinary static one for the sizes of one call
(the ``?`` dims set, the size operands evaluated into the attributes, the types inferred again), and the rest of
fxla's pipeline runs on that.

While a polymorphic program is built, a :class:`SymbolicScope` is active (:func:`symbolic_scope`): it holds the
symbolic shape of every value whose type has ``?`` dims (the MLIR type cannot carry the expression), and how to
materialise a symbolic size as a value.  Sizes are any objects other than Python/NumPy integers that support
integer arithmetic and comparison (the lowering passes torch ``SymInt``\\ s); this module does not look inside them.
"""
from __future__ import annotations

import contextlib
import contextvars
import numbers
from typing import Any, Callable, Dict, Iterator, Optional

from ..mlir import ir

#: MLIR's dynamic size (``?``) in shapes and in the static attributes of ops with symbolic sizes
DYNAMIC = -(1 << 63)
#: the attribute naming an op's symbolic attribute positions (see the module docstring)
SYM_ATTR = "fxla.sym"


class NotPolymorphicError(ValueError):
    """An op of a polymorphic program has no polymorphic StableHLO form yet (its pattern needs a ``?`` size as a
    number, or builds an op StableHLO only has in a static form)."""


def _refuse(self, *args):
    raise NotPolymorphicError("a ? size used as a number")


class Unknown(int):
    """A ``?`` size as the fxla -> StableHLO patterns read it from a polymorphic program's types and symbolic
    attributes: equal to :data:`DYNAMIC` (``==``, hashing and MLIR's type constructors see that), but arithmetic,
    ordering and conversion to a plain int raise :class:`NotPolymorphicError`, so a pattern that computes with
    sizes can never turn a ``?`` into a wrong number silently."""

    def __new__(cls):
        return int.__new__(cls, DYNAMIC)

    def __repr__(self):
        return "?"

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __floordiv__ = __rfloordiv__ = _refuse
    __mod__ = __rmod__ = __truediv__ = __rtruediv__ = __pow__ = __rpow__ = __neg__ = __abs__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __int__ = __index__ = __float__ = _refuse
    __and__ = __or__ = __xor__ = __lshift__ = __rshift__ = __divmod__ = _refuse
    __eq__ = int.__eq__
    __ne__ = int.__ne__
    __hash__ = int.__hash__


#: the one :class:`Unknown` instance
UNKNOWN = Unknown()


def is_sym(d: Any) -> bool:
    """Whether ``d`` is a symbolic size (anything but a Python/NumPy integer)."""
    return not isinstance(d, numbers.Integral)


def has_sym(shape) -> bool:
    """Whether a shape has a symbolic dim."""
    return any(not isinstance(d, numbers.Integral) for d in shape)


class SymbolicScope:
    """The symbolic state of one polymorphic lowering.

    ``sigs``: ``ir.Value`` -> its :class:`~.types.Sig` with symbolic dims (values whose types have ``?``);
    ``materialize(size)``: a ``tensor<i64>`` value computing the symbolic ``size`` at the current insertion point;
    ``normalize(size)``: the size as a Python int when it is a known constant, else itself;
    ``reify(size)``: like ``materialize`` but ``None`` where the size has no op form (``materialize`` then reads
    it as a number, which fixes its symbols); the result dims' sizes are given this way;
    ``attrs``: the first result of each op built with symbolic attributes -> its attributes as Python values,
    symbolic sizes included (the IR holds ``?`` there; differentiating the program reads them back).
    ``sigs`` and ``attrs`` may be shared with another scope (:meth:`derived`).
    """

    def __init__(self, materialize: Callable[[Any], ir.Value], normalize: Callable[[Any], Any],
                 reify: Optional[Callable[[Any], Optional[ir.Value]]] = None):
        self.sigs: Dict[ir.Value, Any] = {}
        self.attrs: Dict[ir.Value, Dict[str, Any]] = {}
        self.materialize = materialize
        self.normalize = normalize
        self.reify = reify or (lambda size: None)

    def derived(self, materialize: Callable[[Any], ir.Value],
                reify: Optional[Callable[[Any], Optional[ir.Value]]] = None) -> "SymbolicScope":
        """A scope that knows this one's values (``sigs`` and ``attrs``, shared) but materialises sizes
        elsewhere (another function of the same symbols: a program's backward)."""
        scope = SymbolicScope(materialize, self.normalize, reify)
        scope.sigs, scope.attrs = self.sigs, self.attrs
        return scope


_SCOPE: contextvars.ContextVar = contextvars.ContextVar("fxla_symbolic_scope", default=None)


def current() -> Optional[SymbolicScope]:
    """The active :class:`SymbolicScope`, or ``None`` (every ordinary, static lowering)."""
    return _SCOPE.get()


@contextlib.contextmanager
def symbolic_scope(scope: SymbolicScope) -> Iterator[SymbolicScope]:
    """Make ``scope`` the active one for the block (ops built meanwhile may have symbolic shapes)."""
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def result_slot(result: int, dim: int) -> str:
    """The ``fxla.sym`` name of the size operand giving dim ``dim`` of result ``result``."""
    return f"result{result}.{dim}"


def is_result_slot(slot: str) -> bool:
    """Whether an ``fxla.sym`` name is a result dim's (:func:`result_slot`) rather than an attribute position."""
    return slot.startswith("result")


def set_slot(attrs: Dict[str, Any], slot: str, value: Any) -> None:
    """Put ``value`` at the attribute position ``slot`` names (``"shape.1"``: entry 1 of the array ``shape``;
    ``"dim"``: the integer ``dim``) in ``attrs`` (Python attribute values, as ``OpDef.read`` gives them)."""
    name, _, index = slot.partition(".")
    if index:
        values = list(attrs[name])
        values[int(index)] = value
        attrs[name] = tuple(values)
    else:
        attrs[name] = value


def sym_slots(op: ir.Operation) -> list:
    """The ``fxla.sym`` positions of ``op`` (``[]`` for an op without symbolic attributes)."""
    attrs = op.attributes
    if SYM_ATTR not in attrs:
        return []
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(attrs[SYM_ATTR])]
