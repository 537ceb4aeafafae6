"""fxla's benchmarks (``make bench``; not part of CI).  Everything is measured in this one run, on this machine.

For each model and batch size it prints the median time per call of: fxla, torch eager, torch.compile
(inductor) and the same model hand-written in JAX under jax.jit, and the ratios against fxla.  Then: per-call
dispatch overhead against jax.jit on a tiny function, trace time against torch.fx, trace+lower time against
XLA's compile time, and how lowering time grows with graph size.

    .venv/bin/python benchmarks/run.py            # everything
    .venv/bin/python benchmarks/run.py --quick    # fewer repetitions, no 100k-node graph, no inductor
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import jax
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fxla  # noqa: E402
import jax_models  # noqa: E402
import models  # noqa: E402
from fxla.lowering import lower_to_fxla, lower_to_stablehlo  # noqa: E402
from fxla.runtime import compile_stablehlo, resolve_device  # noqa: E402


def timeit(fn, repeat: int, warmup: int = 3) -> float:
    """Median seconds per call (after ``warmup`` calls)."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _inputs(factory, batch):
    model, (x,) = factory()
    return model, torch.randn((batch,) + tuple(x.shape[1:]))


MODELS = [("MLP", models.mlp, jax_models.mlp), ("small CNN", models.small_cnn, jax_models.small_cnn),
          ("encoder block", models.encoder_block, jax_models.encoder_block)]


def bench_models(repeat: int, inductor: bool) -> None:
    print("\n## Run time per call (median), ratios are baseline / fxla (>1: fxla faster)\n")
    print("| model | batch | fxla | eager | torch.compile | jax.jit | vs eager | vs inductor | vs jax |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, factory, jax_fn in MODELS:
        for batch in (1, 32):
            model, x = _inputs(factory, batch)
            fast = fxla.compile(model)
            t_fxla = timeit(lambda: fast(x), repeat)
            with torch.no_grad():
                t_eager = timeit(lambda: model(x), repeat)
                if inductor:
                    compiled = torch.compile(model)
                    t_ind = timeit(lambda: compiled(x), repeat)
                else:
                    t_ind = float("nan")
            params = jax_models.params_of(model)
            jitted = jax.jit(jax_fn)
            xj = jax.numpy.asarray(x.numpy())
            t_jax = timeit(lambda: jitted(params, xj).block_until_ready(), repeat)
            print(f"| {name} | {batch} | {t_fxla * 1e6:.0f} µs | {t_eager * 1e6:.0f} µs | {t_ind * 1e6:.0f} µs | "
                  f"{t_jax * 1e6:.0f} µs | {t_eager / t_fxla:.2f} | {t_ind / t_fxla:.2f} | {t_jax / t_fxla:.2f} |")


def bench_dispatch(repeat: int) -> None:
    x = torch.randn(4)
    fast = fxla.compile(lambda t: t + 1)
    jitted = jax.jit(lambda t: t + 1)
    xj = jax.numpy.asarray(x.numpy())
    t_fxla = timeit(lambda: fast(x), repeat * 10)
    t_jax = timeit(lambda: jitted(xj).block_until_ready(), repeat * 10)
    print("\n## Dispatch overhead on a tiny function (x + 1, 4 elements)\n")
    print(f"fxla {t_fxla * 1e6:.1f} µs/call (torch in, torch out), jax.jit {t_jax * 1e6:.1f} µs/call: "
          f"fxla / jax = {t_fxla / t_jax:.2f}")


def bench_trace_and_compile() -> None:
    print("\n## Trace, lower and compile times\n")
    print("| model | fxla trace | torch.fx trace | fxla/fx | lower to fxla | fxla -> StableHLO | XLA compile |")
    print("|---|---|---|---|---|---|---|")
    for name, factory, _ in MODELS:
        model, inputs = factory()
        t_trace = timeit(lambda: fxla.symbolic_trace(model), 10, warmup=1)
        t_fx = timeit(lambda: torch.fx.symbolic_trace(model), 10, warmup=1)
        gm = fxla.symbolic_trace(model)
        lower_to_fxla(gm, inputs)                       # warm torch's meta kernels once
        start = time.perf_counter()
        program = lower_to_fxla(gm, inputs)
        t_lower = time.perf_counter() - start
        start = time.perf_counter()
        stablehlo = lower_to_stablehlo(program.module)
        t_conv = time.perf_counter() - start
        start = time.perf_counter()
        compile_stablehlo(stablehlo.operation.get_asm(enable_debug_info=True), resolve_device("cpu"))
        t_xla = time.perf_counter() - start
        print(f"| {name} | {t_trace * 1e3:.2f} ms | {t_fx * 1e3:.2f} ms | {t_trace / t_fx:.2f} | "
              f"{t_lower * 1e3:.1f} ms | {t_conv * 1e3:.1f} ms | {t_xla * 1e3:.0f} ms |")


def _chain(n: int):
    def fn(x):
        for i in range(n // 2):
            x = x * 1.0001 + 0.5 if i % 2 else x + 0.25
        return x
    return fn


def bench_scaling(sizes) -> None:
    print("\n## Lowering time against graph size (a chain of elementwise ops on a [16] tensor)\n")
    print("| graph nodes | trace | lower to fxla | fxla -> StableHLO | per node |")
    print("|---|---|---|---|---|")
    x = torch.randn(16)
    for n in sizes:
        fn = _chain(n)
        start = time.perf_counter()
        gm = fxla.symbolic_trace(fn)
        t_trace = time.perf_counter() - start
        nodes = len(list(gm.graph.nodes))
        start = time.perf_counter()
        program = lower_to_fxla(gm, (x,))
        t_lower = time.perf_counter() - start
        start = time.perf_counter()
        lower_to_stablehlo(program.module)
        t_conv = time.perf_counter() - start
        per = (t_lower + t_conv) / nodes
        print(f"| {nodes} | {t_trace:.2f} s | {t_lower:.2f} s | {t_conv:.2f} s | {per * 1e6:.0f} µs |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, skip inductor and 100k nodes")
    args = parser.parse_args(argv)
    repeat = 20 if args.quick else 100
    print(f"# fxla benchmarks — {os.cpu_count()} CPU cores, torch {torch.__version__}, jax {jax.__version__}, "
          f"device {resolve_device()}")
    bench_models(repeat, inductor=not args.quick)
    bench_dispatch(repeat)
    bench_trace_and_compile()
    bench_scaling((1_000, 10_000) if args.quick else (1_000, 10_000, 100_000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
