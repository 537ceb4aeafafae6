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
  a plain integer attribute is named alone, ``"dim"``).

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
    ``normalize(size)``: the size as a Python int when it is a known constant, else itself.
    """

    def __init__(self, materialize: Callable[[Any], ir.Value], normalize: Callable[[Any], Any]):
        self.sigs: Dict[ir.Value, Any] = {}
        self.materialize = materialize
        self.normalize = normalize


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


def sym_slots(op: ir.Operation) -> list:
    """The ``fxla.sym`` positions of ``op`` (``[]`` for an op without symbolic attributes)."""
    attrs = op.attributes
    if SYM_ATTR not in attrs:
        return []
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(attrs[SYM_ATTR])]
