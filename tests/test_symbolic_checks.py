"""Symbolic sizes never trade a check for a wrong answer (issue #21; a review of 2026-12-06): where a rule or meta
result computes with a symbolic size, what eager checks at that size (an index in range, blocks of at least one, a
state's shape) is a guard of the program or an error, and factors computed from sizes equal the static program's
bit for bit.  The oracle is eager PyTorch, and the static program where they must agree exactly."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import fxla


def _list_index(x):
    return x[[0, -1, 5]]


def test_list_indices_with_negative_and_large_entries_are_checked():
    """-1 is wrapped by the size as a value, so the per-call check of constant indices does not see 5: the program
    relies on every entry lying in [-size, size) -- a clamped read before the guard covered the large entry."""
    fast = fxla.compile(_list_index, dynamic={"x": {0: fxla.Dim("n")}})
    for n in (8, 6):
        x = torch.randn(n, 2)
        torch.testing.assert_close(fast(x), _list_index(x), rtol=0, atol=0)
    with pytest.raises(fxla.ShapeConstraintError, match="n > 5"):
        fast(torch.randn(4, 2))
    loose = fxla.compile(_list_index, dynamic=True)
    loose(torch.randn(8, 2))
    with pytest.raises(IndexError):
        loose(torch.randn(4, 2))

    def write(x):
        y = x.clone()
        y[[-1, 5]] = 100.0
        return y
    writing = fxla.compile(write, dynamic=True)
    writing(torch.randn(8, 2))
    with pytest.raises(IndexError):
        writing(torch.randn(4, 2))


def _to_quarter(x):
    return F.interpolate(x, size=(x.shape[2] // 4, 3), mode="bilinear", align_corners=True)


def test_an_align_corners_output_size_computed_from_a_symbolic_size():
    """h // 4 is symbolic and may be 1: torch reads source 0 there (a guard records which), never 0 / 0."""
    fast = fxla.compile(_to_quarter, dynamic={"x": {2: fxla.Dim("h")}})
    for h in (7, 5, 6):
        x = torch.randn(1, 2, h, 5)
        torch.testing.assert_close(fast(x), _to_quarter(x))
    loose = fxla.compile(lambda x: F.interpolate(x, scale_factor=0.5, mode="bicubic", align_corners=True),
                         dynamic=True)
    for h in (4, 2, 3, 9):
        x = torch.randn(1, 2, h, h)
        torch.testing.assert_close(loose(x), F.interpolate(x, scale_factor=0.5, mode="bicubic", align_corners=True))


def test_unfold_blocks_must_be_at_least_one_at_every_size():
    fast = fxla.compile(lambda x: F.unfold(x, 3), dynamic={"x": {2: fxla.Dim("h")}})
    fast(torch.randn(1, 2, 5, 5))
    with pytest.raises(fxla.ShapeConstraintError, match="h - 2 >= 1"):
        fast(torch.randn(1, 2, 2, 5))
    loose = fxla.compile(lambda x: F.unfold(x, 3), dynamic=True)
    loose(torch.randn(1, 2, 5, 5))
    with pytest.raises(fxla.FxlaError, match="components must be at least one"):
        loose(torch.randn(1, 2, 2, 5))


class _Wrapped(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x, h):
        return self.inner(x, h)


def test_recurrent_states_of_the_wrong_shape_are_refused():
    """torch checks a given state's shape: the meta results check it at the traced sizes with torch's own forward,
    and each equality with a symbolic size is a guard (before, a 3-layer state for a 2-layer GRU ran silently)."""
    gru = _Wrapped(torch.nn.GRU(4, 3, num_layers=2)).eval().requires_grad_(False)
    for dynamic in (False, {"x": {1: fxla.Dim("b")}, "h": {1: fxla.Dim("b")}}):
        fast = fxla.compile(gru, dynamic=dynamic)
        x, h = torch.randn(5, 2, 4), torch.randn(2, 2, 3)
        torch.testing.assert_close(fast(x, h), gru(x, h))
        with pytest.raises(fxla.FxlaError, match="Expected hidden size"):
            fxla.compile(gru, dynamic=dynamic)(x, torch.randn(3, 2, 3))
    cell = _Wrapped(torch.nn.GRUCell(4, 3)).eval().requires_grad_(False)
    fast = fxla.compile(cell, dynamic={"x": {0: fxla.Dim("b")}, "h": {0: fxla.Dim("b2")}})
    fast(torch.randn(2, 4), torch.randn(2, 3))
    with pytest.raises(fxla.ShapeConstraintError, match="Eq"):
        fast(torch.randn(3, 4), torch.randn(2, 3))


def _smoothed(x, i):
    return F.cross_entropy(x, i, label_smoothing=0.3, reduction="none")


def test_label_smoothing_over_a_symbolic_class_count_is_the_static_program():
    """eps / C in f64 with eps an f64 constant (an f32 eps gave another factor for 16-45 % of the class counts)."""
    fast, static = fxla.compile(_smoothed, dynamic={"x": {1: fxla.Dim("c")}}), fxla.compile(_smoothed)
    for c in (5, 10, 11, 37):
        x, i = torch.randn(64, c), torch.randint(0, c, (64,))
        torch.testing.assert_close(fast(x, i), static(x, i), rtol=0, atol=0)


def test_max_pool1d_with_indices_takes_return_indices_positionally():
    pool = lambda x: F.max_pool1d_with_indices(x, 2, 2, 0, 1, False, False)     # noqa: E731
    x = torch.randn(2, 3, 8)
    for dynamic in (False, True):
        got, want = fxla.compile(pool, dynamic=dynamic)(x), pool(x)
        assert all(torch.equal(a, b) for a, b in zip(got, want))


def test_list_indices_through_the_torch_compile_backend():
    """dynamo keeps lists as torch.fx's immutable_list: converted to a tuple, x[[-1, 1]] read one element."""
    def pick(x):
        return x[[-1, 1]] * 2, x[[0, 1], [1, 0]], x[:, [1, 0]]
    for dynamic in (False, True):
        compiled = torch.compile(pick, backend="fxla", dynamic=dynamic)
        for n in (8, 6):
            x = torch.arange(2.0 * n).reshape(n, 2)
            for got, want in zip(compiled(x), pick(x)):
                assert torch.equal(got, want)


def _third(x):
    return F.interpolate(x, scale_factor=1 / 3, mode="nearest")


def test_an_interpolate_output_size_of_zero_is_refused_as_eager_refuses_it(fresh_dynamo):
    """floor(n / 3) is 0 at n = 2, where torch's kernels raise: the program relies on every output size being
    positive (a constraint checked per call), and a static size of 0 is a lowering error -- not an empty result."""
    with pytest.raises(RuntimeError, match="greater than 0"):
        _third(torch.randn(1, 3, 2))
    named = fxla.compile(_third, dynamic={"x": {2: fxla.Dim("n", max=64)}})
    loose = fxla.compile(_third, dynamic=True)
    dynamo = torch.compile(_third, backend="fxla", dynamic=True)
    for fast in (named, loose, dynamo):
        for n in (12, 9, 6, 13):
            x = torch.randn(1, 3, n)
            torch.testing.assert_close(fast(x), _third(x))
    with pytest.raises(fxla.ShapeConstraintError, match=r"\(n = 2\) break the constraint .*> 0"):
        named(torch.randn(1, 3, 2))
    for fast in (loose, dynamo):
        with pytest.raises(fxla.FxlaError, match="greater than 0"):
            fast(torch.randn(1, 3, 2))
    x = torch.randn(1, 1, 3, 10)                         # H = 3 at factor 0.25: eager raises at any size
    with pytest.raises(RuntimeError, match="greater than 0"):
        F.interpolate(x, scale_factor=0.25, mode="bilinear")
    with pytest.raises(fxla.FxlaError, match=r"output sizes should be greater than 0, but got input \(3, 10\) and "
                                             r"output \(0, 2\)"):
        fxla.compile(lambda x: F.interpolate(x, scale_factor=0.25, mode="bilinear"))(x)

    # area mode and adaptive average pooling to size 0: eager returns an empty tensor, and so does fxla (before: a
    # raw ZeroDivisionError from the lowering rule)
    for fn in (lambda v: F.interpolate(v, size=0, mode="area"), lambda v: F.adaptive_avg_pool2d(v, (0, 2)) * 2):
        got, want = fxla.compile(fn)(x), fn(x)
        assert got.shape == want.shape and got.dtype == want.dtype and want.numel() == 0


def _crop(x):
    return F.pad(x, (-2, 1, 1, -3))


def test_a_negative_padding_longer_than_a_symbolic_dim_is_refused_as_eager_refuses_it(fresh_dynamo):
    """torch crops H = 2 by 3 after padding 1 (narrow(): length must be non-negative); the polymorphic program
    gave an empty tensor there.  The crops are constraints of the program now."""
    with pytest.raises(RuntimeError, match="narrow"):
        _crop(torch.randn(1, 2, 2, 4))
    named = fxla.compile(_crop, dynamic={"x": {2: fxla.Dim("h")}})
    loose = fxla.compile(_crop, dynamic=True)
    dynamo = torch.compile(_crop, backend="fxla", dynamic=True)
    for fast in (named, loose, dynamo):
        for h in (5, 3, 8):
            x = torch.randn(1, 2, h, 4)
            torch.testing.assert_close(fast(x), _crop(x))
    with pytest.raises(fxla.ShapeConstraintError, match=r"\(h = 2\) break the constraint h - 3 >= 0"):
        named(torch.randn(1, 2, 2, 4))
    for fast in (loose, dynamo):
        with pytest.raises(fxla.FxlaError, match="crops dim 2 of size 2 by .1, -3., more than it holds"):
            fast(torch.randn(1, 2, 2, 4))


def _two_uses(x, y):
    n = y.shape[1]
    return y * n, torch.arange(n).float().sum() + x.shape[1]


def _int_size(x, n):
    return x[:, :n - 1] * n, torch.arange(n).float().sum()


@pytest.mark.parametrize("concrete_shapes", [False, True])
def test_the_first_call_is_checked_against_its_dims_too(concrete_shapes):
    """A named Dim's uses agreeing, its int size and its bounds hold for the first call as for the later ones: the
    first polymorphic trace was made at the call's sizes unchecked (y's size computed as x's: y * 4 for y * 6)."""
    seq = fxla.Dim("seq", min=3, max=32)
    fast = fxla.compile(_two_uses, dynamic={"x": {1: seq}, "y": {1: seq}}, concrete_shapes=concrete_shapes)
    with pytest.raises(fxla.ShapeConstraintError, match="one Dim 'seq' have different sizes"):
        fast(torch.ones(2, 4), torch.ones(2, 6))
    with pytest.raises(fxla.ShapeConstraintError, match="< min 3"):
        fast(torch.ones(2, 2), torch.ones(2, 2))
    for n in (6, 4):
        x, y = torch.randn(2, n), torch.randn(2, n)
        for got, want in zip(fast(x, y), _two_uses(x, y)):
            torch.testing.assert_close(got, want)
    if concrete_shapes:                         # (an int is a constant of a concrete-shapes trace)
        return
    sized = fxla.compile(_int_size, dynamic={"x": {1: seq}, "n": seq})
    with pytest.raises(fxla.ShapeConstraintError, match="n = 3, but it is the size of Dim 'seq'"):
        sized(torch.ones(3, 5), 3)
    x = torch.randn(3, 5)
    for got, want in zip(sized(x, 5), _int_size(x, 5)):
        torch.testing.assert_close(got, want)


def _checked(x):
    torch._check(x.shape[1] % 2 == 0, lambda: "even please")
    return x * 2


def test_torch_check_on_a_size_is_a_guard_or_a_clear_error():
    """torch._check(cond) on a traced size is ``if not cond: raise``: a guard where the trace knows the sizes (eager's
    error at a size that breaks it), the tracer's control-flow error with its fix where it does not."""
    for options in ({"dynamic": True, "concrete_shapes": True}, {"concrete_shapes": True}):
        fast = fxla.compile(_checked, **options)
        for n in (4, 6):
            x = torch.randn(2, n)
            torch.testing.assert_close(fast(x), _checked(x))
        with pytest.raises(RuntimeError, match="even please"):
            fast(torch.randn(2, 5))
    strict = fxla.compile(_checked, dynamic={"x": {1: fxla.Dim("s")}}, concrete_shapes=True)
    strict(torch.randn(2, 4))
    with pytest.raises(fxla.ShapeConstraintError, match="Mod"):
        strict(torch.randn(2, 5))
    for options in ({}, {"dynamic": True}):
        with pytest.raises(fxla.TraceError, match=r"truth value(.|\n)*test_symbolic_checks(.|\n)*fix:"):
            fxla.compile(_checked, **options)(torch.randn(2, 4))


def test_torch_check_on_a_tensor_is_torchs_type_error():
    def f(x):
        torch._check(x.sum() > 0)
        return x * 2
    with pytest.raises(TypeError, match="cond must be a bool, but got a Tensor"):
        f(torch.ones(2, 3))
    with pytest.raises(TypeError, match="cond must be a bool, but got a Tensor"):
        fxla.compile(f, concrete_shapes=True)(torch.ones(2, 3))
