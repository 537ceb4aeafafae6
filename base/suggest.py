""""Did you mean" suggestions for a misspelt name (an op, a pass, an attribute): the closest known names.

:func:`closest` keeps the best match and any about as close (within :data:`WINDOW` of its similarity), so
``reluu`` suggests ``relu`` alone rather than ``relu``, ``elu`` and ``gelu``; a name close to nothing gets no
suggestion rather than a far-fetched one.  :func:`did_you_mean` words the suggestion the same way everywhere;
its ``show`` writes each suggested name as the user should type it when the names compared are shorter forms
(an op compared without its ``fxla.`` prefix, a parameter by the last part of its dotted name).
"""
from __future__ import annotations

import difflib
from typing import Callable, Iterable, List

__all__ = ["closest", "did_you_mean"]

#: the least similarity (difflib's ratio) of a suggested name
CUTOFF = 0.7
#: names within this much of the best match's similarity are suggested with it
WINDOW = 0.1


def closest(word: str, names: Iterable[str], n: int = 3) -> List[str]:
    """Up to ``n`` of ``names`` closest to ``word``, best first (empty when none is close)."""
    scored = []
    for name in dict.fromkeys(names):
        matcher = difflib.SequenceMatcher(None, word, name)
        if matcher.real_quick_ratio() >= CUTOFF and matcher.quick_ratio() >= CUTOFF:
            ratio = matcher.ratio()
            if ratio >= CUTOFF:
                scored.append((ratio, name))
    scored.sort(key=lambda item: -item[0])
    return [name for ratio, name in scored[:n] if ratio >= scored[0][0] - WINDOW]


def did_you_mean(word: str, names: Iterable[str], n: int = 3, *, show: Callable[[str], str] = str) -> str:
    """``"; did you mean 'x'?"`` (or ``'x' or 'y'``) for the :func:`closest` names, ``""`` when there are none.
    Each suggested name is written as ``repr(show(name))``: ``did_you_mean("lienar", {"linear": "fxla.linear"},
    show=table.get)`` compares ``lienar`` with ``linear`` and suggests ``'fxla.linear'``."""
    found = list(dict.fromkeys(show(c) for c in closest(word, names, n)))
    return f"; did you mean {' or '.join(repr(c) for c in found)}?" if found else ""
