"""Tensor creation.  Calls without traced arguments run at trace time and become tensor constants; these rules
cover the traced forms (``*_like``, ``Tensor.new_*``, sizes read from a traced tensor; eye/linspace/logspace
with a traced size or 0-d tensor endpoints) and tril/triu.  Random tensors (``torch.rand``, ``randn``, ``randint``,
their ``*_like`` forms, ``bernoulli``) are always traced (never trace-time constants) and drawn per call by
``fxla.rng`` from the program's seed (docs/training.md, "Random numbers")."""
from __future__ import annotations

from functools import partial

import torch

from fxla.dialects.fxla import Sig, ops, type_of
from fxla.dialects.fxla.types import UNSIGNED_TYPES, bit_width, is_float
from fxla.dialects.mlir import ir
from fxla.frontend.shape_prop import at_traced_sizes, register_meta_function

from ..registry import register


def splat(ctx, value) -> ir.Value:
    """A constant of the node's result type with every element ``value`` (converted as torch converts it); a
    0-d constant broadcast to the shape where it has symbolic sizes (``zeros_like`` of a ? dim)."""
    sig = ctx.result_sig
    if isinstance(value, (torch.SymInt, torch.SymFloat)):     # (a size as the value: computed by the program)
        return ctx.expand(ctx.convert(ctx.tensor(value), sig.elem), sig.shape)
    if not all(type(n) is int for n in sig.shape):
        return ctx.expand(_splat_of(ctx, value, type_of(Sig((), sig.elem)), sig.elem), sig.shape)
    return _splat_of(ctx, value, ctx.result_type, sig.elem)


def _splat_of(ctx, value, t: ir.Type, elem: str) -> ir.Value:
    if is_float(elem):
        scalar = ir.FloatAttr.get(t.element_type, float(value))
    elif elem == "i1":
        scalar = ir.IntegerAttr.get(t.element_type, int(bool(value)))
    else:
        v = int(value)
        scalar = ir.IntegerAttr.get(t.element_type, v % (1 << bit_width(elem)) if elem in UNSIGNED_TYPES else v)
    return ctx.emit(ops.constant, value=ir.DenseElementsAttr.get_splat(t, scalar))


def _filled(ctx, *args, fill, **kwargs):
    return splat(ctx, fill)


def _full(ctx, size, fill_value, **kwargs):
    return splat(ctx, fill_value)


def _full_like(ctx, input, fill_value, **kwargs):
    return splat(ctx, fill_value)


def _new_full(ctx, input, size, fill_value, **kwargs):
    return splat(ctx, fill_value)


for _keys, _fill in (((torch.zeros, torch.zeros_like, torch.Tensor.new_zeros, torch.empty, torch.empty_like,
                       torch.Tensor.new_empty), 0),
                     ((torch.ones, torch.ones_like, torch.Tensor.new_ones), 1)):
    register(*_keys)(partial(_filled, fill=_fill))

register(torch.full)(_full)
register(torch.Tensor.new_full)(_new_full)
register(torch.full_like)(_full_like)


@register(torch.arange)
def _arange(ctx, start, end=None, step=1, **kwargs):
    if end is None:
        start, end = 0, start
    result = ctx.result_sig
    if isinstance(start, torch.SymInt) and not is_float(result.elem):
        # a start computed from symbolic sizes (``arange(x.size(1) - 1, -1, -1)``): the iota plus the start as a
        # value, so the size stays symbolic (float() of it would fix it); integers, exact as torch's
        iota = ctx.emit(ops.arange, start=0.0, step=float(step), length=result.shape[0],
                        result_type=type_of(Sig(result.shape, "i64")))
        return ctx.convert(ctx.emit(ops.add, iota, ctx.tensor(start, like=iota)), result.elem)
    return ctx.emit(ops.arange, start=float(start), step=float(step), length=result.shape[0],
                    result_type=ctx.result_type)


@register(torch.tril, torch.Tensor.tril)
def _tril(ctx, input, diagonal=0):
    return ctx.emit(ops.tril, input, diagonal=diagonal)


@register(torch.triu, torch.Tensor.triu)
def _triu(ctx, input, diagonal=0):
    return ctx.emit(ops.triu, input, diagonal=diagonal)


# -- eye, linspace, logspace (traced forms: a size read from a traced tensor, or 0-d tensor endpoints) ----------
def _iota(ctx, n: int, elem: str) -> ir.Value:
    return ctx.emit(ops.arange, start=0.0, step=1.0, length=n, result_type=type_of(Sig((n,), elem)))


@register(torch.eye)
def _eye(ctx, n, m=None, **kwargs):
    rows, cols = ctx.result_sig.shape
    i = ctx.reshape(_iota(ctx, rows, "i64"), (rows, 1))
    j = ctx.reshape(_iota(ctx, cols, "i64"), (1, cols))
    same = ctx.emit(ops.eq, i, j)
    return same if ctx.result_sig.elem == "i1" else ctx.emit(ops.convert, same, result_type=ctx.result_type)


def _compute_elem(elem: str) -> str:
    """Where linspace is computed: the result's float type (f16/bf16 in f32, as torch accumulates), f64 for ints."""
    return elem if elem in ("f32", "f64") else "f32" if is_float(elem) else "f64"


def _endpoint(ctx, value, elem: str) -> ir.Value:
    if isinstance(value, ir.Value):
        if ctx.sig(value).rank != 0:
            raise ctx.error("linspace/logspace endpoints must be numbers or 0-d tensors",
                            f"got a tensor of shape {list(ctx.sig(value).shape)}", "pass x.item()-free 0-d tensors "
                            "(e.g. x.min()) or Python numbers")
        # detached: torch's linspace/logspace have no derivative (their result never requires grad), so no
        # gradient may flow into a tensor endpoint
        value = ctx.emit(ops.detach, value) if is_float(ctx.sig(value).elem) else value
        return value if ctx.sig(value).elem == elem else \
            ctx.emit(ops.convert, value, result_type=type_of(Sig((), elem)))
    return ctx.emit(ops.convert, ctx.tensor(float(value)), result_type=type_of(Sig((), elem))) \
        if elem != "f32" else ctx.tensor(float(value))


def _linspace_values(ctx, start, end, steps: int, elem: str) -> ir.Value:
    """torch's CPU linspace: ``start + i * step`` for the first half, ``end - (steps - 1 - i) * step`` for the
    rest (so both endpoints are exact), step = (end - start) / (steps - 1)."""
    a, b = _endpoint(ctx, start, elem), _endpoint(ctx, end, elem)
    idx = _iota(ctx, steps, elem)
    if steps == 1:
        return ctx.emit(ops.expand, a, shape=(1,))
    scalar = partial(_size_scalar, ctx, elem)
    step = ctx.emit(ops.div, ctx.emit(ops.sub, b, a), scalar(steps - 1))
    low = ctx.emit(ops.add, a, ctx.emit(ops.mul, idx, step))
    high = ctx.emit(ops.sub, b, ctx.emit(ops.mul, ctx.emit(ops.sub, scalar(steps - 1), idx), step))
    first_half = ctx.emit(ops.lt, idx, scalar(steps // 2))
    return ctx.emit(ops.where, first_half, low, high)


def _scalar(ctx, elem: str, value) -> ir.Value:
    return _endpoint(ctx, float(value), elem)


def _size_scalar(ctx, elem: str, size) -> ir.Value:
    """A size (an int, or a symbolic one: computed by the program) as a 0-d ``elem`` value."""
    if isinstance(size, int):
        return _scalar(ctx, elem, size)
    return ctx.convert(ctx.tensor(size), elem)


def _cast_result(ctx, v: ir.Value) -> ir.Value:
    return v if ctx.sig(v).elem == ctx.result_sig.elem else ctx.emit(ops.convert, v, result_type=ctx.result_type)


@register(torch.linspace)
def _linspace(ctx, start, end, steps, **kwargs):
    elem = _compute_elem(ctx.result_sig.elem)
    return _cast_result(ctx, _linspace_values(ctx, start, end, ctx.result_sig.shape[0], elem))


@register(torch.logspace)
def _logspace(ctx, start, end, steps, base=10.0, **kwargs):
    elem = _compute_elem(ctx.result_sig.elem)
    exponents = _linspace_values(ctx, start, end, ctx.result_sig.shape[0], elem)
    return _cast_result(ctx, ctx.emit(ops.pow, _scalar(ctx, elem, base), exponents))


def _spaced_meta(function, start, end, steps, *args, **kwargs):
    """torch.linspace / logspace's meta result for a symbolic ``steps`` (a size read from a traced tensor; torch's
    own fixes it): ``steps`` elements of the dtype torch gives at the traced count."""
    if isinstance(steps, int):
        return function(start, end, steps, *args, **kwargs)
    from torch.fx.experimental.symbolic_shapes import optimization_hint
    example = function(*at_traced_sizes((start, end)), optimization_hint(steps), *args, **{**kwargs, "device": "meta"})
    return example.new_empty((steps,))


register_meta_function(torch.linspace, partial(_spaced_meta, torch.linspace))
register_meta_function(torch.logspace, partial(_spaced_meta, torch.logspace))


# -- random tensors (fxla.rng on the program's seed, a new one per call) -----------------------------------------
def _no_generator(ctx, generator) -> None:
    if generator is not None:
        raise ctx.error("a random op with generator= is not supported", "fxla draws a compiled program's random "
                        "numbers from a seed taken from torch's default generator at each call; it cannot advance "
                        "another torch.Generator", "drop generator= and seed torch's default generator "
                        "(torch.manual_seed) for reproducible runs")


def _float_result(ctx, op: str) -> str:
    elem = ctx.result_sig.elem
    if not is_float(elem):
        raise ctx.error(f"{op} with the integer/bool dtype {elem}", "eager refuses it too ('not implemented for' "
                        "that dtype)", "pass a floating-point dtype")
    return elem


def _work(elem: str) -> str:
    """Where random masks and integers are drawn: f64 for an f64 result, else f32 (f16/bf16 too, as torch's CPU
    bernoulli compares a float uniform)."""
    return "f64" if elem == "f64" else "f32"


def _draw(ctx, generator, distribution: str, op: str, **kwargs):
    _no_generator(ctx, generator)
    return ctx.random(ctx.result_sig.shape, _float_result(ctx, op), distribution)


@register(torch.rand, torch.rand_like)
def _rand(ctx, *args, generator=None, **kwargs):
    """Uniform values in [0, 1) (``torch.rand(size)``, ``torch.rand_like(x)``)."""
    return _draw(ctx, generator, "uniform", "rand")


@register(torch.randn, torch.randn_like)
def _randn(ctx, *args, generator=None, **kwargs):
    """Standard normal values (``torch.randn(size)``, ``torch.randn_like(x)``)."""
    return _draw(ctx, generator, "normal", "randn")


def _integers(ctx, low: int, high: int, generator) -> ir.Value:
    """Integers uniform in [low, high) of the result type: floor(u * (high - low)) + low for a 53-bit uniform u
    (clamped below ``high``), in f64."""
    _no_generator(ctx, generator)
    if not isinstance(low, int) or not isinstance(high, int):
        raise ctx.error("randint bounds must be Python ints", f"got {type(low).__name__} and {type(high).__name__}",
                        "pass int bounds (x.size(0) is fine: it is known when the program is compiled)")
    span = high - low
    if span <= 0:
        raise ctx.error(f"randint with low={low} >= high={high}", "eager refuses it too ('random_ expects 'from' "
                        "to be less than 'to'')", "pass low < high")
    if span > 1 << 53:
        raise ctx.error(f"randint over a range of {span} values", "fxla draws integers from 53-bit uniforms, exact "
                        "up to 2^53 values", "draw a smaller range (or two halves)")
    shape = ctx.result_sig.shape
    u = ctx.random(shape, "f64")
    k = ctx.emit(ops.floor, ctx.emit(ops.mul, u, ctx.tensor(float(span), like=u)))
    k = ctx.emit(ops.minimum, k, ctx.tensor(float(span - 1), like=k))
    value = ctx.emit(ops.add, k, ctx.tensor(float(low), like=k))
    return ctx.emit(ops.convert, value, result_type=ctx.result_type)


@register(torch.randint)
def _randint(ctx, *args, generator=None, **kwargs):
    """``torch.randint(high, size)`` / ``torch.randint(low, high, size)``."""
    low, high = (0, args[0]) if len(args) == 2 else args[:2]
    return _integers(ctx, low, high, generator)


@register(torch.randint_like)
def _randint_like(ctx, input, *args, generator=None, **kwargs):
    """``torch.randint_like(x, high)`` / ``torch.randint_like(x, low, high)``."""
    low, high = (0, args[0]) if len(args) == 1 else args[:2]
    return _integers(ctx, low, high, generator)


@register(torch.bernoulli, torch.Tensor.bernoulli)
def _bernoulli(ctx, input, p=None, *, generator=None, **kwargs):
    """1 with probability ``input`` (element-wise; or the float ``p`` for every element), else 0, in the input's
    dtype (a uniform in f32 -- f64 for f64 -- compared below the probability, as torch's CPU kernel does)."""
    _no_generator(ctx, generator)
    s = ctx.sig(input)
    elem = _float_result(ctx, "bernoulli")
    if p is not None and not isinstance(p, ir.Value) and not 0 <= p <= 1:
        raise ctx.error(f"bernoulli with p={p}", "eager refuses it too (p must be in [0, 1])",
                        "pass a probability in [0, 1]")
    u = ctx.random(s.shape, _work(elem))
    fixed = p is not None and not isinstance(p, ir.Value)
    prob = ctx.tensor(float(p), like=u) if fixed else ctx.convert(input if p is None else p, _work(elem))
    out = ctx.convert(ctx.emit(ops.lt, u, prob), elem)
    if fixed:
        # torch has no derivative for bernoulli(input, p) ('derivative for aten::bernoulli is not implemented'),
        # though its result depends on input through its shape only: a gradient through it is refused as there
        # (the select keeps `out` everywhere: u == u always holds, and nothing folds it away)
        refused = ctx.emit(ops.no_gradient, ctx.convert(input, elem), op="aten::bernoulli")
        out = ctx.emit(ops.where, ctx.emit(ops.eq, u, u), out, refused)
    elif p is None and is_float(s.elem):
        # bernoulli(input) has a zero derivative in torch: its result keeps input's history (requires grad) and
        # passes it nothing -- the same select, with input itself on the branch never taken
        out = ctx.emit(ops.where, ctx.emit(ops.eq, u, u), out, ctx.convert(input, elem))
    return out
