"""Showing a user's value in a message, abbreviated.

An error message that names a value the user passed (an argument, an option, a concrete_args entry) shows it
through :func:`abbreviate`, so a long list, a long string or a deep structure cannot flood the message::

    abbreviate(list(range(10000)))      ->  [0, 1, 2, 3, 4, 5, ... 9994 more]
    abbreviate("x" * 500)               ->  'xxxxxxxx...'... (500 chars)   (the first 80 characters)
    abbreviate(torch.zeros(2, 3))       ->  float32[2, 3]

Containers (list, tuple, set, dict and their subclasses) show their first :data:`ITEMS` items and how many
more there are, down to :data:`DEPTH` levels; a string shows its first :data:`CHARS` characters and its
length; an array (anything with ``shape`` and ``dtype``: torch tensors, jax and numpy arrays) its dtype and
shape; any other value its ``repr`` cut to :data:`CHARS` characters.  Layer 0: the standard library only.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

__all__ = ["abbreviate", "ITEMS", "CHARS", "DEPTH"]

#: items shown of a container
ITEMS = 6
#: characters shown of a string, or of another value's repr
CHARS = 80
#: nesting levels shown (deeper containers show as ``[...]``)
DEPTH = 3

_BRACKETS = {list: ("[", "]"), tuple: ("(", ")"), set: ("{", "}"), frozenset: ("frozenset({", "})"),
             dict: ("{", "}")}


def abbreviate(value: Any, leaf: Optional[Callable[[Any], Optional[str]]] = None) -> str:
    """``value`` as message text, abbreviated (see the module docstring).  ``leaf(v)``, when given, is asked
    first for every value inside (and for ``value`` itself); a str it returns is used as that value's text,
    None falls back to the rules above."""
    return _show(value, leaf, DEPTH)


def _array(value: Any) -> Optional[str]:
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is None or dtype is None or isinstance(value, type):
        return None
    try:
        dims = [int(d) for d in shape]
    except (TypeError, ValueError):
        return None
    return f"{str(dtype).rpartition('.')[2]}{dims}"


def _container(value: Any):
    for kind in _BRACKETS:
        if isinstance(value, kind):
            return kind
    return None


def _show(value: Any, leaf, depth: int) -> str:
    if leaf is not None:
        text = leaf(value)
        if text is not None:
            return text
    if isinstance(value, str):
        if len(value) <= CHARS:
            return repr(value)
        return f"{value[:CHARS]!r}... ({len(value)} chars)"
    kind = _container(value)
    if kind is None:
        text = _array(value)
        if text is None:
            text = repr(value)
            if len(text) > CHARS:
                text = text[:CHARS - 3] + "..."
        return text
    open_, close = _BRACKETS[kind]
    if type(value) is not kind:                         # OrderedDict, a namedtuple, ...: its class name
        open_, close = f"{type(value).__name__}({open_}", close + ")"
    if depth <= 0:
        return f"{open_}...{close}"
    if kind is dict:
        shown = [f"{_show(k, leaf, depth - 1)}: {_show(v, leaf, depth - 1)}"
                 for k, v in _first(value.items(), ITEMS)]
    else:
        shown = [_show(v, leaf, depth - 1) for v in _first(value, ITEMS)]
    if len(value) > ITEMS:
        shown.append(f"... {len(value) - ITEMS} more")
    elif kind is tuple and len(value) == 1 and type(value) is tuple:
        shown[0] += ","
    return open_ + ", ".join(shown) + close


def _first(items, n: int):
    for i, item in enumerate(items):
        if i >= n:
            return
        yield item
