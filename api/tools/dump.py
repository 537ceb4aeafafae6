"""``fxla-dump``: print the IR of every compilation stage for a model.

    fxla-dump examples/models.py:mlp --stage all
    fxla-dump examples/models.py:small_cnn --stage stablehlo --debug-locations
    fxla-dump mypkg.models:make_model --input-shape 1x3x32x32 --run
    fxla-dump examples/models.py:mlp --stage graph --format svg > mlp.svg
    fxla-dump examples/models.py:mlp --format html > mlp.html      # every stage on one page
    fxla-dump examples/models.py:mlp -v --print-ir-after-all        # timings and IR after each pass (stderr)

SPEC is ``path/to/file.py:factory`` or ``package.module:factory``.  The factory is called with no arguments and
returns either ``(model, example_inputs)`` or just a model/function, in which case ``--input-shape`` gives the
example inputs (``2x16`` or ``2x16:f16``; repeat the flag for several inputs).
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import importlib
import importlib.util
import os
import sys
import time

from fxla.errors import FxlaError

STAGES = ("graph", "functional", "code", "fxla", "stablehlo", "hlo")
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
    p = argparse.ArgumentParser(prog="fxla-dump", description=__doc__.split("\n\n")[0].replace("``", ""),
                                epilog="stages: graph (captured graph), functional (the graph with in-place ops rewritten "
                                "out of place, what is lowered), code (regenerated Python), fxla (the fxla "
                                "dialect), stablehlo (verified StableHLO), hlo (XLA's optimised HLO of what fxla.compile runs: "
                                "the StableHLO after fxla-param-layout)")
    p.add_argument("spec", help="FILE.py:FACTORY or package.module:FACTORY")
    p.add_argument("--stage", choices=STAGES + ("all",), default="all")
    p.add_argument("--input-shape", action="append", default=[], help="example input, e.g. 2x16 or 2x16:f16")
    p.add_argument("--debug-locations", action="store_true", help="print MLIR locations (the user's source lines)")
    p.add_argument("--run", action="store_true", help="also run the compiled model and compare with eager torch")
    p.add_argument("--device", default=None, help="cpu, gpu, tpu (default: JAX's default device)")
    p.add_argument("--format", choices=("text", "svg", "html"), default="text",
                   help="text (default); svg: the graph drawn by Graphviz (with --stage graph); "
                        "html: one self-contained page of every requested stage (the graph grouped by module, "
                        "IR lines linked to graph nodes and source lines, search)")
    p.add_argument("--print-ir-after-all", action="store_true",
                   help="print the IR after every pass of the fxla -> StableHLO pipeline (to stderr)")
    p.add_argument("-v", "--verbose", action="store_true", help="report each phase and its time (to stderr)")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _dump(args)
    except FxlaError as err:
        print(f"fxla-dump: error: {err}", file=sys.stderr)
        return 1


class _Progress:
    """``-v``: one line per phase on stderr, with its wall time."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    @contextlib.contextmanager
    def phase(self, what: str):
        if self.enabled:
            print(f"[fxla] {what} ...", end="", file=sys.stderr, flush=True)
        start = time.perf_counter()
        yield
        if self.enabled:
            print(f" {(time.perf_counter() - start) * 1e3:.1f} ms", file=sys.stderr, flush=True)

    def observe(self, stage: str, _result, seconds: float) -> None:
        """A pipeline observer (fxla.pipeline.Observer): one line per stage, after it ran."""
        if self.enabled:
            print(f"[fxla] {STAGE_LABELS.get(stage, stage)} ... {seconds * 1e3:.1f} ms", file=sys.stderr,
                  flush=True)


def _load(args):
    import torch

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
    return model, inputs


#: what ``-v`` calls each stage of the pipeline (fxla.pipeline.STAGES)
STAGE_LABELS = {"prepare": "prepare graph (shape propagation + functionalization)",
                "fxla": "lowering to fxla", "vjp": "differentiation (forward + residuals, backward)",
                "stablehlo": "fxla -> StableHLO (pipeline + MLIR verifier)",
                "layout": "device layout passes (fxla-pool-layout + fxla-param-layout)", "compile": "XLA compile"}


def _stage_texts(args, model, inputs, progress: _Progress):
    import fxla
    from fxla.pipeline import COMPILING, Pipeline
    from fxla.runtime import resolve_device

    with progress.phase("tracing"):
        compiled = fxla.compile(model, device=args.device)
    gm = compiled.graph_module
    texts = {"graph": str(gm.graph), "code": gm.code}

    def keep_fxla(stage, result, _seconds):      # (the next stage converts the fxla module in place)
        if stage == "fxla":
            texts["fxla"] = result.text(debug_info=args.debug_locations)

    pipeline = Pipeline(observers=[progress.observe, keep_fxla], print_ir_after_all=args.print_ir_after_all)
    with COMPILING:
        stages = pipeline.lower(gm, inputs)
    texts["functional"] = _functional_text(stages.prepared)
    texts["stablehlo"] = stages.stablehlo_debug if args.debug_locations else stages.stablehlo
    if args.stage in ("hlo", "all") or args.run:
        device = resolve_device(args.device)
        with COMPILING:          # what fxla.compile does before XLA (same HLO)
            target = pipeline.layout(stages, device.platform)
            executable = pipeline.compile(stages, target, device)
        texts["hlo"] = executable.hlo_text()
    return compiled, texts


def _functional_text(prepared) -> str:
    """The graph the pipeline lowered (in-place ops rewritten), and what is written back after each call."""
    back = [f"// written back after each call: input {name} <- %{node.name}"
            for name, node in prepared.input_mutations.items()]
    back += [f"// written back after each call: {name} <- %{node.name}"
             for name, node in prepared.state_mutations.items()]
    for name, (spec, nodes, constants) in prepared.attribute_writes.items():
        values = [f"%{nodes[i].name}" if i in nodes else repr(constants[i]) for i in range(spec.num_leaves)]
        back.append(f"// set after each call: attribute {name} <- "
                    + (values[0] if spec.is_leaf() else f"({', '.join(values)})"))
    if not prepared.functionalized and not back:
        return "// no in-place ops: the captured graph is lowered as it is"
    return "\n".join([str(prepared.graph_module.graph).rstrip("\n")] + back)


def _compare(got, expected):
    """``(max abs difference, match)`` of a run's outputs and eager's, leaf by leaf: tensors within rtol 1e-4 /
    atol 1e-5 (the max difference over all of them), other leaves equal, the structures alike (tuples, dicts,
    Hugging Face ModelOutputs...)."""
    import torch
    from torch.utils import _pytree as pytree

    got_leaves, got_spec = pytree.tree_flatten(got)
    want_leaves, want_spec = pytree.tree_flatten(expected)
    if len(got_leaves) != len(want_leaves):
        return float("inf"), False
    diff, ok = 0.0, True
    for g, w in zip(got_leaves, want_leaves):
        if isinstance(g, torch.Tensor) and isinstance(w, torch.Tensor):
            if g.shape != w.shape:
                return float("inf"), False
            if g.numel():
                a, b = g.detach().double(), w.detach().double()
                diff = max(diff, (a - b).abs().max().item())
                ok = ok and torch.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)
        else:
            ok = ok and (g == w if not isinstance(g, torch.Tensor) and not isinstance(w, torch.Tensor) else False)
    return diff, bool(ok)


def _dump(args) -> int:
    import torch

    from fxla.frontend.passes import graph_to_svg

    progress = _Progress(args.verbose)
    model, inputs = _load(args)
    # --run: eager runs on copies made before anything runs, so a model that changes its state or inputs
    # (self.steps += 1, x += 1) is compared from the same starting point
    eager_model, eager_inputs = (copy.deepcopy(model), copy.deepcopy(inputs)) if args.run else (None, None)
    if args.format == "html":      # the report links IR lines to graph nodes through the MLIR locations
        args.debug_locations = True
    compiled, texts = _stage_texts(args, model, inputs, progress)
    wanted = STAGES if args.stage == "all" else (args.stage,)
    if args.format == "svg" and args.stage == "all":      # an SVG is a drawing of the graph: no --stage needed
        wanted = ("graph",)
    graph = compiled.graph_module.graph
    if args.format == "svg":
        if wanted != ("graph",):
            raise SpecError("--format svg draws the graph only\nfix: add --stage graph")
        print(graph_to_svg(graph))
    elif args.format == "html":
        from fxla.tools.report import model_name, render
        print(render(texts, wanted, compiled.graph_module, model, title=model_name(model), subtitle=args.spec))
    else:
        for stage in wanted:
            if len(wanted) > 1:
                print(f"// ===== {stage} =====")
            print(texts[stage].rstrip("\n"))
    if args.run:
        with torch.no_grad():
            expected = eager_model(*eager_inputs)
        with progress.phase("run"):
            got = compiled(*inputs)
        diff, ok = _compare(got, expected)
        print(f"// run: max |fxla - eager| = {diff:.3g} ({'match' if ok else 'MISMATCH'})")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
