"""torch.compile(backend="fxla") holds a dynamo graph's parameters as fxla.compile holds a model's
(fxla.backend_weights): uploaded once in the layout their dots and convolutions want, seen when they change,
differentiated as parameters, and never used for a call that passes other tensors in their place."""
import gc
import logging
import re
import weakref

import pytest
import torch
import torch._dynamo

import fxla

from fxla.backend import fxla_backend
from fxla.backend_weights import MAX_HELD_SETS, DynamoCall, release_parameters


pytestmark = pytest.mark.usefixtures("fresh_dynamo")      # (tests/conftest.py)


class _Keep:
    """A dynamo backend that compiles through fxla and keeps what fxla's backend returned."""

    def __init__(self):
        self.made, self.inputs = [], []

    def __call__(self, gm, example_inputs):
        made = fxla_backend(gm, example_inputs)
        self.made.append(made)
        self.inputs.append(list(example_inputs))
        return made


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(8 * 6 * 6, 5)).eval()


def test_parameters_are_held_in_the_layout_their_consumers_want():
    net, keep, x = _net(), _Keep(), torch.randn(2, 3, 8, 8)
    fast = torch.compile(net, backend=keep)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), net(x), rtol=1e-5, atol=1e-5)
    (made,) = keep.made
    assert isinstance(made, DynamoCall)
    assert {id(w) for w in made.weights} == {id(p) for p in net.parameters()}
    hlo = made.compiled.executable_for(x).hlo_text()
    entry = hlo[hlo.index("ENTRY"):]
    assert re.search(r"f32\[3,3,3,8\]\{[0-9,]+\} parameter", entry), entry       # the kernel stored HWIO
    assert re.search(r"f32\[288,5\]\{[0-9,]+\} parameter", entry), entry        # the weight stored [in, out]
    assert not re.search(r"f32\[8,3,3,3\]\{[0-9,]+\} parameter", entry)


def test_a_changed_parameter_is_seen():
    net, x = _net(), torch.randn(2, 3, 8, 8)
    fast = torch.compile(net, backend="fxla")
    with torch.no_grad():
        fast(x)
        net[0].weight.mul_(2)
        net[3].load_state_dict({"weight": torch.randn(5, 288), "bias": torch.randn(5)})
        torch.testing.assert_close(fast(x), net(x), rtol=1e-5, atol=1e-5)


def test_training_through_held_parameters_equals_eager():
    torch.manual_seed(1)
    net, twin = _net().train(), _net().train()
    fast = torch.compile(net, backend="fxla")
    opts = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (net, twin)]
    x, y = torch.randn(4, 3, 8, 8), torch.randint(0, 5, (4,))
    for _ in range(3):
        for model, opt, run in ((net, opts[0], fast), (twin, opts[1], twin)):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(run(x), y).backward()
            opt.step()
        for a, b in zip(net.parameters(), twin.parameters()):
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5)
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_other_parameters_in_the_held_places_run_a_program_of_their_own(caplog):
    net, other, keep, x = _net(), _net(), _Keep(), torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        other[0].weight.add_(1)
        torch.compile(net, backend=keep)(x)
        (made,), (inputs,) = keep.made, keep.inputs
        assert len(made.weights) == 4
        swap = dict(zip([id(p) for p in net.parameters()], other.parameters()))
        # the graph's arguments as dynamo passes them, with the other module's parameters in the held places
        args = [swap.get(id(a), x if a.shape == x.shape else a) for a in inputs]
        with caplog.at_level(logging.INFO, logger="fxla.dynamo"):
            torch.testing.assert_close(made(*args)[0], other(x), rtol=1e-5, atol=1e-5)
        assert "holding those too (set 2 of at most 2)" in caplog.text
        mine = [x if a.shape == x.shape else a for a in inputs]
        torch.testing.assert_close(made(*mine)[0], net(x), rtol=1e-5, atol=1e-5)


def test_other_instances_of_the_module_get_their_own_weights(caplog):
    """Dynamo hands every instance of a class the one graph: the first sets are held, the others passed."""
    def run(model, x):
        return model(x)

    keep = _Keep()
    fast = torch.compile(run, backend=keep)
    x = torch.randn(2, 3, 8, 8)
    nets = [_net() for _ in range(6)]
    with torch.no_grad(), caplog.at_level(logging.INFO, logger="fxla.dynamo"):
        for k, net in enumerate(nets):
            net[0].weight.add_(k)
        for net in nets + nets[::-1]:
            torch.testing.assert_close(fast(net, x), net(x), rtol=1e-5, atol=1e-5)
    (made,) = keep.made
    assert [w for w, _ in made._sets] == [tuple(net.parameters()) for net in nets[:MAX_HELD_SETS]]
    assert caplog.text.count("compiling it again with every parameter passed as an input") == 1


class _Writes(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(4), requires_grad=False)
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        self.scale.mul_(2)                      # written in place: stays an input, written back
        return self.lin(x) * self.scale, self.lin.weight[:2]     # a view of a parameter: eager's shares its memory


class _Atleast(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.zeros(3))
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x), torch.atleast_2d(self.bias)     # eager: a [1, 3] view of the bias


def test_a_parameter_returned_through_a_multi_view_function_stays_an_input():
    model, keep = _Atleast(), _Keep()
    with torch.no_grad():
        _, bias = torch.compile(model, backend=keep)(torch.randn(2, 3))
        bias.add_(5)                                        # eager: writes the parameter
    assert model.bias.tolist() == [5.0, 5.0, 5.0]
    (made,) = keep.made
    assert all(w is not model.bias for w in made.weights) and len(made.weights) == 2


def test_a_held_parameter_passed_as_an_input_the_graph_writes():
    """Dynamo does not guard against a parameter reaching the graph also as an argument it writes."""
    torch.manual_seed(0)
    lin, twin = torch.nn.Linear(3, 3, bias=False), torch.nn.Linear(3, 3, bias=False)
    twin.load_state_dict(lin.state_dict())

    def make(layer):
        def f(x, w):
            w.mul_(2)
            return layer(x)
        return f
    fast, ref = torch.compile(make(lin), backend="fxla"), make(twin)
    x = torch.randn(2, 3)
    with torch.no_grad():
        fast(x, torch.nn.Parameter(torch.ones(3, 3))), ref(x, torch.nn.Parameter(torch.ones(3, 3)))
        for _ in range(2):
            torch.testing.assert_close(fast(x, lin.weight), ref(x, twin.weight), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(lin.weight, twin.weight)


@pytest.mark.parametrize("route", ["backend", "compile"])
def test_writes_through_dot_data_are_seen(route):
    """``p.data.mul_`` bumps no version counter of ``p``'s: fxla notes what ``.data`` handed out."""
    torch.manual_seed(0)
    net, x = torch.nn.Linear(4, 3), torch.randn(2, 4)
    early = net.weight.data                                 # kept before compiling (an old-style optimizer)
    fast = torch.compile(net, backend="fxla") if route == "backend" else fxla.compile(net)
    with torch.no_grad():
        fast(x)
        early.add_(1)
        torch.testing.assert_close(fast(x), net(x))
        del early
        net.weight.data.mul_(2)                             # a temporary: seen once
        torch.testing.assert_close(fast(x), net(x))
        kept = net.weight.data                              # kept: seen on every call while it lives
        torch.testing.assert_close(fast(x), net(x))
        kept[0].fill_(3)
        torch.testing.assert_close(fast(x), net(x))
        del kept
        fast(x)
        for _ in range(2):                                  # an old-style SGD step through .data
            net.bias.data.add_(-0.5)
            net.weight.data[1:].mul_(0.5)
            torch.testing.assert_close(fast(x), net(x))


def test_release_parameters_lets_go_of_held_parameters():
    fast, x = torch.compile(_net(), backend="fxla"), torch.randn(2, 3, 8, 8)
    nets = [_net() for _ in range(2)]
    refs = [weakref.ref(n[0].weight) for n in nets]

    def run(model, x):
        return model(x)
    fast = torch.compile(run, backend="fxla")
    with torch.no_grad():
        for net in nets:
            fast(net, x)
        assert release_parameters() >= 2
        del net, nets
        gc.collect()
        assert [r() for r in refs] == [None, None]
        again = _net()
        torch.testing.assert_close(fast(again, x), again(x), rtol=1e-5, atol=1e-5)


def test_written_or_returned_parameters_stay_inputs():
    model, keep, x = _Writes(), _Keep(), torch.randn(3, 4)
    twin = _Writes()
    twin.load_state_dict(model.state_dict())
    with torch.no_grad():
        got, weight = torch.compile(model, backend=keep)(x)
        want, _ = twin(x)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(model.scale, twin.scale)
    assert weight.untyped_storage().data_ptr() == model.lin.weight.untyped_storage().data_ptr()
    held = [w for m in keep.made if isinstance(m, DynamoCall) for w in m.weights]
    assert held and all(w is not model.scale and w is not model.lin.weight for w in held)


def test_unspecialised_numbers_and_held_parameters_together():
    net = torch.nn.Linear(4, 3)

    def fn(x, k):
        return net(x) * k

    fast = torch.compile(fn, backend="fxla", dynamic=True)
    x = torch.randn(2, 4)
    with torch.no_grad():
        for k in (0.5, 1.5, 2.5):
            torch.testing.assert_close(fast(x, k), fn(x, k), rtol=1e-5, atol=1e-5)


def test_symbolic_graphs_hold_each_instances_parameters():
    """dynamo's symbolic graph (its batch a symbol) given two instances: each held set keeps the symbol."""
    def run(model, x):
        return model(x)

    fast = torch.compile(run, backend="fxla", dynamic=True)
    first, second = _net(), _net()
    with torch.no_grad():
        second[3].weight.mul_(-1)
        for batch in (2, 3, 5):
            x = torch.randn(batch, 3, 8, 8)
            for model in (first, second):
                torch.testing.assert_close(fast(model, x), model(x), rtol=1e-5, atol=1e-5)
