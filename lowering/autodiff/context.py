"""The ``ctx`` a VJP rule gets: an :class:`~fxla.lowering.context.Emitter` at the differentiated op's location,
plus the building blocks gradients share (zeros, summing a broadcast back to an operand's shape)."""
from __future__ import annotations

from typing import Optional, Sequence

from fxla.dialects.fxla import Sig, ops, sig_of, type_of
from fxla.dialects.fxla.types import is_float, same_shape
from fxla.dialects.mlir import ir

from ..context import Emitter
from ..errors import LoweringError


class VJPContext(Emitter):
    """Passed as ``ctx`` to every VJP rule (see :mod:`fxla.lowering.autodiff.registry`).

    ``ctx.op`` is the forward op being differentiated and ``ctx.loc`` its location, which every op a rule emits
    takes (so backward ops name the user's source line).  Besides the :class:`Emitter` blocks (``emit``,
    ``tensor``, ``convert``, ``reshape``, ``expand``, ``slice_dim``, ``int_constant``):

    * ``ctx.zeros(sig)`` / ``ctx.zeros_like(value)`` and ``ctx.full(value, shape, elem)``;
    * ``ctx.sum_to(x, shape)`` -- ``x`` summed over the dims broadcasting added to a tensor of ``shape``;
    * ``ctx.unbroadcast(ct, operand)`` -- a result's cotangent as the cotangent of a broadcast, promoted
      ``operand``: summed to its shape and converted to its element type.
    """

    def __init__(self) -> None:
        super().__init__()
        self.op: Optional[ir.Operation] = None

    def error(self, what: str, why: str, fix: str):
        where = f"\n  at {self.loc}" if self.loc is not None else ""
        return LoweringError(f"{what}{where}\nwhy: {why}\nfix: {fix}")

    def full(self, value, shape: Sequence[int], elem: str) -> ir.Value:
        """A tensor of ``shape`` and element type ``elem`` filled with ``value``."""
        scalar = self.convert(self.tensor(float(value) if is_float(elem) else value), elem)
        return self.expand(scalar, tuple(shape))

    def zeros(self, sig: Sig) -> ir.Value:
        return self.full(0, sig.shape, sig.elem)

    def zeros_like(self, value: ir.Value) -> ir.Value:
        return self.zeros(self.sig(value))

    def sum_to(self, x: ir.Value, shape: Sequence[int]) -> ir.Value:
        """``x`` (broadcast from ``shape`` as torch broadcasts) summed back to ``shape``."""
        shape = tuple(shape)
        have = self.sig(x).shape
        if same_shape(have, shape):
            return x
        lead = len(have) - len(shape)
        dims = list(range(lead)) + [lead + i for i, n in enumerate(shape) if n == 1 and have[lead + i] != 1]
        if dims:
            x = self.emit(ops.sum, x, dims=dims, keepdim=False)
        return self.reshape(x, shape)

    def unbroadcast(self, ct: ir.Value, operand: ir.Value) -> ir.Value:
        """The cotangent of ``operand`` where ``ct`` is that of an elementwise result it was broadcast and promoted
        into."""
        want = self.sig(operand)
        return self.convert(self.sum_to(ct, want.shape), want.elem)

    def like(self, value: ir.Value, other: ir.Value) -> ir.Value:
        """``value`` converted to ``other``'s element type (a promoted computation's cotangent, back)."""
        return self.convert(value, self.sig(other).elem)

    def result_type_of(self, shape, elem) -> ir.Type:
        return type_of(Sig(tuple(shape), elem))
