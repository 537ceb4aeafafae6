"""Random ops against eager's statistics: dropout (every form) in training mode, ``torch.rand``/``randn``/``randint``
(and their ``*_like`` forms), ``bernoulli``.  fxla draws with XLA's THREE_FRY generator (``fxla.rng``) from a seed
taken from torch's default generator per call, so the numbers differ from eager's; what must match is the law:
rates, scaling, ranges, moments, independence across calls and across ops, and reproducibility under
``torch.manual_seed``.  Each statistical check allows 5 standard deviations (the seeds are fixed, so a pass is
deterministic).  The gradients through dropout are those of the forward's own mask."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla
from fxla.lowering import LoweringError

N = 200_000          # draws per statistical check


def _within(observed: float, expected: float, sd: float, what: str) -> None:
    assert abs(observed - expected) <= 5 * sd, f"{what}: {observed:.5f}, expected {expected:.5f} +- 5 x {sd:.2e}"


def _rate(p: float, n: int = N) -> float:
    """The standard deviation of an observed rate of events of probability ``p`` among ``n``."""
    return math.sqrt(p * (1 - p) / n)


class _Drop(nn.Module):
    def __init__(self, drop: nn.Module):
        super().__init__()
        self.drop = drop

    def forward(self, x):
        return self.drop(x)


# -- dropout ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_rate_and_scaling(p):
    torch.manual_seed(0)
    fast = fxla.compile(_Drop(nn.Dropout(p)).train())
    x = torch.rand(400, 500) + 0.5                       # no zeros of its own
    with torch.no_grad():
        y = fast(x)
    dropped = y == 0
    _within(dropped.float().mean().item(), p, _rate(p), f"dropped fraction at p={p}")
    scale = torch.tensor(1.0) / torch.tensor(1 - p)     # eager's noise.div_(1 - p), in float32
    torch.testing.assert_close(y[~dropped], x[~dropped] * scale, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_dropout_keeps_the_dtype_and_scales_as_eager(dtype):
    torch.manual_seed(1)
    p = 0.3
    x = torch.ones(100, 1000, dtype=dtype)
    y = fxla.compile(lambda x: F.dropout(x, p, training=True))(x)
    assert y.dtype == dtype
    kept = y[y != 0]
    # eager: noise (1 or 0) divided by (1 - p) in float32 (float64 for float64), rounded once to the dtype
    want = (torch.tensor(1.0, dtype=torch.float64 if dtype == torch.float64 else torch.float32) / (1 - p)).to(dtype)
    assert torch.equal(kept, torch.full_like(kept, want.item()))
    _within(1 - kept.numel() / y.numel(), p, _rate(p, y.numel()), "dropped fraction")


def test_dropout_p0_p1_and_eval_mode():
    x = torch.randn(8, 9)
    assert torch.equal(fxla.compile(lambda x: F.dropout(x, 0.0, training=True))(x), x)
    assert torch.equal(fxla.compile(lambda x: F.dropout(x, 1.0, training=True))(x), torch.zeros_like(x))
    assert torch.equal(fxla.compile(_Drop(nn.Dropout(0.5)).eval())(x), x)


def test_dropout_calls_are_independent_and_reproducible():
    torch.manual_seed(0)
    fast = fxla.compile(_Drop(nn.Dropout(0.5)).train())
    x = torch.ones(400, 500)
    with torch.no_grad():
        a, b = fast(x) == 0, fast(x) == 0
        torch.manual_seed(123)
        c = fast(x)
        torch.manual_seed(123)
        d = fast(x)
    assert not torch.equal(a, b)
    both = (a & b).float().mean().item()                 # independent masks: dropped by both with p^2
    _within(both, 0.25, _rate(0.25), "dropped by both calls")
    assert torch.equal(c, d), "the same torch.manual_seed must give the same masks"


def test_two_dropouts_of_one_program_are_independent():
    torch.manual_seed(2)
    y1, y2 = fxla.compile(lambda x: (F.dropout(x, 0.5), F.dropout(x, 0.5)))(torch.ones(400, 500))
    _within(((y1 == 0) & (y2 == 0)).float().mean().item(), 0.25, _rate(0.25), "dropped by both ops")


@pytest.mark.parametrize("module,shape", [(nn.Dropout1d, (40, 250, 7)), (nn.Dropout2d, (40, 250, 3, 4)),
                                          (nn.Dropout3d, (40, 250, 2, 2, 3))])
def test_channel_dropout_drops_whole_channels(module, shape):
    torch.manual_seed(3)
    p = 0.4
    y = fxla.compile(_Drop(module(p)).train())(torch.ones(shape))
    per_channel = y.flatten(2)
    first = per_channel[..., :1]
    assert torch.equal(per_channel, first.expand_as(per_channel)), "one mask entry per (sample, channel)"
    n = shape[0] * shape[1]
    _within((first == 0).float().mean().item(), p, _rate(p, n), "dropped channels")
    assert torch.equal(first[first != 0], torch.full_like(first[first != 0], 1 / (1 - p)))


def test_unbatched_channel_dropout():
    torch.manual_seed(4)
    y = fxla.compile(lambda x: F.dropout1d(x, 0.5, training=True))(torch.ones(300, 20))
    assert y.shape == (300, 20)
    assert torch.equal(y, y[:, :1].expand_as(y))


@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_keeps_mean_and_variance(feature):
    torch.manual_seed(5)
    p = 0.3
    x = torch.randn(1000, 200, 1) if feature else torch.randn(1000, 200)
    fn = (lambda x: F.feature_alpha_dropout(x, p, training=True)) if feature else \
        (lambda x: F.alpha_dropout(x, p, training=True))
    y = fxla.compile(fn)(x)
    alpha = 1.7580993408473766
    a = 1 / math.sqrt((alpha ** 2 * p + 1) * (1 - p))
    dropped_value = -alpha * a * (1 - p)                 # eager: (0 - 1) * alpha * a + alpha * a * p
    dropped = torch.isclose(y, torch.tensor(dropped_value), rtol=0, atol=1e-6)
    torch.testing.assert_close(y[~dropped], x[~dropped] * a + alpha * a * p, rtol=1e-6, atol=1e-6)
    _within(dropped.float().mean().item(), p, _rate(p, x.numel() if not feature else x.shape[0] * x.shape[1]),
            "dropped fraction")
    _within(y.mean().item(), 0.0, 0.02, "mean")          # SELU's fixed point: mean 0, variance 1
    _within(y.var().item(), 1.0, 0.02, "variance")


def test_attention_dropout():
    """scaled_dot_product_attention(dropout_p=p): the attention weights dropped out as eager's math form does
    (seen through an identity value)."""
    torch.manual_seed(14)
    p = 0.3
    q, k = torch.randn(4, 8, 32, 16), torch.randn(4, 8, 32, 16)
    eye = torch.eye(32).expand(4, 8, 32, 32).contiguous()
    w = fxla.compile(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=p))(q, k, eye)
    weights = torch.softmax(q @ k.transpose(-1, -2) / 4, dim=-1)
    dropped = w == 0
    _within(dropped.float().mean().item(), p, _rate(p, w.numel()), "dropped fraction")
    torch.testing.assert_close(w[~dropped], (weights / (1 - p))[~dropped], rtol=1e-5, atol=1e-6)


def test_dropout_gradient_is_the_forwards_mask():
    torch.manual_seed(6)
    p = 0.25
    for remat in (False, True):
        drop = _Drop(nn.Dropout(p)).train()
        fast = fxla.compile(drop, remat=remat)
        x = (torch.rand(64, 32) + 0.5).requires_grad_()
        y = fast(x)
        g = torch.randn(64, 32)
        y.backward(g)
        noise = (y.detach() != 0).float() * (torch.tensor(1.0) / torch.tensor(1 - p))    # eager's mask / (1 - p)
        torch.testing.assert_close(y.detach(), x.detach() * noise, rtol=0, atol=0)
        torch.testing.assert_close(x.grad, g * noise, rtol=0, atol=0)


def test_dropout_in_a_training_step_is_reproducible():
    def run(seed):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 2)).train()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        step = fxla.compile_step(model, opt, lambda m, x, t: F.cross_entropy(m(x), t))
        x, t = torch.randn(16, 8), torch.randint(0, 2, (16,))
        torch.manual_seed(seed)
        return [float(step(x, t)) for _ in range(3)]
    a, b, c = run(1), run(1), run(2)
    assert a == b and a != c
    assert len(set(a)) == 3, "each step draws new masks"


# -- rand, randn, randint, bernoulli ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,bits", [(torch.float32, 24), (torch.float64, 53), (torch.bfloat16, 8),
                                        (torch.float16, 11)])
def test_rand_is_uniform_in_the_unit_interval(dtype, bits):
    torch.manual_seed(7)
    u = fxla.compile(lambda x: torch.rand(x.shape, dtype=dtype))(torch.empty(400, 500))
    assert u.dtype == dtype and u.shape == (400, 500)
    assert u.min() >= 0 and u.max() < 1
    k = u.double() * 2 ** bits                            # torch's CPU uniform: k / 2^bits
    assert torch.equal(k, k.floor())
    v = u.double()
    _within(v.mean().item(), 0.5, math.sqrt(1 / 12 / N), "mean")
    _within(v.var().item(), 1 / 12, 0.0025, "variance")
    _within((v < 0.1).double().mean().item(), 0.1, _rate(0.1), "P(u < 0.1)")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_randn_is_standard_normal(dtype):
    torch.manual_seed(8)
    z = fxla.compile(lambda x: torch.randn_like(x))(torch.empty(400, 500, dtype=dtype))
    assert z.dtype == dtype
    z = z.double()
    _within(z.mean().item(), 0.0, 1 / math.sqrt(N), "mean")
    _within(z.std().item(), 1.0, 1 / math.sqrt(2 * N) * (4 if dtype == torch.bfloat16 else 1), "std")
    _within((z.abs() < 1).double().mean().item(), 0.682689, _rate(0.682689), "P(|z| < 1)")
    _within((z > 2).double().mean().item(), 0.0227501, _rate(0.0227501) * 2, "P(z > 2)")


def test_random_ops_of_one_program_are_independent():
    torch.manual_seed(9)
    a, b = fxla.compile(lambda x: (torch.rand_like(x), torch.rand_like(x)))(torch.empty(N))
    assert abs(torch.corrcoef(torch.stack([a, b]))[0, 1].item()) < 5 / math.sqrt(N)


def test_rand_is_reproducible_and_fresh_per_call():
    fast = fxla.compile(lambda x: torch.randn(x.shape))
    x = torch.empty(1000)
    torch.manual_seed(10)
    a, b = fast(x), fast(x)
    torch.manual_seed(10)
    c = fast(x)
    assert not torch.equal(a, b) and torch.equal(a, c)


def test_randint_covers_its_range_uniformly():
    torch.manual_seed(11)
    low, high = -3, 7
    r = fxla.compile(lambda x: torch.randint(low, high, x.shape))(torch.empty(N))
    assert r.dtype == torch.int64 and r.min() == low and r.max() == high - 1
    counts = torch.bincount(r - low, minlength=high - low).double()
    expected = N / (high - low)
    chi2 = ((counts - expected) ** 2 / expected).sum().item()
    assert chi2 < 40, f"chi-square {chi2:.1f} over {high - low - 1} degrees of freedom"   # p < 1e-5
    r2 = fxla.compile(lambda x: torch.randint_like(x, 5))(torch.empty(1000, dtype=torch.int32))
    assert r2.dtype == torch.int32 and r2.min() >= 0 and r2.max() <= 4


def test_bernoulli_rates():
    torch.manual_seed(12)
    p = torch.tensor([0.05, 0.5, 0.9]).repeat(N // 3 + 1)[:N - N % 3].reshape(-1, 3)
    b = fxla.compile(lambda p: torch.bernoulli(p))(p)
    assert b.dtype == torch.float32 and set(b.unique().tolist()) <= {0.0, 1.0}
    for j, q in enumerate((0.05, 0.5, 0.9)):
        _within(b[:, j].mean().item(), q, _rate(q, b.shape[0]), f"rate at p={q}")
    c = fxla.compile(lambda x: torch.bernoulli(x, 0.2))(torch.empty(N, dtype=torch.float64))
    assert c.dtype == torch.float64
    _within(c.mean().item(), 0.2, _rate(0.2), "rate at p=0.2")


def test_random_tensors_of_traced_sizes_are_drawn_per_call():
    """``torch.randn(x.size(0), 3)``: sizes from the input, numbers drawn per call (not trace-time constants)."""
    fast = fxla.compile(lambda x: x + torch.randn(x.size(0), 3))
    x = torch.zeros(5, 3)
    assert not torch.equal(fast(x), fast(x))


def test_random_calls_with_constant_arguments_are_not_frozen_at_trace_time():
    """``torch.rand(3)`` has no traced argument: the tracer records it anyway (fxla.frontend.random_calls), so each
    call draws new numbers, and tracing draws none from torch's generator."""
    class Noisy(nn.Module):
        def forward(self, x):
            return x + torch.rand(3) + torch.randn(x.size(0), 3) + torch.randint(0, 10, (3,))
    x = torch.zeros(4, 3)
    for concrete in (False, True):
        fast = fxla.compile(Noisy(), concrete_shapes=concrete)
        torch.manual_seed(13)
        a, b = fast(x), fast(x)          # (the first call traces with concrete_shapes, and compiles)
        torch.manual_seed(13)
        c = fast(x)
        assert not torch.equal(a, b) and torch.equal(a, c)


class _Fills(nn.Module):
    def forward(self, x):
        return (torch.empty(3, 4).uniform_(-1, 2),                 # a factory's tensor: traced from its call
                x.clone().normal_(5.0, 0.5),                       # a traced tensor
                torch.zeros(4000).bernoulli_(0.3), torch.zeros(4000).bernoulli_(x.new_full((4000,), 0.8)),
                torch.empty(4000).normal_())


@pytest.mark.parametrize("concrete", [False, True])
def test_in_place_random_fills_draw_per_call(concrete):
    """``t.uniform_()``, ``t.normal_()``, ``t.bernoulli_()`` draw new numbers on every call, reproducibly under
    torch.manual_seed; on a tensor made from constants in forward they are not frozen at trace time."""
    fast = fxla.compile(_Fills(), concrete_shapes=concrete)
    x = torch.zeros(200, 20)
    torch.manual_seed(5)
    first, second = fast(x), fast(x)
    torch.manual_seed(5)
    again = fast(x)
    for a, b, c in zip(first, second, again):
        assert not torch.equal(a, b) and torch.equal(a, c)
    uniform, normal, rate, rate_tensor, standard = first
    assert uniform.min() >= -1 and uniform.max() <= 2 and uniform.shape == (3, 4)
    assert abs(normal.mean() - 5) < 0.02 and abs(normal.std() - 0.5) < 0.02
    assert abs(rate.mean() - 0.3) < 0.03 and abs(rate_tensor.mean() - 0.8) < 0.03
    assert abs(standard.mean()) < 0.06 and abs(standard.std() - 1) < 0.05


def test_in_place_random_fills_without_a_rule_or_a_traced_tensor_are_refused():
    with pytest.raises(fxla.UnsupportedOpError, match="exponential_"):
        fxla.compile(lambda x: x + torch.empty(3).exponential_())(torch.zeros(3))
    weights = torch.empty(3)                  # made before the trace: filling it in forward would freeze it

    def fill(x):
        return x + weights.uniform_()
    with pytest.raises(fxla.TraceError, match=r"random fill .uniform_\(\) of a tensor that is not traced"):
        fxla.compile(fill)(torch.zeros(3))


def test_unsupported_random_functions_are_refused_not_frozen():
    with pytest.raises(fxla.UnsupportedOpError, match="torch.randperm"):
        fxla.compile(lambda x: x + torch.randperm(3))(torch.zeros(3))


# -- what fxla refuses ----------------------------------------------------------------------------------------------
def test_export_refuses_random_programs(tmp_path):
    model = _Drop(nn.Dropout(0.5)).train()
    with pytest.raises(fxla.ArtifactError, match="random numbers"):
        fxla.export(model, (torch.randn(2, 3),), tmp_path / "artifact")
    fxla.export(model.eval(), (torch.randn(2, 3),), tmp_path / "artifact")      # eval mode: the identity


def test_as_jax_function_refuses_random_programs():
    from fxla.runtime.jax_interop import InteropError
    fast = fxla.compile(_Drop(nn.Dropout(0.5)).train())
    with pytest.raises(InteropError, match="random numbers"):
        fast.as_jax_function(torch.randn(2, 3))


def test_randint_beyond_53_bits_is_refused():
    with pytest.raises(LoweringError, match="randint over a range"):
        fxla.compile(lambda x: torch.randint(0, 2 ** 60, x.shape))(torch.empty(3))


def test_other_threads_draw_for_real_while_a_trace_runs():
    """The tracer records the random calls and fills of its own thread only: another thread that draws numbers
    (a data loader, weight initialisation) during the trace gets real tensors, and no TraceError."""
    import threading
    seen = {}

    def elsewhere():
        seen["rand"] = torch.rand(3)
        seen["fill"] = torch.empty(3).uniform_()
        seen["custom"] = _Twice.apply(torch.ones(2))

    def traced(x):
        worker = threading.Thread(target=elsewhere)
        worker.start()
        worker.join()
        return x + torch.rand(3)
    out = fxla.compile(traced)(torch.zeros(3))
    assert out.shape == (3,)
    assert all(type(v) is torch.Tensor for v in seen.values()), seen
    assert torch.equal(seen["custom"], torch.full((2,), 2.0))


class _Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_bernoulli_with_a_fixed_probability_has_no_gradient_as_in_eager():
    """``torch.bernoulli(x, p)``: eager raises 'derivative for aten::bernoulli is not implemented' for a gradient
    through it, so fxla refuses one too (it used to give zeros); ``torch.bernoulli(x)`` has a zero gradient in
    both."""
    from fxla.gradients import GradientError
    x = torch.rand(64, requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for aten::bernoulli is not implemented"):
        torch.bernoulli(x, 0.3).sum().backward()
    with pytest.raises(GradientError, match="cannot differentiate aten::bernoulli: torch has no derivative"):
        fxla.compile(lambda t: torch.bernoulli(t, 0.3) * 2)(x).sum().backward()
    fxla.compile(lambda t: torch.bernoulli(t) * 2)(x).sum().backward()
    torch.testing.assert_close(x.grad, torch.zeros(64))
    with torch.no_grad():                                   # the values are unchanged
        b = fxla.compile(lambda t: torch.bernoulli(t, 0.25))(torch.empty(20000))
    assert set(b.unique().tolist()) <= {0.0, 1.0} and abs(b.mean().item() - 0.25) < 0.02
