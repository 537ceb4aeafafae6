"""Value checks (fxla.lowering.value_checks): what eager PyTorch checks of a tensor's data and raises on, a compiled
program checks on every call -- never the answer XLA would compute instead.  Each condition against eager (valid
data: the same result; breaking data: eager raises, fxla raises ValueCheckError at the user's line), then every
call path that runs such a program: the general and checked plans, jax arrays in and out, autograd, concrete and
symbolic shapes, the torch.compile backend, export and load, as_jax_function under jax.jit, and compile_step,
whose failed step leaves the model and the optimizer as they were."""
from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import fxla
from fxla.lowering.value_checks import ValueCheckError


def _setitem_mask(x, m, v):
    y = x.clone()
    y[m] = v
    return y


def _ctc(lp, targets, input_lengths, target_lengths):
    return F.ctc_loss(lp, targets, input_lengths, target_lengths)


_LP = torch.randn(5, 2, 4).log_softmax(-1)
_TARGETS = torch.tensor([[1, 2, 3], [2, 1, 1]])
_MASK = torch.tensor([True, False, True, True])

#: (name, function, valid arguments, breaking arguments, what the error names)
CASES = [
    ("masked_scatter", lambda x, m, s: x.masked_scatter(m, s) * 2,
     (torch.randn(4), _MASK, torch.randn(3)), (torch.randn(4), torch.ones(4, dtype=torch.bool), torch.randn(3)),
     "masked_scatter: the source must hold"),
    ("masked_scatter empty source", lambda x, m, s: x.masked_scatter(m, s),
     (torch.randn(4), torch.zeros(4, dtype=torch.bool), torch.randn(0)), (torch.randn(4), _MASK, torch.randn(0)),
     "masked_scatter: the source must hold"),
    ("x[mask] = values", _setitem_mask, (torch.zeros(4), _MASK, torch.tensor([1., 2., 3.])),
     (torch.zeros(4), torch.tensor([True, False, False, True]), torch.tensor([1., 2., 3.])),
     "x\\[mask\\] = value: the value's 3 entries"),
    ("binary_cross_entropy input", lambda x, t: F.binary_cross_entropy(x * 1.0, t), (torch.rand(4), torch.rand(4)),
     (torch.rand(4) + 1, torch.rand(4)), "all elements of input should be between 0 and 1"),
    ("binary_cross_entropy NaN", lambda x, t: F.binary_cross_entropy(x * 1.0, t), (torch.rand(4), torch.rand(4)),
     (torch.tensor([0.5, float("nan")]), torch.rand(2)), "all elements of input should be between 0 and 1"),
    ("binary_cross_entropy target", lambda x, t: F.binary_cross_entropy(x, t * 1.0),
     (torch.rand(4), torch.rand(4)), (torch.rand(4), torch.rand(4) - 1), "all elements of target"),
    ("gaussian_nll_loss", lambda x, t, v: F.gaussian_nll_loss(x, t, v),
     (torch.randn(4), torch.randn(4), torch.rand(4)), (torch.randn(4), torch.randn(4), -torch.rand(4)),
     "var has negative entry"),
    ("cross_entropy computed targets", lambda x, y: F.cross_entropy(x, y[:, 0] + 0),
     (torch.randn(3, 4), torch.tensor([[0, 9], [-100, 9], [3, 9]])),
     (torch.randn(3, 4), torch.tensor([[0, 9], [4, 9], [3, 9]])), "class indices must lie in \\[0, 4\\)"),
    ("ctc input_lengths", _ctc, (_LP, _TARGETS, torch.tensor([5, 4]), torch.tensor([3, 2])),
     (_LP, _TARGETS, torch.tensor([6, 4]), torch.tensor([3, 2])), "input_lengths must lie in \\[0, 5\\]"),
    ("ctc target_lengths", _ctc, (_LP, _TARGETS, torch.tensor([5, 4]), torch.tensor([3, 2])),
     (_LP, _TARGETS, torch.tensor([5, 4]), torch.tensor([-1, 2])), "target_lengths must lie in \\[0, 3\\]"),
    ("ctc concatenated", _ctc, (_LP, torch.tensor([1, 2, 3, 1]), torch.tensor([5, 4]), torch.tensor([2, 2])),
     (_LP, torch.tensor([1, 2, 3, 1, 2]), torch.tensor([5, 4]), torch.tensor([2, 2])), "must add up to the 5"),
]


_X5 = torch.randn(5, 3)
_W = torch.randn(10, 4)
_GOOD_I, _BAD_I = torch.tensor([0, 2]), torch.tensor([0, 3])      # (doubled by the program: 6 is out of range)

def _setitem_index(x, i):
    y = x.clone()
    y[i * 2] = 0.0
    return y


#: indices the program computes from its data (here: doubled), per indexing op: (name, function, what)
INDEXED = [
    ("x[index]", lambda x, i: x[i * 2], "x\\[index\\]: every index must lie in \\[-5, 5\\)"),
    ("x[-index]", lambda x, i: x[-i * 2], "x\\[index\\]"),
    ("x[index] = v", _setitem_index, "x\\[index\\]"),
    ("index_select", lambda x, i: x.index_select(0, i * 2), "index_select: every index must lie in \\[0, 5\\)"),
    ("gather", lambda x, i: x.gather(0, (i * 2).view(2, 1).expand(2, 3)), "gather"),
    ("scatter", lambda x, i: x.scatter(0, (i * 2).view(2, 1).expand(2, 3), 1.0), "scatter"),
    ("scatter_add", lambda x, i: x.scatter_add(0, (i * 2).view(2, 1).expand(2, 3), torch.ones(2, 3)), "scatter_add"),
    ("scatter_reduce", lambda x, i: x.scatter_reduce(0, (i * 2).view(2, 1).expand(2, 3), torch.ones(2, 3), "amax"),
     "scatter_reduce"),
    ("index_add", lambda x, i: x.index_add(0, i * 2, torch.ones(2, 3)), "index_add"),
    ("index_copy", lambda x, i: x.index_copy(0, i * 2, torch.ones(2, 3)), "index_copy"),
    ("embedding", lambda x, i: F.embedding(i * 4, _W) + x.sum(), "embedding: every index must lie in \\[0, 10\\)"),
]


@pytest.mark.parametrize("name, fn, what", INDEXED, ids=[c[0] for c in INDEXED])
def test_indices_the_program_computes_are_checked(name, fn, what):
    fast = fxla.compile(fn)
    torch.testing.assert_close(fast(_X5, _GOOD_I), fn(_X5, _GOOD_I))
    with pytest.raises((IndexError, RuntimeError)):
        fn(_X5, _BAD_I)
    with pytest.raises(IndexError, match=what):          # (IndexCheckError: an IndexError, as eager's)
        fast(_X5, _BAD_I)


def test_indices_that_are_inputs_or_known_are_not_checked_in_the_program():
    # a tensor input's indices are checked before the call (IndexOutOfRangeError); positions and constants the
    # program makes are known; a concrete trace's torch.arange is a constant: no value check, no extra result
    for fn, args in ((lambda x, i: x[i], (_X5, _GOOD_I)), (lambda x: x[torch.arange(3)], (_X5,)),
                     (lambda x: x.index_select(0, torch.tensor([0, 4])), (_X5,))):
        for concrete in (False, True):
            fast = fxla.compile(fn, concrete_shapes=concrete)
            fast(*args)
            assert fast.lower(*args).program.value_checks == []
    with pytest.raises(fxla.lowering.index_bounds.IndexOutOfRangeError):
        fxla.compile(lambda x, i: x[i])(_X5, torch.tensor([7]))


@pytest.mark.parametrize("name", ["//", "%", "fmod", "div floor", "div trunc"])
def test_integer_division_by_zero_is_checked(name):
    fn = {"//": lambda a, b: a // b, "%": lambda a, b: a % b, "fmod": lambda a, b: torch.fmod(a, b),
          "div floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
          "div trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc")}[name]
    a, b, zero = torch.tensor([5, -7]), torch.tensor([2, 3]), torch.tensor([2, 0])
    fast = fxla.compile(fn)
    assert torch.equal(fast(a, b), fn(a, b))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(a, zero)
    with pytest.raises(ValueCheckError, match="integer division by zero"):
        fast(a, zero)
    torch.testing.assert_close(fast(a.float(), zero.float()), fn(a.float(), zero.float()), equal_nan=True)   # (IEEE)
    assert fxla.compile(lambda a: a // 2).lower(a).program.value_checks == []         # (a nonzero constant)


@pytest.mark.parametrize("name, fn, good, bad, what", CASES, ids=[c[0] for c in CASES])
def test_each_condition_eager_raises_on_is_checked(name, fn, good, bad, what):
    fast = fxla.compile(fn)
    torch.testing.assert_close(fast(*good), fn(*good), equal_nan=True)
    with pytest.raises(Exception):
        fn(*bad)                               # (eager raises: RuntimeError, ValueError or IndexError)
    with pytest.raises(ValueCheckError, match=what) as caught:
        fast(*bad)
    assert isinstance(caught.value, RuntimeError)
    assert os.path.basename(__file__) in str(caught.value)            # (the user's line)
    torch.testing.assert_close(fast(*good), fn(*good), equal_nan=True)     # (and it goes on working)


def _scatter(x, m, s):
    return x.masked_scatter(m, s) * 2


class Scatter(nn.Module):
    def forward(self, x, m, s):
        return _scatter(x, m, s)


X, S = torch.randn(4, 3), torch.randn(5)
GOOD = torch.zeros(4, 3, dtype=torch.bool)
GOOD[0, :2] = GOOD[2, 1] = True
BAD = torch.ones(4, 3, dtype=torch.bool)


@pytest.mark.parametrize("options", [{}, {"concrete_shapes": True}, {"dynamic": True},
                                     {"concrete_shapes": True, "dynamic": True}],
                         ids=["symbolic", "concrete", "dynamic", "concrete-dynamic"])
def test_modules_check_every_size(options):
    fast = fxla.compile(Scatter(), **options)
    for rows in (4, 6):
        x, good, bad = torch.randn(rows, 3), GOOD.repeat(2, 1)[:rows], torch.ones(rows, 3, dtype=torch.bool)
        for _ in range(2):                     # (the first call compiles, the second takes the call plan)
            torch.testing.assert_close(fast(x, good, S), _scatter(x, good, S))
            with pytest.raises(ValueCheckError):
                fast(x, bad, S)


def test_jax_arrays_in_and_out_are_checked_too():
    fast = fxla.compile(_scatter, output="jax")
    x, good, bad, s = (jnp.asarray(t.numpy()) for t in (X, GOOD, BAD, S))
    for _ in range(3):                         # (JAX's C++ dispatch never takes a checked program)
        np.testing.assert_allclose(np.asarray(fast(x, good, s)), _scatter(X, GOOD, S).numpy(), rtol=1e-6)
        with pytest.raises(ValueCheckError):
            fast(x, bad, s)


def test_calls_that_record_gradients_are_checked_and_differentiated():
    fast = fxla.compile(_scatter)
    x, s = X.clone().requires_grad_(), S.clone().requires_grad_()
    fast(x, GOOD, s).sum().backward()
    xe, se = X.clone().requires_grad_(), S.clone().requires_grad_()
    _scatter(xe, GOOD, se).sum().backward()
    torch.testing.assert_close(x.grad, xe.grad)
    torch.testing.assert_close(s.grad, se.grad)
    with pytest.raises(ValueCheckError):
        fast(x, BAD, s)


def test_the_torch_compile_backend_checks():
    compiled = torch.compile(_scatter, backend="fxla")
    torch.testing.assert_close(compiled(X, GOOD, S), _scatter(X, GOOD, S))
    with pytest.raises(ValueCheckError):
        compiled(X, BAD, S)


def test_an_exported_artifact_checks_and_refuses_malformed_checks(tmp_path):
    fxla.export(Scatter(), (X, GOOD, S), tmp_path / "a")
    loaded = fxla.load(tmp_path / "a")
    torch.testing.assert_close(loaded(X, GOOD, S), _scatter(X, GOOD, S))
    with pytest.raises(ValueCheckError, match="masked_scatter"):
        loaded(X, BAD, S)
    meta_path = tmp_path / "a" / "metadata.json"
    meta = json.loads(meta_path.read_text())
    assert meta["value_checks"][0]["where"].startswith(f"  at {os.path.basename(__file__)}:")   # (no directories)
    assert os.path.dirname(__file__) not in meta_path.read_text()
    for broken in ([{"what": 1}], "checks", None):
        meta["value_checks"] = broken
        if broken is None:
            del meta["value_checks"]
        meta_path.write_text(json.dumps(meta))
        with pytest.raises(fxla.ArtifactError, match="value_checks|returns"):
            fxla.load(tmp_path / "a")


def test_as_jax_function_raises_from_inside_jit():
    fn = fxla.compile(Scatter()).as_jax_function(X, GOOD, S)
    x, good, bad, s = (jnp.asarray(t.numpy()) for t in (X, GOOD, BAD, S))
    np.testing.assert_allclose(np.asarray(jax.jit(fn)(x, good, s)), _scatter(X, GOOD, S).numpy(), rtol=1e-6)
    with pytest.raises(Exception, match="masked_scatter: the source must hold"):
        jax.block_until_ready(jax.jit(fn)(x, bad, s))
    with pytest.raises(ValueCheckError):
        jax.block_until_ready(fn(x, bad, s))


class Trained(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin, self.bn = nn.Linear(3, 3), nn.BatchNorm1d(3)

    def forward(self, x, m, s):
        return self.lin(self.bn(x)).masked_scatter(m, s)    # (no bias right before the norm: Adam would
        # turn its zero gradient's rounding noise into whole steps)


@pytest.mark.parametrize("optimizer, accumulation", [(torch.optim.SGD, 1), (torch.optim.Adam, 1),
                                                     (torch.optim.SGD, 2)])
def test_a_failed_training_step_leaves_model_and_optimizer_as_they_were(optimizer, accumulation):
    torch.manual_seed(0)
    model, eager = Trained(), Trained()
    eager.load_state_dict(model.state_dict())
    opt, eager_opt = optimizer(model.parameters(), lr=0.05), optimizer(eager.parameters(), lr=0.05)
    step = fxla.compile_step(model, opt, lambda m, *batch: m(*batch).pow(2).mean() / accumulation,
                             accumulation_steps=accumulation)
    x, s = torch.randn(4, 3), torch.randn(6)
    good = torch.zeros(4, 3, dtype=torch.bool)
    good[:2] = True

    def eager_step():
        eager_opt.zero_grad()
        for _ in range(accumulation):
            (eager(x, good, s).pow(2).mean() / accumulation).backward()
        eager_opt.step()

    for _ in range(accumulation):
        step(x, good, s)
    eager_step()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    for _ in range(accumulation):
        with pytest.raises(ValueCheckError):
            step(x, torch.ones(4, 3, dtype=torch.bool), s)
    for k, v in model.state_dict().items():
        assert torch.equal(v, state[k]), k
    for _ in range(accumulation):
        step(x, good, s)
    eager_step()
    for (k, v), e in zip(model.state_dict().items(), eager.state_dict().values()):
        torch.testing.assert_close(v, e, msg=k)       # (the failed calls counted nothing: Adam's step included)


def test_review_gaps_are_checked():
    """Each case eager raises on, which the first version of the checks let through."""
    class BufferTarget(nn.Module):                  # class indices in a buffer: no host check reads them
        def __init__(self):
            super().__init__()
            self.register_buffer("t", torch.tensor([0, 1, 2]))

        def forward(self, x):
            return F.cross_entropy(x, self.t)

    model, x = BufferTarget(), torch.randn(3, 4)
    fast = fxla.compile(model)
    torch.testing.assert_close(fast(x), model(x))
    with torch.no_grad():
        model.t[1] = 9
    with pytest.raises(IndexError, match="class indices"):
        fast(x)
    x3 = torch.randn(2, 3)
    with pytest.raises(IndexError):                 # x[i, j] with input indices: merged, so checked in the program
        fxla.compile(lambda x, i, j: x[i, j])(x3, torch.tensor([0]), torch.tensor([3]))

    def setitem(x, m, v):
        y = x.clone()
        y[m] = v
        return y
    with pytest.raises(ValueCheckError, match="the value's 0 entries"):
        fxla.compile(setitem)(torch.zeros(4), _MASK, torch.zeros(0))
    unbatched = fxla.compile(lambda lp, t, il, tl: F.ctc_loss(lp, t, il, tl))
    with pytest.raises(ValueCheckError, match="add up to the 3"):
        unbatched(_LP[:, 0], torch.tensor([1, 2, 3]), torch.tensor(5), torch.tensor(2))
    with pytest.raises(IndexError, match="embedding_bag"):
        fxla.compile(lambda i: F.embedding_bag(i * 3, _W))(torch.tensor([[1, 4]]))
    with pytest.raises(IndexError, match="multi_margin_loss"):
        fxla.compile(lambda x, t: F.multi_margin_loss(x, t * 2))(torch.randn(2, 4), torch.tensor([0, 2]))
    with pytest.raises(ValueError, match="var has negative"):            # (eager's ValueError, as an error class)
        fxla.compile(lambda x, t, v: F.gaussian_nll_loss(x, t, v))(torch.randn(4), torch.randn(4), -torch.rand(4))
    with pytest.raises(fxla.errors.FxlaError, match="var has negative"):
        fxla.compile(lambda x, t: F.gaussian_nll_loss(x, t, -1.0))(torch.randn(4), torch.randn(4))


class GuardedLookup(nn.Module):
    """A data-dependent branch whose guard program holds a checked op (an embedding of computed ids)."""

    def __init__(self):
        super().__init__()
        self.e = nn.Embedding(6, 3)

    def forward(self, i):
        h = self.e(i * 2)
        if h.sum() > 0:
            return h * 2
        return h - 1


def test_an_exported_guard_program_checks_too(tmp_path):
    torch.manual_seed(1)
    model, good = GuardedLookup(), torch.tensor([0, 1])
    fxla.export(model, (good,), tmp_path / "g", concrete_shapes=True)
    loaded = fxla.load(tmp_path / "g")
    torch.testing.assert_close(loaded(good), model(good))
    with pytest.raises(IndexError, match="embedding"):
        loaded(torch.tensor([0, 3]))


def _shifted_loss(logits, labels):
    """Hugging Face's causal-LM loss: labels padded with ignore_index, then shifted by one."""
    labels = F.pad(labels, (0, 1), value=-100)[..., 1:]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


class ShiftedLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.e, self.head = nn.Embedding(10, 8), nn.Linear(8, 10)

    def forward(self, ids, labels):
        return _shifted_loss(self.head(self.e(ids)), labels)


def test_shifted_labels_are_checked_on_the_host_where_they_are_read(tmp_path):
    """The labels input through the pad by ignore_index and the slice: checked before the call, and only in the
    part the loss reads (column 0 never is a target), with no value check in the program (a training step would
    pay for it on every step)."""
    torch.manual_seed(0)
    model, ids = ShiftedLM(), torch.randint(0, 10, (2, 6))
    fast = fxla.compile(model, concrete_shapes=True)
    torch.testing.assert_close(fast(ids, ids), model(ids, ids))
    module, values = fast._per_shape.module_for((ids, ids), {})
    program = module.lower(*values).program
    assert program.value_checks == [] and program.input_checks[-1].region == ((0, 2), (1, 6))
    first = ids.clone()
    first[0, 0] = 50                                 # not read by the loss: eager does not raise either
    torch.testing.assert_close(fast(ids, first), model(ids, first))
    bad = ids.clone()
    bad[1, 3] = 50
    with pytest.raises(IndexError):
        model(ids, bad)
    with pytest.raises(fxla.lowering.index_bounds.IndexOutOfRangeError, match="holds 50"):
        fast(ids, bad)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = fxla.compile_step(model, opt, lambda m, i, t: m(i, t), concrete_shapes=True)
    step(ids, first)
    with pytest.raises(IndexError):
        step(ids, bad)
    fxla.export(model, (ids, ids), tmp_path / "lm", concrete_shapes=True)
    loaded = fxla.load(tmp_path / "lm")
    torch.testing.assert_close(loaded(ids, first), model(ids, first))
    with pytest.raises(IndexError):
        loaded(ids, bad)


def test_an_index_check_along_a_symbolic_dim_names_no_internal_symbol():
    def f(x, i):
        return x.index_select(0, i * 3)

    fast = fxla.compile(f, dynamic={"x": {0: fxla.Dim("n")}})
    with pytest.raises(fxla.FxlaError, match=r"index_select: every index must lie in \[0, the size of the dim it "
                                             r"indexes\)"):
        fast(torch.randn(5, 3), torch.tensor([0, 1, 2]))
