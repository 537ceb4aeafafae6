"""Lowering stage: graph -> ``fxla`` dialect (rules keyed by torch op objects) -> StableHLO (patterns keyed by
fxla ``OpDef``\\ s).

Public API: :func:`lower_to_fxla`, :func:`lower_to_stablehlo`, :func:`convert_fxla_to_stablehlo`,
:func:`register`, :func:`coverage`, :class:`UnsupportedOpError`, :class:`LoweringError`.

The fxla -> StableHLO half (:mod:`.to_stablehlo`, :mod:`.passes`) needs only MLIR and is imported with the
package; the graph -> fxla half (rule table, :func:`lower_to_fxla`) needs torch and is imported on first use
of one of its names (PEP 562), so ``fxla-opt`` does not import torch.
"""
import importlib

from .errors import LoweringError, UnsupportedOpError
from .to_stablehlo import ConversionError, convert_fxla_to_stablehlo, verify_stablehlo
from .passes import DEFAULT_PIPELINE, PassFailure, PipelineError, lower_to_stablehlo, run_pipeline

#: names of the torch half -> their module; any of them imports :mod:`.to_fxla` first (which fills ``RULES``)
_LAZY = {"RULES": "registry", "coverage": "registry", "register": "registry",
         "FxlaProgram": "program", "ResultLayout": "program", "check_supported": "to_fxla",
         "lower_to_fxla": "to_fxla",
         "LoweringContext": "context"}

__all__ = ["LoweringError", "UnsupportedOpError", "ConversionError", "RULES", "coverage", "register",
           "FxlaProgram", "ResultLayout", "check_supported", "lower_to_fxla", "lower_to_stablehlo",
           "convert_fxla_to_stablehlo",
           "verify_stablehlo", "DEFAULT_PIPELINE", "PipelineError", "PassFailure", "run_pipeline", "LoweringContext"]


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'fxla.lowering' has no attribute {name!r}")
    importlib.import_module(".to_fxla", __name__)       # the rules, so RULES is complete
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
