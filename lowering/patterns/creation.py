"""Patterns for the ``creation`` family: literals, iotas and random numbers (``stablehlo.rng_bit_generator``,
THREE_FRY)."""
from __future__ import annotations

import math

import numpy as np

from fxla.dialects.fxla import ops
from fxla.dialects.fxla.types import is_float
from fxla.dialects.mlir import hlo, ir

from .builder import Builder, pattern


@pattern(ops.constant)
def _constant(b: Builder, *, value):
    return hlo.ConstantOp(value).result


@pattern(ops.arange)
def _arange(b: Builder, *, start, step, length):
    elem = b.result.elem
    work = "f64" if is_float(elem) else "i64"
    shape = [b.size("length", length)]
    i = b.convert(b.iota(shape, 0, "i64"), work)
    cast = float if work == "f64" else int
    y = hlo.AddOp(hlo.MulOp(i, b.splat(cast(step), work, shape)).result,
                  b.splat(cast(start), work, shape)).result
    return b.convert(y, elem)


# -- random numbers ----------------------------------------------------------------------------------------------
#: significand bits (the implicit one included) per float type: a uniform value is k / 2^d for a random d-bit k,
#: as torch's CPU generator makes them (so it is exact in the type, and never 1)
_DIGITS = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}
#: 2^64 / golden ratio: stream i's key is the seed's key xor (i + 1) * _GOLDEN (mod 2^64), one key per stream
_GOLDEN = 0x9E3779B97F4A7C15


def _state(b: Builder, seed: ir.Value, stream: int) -> ir.Value:
    """The THREE_FRY state (ui64[2]: key, counter) of stream ``stream`` of the i64[2] ``seed``."""
    mix = ((stream + 1) * _GOLDEN) % (1 << 64)
    key = np.array([mix - (1 << 64) if mix >= (1 << 63) else mix, 0], dtype=np.int64)
    mixed = hlo.XorOp(seed, hlo.ConstantOp(ir.DenseElementsAttr.get(key)).result).result
    return hlo.BitcastConvertOp(b.type((2,), "ui64"), mixed).result


def _bits(b: Builder, state: ir.Value, shape, word: str) -> ir.Value:
    """Random ``word`` bits of ``shape`` from the THREE_FRY ``state``.  Where ``shape`` has ``?`` sizes (values) it
    is StableHLO's ``stablehlo.dynamic_rng_bit_generator`` custom call (the shape as an operand), which StableHLO's
    shape refinement turns into the same ``rng_bit_generator`` once the sizes are known, as ``jax.export`` writes
    one: the same seed gives the same numbers at every size, polymorphic or not."""
    algorithm = hlo.RngAlgorithmAttr.get("THREE_FRY")
    if not any(isinstance(n, ir.Value) for n in shape):
        return hlo.RngBitGeneratorOp(state.type, b.type(shape, word), algorithm, state).output
    op = hlo.CustomCallOp([state.type, b.type(b._static(shape), word)], [state, b.shape_value(shape)],
                          "stablehlo.dynamic_rng_bit_generator")
    op.attributes["rng_algorithm"] = algorithm
    return op.results[1]


def _uniform(b: Builder, state: ir.Value, shape, elem: str) -> ir.Value:
    """Uniform values k / 2^d of element type ``elem`` (a float type; d: its significand bits) in [0, 1)."""
    digits = _DIGITS[elem]
    word, width = ("ui64", 64) if digits > 32 else ("ui32", 32)
    bits = hlo.ShiftRightLogicalOp(_bits(b, state, shape, word), b.splat(width - digits, word, shape)).result
    return hlo.MulOp(b.convert(bits, elem), b.splat(2.0 ** -digits, elem, shape)).result


def _normal(b: Builder, state: ir.Value, shape, elem: str) -> ir.Value:
    """Standard normal values (Box-Muller on two uniforms, in f32, or f64 for an f64 result)."""
    work = "f64" if elem == "f64" else "f32"
    shape = tuple(shape)
    pair = _uniform(b, state, (2,) + shape, work)
    u1, u2 = (b.reshape(_row(b, pair, i, shape), shape) for i in (0, 1))
    one_minus = hlo.SubtractOp(b.splat(1.0, work, shape), u1).result               # in (0, 1]: a finite log
    radius = hlo.SqrtOp(hlo.MulOp(b.splat(-2.0, work, shape), hlo.LogOp(one_minus).result).result).result
    angle = hlo.MulOp(b.splat(2.0 * math.pi, work, shape), u2).result
    return b.convert(hlo.MulOp(radius, hlo.CosineOp(angle).result).result, elem)


def _row(b: Builder, pair: ir.Value, i: int, shape) -> ir.Value:
    """Row ``i`` of ``pair`` (shape ``(2,) + shape``), its leading dim kept (``real_dynamic_slice`` where ``shape``
    has ``?`` sizes)."""
    rank = len(shape)
    if not any(isinstance(n, ir.Value) for n in shape):
        return hlo.SliceOp(pair, [i] + [0] * rank, [i + 1] + list(shape), [1] * (rank + 1)).result
    static = (1,) + b._static(shape)
    return hlo.RealDynamicSliceOp(b.type(static, b.sig(pair).elem), pair, b.shape_value([i] + [0] * rank),
                                  b.shape_value([i + 1] + list(shape)), b.shape_value([1] * (rank + 1))).result


@pattern(ops.rng)
def _rng(b: Builder, seed, *, shape, distribution, stream):
    elem = b.result.elem
    if elem not in _DIGITS:
        raise ValueError(f"fxla.rng makes floating-point values, not {elem}")
    draw = _uniform if distribution == "uniform" else _normal
    return draw(b, _state(b, seed, stream), tuple(b.dims()), elem)       # (= shape, a ? entry as its size)
