"""Watching the plain attributes a compiled program was traced with.

A program reads a module's plain Python attributes once, when it is traced (``y * self.scale``, ``if
self.use_relu:``, ``self.config.use_cache``; :mod:`fxla.frontend.attribute_reads` records them), and the
attributes forward itself changes (``self.steps += 1`` on an int; :func:`fxla.frontend.state_capture.
changed_attributes`) hold a value its trace did not start from after a call.  An :class:`AttributeWatch` holds
both kinds and gives, before every call, a hashable *state* of their current values: :class:`fxla.modes.ModeWatch`
adds it to the mode, so a call after one changed runs the trace of the new values (making it the first time).

* An attribute of a module is assigned through the module class's ``__setattr__``, which
  :mod:`fxla.structure_watch` wraps: the watch reads it again only after its module was written to
  (:meth:`AttributeWatch.refresh`), so a call costs nothing per module attribute.
* An attribute of an object a module holds (a configuration object) is assigned through the object's own class:
  those are read before every call (one C-level pass; a Hugging Face model reads a handful).
* Values are compared by value and type where they are plain data (lists, tuples, sets and dicts of it
  included: a list or dict is compared by its contents, also when it changed in place), else by identity (a
  tensor, an object): never with a tensor's elementwise ``==``.  A list, dict or set a module holds is read before
  every call too (changing one in place is no assignment).  Not seen: a change inside a value compared by
  identity.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from fxla.frontend.global_reads import ABSENT, cell_value

__all__ = ["AttributeWatch", "shown"]

_MISSING = ABSENT        # (what a read of a value that is not there gives, as the global reads' chains do)


class _Same:
    """A value compared and hashed by identity (a tensor, an unhashable object)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _Same) and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)

    def __repr__(self) -> str:
        return f"<{type(self.value).__name__} at {id(self.value):#x}>"


_SCALARS = (bool, int, float, complex, str, bytes)


def _key(value: Any, depth: int = 0) -> Any:
    """``value`` as a hashable key that compares as eager's Python would see it (see the module docstring):
    scalars with their type (``1``, ``1.0`` and ``True`` make different programs), containers by content."""
    if isinstance(value, _SCALARS):
        return (type(value), value)
    if value is _MISSING or value is None or isinstance(value, (torch.dtype, torch.device)):
        return value
    if depth < 4 and isinstance(value, (list, tuple, set, frozenset)) and len(value) <= 256:
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return (type(value), tuple(_key(v, depth + 1) for v in items))
    if depth < 4 and isinstance(value, dict) and len(value) <= 256:
        return (type(value), tuple((_key(k, depth + 1), _key(v, depth + 1)) for k, v in value.items()))
    if isinstance(value, torch.Tensor):
        return _Same(value)
    try:
        hash(value)
    except Exception:  # noqa: BLE001
        return _Same(value)
    return value


_MUTABLE = (list, dict, set)


class AttributeWatch:
    """The watched attributes of one model: ``(holder __dict__, attribute)`` each, with its qualified name."""

    def __init__(self) -> None:
        self.names: Tuple[str, ...] = ()
        #: attributes of modules: read again after a write (:meth:`refresh`)
        self._module_names: List[str] = []
        self._module_pairs: List[Tuple[dict, str]] = []
        self._by_holder: Dict[int, List[int]] = {}          # id(module) -> positions in _module_pairs
        self._owners: List[int] = []                        # id(module) of each position
        #: their keys as of the last refresh (the same tuple object while nothing changed)
        self.values: Tuple[Any, ...] = ()
        #: attributes of objects modules hold: read before every call
        self._object_names: List[str] = []
        self._object_dicts: Tuple[dict, ...] = ()
        self._object_attrs: Tuple[str, ...] = ()
        #: closure cells forward's code reads and chains of attributes and keys from a global or closure variable
        #: (``CONFIG.beta``; fxla.frontend.global_reads): each one's value, read again before every call (``read()``)
        self._chain_names: List[str] = []
        self._chains: Tuple[Callable[[], Any], ...] = ()
        self._chain_keys: set = set()
        self._raw: Optional[Tuple[Any, ...]] = None
        self._mutable = False
        self._tokens: Tuple[Any, ...] = ()

    def add(self, holder: dict, attr: str, name: str, owner: Any) -> bool:
        """Watch ``holder[attr]`` (``owner``'s ``__dict__``), qualified ``name``; whether it is new (or now lives in
        another holder: ``model.config = other_config``, whose attributes the new trace read)."""
        if name in self.names:
            return self._moved(holder, attr, name, owner)
        self.names += (name,)
        if isinstance(owner, torch.nn.Module) and not isinstance(holder.get(attr), _MUTABLE):
            self._by_holder.setdefault(id(owner), []).append(len(self._module_pairs))
            self._owners.append(id(owner))
            self._module_pairs.append((holder, attr))
            self._module_names.append(name)
            self.values += (_key(holder.get(attr, _MISSING)),)
        else:
            self._object_names.append(name)
            self._object_dicts += (holder,)
            self._object_attrs += (attr,)
            self._raw = None
        return True

    def add_cell(self, cell: Any, name: str) -> bool:
        """Watch the closure cell ``cell`` (its contents), named ``name``; whether it is new."""
        return self.add_chain(functools.partial(cell_value, cell), ("cell", id(cell)), name)

    def add_chain(self, read: Callable[[], Any], key: Any, name: str) -> bool:
        """Watch the end value of a chain (``read()`` gives it now; ``key`` identifies the chain), named ``name``;
        whether it is new."""
        if key in self._chain_keys:
            return False
        self._chain_keys.add(key)
        name = self._unique(name)
        self.names += (name,)
        self._chain_names.append(name)
        self._chains += (read,)
        self._raw = None
        return True

    def _unique(self, name: str) -> str:
        """``name``, numbered when another watched value has it (two closures of one factory's functions)."""
        n, unique = 1, name
        while unique in self.names:
            n += 1
            unique = f"{name} #{n}"
        return unique

    def _moved(self, holder: dict, attr: str, name: str, owner: Any) -> bool:
        if name in self._object_names:
            i = self._object_names.index(name)
            if self._object_dicts[i] is holder:
                return False
            self._object_dicts = self._object_dicts[:i] + (holder,) + self._object_dicts[i + 1:]
            self._raw = None
            return True
        i = self._module_names.index(name)
        if self._module_pairs[i][0] is holder:
            return False
        self._by_holder[self._owners[i]].remove(i)
        self._by_holder.setdefault(id(owner), []).append(i)
        self._owners[i], self._module_pairs[i] = id(owner), (holder, attr)
        self.refresh([id(owner)])
        return True

    def refresh(self, written: Optional[Sequence[int]] = None) -> None:
        """Read the module attributes again: those of the modules ``written`` (their ids), or all."""
        positions = range(len(self._module_pairs)) if written is None else [
            i for key in written for i in self._by_holder.get(key, ())]
        values = None
        for i in positions:
            d, attr = self._module_pairs[i]
            key = _key(d.get(attr, _MISSING))
            if key is not self.values[i] and not _equal(key, self.values[i]):
                if values is None:
                    values = list(self.values)
                values[i] = key
        if values is not None:
            self.values = tuple(values)

    def tokens(self) -> Tuple[Any, ...]:
        """The object attributes' keys now (the same tuple object while nothing changed)."""
        if not self._object_dicts and not self._chains:
            return ()
        raw = tuple(map(dict.get, self._object_dicts, self._object_attrs))
        if self._chains:
            raw += tuple(read() for read in self._chains)
        if self._raw is not None and _equal(raw, self._raw) and not self._mutable:
            return self._tokens
        tokens = tuple(_key(v) for v in raw)       # (a list or dict may have changed in place: by content)
        if tokens != self._tokens:
            self._tokens = tokens
        self._raw, self._mutable = raw, any(isinstance(v, _MUTABLE) for v in raw)
        return self._tokens

    def state(self) -> Tuple[Any, ...]:
        """The watched values' keys: the module attributes' as of the last :meth:`refresh`, then the object
        attributes' now (hashable; equal while nothing watched changed)."""
        return self.values + ((self.tokens(),) if self._object_dicts or self._chains else ())

    def describe(self, state: Tuple[Any, ...]) -> Dict[str, Any]:
        """``{qualified name: key}`` of a :meth:`state`."""
        out = dict(zip(self._module_names, state))
        if (self._object_dicts or self._chains) and len(state) > len(self._module_names):
            out.update(zip(self._object_names + self._chain_names, state[len(self._module_names)]))
        return out

    def changed(self, old: Tuple[Any, ...], new: Tuple[Any, ...]) -> List[str]:
        """``"name: old -> new"`` for each attribute whose key differs between the states ``old`` and ``new``."""
        before, after = self.describe(old), self.describe(new)
        return [f"{n}: {shown(before.get(n, _MISSING))} -> {shown(after.get(n, _MISSING))}"
                for n in after if n not in before or not _equal(before[n], after[n])]


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001  (a value that does not compare: taken as changed)
        return False


def shown(key: Any) -> str:
    """A key as the value it stands for (for messages)."""
    if key is _MISSING:
        return "(not set)"
    if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], type):
        return repr(key[1])[:60] if key[0] in _SCALARS else f"{key[0].__name__} {_shown_items(key[1])}"
    return repr(key)[:60]


def _shown_items(items: Any) -> str:
    return repr(tuple(shown(k) for k in items))[:60]
