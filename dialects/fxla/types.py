"""Tensor signatures and torch-style dtype promotion for the fxla dialect (pure Python, engine-free).

A :class:`Sig` is what the op table reasons about: a static shape and an element type spelled as MLIR spells
it (``f32``, ``bf16``, ``i64``, ``i1``, ``ui8`` …).  Type inference and the verifier work on ``Sig``\\ s, so they
can be tested without building IR.
"""
from __future__ import annotations

import numbers

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

FLOAT_TYPES = ("f16", "bf16", "f32", "f64")
SIGNED_TYPES = ("i8", "i16", "i32", "i64")
UNSIGNED_TYPES = ("ui8",)
INT_TYPES = UNSIGNED_TYPES + SIGNED_TYPES
BOOL_TYPES = ("i1",)
ALL_TYPES = BOOL_TYPES + INT_TYPES + FLOAT_TYPES

_BITS = {"i1": 1, "ui8": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "f16": 16, "bf16": 16, "f32": 32, "f64": 64}


@dataclass(frozen=True)
class Sig:
    """The static type of a tensor value: ``shape`` (tuple of non-negative ints) and ``elem`` (MLIR spelling)."""

    shape: Tuple[int, ...]
    elem: str

    @property
    def rank(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        return f"tensor<{dims}{self.elem}>"


def category(elem: str) -> int:
    """0 for bool, 1 for integers, 2 for floating point (torch's promotion categories)."""
    if elem in BOOL_TYPES:
        return 0
    if elem in INT_TYPES:
        return 1
    if elem in FLOAT_TYPES:
        return 2
    raise ValueError(f"unknown element type {elem!r}")


def is_float(elem: str) -> bool:
    return elem in FLOAT_TYPES


def bit_width(elem: str) -> int:
    return _BITS[elem]


def promote_pair(a: str, b: str) -> str:
    """torch.promote_types on two element types."""
    if a == b:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        return a if ca > cb else b
    if ca == 2:
        if {a, b} == {"f16", "bf16"}:
            return "f32"
        return a if _BITS[a] > _BITS[b] else b
    if ca == 1:
        if (a in UNSIGNED_TYPES) != (b in UNSIGNED_TYPES):
            # ui8 with a signed type: the smallest signed type holding both.
            signed = b if a in UNSIGNED_TYPES else a
            return "i16" if _BITS[signed] <= 8 else signed
        return a if _BITS[a] > _BITS[b] else b
    return a


def result_elem(sigs: Sequence[Sig]) -> str:
    """torch.result_type over tensor operands: ranked (dim ≥ 1) operands dominate 0-d ones of the same category.

    0-d operands (Python scalars become 0-d ``fxla.constant``\\ s) only raise the result's *category*, like torch's
    zero-dim tensors and wrapped numbers.
    """
    dimmed = [s.elem for s in sigs if s.rank > 0]
    zero_d = [s.elem for s in sigs if s.rank == 0]
    result = None
    for elem in dimmed:
        result = elem if result is None else promote_pair(result, elem)
    for elem in zero_d:
        if result is None:
            result = elem
        elif category(elem) > category(result):
            # e.g. int tensor * 0.5: the float scalar decides the category, the default float width applies.
            result = elem
        elif not dimmed:
            result = promote_pair(result, elem)
    assert result is not None
    return result


def same_size(a, b) -> bool:
    """Whether two sizes are the same: equal integers, or one symbolic size expression (spelled alike).  Two
    symbolic sizes spelled differently may still be equal; callers then compare them (a guard of the program)."""
    if isinstance(a, numbers.Integral) or isinstance(b, numbers.Integral):
        return isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral) and a == b
    return a is b or str(a) == str(b)


def same_shape(a: Sequence, b: Sequence) -> bool:
    """:func:`same_size` for every dim of two shapes of one rank."""
    return len(a) == len(b) and all(same_size(x, y) for x, y in zip(a, b))


def broadcast_shapes(*shapes: Sequence[int]) -> Optional[Tuple[int, ...]]:
    """NumPy/torch broadcasting of static shapes; ``None`` when they do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dim = 1
        for shape in shapes:
            j = i - (rank - len(shape))
            if j < 0:
                continue
            d = shape[j]
            if same_size(d, dim):       # (a symbolic size and itself: no comparison, which would add a guard)
                continue
            if d == 1:
                continue
            if dim not in (1, d):
                return None
            dim = d
        out.append(dim)
    return tuple(out)


def normalize_dim(dim: int, rank: int) -> Optional[int]:
    """A torch-style (possibly negative) dim as a non-negative index, or ``None`` when out of range."""
    bound = max(rank, 1)
    if not -bound <= dim < bound:
        return None
    return dim % bound if rank else 0
