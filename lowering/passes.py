"""Named passes over fxla/StableHLO modules, composable into one MLIR pass pipeline.

fxla's own passes are Python callables registered with MLIR's ``PassManager`` (so they interleave with
MLIR's built-in passes such as ``canonicalize`` and ``cse``); any other name is handed to MLIR's pass registry.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Sequence

from fxla.dialects.fxla import VerificationError, verify_module
from fxla.dialects.mlir import fxla_context, ir, passmanager, register_stablehlo_passes

from .errors import LoweringError
from .to_stablehlo import convert_fxla_to_stablehlo, legalize_and_clean


def _convert(root: ir.Operation) -> None:
    convert_fxla_to_stablehlo(root)
    legalize_and_clean(root, "func.func(chlo-legalize-to-stablehlo)")


#: fxla's passes: pipeline name -> (function on the module, one-line description)
FXLA_PASSES: Dict[str, tuple] = {
    "convert-fxla-to-stablehlo": (_convert, "lower every fxla op to StableHLO (CHLO legalised too)"),
    "verify-fxla": (verify_module, "check every fxla op against the op table"),
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
            raise LoweringError(f"unknown pass '{name}': {err}\nfix: use one of {', '.join(FXLA_PASSES)} or an "
                                f"MLIR pass such as canonicalize, cse, func.func(canonicalize)") from None


def check_pipeline(names: Sequence[str]) -> None:
    """Raise :class:`LoweringError` if any pass name is unknown (before any input is read)."""
    register_stablehlo_passes()
    with fxla_context():
        _add_passes(passmanager.PassManager("builtin.module"), names, [])


def run_pipeline(module: ir.Module, names: Sequence[str], *, print_ir_after_all: bool = False) -> None:
    """Run ``names`` (fxla passes or MLIR pass-pipeline elements, e.g. ``canonicalize``) in order."""
    register_stablehlo_passes()
    failures: List[Exception] = []
    with module.context:
        pm = passmanager.PassManager("builtin.module")
        _add_passes(pm, names, failures)
        if print_ir_after_all:
            pm.enable_ir_printing(print_after_all=True)
        try:
            pm.run(module.operation)
        except ir.MLIRError as err:
            if failures:
                raise failures[0] from None
            raise
    if failures:
        raise failures[0]
