"""VJP rules of the ``scan`` family (see :mod:`fxla.lowering.autodiff.registry`)."""
from __future__ import annotations
