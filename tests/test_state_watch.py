"""Plain attributes forward changes (api/modes.py): a compiled program reads a plain Python attribute once, when
traced, so the attributes a call leaves at a value the trace did not start from are watched like the train/eval
flags, and a call after one changed runs a trace for the new value -- never the stale one."""
from __future__ import annotations

import pytest
import torch

import fxla


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = 0

    def forward(self, x):
        self.steps += 1
        return x * self.steps


class Flag(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls = 1
        return x * 2


class RunningMax(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.longest = 0

    def forward(self, x):
        if x.shape[1] > self.longest:
            self.longest = x.shape[1]
        return x * self.longest


class BufferCounter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        self.steps += 1
        return x * self.steps


@pytest.mark.parametrize("concrete", [False, True])
def test_a_counter_in_a_plain_attribute_is_counted_then_refused(concrete):
    """``self.steps += 1`` on an int: each value is a trace of its own (eager's results, not the first trace's 1, 1,
    1); a counter never settles, so past the bound it is a clear error naming the attribute and the buffer."""
    model, eager = Counter(), Counter()
    fast = fxla.compile(model, concrete_shapes=concrete)
    x = torch.ones(2)
    with pytest.raises(fxla.modes.StateChangeError, match=r"the plain value\(s\) steps changed on call "
                                                          r"after call") as info:
        for _ in range(20):
            got = fast(x)
            torch.testing.assert_close(got, eager(x))
            assert model.steps == eager.steps
    assert 6 <= model.steps <= fxla.modes.MAX_STATE_TRACES
    assert "fix: keep state that changes every call in a buffer" in str(info.value)


@pytest.mark.parametrize("concrete", [False, True])
def test_an_attribute_set_to_a_constant_settles_after_one_more_trace(concrete):
    model = Flag()
    fast = fxla.compile(model, concrete_shapes=concrete)
    for _ in range(4):
        torch.testing.assert_close(fast(torch.ones(3)), torch.full((3,), 2.0))
    assert model.calls == 1
    assert len({mode for mode, made in fast._modes.traces.items() if made is not None}) <= 3


def test_a_running_maximum_of_symbolic_sizes():
    model, eager = RunningMax(), RunningMax()
    fast = fxla.compile(model, concrete_shapes=True, dynamic=True)
    for s in (5, 3, 8, 6, 9, 2):
        x = torch.ones(2, s)
        torch.testing.assert_close(fast(x), eager(x))
        assert model.longest == eager.longest


def test_state_in_a_buffer_needs_no_watch():
    model = BufferCounter()
    fast = fxla.compile(model)
    assert [fast(torch.ones(2))[0].item() for _ in range(5)] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert fast._modes.watch.state_names == () and len(fast._modes.traces) == 1


def test_a_buffer_registered_in_forward_is_made_again_by_every_call():
    """forward registers a new buffer at every call: what the caller (or another trace) changed in it meanwhile
    does not survive the next call, as in eager (each compiled call writes the registered value into it)."""
    class Fresh(torch.nn.Module):
        def forward(self, x):
            self.register_buffer("acc", torch.full((3,), 2.0))
            self.acc.add_(x)
            return self.acc * 1

    model, twin, x = Fresh(), Fresh(), torch.ones(3)
    fast = fxla.compile(model)
    for _ in range(3):
        torch.testing.assert_close(fast(x), twin(x))
        torch.testing.assert_close(model.acc, twin.acc)
        model.acc.mul_(10)
        twin.acc.mul_(10)
