"""Control over compiles: what a compiled module compiles, when, and a warning when it compiles too often.

Every new input signature of a :class:`fxla.CompiledModule` (new shapes, dtypes or non-tensor values) is
lowered and compiled once.  :class:`CompileControl` (a base of ``CompiledModule``) adds:

* a log through the standard ``logging`` module, logger ``fxla.compile``: one INFO record per compiled
  signature — the module, the signature's number, the new signature and the one compiled before it (what
  changed), and the seconds spent (lowering and XLA together) — so ``logging.basicConfig(level=logging.INFO)``
  (or ``logging.getLogger("fxla").setLevel(logging.INFO)``) shows every recompile;
* one :class:`RecompileWarning` per module when it compiles more than ``recompile_budget`` signatures
  (default :data:`RECOMPILE_BUDGET`; ``fast.recompile_budget = n`` changes it, ``None`` turns it off), naming
  the fixes (pad to a few sizes, mark shapes static);
* ``fast.precompile(*signatures)``: compile a list of example inputs ahead of the first calls (serving).

Compiled signatures are bounded by ``max_signatures`` (least recently used dropped: :mod:`fxla.params`).
"""
from __future__ import annotations

import logging
import time
import warnings
from typing import Any, Optional

__all__ = ["RECOMPILE_BUDGET", "RecompileWarning", "CompileControl", "logger"]

#: how many input signatures a module compiles before fxla warns (``fast.recompile_budget``)
RECOMPILE_BUDGET = 8

#: fxla's compile log (a child of the ``fxla`` logger)
logger = logging.getLogger("fxla.compile")


class RecompileWarning(UserWarning):
    """A compiled module compiled more input signatures than its ``recompile_budget``."""


class CompileControl:
    """The compile log, the recompile budget and ``precompile`` of a compiled module (see the module docstring).
    The module provides ``__name__``, ``_describe_call(args)``, ``_signatures`` and ``_entry(args)``."""

    recompile_budget: Optional[int] = RECOMPILE_BUDGET
    _compiles = 0
    _budget_warned = False
    _last_signature = None

    def _compile_started(self) -> float:
        return time.perf_counter()

    def _log_compile(self, args, started: float) -> None:
        """Log the signature ``args`` just compiled (since ``started``) and warn once past the budget."""
        self._compiles += 1
        described = self._describe_call(args)
        previous, self._last_signature = self._last_signature, described
        if logger.isEnabledFor(logging.INFO):
            logger.info("%s: compiled input signature #%d (%s) in %.2f s%s", self.__name__, self._compiles, described,
                        time.perf_counter() - started, "" if previous is None else f"; the previous was ({previous})")
        budget = self.recompile_budget
        if budget is not None and self._compiles > budget and not self._budget_warned:
            self._budget_warned = True
            warnings.warn(RecompileWarning(
                f"{self.__name__} has compiled {self._compiles} input signatures (more than its recompile_budget "
                f"of {budget}); the latest was ({described})\nwhy: every new shape, dtype or non-tensor argument "
                f"is lowered and compiled once, which costs far more than a call\nfix: pad inputs to a few sizes "
                f"(buckets; with an attention mask for the padding), pass changing Python numbers as 0-d tensors, "
                f"or precompile the sizes you serve with fast.precompile(...); see the 'fxla.compile' log "
                f"(logging.INFO) for every compile, and set fast.recompile_budget to change the budget"),
                stacklevel=4)

    def precompile(self, *signatures: Any) -> int:
        """Compile each of ``signatures`` (a tuple of example inputs, as a call takes them, or one tensor) now,
        ahead of the calls that would; returns how many were new."""
        new = 0
        for example in signatures:
            args = example if isinstance(example, tuple) else (example,)
            before = self._compiles
            self.executable_for(*args)
            new += self._compiles - before
        return new
