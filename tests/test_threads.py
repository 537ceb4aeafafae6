"""Compiled modules used from several threads: first calls of new signatures compile one at a time
(fxla.compile.COMPILING), calls run concurrently, and compiling never disturbs the model's own eager use
(shape propagation runs leaf modules on meta copies, not by swapping the module's tensors)."""
from __future__ import annotations

import threading

import torch
import torch.nn as nn

import fxla
from fxla.frontend.shape_prop import call_module_on_meta


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 8, batch_first=True)    # keeps _flat_weights next to its parameters
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.lstm(x)[0])


def _hammer(model, shapes, calls=12, threads=4):
    fast = fxla.compile(model)
    errors = []

    def work(i):
        try:
            for j in range(calls):
                x = torch.randn(*shapes[(i + j) % len(shapes)])
                with torch.no_grad():
                    got, want = fast(x), model(x)        # eager use of the same model meanwhile
                if not torch.allclose(got, want, rtol=1e-4, atol=1e-5):
                    errors.append(f"thread {i} call {j}: mismatch")
        except Exception as err:                           # noqa: BLE001 (collected, asserted below)
            errors.append(f"thread {i} call {j}: {type(err).__name__}: {err}"[:400])
    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return fast, errors


def test_concurrent_first_calls_of_new_signatures_and_eager_calls():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4)).eval()
    fast, errors = _hammer(model, [(1, 8), (2, 8), (3, 8)])
    assert errors == [] and fast.cache_size == 3


def test_concurrent_compiles_of_a_model_with_an_lstm():
    torch.manual_seed(0)
    fast, errors = _hammer(Recurrent().eval(), [(1, 3, 8), (2, 3, 8)], calls=6)
    assert errors == [] and fast.cache_size == 2


def test_meta_evaluation_leaves_the_module_alone():
    lstm = nn.LSTM(4, 4)
    before = [(n, p.device.type, id(p)) for n, p in lstm.named_parameters()]
    out, _ = call_module_on_meta(lstm, (torch.empty(2, 3, 4, device="meta"),), {})
    assert out.device.type == "meta" and tuple(out.shape) == (2, 3, 4)
    assert [(n, p.device.type, id(p)) for n, p in lstm.named_parameters()] == before
    assert all(w.device.type == "cpu" for w in lstm._flat_weights)


class Slow(nn.Module):
    """A forward that takes a while, so that traces in two threads overlap."""

    def __init__(self, delay):
        super().__init__()
        self.lin, self.delay = nn.Linear(4, 4), delay

    def forward(self, x):
        import time
        time.sleep(self.delay)
        return self.lin(x).relu() + torch.zeros(4)


def test_user_traces_in_two_threads_do_not_undo_each_others_patches():
    # A starts, B starts, A ends, B ends: without one trace at a time, A put torch's originals back under B (whose
    # trace then missed its leaf modules) and B put A's patches back for good
    call, graphs, errors = nn.Module.__call__, {}, []

    def trace(name, delay, start):
        import time
        time.sleep(start)
        try:
            graphs[name] = fxla.symbolic_trace(Slow(delay))
        except Exception as err:          # (reported below)
            errors.append(err)

    threads = [threading.Thread(target=trace, args=("a", 0.3, 0.0)),
               threading.Thread(target=trace, args=("b", 0.5, 0.1))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert nn.Module.__call__ is call and not torch.compiler.is_compiling()
    ops = {name: [n.op for n in gm.graph.nodes] for name, gm in graphs.items()}
    assert ops["a"] == ops["b"] and ops["a"].count("call_module") == 1
    x = torch.randn(4)
    for gm in graphs.values():
        torch.testing.assert_close(gm(x), gm.lin(x).relu())


def test_a_state_writing_gradient_call_during_a_trace_that_replaces_a_buffer():
    # thread A's first gradient call of a state-writing signature (it holds the parameter store's lock and waits
    # for COMPILING) while thread B's trace, holding COMPILING, replaces a buffer and drops the other traces:
    # no deadlock, and B's program reads the new buffer (not one A's old program uploads meanwhile)
    import time
    tracing = threading.Event()

    class Growing(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.bn = nn.Linear(4, 4), nn.BatchNorm1d(4)
            self.register_buffer("cache", torch.arange(4.0), persistent=False)

        def forward(self, x):
            n = x.shape[0]
            if n > self.cache.shape[0]:
                tracing.set()
                time.sleep(1)
                self.register_buffer("cache", torch.arange(float(n)), persistent=False)
            return self.bn(self.lin(x)) + self.cache[:n, None]

    model = Growing()
    fast = fxla.compile(model, concrete_shapes=True)
    x3, x6, errors = torch.randn(3, 4), torch.randn(6, 4), []
    with torch.no_grad():
        fast(x3)

    def run(work):
        try:
            work()
        except Exception as err:              # (reported below)
            errors.append(err)

    def a():
        tracing.wait(10)
        time.sleep(0.2)
        fast(x3.clone().requires_grad_()).sum().backward()

    def b():
        with torch.no_grad():
            fast(x6)

    threads = [threading.Thread(target=run, args=(w,)) for w in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert not errors, errors
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(fast(x6), model(x6))
