"""The call path as a demanding user meets it (issue #16 items 7, 9, 10, 14, 18, 19, 22, 24): state-writing calls
from several threads, in-place changes of inputs eager refuses, weights changed after compiling, bounded
executables, bad arguments, exact memory-overlap checks, non-contiguous inputs of views."""
from __future__ import annotations

import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import torch.nn as nn

import fxla
from fxla import ArgumentError, InputMutationError, SignatureError


def close(got, want):
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("n", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        self.n += 1
        return x + self.n


# -- item 7 ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("concrete_shapes", [False, True])
def test_concurrent_state_writing_calls_lose_no_update(concrete_shapes):
    model = Counter()
    fast = fxla.compile(model, concrete_shapes=concrete_shapes)
    x = torch.zeros(3)
    fast(x)                                      # compiled before the threads start
    errors = []

    def work():
        try:
            for _ in range(60):
                fast(x)
        except Exception as err:  # noqa: BLE001
            errors.append(err)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert model.n.item() == 241
    close(fast(x), torch.full((3,), 242.0))


# -- item 9 ------------------------------------------------------------------------------------------------------
def _add_one_(x):
    x.add_(1)
    return x * 2


def test_inplace_on_a_leaf_that_requires_grad_is_refused_like_eager():
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        _add_one_(x)
    fast = fxla.compile(_add_one_)
    with pytest.raises(InputMutationError, match="leaf Variable that requires grad") as info:
        fast(x)
    assert "\nfix: " in str(info.value)
    assert torch.equal(x.detach(), torch.ones(3))              # nothing written
    with torch.no_grad():                                      # eager allows it there, and so does fxla
        close(fast(x), _add_one_(torch.ones(3)))
    close(x.detach(), torch.full((3,), 2.0))


def test_inplace_on_a_non_leaf_that_requires_grad_records_a_guarded_change():
    leaf = torch.ones(3, requires_grad=True)
    x = leaf * 1
    y = fxla.compile(_add_one_)(x)
    close(x.detach(), torch.full((3,), 2.0))                  # written, as eager would
    assert x.grad_fn is not None and y.requires_grad
    with pytest.raises(fxla.GradientError):                   # a backward through the change is refused
        x.sum().backward()
    with pytest.raises(InputMutationError, match="output='jax'"):
        fxla.compile(_add_one_, output="jax")(leaf * 1)


# -- item 10 -----------------------------------------------------------------------------------------------------
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def _changes():
    def mul(net):
        with torch.no_grad():
            net.fc2.weight.mul_(2)

    def view_edit(net):
        with torch.no_grad():
            net.fc1.bias[:2] = 5.0

    def load(net):
        other = Net()
        net.load_state_dict(other.state_dict())

    def data(net):
        net.fc2.weight.data = torch.randn(3, 8)

    def step(net):
        opt = torch.optim.SGD(net.parameters(), lr=0.5)
        net(torch.randn(2, 4)).sum().backward()
        opt.step()
    return {"mul_": mul, "view": view_edit, "load_state_dict": load, ".data =": data, "optimizer": step}


@pytest.mark.parametrize("change", list(_changes()))
@pytest.mark.parametrize("output", ["torch", "jax"])
def test_weights_changed_after_compiling_are_used(change, output):
    torch.manual_seed(0)
    net = Net()
    fast = fxla.compile(net, output=output)
    x = torch.randn(2, 4)
    xj = jnp.asarray(x.numpy())
    as_torch = (lambda y: torch.from_numpy(np.array(y))) if output == "jax" else (lambda y: y)
    with torch.no_grad():
        for _ in range(3):                        # the fast paths are recorded
            close(as_torch(fast(x)), net(x))
            if output == "jax":
                close(as_torch(fast(xj)), net(x))
    _changes()[change](net)
    with torch.no_grad():
        want = net(x)
        close(as_torch(fast(x)), want)
        if output == "jax":
            close(as_torch(fast(xj)), want)
        close(as_torch(fast(x)), want)


def test_weights_changed_in_a_concrete_shapes_module_are_used():
    torch.manual_seed(0)
    net = Net()
    fast = fxla.compile(net, concrete_shapes=True)
    x = torch.randn(2, 4)
    with torch.no_grad():
        close(fast(x), net(x))
        net.fc1.weight.mul_(-1)
        close(fast(x), net(x))


def test_state_the_program_writes_is_not_taken_for_a_user_change():
    model = Counter()
    fast = fxla.compile(model)
    compiles = fast.cache_size
    for i in range(1, 4):
        close(fast(torch.zeros(2)), torch.full((2,), float(i)))
    assert fast.cache_size == compiles + 1
    with torch.no_grad():
        model.n.fill_(10)                          # a user change of the buffer is seen too
    close(fast(torch.zeros(2)), torch.full((2,), 11.0))


# -- item 14 -----------------------------------------------------------------------------------------------------
def test_executables_are_bounded_and_can_be_cleared():
    fast = fxla.compile(lambda x: x * 2, max_signatures=3)
    for n in range(1, 7):
        close(fast(torch.ones(n)), torch.full((n,), 2.0))
    assert fast.cache_size == 3
    assert len(fast._plans) <= 3
    close(fast(torch.ones(1)), torch.full((1,), 2.0))          # evicted: compiled again, still right
    fast.clear_cache()
    assert fast.cache_size == 0 and not fast._plans
    close(fast(torch.ones(2)), torch.full((2,), 2.0))
    with pytest.raises(fxla.OptionError, match="max_signatures"):
        fxla.compile(lambda x: x, max_signatures=0)


def test_concrete_shapes_traces_are_bounded():
    fast = fxla.compile(Net(), concrete_shapes=True, max_signatures=2)
    for n in range(1, 5):
        fast(torch.randn(n, 4))
    assert len(fast._per_shape.compiled) == 2


# -- item 18 -----------------------------------------------------------------------------------------------------
def test_writing_back_into_an_expanded_input_is_refused_before_running():
    x = torch.zeros(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match="single memory location"):
        _add_one_(x)
    with pytest.raises(InputMutationError, match="single memory location"):
        fxla.compile(_add_one_)(x)
    assert torch.equal(x, torch.zeros(2, 3))


def test_a_refused_write_back_leaves_module_state_unchanged():
    class Both(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("n", torch.zeros(()))

        def forward(self, x):
            self.n += 1
            x.add_(1)
            return x

    model = Both()
    with pytest.raises(InputMutationError):
        fxla.compile(model)(torch.zeros(1, 3).expand(2, 3))
    assert model.n.item() == 0


# -- item 19 (call time) -----------------------------------------------------------------------------------------
def test_meta_and_sparse_inputs_are_signature_errors():
    fast = fxla.compile(lambda x: x + 1)
    with pytest.raises(SignatureError, match="meta tensor") as info:
        fast(torch.empty(2, 3, device="meta"))
    assert "\nfix: " in str(info.value)
    with pytest.raises(SignatureError, match="sparse"):
        fast(torch.eye(3).to_sparse())


def test_wrong_arguments_are_argument_errors():
    fast = fxla.compile(Net())
    with pytest.raises(ArgumentError, match="takes 1 arguments but 2") as info:
        fast(torch.randn(2, 4), torch.randn(2, 4))
    assert isinstance(info.value, TypeError) and "\nfix: " in str(info.value)
    with pytest.raises(ArgumentError, match="missing required argument 'x'"):
        fast()
    with pytest.raises(ArgumentError, match="unexpected keyword"):
        fast(torch.randn(2, 4), y=1)
    with pytest.raises(ArgumentError, match="fix:"):
        fxla.compile(Net(), concrete_shapes=True)(torch.randn(2, 4), torch.randn(1))


# -- item 22 -----------------------------------------------------------------------------------------------------
def _mutate_first(a, b):
    a.add_(1)
    return a + b


def test_disjoint_views_and_empty_tensors_are_not_aliases():
    x = torch.zeros(3, 2)
    got = fxla.compile(_mutate_first)(x[:, 0], x[:, 1])
    want_x = torch.zeros(3, 2)
    want = _mutate_first(want_x[:, 0], want_x[:, 1])
    close(got, want)
    close(x, want_x)
    e1, e2 = torch.empty(0), torch.empty(0)
    assert fxla.compile(_mutate_first)(e1, e2).shape == (0,)


def test_overlapping_views_are_still_refused():
    x = torch.zeros(4)
    with pytest.raises(InputMutationError, match="shares its memory"):
        fxla.compile(_mutate_first)(x[:3], x[1:])
    x = torch.zeros(4, 4)
    with pytest.raises(InputMutationError, match="shares its memory"):
        fxla.compile(_mutate_first)(x[0], x[:, 0])        # one element in common


# -- item 24 (call time) -----------------------------------------------------------------------------------------
def test_view_of_a_non_contiguous_input_is_eagers_error():
    def flat(x):
        return x.view(-1) * 2
    a = torch.randn(3, 4)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        flat(a.t())
    fast = fxla.compile(flat)
    close(fast(a), flat(a))
    with pytest.raises(SignatureError, match="view size is not compatible"):
        fast(a.t())
    close(fast(a.t().contiguous()), flat(a.t().contiguous()))


def test_a_model_on_the_meta_device_is_refused_with_a_fix():
    """Parameters on the meta device have no data: refused at fxla.compile, not a NotImplementedError at the call."""
    import fxla
    model = torch.nn.Sequential(*[torch.nn.Linear(3, 3, device="meta") for _ in range(3)])
    with pytest.raises(fxla.OptionError) as info:
        fxla.compile(model)
    text = str(info.value)
    assert "on the meta device: [0.weight, 0.bias, 1.weight, 1.bias, 2.weight, 2.bias]" in text
    assert "fix: materialize it first" in text and info.value.fix.startswith("materialize")
