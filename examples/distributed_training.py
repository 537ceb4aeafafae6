"""Data-parallel training over two processes with fxla.distributed (docs/distributed.md, "A worked example").

    .venv/bin/python examples/distributed_training.py            # starts 2 processes on 127.0.0.1 and waits

Run without arguments, the script starts two copies of itself (``--rank 0`` and ``--rank 1``), each with 2 CPU
devices, which join through a coordinator on a free loopback port.  Each process builds the same model (seeded),
reads only its own half of every batch, and runs one compiled training step (forward, loss, backward and the
SGD update, with the gradients all-reduced inside the XLA program) over the 4 devices of both processes.  At the
end process 0 checks that the two processes hold equal weights, equal to eager training on the whole batches,
and saves a checkpoint.  On a cluster, start one such process per host with the first host's address instead.
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

STEPS, BATCH = 20, 64


def model_and_optimizer():
    torch.manual_seed(0)                     # the same initial weights on every process
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def batches():
    gen = torch.Generator().manual_seed(1)   # every process sees the same stream and keeps its own rows
    for _ in range(STEPS):
        x = torch.randn(BATCH, 32, generator=gen)
        yield x, (x[:, :10].argmax(1) + (x[:, 10] > 0).long()) % 10


def loss_fn(model, x, y):
    return F.cross_entropy(model(x), y)


def worker(rank: int, port: int, checkpoint: str) -> None:
    import fxla
    fxla.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=rank, local_device_count=2,
                                timeout=120, bind_address=f"127.0.0.1:{port}")
    mesh = fxla.distributed.mesh({"data": 4})                   # 2 devices of each process
    model, optimizer = model_and_optimizer()
    step = fxla.compile_step(model, optimizer, loss_fn, mesh=mesh, shard={"x": ("data", None), "y": ("data",)})
    half = slice(rank * BATCH // 2, (rank + 1) * BATCH // 2)
    for i, (x, y) in enumerate(batches()):
        loss = step(fxla.distributed.from_local(x[half], mesh, ("data", None)),   # this process's rows only
                    fxla.distributed.from_local(y[half], mesh, ("data",)))
        if rank == 0 and i % 5 == 0:
            print(f"step {i:2d}  loss {float(loss):.4f}", flush=True)
    fxla.distributed.save_checkpoint(checkpoint, model, optimizer, steps=STEPS)   # checks both agree first
    if rank == 0:
        eager, eager_optimizer = model_and_optimizer()            # the same training, eagerly, on whole batches
        for x, y in batches():
            eager_optimizer.zero_grad()
            loss_fn(eager, x, y).backward()
            eager_optimizer.step()
        worst = max(float((a - b).abs().max()) for a, b in zip(model.state_dict().values(),
                                                              eager.state_dict().values()))
        print(f"final loss {float(loss):.4f}; largest difference from eager training: {worst:.2e}", flush=True)
        assert worst < 1e-4, worst
        print(f"checkpoint: {checkpoint}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rank", type=int)
    parser.add_argument("--port", type=int)
    parser.add_argument("--checkpoint")
    args = parser.parse_args()
    if args.rank is not None:
        worker(args.rank, args.port, args.checkpoint)
        return 0
    with socket.socket() as s:                                   # a free loopback port for the coordinator
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    checkpoint = os.path.join(tempfile.mkdtemp(prefix="fxla-example-"), "checkpoint.pt")
    procs = [subprocess.Popen([sys.executable, __file__, "--rank", str(rank), "--port", str(port),
                               "--checkpoint", checkpoint]) for rank in (0, 1)]
    try:
        codes = [p.wait(timeout=300) for p in procs]
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        print("the processes did not finish within 300 s", file=sys.stderr)
        return 1
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())
