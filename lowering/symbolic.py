"""Lowering a graph whose shapes are symbolic (``fxla.compile(model, dynamic=...)``) to a polymorphic fxla program.

:func:`fxla.lowering.lower_to_fxla` with ``symbols=`` (a :class:`fxla.frontend.symbolic.SymbolicShapes`) runs
the ordinary rules inside a :class:`~fxla.dialects.fxla.symbolic.SymbolicScope` built here: values whose shapes
have symbolic sizes get ``?`` dims, and :class:`SizeBuilder` turns each symbolic size a rule uses (a ``view``'s
``s0 // 4``, a ``slice``'s limit, a size used as a number) into ``fxla.dim_size`` and ``tensor<i64>``
arithmetic (the dialect's symbolic sizes, :mod:`fxla.dialects.fxla.symbolic`).  A size expression this module
cannot write as ops is read as a number instead: the ``ShapeEnv`` then fixes the symbol to the traced size (a
guard), and the compiled module reports it (the program is not polymorphic in that dim).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Sequence

import sympy
import torch
from torch.fx.experimental.symbolic_shapes import statically_known_true
from torch.utils._sympy.functions import (CeilDiv, CeilToInt, CleanDiv, FloorDiv, FloorToInt, IntTrueDiv, Max, Min,
                                          Mod, ModularIndexing, PowByNatural, PythonMod)

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.opdef import value_sig
from fxla.dialects.fxla.symbolic import SymbolicScope
from fxla.dialects.mlir import ir

__all__ = ["SizeBuilder", "SymbolicLowering", "scope_for", "same_symbolic_shape"]


class _NotWritable(Exception):
    """A size expression with no fxla form (read as a number instead)."""


class SizeBuilder:
    """Materialises symbolic sizes as ``tensor<i64>`` values (see the module docstring).  ``ctx`` is the
    lowering's emitter; ``arguments`` maps each tensor leaf index to its function argument."""

    def __init__(self, symbols, ctx, arguments: Dict[int, ir.Value], block: ir.Block):
        self.symbols = symbols
        self.ctx = ctx
        self.arguments = arguments
        self.block = block
        self._cache: Dict[Any, ir.Value] = {}

    def materialize(self, size: Any) -> ir.Value:
        if not isinstance(size, torch.SymInt):
            return self.ctx.tensor(int(size))
        expr = self.symbols.env.replace(size.node.expr)
        try:
            return self._emit(expr)
        except _NotWritable:
            return self.ctx.tensor(int(size))          # (a guard fixes the symbol: reported by the module)

    def reify(self, size: Any):
        """``size`` as a ``tensor<i64>`` value, or ``None`` where it has no fxla form (no guard is added)."""
        if not isinstance(size, torch.SymInt):
            return self.ctx.tensor(int(size))
        try:
            return self._emit(self.symbols.env.replace(size.node.expr))
        except _NotWritable:
            return None

    def _emit(self, e) -> ir.Value:
        top = ir.InsertionPoint.current.block == self.block
        if top and e in self._cache:
            return self._cache[e]
        value = self._emit_new(e)
        if top:
            self._cache[e] = value
        return value

    def _emit_new(self, e) -> ir.Value:
        ctx = self.ctx
        if e.is_Integer:
            return ctx.tensor(int(e))
        if e.is_Symbol:
            leaf, dim = self.symbols.bindings[e]
            return ctx.emit(ops.dim_size, self.arguments[leaf], dim=dim)
        if isinstance(e, sympy.Add):
            return self._fold(ops.add, e.args)
        if isinstance(e, sympy.Mul):
            if any(a.is_Number and not a.is_Integer for a in e.args):
                raise _NotWritable
            return self._fold(ops.mul, e.args)
        if isinstance(e, (sympy.Pow, PowByNatural)) and e.args[1].is_Integer and 0 < int(e.args[1]) <= 8:
            return self._fold(ops.mul, [e.args[0]] * int(e.args[1]))
        if isinstance(e, ModularIndexing):             # (a // b) % c
            a, b, c = e.args
            return self.ctx.emit(ops.remainder, self._fold(ops.floor_divide, (a, b)), self._emit(c))
        if isinstance(e, CeilDiv):
            return self._negated(self._fold(ops.floor_divide, (-e.args[0], e.args[1])))
        binary = {FloorDiv: ops.floor_divide, CleanDiv: ops.floor_divide, PythonMod: ops.remainder,
                  sympy.Mod: ops.remainder, Mod: ops.remainder, Max: ops.maximum, Min: ops.minimum}.get(type(e))
        if binary is not None:
            return self._fold(binary, e.args)
        if isinstance(e, (CeilToInt, FloorToInt)) and isinstance(e.args[0], IntTrueDiv):
            a, b = e.args[0].args               # ceil(a / b) = -((-a) // b); floor(a / b) = a // b
            if isinstance(e, FloorToInt):
                return self._fold(ops.floor_divide, (a, b))
            return self._negated(self._fold(ops.floor_divide, (-a, b)))
        raise _NotWritable

    def _negated(self, value: ir.Value) -> ir.Value:
        """``0 - value`` (not fxla.neg: StableHLO's shape refinement folds subtract, not negate)."""
        return self.ctx.emit(ops.sub, self.ctx.tensor(0), value)

    def _fold(self, opdef, args: Sequence[Any]) -> ir.Value:
        values = [self._emit(a) for a in args]
        out = values[0]
        for v in values[1:]:
            out = self.ctx.emit(opdef, out, v)
        return out


@dataclass
class SymbolicLowering:
    """What a polymorphic program keeps of its lowering (:attr:`fxla.lowering.FxlaProgram.symbolic`): its
    ``symbols`` (:class:`fxla.frontend.symbolic.SymbolicShapes`), the ``scope`` it was built in (every ``?``-shaped
    value's symbolic shape, every symbolic attribute) and ``arguments`` (tensor leaf index -> the function argument
    whose dims give the symbols)."""

    symbols: Any
    scope: SymbolicScope
    arguments: Dict[int, ir.Value]

    def derived(self, ctx, argument: Callable[[ir.Value], ir.Value], block: ir.Block) -> SymbolicScope:
        """A scope for building another function over the same symbols (the program's backward), whose sizes
        are read off ``argument(forward argument)`` -- the forward argument as a value of that function -- and
        emitted through ``ctx`` into ``block``."""
        imported = _Imported(self.arguments, argument)
        sizes = SizeBuilder(self.symbols, ctx, imported, block)
        return self.scope.derived(sizes.materialize, sizes.reify)


class _Imported:
    """``arguments[leaf]`` mapped into another function, as it is first needed."""

    def __init__(self, arguments: Dict[int, ir.Value], argument: Callable[[ir.Value], ir.Value]):
        self.arguments, self.argument = arguments, argument

    def __getitem__(self, leaf: int) -> ir.Value:
        return self.argument(self.arguments[leaf])


def scope_for(symbols, ctx, arguments: Dict[int, ir.Value], block: ir.Block, metas: Dict[int, Any]) -> SymbolicScope:
    """The scope of one polymorphic lowering: ``arguments`` (tensor leaf index -> function argument) get their
    symbolic shapes from ``metas`` (leaf index -> :class:`~fxla.dialects.fxla.Sig` with ``SymInt`` sizes)."""
    sizes = SizeBuilder(symbols, ctx, arguments, block)
    scope = SymbolicScope(sizes.materialize, symbols.normalize, sizes.reify)
    for leaf, value in arguments.items():
        if not ir.ShapedType(value.type).has_static_shape:
            scope.sigs[value] = metas[leaf]
    return scope


def same_symbolic_shape(produced: ir.Value, sig) -> bool:
    """Whether ``produced``'s (symbolic) shape and element type are ``sig``'s.  Two size expressions that are not
    provably equal (``(s0*s1 + s0 - 1)//s0`` and ``s1``) but equal at the traced sizes are accepted with a guard:
    every call checks that they still agree (:meth:`fxla.frontend.symbolic.SymbolicShapes.violation`)."""
    have = value_sig(produced)
    if have is None or have.elem != sig.elem or len(have.shape) != len(sig.shape):
        return False
    return all(a == b if isinstance(a, int) and isinstance(b, int) else
               statically_known_true(a == b) or bool(a == b) for a, b in zip(have.shape, sig.shape))
