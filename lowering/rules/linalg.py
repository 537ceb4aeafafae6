"""Linear algebra: matmul/mm/bmm/@, F.linear / nn.Linear, F.bilinear / nn.Bilinear, addmm/baddbmm and
torch.einsum (diagonals of repeated subscripts, then pairwise contractions as batched matmuls)."""
from __future__ import annotations

import math
import operator

import torch
import torch.nn.functional as F

from fxla.dialects.fxla import ops
from fxla.frontend.shape_prop import (at_traced_sizes, has_symbolic_sizes, register_meta_function,
                                     register_meta_module, to_meta)

from ..emit import compute_elem
from ..registry import register, register_module


@register(F.linear)
def _linear(ctx, input, weight, bias=None):
    if ctx.sig(weight).rank == 1:             # torch allows a [in] weight: y = x @ w (+ bias), dim dropped
        y = ctx.emit(ops.matmul, input, weight)
        return y if bias is None else ctx.emit(ops.add, y, bias)
    return ctx.emit(ops.linear, input, weight, bias)


register_module(torch.nn.Linear, F.linear, params=("bias", "weight"))


@register(F.bilinear, torch.bilinear)
def _bilinear(ctx, input1, input2, weight, bias=None):
    """y[.., o] = sum_ij x1[.., i] W[o, i, j] x2[.., j] (+ b[o]): x1 @ W as [in1, out * in2], then a product with x2
    summed over in2; half precision is computed in f32 and rounded once."""
    s1, s2 = ctx.sig(input1), ctx.sig(input2)
    out, in1, in2 = ctx.sig(weight).shape
    lead = s1.shape[:-1]
    m = math.prod(lead)
    elem = compute_elem(s1.elem)
    as_work = lambda v: ctx.convert(v, elem)  # noqa: E731
    w = ctx.reshape(ctx.emit(ops.permute, as_work(weight), dims=(1, 0, 2)), (in1, out * in2))
    t = ctx.reshape(ctx.emit(ops.matmul, ctx.reshape(as_work(input1), (m, in1)), w), (m, out, in2))
    y = ctx.emit(ops.sum, ctx.emit(ops.mul, t, ctx.reshape(as_work(input2), (m, 1, in2))), dims=(-1,))
    if bias is not None:
        y = ctx.emit(ops.add, y, as_work(bias))
    y = ctx.reshape(y, lead + (out,))
    return ctx.convert(y, s1.elem)


register_module(torch.nn.Bilinear, F.bilinear, params=("bias", "weight"))


def _bilinear_meta(input1, input2, weight, bias=None):
    """F.bilinear's meta result by size arithmetic (torch's own reads the sizes as ints, which fixed every symbolic
    dim): ``input1``'s leading dims and the weight's first; its argument checks run at the traced sizes."""
    if not has_symbolic_sizes((input1, input2, weight, bias)):
        return F.bilinear(input1, input2, weight, bias)
    traced = F.bilinear(*at_traced_sizes((input1, input2, weight, bias)))
    return input1.new_empty([*input1.shape[:-1], weight.shape[0]], dtype=traced.dtype)


register_meta_function(F.bilinear, _bilinear_meta)
register_meta_function(torch.bilinear, _bilinear_meta)
register_meta_module(torch.nn.Bilinear, lambda mod, input1, input2: _bilinear_meta(
    input1, input2, to_meta(mod.weight), to_meta(mod.bias)))


@register(torch.matmul, torch.Tensor.matmul, torch.mm, torch.Tensor.mm, torch.bmm, torch.Tensor.bmm,
          operator.matmul, torch.mv, torch.Tensor.mv, torch.dot, torch.Tensor.dot, torch.vdot, torch.Tensor.vdot)
def _matmul(ctx, input, other):
    """(torch.mv and torch.dot are matmuls of the ranks they take: shape propagation refuses others, as eager;
    torch.vdot is torch.dot of real tensors, the only ones fxla computes with, as spectral_norm's power iteration
    calls it)"""
    return ctx.emit(ops.matmul, input, other)


@register(torch._weight_norm)
def _weight_norm(ctx, v, g, dim=0):
    """``v * (g / ||v||)`` with the 2-norm over every dim but ``dim`` (all of them for ``dim=-1``), as
    ``torch.nn.utils.parametrizations.weight_norm`` computes its weight."""
    rank = ctx.sig(v).rank
    kept = dim % rank if dim != -1 else None
    dims = tuple(d for d in range(rank) if d != kept)
    norm = ctx.emit(ops.sqrt, ctx.emit(ops.sum, ctx.emit(ops.mul, v, v), dims=dims, keepdim=True))
    return ctx.emit(ops.mul, v, ctx.emit(ops.div, g, norm))


# -- addmm / baddbmm ---------------------------------------------------------------------------------------------
def _add_product(ctx, input, a=None, b=None, *, beta=1, alpha=1, out=None, mat1=None, mat2=None, batch1=None,
                 batch2=None):
    a = next((m for m in (a, mat1, batch1) if m is not None), None)        # (torch's keyword spellings: HF's
    b = next((m for m in (b, mat2, batch2) if m is not None), None)        # BLOOM calls baddbmm(batch1=...))
    if a is None or b is None:
        raise ctx.error("addmm/baddbmm without both matrices", "eager refuses it too",
                        "pass the two matrices (mat1/mat2, batch1/batch2)")
    if out is not None:
        raise ctx.error("out= is not supported", "fxla programs are functional", "drop out= and use the result")
    product = ctx.emit(ops.matmul, a, b)
    if alpha != 1:
        product = ctx.emit(ops.mul, product, ctx.tensor(alpha, like=product))
    if beta == 0:                  # torch ignores input entirely (even NaN/inf) when beta == 0
        return product
    if beta != 1:
        input = ctx.emit(ops.mul, ctx.tensor(input), ctx.tensor(beta, like=product))
    return ctx.emit(ops.add, ctx.tensor(input, like=product), product)


register(torch.addmm, torch.Tensor.addmm, torch.baddbmm, torch.Tensor.baddbmm)(_add_product)


# -- einsum ------------------------------------------------------------------------------------------------------
def _parse_einsum(ctx, equation, ranks):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ctx.error(f"einsum '{equation}' names {len(terms)} operands, got {len(ranks)}", "torch rejects it too",
                        "pass one operand per term")
    letters = set(c for c in eq if c.isalpha())
    spare = iter(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in letters)
    ell_len = max([r - (len(t) - 3) for t, r in zip(terms, ranks) if "..." in t] or [0])
    ell = "".join(next(spare) for _ in range(ell_len))
    expanded = []
    for t, r in zip(terms, ranks):
        if "..." in t:
            k = r - (len(t) - 3)
            t = t.replace("...", ell[ell_len - k:])
        if len(t) != r:
            raise ctx.error(f"einsum term '{t}' does not match a rank-{r} operand", "torch rejects it too",
                            "name one subscript per dim")
        expanded.append(t)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts = {}
        for t in expanded:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    return expanded, out


def _einsum_diagonal(ctx, x, term):
    """Take the diagonal of every subscript repeated within ``term`` ('ii' -> 'i'): the two dims moved last,
    merged into one of n * n elements and sliced with stride n + 1."""
    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        p = term.index(c)
        q = term.index(c, p + 1)
        shape = ctx.sig(x).shape
        if shape[p] != shape[q]:
            raise ctx.error(f"einsum subscript '{c}' is repeated for dims of sizes {shape[p]} and {shape[q]}",
                            "a diagonal needs equal sizes; torch rejects it too", "fix the equation")
        n = shape[p]
        rest = [i for i in range(len(term)) if i not in (p, q)]
        if rest + [p, q] != list(range(len(term))):
            x = ctx.emit(ops.permute, x, dims=rest + [p, q])
        lead = tuple(shape[i] for i in rest)
        x = ctx.reshape(x, lead + (n * n,))
        starts, limits, strides = [0] * (len(lead) + 1), list(lead) + [n * n], [1] * len(lead) + [n + 1]
        x = ctx.emit(ops.slice, x, start=starts, limit=limits, stride=strides)
        term = "".join(term[i] for i in rest) + c
    return x, term


def _einsum_reduce(ctx, x, term, keep):
    """Sum away the subscripts of ``term`` not in ``keep``."""
    drop = [i for i, c in enumerate(term) if c not in keep]
    if drop:
        x = ctx.emit(ops.sum, x, dims=tuple(drop))
        term = "".join(c for c in term if c in keep)
    return x, term


def _einsum_pair(ctx, a, ta, b, tb, keep):
    """Contract two operands; the result keeps the subscripts in ``keep`` (batch, then a's free, then b's free)."""
    a, ta = _einsum_reduce(ctx, a, ta, set(tb) | keep)
    b, tb = _einsum_reduce(ctx, b, tb, set(ta) | keep)
    sa, sb = ctx.sig(a).shape, ctx.sig(b).shape
    size = {}
    for t, s in ((ta, sa), (tb, sb)):
        for c, d in zip(t, s):
            size[c] = d if size.get(c, 1) == 1 else size[c]     # broadcast: 1 gives way (to 0 too)
    batch = [c for c in ta if c in tb and c in keep]
    contract = [c for c in ta if c in tb and c not in keep]
    free_a = [c for c in ta if c not in tb]
    free_b = [c for c in tb if c not in ta]

    def arrange(x, t, order, shape):
        perm = [t.index(c) for c in order]
        if perm != list(range(len(t))):
            x = ctx.emit(ops.permute, x, dims=perm)
        want = tuple(size[c] for c in order)
        if ctx.sig(x).shape != want:          # size-1 batch dims broadcast, as in torch.einsum
            x = ctx.emit(ops.expand, x, shape=want)
        return ctx.reshape(x, shape)

    nb, m, k, nn_ = (math.prod(size[c] for c in g) for g in (batch, free_a, contract, free_b))
    lhs = arrange(a, ta, batch + free_a + contract, (nb, m, k))
    rhs = arrange(b, tb, batch + contract + free_b, (nb, k, nn_))
    y = ctx.emit(ops.matmul, lhs, rhs)
    order = batch + free_a + free_b
    return ctx.reshape(y, tuple(size[c] for c in order)), "".join(order)


def _einsum_meta(equation, *operands):
    """torch.einsum's result on meta tensors without opt_einsum: with three or more operands torch plans the
    contraction order from the sizes as ints, which would fix every symbolic size; the result's shape and dtype do
    not depend on the order (and fxla's rule contracts left to right)."""
    with torch.backends.opt_einsum.flags(enabled=False):
        return torch.einsum(equation, *operands)


register_meta_function(torch.einsum, _einsum_meta)


@register(torch.einsum)
def _einsum(ctx, equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    terms, out = _parse_einsum(ctx, equation, [ctx.sig(x).rank for x in operands])
    operands, terms = zip(*(_einsum_diagonal(ctx, x, t) for x, t in zip(operands, terms)))
    x, t = operands[0], terms[0]
    for i in range(1, len(operands)):
        later = set(out).union(*terms[i + 1:])
        x, t = _einsum_pair(ctx, x, t, operands[i], terms[i], later)
    x, t = _einsum_reduce(ctx, x, t, set(out))
    if t != out:
        x = ctx.emit(ops.permute, x, dims=[t.index(c) for c in out])
    if ctx.sig(x).elem != ctx.result_sig.elem:
        x = ctx.convert(x, ctx.result_sig.elem)
    return x
