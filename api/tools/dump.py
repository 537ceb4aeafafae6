"""``fxla-dump``: print the IR of every compilation stage for a model.

    fxla-dump examples/models.py:mlp --stage all
    fxla-dump examples/models.py:small_cnn --stage stablehlo --debug-locations
    fxla-dump mypkg.models:make_model --input-shape 1x3x32x32 --run

SPEC is ``path/to/file.py:factory`` or ``package.module:factory``.  The factory is called with no arguments and
returns either ``(model, example_inputs)`` or just a model/function, in which case ``--input-shape`` gives the
example inputs (``2x16`` or ``2x16:f16``; repeat the flag for several inputs).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys

from fxla.errors import FxlaError

STAGES = ("graph", "code", "fxla", "stablehlo", "hlo")
DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64", "i64": "int64",
          "i32": "int32", "i1": "bool"}


class SpecError(FxlaError):
    """The model spec given to fxla-dump cannot be loaded."""


def load_factory(spec: str):
    path, sep, attr = spec.rpartition(":")
    if not sep or not path or not attr:
        raise SpecError(f"'{spec}' is not a model spec\nfix: write FILE.py:FACTORY or package.module:FACTORY")
    if path.endswith(".py") or os.sep in path:
        if not os.path.exists(path):
            raise SpecError(f"no such file: '{path}'\nfix: give the path of the Python file defining '{attr}'")
        mod_name = "_fxla_dump_" + os.path.splitext(os.path.basename(path))[0]
        module_spec = importlib.util.spec_from_file_location(mod_name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[mod_name] = module
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(path)
    if not hasattr(module, attr):
        raise SpecError(f"'{path}' defines no '{attr}'\nfix: name a function of that module that returns the "
                        f"model (and optionally its example inputs)")
    return getattr(module, attr)


def parse_shape(text: str):
    import torch
    shape, _, dtype = text.partition(":")
    try:
        dims = [int(d) for d in shape.split("x")] if shape else []
    except ValueError:
        raise SpecError(f"bad --input-shape '{text}'\nfix: write e.g. 2x3x32x32 or 2x16:f16") from None
    dt = getattr(torch, DTYPES.get(dtype or "f32", "?"), None)
    if dt is None:
        raise SpecError(f"unknown dtype '{dtype}' in --input-shape\nfix: one of {', '.join(DTYPES)}")
    if dt.is_floating_point:
        return torch.randn(dims, dtype=dt)
    return torch.randint(0, 4, dims, dtype=dt) if dt != torch.bool else torch.rand(dims) > 0.5


def _parser():
    p = argparse.ArgumentParser(prog="fxla-dump", description=__doc__.split("\n\n")[0],
                                epilog="stages: graph (captured graph), code (regenerated Python), fxla (the fxla "
                                "dialect), stablehlo (verified StableHLO), hlo (XLA's optimised HLO)")
    p.add_argument("spec", help="FILE.py:FACTORY or package.module:FACTORY")
    p.add_argument("--stage", choices=STAGES + ("all",), default="all")
    p.add_argument("--input-shape", action="append", default=[], help="example input, e.g. 2x16 or 2x16:f16")
    p.add_argument("--debug-locations", action="store_true", help="print MLIR locations (the user's source lines)")
    p.add_argument("--run", action="store_true", help="also run the compiled model and compare with eager torch")
    p.add_argument("--device", default=None, help="cpu, gpu, tpu (default: JAX's default device)")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _dump(args)
    except FxlaError as err:
        print(f"fxla-dump: error: {err}", file=sys.stderr)
        return 1


def _dump(args) -> int:
    import torch

    import fxla

    made = load_factory(args.spec)()
    if isinstance(made, tuple) and len(made) == 2 and not isinstance(made[0], torch.Tensor):
        model, inputs = made
        inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    else:
        model, inputs = made, ()
    if args.input_shape:
        inputs = tuple(parse_shape(s) for s in args.input_shape)
    if not inputs:
        raise SpecError("no example inputs\nfix: return (model, example_inputs) from the factory or pass "
                        "--input-shape")
    if isinstance(model, torch.nn.Module):
        model.eval()
    compiled = fxla.compile(model, device=args.device)
    stages = compiled.lower(*inputs)
    wanted = STAGES if args.stage == "all" else (args.stage,)
    texts = {
        "graph": lambda: stages.graph,
        "code": lambda: stages.code,
        "fxla": lambda: stages.program.text(debug_info=args.debug_locations) if args.debug_locations
        else stages.fxla,
        "stablehlo": lambda: stages.stablehlo_debug if args.debug_locations else stages.stablehlo,
        "hlo": lambda: compiled.executable_for(*inputs).hlo_text(),
    }
    for stage in wanted:
        if len(wanted) > 1:
            print(f"// ===== {stage} =====")
        print(texts[stage]().rstrip("\n"))
    if args.run:
        with torch.no_grad():
            expected = model(*inputs)
        got = compiled(*inputs)
        diff = (got.float() - expected.float()).abs().max().item()
        ok = torch.allclose(got.float(), expected.float(), rtol=1e-4, atol=1e-5)
        print(f"// run: max |fxla - eager| = {diff:.3g} ({'match' if ok else 'MISMATCH'})")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
