"""Named passes over fxla/StableHLO modules, composable into one MLIR pass pipeline.

fxla's own passes are Python callables registered with MLIR's ``PassManager`` (so they interleave with
MLIR's built-in passes such as ``canonicalize`` and ``cse``); any other name is handed to MLIR's pass registry.
"""
from __future__ import annotations

import hashlib
import io
import os
import sys
import tempfile
from typing import Callable, Dict, List, Optional, Sequence

from fxla.base.suggest import did_you_mean
from fxla.dialects.fxla import VerificationError, verify_module
from fxla.dialects.fxla.opdef import type_cache
from fxla.dialects.fxla.syntax import print_module
from fxla.dialects.mlir import fxla_context, ir, passmanager, register_stablehlo_passes

from .index_bounds import check_index_bounds
from .errors import LoweringError
from .channels_last import channels_last_pass
from .fold import dead_code_elimination, fold_constants
from .grouped_conv import block_diagonal_conv_pass, grouped_conv_pass
from .param_layout import param_layout_pass, permute_trailing_params
from .pool_layout import pool_layout_pass
from .precision import full_precision_pass
from .to_stablehlo import convert_fxla_to_stablehlo, convert_polymorphic, legalize_and_clean, verify_stablehlo


def _vjp(root: ir.Operation) -> None:
    from .autodiff.transform import vjp_pass      # (imported when used: autodiff reads torch's dtypes)
    vjp_pass(root)


def _convert(root: ir.Operation) -> None:
    convert_fxla_to_stablehlo(root)
    legalize_and_clean(root, "func.func(chlo-legalize-to-stablehlo)")


def _convert_polymorphic(root: ir.Operation) -> None:
    convert_polymorphic(root)
    # (CHLO's dynamic-shape legalisation computes shapes with the `shape` dialect: written as StableHLO too)
    legalize_and_clean(root, "func.func(chlo-legalize-to-stablehlo),func.func(shape-legalize-to-stablehlo)")


#: fxla's passes: pipeline name -> (function on the module, one-line description)
FXLA_PASSES: Dict[str, tuple] = {
    "convert-fxla-to-stablehlo": (_convert, "lower every fxla op to StableHLO (CHLO legalised too)"),
    "convert-polymorphic-fxla-to-stablehlo": (
        _convert_polymorphic, "lower a polymorphic fxla program (? dims, size operands) to polymorphic StableHLO: "
                              "? dims kept, sizes as get_dimension_size arithmetic, StableHLO's dynamic ops"),
    "verify-fxla": (verify_module, "check every fxla op against the op table"),
    "fxla-vjp": (_vjp, "differentiate @main (reverse mode) with respect to every floating-point argument: "
                 "@forward returns its results and the residuals, @backward maps (residuals, cotangents, "
                 "inputs, parameters) to the gradients"),
    "fxla-fold-constants": (fold_constants, "evaluate fxla ops whose operands are all fxla.constant (exact "
                            "arithmetic, comparisons, where, reshape/permute/expand, convert) into constants"),
    "fxla-dce": (dead_code_elimination, "erase fxla ops whose results are unused"),
    "fxla-check-index-bounds": (check_index_bounds, "refuse an index_select/gather/scatter whose indices the "
                                "program determines (arange, constants) and that leave the indexed dim (XLA would "
                                "clamp them; fxla.compile runs it before every conversion)"),
    "fxla-grouped-conv": (grouped_conv_pass, "write grouped and depthwise stablehlo.convolutions as a sum over "
                          "their kernel taps of strided slices times weights (XLA CPU's grouped convolution is "
                          "slow; fxla.compile applies it where its cost model says it pays)"),
    "fxla-block-diagonal-conv": (block_diagonal_conv_pass, "write grouped stablehlo.convolutions with several "
                                 "channels per group as one dense convolution of a block-diagonal kernel, behind a "
                                 "test that the input is finite (fxla.compile applies it through fxla-grouped-conv's "
                                 "cost model)"),
    "fxla-full-precision": (full_precision_pass, "set precision_config = [HIGHEST, HIGHEST] on float32/float64 "
                            "dots and convolutions (accelerators compute them in TF32 or bfloat16 otherwise; "
                            "fxla.compile runs it for every device but the CPU)"),
    "fxla-pool-layout": (pool_layout_pass, "write the stablehlo.reduce_windows that pool a convolution's "
                         "[N, C, spatial...] result channels-last (between transposes), XLA CPU's layout"),
    "fxla-channels-last": (channels_last_pass, "sink the stablehlo.transposes that put channels-last values back "
                           "in [N, C, spatial...] order into the elementwise ops, pools, reductions and "
                           "convolutions that use them (XLA CPU fuses such a transpose into a strided loop)"),
    "fxla-param-layout": (param_layout_pass, "store @main's fxla.param arguments in the layout their dots "
                          "([in, out]) or convolutions (HWIO) want; records fxla.layout on each permuted argument"),
}


class PassFailure(LoweringError):
    """A pass of the pipeline failed; ``cause`` is the fxla error it raised (diagnostics inside)."""

    def __init__(self, pass_name: str, cause: Exception):
        self.pass_name, self.cause = pass_name, cause
        super().__init__(f"pass '{pass_name}' failed:\n{cause}")


def _python_pass(name: str, fn: Callable, failures: List[Exception]):
    def run(op, pass_):
        try:
            fn(op)
        except (LoweringError, VerificationError) as err:
            failures.append(PassFailure(name, err))
            pass_.signal_pass_failure()
    return run


def _add_passes(pm, names: Sequence[str], failures: List[Exception]) -> None:
    for name in names:
        if name in FXLA_PASSES:
            fn, _ = FXLA_PASSES[name]
            pm.add(_python_pass(name, fn, failures), name=name, argument=name)
            continue
        try:
            pm.add(name)
        except (ValueError, ir.MLIRError) as err:
            why = (did_you_mean(name, list(FXLA_PASSES) + list(COMMON_MLIR_PASSES))
                   or ": " + str(err).strip().splitlines()[0].rpartition("error: ")[2])
            raise LoweringError(f"unknown pass '{name}'{why}\nfix: use one of {', '.join(FXLA_PASSES)} or an "
                                f"MLIR pass such as canonicalize, cse, func.func(canonicalize)") from None


#: MLIR passes that fxla pipelines use, offered as "did you mean" for a misspelt pass name
COMMON_MLIR_PASSES = ("canonicalize", "cse", "symbol-dce", "inline", "sccp", "loop-invariant-code-motion")


def check_pipeline(names: Sequence[str]) -> None:
    """Raise :class:`LoweringError` if any pass name is unknown (before any input is read)."""
    register_stablehlo_passes()
    with fxla_context():
        _add_passes(passmanager.PassManager("builtin.module"), names, [])


def print_ir_after(name: str, text: str) -> None:
    """Print ``text``, the IR after the pass or step ``name``, to stderr under MLIR's banner
    ``// -----// IR Dump After <name> //----- //`` (``--print-ir-after-all``)."""
    print(f"// -----// IR Dump After {name} //----- //\n{text.rstrip()}\n", file=sys.stderr, flush=True)


def run_pipeline(module: ir.Module, names: Sequence[str], *, print_ir_after_all: bool = False) -> None:
    """Run ``names`` (fxla passes or MLIR pass-pipeline elements, e.g. ``canonicalize``) in order.

    ``print_ir_after_all`` runs them one pipeline element at a time and prints the whole module after each
    (:func:`print_ir_after`, the banner naming the element as written: ``canonicalize``, ``func.func(cse)``),
    fxla ops in the dialect's own syntax (:func:`fxla.dialects.fxla.syntax.print_module`), so the text is
    ``fxla-opt`` input again; MLIR's own IR printing would show them in generic form."""
    register_stablehlo_passes()
    failures: List[Exception] = []
    with module.context, type_cache():
        for group in ([[name] for name in names] if print_ir_after_all else [names]):
            pm = passmanager.PassManager("builtin.module")
            _add_passes(pm, group, failures)
            try:
                pm.run(module.operation)
            except ir.MLIRError:
                if failures:
                    raise failures[0] from None
                raise
            if failures:
                raise failures[0]
            if print_ir_after_all:
                print_ir_after(group[0], print_module(module))


#: What fxla.compile runs on every fxla module (then a strict re-parse + MLIR verification).
DEFAULT_PIPELINE = ("verify-fxla", "fxla-fold-constants", "fxla-dce", "convert-fxla-to-stablehlo", "canonicalize",
                    "cse")


def device_layouts(module, param_names: Sequence[str], platform: str,
                   after_pass: Optional[Callable[[str], None]] = None, small_dots: bool = True,
                   fixed: Sequence[str] = ()):
    """The layout passes ``fxla.compile`` runs (in place) on the verified StableHLO of a single-device program
    before XLA compiles it, and ``fxla-dump``'s hlo stage with it: on ``platform == "cpu"`` ``fxla-grouped-conv``
    (where its cost model says it pays), ``fxla-pool-layout`` and ``fxla-channels-last``, on any other platform
    ``fxla-full-precision``; then ``fxla-param-layout`` on the trailing parameters ``param_names`` (but those in
    ``fixed``, which keep their layout).  ``after_pass(name)`` is called after each (``--print-ir-after-all``).
    ``small_dots``: XLA will run the program's dots on YNNPACK (its products are small,
    :func:`fxla.runtime.executable.forward_xla_options`), where ``fxla-grouped-conv`` also turns dense convolutions
    of few output positions into im2col.  Returns ``(changed, layouts)``: whether the module changed, and
    ``{parameter: permutation}`` for the parameters stored permuted."""
    report = after_pass or (lambda name: None)
    if platform == "cpu":
        rewritten = grouped_conv_pass(module, cost_model=True, small_dots=small_dots)
        report("fxla-grouped-conv")
        rewritten += pool_layout_pass(module)
        report("fxla-pool-layout")
        rewritten += channels_last_pass(module)
        report("fxla-channels-last")
    else:
        rewritten = full_precision_pass(module)
        report("fxla-full-precision")
    layouts = permute_trailing_params(module, param_names, fixed)
    report("fxla-param-layout")
    return bool(rewritten or layouts), layouts


class PipelineError(LoweringError):
    """The lowering pipeline failed.  The IR it failed on was written to ``reproducer``; ``command`` re-runs it."""

    def __init__(self, cause: Exception, reproducer: str, command: str):
        self.cause, self.reproducer, self.command = cause, reproducer, command
        super().__init__(f"the fxla -> StableHLO pipeline failed:\n{cause}\n"
                         f"the fxla IR it failed on was written to {reproducer}\n"
                         f"reproduce with: {command}\n"
                         "fix: this is an fxla bug unless the IR was written by hand; report it with that file")


def _write_reproducer(text: str, directory: Optional[str]) -> str:
    directory = directory or tempfile.gettempdir()
    os.makedirs(directory, exist_ok=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = os.path.join(directory, f"fxla-reproducer-{digest}.mlir")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


#: What turns a polymorphic fxla program into polymorphic StableHLO (then a strict re-parse + MLIR verification).
POLYMORPHIC_PIPELINE = ("convert-polymorphic-fxla-to-stablehlo", "canonicalize", "cse")


def lower_polymorphic_to_stablehlo(module: ir.Module) -> ir.Module:
    """Polymorphic StableHLO of the polymorphic fxla ``module`` (which is left unchanged): :data:`POLYMORPHIC_PIPELINE`
    on a copy, re-parsed and verified in a strict context.  Raises :class:`LoweringError` (or MLIR's error) where
    an op has no polymorphic StableHLO form; the caller decides what to do without one."""
    copy = module.operation.clone()
    try:
        run_pipeline(copy, POLYMORPHIC_PIPELINE)
        buffer = io.BytesIO()
        copy.write_bytecode(buffer)
        return verify_stablehlo(buffer.getvalue())
    finally:
        copy.erase()


def lower_to_stablehlo(module: ir.Module, *, print_ir_after_all: bool = False,
                       reproducer_dir: Optional[str] = None) -> ir.Module:
    """Run :data:`DEFAULT_PIPELINE` on an fxla module (in place) and return the StableHLO re-parsed and
    verified in a strict context (source locations kept).

    On failure the input IR is written to ``reproducer_dir`` (default: the temp dir), fxla ops in the
    dialect's own syntax and with source locations, and a :class:`PipelineError` names the file and the exact
    ``fxla-opt`` command that reproduces it.  ``print_ir_after_all`` prints the IR after every pass to stderr
    (:func:`run_pipeline`).
    """
    check_index_bounds(module)          # (an index known to be out of range: eager's IndexError, not XLA's clamp)
    snapshot = module.operation.clone()
    try:
        run_pipeline(module, DEFAULT_PIPELINE, print_ir_after_all=print_ir_after_all)
        # the strict re-parse goes through MLIR bytecode: the same module (locations included) as printing and
        # parsing the text, at about a third of the cost
        buffer = io.BytesIO()
        module.operation.write_bytecode(buffer)
        return verify_stablehlo(buffer.getvalue())
    except (LoweringError, VerificationError, ir.MLIRError) as err:
        path = _write_reproducer(print_module(snapshot, debug_info=True), reproducer_dir)
        command = f"fxla-opt {path} --mlir-print-debuginfo --pass-pipeline={','.join(DEFAULT_PIPELINE)}"
        raise PipelineError(err, path, command) from err
    finally:
        snapshot.erase()
