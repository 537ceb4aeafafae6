"""Lowering stage: graph -> ``fxla`` dialect (rules keyed by torch op objects) -> StableHLO (patterns keyed by
fxla ``OpDef``\\ s).

Public API: :func:`lower_to_fxla`, :func:`lower_to_stablehlo`, :func:`convert_fxla_to_stablehlo`,
:func:`register`, :func:`coverage`, :class:`UnsupportedOpError`, :class:`LoweringError`.
"""
from .errors import LoweringError, UnsupportedOpError
from .registry import RULES, coverage, register
from .to_fxla import FxlaProgram, check_supported, lower_to_fxla
from .to_stablehlo import ConversionError, convert_fxla_to_stablehlo, verify_stablehlo
from .passes import DEFAULT_PIPELINE, PipelineError, lower_to_stablehlo, run_pipeline

__all__ = ["LoweringError", "UnsupportedOpError", "ConversionError", "RULES", "coverage", "register",
           "FxlaProgram", "check_supported", "lower_to_fxla", "lower_to_stablehlo", "convert_fxla_to_stablehlo",
           "verify_stablehlo", "DEFAULT_PIPELINE", "PipelineError", "run_pipeline"]
