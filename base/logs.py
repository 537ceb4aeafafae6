"""fxla's loggers: a standard :mod:`logging` hierarchy under ``fxla`` (docs/debugging.md, "Logging").

=================  =======  ===================================================================================
logger             level    records
=================  =======  ===================================================================================
``fxla.compile``   INFO     every compiled input signature of a compiled module: the new signature, why it
                            compiled (first call, which inputs changed from the previous signature and how, a
                            signature dropped from the in-memory cache, another mode), each phase's seconds
``fxla.phases``    DEBUG    each phase as it ends, with its wall time: trace, prepare (shape propagation and
                            functionalization), fxla (lowering and fxla's verifier), vjp, stablehlo (conversion
                            and MLIR's verifier), layout (device passes), compile (XLA, or the on-disk cache)
``fxla.cache``     DEBUG    on-disk cache hits, misses and writes (the entry's file), in-memory hits of the
                            general call path; INFO: a signature dropped from a full in-memory cache
``fxla.dynamo``    INFO     each graph TorchDynamo hands ``torch.compile(backend="fxla")``: its number, dynamo's
                            compile id, node count, placeholders with their sizes and symbols
=================  =======  ===================================================================================

Nothing is printed unless the application configures logging: ``fxla`` carries a :class:`logging.NullHandler`
and no level of its own (``logging.basicConfig(level=logging.INFO)`` or
``logging.getLogger("fxla.compile").setLevel(logging.INFO)`` plus a handler turns records on).  Every record is
guarded by ``isEnabledFor``, so a disabled logger costs no formatting.  This module imports only the standard
library (any stage may use it).
"""
from __future__ import annotations

import logging

__all__ = ["ROOT", "COMPILE", "PHASES", "CACHE", "DYNAMO"]

#: the parent of every fxla logger (a NullHandler: no output unless the application configures logging)
ROOT = logging.getLogger("fxla")
if not any(isinstance(h, logging.NullHandler) for h in ROOT.handlers):
    ROOT.addHandler(logging.NullHandler())

#: compiled input signatures and why each compiled (INFO)
COMPILE = logging.getLogger("fxla.compile")
#: each phase of tracing, lowering and compiling, with its wall time (DEBUG)
PHASES = logging.getLogger("fxla.phases")
#: on-disk and in-memory cache hits, misses, writes and drops
CACHE = logging.getLogger("fxla.cache")
#: the graphs TorchDynamo hands the torch.compile backend (INFO)
DYNAMO = logging.getLogger("fxla.dynamo")
