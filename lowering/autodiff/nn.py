"""VJP rules of the ``nn`` family (see :mod:`fxla.lowering.autodiff.registry`)."""
from __future__ import annotations
