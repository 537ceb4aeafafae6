"""fxla.compile_step beside the other routes on the same model, against eager PyTorch: a module compiled with
``fxla.compile`` (an evaluation forward, or training with an eager optimizer in between) must see every step's
new weights and buffers, as eager code between steps does."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla


def _ce(m, x, y):
    return F.cross_entropy(m(x), y)


def _batch(g):
    return torch.randn(6, 4, generator=g), torch.randint(0, 3, (6,), generator=g)


def test_a_compiled_forward_sees_each_steps_weights():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    step = fxla.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.5), _ce)
    fast = fxla.compile(model)
    g, x_eval = torch.Generator().manual_seed(1), torch.randn(2, 4)
    for _ in range(4):
        version = model.weight._version
        step(*_batch(g))
        assert model.weight._version > version           # as eager's in-place update bumps it
        with torch.no_grad():
            torch.testing.assert_close(fast(x_eval), model(x_eval), rtol=1e-5, atol=1e-6)


def test_steps_alternating_with_a_compiled_forward_and_an_eager_optimizer_match_eager():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.l, self.bn, self.o = nn.Linear(4, 8, bias=False), nn.BatchNorm1d(8), nn.Linear(8, 3)

        def forward(self, x):
            return self.o(torch.relu(self.bn(self.l(x))))

    torch.manual_seed(0)
    ref = Net()
    model = copy.deepcopy(ref)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step, fast = fxla.compile_step(model, opt, _ce), fxla.compile(model)
    g = torch.Generator().manual_seed(2)
    for i in range(6):
        x, y = _batch(g)
        opt_ref.zero_grad()
        _ce(ref, x, y).backward()
        opt_ref.step()
        if i % 2 == 0:
            step(x, y)
        else:
            opt.zero_grad()
            F.cross_entropy(fast(x), y).backward()
            opt.step()
    for (name, a), b in zip(ref.state_dict().items(), model.state_dict().values()):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6, msg=name)
