"""Gradients of the ``reduce`` and ``scan`` families' VJP rules (lowering/autodiff/reduce.py, scan.py) against
torch.autograd, where torch picks a convention: amax/amin/cummax ties and NaN, prod/cumprod zeros (one, several,
next to inf), var's correction and its N <= correction case, sort/topk with duplicates, -inf in logsumexp and
logcumsumexp; and the shapes reductions take (keepdim, negative dims, several dims, everything, 0-d inputs,
size-1 scanned dims), integer operands and half precision.  ``tests/test_grad_ops.py`` covers the ops'
ordinary cases; the harness is tests/grad_support.py."""
from __future__ import annotations

import pytest
import torch
import fxla

from grad_support import check_grad

F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
NAN, INF = float("nan"), float("inf")


def _t(rows, dtype=F32):
    return torch.tensor(rows, dtype=dtype)


def _randn(*shape, dtype=F32, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _check(fn, *inputs, tol=1.0):
    traceable = {1: lambda a: fn(a), 2: lambda a, b: fn(a, b)}[len(inputs)]
    assert check_grad(traceable, inputs, tol=tol), "nothing was differentiated"


# integer-valued, exactly representable, with ties along every dim
TIES = _t([[[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [3.0, 1.0, 3.0, 1.0]],
           [[0.0, 0.0, -1.0, 4.0], [4.0, 4.0, 1.0, 1.0], [-0.0, 0.0, 2.0, 2.0]]])


# -- sum / mean ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", [torch.sum, torch.mean], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dims,keepdim", [(None, False), (-1, True), ((0, -1), False), ((-3, 1, 2), True),
                                          ((), False)], ids=["all", "neg_keep", "two", "three_keep", "empty"])
def test_sum_mean_dims(op, dims, keepdim):
    x = _randn(2, 3, 4)
    if dims is None:
        _check(lambda a: op(a), x)
    else:
        _check(lambda a: op(a, dims, keepdim=keepdim), x)


def test_sum_mean_0d_and_integer_operands():
    _check(lambda a: torch.sum(a, 0) * 3, _t(2.0))
    _check(lambda a: torch.mean(a, -1, keepdim=True), _t(2.0))
    _check(lambda a: torch.var(a, 0, correction=0) + torch.logsumexp(a, 0), _t(2.0))
    # an integer operand gets no gradient; the float one does
    _check(lambda a, n: torch.sum(a * n, 1) + torch.sum(n).float(), _randn(3, 4), torch.arange(12).reshape(3, 4))


@pytest.mark.parametrize("dtype", [F16, BF16], ids=str)
def test_mean_half_precision_count_not_representable(dtype):
    # 257 is not a bf16 number: the division by the count is done in float32, as torch does
    _check(lambda a: torch.mean(a, 1), _randn(2, 257, dtype=dtype))
    _check(lambda a: torch.sum(a, (0, 1)), _randn(2, 5, 3, dtype=dtype))


# -- amax / amin / max / min -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", [torch.amax, torch.amin], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dims,keepdim", [((), False), (-1, False), (1, True), ((0, -1), True), ((-1, 0, 1), False)],
                         ids=["all", "last", "keep", "two_keep", "three"])
def test_amax_amin_ties_split_evenly(op, dims, keepdim):
    _check(lambda a: op(a, dims, keepdim=keepdim), TIES)


@pytest.mark.parametrize("op", [torch.amax, torch.amin], ids=lambda f: f.__name__)
def test_amax_amin_nan_and_half(op):
    # a NaN result: torch's (grad / count) * mask is NaN for the whole slice
    _check(lambda a: op(a, 1), _t([[1.0, NAN, 2.0], [3.0, 3.0, -INF]]))
    _check(lambda a: op(a, -1), TIES.to(BF16))
    _check(lambda a: op(a, 0), TIES.to(F16))


def test_full_max_min_ties_split_evenly():
    _check(lambda a: torch.max(a) + torch.min(a), TIES)


def test_max_min_with_dim_ties_go_to_the_index():
    # torch.max(x, dim) reads its values at the indices (a gather), so the gradient goes to that one element
    _check(lambda a: torch.max(a, 1)[0] + torch.min(a, -1, keepdim=True)[0].sum(), TIES)


def test_full_max_nan_splits_among_nans():
    # torch.max(x)'s evenly_distribute_backward: on NaN the gradient splits among the NaNs (amax's is NaN everywhere)
    _check(lambda a: torch.max(a), _t([1.0, NAN, 3.0, NAN]))
    _check(lambda a: torch.min(a) * 3, _t([[1.0, NAN], [-2.0, 5.0]]))
    _check(lambda a: torch.amax(a), _t([1.0, NAN, 3.0]))                # (amax's own: NaN everywhere, as torch's)


# -- prod ------------------------------------------------------------------------------------------------------------
ZEROS = {
    "none": _t([[1.5, -2.0, 0.5, 3.0], [2.0, 1.0, -1.0, 0.25], [4.0, 0.5, 2.0, -1.0]]),
    "one": _t([[1.5, -2.0, 0.0, 3.0], [2.0, 1.0, -1.0, 0.25], [4.0, 0.5, 2.0, -1.0]]),
    "one_per_row": _t([[0.0, -2.0, 1.0, 3.0], [2.0, 1.0, -1.0, 0.0], [4.0, 0.0, 2.0, -1.0]]),
    "several": _t([[1.5, 0.0, 0.0, 3.0], [2.0, 0.0, -1.0, 0.25], [4.0, 0.5, 0.0, -1.0]]),
    "with_inf": _t([[0.0, 2.0, INF, 3.0], [1.0, 0.0, 2.0, 3.0], [0.0, 0.0, 1.0, -INF]]),
    "all_zero": torch.zeros(3, 4),
}


@pytest.mark.parametrize("zeros", list(ZEROS), ids=list(ZEROS))
@pytest.mark.parametrize("form", ["all", "dim1", "dim0_keep", "neg"])
def test_prod_zeros(zeros, form):
    fn = {"all": lambda a: torch.prod(a), "dim1": lambda a: torch.prod(a, 1),
          "dim0_keep": lambda a: torch.prod(a, 0, keepdim=True), "neg": lambda a: torch.prod(a, -1)}[form]
    _check(fn, ZEROS[zeros])


def test_prod_0d_size1_dtype_and_half():
    _check(lambda a: torch.prod(a, 0) * 2, _t(3.0))
    _check(lambda a: torch.prod(a, 1) * 2, _t([[2.0], [0.0]]))
    _check(lambda a: torch.prod(a, 1, dtype=torch.float64), ZEROS["one"])
    _check(lambda a: torch.prod(a, 1), ZEROS["one_per_row"].to(BF16))
    _check(lambda a: torch.prod(a), ZEROS["none"].to(F16))


# -- var / std -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", [torch.var, torch.std], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dims,keepdim,correction", [(None, False, 1), (-1, True, 0), ((0, 2), False, 2),
                                                     (1, False, 1), ((-1, -3), True, 1)],
                         ids=["all", "neg_keep_c0", "two_c2", "dim", "two_neg_keep"])
def test_var_std_dims_and_correction(op, dims, keepdim, correction):
    x = _randn(3, 4, 5)
    _check(lambda a: op(a, dims, keepdim=keepdim, correction=correction), x)


@pytest.mark.filterwarnings("ignore:var\\(\\). degrees of freedom is <= 0:UserWarning")
def test_var_no_degrees_of_freedom():
    # N <= correction: over everything torch gives grad * (x == mean ? NaN : inf); over a dim, 2/(N-c) * ...
    _check(lambda a: torch.var(a), _t([2.0]))
    _check(lambda a: torch.var(a, correction=3), _t([1.0, 1.0, 2.0]))
    _check(lambda a: torch.var(a, correction=2), _t([1.0, 1.0]))
    _check(lambda a: torch.var(a, 1), _t([[1.0], [2.0]]))
    _check(lambda a: torch.var(a, 1, correction=3), _t([[1.0, 3.0], [2.0, 2.0]]))


def test_var_half_precision():
    _check(lambda a: torch.var(a, 1), _randn(3, 59, dtype=BF16))
    _check(lambda a: torch.std(a, 0, correction=0), _randn(7, 3, dtype=F16))


def test_std_of_a_constant_slice():
    # torch's std_backward masks the gradient to 0 where std is 0 (fxla: the root of a zero gets no gradient)
    _check(lambda a: torch.std(a, 1), _t([[3.0, 3.0, 3.0], [1.0, 2.0, 4.0]]))
    _check(lambda a: torch.std(a, correction=0), _t([5.0, 5.0]))


# -- logsumexp -------------------------------------------------------------------------------------------------------
def test_logsumexp_dims_and_inf():
    x = _randn(2, 3, 4)
    _check(lambda a: torch.logsumexp(a, -1), x)
    _check(lambda a: torch.logsumexp(a, (0, 2), keepdim=True), x)
    _check(lambda a: torch.logsumexp(a * 40, (-1, 0, 1)), x)
    # a slice of -inf only gives NaN (torch: exp(-inf - -inf)); -inf entries elsewhere get 0
    _check(lambda a: torch.logsumexp(a, 1), _t([[-INF, -INF, -INF], [-INF, 1.0, 2.0], [INF, 0.0, 1.0]]))
    _check(lambda a: torch.logsumexp(a, 0), _t(2.0))
    _check(lambda a: torch.logsumexp(a, 1), _randn(3, 8, dtype=BF16))


# -- sort / topk -----------------------------------------------------------------------------------------------------
DUPS = _t([[3.0, 1.0, 3.0, 2.0, 1.0, 3.0], [0.0, NAN, 5.0, 5.0, NAN, 1.0], [2.0, 2.0, 2.0, 2.0, 2.0, 2.0]])


@pytest.mark.parametrize("dim", [-1, 0])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_duplicates_stable(dim, descending):
    # a stable sort picks the same indices as torch's for duplicates (NaN: the largest, in index order)
    _check(lambda a: torch.sort(a, dim=dim, descending=descending, stable=True)[0], DUPS)
    _check(lambda a: torch.sort(a, dim, descending).values * 2, DUPS)


def _through_returned_indices(fn, x, dim):
    """fxla's gradient of ``fn``'s values (``fn`` returns (values, indices)) is the cotangent scattered to the
    indices fxla's forward returned (torch's own tie order is not specified for topk); the values and the
    gathered elements are torch's."""
    import fxla
    leaf = x.clone().requires_grad_(True)
    values, indices = fxla.compile(fn)(leaf)
    torch.testing.assert_close(values, fn(x)[0], equal_nan=True)
    torch.testing.assert_close(x.gather(dim, indices), values.detach(), equal_nan=True)
    ct = torch.randn(values.shape, generator=torch.Generator().manual_seed(1))
    values.backward(ct)
    torch.testing.assert_close(leaf.grad, torch.zeros_like(x).scatter(dim, indices, ct), rtol=0, atol=0)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k,dim", [(1, -1), (3, 1), (6, -1), (2, 0)])
def test_topk_duplicates_through_the_returned_indices(k, dim, largest):
    _through_returned_indices(lambda a: tuple(torch.topk(a, k, dim, largest=largest)), DUPS, dim)


@pytest.mark.parametrize("k,dim", [(2, -1), (3, 0)])
def test_topk_distinct_values(k, dim):
    x = _randn(4, 6)
    _check(lambda a: torch.topk(a, k, dim)[0], x)
    _check(lambda a: torch.topk(a, k, dim, largest=False).values, x.to(BF16))


def test_sort_default_duplicates_through_the_returned_indices():
    _through_returned_indices(lambda a: tuple(torch.sort(a, 1, descending=True)), DUPS, 1)
    _through_returned_indices(lambda a: tuple(torch.sort(a, 0)), DUPS, 0)


def test_sort_signed_zeros_tie():
    # torch ties -0.0 and 0.0 in index order (the sort compares +0.0 for both: a select XLA cannot fold away)
    _check(lambda a: torch.sort(a, stable=True)[0], _t([0.0, -0.0, 1.0, -0.0]))
    x = _t([0.0, -0.0, 1.0, -0.0, -1.0, 0.0])
    for descending in (False, True):
        got = fxla.compile(lambda a: torch.sort(a, descending=descending, stable=True))(x)
        want = torch.sort(x, descending=descending, stable=True)
        assert torch.equal(got.indices, want.indices) and torch.equal(got.values.signbit(), want.values.signbit())


def test_sort_topk_edge_shapes():
    # (the products keep the gradient from being the bare cotangent; see also test_scans_identity_shapes)
    _check(lambda a: torch.sort(a)[0] * 2, _t(3.0))
    _check(lambda a: torch.topk(a, 1)[0] * 2, _t(3.0))
    _check(lambda a: torch.topk(a, 0)[0].sum() + a.sum(), _randn(2, 3))
    _check(lambda a: torch.sort(a, 0, descending=True).values, _randn(4, 3, dtype=F16))


# -- scans -----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", [torch.cumsum, torch.cumprod, torch.logcumsumexp], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dim", [0, -1, -2])
def test_scans_dims(op, dim):
    _check(lambda a: op(a, dim), _randn(3, 4, 5))


@pytest.mark.parametrize("op", [torch.cumsum, torch.cumprod, torch.logcumsumexp, lambda a, d: torch.cummax(a, d)[0],
                                lambda a, d: torch.cummin(a, d)[0]], ids=["cumsum", "cumprod", "logcumsumexp",
                                                                          "cummax", "cummin"])
def test_scans_identity_shapes(op):
    # a scan that combines nothing passes the cotangent through (times 2: the gradient is not the bare cotangent)
    _check(lambda a: op(a, 0) * 2, _t(2.5))
    _check(lambda a: op(a, 1) * 2, _t([[2.5], [0.0], [-1.0]]))
    _check(lambda a: op(a, -1) * 2, _t([0.5]))


CUMPROD_ZEROS = _t([[0.0, 2.0, 3.0, -1.0, 0.5],      # first
                    [2.0, 3.0, 0.5, -1.0, 0.0],      # last
                    [2.0, 0.0, 3.0, 0.5, -2.0],      # one inside
                    [2.0, 0.0, 3.0, 0.0, -2.0],      # two
                    [0.0, 0.0, 1.5, 2.0, 0.0],       # three, two adjacent
                    [0.0, 0.0, 0.0, 0.0, 0.0],
                    [1.5, -2.0, 0.5, 3.0, 2.0]])     # none


def test_cumprod_zeros():
    _check(lambda a: torch.cumprod(a, 1), CUMPROD_ZEROS)
    _check(lambda a: torch.cumprod(a, 0), CUMPROD_ZEROS)
    _check(lambda a: torch.cumprod(a, -1, dtype=torch.float64), CUMPROD_ZEROS)
    _check(lambda a: torch.cumprod(a, 1), _t([[0.0, INF, 2.0], [1.0, 0.0, INF], [0.0, 2.0, 0.0]]))
    _check(lambda a: torch.cumprod(a, 1), CUMPROD_ZEROS.to(BF16))


@pytest.mark.parametrize("op", [torch.cummax, torch.cummin], ids=lambda f: f.__name__)
def test_cummax_cummin_ties_and_nan(op):
    x = _t([[1.0, 3.0, 3.0, 2.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0, 2.0, 2.0], [0.0, -0.0, 0.0, NAN, 1.0, NAN]])
    _check(lambda a: op(a, 1)[0], x)
    _check(lambda a: op(a, 0).values, x)
    _check(lambda a: op(a, -1)[0], TIES[0].to(BF16))


def test_logcumsumexp_inf_and_half():
    _check(lambda a: torch.logcumsumexp(a, 1), _t([[-INF, -INF, 1.0, -INF], [0.0, -INF, 2.0, 3.0], [-INF] * 4]))
    _check(lambda a: torch.logcumsumexp(a * 30, -1), _randn(3, 6))
    _check(lambda a: torch.logcumsumexp(a, 0), _randn(5, 2, dtype=BF16))


def test_cumsum_integer_operand_and_half():
    _check(lambda a, n: torch.cumsum(a, 1) + torch.cumsum(n, 1), _randn(3, 4), torch.arange(12).reshape(3, 4))
    _check(lambda a: torch.cumsum(a, 0), _randn(6, 3, dtype=F16))
