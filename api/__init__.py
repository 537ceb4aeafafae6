"""fxla: capture PyTorch programs with an FX-style tracer, lower them through the ``fxla`` MLIR dialect to
StableHLO, and run them with PJRT.

    fast = fxla.compile(model)      # or @fxla.compile on a function
    y = fast(x)                     # matches model(x)

Stages: :mod:`fxla.frontend` -> :mod:`fxla.lowering` (with :mod:`fxla.dialects`) -> :mod:`fxla.runtime`.
"""
from fxla.errors import FxlaError
from fxla.frontend import GraphModule, Tracer, TraceError, symbolic_trace, wrap
from fxla.lowering import LoweringError, UnsupportedOpError
from fxla.compile import CompiledModule, Stages, compile

__all__ = ["compile", "CompiledModule", "Stages", "symbolic_trace", "wrap", "Tracer", "GraphModule",
           "FxlaError", "TraceError", "LoweringError", "UnsupportedOpError"]
__version__ = "0.1.0"
from fxla.export import LoadedModule, export, load
from fxla.runtime import ArtifactError, Mesh, set_cache_dir
__all__ += ["export", "load", "LoadedModule", "ArtifactError", "Mesh", "set_cache_dir"]
from fxla.compile import OptionError, SignatureError
__all__ += ["OptionError", "SignatureError"]
