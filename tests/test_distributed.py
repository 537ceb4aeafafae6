"""fxla programs over several processes (``fxla.distributed``): 2 processes x 2 CPU devices on loopback, against
one process with 4 devices and eager.

This file is also the processes' script: ``python test_distributed.py single OUT`` runs the checks in one
process with 4 CPU devices; ``python test_distributed.py multi PID PORT OUT`` is process PID of 2 (process 0
hosts the coordinator on 127.0.0.1:PORT).  Each check prints a line of JSON and saves its results as
``OUT/<check>.<pid or "single">.npy``; the tests compare them.  Every process is bounded by a timeout.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import traceback

import numpy as np
import pytest
import torch

from support import gelu_mlp  # noqa: E402  (tests/ is on sys.path)

pytestmark = pytest.mark.slow   # each test starts processes


# ---------------------------------------------------------------------------------------------------------------
# the processes
# ---------------------------------------------------------------------------------------------------------------
class _Embed(torch.nn.Module):
    """int64 ids in (a 64-bit input placed across processes), a float output."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(32, 8)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, ids):
        return self.fc(self.emb(ids)).sum(1)


def _models():
    torch.manual_seed(0)
    mlp, embed = gelu_mlp().eval(), _Embed().eval()
    x = torch.randn(8, 8)
    ids = torch.randint(0, 32, (8, 5))
    return mlp, embed, x, ids


def _run(role: str, out: str, pid: int = 0, port: int = 0) -> None:
    import fxla
    multi = role == "multi"
    if multi:
        fxla.distributed.initialize(f"127.0.0.1:{port}", 2, pid, local_device_count=2, timeout=60,
                                    bind_address=f"127.0.0.1:{port}")
    else:
        import jax
        jax.config.update("jax_num_cpu_devices", 4)
    from fxla.distributed import ProcessMismatchError
    tag = str(pid) if multi else "single"
    mlp, embed, x, ids = _models()

    def check(name):
        def run(fn):
            try:
                result = fn() or "ok"
            except Exception:  # noqa: BLE001
                result = "FAILED: " + traceback.format_exc()
            print(json.dumps({"check": name, "result": result}), flush=True)
        return run

    def save(name, value):
        np.save(os.path.join(out, f"{name}.{tag}.npy"), value.detach().numpy() if isinstance(value, torch.Tensor)
                else np.asarray(value))

    def mesh(axes):
        return fxla.distributed.mesh(axes) if multi else fxla.Mesh(axes)

    @check("topology")
    def _():
        import jax
        assert len(jax.devices()) == 4 and len(jax.local_devices()) == (2 if multi else 4)
        if multi:
            assert fxla.distributed.process_count() == 2 and fxla.distributed.process_index() == pid
            assert [d.process_index for d in fxla.distributed.global_devices()] == [0, 0, 1, 1]

    @check("data_parallel")
    def _():
        fast = fxla.compile(mlp, mesh=mesh({"x": 4}), shard={"input:0": ("x", None), "output:0": ("x", None)})
        for _ in range(3):
            y = fast(x)                     # a torch output sharded over both processes: gathered on each
        save("data_parallel", y)
        save("data_parallel_eager", mlp(x))

    @check("tensor_parallel")
    def _():
        fast = fxla.compile(mlp, mesh=mesh({"data": 2, "model": 2}), shard={
            "input:0": ("data", None), "fc1.weight": ("model", None), "fc1.bias": ("model",),
            "fc2.weight": (None, "model")})
        y = fast(x)
        assert "all-reduce" in fast.executable_for(x).hlo_text()
        save("tensor_parallel", y)
        save("tensor_parallel_eager", mlp(x))

    @check("int64_input")
    def _():
        fast = fxla.compile(embed, mesh=mesh({"x": 4}), shard={"input:0": ("x", None)})
        save("int64_input", fast(ids))
        save("int64_input_eager", embed(ids))

    @check("local_parts")
    def _():
        m = mesh({"x": 4})
        fast = fxla.compile(mlp, mesh=m, shard={"input:0": ("x", None), "output:0": ("x", None)}, output="jax")
        if multi:                           # each process passes its own 4 rows and gets its own 4 rows back
            part = fxla.distributed.from_local(x[4 * pid:4 * pid + 4], m, ("x", None))
            assert part.shape == (8, 8)
            y = fast(part)
            save("local_parts", fxla.distributed.local_part(y))
            save("local_parts_gathered", fxla.distributed.gather(y))
        else:
            y = torch.from_numpy(np.asarray(fast(x)))
            save("local_parts", y)
            save("local_parts_gathered", y)
        ids_fast = fxla.compile(embed, mesh=m, shard={"input:0": ("x", None)})   # int64 ids, index-checked
        save("local_ids", ids_fast(fxla.distributed.from_local(ids[4 * pid:4 * pid + 4], m, ("x", None))
                                   if multi else ids))

    def train(name, make_optimizer, shard_of, steps=4, local_from=2):
        """``steps`` compiled steps over the mesh (the batch from the third step on: each process's own rows
        through from_local), against the same steps in eager; saves the parameters and the losses."""
        torch.manual_seed(1)
        model, twin = gelu_mlp(), gelu_mlp()
        twin.load_state_dict(model.state_dict())
        opt, twin_opt = make_optimizer(model), make_optimizer(twin)
        m = mesh({"data": 4})
        loss_fn = lambda mod, xb, yb: torch.nn.functional.cross_entropy(mod(xb), yb)   # noqa: E731
        step = fxla.compile_step(model, opt, loss_fn, mesh=m, shard={**shard_of(model, m),
                                                                    "xb": ("data", None), "yb": ("data",)})
        gen = torch.Generator().manual_seed(2)
        losses, eager_losses = [], []
        for i in range(steps):
            xb, yb = torch.randn(16, 8, generator=gen), torch.randint(0, 4, (16,), generator=gen)
            if multi and i >= local_from:
                rows = slice(8 * pid, 8 * pid + 8)
                loss = step(fxla.distributed.from_local(xb[rows], m, ("data", None)),
                            fxla.distributed.from_local(yb[rows], m, ("data",)))
            else:
                loss = step(xb, yb)
            losses.append(float(loss))
            twin_opt.zero_grad()
            eager = loss_fn(twin, xb, yb)
            eager.backward()
            twin_opt.step()
            eager_losses.append(float(eager))
        save(name, torch.cat([p.detach().reshape(-1) for p in model.parameters()]))
        save(name + "_eager", torch.cat([p.detach().reshape(-1) for p in twin.parameters()]))
        save(name + "_losses", torch.tensor([losses, eager_losses]))
        return model, opt, step

    @check("dp_training")
    def _():
        model, opt, step = train("dp_training", lambda mod: torch.optim.SGD(mod.parameters(), lr=0.1, momentum=0.9),
                                 lambda mod, m: {})
        hlo = step.executable_for(torch.randn(16, 8), torch.zeros(16, dtype=torch.long)).hlo_text()
        assert "all-reduce" in hlo, "data parallel: the gradients are summed inside the program"

    @check("fsdp_training")
    def _():
        def shard_of(mod, m):
            specs = fxla.distributed.fsdp(mod, m, "data", min_size=16)
            assert specs == {"fc1.weight": ("data",), "fc1.bias": ("data",), "fc2.weight": ("data",)}, specs
            return specs
        train("fsdp_training", lambda mod: torch.optim.AdamW(mod.parameters(), lr=0.01), shard_of)

    @check("checkpoint")
    def _():
        model, opt, step = train("checkpoint", lambda mod: torch.optim.AdamW(mod.parameters(), lr=0.01),
                                 lambda mod, m: {}, steps=2)
        path = os.path.join(out, f"ckpt.{role}.pt")          # (one file, written by process 0)
        fxla.distributed.save_checkpoint(path, model, opt, steps=2)
        torch.manual_seed(5)
        fresh = gelu_mlp()
        fresh_opt = torch.optim.AdamW(fresh.parameters(), lr=0.01)
        extra = fxla.distributed.load_checkpoint(path, fresh, fresh_opt)
        assert extra == {"steps": 2}, extra
        m = mesh({"data": 4})
        loss_fn = lambda mod, xb, yb: torch.nn.functional.cross_entropy(mod(xb), yb)   # noqa: E731
        again = fxla.compile_step(fresh, fresh_opt, loss_fn, mesh=m, shard={"xb": ("data", None)})
        xb, yb = torch.randn(16, 8, generator=torch.Generator().manual_seed(9)), torch.arange(16) % 4
        step(xb, yb)
        again(xb, yb)
        for a, b in zip(model.parameters(), fresh.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
        assert torch.equal(opt.state_dict()["state"][0]["step"], fresh_opt.state_dict()["state"][0]["step"])

    @check("data_written_between_steps")
    def _():                                # p.data writes change no version counter: still seen, as eager does
        torch.manual_seed(1)
        model, twin = gelu_mlp(), gelu_mlp()
        twin.load_state_dict(model.state_dict())
        opt, twin_opt = (torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (model, twin))
        loss_fn = lambda mod, xb, yb: torch.nn.functional.cross_entropy(mod(xb), yb)   # noqa: E731
        step = fxla.compile_step(model, opt, loss_fn, mesh=mesh({"data": 4}), shard={"xb": ("data", None)})
        xb, yb = torch.randn(16, 8), torch.arange(16) % 4
        for i in range(3):
            step(xb, yb)
            twin_opt.zero_grad()
            loss_fn(twin, xb, yb).backward()
            twin_opt.step()
            with torch.no_grad():
                for m in (model, twin):
                    m.fc1.weight.data.mul_(0.5)
        for a, b in zip(model.parameters(), twin.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)

    @check("names_through_the_batch")
    def _():                                # a non-tensor batch argument does not hide the named ones
        torch.manual_seed(1)
        model = gelu_mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss_fn = lambda mod, xb, scale, yb: scale * torch.nn.functional.cross_entropy(mod(xb), yb)   # noqa: E731
        step = fxla.compile_step(model, opt, loss_fn, mesh=mesh({"data": 4}), shard={"xb": ("data", None),
                                                                                   "yb": ("data",)})
        spec = step.executable_for(torch.randn(16, 8), 0.5, torch.arange(16) % 4).in_shardings[0].spec
        assert tuple(spec) == ("data", None), spec

    if not multi:
        return

    @check("plain_compile_on_each_process")
    def _():                                # no mesh: each process runs on its own first device
        import jax
        fast = fxla.compile(mlp)
        assert fast.device in jax.local_devices()
        torch.testing.assert_close(fast(x), mlp(x), rtol=1e-5, atol=1e-5)

    @check("different_replicated_parts")
    def _():                                # a dimension not split across processes: each holds a whole copy
        try:
            fxla.distributed.from_local(x + pid, mesh({"x": 4}), (None, None))
        except ProcessMismatchError as err:
            return str(err)
        raise AssertionError("no error")

    @check("index_error_on_one_process")
    def _():
        m = mesh({"x": 4})
        fast = fxla.compile(embed, mesh=m, shard={"input:0": ("x", None)})
        bad = ids[4 * pid:4 * pid + 4].clone()
        if pid == 0:
            bad[0, 0] = 99
        try:
            fast(fxla.distributed.from_local(bad, m, ("x", None)))
        except fxla.FxlaError as err:
            caught = f"{type(err).__name__}: {err}"
        else:
            raise AssertionError("no error")
        fast(fxla.distributed.from_local(ids[4 * pid:4 * pid + 4], m, ("x", None)))   # still in step
        return caught

    @check("local_jax_array")
    def _():
        import jax
        fast = fxla.compile(mlp, mesh=mesh({"x": 4}), shard={"input:0": ("x", None)})
        try:
            fast(jax.device_put(x.numpy(), jax.local_devices()[0]))
        except fxla.FxlaError as err:
            return f"{type(err).__name__}: {err}"
        raise AssertionError("no error")

    @check("different_learning_rates")
    def _():
        torch.manual_seed(1)
        model = gelu_mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1 * (1 + pid))
        step = fxla.compile_step(model, opt, lambda mod, xb, yb: torch.nn.functional.cross_entropy(mod(xb), yb),
                                 mesh=mesh({"data": 4}), shard={"xb": ("data", None)})
        try:
            step(torch.randn(16, 8, generator=torch.Generator().manual_seed(3)), torch.arange(16) % 4)
        except ProcessMismatchError as err:
            return str(err)
        raise AssertionError("no error")

    @check("different_inputs")
    def _():
        fast = fxla.compile(mlp, mesh=mesh({"x": 4}), shard={"input:0": ("x", None)})
        fast(x)
        try:
            fast(x + pid)                   # process 1 passes other data: refused on both, before running
        except ProcessMismatchError as err:
            return str(err)
        raise AssertionError("no error")

    @check("different_weights")
    def _():
        torch.manual_seed(pid)
        model = gelu_mlp().eval()
        fast = fxla.compile(model, mesh=mesh({"x": 4}), shard={"input:0": ("x", None)})
        try:
            fast(x)
        except ProcessMismatchError as err:
            return str(err)
        raise AssertionError("no error")

    @check("different_shapes")
    def _():
        fast = fxla.compile(mlp, mesh=mesh({"x": 4}), shard={"input:0": ("x", None)})
        try:
            fast(torch.randn(8 + 4 * pid, 8))
        except ProcessMismatchError as err:
            return str(err)
        raise AssertionError("no error")

    @check("barrier")
    def _():
        fxla.distributed.barrier("after the errors")

    @check("late_process")                  # last: afterwards the processes are out of step
    def _():
        fast = fxla.compile(mlp, mesh=mesh({"x": 4}), shard={"input:0": ("x", None)})
        fast(x)
        if pid == 1:
            return "skipped"
        from fxla.runtime import multihost
        multihost.set_timeout(3)
        start = time.monotonic()
        try:
            fast(x)
        except ProcessMismatchError as err:
            seconds, error = time.monotonic() - start, str(err)
        else:
            raise AssertionError("no error")
        try:                                # afterwards every call says the run is out of step, at once
            fast(x)
        except ProcessMismatchError as err:
            return {"seconds": seconds, "error": error, "after": str(err)}
        raise AssertionError("no error after")


def _dying(pid: int, port: int) -> None:
    """Process 1 dies after the first call; process 0 calls again."""
    import fxla
    fxla.distributed.initialize(f"127.0.0.1:{port}", 2, pid, local_device_count=2, timeout=60,
                                heartbeat_timeout=3, bind_address=f"127.0.0.1:{port}")
    mlp, _, x, _ = _models()
    fast = fxla.compile(mlp, mesh=fxla.distributed.mesh({"x": 4}), shard={"input:0": ("x", None)})
    fast(x)
    print("first call done", flush=True)
    if pid == 1:
        os._exit(3)
    fast(x)
    print("second call done", flush=True)


if __name__ == "__main__" and len(sys.argv) > 1:
    if sys.argv[1] == "single":
        _run("single", sys.argv[2])
    elif sys.argv[1] == "multi":
        _run("multi", sys.argv[4], int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1] == "dying":
        _dying(int(sys.argv[2]), int(sys.argv[3]))
    sys.exit(0)


# ---------------------------------------------------------------------------------------------------------------
# the tests
# ---------------------------------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env():
    return dict(os.environ, JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1")


def _results(stdout: str) -> dict:
    out = {}
    for line in stdout.splitlines():
        if line.startswith('{"check"'):
            item = json.loads(line)
            out[item["check"]] = item["result"]
    return out


def _start_pair(*args, timeout: float):
    port = _free_port()
    procs = [subprocess.Popen([sys.executable, __file__, args[0], str(pid), str(port), *args[1:]], env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for pid in (0, 1)]
    deadline = time.monotonic() + timeout
    outs = []
    for proc in procs:
        try:
            outs.append(proc.communicate(timeout=max(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise AssertionError(f"the processes did not finish within {timeout} s")
    return procs, outs


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("distributed"))
    single = subprocess.run([sys.executable, __file__, "single", out], env=_env(), capture_output=True, text=True,
                            timeout=300)
    assert single.returncode == 0, single.stderr[-3000:]
    procs, outs = _start_pair("multi", out, timeout=300)
    for proc, (stdout, stderr) in zip(procs, outs):
        assert proc.returncode == 0, stderr[-3000:]
    return out, _results(single.stdout), [_results(stdout) for stdout, _ in outs]


def _load(out, name, tag):
    return np.load(os.path.join(out, f"{name}.{tag}.npy"))


@pytest.mark.parametrize("name", ["dp_training", "fsdp_training", "checkpoint"])
def test_a_training_step_over_two_processes_matches_one_process_and_eager(runs, name):
    out, single, multi = runs
    for results in (single, *multi):
        assert results.get(name) == "ok", results.get(name)
    want = _load(out, name, "single")
    np.testing.assert_allclose(want, _load(out, f"{name}_eager", "single"), rtol=1e-4, atol=1e-5)
    losses = _load(out, f"{name}_losses", "single")
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-4)
    for pid in (0, 1):
        np.testing.assert_allclose(_load(out, name, pid), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(_load(out, f"{name}_losses", pid), losses, rtol=1e-5)


@pytest.mark.parametrize("name", ["topology", "data_parallel", "tensor_parallel", "int64_input", "local_parts"])
def test_two_processes_match_one_process_and_eager(runs, name):
    out, single, multi = runs
    for results in (single, *multi):
        assert results.get(name) == "ok", results.get(name)
    if name == "topology":
        return
    want = _load(out, name, "single")
    for pid in (0, 1):
        got = _load(out, name, pid)
        if name == "local_parts":                   # each process has its own rows
            np.testing.assert_allclose(got, want[4 * pid:4 * pid + 4], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(_load(out, "local_parts_gathered", pid), want, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(_load(out, "local_ids", pid), _load(out, "int64_input_eager", "single"),
                                       rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    if name in ("data_parallel", "tensor_parallel", "int64_input"):
        np.testing.assert_allclose(want, _load(out, f"{name}_eager", "single"), rtol=1e-5, atol=1e-5)


def test_processes_that_differ_are_told_what_differs(runs):
    _, _, multi = runs
    for pid, results in enumerate(multi):
        other = 1 - pid
        inputs = results["different_inputs"]
        assert inputs.startswith("the processes differ at the call of a partitioned program"), inputs
        assert f"tensor input 0: process {pid} has float32[8, 8] crc" in inputs and f"process {other} has" in inputs
        assert "fxla.distributed.from_local" in inputs
        weights = results["different_weights"]
        assert "weight fc1.weight:" in weights and "seed torch before building the model" in weights, weights
        shapes = results["different_shapes"]
        assert "the compile of a partitioned program" in shapes and "f32[12, 8]" in shapes, shapes
        assert "fix: make every process compile and call the same model" in shapes
        assert results["barrier"] == "ok"


@pytest.mark.parametrize("name", ["data_written_between_steps", "names_through_the_batch"])
def test_partitioned_steps_see_data_writes_and_name_batch_tensors(runs, name):
    _, single, multi = runs
    for results in (single, *multi):
        assert results.get(name) == "ok", results.get(name)


def test_what_each_process_refuses_is_refused_by_all(runs):
    _, _, multi = runs
    for pid, results in enumerate(multi):
        assert results["plain_compile_on_each_process"] == "ok", results["plain_compile_on_each_process"]
        parts = results["different_replicated_parts"]
        assert "the building of a global array" in parts and "part [" in parts, parts
        assert "fix: pass the same data on every process that holds the same part" in parts
        index = results["index_error_on_one_process"]
        if pid == 0:                        # its own error; the other process was told
            assert index.startswith("IndexOutOfRangeError: ") and "holds 99" in index, index
        else:
            assert index.startswith("ProcessMismatchError: ") and "input checks: process 1 has passed, " \
                "process 0 has IndexOutOfRangeError" in index, index
        local = results["local_jax_array"]
        assert local.startswith("InputPlacementError: tensor input 0 is a jax.Array on this process's devices"), local
        lr = results["different_learning_rates"]
        assert "optimizer scalars 0: process" in lr and "the same learning rate" in lr, lr


def test_a_process_that_does_not_come_is_an_error_within_the_timeout(runs):
    _, _, multi = runs
    late = multi[0]["late_process"]
    assert isinstance(late, dict), late
    assert 2.5 < late["seconds"] < 15, late
    assert "process 1 did not reach the call of a partitioned program" in late["error"], late
    assert "within 3 s" in late["error"] and "fix:" in late["error"]
    assert multi[1]["late_process"] == "skipped"
    assert late["after"].startswith("the processes of this run are out of step since the call"), late["after"]
    assert "fix: end every process of the run and start it again" in late["after"]


def test_a_process_that_dies_ends_the_others_within_the_heartbeat_timeout():
    start = time.monotonic()
    procs, outs = _start_pair("dying", timeout=120)
    seconds = time.monotonic() - start
    (out0, err0), (out1, _) = outs
    assert "first call done" in out0 and "first call done" in out1
    assert procs[1].returncode == 3
    assert "second call done" not in out0
    assert procs[0].returncode != 0
    assert "another task died" in err0 or "did not reach" in err0, err0[-2000:]
    assert seconds < 90


def test_initialize_errors_in_process():
    import fxla
    from fxla.distributed import DistributedError
    fxla.compile(torch.nn.Linear(2, 2))(torch.ones(2))          # JAX's devices are started in this process
    with pytest.raises(DistributedError, match="after JAX had started its devices"):
        fxla.distributed.initialize("127.0.0.1:1", 2, 0)
    with pytest.raises(DistributedError, match="local_device_count=0"):
        fxla.distributed.initialize("127.0.0.1:1", 2, 0, local_device_count=0)
    assert not fxla.distributed.is_initialized() and fxla.distributed.process_count() == 1
    with pytest.raises(DistributedError, match="local_part takes a jax.Array"):
        fxla.distributed.local_part(torch.ones(2))


def test_the_worked_example_runs():
    """examples/distributed_training.py (docs/distributed.md): 2 processes, each its own half of every batch."""
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples",
                          "distributed_training.py")
    proc = subprocess.run([sys.executable, script], env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "largest difference from eager training" in proc.stdout and "checkpoint:" in proc.stdout, proc.stdout
