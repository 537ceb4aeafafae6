"""Where a compiled model's state lives: its compiled signatures, and the device copies of its weights.

* :class:`SignatureCache`: the compiled signatures of one traced program (least recently used dropped first) and
  the call plans made from them (fxla's C dispatch and JAX's C++ dispatch run those).
* :class:`ParameterStore`: the device buffers of a model's parameters and buffers, uploaded at their first use
  and shared by every signature, and by every per-shape trace of a ``concrete_shapes`` module; it re-uploads a
  weight the user changed (:mod:`fxla.weights`) and takes the new values of the state a program changes.
"""
from __future__ import annotations

import collections
import functools
import hashlib
import logging
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch.utils import _pytree as pytree

from fxla.base.logs import CACHE
from fxla.lowering import FxlaProgram
from fxla.lowering.index_bounds import check_input_indices
from fxla.runtime import Executable, cpp_dispatch, from_device, to_device
from fxla.runtime.buffers import InputBuffers, host_data
from fxla.runtime.multihost import digest, place_sharded, spans_processes

from .gradients import GradientGuard
from .signature import describe_value
from .weights import WeightWatch

__all__ = ["Entry", "SignatureCache", "ParameterStore"]

#: the names the tracer gives the tensors it makes constants of a trace (fxla.frontend.tracer)
CONSTANT_PREFIX = "_tensor_constant"


@dataclass
class Entry:
    """One compiled signature."""

    program: FxlaProgram
    executable: Executable
    stablehlo: str = ""                       # without source locations (for export / JAX interop)
    input_shardings: Optional[List[Any]] = None
    program_args: Tuple = ()                  # the call that compiled it (for error messages)
    params: List[Any] = None                  # the device buffers of the parameters, in the layout compiled for
    param_keys: List[Tuple[str, Tuple[int, ...]]] = None    # their keys in ParameterStore.buffers
    param_placements: List[Any] = None        # and where each lives (a device or a sharding)
    guard: Optional[GradientGuard] = None     # its torch outputs' autograd behaviour (see fxla.gradients)
    layout_sensitive: frozenset = frozenset()  # placeholders the program views (see CompiledModule._check_layouts)
    layouts: Dict[Tuple, str] = field(default_factory=dict)   # strides -> "" (runs) or eager's error
    handler: Any = None                       # its results -> the call's value (fxla.outputs.ResultHandler)
    gradients: Dict[Tuple, Any] = field(default_factory=dict)   # what requires grad -> fxla.autograd.GradientEntry
    compiled: Any = None                      # its number and dump folder (fxla.recompile.CompiledSignature)
    inputs: Any = None                        # its input buffers kept between calls (fxla.runtime.buffers.InputBuffers)
    spans: Optional[bool] = None              # whether its mesh spans processes (found at the first call)
    grad_enabled_at: Any = False              # where forward turns grad mode on (fxla.frontend.grad_enables)
    history_sources: Any = None               # what gives an output a history under no_grad (None: anything)

    def place_sharded(self, values, store: "ParameterStore", name: str, leaves) -> List[Any]:
        """A partitioned program's tensor inputs placed as it takes them, after its index checks of the call's
        ``leaves`` (the processes of a multi-process run compare the program, its weights, the inputs' data and
        the checks' outcome first: fxla.runtime.multihost)."""
        if self.spans is None:
            self.spans = any(spans_processes(s) for s in self.input_shardings)
        checks = self.program.input_checks
        return place_sharded(values, self.input_shardings, self.executable.label,
                             store.digest_fields(self.param_keys) if self.spans else None,
                             (lambda: check_input_indices(name, checks, leaves)) if checks else None)

    def input_buffers(self, device) -> InputBuffers:
        """Its input buffers kept between calls (made at the first call)."""
        if self.inputs is None:
            self.inputs = InputBuffers(device)
        return self.inputs

    def written_back(self, writable: Optional[List[Any]]) -> None:
        """The call's changed inputs were just copied back into the caller's tensors (``writable``: the call's
        tensor inputs, or None when it changes none): their kept buffers, aliasing those tensors, stay valid."""
        if writable is not None and self.inputs is not None:
            for index in self.program.mutated_inputs:
                self.inputs.restamp(index, writable[index])


def _described(entry: Entry) -> str:
    """The inputs that compiled ``entry``, for the ``fxla.cache`` log."""
    return ", ".join(describe_value(value) for value in entry.program_args)


class SignatureCache:
    """The compiled signatures of one traced program, at most ``max_signatures`` (see the module docstring).

    ``plans`` maps a call's fast key to the call plan of its signature (:func:`fxla.dispatch.call_plan`);
    ``front_plans`` holds the plans of torch-tensor signatures that run in front of ``cpp_call``, JAX's C++
    dispatch object (``output="jax"``, see fxla.runtime.cpp_dispatch), when there is one.
    """

    def __init__(self, max_signatures: int, cpp_call=None, name: str = "program"):
        self.max_signatures = max_signatures
        self.name = name                      # the compiled module's name (the ``fxla.cache`` log)
        self.entries: Dict[Tuple, Entry] = collections.OrderedDict()   # signature -> entry, least recent first
        self.plans: Dict[Tuple, Any] = {}
        self.front_plans: Dict[Tuple, Any] = {}
        self.cpp_call = cpp_call

    def get(self, key) -> Optional[Entry]:
        entry = self.entries.get(key)
        if entry is not None:
            if CACHE.isEnabledFor(logging.DEBUG):
                CACHE.debug("%s: in-memory cache hit (%s)", self.name, _described(entry))
            try:
                self.entries.move_to_end(key)      # (most recently used last: see max_signatures)
            except KeyError:                       # dropped by another thread meanwhile
                pass
        return entry

    def put(self, key, entry: Entry) -> None:
        self.entries[key] = entry
        while len(self.entries) > self.max_signatures:     # the least recently used signature goes
            _, dropped = self.entries.popitem(last=False)
            if CACHE.isEnabledFor(logging.INFO):
                CACHE.info("%s: in-memory cache full (max_signatures=%d): dropped the least recently used "
                           "signature (%s)", self.name, self.max_signatures, _described(dropped))
            self.drop_plans()

    def drop_plans(self) -> None:
        """Forget every call plan and C++ fast path (they hold executables and device buffers); the next call of
        each signature takes the general path and makes them again."""
        self.plans.clear()
        self.front_plans.clear()
        if self.cpp_call is not None:
            cpp_dispatch.clear(self.cpp_call)

    def clear(self) -> None:
        self.entries.clear()
        self.drop_plans()


def _on_change(store_ref, names) -> None:
    store = store_ref()
    if store is not None:
        store.reupload(names)


class ParameterStore:
    """The device-resident parameters and buffers of one model (see the module docstring).

    ``buffers`` maps ``(name, stored permutation)`` to a device buffer; ``weights`` records what each was
    uploaded from (every call checks it first: ``Dispatch(..., watch=)``); ``caches`` are the signature caches
    whose entries hold these buffers; ``lock`` is held by calls that write module state (one at a time);
    ``root`` is the module whose attributes forward assigns (``self.last = y``); ``mesh``: the module's mesh.
    """

    def __init__(self, root, mesh=None):
        self.buffers: Dict[Tuple[str, Tuple[int, ...]], Any] = {}
        self.weights = WeightWatch(functools.partial(_on_change, weakref.ref(self)))
        #: how many times changed weights were uploaded again
        self.generation = 0
        self._constants: Dict[int, Tuple[torch.Tensor, int]] = {}     # id(a trace's constant) -> (it, number)
        self.lock = threading.RLock()
        self.caches: List[SignatureCache] = []
        self.root = root
        self.mesh = mesh
        self.digests: Dict[Tuple[str, Tuple[int, ...]], str] = {}   # of weights placed across processes
        #: the tensor each buffer was uploaded from (or, for state a program changed, stored into)
        self.sources: Dict[Tuple[str, Tuple[int, ...]], Any] = {}

    def digest_fields(self, keys) -> Dict[str, str]:
        """``{"weight <name>": digest}`` of the weights ``keys`` placed over several processes' devices."""
        return {f"weight {k[0]}": self.digests[k] for k in keys if k in self.digests}

    def key(self, program: FxlaProgram, name: str, perm: Tuple[int, ...]) -> Tuple[str, Tuple[int, ...]]:
        """The key of ``program``'s parameter ``name`` stored permuted by ``perm`` in :attr:`buffers`: the name of
        a weight the module owns (shared by every program of the module), but a trace's own constant
        (``_tensor_constant<N>``: ``torch.arange(seq)``, ``torch.full(..., n)``, which two concrete_shapes traces
        make with equal names and different values) by its name and its content, so that no program reads
        another trace's constant."""
        if not name.startswith(CONSTANT_PREFIX) or name in self._owned():
            return name, perm
        tensor = program.params[name]
        # (and the tensor object's: two equal constants of different tensors, a global each traces read, are
        # watched and uploaded apart; numbered in first-seen order, as every process of a run sees them)
        ident = self._constants.setdefault(id(tensor), (tensor, len(self._constants)))[1]
        value = tensor.detach().contiguous().cpu()
        digest = hashlib.sha256(value.reshape(-1).view(torch.uint8).numpy().tobytes()).hexdigest()[:32]
        return f"{name}@{ident}:{value.dtype}{list(value.shape)}:{digest}", perm

    def _owned(self) -> frozenset:
        root = self.root if isinstance(self.root, torch.nn.Module) else None
        if root is None:
            return frozenset()
        return frozenset(n for n, _ in root.named_parameters()) | frozenset(n for n, _ in root.named_buffers())

    def resident(self, program: FxlaProgram, keys, placements) -> List[Any]:
        """The device buffers of the parameters ``keys`` ((:meth:`key`, stored permutation)), uploading those
        not yet resident."""
        found = []
        for (key, perm), placement in zip(keys, placements):
            name = key.split("@", 1)[0]
            value = program.params[name]
            buffer = self.buffers.get((key, perm))
            moved = buffer is not None and name == key and self.sources.get((key, perm)) is not value
            if moved and not self._current(name, value):
                # a program of a trace made before another one replaced this tensor (one still under way in
                # another thread: fxla.compile's _drop_stale_traces): its own buffer, never the shared one
                stored = value.permute(perm).contiguous() if perm else value
                found.append(to_device(stored, placement))
                continue
            if buffer is None or moved:
                stored = value.permute(perm).contiguous() if perm else value
                buffer = self.buffers[key, perm] = to_device(stored, placement)
                self.sources[key, perm] = value
                if spans_processes(placement):   # (what the processes compare before each call)
                    self.digests[key, perm] = digest(host_data(stored))
                self.weights.record(key, value)     # (a trace's constant too: a global or closure tensor that
                # the caller changes in place, as eager's next call reads it)
            found.append(buffer)
        return found

    def _current(self, name: str, value) -> bool:
        """Whether ``value`` is the model's own tensor ``name`` now (not one a later trace replaced)."""
        root = self.root if isinstance(self.root, torch.nn.Module) else None
        if root is None:
            return True
        owner, _, attr = name.rpartition(".")
        try:
            module = root.get_submodule(owner) if owner else root
        except AttributeError:
            return False
        return module._parameters.get(attr, module._buffers.get(attr)) is value

    def drop_plans(self) -> None:
        for cache in self.caches:
            cache.drop_plans()

    def reupload(self, names: Sequence[str]) -> None:
        """The weights ``names`` changed in the model (fxla.weights): upload them again and point every compiled
        signature at the new buffers."""
        self.generation += 1            # (what a JAX function's gradient was made from: fxla.interop)
        with self.lock:
            self._drop(names)
            self._refresh()

    def _drop(self, names: Sequence[str]) -> None:
        """Forget the device buffers of the weights ``names`` (every stored layout) and what they came from."""
        for key in [k for k in self.buffers if k[0] in names]:
            del self.buffers[key]
            self.digests.pop(key, None)
            self.sources.pop(key, None)
        self.weights.forget(names)

    def _refresh(self) -> None:
        self.drop_plans()               # plans hold the old buffers; the next general call rebuilds them
        for cache in self.caches:
            for entry in cache.entries.values():
                entry.params = self.resident(entry.program, entry.param_keys, entry.param_placements)

    def clear(self) -> None:
        """Drop every compiled signature, call plan and resident weight."""
        for cache in self.caches:
            cache.clear()
        self.buffers.clear()
        self.digests.clear()
        self.sources.clear()
        self.weights.clear()

    def store_state(self, program: FxlaProgram, values) -> None:
        """The program changed parameters/buffers in place (``self.steps += 1``): copy their new values into the
        module's tensors, make the results the resident buffers (single device; a mesh program re-uploads them),
        and point every compiled signature at them."""
        with torch.no_grad():
            for name, value in zip(program.mutated_params, values):
                program.params[name].copy_(from_device(value))
                self._drop([name])
                if self.mesh is None:
                    self.buffers[name, ()], self.sources[name, ()] = value, program.params[name]
                    self.weights.record(name, program.params[name])   # (as of after the copy)
        self._refresh()

    def guard_attribute(self, name: str, guard) -> None:
        """Replace the tensors of the attribute ``name`` (as forward last assigned it) by ``guard(tensors)``."""
        owner, _, attr = name.rpartition(".")
        module = self.root.get_submodule(owner)
        leaves, spec = pytree.tree_flatten(getattr(module, attr))
        tensors = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
        for i, value in zip(tensors, guard([leaves[i] for i in tensors])):
            leaves[i] = value
        setattr(module, attr, pytree.tree_unflatten(leaves, spec))

    def set_attributes(self, writes, values) -> None:
        """Set the module attributes forward assigns (``self.last = y``) to this call's values, as torch tensors."""
        results = iter(values)
        for w in writes:
            leaves = [from_device(next(results)) if leaf is None else leaf for leaf in w.leaves]
            owner, _, name = w.name.rpartition(".")
            setattr(self.root.get_submodule(owner), name, pytree.tree_unflatten(leaves, w.spec))
