"""fxla.compile end to end on the PJRT CPU runtime: caching per signature, parameter upload, devices, dtypes,
decorator forms and structured outputs."""
from __future__ import annotations

import re

import jax
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla
from fxla.runtime import DeviceError, Executable


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 16)
        self.fc3 = nn.Linear(16, 4)
        self.register_buffer("offset", torch.linspace(-1, 1, 4))

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        h = torch.relu(self.fc2(h)) + h
        return self.fc3(h) + self.offset


@pytest.fixture
def mlp():
    torch.manual_seed(0)
    return MLP().eval().requires_grad_(False)      # (inference: no residual-saving program)


def close(got, want):
    assert isinstance(got, torch.Tensor) and got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# caching and parameters
# ---------------------------------------------------------------------------------------------------------------
def test_same_signature_is_compiled_once(mlp):
    fast = fxla.compile(mlp)
    assert fast.cache_size == 0                       # tracing only; nothing compiled yet
    x = torch.randn(3, 8)
    close(fast(x), mlp(x))
    exe = fast.executable_for(x)
    for _ in range(3):
        x2 = torch.randn(3, 8)
        close(fast(x2), mlp(x2))
    assert fast.cache_size == 1
    assert fast.executable_for(torch.randn(3, 8)) is exe
    assert isinstance(exe, Executable) and "HloModule" in exe.hlo_text()


def test_new_shape_or_dtype_recompiles(mlp):
    fast = fxla.compile(mlp)
    x3, x5 = torch.randn(3, 8), torch.randn(5, 8)
    close(fast(x3), mlp(x3))
    close(fast(x5), mlp(x5))
    assert fast.cache_size == 2
    close(fast(x3), mlp(x3))
    assert fast.cache_size == 2
    x1 = torch.randn(2, 1, 8)                        # new rank
    close(fast(x1), mlp(x1))
    assert fast.cache_size == 3


def test_parameters_are_uploaded_once(mlp):
    fast = fxla.compile(mlp)
    fast(torch.randn(3, 8))
    names = {n for n, _ in mlp.named_parameters()} | {"offset"}
    assert {n for n, _ in fast._params} == names      # keyed (name, stored permutation)
    uploaded = dict(fast._params)
    for batch in (3, 3, 7, 1):
        fast(torch.randn(batch, 8))
    assert fast.cache_size == 3
    assert len(fast._params) == len(names)
    assert all(fast._params[k] is uploaded[k] for k in uploaded)    # the same device buffers, not re-uploaded


def test_static_arguments_are_part_of_the_signature():
    fast = fxla.compile(lambda x, n: x * n + 1)
    x = torch.arange(4.0)
    close(fast(x, 2), x * 2 + 1)
    close(fast(x, 3), x * 3 + 1)
    close(fast(x, 2), x * 2 + 1)
    assert fast.cache_size == 2


def test_keyword_arguments_and_defaults():
    def fn(x, y, scale=2.0):
        return x * scale + y

    fast = fxla.compile(fn)
    x, y = torch.randn(3), torch.randn(3)
    close(fast(x, y), fn(x, y))
    close(fast(x, y=y), fn(x, y))
    close(fast(x, y, scale=0.5), fn(x, y, 0.5))
    with pytest.raises(TypeError, match="missing required argument 'y'"):
        fast(x)


# ---------------------------------------------------------------------------------------------------------------
# outputs and dtypes
# ---------------------------------------------------------------------------------------------------------------
def test_outputs_are_torch_tensors(mlp):
    with torch.no_grad():
        out = fxla.compile(mlp)(torch.randn(2, 8))
    assert type(out) is torch.Tensor and out.device.type == "cpu" and not out.requires_grad
    out += 1                                          # an ordinary, writable tensor


def test_int64_values_and_dtype_survive():
    fast = fxla.compile(lambda x: x * 3 + 1)
    x = torch.tensor([2 ** 40, -(2 ** 35), 7], dtype=torch.int64)
    out = fast(x)
    assert out.dtype == torch.int64 and torch.equal(out, x * 3 + 1)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64,
                                   torch.uint8, torch.bool], ids=str)
def test_input_dtypes_round_trip(dtype):
    fast = fxla.compile(lambda x: x.transpose(0, 1))
    x = (torch.arange(6) % 3).to(dtype).reshape(2, 3)
    out = fast(x)
    assert out.dtype == dtype and torch.equal(out, x.t())


def test_mixed_dtype_inputs():
    fast = fxla.compile(lambda x, mask, n: (x * mask, n + 1, mask.float().sum()))
    x, mask, n = torch.randn(5).bfloat16(), torch.tensor([True, False, True, True, False]), torch.tensor([3])
    a, b, c = fast(x, mask, n)
    assert a.dtype == torch.bfloat16 and torch.equal(a, x * mask)
    assert b.dtype == torch.int64 and b.tolist() == [4]
    assert c.dtype == torch.float32 and c.item() == 3.0


def test_non_contiguous_and_grad_inputs():
    fast = fxla.compile(lambda x: x * 2)
    x = torch.randn(4, 3).t()
    close(fast(x), x * 2)
    w = torch.randn(3, requires_grad=True)
    close(fast(w), (w * 2).detach())


def test_tuple_dict_and_nested_outputs():
    def fn(x, y):
        return {"sum": x + y, "parts": (x * 2, [y - 1, x.shape[0]])}

    fast = fxla.compile(fn)
    x, y = torch.randn(3), torch.randn(3)
    out = fast(x, y)
    want = fn(x, y)
    assert isinstance(out, dict) and list(out) == ["sum", "parts"]
    close(out["sum"], want["sum"])
    assert isinstance(out["parts"], tuple) and isinstance(out["parts"][1], list)
    close(out["parts"][0], want["parts"][0])
    close(out["parts"][1][0], want["parts"][1][0])
    assert out["parts"][1][1] == 3                    # a static (shape-derived) output stays a Python int


def test_returning_an_input_and_a_tuple():
    fast = fxla.compile(lambda x: (x, x + 1))
    x = torch.randn(3)
    a, b = fast(x)
    close(a, x)
    close(b, x + 1)


# ---------------------------------------------------------------------------------------------------------------
# devices and decorator forms
# ---------------------------------------------------------------------------------------------------------------
def test_device_cpu(mlp):
    fast = fxla.compile(mlp, device="cpu")
    assert fast.device.platform == "cpu"
    x = torch.randn(2, 8)
    close(fast(x), mlp(x))
    assert "device=" in repr(fast)
    fast0 = fxla.compile(mlp, device="cpu:0")
    close(fast0(x), mlp(x))
    fast_dev = fxla.compile(mlp, device=jax.devices("cpu")[0])
    close(fast_dev(x), mlp(x))


@pytest.mark.parametrize("device", ["tpu", "banana", "cpu:999", 42], ids=str)
def test_unavailable_device_raises_device_error(mlp, device):
    if device == "tpu":
        try:
            jax.devices("tpu")
            pytest.skip("this machine has a TPU")
        except RuntimeError:
            pass
    with pytest.raises(DeviceError) as info:
        fxla.compile(mlp, device=device)
    assert isinstance(info.value, fxla.FxlaError)
    assert "fix:" in str(info.value)


def test_decorator_forms():
    @fxla.compile
    def scaled(x, y):
        """Doc."""
        return x * 2 + y

    @fxla.compile(device="cpu")
    def shifted(x):
        return x - 1

    assert isinstance(scaled, fxla.CompiledModule) and isinstance(shifted, fxla.CompiledModule)
    assert scaled.__name__ == "scaled" and scaled.__doc__ == "Doc."
    x, y = torch.randn(4), torch.randn(4)
    close(scaled(x, y), x * 2 + y)
    close(shifted(x), x - 1)
    assert shifted.device.platform == "cpu"


def test_lower_returns_every_stage_without_running(mlp):
    fast = fxla.compile(mlp)
    stages = fast.lower(torch.randn(2, 8))
    assert "call_module" in stages.graph and "def forward" in stages.code
    assert "= fxla.linear " in stages.fxla and "stablehlo." in stages.stablehlo
    assert fast.cache_size == 0 and fast._params == {}


def test_input_buffers_are_kept_only_while_the_tensor_is_unchanged():
    """fxla.runtime.buffers.InputBuffers: a call's unchanged torch inputs (a dynamo graph's parameters) reuse their
    device buffers; a changed, replaced or re-strided tensor is placed again; a kept buffer aliases the tensor, so
    even a change torch does not count (through a numpy view) is what the program reads."""
    import jax
    import numpy as np
    from fxla.runtime.buffers import InputBuffers
    inputs = InputBuffers(jax.devices("cpu")[0])
    w = torch.arange(6.0).reshape(2, 3)
    first = inputs.put(0, w)
    assert inputs.put(0, w) is first
    w.add_(1)                                          # (the version counter moves: placed again)
    second = inputs.put(0, w)
    assert second is not first and np.array_equal(np.asarray(second), w.numpy())
    w.numpy()[0, 0] = 100.0                            # (no version change: the kept buffer aliases the memory)
    assert inputs.put(0, w) is second and float(np.asarray(inputs.put(0, w))[0, 0]) == 100.0
    other = w.clone()
    assert inputs.put(0, other) is not second and inputs.put(1, w) is not second
    assert inputs.put(0, w.t()) is not inputs.put(0, w)


def test_input_buffers_keep_parameters_and_survive_fxla_own_write_back():
    """A TorchDynamo graph takes the weights as inputs (``nn.Parameter``\\ s): their buffers are kept like plain
    tensors'.  An input the program changes in place (a static KV cache) is written back by fxla; its kept buffer,
    aliasing it, is restamped with the new version instead of being placed again, and every call still reads the
    current values (equal to eager, call after call); a change by someone else is still seen."""
    import numpy as np
    from fxla.runtime.buffers import InputBuffers
    inputs = InputBuffers(jax.devices("cpu")[0])
    p = nn.Parameter(torch.arange(6.0).reshape(2, 3))
    first = inputs.put(0, p)
    assert inputs.put(0, p) is first
    with torch.no_grad():
        p.add_(1)
    assert inputs.put(0, p) is not first and np.array_equal(np.asarray(inputs.put(0, p)), p.detach().numpy())

    class Step(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4, 4))

        def forward(self, cache, x):
            cache.add_(x @ self.w)            # (written back into the caller's tensor after each call)
            return cache * 2

    torch.manual_seed(0)
    model = Step()
    fast = fxla.compile(model)
    cache, want_cache, x = torch.zeros(3, 4), torch.zeros(3, 4), torch.randn(3, 4)
    with torch.no_grad():
        for _ in range(4):
            got, want = fast(cache, x), model(want_cache, x)
            assert torch.allclose(got, want, atol=1e-5) and torch.allclose(cache, want_cache, atol=1e-5)
        (entry,) = fast._cache.values()
        kept = entry.inputs._slots[0]
        assert kept[1][-1] == cache._version           # restamped after the last write-back: no new placement
        before = kept[2]
        fast(cache, x)
        assert entry.inputs._slots[0][2] is before     # the same aliasing buffer, call after call
        cache.mul_(0)                                  # a change fxla did not make: placed again, and read
        want_cache.mul_(0)
        assert torch.allclose(fast(cache, x), model(want_cache, x), atol=1e-5)


def test_kernel_libraries_by_kind_of_program():
    """XLA CPU's kernel libraries are chosen per kind of program (fxla.runtime.executable; docs/performance.md,
    "Kernel libraries"): forward-only programs run small matrix products on YNNPACK one by one and large ones
    (more than SMALL_DOT_MAX_ROWS rows) on XLA's own kernels, programs with a backward pass keep YNNPACK's dots;
    eager's results either way."""
    from fxla.runtime.executable import SMALL_DOT_MAX_ROWS
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8))
    x, y = torch.randn(16, 64), torch.randint(0, 8, (16,))
    big = torch.randn(SMALL_DOT_MAX_ROWS + 1, 64)
    with torch.no_grad():
        fast = fxla.compile(model)
        assert torch.allclose(fast(x), model(x), atol=1e-5)
        small_hlo = fast.executable_for(x).hlo_text()
        assert small_hlo.count("__ynn_fusion") >= 2 and "kind=kLoop" in small_hlo     # the dots alone on YNNPACK
        assert torch.allclose(fast(big), model(big), atol=1e-5)
        assert "__ynn_fusion" not in fast.executable_for(big).hlo_text()
    model = nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 8))
    x, y = torch.randn(32, 128), torch.randint(0, 8, (32,))
    step = fxla.compile_step(model, torch.optim.SGD(model.parameters(), lr=0.1),
                             lambda m, x, y: F.cross_entropy(m(x), y))
    want = F.cross_entropy(model(x), y).item()
    assert abs(step(x, y).item() - want) < 1e-5
    step_hlo = step.executable_for(x, y).hlo_text()
    assert "__ynn_fusion" in step_hlo
    # each dot alone on YNNPACK: the bias add and ReLU stay XLA's (fused into a dot they made the MLP step slower)
    for called in re.findall(r"calls=(%[\w.-]+), [^\n]*__ynn_fusion", step_hlo):
        body = step_hlo.split(f"\n{called} ", 1)[1].split("\n}", 1)[0]
        assert "maximum(" not in body and not ("dot(" in body and " add(" in body), body
