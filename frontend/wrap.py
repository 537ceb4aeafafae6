"""``wrap``: mark a Python function as a leaf of tracing.

A wrapped function called with any :class:`Proxy` argument is recorded as one
``call_function`` node whose target is the *original* function, instead of being
traced into. Called with concrete values it just runs.

Usage -- either as a decorator::

    @fxla.wrap                 # (fxla.frontend.wrap: the same function)
    def my_helper(x, n): ...

or at module level, after the function is defined, by name (this rebinds the name
in the calling module's globals to the wrapper)::

    def my_helper(x, n): ...
    fxla.wrap("my_helper")

``wrap(fn)`` returns the wrapper; only calls that go through the returned object
(or the rebound global) are leaves.
"""
from __future__ import annotations

import functools
import sys
from typing import Any, Callable, Dict, Optional, Union

from .errors import TraceError
from .proxy import find_tracer
from .source import user_frame_location

__all__ = ["wrap", "wrapper_for", "is_wrapped"]

_WRAPPERS: Dict[Callable, Callable] = {}


def wrapper_for(fn: Callable) -> Optional[Callable]:
    """The leaf wrapper of ``fn`` if it was wrapped (used by codegen so retracing keeps leaves)."""
    try:
        return _WRAPPERS.get(fn)
    except TypeError:  # unhashable callable
        return None


def is_wrapped(fn: Callable) -> bool:
    return getattr(fn, "__fxla_wrapped__", None) is not None


def _make_wrapper(fn: Callable) -> Callable:
    if is_wrapped(fn):
        return fn
    existing = wrapper_for(fn)
    if existing is not None:
        return existing

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        tracer = find_tracer(args, kwargs)
        if tracer is None:
            return fn(*args, **kwargs)
        return tracer.create_proxy("call_function", fn, args, kwargs)

    wrapper.__fxla_wrapped__ = fn
    _WRAPPERS[fn] = wrapper
    return wrapper


def wrap(fn_or_name: Union[str, Callable]) -> Callable:
    """Make a function a tracing leaf: called with a :class:`Proxy` argument it is recorded as one
    ``call_function`` node (target: the original function) instead of being traced into.

    ``@wrap`` on a function returns the wrapper; ``wrap("name")`` at module level rebinds that global of the
    calling module to the wrapper.  Only calls through the wrapper are leaves; with concrete values it runs.
    """
    if callable(fn_or_name):
        return _make_wrapper(fn_or_name)
    caller_globals = sys._getframe(1).f_globals
    fn = caller_globals.get(fn_or_name)
    if not callable(fn):
        raise TraceError(
            f"fxla.wrap({fn_or_name!r}): no function named {fn_or_name!r} in module "
            f"{caller_globals.get('__name__')!r}", where=user_frame_location(),
            why="wrap(name) rebinds an existing module-level function, so it must already be defined",
            fix="call wrap('name') after the `def`, or use @wrap as a decorator")
    wrapper = _make_wrapper(fn)
    caller_globals[fn_or_name] = wrapper
    return wrapper
