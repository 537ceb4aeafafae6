"""What bounds fxla's ResNet-18 training step on the CPU (issue #22, item 7): XLA CPU's convolutions alone.

ResNet-18's 20 convolutions, at the shapes the training benchmark runs them (benchmarks/training.py: batch 32,
112x112; found by running the model once with forward hooks), each timed alone three ways, as XLA compiles them
for fxla's training step (``jax.jit`` of ``lax.conv_general_dilated`` in torch's NCHW/OIHW layout, its input and
weight gradients by ``jax.vjp``, fxla's XLA options for programs with a backward pass) and as eager PyTorch runs
them (``F.conv2d``, ``torch.nn.grad.conv2d_input`` and ``conv2d_weight``: oneDNN).  The first convolution's input
gradient is left out, as the step computes none (the images do not require grad), and so is a convolution whose
kernel overhangs its input (the 2x2 maps of ``--quick``'s 64x64 images; none at the full size): fxla computes those
as im2col and one dot (lowering/grouped_conv.py), not with XLA's convolution.  The sums over the model are
what the step's convolutions cost at best, before any other op; benchmarks/training.py sets them beside the
eager step.  Runs in its own process (``--json``: one JSON object on stdout)::

    .venv/bin/python benchmarks/conv_bound.py [--quick] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Callable, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from report import median_seconds  # noqa: E402

REPEATS = 5


def _median(call: Callable[[], object]) -> float:
    return median_seconds(call, REPEATS)


def resnet18_convolutions(quick: bool) -> List[dict]:
    """ResNet-18's convolutions as the training benchmark's model runs them: input shape, kernel, stride,
    padding, and how many of the model's convolutions have that form (``count``); ``first``: the stem, whose
    input gradient the step does not compute."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "utils"))
    from torchvision_cpu import import_torchvision
    torchvision = import_torchvision()
    batch, size = (4, 64) if quick else (32, 112)
    model = torchvision.models.resnet18(num_classes=10 if quick else 1000)
    seen: Dict[tuple, dict] = {}

    def hook(conv, inputs, _output):
        key = (tuple(inputs[0].shape), tuple(conv.weight.shape), conv.stride, conv.padding)
        overhangs = all(size < k for size, k in zip(key[0][2:], key[1][2:]))     # (no dilations here)
        entry = seen.setdefault(key, dict(input=key[0], weight=key[1], stride=conv.stride[0],
                                          padding=conv.padding[0], count=0, first=not seen, overhangs=overhangs))
        entry["count"] += 1

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    with torch.no_grad():
        model(torch.randn(batch, 3, size, size))
    for h in handles:
        h.remove()
    return list(seen.values())


def measure(quick: bool = False) -> dict:
    """Every convolution form's times (seconds) and the sums over the model."""
    import jax
    import numpy as np
    import torch
    import torch.nn.functional as F
    from jax import lax
    sys.path.insert(0, ROOT)
    from fxla.runtime.executable import GRADIENT_XLA_OPTIONS
    rng = np.random.default_rng(0)
    rows = []
    for conv in resnet18_convolutions(quick):
        s, p = conv["stride"], conv["padding"]
        x_np = rng.standard_normal(conv["input"], dtype=np.float32)
        w_np = rng.standard_normal(conv["weight"], dtype=np.float32)
        x, w = torch.from_numpy(x_np), torch.from_numpy(w_np)
        g = torch.randn(F.conv2d(x, w, stride=s, padding=p).shape)

        def xla_conv(a, b, s=s, p=p):
            return lax.conv_general_dilated(a, b, (s, s), [(p, p), (p, p)],
                                            dimension_numbers=("NCHW", "OIHW", "NCHW"))
        xa, wa, ga = jax.numpy.asarray(x_np), jax.numpy.asarray(w_np), jax.numpy.asarray(g.numpy())
        compiled = {name: jax.jit(fn).lower(*args).compile(compiler_options=GRADIENT_XLA_OPTIONS)
                    for name, fn, args in (
            ("forward", xla_conv, (xa, wa)),
            ("input_grad", lambda a, b, c: jax.vjp(xla_conv, a, b)[1](c)[0], (xa, wa, ga)),
            ("weight_grad", lambda a, b, c: jax.vjp(xla_conv, a, b)[1](c)[1], (xa, wa, ga)))}
        row = dict(conv, xla={}, torch={})
        row["xla"]["forward"] = _median(lambda: compiled["forward"](xa, wa).block_until_ready())
        row["xla"]["input_grad"] = _median(lambda: compiled["input_grad"](xa, wa, ga).block_until_ready())
        row["xla"]["weight_grad"] = _median(lambda: compiled["weight_grad"](xa, wa, ga).block_until_ready())
        row["torch"]["forward"] = _median(lambda: F.conv2d(x, w, stride=s, padding=p))
        row["torch"]["input_grad"] = _median(lambda: torch.nn.grad.conv2d_input(x.shape, w, g, stride=s,
                                                                                   padding=p))
        row["torch"]["weight_grad"] = _median(lambda: torch.nn.grad.conv2d_weight(x, w.shape, g, stride=s,
                                                                                     padding=p))
        rows.append(row)
    totals = {who: {part: sum(r[who][part] * r["count"] for r in rows
                              if not (part == "input_grad" and r["first"]) and not r["overhangs"])
                    for part in ("forward", "input_grad", "weight_grad")} for who in ("xla", "torch")}
    return dict(rows=rows, totals=totals, threads=torch.get_num_threads())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="batch 4, 64x64 (a smoke test)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    result = measure(args.quick)
    if args.json:
        print(json.dumps(result))
        return 0
    for r in result["rows"]:
        print(f"{r['input']} * {r['weight']} stride {r['stride']} x{r['count']}: "
              + ", ".join(f"{who} " + " / ".join(f"{r[who][k] * 1e3:.1f}" for k in ("forward", "input_grad",
                                                                                    "weight_grad"))
                          for who in ("xla", "torch")) + " ms")
    for who, parts in result["totals"].items():
        print(who, {k: f"{v * 1e3:.0f} ms" for k, v in parts.items()}, f"sum {sum(parts.values()) * 1e3:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
