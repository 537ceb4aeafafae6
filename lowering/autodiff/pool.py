"""VJP rules of the ``pool`` family (see :mod:`fxla.lowering.autodiff.registry`)."""
from __future__ import annotations
