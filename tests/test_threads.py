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
