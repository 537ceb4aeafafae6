"""``device=`` takes JAX's platform names and torch's spellings alike (fxla.runtime.resolve_device)."""
import jax
import pytest
import torch

import fxla
from fxla.runtime import resolve_device
from fxla.runtime.devices import DeviceError

CPU = jax.devices("cpu")


@pytest.mark.parametrize("spelling", ["cpu", "CPU", " cpu ", "cpu:0", torch.device("cpu"), torch.device("cpu", 0),
                                      CPU[0], None])
def test_cpu_spellings(spelling):
    assert resolve_device(spelling) == CPU[0]


def test_cuda_means_gpu_and_says_so_when_there_is_none():
    if any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("a GPU is present")
    for spelling in ("cuda", "cuda:0", torch.device("cuda"), "GPU"):
        with pytest.raises(DeviceError, match="no 'gpu' device is available"):
            resolve_device(spelling)


@pytest.mark.parametrize("bad, message", [("cpu:x", "not a device index"), ("cpu:99", "does not exist"),
                                          (3, "cannot use 3 as a device")])
def test_bad_devices(bad, message):
    with pytest.raises(DeviceError, match=message):
        resolve_device(bad)


def test_compile_takes_a_torch_device():
    fast = fxla.compile(torch.nn.Linear(3, 2), device=torch.device("cpu"))
    assert fast.device == CPU[0] and fast(torch.randn(1, 3)).shape == (1, 2)
