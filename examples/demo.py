"""The fxla demo (``make demo``): compile an MLP, a small CNN and a transformer encoder block, print the IR of
every stage, run them through PJRT and compare with eager PyTorch."""
from __future__ import annotations

import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fxla  # noqa: E402
import models  # noqa: E402


def banner(text: str) -> None:
    print(f"\n{'=' * 100}\n{text}\n{'=' * 100}")


def show(name: str, factory, stages=("graph", "code", "fxla", "stablehlo")) -> bool:
    model, inputs = factory()
    banner(f"{name}: {type(model).__name__} on inputs {[tuple(t.shape) for t in inputs]}")
    start = time.perf_counter()
    fast = fxla.compile(model)
    lowered = fast.lower(*inputs)
    lower_ms = (time.perf_counter() - start) * 1e3
    for stage in stages:
        print(f"\n---- {stage} " + "-" * (94 - len(stage)))
        print(getattr(lowered, stage).rstrip())
    start = time.perf_counter()
    got = fast(*inputs)
    first_ms = (time.perf_counter() - start) * 1e3
    with torch.no_grad():
        want = model(*inputs)
    diff = (got - want).abs().max().item()
    ok = torch.allclose(got, want, rtol=1e-4, atol=1e-5)
    print(f"\n{name}: trace+lower {lower_ms:.0f} ms, XLA compile+first run {first_ms:.0f} ms; "
          f"max |fxla - eager| = {diff:.2e} -> {'MATCH' if ok else 'MISMATCH'}")
    return ok


def main() -> int:
    results = [show("MLP", models.mlp), show("small CNN", models.small_cnn),
               show("encoder block", models.encoder_block, stages=("graph", "fxla"))]
    banner("summary: " + ", ".join(f"{n}={'ok' if r else 'FAIL'}"
                                   for n, r in zip(("mlp", "cnn", "encoder"), results)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
