"""State capture: what a traced ``forward`` writes into its modules (``self.h = ...``, ``self.calls += 1``).

The :class:`~fxla.frontend.tracer.Tracer` routes ``nn.Module.__setattr__`` and ``register_buffer`` through a
:class:`StateCapture` while it traces.  Three kinds of write are recorded, so that a compiled call does what eager
does to the module:

* a traced value into a parameter or buffer: a ``copy_`` into its ``get_attr`` (``node.meta["state_assignment"]``
  names it), functionalized like any mutation so the module's state is written back;
* a traced value into any other attribute (``self.last = y``): the value's nodes carry
  ``node.meta["attribute_writes"]`` (:class:`~fxla.frontend.meta.AttributeWrite`);
* an untraced value (``self.calls = 1``): ``graph.meta["attribute_constants"]``.

:func:`final_attribute_writes` reads the last two back.  Every attribute set during the trace is restored
afterwards: the user's module is never left holding a Proxy.
"""
from __future__ import annotations

import contextlib
import itertools
from typing import Any, Callable, Dict, List, Tuple

import torch
from torch.utils import _pytree as pytree

from . import meta as M
from .errors import TraceError
from .grad_enables import REQUIRES_GRAD
from .graph import Graph
from .meta import AttributeWrite
from .node import Node
from .proxy import Proxy
from .source import user_frame_location

__all__ = ["AttributeWrite", "StateCapture", "final_attribute_writes", "changed_attributes", "watched_attributes",
           "UNSET_ATTRIBUTE", "state_versions", "check_state_versions"]

_UNSET = object()


class _Unset:
    """An attribute a module did not have (its value before a trace that set it)."""

    def __repr__(self) -> str:
        return "<unset>"


#: what :func:`changed_attributes` gives for an attribute the module did not have
UNSET_ATTRIBUTE = _Unset()


def changed_attributes(graph: Graph) -> Dict[str, Any]:
    """The plain attributes forward sets to an untraced value other than the one it began with (``self.steps +=
    1`` on an int, ``self.calls = 1``), by qualified name: their value when the trace began
    (:data:`UNSET_ATTRIBUTE` if none).  A compiled call then leaves them at a value the trace did not start from,
    so a later call may need another trace (:mod:`fxla.modes` watches them).  Values that cannot be hashed are
    left out (not watched)."""
    starts = graph.meta.get(M.ATTRIBUTE_STARTS, {})
    last: Dict[str, Tuple[int, Any]] = {}
    for serial, name, value in graph.meta.get(M.ATTRIBUTE_CONSTANTS, ()):
        if name not in last or serial > last[name][0]:
            last[name] = (serial, value)
    out = {}
    for name, (_, value) in last.items():
        start = starts.get(name, UNSET_ATTRIBUTE)
        try:
            hash(start), hash(value)
            changed = start is UNSET_ATTRIBUTE or bool(start != value)
        except Exception:  # noqa: BLE001  (unhashable or incomparable: not watched)
            continue
        if changed:
            out[name] = start
    for name, start in starts.items():       # (a symbolic size written: the call's value, another every call)
        if name not in last and _hashable(start):
            out[name] = start
    return out


def watched_attributes(graph: Graph) -> List[str]:
    """The qualified names of the plain attributes a program traced from ``graph`` depends on: those the trace
    read (``graph.meta["attribute_reads"]``: :mod:`fxla.frontend.attribute_reads`) and those forward changes
    (:func:`changed_attributes`), and ``<module path>`` + :data:`~fxla.frontend.grad_enables.REQUIRES_GRAD` for
    each module whose parameters' ``requires_grad`` it depends on.  :mod:`fxla.modes` watches them."""
    # (an attribute forward reads and then sets -- `if not hasattr(self, "cache"): ...; self.cache = t` -- is each
    # call's own: watched only where its value is one the trace started from, by changed_attributes)
    written = final_attribute_writes(graph)
    reads = [n for n in graph.meta.get(M.ATTRIBUTE_READS, {}) if n not in written]
    reads += sorted(path + REQUIRES_GRAD for path in graph.meta.get(M.REQUIRES_GRAD_READS, ()))
    return list(dict.fromkeys([*reads, *changed_attributes(graph)]))


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except Exception:  # noqa: BLE001
        return False
    return True


def final_attribute_writes(graph: Graph) -> Dict[str, Tuple[Any, Dict[int, Node], Dict[int, Any]]]:
    """The attributes forward assigns, by qualified name, as the last assignment of each leaves them:
    ``(treespec, {leaf index: node of a traced leaf}, {leaf index: untraced leaf})`` — from the nodes'
    ``meta["attribute_writes"]`` (:class:`AttributeWrite`) and ``graph.meta["attribute_constants"]``."""
    last: Dict[str, Tuple[int, Any, Dict[int, Node], Dict[int, Any]]] = {}
    for node in graph.nodes:
        for w in node.meta.get(M.ATTRIBUTE_WRITES, ()):
            seen = last.get(w.name)
            if seen is None or w.serial > seen[0]:
                last[w.name] = (w.serial, w.spec, {w.index: node}, w.constants)
            elif w.serial == seen[0]:
                seen[2][w.index] = node
    for serial, name, value in graph.meta.get(M.ATTRIBUTE_CONSTANTS, ()):
        if name not in last or serial > last[name][0]:
            leaves, spec = pytree.tree_flatten(value)
            last[name] = (serial, spec, {}, dict(enumerate(leaves)))
    return {name: entry[1:] for name, entry in last.items()}


def holds_proxy(value: Any) -> bool:
    """``value`` is a Proxy or a tuple/list/dict holding one."""
    return any(isinstance(leaf, Proxy) for leaf in pytree.tree_leaves(value)) if isinstance(
        value, (tuple, list, dict)) else isinstance(value, Proxy)


class StateCapture:
    """The module-state writes of one trace (see the module docstring), for ``tracer``.

    :meth:`setattr` is ``nn.Module.__setattr__`` while tracing (given the original as ``orig_setattr``),
    :meth:`check_register_buffer` guards ``register_buffer``, and :meth:`restore` puts every attribute set
    during the trace back as it was."""

    def __init__(self, tracer) -> None:
        self.tracer = tracer
        self.serial = 0                   # orders the assignments: the last of a name wins, whatever the node order
        self._restore: List[Tuple[torch.nn.Module, str, Any]] = []

    def setattr(self, mod: torch.nn.Module, name: str, value: Any, orig_setattr: Callable) -> None:
        """``mod.name = value`` while tracing."""
        if holds_proxy(value):
            self._assign(mod, name, value, orig_setattr)
        else:
            self._assign_constant(mod, name, value, orig_setattr)

    def restore(self) -> None:
        """Undo every attribute set during the trace, newest first."""
        for mod, name, old in reversed(self._restore):
            if old is _UNSET:
                mod.__dict__.pop(name, None)
            else:
                mod.__dict__[name] = old
        self._restore = []

    def delattr(self, mod: torch.nn.Module, name: str) -> None:
        """``del mod.name`` while tracing: a TraceError (a compiled call only sets attributes)."""
        raise self.tracer._note_error(TraceError(
            f"del self.{name} in forward",
            where=user_frame_location(self.tracer.module_path),
            why="a compiled program runs forward's tensor operations and sets the attributes forward assigns, but "
                "cannot delete one on each call as eager does (the trace would delete it once, for good)",
            fix=f"assign a value that marks it unset instead (self.{name} = None), and test for that"))

    def check_register_buffer(self, name: str, tensor: Any) -> None:
        """``register_buffer(name, <traced value>)`` in forward is a TraceError."""
        if isinstance(tensor, Proxy):
            raise self.tracer._note_error(TraceError(
                f"register_buffer('{name}', <traced value>) in forward",
                where=user_frame_location(self.tracer.module_path),
                why="a module's buffers are its state across calls, and a traced value has none outside the "
                    "trace (the module would be left holding fxla's Proxy)",
                fix=f"register the buffer in __init__ (self.register_buffer('{name}', torch.zeros(...))) and "
                    f"assign it in forward (self.{name} = ...), or keep the value in a plain attribute"))

    def registered_buffer(self, mod: torch.nn.Module, name: str, tensor: Any) -> None:
        """``register_buffer(name, tensor)`` in forward, ``tensor`` made there (not traced): eager registers a new
        one at every call, so each compiled call writes its value into the buffer (a ``copy_`` of a constant into
        the buffer's ``get_attr``, ``node.meta["state_assignment"]``): what another trace or the caller changed in
        the buffer since does not survive the call, as in eager."""
        tracer = self.tracer
        path = tracer.path_of_module(mod)
        if path is None or not isinstance(tensor, torch.Tensor) or isinstance(tensor, Proxy) or tensor.requires_grad:
            return
        qualname = f"{path}.{name}" if path else name
        tracer._tensor_attrs[id(tensor)] = (qualname, tensor)
        proxy = tracer.create_proxy("call_method", "copy_", (tracer.get_attr_proxy(qualname), tensor.detach().clone()),
                                    {})
        proxy.node.meta[M.STATE_ASSIGNMENT] = qualname

    def _set(self, mod: torch.nn.Module, name: str, value: Any, orig_setattr: Callable) -> None:
        self._restore.append((mod, name, mod.__dict__[name] if name in mod.__dict__ else _UNSET))
        orig_setattr(mod, name, value)

    def _assign(self, mod: torch.nn.Module, name: str, value: Any, orig_setattr: Callable) -> None:
        """``mod.name = <traced value>`` (``value`` is a Proxy, or a tuple/list/dict holding some).

        A parameter or buffer (``self.steps += 1`` assigns the in-place result back, ``self.h = self.h * 0.9 +
        x`` a new tensor) is recorded as ``copy_`` into its ``get_attr`` (functionalized like any mutation, so
        later reads see the value and the module's state is written back).  A plain tensor attribute the graph
        reads is a TraceError (its reads are its value at trace time).  Any other attribute is set for the rest
        of the trace and restored afterwards, and the value's nodes carry ``meta["attribute_writes"]`` (an
        :class:`AttributeWrite` per assignment), so that each compiled call sets the attribute to that call's
        value, as eager does."""
        tracer = self.tracer
        store = mod._parameters if name in mod._parameters else mod._buffers if name in mod._buffers else None
        current = store.get(name) if store is not None else None
        entry = tracer._tensor_attrs.get(id(current)) if current is not None else None
        if entry is not None and entry[1] is current and isinstance(value, Proxy):
            proxy = tracer.create_proxy("call_method", "copy_", (tracer.get_attr_proxy(entry[0]), value), {})
            proxy.node.meta[M.STATE_ASSIGNMENT] = entry[0]
            return
        if store is not None:             # a parameter or buffer that is None (or a non-Proxy structure assigned)
            raise tracer._note_error(TraceError(
                f"forward assigns a traced value to `{name}`, a {'parameter' if store is mod._parameters else 'buffer'}"
                f" of {type(mod).__name__} that holds {'None' if current is None else type(current).__name__}",
                where=user_frame_location(tracer.module_path),
                why="a traced write into module state is recorded as a copy into the tensor it holds, and this "
                    "one holds none",
                fix=f"register it with a tensor of the value's shape and dtype (self.register_buffer('{name}', "
                    f"torch.zeros(...))), or keep the value in a plain attribute"))
        plain = mod.__dict__.get(name)
        read = tracer._tensor_attrs.get(id(plain)) if isinstance(plain, torch.Tensor) else None
        if read is not None and read[0] in tracer._attr_nodes:     # the graph reads it
            raise TraceError(
                f"forward assigns a traced value to `{name}`, a plain tensor attribute of "
                f"{type(mod).__name__} (not a parameter or buffer)", where=user_frame_location(tracer.module_path),
                why="the tracer reads plain tensor attributes as constants, so a value carried from one call to "
                    "the next through one would be read stale",
                fix=f"make it a buffer (self.register_buffer('{name}', tensor), then fxla writes it back each "
                    f"call), or start it as None if forward only stores a result there")
        start = mod.__dict__.get(name, UNSET_ATTRIBUTE)
        self._set(mod, name, value, orig_setattr)
        path = tracer.path_of_module(mod)
        if path is None:                  # a module created inside forward: nothing to set after a call
            return
        if isinstance(value, Proxy) and \
                isinstance(getattr(tracer, "_meta_values", {}).get(value.node), (torch.SymInt, torch.SymFloat)):
            # (a symbolic size: each call sets its own value, which a later trace may have read as a number)
            tracer.graph.meta.setdefault(M.ATTRIBUTE_STARTS, {}).setdefault(f"{path}.{name}" if path else name, start)
        leaves, spec = pytree.tree_flatten(value)
        qualname = f"{path}.{name}" if path else name
        constants = {i: leaf for i, leaf in enumerate(leaves) if not isinstance(leaf, Proxy)}
        self.serial += 1
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, Proxy):
                leaf.node.meta.setdefault(M.ATTRIBUTE_WRITES, []).append(
                    AttributeWrite(self.serial, qualname, spec, i, constants))

    def _assign_constant(self, mod: torch.nn.Module, name: str, value: Any, orig_setattr: Callable) -> None:
        """``mod.name = value`` with an untraced value (``self.calls = 1``, a size in concrete_shapes mode): set
        for the rest of the trace and restored afterwards, and recorded in ``graph.meta["attribute_constants"]``
        (``(serial, qualified name, value)``) so that each compiled call sets it as eager does.  Modules and
        parameters assigned, and attributes of modules created inside forward, are just set."""
        path = self.tracer.path_of_module(mod)
        if path is None or isinstance(value, (torch.nn.Module, torch.nn.Parameter)) or name in mod._parameters \
                or name in mod._buffers or name in mod._modules:
            return orig_setattr(mod, name, value)
        qualname = f"{path}.{name}" if path else name
        self.tracer.graph.meta.setdefault(M.ATTRIBUTE_STARTS, {}).setdefault(     # (what the trace read, if anything)
            qualname, mod.__dict__.get(name, UNSET_ATTRIBUTE))
        self._set(mod, name, value, orig_setattr)
        self.serial += 1
        self.tracer.graph.meta.setdefault(M.ATTRIBUTE_CONSTANTS, []).append((self.serial, qualname, value))


def state_versions(root: torch.nn.Module) -> Dict[str, Tuple[torch.Tensor, int]]:
    """Each parameter and buffer of ``root`` with its version counter (see :func:`check_state_versions`)."""
    found = {}
    for name, t in itertools.chain(root.named_parameters(), root.named_buffers()):
        with contextlib.suppress(RuntimeError):           # (an inference tensor has no version counter)
            found[name] = (t, t._version)
    return found


def check_state_versions(versions: Dict[str, Tuple[torch.Tensor, int]]) -> None:
    """Refuse a trace during which forward changed a parameter or buffer in place for real: through a tensor the
    tracer does not see as the module's (``for p in self.k.parameters(): p.mul_(m)``), the change would be made
    once, now, and never by the compiled program."""
    changed = [name for name, (t, version) in versions.items() if t._version != version]
    if changed:
        raise TraceError(
            f"forward changed {', '.join(repr(n) for n in changed[:4])} in place while fxla traced it, through a "
            f"tensor it did not record (the module's parameters() / buffers() / state_dict() hold the tensors "
            f"themselves)", why="the change was made once, while tracing, and the compiled program would never "
            "make it (its weights are changed now, as one eager call would)",
            fix="reach the tensors as attributes (self.k.weight.mul_(m)), which fxla traces, or make the change "
                "outside forward (in the training loop)")
