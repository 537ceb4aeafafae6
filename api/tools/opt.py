"""``fxla-opt``: parse fxla/StableHLO MLIR, run passes in command-line order, print the result.

    fxla-opt input.mlir --convert-fxla-to-stablehlo --canonicalize
    fxla-opt --split-input-file tests.mlir --verify-fxla

Errors (parse errors, verifier findings, failed conversions) are printed as ``file:line:col: error: …``
diagnostics and the exit status is 1; a traceback means an fxla bug.  Input that is not UTF-8, or that nests
regions/types/attributes past :data:`fxla.dialects.mlir.MAX_NESTING` (MLIR's recursive parser would overflow the
stack), is such a diagnostic too; each input is processed on a thread with a large stack (:func:`process`).
``utils/fuzz_opt.py`` fuzzes this tool against those promises.

fxla ops are read in the dialect's own syntax or MLIR's generic form and printed in the dialect's syntax
(:mod:`fxla.dialects.fxla.syntax`), so the output of ``fxla-opt`` is valid input again; so is what
``--print-ir-after-all`` prints after each pass (the whole module, under ``// -----// IR Dump After <pass>
//----- //``, the pass named as on the command line).  Malformed fxla syntax is reported with the source line, a
caret under the column and the error's ``fix:`` line.
"""
from __future__ import annotations

import argparse
import sys
from typing import List

from fxla.dialects.fxla import VerificationError, verify_module
from fxla.dialects.fxla.syntax import IRSyntaxError, print_module, to_generic
from fxla.dialects.mlir import NestingError, check_nesting, fxla_context, ir, on_parse_stack
from fxla.lowering import LoweringError
from fxla.lowering.passes import FXLA_PASSES, PassFailure, check_pipeline, run_pipeline

from .diagnostics import emit, mlir_error_lines, render

SPLIT_MARKER = "// -----"
MLIR_PASSES = {"canonicalize": "MLIR's canonicalizer", "cse": "common subexpression elimination",
               "symbol-dce": "drop unused private symbols", "inline": "inline calls"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fxla-opt", description=__doc__.split("\n\n")[0].replace("``", ""))
    p.add_argument("input", nargs="?", default="-", help="input file ('-' for stdin)")
    p.add_argument("-o", dest="output", default="-", help="output file")
    p.add_argument("--split-input-file", action="store_true",
                   help=f"process each chunk between '{SPLIT_MARKER}' lines separately")
    p.add_argument("--mlir-print-debuginfo", action="store_true", help="print locations")
    p.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass (stderr)")
    p.add_argument("--pass-pipeline", default=None,
                   help="comma-separated passes, e.g. 'convert-fxla-to-stablehlo,canonicalize'")
    for name, (_, doc) in FXLA_PASSES.items():
        p.add_argument(f"--{name}", dest="passes", action="append_const", const=name, help=doc)
    for name, doc in MLIR_PASSES.items():
        p.add_argument(f"--{name}", dest="passes", action="append_const", const=name, help=doc)
    return p


def _chunks(text: str, split: bool) -> List[str]:
    if not split:
        return [text]
    chunks, current, start = [], [], 0
    for i, line in enumerate(text.splitlines(keepends=True)):
        if line.strip() == SPLIT_MARKER:
            chunks.append("\n" * start + "".join(current))   # pad so locations keep the file's line numbers
            current, start = [], i + 1
        else:
            current.append(line)
    chunks.append("\n" * start + "".join(current))
    return chunks


def decode_utf8(data: bytes, filename: str):
    """``(text, None)``, or ``(None, diagnostic)`` at the first byte that is not UTF-8 (MLIR text is UTF-8)."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        col = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        return None, (f"{filename}:{line}:{col}: error: byte 0x{data[err.start]:02x} is not valid UTF-8 "
                      f"({err.reason}); MLIR text must be UTF-8")


def split_pipeline(text: str) -> List[str]:
    """Split a pass pipeline at top-level commas: ``a,func.func(b,c)`` -> ``['a', 'func.func(b,c)']``."""
    parts, depth, current = [], 0, []
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _printed(module: ir.Module, filename: str, debuginfo: bool) -> str:
    text = print_module(module, debug_info=debuginfo)          # fxla ops in the dialect's own syntax
    # parsed text carries the buffer name "-"; show the input's name as mlir-opt does
    return text.replace('loc("-":', f'loc({_quoted(filename)}:') if debuginfo else text


def _quoted(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def process(text: str, passes: List[str], filename: str, debuginfo: bool, print_after_all: bool):
    """Returns (printed module or None, diagnostic lines).

    Call it on the parse stack (:func:`fxla.dialects.mlir.on_parse_stack`, as :func:`main` does): MLIR's
    parser, verifier, printer and passes (the inliner first) recurse per nesting level, and even the nesting
    :data:`~fxla.dialects.mlir.MAX_NESTING` allows (500 regions) overflows an ordinary 8 MiB stack in some."""
    try:
        check_nesting(text)
    except NestingError as err:
        return None, [f"{filename}:{err.line}:{err.col}: error: {err}"]
    context = fxla_context()
    context.enable_multithreading(False)    # passes on this thread's stack, not the pool's small ones
    with context:
        try:
            module = ir.Module.parse(to_generic(text))      # pretty fxla ops -> generic form; the rest as is
        except IRSyntaxError as err:
            return None, syntax_error_lines(err, text, filename)
        except ir.MLIRError as err:
            return None, mlir_error_lines(err, filename)
        except (ValueError, RuntimeError, MemoryError, OverflowError) as err:
            # a C++ exception inside a dialect's parser, e.g. StableHLO's dim_numbers with a 2**63 dimension
            # (SmallVector's length_error): MLIR gives no location
            return None, [f"{filename}: error: MLIR's parser failed on the input ({type(err).__name__}: {err})"]
        try:
            if passes and passes[0] == "convert-polymorphic-fxla-to-stablehlo":
                # (fxla's verifier checks static programs only; the conversion's output is checked by MLIR's)
                module.operation.verify()
            else:
                verify_module(module)
            opaque = [op for op in _unregistered_ops(module, context) if len(op.regions)] if passes else []
            if opaque:
                # MLIR's passes (the inliner at least) dereference the missing dialect of such an op: SIGSEGV
                return None, [render(op.location, f"'{op.name}' op is not in a registered dialect and has "
                                     "regions; fxla-opt runs no passes over such ops", filename) for op in opaque]
            run_pipeline(module, passes, print_ir_after_all=print_after_all)
        except PassFailure as err:
            cause = err.cause
            found = getattr(cause, "diagnostics", None)
            if found:
                return None, [render(d.location, f"'{d.op_name}' op {d.message}", filename) for d in found]
            return None, [f"{filename}: error: {cause}"]
        except VerificationError as err:
            return None, [render(d.location, f"'{d.op_name}' op {d.message}", filename) for d in err.diagnostics]
        except ir.MLIRError as err:
            return None, mlir_error_lines(err, filename)
        except LoweringError as err:
            return None, [f"{filename}: error: {err}"]
        unregistered = _unregistered_ops(module, context)
        if passes and unregistered and not any(op.name.startswith("fxla.") for op in unregistered):
            # fully converted from fxla: what remains must be ops MLIR knows (and verifies)
            return None, [render(op.location, f"'{op.name}' op is not in a registered dialect (the output of "
                                 "the pipeline must be pure StableHLO/func)", filename) for op in unregistered]
        return _printed(module, filename, debuginfo), []


def syntax_error_lines(err: IRSyntaxError, text: str, filename: str) -> List[str]:
    """The diagnostic of malformed pretty fxla text: ``file:line:col: error: <what>``, the source line with a
    caret under the column (as mlir-opt shows its parse errors), then the error's ``why`` and ``fix:`` lines."""
    lines = text.split("\n")
    source = lines[err.line - 1] if 0 < err.line <= len(lines) else ""
    out = [f"{filename}:{err.line}:{err.col}: error: {err.message}"]
    if source.strip():
        out += [source, "".join("\t" if c == "\t" else " " for c in source[:err.col - 1]) + "^"]
    if err.why:
        out.append(err.why)
    if err.fix:
        out.append(f"fix: {err.fix}")
    return out


def _unregistered_ops(module: ir.Module, context: ir.Context) -> List[ir.Operation]:
    found: List[ir.Operation] = []

    def visit(op):
        if not context.is_registered_operation(op.name):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    passes = list(args.passes or [])
    if args.pass_pipeline:
        passes += split_pipeline(args.pass_pipeline)
    try:
        check_pipeline(passes)
    except LoweringError as err:
        print(f"fxla-opt: error: {err}", file=sys.stderr)
        return 1
    try:
        if args.input == "-":
            stdin = getattr(sys.stdin, "buffer", None)      # a replaced sys.stdin may be text-only
            data = stdin.read() if stdin is not None else sys.stdin.read().encode("utf-8", "surrogatepass")
        else:
            with open(args.input, "rb") as fh:
                data = fh.read()
    except OSError as err:
        print(f"fxla-opt: error: cannot read '{args.input}': {err.strerror}", file=sys.stderr)
        return 1
    filename = "<stdin>" if args.input == "-" else args.input
    text, problem = decode_utf8(data, filename)
    if problem:
        emit([problem])
        return 1
    outputs, failed = [], False
    for chunk in _chunks(text, args.split_input_file):
        printed, diags = on_parse_stack(process, chunk, passes, filename, args.mlir_print_debuginfo,
                                        args.print_ir_after_all)
        emit(diags)
        failed |= bool(diags)
        if printed is not None:
            outputs.append(printed.rstrip("\n"))
    result = ("\n" + SPLIT_MARKER + "\n").join(outputs) + ("\n" if outputs else "")
    if args.output == "-":
        sys.stdout.write(result)
    else:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(result)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
