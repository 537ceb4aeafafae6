"""``fxla-dump``: print the IR of every compilation stage for a model.

    fxla-dump examples/models.py:mlp --stage all
    fxla-dump examples/models.py:small_cnn --stage stablehlo --debug-locations
    fxla-dump mypkg.models:make_model --input-shape 1x3x32x32 --run
    fxla-dump examples/models.py:mlp --stage graph --format svg > mlp.svg
    fxla-dump examples/models.py:mlp --format html > mlp.html      # every stage on one page
    fxla-dump examples/models.py:mlp -v --print-ir-after-all        # timings and IR after each pass (stderr)
    fxla-dump hf.py:gpt2 --input-shape 1x16:i64 --concrete-shapes --concrete-args use_cache=false --run

SPEC is ``path/to/file.py:factory`` or ``package.module:factory``.  The factory is called with no arguments and
returns a model/function, ``(model, example_args)`` or ``(model, example_args, example_kwargs)`` (keyword
inputs, e.g. a Hugging Face model's ``attention_mask``); ``--input-shape`` gives or replaces the example inputs
(``2x16``, ``2x16:f16``, ``2x16:i64`` for token ids, ``attention_mask=2x16:i64`` for a keyword input; repeat the
flag for several inputs).  ``--concrete-shapes`` and ``--concrete-args`` trace as ``fxla.compile(model,
concrete_shapes=True, concrete_args={...})`` does (models that branch on sizes or assert shapes: Hugging Face,
nanoGPT); ``--run`` compares every tensor of the output (tuples, dicts, ModelOutputs, KV caches...) with eager
PyTorch's, one line per leaf.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import importlib
import importlib.util
import json
import os
import shutil
import sys
import textwrap
import time
from typing import Any, Dict, Optional, Tuple

from fxla.errors import FxlaError

STAGES = ("graph", "functional", "code", "fxla", "stablehlo", "hlo")
DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64", "i64": "int64",
          "i32": "int32", "i1": "bool"}


class SpecError(FxlaError):
    """The model spec given to fxla-dump cannot be loaded, or its arguments are malformed."""


class GraphvizMissingError(FxlaError):
    """``--format svg`` was asked for and Graphviz's ``dot`` program is not on PATH."""


def parse_dynamic(items) -> Any:
    """``--dynamic NAME:DIM`` flags as fxla.compile's ``dynamic=`` (``False`` when none)."""
    import fxla
    dynamic: Dict[str, Dict[int, Any]] = {}
    for item in items:
        name, _, dim = item.rpartition(":")
        try:
            dim = int(dim)
        except ValueError:
            raise SpecError(f"--dynamic {item!r}: expected NAME:DIM, e.g. x:1\nfix: name an input and one of its "
                            f"dims") from None
        if not name.isidentifier():
            raise SpecError(f"--dynamic {item!r}: {name!r} is not an argument name\nfix: pass e.g. --dynamic x:1")
        dynamic.setdefault(name, {})[dim] = fxla.Dim(f"{name}_{dim}" if dim >= 0 else f"{name}_m{-dim}")
    return dynamic or False


def parse_concrete_args(items) -> Dict[str, Any]:
    """``--concrete-args``: each item a JSON object (``'{"use_cache": false}'``) or ``NAME=VALUE`` with VALUE a
    JSON value (``use_cache=false``, ``num_steps=3``, ``mode='"fast"'``; Python's True/False/None spelled so are
    accepted too); later items override earlier ones."""
    python = {"True": True, "False": False, "None": None}
    merged: Dict[str, Any] = {}
    for item in items:
        text = item.strip()
        if text.startswith("{"):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as err:
                raise SpecError(f"bad --concrete-args '{item}': not a JSON object ({err})\nfix: write e.g. "
                                f"'{{\"use_cache\": false}}' or use_cache=false") from None
            merged.update(value)
            continue
        name, eq, raw = text.partition("=")
        if not eq or not name.strip().isidentifier():
            raise SpecError(f"bad --concrete-args '{item}'\nfix: write NAME=VALUE (use_cache=false) or a JSON "
                            f"object ('{{\"use_cache\": false}}')")
        raw = raw.strip()
        if raw in python:
            merged[name.strip()] = python[raw]
            continue
        try:
            merged[name.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            raise SpecError(f"bad --concrete-args '{item}': '{raw}' is not a JSON value\nfix: write true, false, "
                            f"null, a number or a quoted string ({name.strip()}='\"{raw}\"')") from None
    return merged


def load_factory(spec: str, progress: Optional["Progress"] = None):
    """The factory that ``spec`` (``FILE.py:FACTORY`` or ``package.module:FACTORY``) names; importing its module
    is a ``-v`` phase of ``progress``."""
    progress = progress or Progress(False)
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
        with progress.phase(f"import {path}"):
            module_spec.loader.exec_module(module)
    else:
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())      # (as `python -m` does: a module of the current folder)
        with progress.phase(f"import {path}"):
            try:
                module = importlib.import_module(path)
            except ModuleNotFoundError as err:
                if err.name is None or not (path == err.name or path.startswith(err.name + ".")):
                    raise                        # (the model's own import of something missing: its traceback)
                raise SpecError(f"no module named '{err.name}' (from the model spec '{spec}')\nfix: run fxla-dump "
                                f"from the folder that holds it, or give its file: FILE.py:{attr}") from None
    if not hasattr(module, attr):
        raise SpecError(f"'{path}' defines no '{attr}'\nfix: name a function of that module that returns the "
                        f"model (and optionally its example inputs)")
    return getattr(module, attr)


def parse_input(text: str) -> Tuple[Optional[str], Any]:
    """``--input-shape``: ``(keyword, example tensor)`` of ``[NAME=]SHAPE[:DTYPE]`` (``keyword`` None for a
    positional input)."""
    name, eq, rest = text.partition("=")
    if not eq:
        return None, parse_shape(text)
    if not name.isidentifier():
        raise SpecError(f"bad --input-shape '{text}': '{name}' is not an argument name\nfix: write e.g. "
                        f"attention_mask=2x16:i64")
    return name, parse_shape(rest)


def parse_shape(text: str):
    """A random example tensor of ``SHAPE[:DTYPE]`` (``2x16``, ``2x16:f16``; integers are drawn from 0..3,
    valid token ids and masks)."""
    import torch
    shape, _, dtype = text.partition(":")
    try:
        dims = [int(d) for d in shape.split("x")] if shape else []
    except ValueError:
        raise SpecError(f"bad --input-shape '{text}'\nfix: write e.g. 2x3x32x32, 2x16:f16 or 2x16:i64") from None
    dt = getattr(torch, DTYPES.get(dtype or "f32", "?"), None)
    if dt is None:
        raise SpecError(f"unknown dtype '{dtype}' in --input-shape\nfix: one of {', '.join(DTYPES)}")
    if dt.is_floating_point:
        return torch.randn(dims, dtype=dt)
    return torch.randint(0, 4, dims, dtype=dt) if dt != torch.bool else torch.rand(dims) > 0.5


#: the stages, as ``--help`` lists them
STAGE_HELP = ("stages: graph (captured graph), functional (the graph with in-place ops rewritten out of place, what "
              "is lowered), code (regenerated Python), fxla (the fxla dialect), stablehlo (verified StableHLO), hlo "
              "(XLA's optimised HLO of what fxla.compile runs: the StableHLO after the device layout passes; XLA's "
              "tables of source frames left out, each instruction naming its source_file and source_line)")


def add_model_options(p: argparse.ArgumentParser) -> None:
    """The arguments every fxla tool that takes a model shares (fxla-dump, fxla-explain): the ``spec``, its
    example inputs (``--input-shape``), ``--concrete-args`` and ``--device`` (read by :func:`load_model`,
    :func:`parse_concrete_args` and the device resolution)."""
    p.add_argument("spec", help="FILE.py:FACTORY or package.module:FACTORY")
    p.add_argument("--input-shape", action="append", default=[], metavar="[NAME=]SHAPE[:DTYPE]",
                   help="example input, e.g. 2x16, 2x16:f16, 2x16:i64 (token ids), attention_mask=2x16:i64 "
                        "(a keyword input); replaces the factory's example inputs")
    p.add_argument("--concrete-args", action="append", default=[], metavar="NAME=VALUE|JSON",
                   help="arguments fixed while tracing, as fxla.compile's concrete_args: use_cache=false or "
                        "'{\"use_cache\": false}' (VALUE is JSON; repeat the flag for several)")
    p.add_argument("--device", default=None, help="cpu, gpu, tpu (default: JAX's default device)")


def _parser():
    title, examples, spec = (part.replace("``", "") for part in __doc__.split("\n\n", 2))
    wrap = functools.partial(textwrap.fill, width=100)
    p = argparse.ArgumentParser(prog="fxla-dump", description=title,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(["examples:\n" + examples, wrap(STAGE_HELP),
                                                     wrap(" ".join(spec.split()))]))
    add_model_options(p)
    p.add_argument("--stage", choices=STAGES + ("all",), default="all")
    p.add_argument("--concrete-shapes", action="store_true",
                   help="trace for these inputs' shapes, as fxla.compile(model, concrete_shapes=True) does "
                        "(models that branch on sizes or assert shapes: Hugging Face, nanoGPT)")
    p.add_argument("--dynamic", action="append", default=[], metavar="NAME:DIM",
                   help="mark dim DIM of input NAME symbolic, as fxla.compile(model, dynamic={NAME: {DIM: "
                        "fxla.Dim(...)}}) (repeat the flag; one Dim per NAME:DIM): the fxla stage is then the "
                        "polymorphic program (? dims, size ops), followed by it refined to the example inputs' sizes")
    p.add_argument("--debug-locations", action="store_true", help="print MLIR locations (the user's source lines)")
    p.add_argument("--run", action="store_true",
                   help="also run the compiled model and compare every leaf of its output with eager PyTorch's")
    p.add_argument("--format", choices=("text", "svg", "html"), default="text",
                   help="text (default); svg: the captured graph drawn by Graphviz (the default stage then); "
                        "html: one self-contained page of every requested stage (the graph grouped by module, "
                        "IR lines linked to graph nodes and source lines, search)")
    p.add_argument("--print-ir-after-all", action="store_true",
                   help="print the IR after every step fxla.compile runs (to stderr): functionalization, the "
                        "lowering to fxla, each pass of the fxla -> StableHLO pipeline, each device layout pass")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="report each phase and its time (to stderr), from importing torch, JAX, fxla and the "
                        "model's module to the run, and the total (all but Python's start-up and exit)")
    return p


def main(argv=None) -> int:
    started = time.perf_counter()
    args = _parser().parse_args(argv)
    progress = Progress(args.verbose, started)
    try:
        return _dump(args, progress)
    except FxlaError as err:
        print(f"fxla-dump: error: {err}", file=sys.stderr)
        return 1
    finally:
        progress.total()


class Progress:
    """``-v``: one line per phase on stderr, with its wall time."""

    def __init__(self, enabled: bool, started: Optional[float] = None):
        self.enabled = enabled
        self.started = time.perf_counter() if started is None else started

    @contextlib.contextmanager
    def phase(self, what: str):
        """One line when the phase is over (``... failed after`` when it raised): nothing else is printed in
        the middle of a line (``--print-ir-after-all`` writes to the same stderr)."""
        start = time.perf_counter()
        try:
            yield
        except BaseException:
            if self.enabled:
                print(f"[fxla] {what} ... failed after {(time.perf_counter() - start) * 1e3:.1f} ms",
                      file=sys.stderr, flush=True)
            raise
        if self.enabled:
            print(f"[fxla] {what} ... {(time.perf_counter() - start) * 1e3:.1f} ms", file=sys.stderr, flush=True)

    def total(self) -> None:
        """The wall time since fxla-dump's main() started: every phase above (the imports of torch, JAX and fxla
        included) and what lies between them.  Not counted: what comes before main() (Python's start-up and the
        import of this module, which imports no torch: ~0.1 s together) and Python's exit after it, which
        releases JAX's runtime."""
        if self.enabled:
            print(f"[fxla] total {(time.perf_counter() - self.started) * 1e3:.1f} ms (then Python exits, "
                  f"releasing JAX's runtime)", file=sys.stderr, flush=True)

    def observe(self, stage: str, _result, seconds: float) -> None:
        """A pipeline observer (fxla.pipeline.Observer): one line per stage, after it ran."""
        if self.enabled:
            print(f"[fxla] {STAGE_LABELS.get(stage, stage)} ... {seconds * 1e3:.1f} ms", file=sys.stderr,
                  flush=True)


def load_model(args, progress: Progress):
    """``(model, example_args, example_kwargs)`` of the spec's factory (see the module docstring), the
    ``--input-shape`` inputs replacing the factory's; a module is put in eval mode."""
    import torch

    factory = load_factory(args.spec, progress)
    with progress.phase(f"call {args.spec.rpartition(':')[2]}() (model construction)"):
        made = factory()
    model, inputs, kwargs = made, (), {}
    if isinstance(made, tuple) and len(made) in (2, 3) and not isinstance(made[0], torch.Tensor):
        model, inputs = made[0], made[1]
        inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
        if len(made) == 3:
            if not isinstance(made[2], dict):
                raise SpecError(f"{args.spec} returned a 3-tuple whose last item is a {type(made[2]).__name__}, "
                                f"not a dict of keyword inputs\nfix: return (model, example_args, "
                                f"example_kwargs) with example_kwargs a dict")
            kwargs = dict(made[2])
    if args.input_shape:
        given = [parse_input(s) for s in args.input_shape]
        inputs = tuple(t for name, t in given if name is None)
        kwargs = {name: t for name, t in given if name is not None}
    if not inputs and not kwargs:
        raise SpecError("no example inputs\nfix: return (model, example_args) or (model, example_args, "
                        "example_kwargs) from the factory, or pass --input-shape")
    if isinstance(model, torch.nn.Module):
        model.eval()
    return model, inputs, kwargs


#: what ``-v`` calls each stage of the pipeline (fxla.pipeline.STAGES)
STAGE_LABELS = {"prepare": "prepare graph (shape propagation + functionalization)",
                "fxla": "lowering to fxla", "refine": "refining the polymorphic program to the call's sizes",
                "vjp": "differentiation (forward + residuals, backward)",
                "stablehlo": "fxla -> StableHLO (pipeline + MLIR verifier)",
                "layout": "device layout passes (fxla-grouped-conv, fxla-pool-layout, fxla-channels-last, "
                          "fxla-param-layout; "
                          "fxla-full-precision off the CPU)", "compile": "XLA compile"}


def _stage_texts(args, model, inputs, kwargs, wanted, progress: Progress):
    """``(compiled, graph_module, texts)``: ``model`` compiled as ``fxla.compile`` would with the options given,
    the graph a call with these inputs runs, and the text of each ``wanted`` stage (the pipeline run as far as
    they need: ``graph`` and ``code`` need the trace only, ``hlo`` the XLA compile)."""
    import fxla
    from fxla.frontend.errors import TraceError
    from fxla.pipeline import COMPILING, Pipeline
    from fxla.runtime import resolve_device

    concrete_args = parse_concrete_args(args.concrete_args) or None
    with progress.phase("tracing" + (" (concrete shapes)" if args.concrete_shapes else "")):
        try:
            compiled = fxla.compile(model, device=args.device, concrete_shapes=args.concrete_shapes,
                                    concrete_args=concrete_args, dynamic=parse_dynamic(args.dynamic))
            gm, placeholder_args = compiled.trace_for(*inputs, **kwargs)
            # (--concrete-shapes: the trace's own compiled module; with --dynamic its polymorphic programs)
            lowering = compiled if compiled._per_shape is None else compiled._per_shape.module_for(inputs, kwargs)[0]
        except TraceError as err:
            if not args.concrete_shapes:       # (its fix names fxla.compile's options: these are the flags)
                err.add_context("fxla-dump: --concrete-shapes is fxla.compile(model, concrete_shapes=True), and "
                                "--concrete-args use_cache=false is concrete_args={'use_cache': False}")
            raise
    texts = {"graph": str(gm.graph), "code": gm.code}
    if not set(wanted) - {"graph", "code"}:
        return compiled, gm, texts

    def keep_fxla(stage, result, _seconds):      # (the next stage converts the fxla module in place)
        if stage == "fxla":
            texts["fxla"] = result.text(debug_info=args.debug_locations)
        elif stage == "refine":                  # (--dynamic: the polymorphic program, then it refined)
            texts["fxla"] += ("\n// refined to the example inputs' sizes (pipeline stage 'refine'):\n" +
                              result.text(debug_info=args.debug_locations))

    pipeline = Pipeline(observers=[progress.observe, keep_fxla], print_ir_after_all=args.print_ir_after_all)
    with COMPILING:
        if lowering._dynamic is not None:
            lowering._pipeline = pipeline            # (the module lowers through this one: its observers)
            stages = lowering._dynamic.lower(lowering, gm, placeholder_args)
        else:
            stages = pipeline.lower(gm, placeholder_args)
    texts["functional"] = _functional_text(stages.prepared)
    texts["stablehlo"] = stages.stablehlo_debug if args.debug_locations else stages.stablehlo
    polymorphic = _polymorphic_stablehlo(lowering, gm, placeholder_args, args.debug_locations)
    if polymorphic is not None:             # (--dynamic: the polymorphic StableHLO, then it refined)
        texts["stablehlo"] = (polymorphic + "\n// refined to the example inputs' sizes (StableHLO's shape "
                              "refinement):\n" + texts["stablehlo"])
    if "hlo" in wanted:
        device = resolve_device(args.device)
        with COMPILING:          # what fxla.compile does before XLA (same HLO)
            target = pipeline.layout(stages, device.platform)
            pipeline.compile(stages, target, device)
        texts["hlo"] = stages.hlo
    return compiled, gm, texts


def _polymorphic_stablehlo(compiled, gm, args, debug_info: bool):
    """The polymorphic StableHLO the example's sizes were refined from (``--dynamic``), as text; else ``None``."""
    if compiled._dynamic is None:
        return None
    poly, _ = compiled._dynamic._select(compiled, gm, args)
    if poly is None or poly.stablehlo is None:
        return None
    from fxla.dialects.mlir import ir, strict_context
    with strict_context():
        return ir.Module.parse(poly.stablehlo).operation.get_asm(enable_debug_info=debug_info)


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


def _import_stack(progress: Progress) -> None:
    """Import what a dump needs, each part a ``-v`` phase of its own: torch, JAX, then fxla's stages (the MLIR
    bindings, frontend, lowering, runtime).  Run before anything else imports them, so no import time falls
    outside the phases (``fxla-dump`` itself starts without torch: ``import fxla`` is lazy)."""
    with progress.phase("import torch"):
        importlib.import_module("torch")
    with progress.phase("import JAX"):
        importlib.import_module("jax")
    with progress.phase("import fxla (MLIR bindings, frontend, lowering, runtime)"):
        for module in ("fxla.compile", "fxla.pipeline", "fxla.runtime", "fxla.frontend.passes"):
            importlib.import_module(module)


def _dump(args, progress: Progress) -> int:
    wanted = STAGES if args.stage == "all" else (args.stage,)
    if args.format == "svg":
        if args.stage == "all":          # an SVG is a drawing of the graph: no --stage needed
            wanted = ("graph",)
        if wanted != ("graph",):
            raise SpecError("--format svg draws the graph only\nfix: add --stage graph, or drop --format svg")
        if shutil.which("dot") is None:  # (before minutes of tracing)
            raise GraphvizMissingError(
                "--format svg: the Graphviz `dot` program is not installed",
                why="the graph is drawn by running `dot -Tsvg`, and no `dot` is on PATH",
                fix="install Graphviz (apt-get install graphviz, brew install graphviz or conda install graphviz), "
                    "or use --format html or --format text")
    _import_stack(progress)
    from fxla.frontend.errors import PassError
    from fxla.frontend.passes import graph_to_svg

    model, inputs, kwargs = load_model(args, progress)
    if args.format == "html":      # the report links IR lines to graph nodes through the MLIR locations
        args.debug_locations = True
    eager_model = eager_inputs = eager_kwargs = None
    if args.run:
        # eager runs on copies made before anything runs, so a model that changes its state or inputs
        # (self.steps += 1, x += 1) is compared from the same starting point
        with progress.phase("copy the model and inputs (--run's eager reference)"):
            eager_model, eager_inputs, eager_kwargs = copy.deepcopy((model, inputs, kwargs))
    compiled, gm, texts = _stage_texts(args, model, inputs, kwargs, wanted, progress)
    graph = gm.graph
    if args.format == "svg":
        with progress.phase("draw the graph (Graphviz dot)"):
            try:
                svg = graph_to_svg(graph)
            except PassError as err:
                err.where = None         # (graph_to_svg's caller is fxla-dump, not a line of the user's)
                err.fix = "check the Graphviz installation (dot -V), or use --format html or --format text"
                raise
        output = svg
    elif args.format == "html":
        with progress.phase("render the HTML report"):
            from fxla.tools.report import model_name, render
            output = render(texts, wanted, compiled.graph_module, model, title=model_name(model),
                            subtitle=args.spec)
    else:
        output = "\n".join((f"// ===== {stage} =====\n" if len(wanted) > 1 else "") + texts[stage].rstrip("\n")
                           for stage in wanted)
    with progress.phase("write the output"):
        print(output, flush=True)
    if args.run:
        return _run(compiled, (model, inputs, kwargs), (eager_model, eager_inputs, eager_kwargs),
                    args.concrete_args, progress)
    return 0


def _run(compiled, call, eager_call, concrete_args, progress: Progress) -> int:
    """``--run``: the compiled model and eager PyTorch on the same inputs; one line per output leaf (see
    :mod:`fxla.tools.compare`), then the largest difference and the verdict.  Returns the exit status."""
    import torch

    from fxla.tools.compare import compare

    _model, inputs, kwargs = call
    eager_model, eager_inputs, eager_kwargs = eager_call
    with progress.phase("eager run (PyTorch)"):
        with torch.no_grad():       # (with the --concrete-args, which the compiled model has built in)
            expected = eager_model(*eager_inputs, **eager_kwargs, **parse_concrete_args(concrete_args))
    with progress.phase("fxla run (its first call lowers and compiles the signature itself)"):
        got = compiled(*inputs, **kwargs)
    results = compare(got, expected)
    for leaf in results:
        diff = f", max |fxla - eager| = {leaf.diff:.3g}" if leaf.diff is not None else ""
        verdict = "match" if leaf.ok else f"MISMATCH: {leaf.problem}"
        print(f"// run: {leaf.path}: {leaf.what}{diff} ({verdict})")
    diffs = [leaf.diff for leaf in results if leaf.diff is not None]
    ok = all(leaf.ok for leaf in results)
    bad = sum(not leaf.ok for leaf in results)
    print(f"// run: max |fxla - eager| = {max(diffs, default=0.0):.3g} "
          f"({'match' if ok else 'MISMATCH'}: {len(results) - bad} of {len(results)} leaves match)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
