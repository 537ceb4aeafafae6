"""VJP rules of the ``indexing`` family (see :mod:`fxla.lowering.autodiff.registry`)."""
from __future__ import annotations
