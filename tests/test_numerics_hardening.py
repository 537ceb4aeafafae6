"""Numerics of lowered ops against eager PyTorch on CPU (issue #16): alpha scaling after promotion, float floor
division's edge cases, size-0 operands, half-precision rounding and operand dtype mistakes."""
from __future__ import annotations

import pytest
import torch

import fxla
from fxla.errors import FxlaError

T = torch.tensor
I32, U8, F16, BF16 = torch.int32, torch.uint8, torch.float16, torch.bfloat16
FLOATS = (torch.float32, torch.float64, F16, BF16)
_G = torch.Generator().manual_seed(0)


def _same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.is_floating_point():
        # bitwise, nan included (torch.equal treats nan != nan) and signed zeros told apart
        g, w = got.double(), want.double()
        assert torch.equal(g.isnan(), w.isnan()), (got, want)
        keep = ~w.isnan()
        assert torch.equal(g[keep], w[keep]), (got, want)
        assert torch.equal(g[keep].signbit(), w[keep].signbit()), (got, want)
    else:
        assert torch.equal(got, want), (got, want)


def _check(fn, *args):
    _same(fxla.compile(fn)(*args), fn(*args))


# -- item 4: alpha multiplies the promoted operand, in the kernel's math type ------------------------------------
_ALPHA = [
    ("add_i32_u8", lambda a, b: torch.add(a, b, alpha=-1), T([0, 7], dtype=I32), T([5, 200], dtype=U8)),
    ("sub_i32_u8", lambda a, b: torch.sub(a, b, alpha=-1), T([0, 7], dtype=I32), T([5, 200], dtype=U8)),
    ("rsub_u8_i32", lambda a, b: torch.rsub(a, b, alpha=-1), T([5, 200], dtype=U8), T([0, 7], dtype=I32)),
    ("add_f32_f16", lambda a, b: torch.add(a, b, alpha=1e5), T([1.0, -2.0]), T([5.0, 3.0], dtype=F16)),
    ("sub_f32_bf16", lambda a, b: torch.sub(a, b, alpha=1e30), T([1.0]), T([1e9], dtype=BF16)),
    ("method_add", lambda a, b: a.add(b, alpha=-1), T([0], dtype=I32), T([5], dtype=U8)),
    ("method_sub", lambda a, b: a.sub(b, alpha=-1), T([0], dtype=I32), T([5], dtype=U8)),
    ("inplace_add", lambda a, b: a.clone().add_(b, alpha=-1), T([0], dtype=I32), T([5], dtype=U8)),
    ("inplace_sub", lambda a, b: a.clone().sub_(b, alpha=-1), T([0], dtype=I32), T([5], dtype=U8)),
    ("bool_alpha_2", lambda a, b: torch.add(a, b, alpha=2), T([True, False, False]), T([True, True, False])),
    ("bool_alpha_0", lambda a, b: torch.add(a, b, alpha=0), T([True, False, False]), T([True, True, False])),
    # f16/bf16 operands: a + alpha * b in f32, rounded once, as torch's vectorized CPU loop does (its scalar loop,
    # which handles the last len % 32 elements, rounds alpha * b first: 64 elements stay in the vectorized loop)
    ("f16_once", lambda a, b: torch.sub(a, b, alpha=3), torch.randn(64, generator=_G).half(),
     torch.randn(64, generator=_G).half()),
    ("bf16_once", lambda a, b: torch.add(a, b, alpha=0.7), torch.randn(64, generator=_G).bfloat16(),
     torch.randn(64, generator=_G).bfloat16()),
    ("u8_negative_alpha_scalar", lambda a, b: torch.add(a, 3, alpha=-1) + b, T([0, 9], dtype=U8), T([1], dtype=U8)),
    ("f64_scalar", lambda a, b: torch.add(a, 0.1, alpha=3) - b, T([1.0], dtype=torch.float64),
     T([0.5], dtype=torch.float64)),
]


@pytest.mark.parametrize("fn,a,b", [c[1:] for c in _ALPHA], ids=[c[0] for c in _ALPHA])
def test_alpha_scales_the_promoted_operand(fn, a, b):
    _check(fn, a, b)


_ALPHA_REFUSED = [
    ("bool_alpha_float_result", lambda a, b: torch.add(a, b, alpha=True), T([1.0]), T([2.0])),
    ("alpha_overflows_f16", lambda a, b: torch.add(a, b, alpha=1e5), T([1.0], dtype=F16), T([2.0], dtype=F16)),
    ("alpha_overflows_i32", lambda a, b: torch.add(a, b, alpha=2 ** 40), T([1], dtype=I32), T([2], dtype=I32)),
]


@pytest.mark.parametrize("fn,a,b", [c[1:] for c in _ALPHA_REFUSED], ids=[c[0] for c in _ALPHA_REFUSED])
def test_alpha_refused_where_torch_refuses(fn, a, b):
    with pytest.raises(RuntimeError):
        fn(a, b)
    with pytest.raises(FxlaError, match="alpha"):
        fxla.compile(fn)(a, b)


# -- item 8: floor division is torch's div_floor_floating -------------------------------------------------------
_NUM = [1.0, -1.0, 0.0, -0.0, 5.0, -5.0, 7.5, float("inf"), float("nan"), 1.0, -3.0, 0.3, -7.0, 1e30, 3.0]
_DEN = [0.0, -0.0, 0.0, 2.0, -2.0, 3.0, 0.5, 2.0, 1.0, float("inf"), float("-inf"), 0.1, 2.0, 3e-9, -0.0]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_float_floor_divide_edges(dtype):
    a, b = T(_NUM, dtype=dtype), T(_DEN, dtype=dtype)
    _check(lambda x, y: (x // y, torch.floor_divide(x, y), torch.div(x, y, rounding_mode="floor")), a, b)
    _check(lambda y: 1.0 // y, b)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_float_floor_divide_random(dtype):
    g = torch.Generator().manual_seed(0)
    a = (torch.randn(64, 64, generator=g) * 50).to(dtype)
    b = (torch.randn(64, 64, generator=g) * 3).to(dtype)
    _check(lambda x, y: x // y, a, b)


@pytest.mark.parametrize("dtype", (torch.int64, I32, torch.int8, U8), ids=str)
def test_integer_floor_divide(dtype):
    a = torch.arange(-20, 20, dtype=torch.int64).clamp(torch.iinfo(dtype).min).to(dtype)
    b = T([-7, -3, -1, 1, 2, 5] * 7, dtype=torch.int64)[:40].clamp(torch.iinfo(dtype).min + 1).to(dtype)
    if dtype == U8:
        b = b.abs()
    _check(lambda x, y: (x // y, torch.div(x, y, rounding_mode="floor"), torch.div(x, y, rounding_mode="trunc")),
           a, b)


# -- item 20: an operand dtype torch refuses is the caller's mistake, not "report the missing form" --------------
_DTYPE_MISTAKES = [
    ("linear_f64_input", torch.nn.Linear(4, 3), (torch.randn(2, 4, dtype=torch.float64),), "input: f64, weight: f32"),
    ("linear_i64_input", torch.nn.Linear(4, 3), (torch.ones(2, 4, dtype=torch.int64),), "input: i64, weight: f32"),
    ("matmul_f32_f64", lambda a, b: a @ b, (torch.randn(2, 3), torch.randn(3, 2, dtype=torch.float64)),
     r"f32 vs f64"),
]


@pytest.mark.parametrize("fn,args,names", [c[1:] for c in _DTYPE_MISTAKES], ids=[c[0] for c in _DTYPE_MISTAKES])
def test_operand_dtype_mistake_names_the_dtypes_and_the_cast(fn, args, names):
    with pytest.raises(RuntimeError):
        fn(*args)
    with pytest.raises(FxlaError) as info:
        fxla.compile(fn)(*args)
    message = str(info.value)
    assert names in message and "torch refuses this mix too" in message
    assert "x.float()" in message and "report the missing form" not in message


# -- item 21: size-0 operands are valid programs ------------------------------------------------------------------
_LONG = torch.long
_EMPTY = [
    ("gather_3x0", lambda x, i: torch.gather(x, 1, i), torch.randn(3, 0), torch.zeros(3, 0, dtype=_LONG)),
    ("gather_0_rows", lambda x, i: torch.gather(x, 0, i), torch.randn(0, 3), torch.zeros(0, 3, dtype=_LONG)),
    ("cumprod_0", lambda x: torch.cumprod(x, 0), torch.randn(0)),
    ("cumsum_3x0", lambda x: torch.cumsum(x, 1), torch.randn(3, 0)),
    ("cumsum_0x3_int", lambda x: torch.cumsum(x, 0), torch.zeros(0, 3, dtype=torch.int64)),
    ("cummax_0", lambda x: torch.cummax(x, 0), torch.randn(0)),
    ("logcumsumexp_0", lambda x: torch.logcumsumexp(x, 0), torch.randn(0)),
    ("index_select_size0_dim", lambda x, i: torch.index_select(x, 1, i), torch.randn(3, 0), torch.zeros(0, dtype=_LONG)),
    ("sort_3x0", lambda x: torch.sort(x, 1), torch.randn(3, 0)),
    ("cross_entropy_0", lambda x, t: torch.nn.functional.cross_entropy(x, t), torch.randn(0, 3),
     torch.zeros(0, dtype=_LONG)),
    ("einsum_k0", lambda a, b: torch.einsum("ij,jk->ik", a, b), torch.randn(2, 0), torch.randn(0, 3)),
    ("var_of_nothing", lambda x: x.var(1), torch.randn(3, 0)),
    ("std_of_nothing", lambda x: x.std(), torch.randn(0)),
    ("var_correction_above_n", lambda x: x.var(1, correction=3), torch.randn(3, 2)),
]


@pytest.mark.filterwarnings("ignore:(var|std)\\(\\). degrees of freedom")
@pytest.mark.parametrize("fn,args", [(c[1], c[2:]) for c in _EMPTY], ids=[c[0] for c in _EMPTY])
def test_size_zero_operands(fn, args):
    got, want = fxla.compile(fn)(*args), fn(*args)
    _same(tuple(got) if isinstance(got, tuple) else got, tuple(want) if isinstance(want, tuple) else want)


# -- item 23: f16/bf16 results are rounded to their dtype between ops, sums accumulate in f32 --------------------
_HALF = [
    ("exp_then_float", lambda x: torch.exp(x).float()),
    ("exp_times_3", lambda x: (torch.exp(x) * 3).float()),
    ("chain", lambda x: ((x + x * 0.1) + 0.3).float()),
    ("mul_scalar", lambda x: x * 0.1),
    ("rmul_scalar", lambda x: 0.3 * x),
    ("imul_scalar", lambda x: x.clone().mul_(0.7)),
    ("add_scalar", lambda x: x + 0.3),
    ("sum", lambda x: x.sum()),
    ("sum_dim", lambda x: x.reshape(8, 128).sum(1)),
    ("mean", lambda x: x.mean()),
]


@pytest.mark.parametrize("dtype", (F16, BF16), ids=str)
@pytest.mark.parametrize("fn", [c[1] for c in _HALF], ids=[c[0] for c in _HALF])
def test_half_precision_rounds_like_torch(fn, dtype):
    x = torch.randn(1024, generator=torch.Generator().manual_seed(0)).to(dtype)
    _check(fn, x)


# -- item 23: where torch's CPU result is implementation-defined, fxla's is the documented one (docs/ops.md) -----
def test_float_to_int_out_of_range_saturates_as_documented():
    x = T([-1.0, -3.7, -200.0, 300.0, 1e10, float("nan"), float("inf"), float("-inf")])
    f = fxla.compile(lambda x: (x.to(U8), x.to(torch.int8), x.to(I32)))
    for _ in range(2):          # stable from call to call
        u8, i8, i32 = f(x)
        assert u8.tolist() == [0, 0, 0, 255, 255, 0, 255, 0]
        assert i8.tolist() == [-1, -3, -128, 127, 127, 0, 127, -128]
        assert i32.tolist() == [-1, -3, -200, 300, 2 ** 31 - 1, 0, 2 ** 31 - 1, -2 ** 31]


def test_topk_and_sort_ties_keep_input_order():
    x = T([1.0, 3.0, 3.0, 2.0, 3.0, 1.0])
    f = fxla.compile(lambda x: (torch.topk(x, 3).indices, torch.sort(x, descending=True).indices,
                                torch.sort(x).indices))
    for _ in range(2):
        top, down, up = f(x)
        assert top.tolist() == [1, 2, 4]
        assert down.tolist() == [1, 2, 4, 3, 0, 5]
        assert up.tolist() == [0, 5, 3, 1, 2, 4]


# -- found by utils/fuzz_diff.py ---------------------------------------------------------------------------------
_NAN = float("nan")


@pytest.mark.parametrize("case", ["sign-nan", "softmax-0d", "log-softmax-0d", "gather-0d", "topk-neg-nan",
                                  "sort-neg-nan", "sort-desc-neg-nan"])
def test_fuzzer_findings_match_eager(case):
    fn, args = {
        "sign-nan": (lambda x: torch.sign(x), (torch.tensor([_NAN, 1.0, -2.0, 0.0, -0.0]),)),
        "softmax-0d": (lambda x: torch.stack([torch.softmax(x[i], 0) for i in range(4)]),
                       (torch.tensor([_NAN, float("inf"), -float("inf"), 2.0]),)),
        "log-softmax-0d": (lambda x: torch.stack([torch.log_softmax(x[i], 0) for i in range(4)]),
                           (torch.tensor([_NAN, float("inf"), -float("inf"), 2.0]),)),
        "gather-0d": (lambda x: torch.gather(x, 0, torch.zeros_like(x, dtype=torch.int64)), (torch.tensor(-3.0),)),
        "topk-neg-nan": (lambda x: torch.topk(-x, 2), (torch.tensor([-1.0, _NAN, 0.5]),)),
        "sort-neg-nan": (lambda x: torch.sort(-x), (torch.tensor([-1.0, _NAN, 0.5]),)),
        "sort-desc-neg-nan": (lambda x: torch.sort(-x, descending=True), (torch.tensor([-1.0, _NAN, 0.5]),)),
    }[case]
    want = fn(*[a.clone() for a in args])
    got = fxla.compile(fn)(*args)
    torch.testing.assert_close(got, want, equal_nan=True)


@pytest.mark.parametrize("fn", [lambda b: b.argmax(-1), lambda b: b.argmin(), lambda b: torch.topk(b, 1),
                                lambda b: torch.round(b)], ids=["argmax", "argmin", "topk", "round"])
def test_ops_eager_refuses_for_bool_are_refused(fn):
    b = torch.tensor([[True, False], [False, True]])
    with pytest.raises((RuntimeError, NotImplementedError)):
        fn(b)
    with pytest.raises(fxla.FxlaError, match="bool tensor.*\n(.*\n)*.*refuses it too"):
        fxla.compile(fn)(b)


@pytest.mark.parametrize("case", ["mul-bool", "bool-mul", "mul-bool-inplace", "clamp-nan-bound"])
def test_ieee_special_values_match_eager(case):
    """Found by utils/fuzz_diff.py: XLA rewrites x * convert(bool) as a select (nan * False gave 0)."""
    x = torch.tensor([_NAN, 1.0, float("inf"), -2.0, -float("inf"), -0.0, 0.0])
    m = torch.tensor([False, True, False, False, True, False, True])
    fn = {
        "mul-bool": lambda x, m: x * m,
        "bool-mul": lambda x, m: m * x,
        "mul-bool-inplace": lambda x, m: x.mul_(m),
        "clamp-nan-bound": lambda x, m: torch.clamp(x, min=torch.where(m, _NAN, 0.5)),
    }[case]
    want = fn(x.clone(), m)
    got = fxla.compile(fn)(x.clone(), m)
    torch.testing.assert_close(got, want, equal_nan=True)
    assert torch.equal(torch.signbit(got[~got.isnan()]), torch.signbit(want[~want.isnan()]))


def test_index_select_of_a_0d_tensor_with_several_indices_is_refused_like_eager():
    def fn(x):
        return x.sum().index_select(0, torch.tensor([0, 0]))
    with pytest.raises(RuntimeError, match="Index to scalar can have only 1 value"):
        fn(torch.randn(3))
    with pytest.raises(fxla.FxlaError, match="Index to scalar can have only 1 value"):
        fxla.compile(fn)(torch.randn(3))
    one = lambda x: x.sum().index_select(0, torch.tensor([0]))  # noqa: E731
    torch.testing.assert_close(fxla.compile(one)(torch.ones(3)), one(torch.ones(3)))
