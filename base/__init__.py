"""fxla's layer 0: errors and source locations.

Every stage (:mod:`fxla.frontend`, :mod:`fxla.dialects`, :mod:`fxla.lowering`, :mod:`fxla.runtime`) and the
top package build on this package, and it builds on nothing of fxla: its modules import only the standard
library.  ``tests/test_layering.py`` enforces that.

* :mod:`fxla.base.errors` -- :class:`~fxla.base.errors.FxlaError`, the base class of every error fxla raises,
  which stores its message as fields (what / where / why / fix) and renders fxla's house format.
* :mod:`fxla.base.source` -- :class:`~fxla.base.source.SourceLocation` and finding the user's frame on a stack
  (the innermost frame that is not fxla's, torch's or ``contextlib``/``functools`` plumbing).
"""
