"""torch.autocast: a CPU autocast region the forward enters is traced as the casts eager autocast makes
(fxla.frontend.autocast), ops fxla cannot follow inside one are refused, and a compiled module called under
autocast is refused, with AutocastError -- instead of silently computing in float32 where eager computes in
bfloat16."""
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


def test_forward_entering_autocast_computes_in_eagers_dtypes():
    model = Autocasts()
    x = torch.randn(4, 8)
    got, want = fxla.compile(model)(x), model(x)
    assert got.dtype == want.dtype == torch.bfloat16
    torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)
    gm = symbolic_trace(model)
    casts = [n for n in gm.graph.nodes if getattr(n.target, "__name__", "") == "autocast_cast"]
    assert len(casts) == 3                                  # x, weight and bias of the traced-through Linear


class Losses(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x, y):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = self.fc(x) @ torch.eye(3)              # bfloat16
            return logits, torch.nn.functional.cross_entropy(logits, y), logits.softmax(-1)   # f32, bf16


def test_lower_precision_float32_and_other_ops_follow_eagers_policy():
    model = Losses()
    x, y = torch.randn(4, 8), torch.randint(0, 3, (4,))
    got, want = fxla.compile(model)(x, y), model(x, y)
    assert [t.dtype for t in got] == [t.dtype for t in want] == [torch.bfloat16, torch.float32, torch.bfloat16]
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-2, atol=1e-2)


class Einsum(nn.Module):
    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return torch.einsum("ij,jk->ik", x, x)          # the op the error points at


def test_composites_fxla_cannot_follow_are_refused():
    with pytest.raises(AutocastError) as info:
        fxla.compile(Einsum())
    message = str(info.value)
    assert "einsum in a torch.autocast region" in message
    assert re.search(rf"at {HERE}:\d+:\d+\n\s+return torch.einsum", message), message


def test_forward_leaving_an_outer_autocast_region_traces_without_casts():
    with torch.autocast("cpu", dtype=torch.bfloat16):
        gm = symbolic_trace(Disables())
    assert not [n for n in gm.graph.nodes if getattr(n.target, "__name__", "") == "autocast_cast"]


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
