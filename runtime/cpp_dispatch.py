"""fxla calls driven by JAX's C++ dispatch object (the ``pjit`` object behind every ``jax.jit`` function).

A :func:`dispatcher` is a C++ callable that keeps, per signature of its arguments (the pytree structure, and
each array's dtype, shape, weak type and sharding), either a *fast path* — the executable, its constant
arguments (fxla's resident parameters), the argument shardings, the result avals and the output pytree — or
nothing.  A call whose signature has a fast path runs the executable from C++ without entering Python; any
other call (a new signature, torch tensors, keyword arguments) runs ``miss(*args, **kwargs)``, which returns
``(result, fast)``: the call's result, and the fast path for its signature (:func:`fast_path`) or ``None``
when later calls of that signature must come back to Python.  A signature's first miss decides: JAX keeps
what it returned for as long as the entry lives, so ``None`` means every such call takes the miss.

This is JAX's ``jax.jit`` dispatch, so fxla's jax-array calls cost what a ``jax.jit`` call costs.  The fast
path passes the constants *before* the call's arguments, which is why single-device executables take their
parameters first (:attr:`fxla.runtime.Executable.runner`).

The objects used are internal to jax 0.10.2, the pinned version: they are reached through
:mod:`fxla.base.jax_private` (``tests/test_jax_private.py``, ``tests/test_cpp_dispatch.py`` cover them).
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

import jax

from fxla.base import jax_private

from .executable import Executable

_ArrayImpl = type(jax.numpy.zeros(()))
#: the type of the arrays JAX's C++ dispatch runs without Python (a call of only these skips fxla's C lookup)
ARRAY_TYPE = _ArrayImpl
#: how many signatures one dispatcher keeps a fast path for (least recently used ones are dropped: their next
#: call takes the miss again and re-records it)
CAPACITY = 256


def dispatcher(name: str, miss: Callable[..., Tuple[Any, Optional[Any]]], plain: Callable[..., Any]):
    """A C++ callable: calls of a signature with a fast path run from C++; the others return
    ``miss(*args, **kwargs)[0]`` (see the module docstring).  Under ``jax.disable_jit()`` every call is
    ``plain(*args, **kwargs)``.  ``clear(dispatcher)`` drops every fast path."""
    def cache_miss(*args, **kwargs):
        result, fast = miss(*args, **kwargs)
        return result, fast, False        # False: JAX keeps the entry (no recompilation with profile data)

    return jax_private.pjit(name, plain, cache_miss, CAPACITY)


def clear(call) -> None:
    """Forget every fast path of ``call`` (a :func:`dispatcher`); e.g. once the parameters it passes changed."""
    jax_private.clear_pjit(call)


def fast_path(executable: Executable, params: Sequence[jax.Array], args: Sequence[Any], outs: List[Any],
              result: Any) -> Optional[Any]:
    """The fast path of a call of ``executable`` — ``args`` (all ``jax.Array``\\ s, positional) with the
    resident ``params`` gave the results ``outs`` (in the executable's order), returned as ``result`` — or
    ``None`` when JAX's C++ call would not do what fxla's call did: an argument that is not a plain array on the
    executable's device (fxla moves it), a result that is not one of ``outs`` in order (static values, a pytree
    that JAX flattens in another order, e.g. a dict with unsorted keys), an executable with side effects."""
    if len(params) != executable.n_params:
        return None
    if any(type(a) is not _ArrayImpl or a.is_deleted() for a in args):
        return None
    leaves, tree = jax.tree_util.tree_flatten(result)
    if len(leaves) != len(outs) or any(leaf is not o or type(o) is not _ArrayImpl for leaf, o in zip(leaves, outs)):
        return None
    return jax_private.fast_path_data(executable.runner, params, args, outs, tree)
