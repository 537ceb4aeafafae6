"""fxla's layer 0: errors, source locations and the JAX boundary.

Every stage (:mod:`fxla.frontend`, :mod:`fxla.dialects`, :mod:`fxla.lowering`, :mod:`fxla.runtime`) and the
top package build on this package, and it builds on nothing of fxla (``tests/test_layering.py`` enforces
that): errors and source locations import only the standard library, the JAX boundary only jax/jaxlib.

* :mod:`fxla.base.errors` -- :class:`~fxla.base.errors.FxlaError`, the base class of every error fxla raises,
  which stores its message as fields (what / where / why / fix) and renders fxla's house format.
* :mod:`fxla.base.source` -- :class:`~fxla.base.source.SourceLocation` and finding the user's frame on a stack
  (the innermost frame that is not fxla's, torch's or ``contextlib``/``functools`` plumbing).
* :mod:`fxla.base.shown` -- :func:`~fxla.base.shown.abbreviate`, how a message shows a value the user passed
  (a long list or string abbreviated).
* :mod:`fxla.base.suggest` -- :func:`~fxla.base.suggest.did_you_mean`, the closest known names to a misspelt one.
* :mod:`fxla.base.jax_private` -- the one module that names JAX's and jaxlib's private API.
"""
