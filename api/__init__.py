"""fxla: capture PyTorch programs with an FX-style tracer, lower them through the ``fxla`` MLIR dialect to
StableHLO, and run them with PJRT.

    fast = fxla.compile(model)      # or @fxla.compile on a function
    y = fast(x)                     # matches model(x)

Stages: :mod:`fxla.frontend` -> :mod:`fxla.lowering` (with :mod:`fxla.dialects`) -> :mod:`fxla.runtime`.

``import fxla`` is cheap: each public name is imported from its stage on first use (PEP 562), so tools that
only need MLIR (``fxla-opt``, ``import fxla.dialects``) never import torch.
"""
import importlib
import sys
import types

from fxla.errors import FxlaError
from fxla.base import logs as _logs  # noqa: F401  (a NullHandler on the "fxla" logger: docs/debugging.md)

__version__ = "0.1.0"

#: public name -> the module it comes from (imported on first access)
_LAZY = {
    "compile": "fxla.compile", "CompiledModule": "fxla.compile", "Stages": "fxla.compile",
    "OptionError": "fxla.compile", "SignatureError": "fxla.compile", "InputMutationError": "fxla.compile",
    "ArgumentError": "fxla.compile",
    "GradientError": "fxla.gradients", "AutocastError": "fxla.frontend",
    "compile_step": "fxla.train_step", "TrainStep": "fxla.train_step", "StepError": "fxla.train_step",
    "NotDifferentiableError": "fxla.lowering.autodiff",
    "symbolic_trace": "fxla.frontend", "wrap": "fxla.frontend", "Tracer": "fxla.frontend",
    "GraphModule": "fxla.frontend", "TraceError": "fxla.frontend", "SpecializationError": "fxla.frontend",
    "LoweringError": "fxla.lowering", "UnsupportedOpError": "fxla.lowering",
    "export": "fxla.export", "load": "fxla.export", "LoadedModule": "fxla.export",
    "explain": "fxla.explain", "Explanation": "fxla.explain",
    "Dim": "fxla.frontend.symbolic", "ShapeConstraintError": "fxla.frontend.symbolic",
    "DimError": "fxla.frontend.symbolic",
    "IndexOutOfRangeError": "fxla.lowering.index_bounds", "bucketed": "fxla.buckets", "BucketError": "fxla.buckets",
    "ArtifactError": "fxla.runtime", "Mesh": "fxla.runtime", "set_cache_dir": "fxla.runtime",
    "ProcessMismatchError": "fxla.distributed",
}
#: the stage packages, reachable as attributes (``fxla.frontend.Graph``) after a plain ``import fxla``
_SUBPACKAGES = ("frontend", "lowering", "dialects", "runtime")
#: public modules reachable as attributes too (``fxla.distributed.initialize``)
_MODULES = ("distributed",)

__all__ = ["compile", "CompiledModule", "Stages", "symbolic_trace", "wrap", "Tracer", "GraphModule",
           "FxlaError", "TraceError", "LoweringError", "UnsupportedOpError",
           "export", "load", "LoadedModule", "ArtifactError", "Mesh", "set_cache_dir",
           "OptionError", "SignatureError", "InputMutationError", "ArgumentError", "SpecializationError",
           "GradientError", "AutocastError", "compile_step", "TrainStep", "StepError", "NotDifferentiableError",
           "explain", "Explanation", "Dim", "ShapeConstraintError", "IndexOutOfRangeError", "bucketed",
           "BucketError", "ProcessMismatchError", "DimError"]


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _SUBPACKAGES or name in _MODULES:
        value = importlib.import_module(f"fxla.{name}")
    else:
        raise AttributeError(f"module 'fxla' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__) | set(_SUBPACKAGES) | set(_MODULES))


class _Package(types.ModuleType):
    """``fxla.compile``, ``fxla.export`` and ``fxla.explain`` are functions that live in submodules of the same
    name.  Importing such a submodule (``from fxla.compile import CompiledModule``) makes Python bind it on this
    package; keep the function there instead, as an eager ``from fxla.compile import compile`` always did."""

    def __setattr__(self, name, value):
        if name in ("compile", "export", "explain") and isinstance(value, types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

if "torch" in sys.modules:
    # nn.Parameter.data notes the tensors it hands out (fxla.weights: a write through a kept one is seen), which
    # must begin before a training loop keeps any; without torch loaded, at the first compile
    importlib.import_module("fxla.weights")
