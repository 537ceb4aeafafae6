"""``fxla-explain``: report everything that stands between a model and compiling, as a table.

    fxla-explain examples/models.py:mlp
    fxla-explain mypkg.models:make_model --input-shape 1x3x32x32 --compile
    fxla-explain hf.py:gpt2 --input-shape 1x16:i64 --concrete-args use_cache=false
    fxla-explain mypkg.models:make_model --json > report.json

SPEC and the example inputs are given as to fxla-dump: ``path/to/file.py:factory`` or ``package.module:factory``,
a factory called with no arguments that returns a model/function, ``(model, example_args)`` or ``(model,
example_args, example_kwargs)``; ``--input-shape`` gives or replaces the example inputs (``2x16``, ``2x16:f16``,
``2x16:i64`` for token ids, ``attention_mask=2x16:i64`` for a keyword input; repeat it for several inputs).  The
report is fxla.explain's (docs/tutorial.md, "Explain what stands between a model and compiling"): untraceable
lines and whether concrete shapes get past them, data-dependent shapes, unsupported ops, in-place mutations
fxla cannot rewrite, exceptions the model's own code raises (model error), what recompiles and why, and the
compile time (measured or estimated); the traceback of an internal error (a bug in fxla) goes to stderr, to
report.  Exit status: 0 when the model compiles, 1 when problems block it, 2 when the spec or the arguments
are wrong.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import traceback

from fxla.errors import FxlaError
from fxla.tools.dump import Progress, add_model_options, load_model, parse_concrete_args


def _parser():
    p = argparse.ArgumentParser(prog="fxla-explain", description=__doc__.split("\n\n")[0].replace("``", ""),
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 2)[2].replace("``", ""))
    add_model_options(p)           # (spec, --input-shape, --concrete-args, --device: as fxla-dump's)
    p.add_argument("--compile", action="store_true",
                   help="when nothing blocks, also compile with XLA and report the real compile time (otherwise "
                        "the lowering is timed and XLA's share estimated)")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    p.add_argument("--width", type=int, default=None,
                   help="width of the table in columns (default: the terminal's, at least 100)")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        report = _explain(args)
    except FxlaError as err:
        print(f"fxla-explain: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        width = args.width or max(shutil.get_terminal_size((120, 24)).columns, 100)
        print(report.table(width))
    for problem in report.of_kind("internal error"):        # (what a bug report needs)
        print(f"fxla-explain: internal error at {problem.location}, the traceback to report:", file=sys.stderr)
        print("".join(traceback.format_exception(problem.error)).rstrip(), file=sys.stderr)
    return 0 if report.compiles else 1


def _explain(args):
    from fxla.explain import explain

    concrete_args = parse_concrete_args(args.concrete_args) or None
    model, inputs, kwargs = load_model(args, Progress(False))
    return explain(model, *inputs, compile=args.compile, device=args.device, concrete_args=concrete_args,
                   **kwargs)


if __name__ == "__main__":
    sys.exit(main())
