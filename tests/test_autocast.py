"""torch.autocast: a forward that enters or leaves an autocast region is refused while tracing, and a compiled
module called under autocast is refused, with AutocastError -- instead of silently computing in float32 where
eager computes in bfloat16."""
from __future__ import annotations

import re
import sys

import pytest
import torch
import torch.nn as nn

import fxla
from fxla.frontend import AutocastError, symbolic_trace

HERE = re.escape(__file__)


class Autocasts(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.fc(x)                          # the op the error points at


class Disables(nn.Module):                             # LLaMA's rotary embedding: "force float32"
    def forward(self, x):
        with torch.autocast("cpu", enabled=False):
            return x.float().sin()


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU()).eval()


def test_semi_private_autocast_query_exists():
    assert torch._C._is_any_autocast_enabled() is False
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert torch._C._is_any_autocast_enabled() is True


@pytest.mark.parametrize("trace", [symbolic_trace, fxla.compile], ids=["symbolic_trace", "compile"])
def test_forward_entering_autocast_is_refused_at_its_first_op(trace):
    with pytest.raises(AutocastError) as info:
        trace(Autocasts())
    message = str(info.value)
    assert message.startswith("forward entered a torch.autocast region, which a traced graph cannot hold")
    assert re.search(rf"at {HERE}:\d+:\d+\n\s+return self.fc\(x\)  +# the op the error points at", message)
    assert "fix: cast explicitly instead of autocast: model.to(torch.bfloat16)" in message


def test_forward_leaving_autocast_under_an_outer_region_is_refused():
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with pytest.raises(AutocastError, match="forward left a torch.autocast region"):
            symbolic_trace(Disables())


def test_disabling_autocast_with_none_active_and_tracing_under_autocast_are_fine():
    x = torch.randn(3)
    torch.testing.assert_close(symbolic_trace(Disables())(x), x.sin())
    torch.testing.assert_close(fxla.compile(Disables())(x), x.sin())
    model = mlp()
    with torch.autocast("cpu", dtype=torch.bfloat16):            # the graph does not depend on it
        gm = symbolic_trace(model)
    with torch.no_grad():
        torch.testing.assert_close(gm(torch.ones(2, 8)), model(torch.ones(2, 8)))


@pytest.mark.parametrize("warm", [0, 1, 2], ids=["first call", "plan", "C shortcut"])
@pytest.mark.parametrize("output", ["torch", "jax"])
def test_compiled_call_under_autocast_is_refused_on_every_path(warm, output):
    fast = fxla.compile(mlp(), output=output)
    x = torch.randn(2, 8)
    with torch.no_grad():
        for _ in range(warm):
            fast(x)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            with pytest.raises(AutocastError) as info:
                fast(x)                                           # the call the error points at
            line = sys._getframe().f_lineno - 1
            with torch.autocast("cpu", enabled=False):            # the fix the message names
                fast(x)
    message = str(info.value)
    assert message.startswith("Sequential was called under torch.autocast, which a compiled program cannot follow")
    assert f"at {__file__}:{line}:" in message
    assert "fix: call it outside the autocast region" in message


def test_jax_array_calls_are_not_torch_autocast_business():
    import jax.numpy as jnp
    fast = fxla.compile(mlp(), output="jax")
    x = jnp.ones((2, 8))
    fast(x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert fast(x).dtype == jnp.float32


def test_loaded_artifact_under_autocast_is_refused(tmp_path):
    x = torch.randn(2, 8)
    fxla.export(mlp(), (x,), tmp_path / "m")
    loaded = fxla.load(tmp_path / "m")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with pytest.raises(AutocastError, match="Sequential was called under torch.autocast"):
            loaded(x)


def test_torch_compile_backend_under_autocast_is_refused():
    compiled = torch.compile(mlp(), backend="fxla")
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        with pytest.raises(AutocastError, match="DynamoGraph was called under torch.autocast"):
            compiled(torch.randn(2, 8))
