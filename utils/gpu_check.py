"""A short GPU check of fxla (issue 19 item 5): run on a lent GPU machine, never in CI.

    python utils/gpu_check.py OUT_DIR

Prints and writes ``OUT_DIR/gpu_check.json``: versions and devices, then for each model (an MLP, a small CNN, a
depthwise convolution, a transformer encoder block, ResNet-18-style and MobileNetV2-style nets from tests/zoo,
GPT-2 small from its config when transformers is there) whether ``fxla.compile(model, device="gpu")`` runs, its
max error against eager CUDA, and median latencies of fxla (jax arrays in and out, on the GPU), eager CUDA and
inductor.  Each model is tried on its own: a failure is recorded with its error and the next one runs.
"""
import json
import os
import sys
import time
import traceback

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))


def _median_ms(fn, sync, reps=30):
    for _ in range(3):
        fn()
    sync()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2] * 1e3


def _models():
    from zoo import vision
    yield "mlp", lambda: torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(),
                                             torch.nn.Linear(1024, 512)), (torch.randn(64, 512),)
    yield "small_cnn", lambda: torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
        torch.nn.Linear(64, 10)), (torch.randn(16, 3, 64, 64),)
    yield "depthwise_3x3", lambda: torch.nn.Conv2d(96, 96, 3, padding=1, groups=96), (torch.randn(8, 96, 56, 56),)
    yield "encoder_block", lambda: torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True), \
        (torch.randn(8, 128, 256),)
    for name in dir(vision):
        if name.lower() in ("resnet18", "mobilenet_v2", "mobilenetv2"):
            yield name, getattr(vision, name), (torch.randn(8, 3, 64, 64),)
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
        yield "gpt2_small", lambda: GPT2LMHeadModel(GPT2Config(n_layer=12)), (torch.randint(0, 50257, (1, 64)),)
    except Exception as err:  # noqa: BLE001
        print("no transformers:", err)


def check_one(name, make, inputs):
    import jax
    import fxla
    torch.manual_seed(0)
    model = make().eval()
    row = {"model": name}
    import copy
    cuda_model = copy.deepcopy(model).cuda()
    cuda_inputs = tuple(x.cuda() for x in inputs)
    with torch.no_grad():
        expected = cuda_model(*cuda_inputs, **({"use_cache": False} if name == "gpt2_small" else {}))
        if not isinstance(expected, torch.Tensor):
            expected = expected[0]
    start = time.perf_counter()
    hf = name == "gpt2_small"
    fast = fxla.compile(model, device="gpu", output="jax", concrete_shapes=hf,
                        concrete_args={"use_cache": False} if hf else None)
    gpu = [jax.device_put(x.numpy(), jax.devices("gpu")[0]) for x in inputs]
    got = fast(*gpu)
    from torch.utils import _pytree as pytree
    got = pytree.tree_leaves(got)[0]
    jax.block_until_ready(got)
    row["first_call_s"] = round(time.perf_counter() - start, 3)
    import numpy as np
    row["max_abs_err"] = float(np.abs(np.asarray(got, dtype=np.float64) - expected.double().cpu().numpy()).max())
    row["fxla_ms"] = _median_ms(lambda: fast(*gpu), lambda: jax.block_until_ready(fast(*gpu)))
    with torch.no_grad():
        row["eager_ms"] = _median_ms(lambda: cuda_model(*cuda_inputs), torch.cuda.synchronize)
        try:
            compiled = torch.compile(cuda_model)
            row["inductor_ms"] = _median_ms(lambda: compiled(*cuda_inputs), torch.cuda.synchronize)
        except Exception as err:  # noqa: BLE001
            row["inductor_error"] = f"{type(err).__name__}: {str(err)[:200]}"
    try:
        hlo = fast.executable_for(*gpu).hlo_text()
        row["hlo_has_convolution"] = "convolution(" in hlo
    except Exception as err:  # noqa: BLE001
        row["hlo_error"] = str(err)[:200]
    return row


def main(out_dir, only=None):
    import jax
    report = {"python": sys.version, "torch": torch.__version__, "jax": jax.__version__,
              "devices": [str(d) for d in jax.devices()], "cuda": torch.cuda.is_available(), "models": []}
    print(json.dumps({k: v for k, v in report.items() if k != "models"}), flush=True)
    for name, make, inputs in _models():
        if only and name not in only:
            continue
        try:
            row = check_one(name, make, inputs)
        except Exception as err:  # noqa: BLE001
            row = {"model": name, "error": f"{type(err).__name__}: {err}"[:2000],
                   "traceback": traceback.format_exc()[-3000:]}
        print(json.dumps(row), flush=True)
        report["models"].append(row)
        with open(os.path.join(out_dir, "gpu_check.json"), "w") as fh:
            json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".", sys.argv[2].split(",") if len(sys.argv) > 2 else None)
