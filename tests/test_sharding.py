"""Sharding through XLA's SPMD partitioner (Shardy) on 4 simulated CPU devices.

The device count is fixed when a process starts, so every check runs in ONE subprocess started with
``XLA_FLAGS=--xla_force_host_platform_device_count=4`` (this file is also that subprocess's script); each
check reports a line of JSON, and the tests here assert on them.  Errors that need no devices run in-process.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F


from support import gelu_mlp  # noqa: E402  (tests/ is on sys.path)

MLP = gelu_mlp
pytestmark = pytest.mark.slow   # one child process with four CPU devices runs every check


# ---------------------------------------------------------------------------------------------------------------
# the subprocess
# ---------------------------------------------------------------------------------------------------------------
def _checks():
    import jax
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P

    import fxla
    from fxla.runtime import ShardingError, compile_stats

    torch.manual_seed(0)
    model = MLP().eval()
    x = torch.randn(8, 8)
    want = model(x).detach()
    single = fxla.compile(model)(x)
    results = {}

    def check(name):
        def run(fn):
            try:
                results[name] = fn() or "ok"
            except Exception:  # noqa: BLE001
                results[name] = "FAILED: " + traceback.format_exc()
            print(json.dumps({name: results[name]}), flush=True)
        return run

    def close(got):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(got, single, rtol=1e-5, atol=1e-5)

    @check("devices")
    def _():
        assert len(jax.devices()) == 4
        fast = fxla.compile(model, device="cpu:1")
        assert fast.device == jax.devices("cpu")[1]
        close(fast(x))
        assert all(p.devices() == {jax.devices()[1]} for p in fast._params.values())

    @check("data_parallel")
    def _():
        mesh = fxla.Mesh({"x": 4})
        fast = fxla.compile(model, mesh=mesh, shard={"input:0": ("x", None), "output:0": ("x", None)},
                            output="jax")
        for _ in range(5):                         # back-to-back calls (synchronised inside fxla)
            y = fast(x)
        assert y.sharding.is_equivalent_to(NamedSharding(mesh, P("x", None)), 2)
        assert len(y.addressable_shards) == 4 and y.addressable_shards[0].data.shape == (2, 4)
        close(torch.from_numpy(np.asarray(y)))
        exe = fast.executable_for(x)
        assert "all-reduce" not in exe.hlo_text()  # pure data parallel: no collectives

    @check("tensor_parallel")
    def _():
        mesh = fxla.Mesh({"x": 4})
        shard = {"fc1.weight": ("x", None), "fc1.bias": ("x",), "fc2.weight": (None, "x")}
        fast = fxla.compile(model, mesh=mesh, shard=shard)
        y = fast(x)
        close(y)
        params = {n: b for (n, perm), b in fast._params.items()}   # mesh programs keep torch's layout (perm ())
        assert params["fc1.weight"].sharding.is_equivalent_to(NamedSharding(mesh, P("x", None)), 2)
        assert params["fc1.weight"].addressable_shards[0].data.shape == (4, 8)
        assert params["fc2.weight"].addressable_shards[0].data.shape == (4, 4)
        for _ in range(20):
            close(fast(x))
        assert all(fast._params[n, ()] is params[n] for n in params)      # resident, not re-uploaded
        hlo = fast.executable_for(x).hlo_text()
        assert "all-reduce" in hlo                  # the row-parallel fc2 sums partial products

    @check("mesh_2d_and_jax_mesh")
    def _():
        mesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 2), ("data", "model"))
        fast = fxla.compile(model, mesh=mesh, shard={"x": ("data", None), "fc1.weight": ("model", None),
                                                     "fc1.bias": ("model",), "fc2.weight": (None, "model")})
        close(fast(x))
        xs = jax.device_put(x.numpy(), NamedSharding(mesh, P("data", None)))    # a jax input, already laid out
        close(fast(xs))

    @check("disk_cache")
    def _():
        import tempfile
        d = tempfile.mkdtemp()
        shard = {"input:0": ("x", None), "fc2.weight": (None, "x")}
        before = compile_stats()
        close(fxla.compile(model, mesh={"x": 4}, shard=shard, cache_dir=d)(x))
        close(fxla.compile(model, mesh={"x": 4}, shard=shard, cache_dir=d)(x))
        after = compile_stats()
        assert after["compiles"] - before["compiles"] == 1 and after["disk_hits"] - before["disk_hits"] == 1

    @check("errors")
    def _():
        mesh = fxla.Mesh({"x": 4})
        msgs = {}
        for label, kwargs, arg in [
            ("unknown_name", dict(shard={"fc9.weight": ("x", None)}), x),
            ("unknown_axis", dict(shard={"input:0": ("y", None)}), x),
            ("indivisible", dict(shard={"input:0": ("x", None)}), torch.randn(6, 8)),
            ("too_many_entries", dict(shard={"fc1.bias": ("x", None)}), x),
            ("input_index", dict(shard={"input:3": ("x",)}), x),
        ]:
            try:
                fxla.compile(model, mesh=mesh, **kwargs)(arg)
            except ShardingError as err:
                assert "fix:" in str(err), str(err)
                msgs[label] = str(err).splitlines()[0]
            else:
                raise AssertionError(f"{label}: no ShardingError")
        try:
            fxla.Mesh({"x": 8})
        except ShardingError as err:
            msgs["mesh_too_big"] = str(err).splitlines()[0]
        return msgs

    @check("value_checks")
    def _():
        from fxla.lowering.value_checks import IndexCheckError

        class Lookup(nn.Module):             # an embedding of ids the program computes: a value check
            def __init__(self):
                super().__init__()
                self.e, self.lin = nn.Embedding(10, 8), nn.Linear(8, 8)

            def forward(self, x, i):
                return self.lin(x) + self.e(i * 2)

        mesh = fxla.Mesh({"x": 4})
        x, good, bad = torch.randn(4, 8), torch.tensor([0, 1, 2, 4]), torch.tensor([0, 1, 2, 5])
        lookup = Lookup()
        fast = fxla.compile(lookup, mesh=mesh, shard={"input:0": ("x", None), "input:1": ("x",)})
        torch.testing.assert_close(fast(x, good), lookup(x, good), rtol=1e-5, atol=1e-5)
        try:
            fast(x, bad)
            raise AssertionError("no IndexCheckError from the sharded program")
        except IndexCheckError:
            pass
        opt = torch.optim.SGD(lookup.parameters(), lr=0.1)
        step = fxla.compile_step(lookup, opt, lambda m, x, i: m(x, i).pow(2).mean(), mesh=mesh,
                                 shard={"x": ("x", None), "i": ("x",)})
        step(x, good)
        before = {k: v.clone() for k, v in lookup.state_dict().items()}
        try:
            step(x, bad)
            raise AssertionError("no IndexCheckError from the sharded step")
        except IndexCheckError:
            pass
        assert all(torch.equal(v, before[k]) for k, v in lookup.state_dict().items())
    return results


if __name__ == "__main__" and os.environ.get("FXLA_SHARDING_CHILD") == "1":
    _checks()
    sys.exit(0)


# ---------------------------------------------------------------------------------------------------------------
# the tests
# ---------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def child():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", FXLA_SHARDING_CHILD="1",
               JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=300)
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            results.update(json.loads(line))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return results


@pytest.mark.parametrize("name", ["devices", "data_parallel", "tensor_parallel", "mesh_2d_and_jax_mesh",
                                  "disk_cache", "errors", "value_checks"])
def test_on_four_cpu_devices(child, name):
    assert name in child, f"check {name} did not report"
    assert not str(child[name]).startswith("FAILED"), child[name]


def test_sharding_error_messages(child):
    msgs = child["errors"]
    assert "fc9.weight" in msgs["unknown_name"]
    assert "unknown mesh axis 'y'" in msgs["unknown_axis"]
    assert "cannot split evenly" in msgs["indivisible"]
    assert "has 2 entries but the value has rank 1" in msgs["too_many_entries"]
    assert "'input:3'" in msgs["input_index"]
    assert "needs 8 devices" in msgs["mesh_too_big"]


def test_sharding_option_errors_in_process():
    import fxla
    from fxla.runtime import ShardingError
    with pytest.raises(ShardingError, match="without mesh="):
        fxla.compile(MLP(), shard={"input:0": ("x",)})
    with pytest.raises(ShardingError, match="either device= or mesh="):
        fxla.compile(MLP(), device="cpu", mesh={"x": 1})
    with pytest.raises(ShardingError, match="fix:"):
        fxla.runtime.Mesh({"x": 0})


def test_a_misspelt_shard_name_gets_a_suggestion():
    import fxla
    from fxla.runtime.sharding import ShardingError
    model = torch.nn.Linear(4, 4)
    with pytest.raises(ShardingError, match=r"did you mean 'module.weight'\?"):
        fxla.compile(model, mesh=fxla.runtime.Mesh({"x": 1}), shard={"wieght": ("x", None)})
    with pytest.raises(ShardingError) as info:      # several misspelt names: each with its own suggestion
        fxla.compile(model, mesh=fxla.runtime.Mesh({"x": 1}), shard={"wieght": ("x", None), "bais": ("x",)})
    assert "\n'wieght': did you mean 'module.weight'?\n'bais': did you mean 'module.bias'?\nfix: " in str(info.value)
