"""Writing a program's in-place changes of its tensor inputs back into the caller's tensors.

A compiled program is functional: ``x += 1`` on an input makes the new value one of its results, and
:func:`write_back` copies it into the caller's tensor after the call, as eager PyTorch would have changed it.
Before anything is written it refuses, as eager would have, what eager refuses or what would make the caller
see other values than eager's:

* an input that cannot be changed (a ``jax.Array``);
* a leaf tensor that requires grad, with grad mode on (eager: "a leaf Variable that requires grad is being used
  in an in-place operation"); a non-leaf one is written with grad mode on from the guarded result
  (:mod:`fxla.gradients`: eager records the change in autograd; here a backward through it raises
  ``GradientError``), and refused where there is no guard (``output="jax"``);
* an input with internal overlap (``expand``/``broadcast_to`` results: several elements share one memory
  location; eager: "unsupported operation: more than one element of the written-to tensor refers to a single
  memory location");
* another input whose elements share memory with the changed one (eager would show the change through it; the
  program read both before any change).  Sharing is decided element by element: two empty tensors, or disjoint
  views of one tensor (``x[:, 0]`` and ``x[:, 1]``), share nothing.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

import torch

from fxla.errors import FxlaError
from fxla.runtime import from_device
from fxla.runtime.buffers import is_array

#: an exact element-overlap test enumerates at most this many storage elements (else: assumed to overlap)
MAX_EXACT_OVERLAP = 1 << 24


class InputMutationError(FxlaError):
    """A program that changes an input (``x += 1``) or its module's state in place was given an input that cannot
    be changed (a ``jax.Array``), or asked to run where nothing can be written back (``as_jax_function``)."""


class SharedInputError(InputMutationError):
    """An input the program changes in place shares memory with another input of the call (a compiled module may
    still run such a call as eager would: :mod:`fxla.input_aliases`)."""


def _span(t: torch.Tensor):
    """The [first, last] storage element ``t`` touches (``None`` when it is empty)."""
    if t.numel() == 0:
        return None
    first = last = t.storage_offset()
    for size, stride in zip(t.shape, t.stride()):
        (first, last) = (first + (size - 1) * stride, last) if stride < 0 else (first, last + (size - 1) * stride)
    return first, last


def _elements(t: torch.Tensor, base: int, length: int) -> torch.Tensor:
    marks = torch.zeros(length, dtype=torch.bool)
    index = torch.arange(length).as_strided(t.shape, t.stride(), t.storage_offset() - base)
    marks[index.reshape(-1)] = True
    return marks


def shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether some element of ``a`` and some element of ``b`` are the same memory (exact up to
    :data:`MAX_EXACT_OVERLAP` storage elements; beyond that, overlapping extents count as sharing)."""
    if a.device != b.device or a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False
    if a.element_size() != b.element_size() or a.dtype != b.dtype:
        sa, sb = _span(a), _span(b)      # (different element types over one storage: byte extents)
        if sa is None or sb is None:
            return False
        ea, eb = a.element_size(), b.element_size()
        return sa[0] * ea <= (sb[1] + 1) * eb - 1 and sb[0] * eb <= (sa[1] + 1) * ea - 1
    sa, sb = _span(a), _span(b)
    if sa is None or sb is None or sa[1] < sb[0] or sb[1] < sa[0]:
        return False
    base, end = min(sa[0], sb[0]), max(sa[1], sb[1])
    if end - base + 1 > MAX_EXACT_OVERLAP:
        return True
    return bool((_elements(a, base, end - base + 1) & _elements(b, base, end - base + 1)).any())


def check_writable(name: str, mutated: Sequence[int], leaves, guarded: bool = True,
                   quiet: Sequence[int] = ()) -> Optional[List[torch.Tensor]]:
    """The tensor inputs of the call (``leaves``), after checking that every input in ``mutated`` (numbers among
    the tensor inputs) can be written as eager PyTorch would (see the module docstring; ``guarded``: the call's
    torch outputs have a gradient guard; ``quiet``: the inputs changed only under ``torch.no_grad()`` in forward,
    which eager allows on a tensor that requires grad); None when ``mutated`` is empty (the call changes no
    input)."""
    if not mutated:
        return None
    tensors = [t for t in leaves if is_array(t)]
    by_storage = None
    for index in mutated:
        t = tensors[index]
        if not isinstance(t, torch.Tensor):
            kind = "jax.Array" if type(t).__module__.startswith("jax") else type(t).__name__
            raise InputMutationError(
                f"{name} changes its tensor input {index} in place (e.g. `x += 1`), but it was given a {kind}, "
                f"which cannot be changed\n"
                f"why: fxla copies a mutated input's new value into the caller's torch tensor after the call, as "
                f"eager PyTorch would have changed it\n"
                f"fix: pass a torch tensor, or compute a new tensor in the model (y = x + 1) and return it")
        if t.requires_grad and torch.is_grad_enabled() and (t.is_leaf or not guarded) and index not in quiet:
            why = ("why: eager PyTorch refuses this too: a leaf Variable that requires grad is being used in an "
                   "in-place operation" if t.is_leaf else
                   "why: eager PyTorch would record the change in autograd's graph; with output='jax' fxla has "
                   "nothing to record it with")
            raise InputMutationError(
                f"{name} changes its tensor input {index} in place (e.g. `x += 1`), and that tensor requires grad\n"
                f"{why}\nfix: pass x.detach() (or call under torch.no_grad()), or compute a new tensor in the "
                f"model (y = x + 1) and return it")
        if torch._debug_has_internal_overlap(t) == 1:
            raise InputMutationError(
                f"{name} changes its tensor input {index} in place (e.g. `x += 1`), but several of its elements "
                f"are one memory location (an expand()/broadcast_to() result, stride 0)\n"
                f"why: eager PyTorch refuses this too: unsupported operation: more than one element of the "
                f"written-to tensor refers to a single memory location\n"
                f"fix: pass x.clone() (or x.contiguous())")
        if by_storage is None:     # storage address -> the inputs in it (once per call, not per changed input)
            by_storage = {}
            for i, o in enumerate(tensors):
                if isinstance(o, torch.Tensor):
                    by_storage.setdefault(o.untyped_storage().data_ptr(), []).append(i)
        others = [i for i in by_storage[t.untyped_storage().data_ptr()] if i != index and shares_memory(t, tensors[i])]
        if others:
            raise SharedInputError(
                f"{name} changes its tensor input {index} in place (e.g. `x += 1`), but input {others[0]} shares its "
                f"memory (the same tensor, or an overlapping view of it, passed twice)\n"
                f"why: eager PyTorch would show the change through the other input too; the compiled program read "
                f"both before any change\n"
                f"fix: pass separate tensors (x.clone()), or do not change the input in place")
    return tensors


def write_back(tensors: List[torch.Tensor], mutated: Sequence[int], leaves, values, guard=None,
               views: Optional[Sequence] = None, quiet: Sequence[int] = ()) -> None:
    """Copy ``values``, the new values of the tensor inputs a program changes in place (``mutated``: their numbers
    among the tensor inputs ``tensors``, which :func:`check_writable` returned before the program ran), into the
    caller's tensors.  ``guard``: the call's :class:`~fxla.gradients.GradientGuard`; an input that requires grad (a
    non-leaf, under grad mode) is written from the guarded value, so its history records the change and a
    backward through it raises.  ``views``: per value, its converter to torch (:func:`fxla.runtime.buffers.viewer`,
    resolved once per compiled signature), else :func:`~fxla.runtime.from_device`.  ``quiet``: the inputs changed
    only under ``torch.no_grad()`` in forward, written without history, as eager changes them."""
    recorded = torch.is_grad_enabled()
    tracked = []
    with torch.no_grad():                     # (one context for the call: a decode step writes 4-6 cache tensors)
        for k, (index, value) in enumerate(zip(mutated, values)):
            value, target = (from_device if views is None else views[k])(value), tensors[index]
            if target.requires_grad and recorded and index not in quiet:
                tracked.append((target, value))
            else:
                target.copy_(value)
    for target, value in tracked:             # (distinct memory: check_writable refused overlapping inputs)
        (value,) = guard(leaves, [value])
        target.copy_(value)
