"""MLIR dialects of fxla.

* :mod:`fxla.dialects.mlir` is the single module that binds the MLIR engine (jaxlib's bundled bindings):
  every other part of fxla gets ``ir``, ``hlo``, ``func``, ``chlo``, the rewrite API and contexts from it.
* :mod:`fxla.dialects.fxla` defines the ``fxla`` dialect as a declarative op table with its verifier.
"""
