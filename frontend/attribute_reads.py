"""Attribute reads: the plain attributes of the model's modules, and of the configuration objects they hold, that
a trace read (``self.scale``, ``self.use_relu``, ``self.config.use_cache``).

A compiled program reads a plain Python attribute once, when it is traced: ``y * self.scale`` bakes the number
in, ``if self.use_relu:`` one branch.  A user who sets ``model.scale = 3.0`` after compiling must get eager's
answer, so the attributes a trace read are recorded (``graph.meta["attribute_reads"]``) and watched
(:mod:`fxla.modes`): a call after one of them changed runs a trace for the new value, as ``torch.compile``
guards what it read.

Python has no hook for reading an attribute that lives in an instance's ``__dict__`` but the class's
``__getattribute__``.  While a trace runs, :class:`AttributeReads` therefore gives the classes of the root's
modules, and of the objects with a ``__dict__`` they hold (a Hugging Face ``PretrainedConfig``), a
``__getattribute__`` that calls the class's own and then records a read of a registered instance's attribute
(:func:`_recording`), and takes it away afterwards (reference-counted: traces in several threads share it).  The
instances and their ``__dict__``\\ s are never touched, so a copy, a ``repr`` or another thread's eager call
meanwhile sees the module as it is.  Recorded:

* a module's attributes that hold plain data when the trace begins (:func:`watchable`: numbers, flags, strings,
  ``None``, dtypes, devices, enums, functions, tuples of them) and the objects it holds
  (:func:`is_object`); a module called as a leaf (``call_module``: ``nn.Dropout``, ``nn.LeakyReLU``) has its
  lowering rule read its attributes later, so all of its plain ones count as read;
* an object's attributes, whatever they hold (a class whose ``__getattribute__`` cannot be replaced, a C type
  such as ``types.SimpleNamespace``, counts as reading all of them).

Qualified names join the module path, the attribute and, for an object, the object's attribute
(``"encoder.config.use_cache"``); :func:`holder_of` finds the ``__dict__`` a name lives in.  Tensors and modules
are not recorded (the tracer reads tensors as constants or parameters), nor attributes of objects that are
neither modules nor held by one.
"""
from __future__ import annotations

import enum
import threading
import types
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

__all__ = ["AttributeReads", "watchable", "is_object", "holder_of", "ABSENT"]

#: attributes every nn.Module has (its registries, hooks and ``training``, which fxla.modes watches already)
_MODULE_INTERNALS = frozenset(vars(torch.nn.Module())) | {"training"}
#: what nn.Module's class itself defines (its methods and class constants): not recorded as reads
_MODULE_CLASS = frozenset(dir(torch.nn.Module))
#: the tracer's own attributes of the root (its tensor constants, whose names it probes with hasattr)
_TRACER_OWN = "_tensor_constant"
_PLAIN = (bool, int, float, complex, str, bytes, type(None), torch.dtype, torch.device, torch.layout,
          torch.memory_format, enum.Enum, types.FunctionType, types.BuiltinFunctionType)

_LOCK = threading.RLock()
#: class -> [traces using its recording __getattribute__, the class's own __getattribute__ or None]
_INSTALLED: Dict[type, List[Any]] = {}
#: id(instance) -> [(reads, qualified prefix, names recorded, the instance's __dict__, names never recorded)] of
#: the running traces
_RECORDED: Dict[int, List[Tuple["AttributeReads", str, frozenset, dict, frozenset]]] = {}


def watchable(value: Any, depth: int = 0) -> bool:
    """``value`` is plain data, compared by value (see the module docstring): lists, tuples, sets and dicts of
    it included (a ``dict`` subclass such as Lightning's ``AttributeDict`` too), up to 256 items each."""
    if isinstance(value, _PLAIN):
        return True
    if depth < 4 and isinstance(value, (tuple, list, set, frozenset)) and len(value) <= 256:
        return all(watchable(v, depth + 1) for v in value)
    if depth < 4 and isinstance(value, dict) and len(value) <= 256:
        return all(watchable(k, depth + 1) and watchable(v, depth + 1) for k, v in value.items())
    return False


def _plain_attributes(obj: Any) -> Dict[str, Any]:
    """The attributes of a module that hold plain data (:func:`watchable`; not nn.Module's own)."""
    return {n: v for n, v in vars(obj).items() if n not in _MODULE_INTERNALS and not n.startswith("__")
            and watchable(v)}


def _own_lookup(cls: type) -> bool:
    """``cls`` looks attributes up itself (its own ``__getattribute__``: PretrainedConfig's attribute_map aliases),
    so a read by one name may be of another attribute."""
    for klass in cls.__mro__[:-1]:              # (not object's)
        found = vars(klass).get("__getattribute__")
        if found in _WRAPPERS:                  # (a running trace's recording one: what it wraps)
            found = _INSTALLED[klass][1]
        if found is not None:
            return True
    return False


def is_object(value: Any) -> bool:
    """``value`` is an object whose attributes are recorded too (a configuration object; not one of torch's or
    fxla's own)."""
    try:
        return not isinstance(value, (torch.Tensor, torch.nn.Module, type, types.ModuleType, _PLAIN, dict)) \
            and isinstance(getattr(value, "__dict__", None), dict) and not callable(value) \
            and not type(value).__module__.startswith(("torch", "fxla"))
    except Exception:  # noqa: BLE001  (an object whose own __getattr__ raises: not recorded)
        return False


_WRAPPERS: "weakref.WeakSet" = weakref.WeakSet()       # the recording __getattribute__ functions


def _recording(original: Callable) -> Callable:
    def __getattribute__(self, name):
        try:
            value = original(self, name)
        except AttributeError:
            entries = _RECORDED.get(id(self))
            if entries is not None:
                _record_absent(entries, name)
            raise
        entries = _RECORDED.get(id(self))
        if entries is not None:
            for reads, prefix, names, holder, own in entries:
                if name in names and holder.get(name, ABSENT) is value:
                    reads.read[f"{prefix}.{name}" if prefix else name] = value
                elif name not in holder and name not in own and watchable(value):   # (a class constant)
                    reads.read.setdefault(f"{prefix}.{name}" if prefix else name, ABSENT)
        return value
    _WRAPPERS.add(__getattribute__)
    return __getattribute__


def _record_absent(entries, name: str) -> None:
    """A read of ``name`` that the instance does not hold (``getattr(self, "gain", 1.0)``; not a submodule,
    parameter or buffer, which nn.Module's ``__getattr__`` finds next): watched as :data:`ABSENT`."""
    for reads, prefix, _, holder, own in entries:
        if name not in own and not name.startswith(_TRACER_OWN) and not any(
                name in holder.get(r, ()) for r in ("_modules", "_parameters", "_buffers")):
            reads.read.setdefault(f"{prefix}.{name}" if prefix else name, ABSENT)


class _Absent:
    """What ``graph.meta["attribute_reads"]`` holds for an attribute read while the instance did not hold it."""

    def __repr__(self) -> str:
        return "<absent>"


#: see :class:`_Absent`
ABSENT = _Absent()


def _install(cls: type) -> bool:
    """Give ``cls`` the recording ``__getattribute__`` (or count one more user); False if it cannot take one."""
    entry = _INSTALLED.get(cls)
    if entry is None:
        own = cls.__dict__.get("__getattribute__")
        try:
            cls.__getattribute__ = _recording(own if own is not None else cls.__getattribute__)
        except TypeError:                       # (a C type: SimpleNamespace)
            return False
        entry = _INSTALLED[cls] = [0, own]
    entry[0] += 1
    return True


def _uninstall(cls: type) -> None:
    entry = _INSTALLED[cls]
    entry[0] -= 1
    if entry[0] == 0:
        del _INSTALLED[cls]
        if entry[1] is not None:
            cls.__getattribute__ = entry[1]
        else:
            delattr(cls, "__getattribute__")


class AttributeReads:
    """The attribute reads of one trace of ``root``.  ``alone``: the name under which ``root`` holds a torch layer
    traced on its own (:data:`fxla.frontend.tracer.LEAF_ROOT`; "" otherwise), whose paths under the user's root
    drop it.  :meth:`start` registers the modules (and the objects they hold) and installs the recording
    classes, :meth:`late` registers a module forward made, :meth:`stop` takes everything away again,
    :meth:`result` gives ``graph.meta["attribute_reads"]``."""

    def __init__(self, root: torch.nn.Module, alone: str = "") -> None:
        #: qualified name -> the value read
        self.read: Dict[str, Any] = {}
        self._root, self._alone = root, alone
        self._registered: List[Tuple[int, Tuple]] = []
        self._classes: List[type] = []
        self._plain: Dict[str, Dict[str, Any]] = {}    # graph path -> plain attributes (what a leaf reads)
        self._known: set = set()                       # ids of the modules and objects registered

    def _user_path(self, target: str) -> str:
        """The path under the user's root of the module at ``target`` in the traced root."""
        if self._alone and (target == self._alone or target.startswith(self._alone + ".")):
            return target[len(self._alone) + 1:]
        return target

    def start(self) -> None:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        with _LOCK:
            seen = self._known
            for target, mod in self._root.named_modules(remove_duplicate=False):
                if id(mod) in seen or type(mod) is torch.nn.Module:      # (a bare container: the tracer's roots)
                    continue
                seen.add(id(mod))
                path, d = self._user_path(target), vars(mod)
                plain = self._plain[target] = _plain_attributes(mod)
                objects = {n: v for n, v in d.items() if n not in _MODULE_INTERNALS and is_object(v)}
                if _own_lookup(type(mod)):
                    self.read.update((f"{path}.{n}" if path else n, v) for n, v in plain.items())
                self._register(mod, path, frozenset(plain) | frozenset(objects), d)
                for name, obj in objects.items():
                    if id(obj) not in seen:
                        seen.add(id(obj))
                        self._register(obj, f"{path}.{name}" if path else name, None, vars(obj))

    def late(self, mod: torch.nn.Module) -> None:
        """``mod`` is a module forward made and called (``self.act = nn.GELU()`` on the first call): record its
        reads too, under its path in the root if it has one by now."""
        if id(mod) in self._known or type(mod) is torch.nn.Module:
            return
        self._known.add(id(mod))
        target = next((name for name, m in self._root.named_modules() if m is mod), None)
        if target is not None:
            with _LOCK:
                self._register(mod, self._user_path(target), frozenset(_plain_attributes(mod)), vars(mod))

    def _register(self, obj: Any, prefix: str, names: Optional[frozenset], holder: dict) -> None:
        cls = type(obj)
        # (an object whose class looks attributes up itself, or takes no recording class: all its attributes count
        # as read)
        if names is None and _own_lookup(cls) or not _install(cls):
            if names is None:
                self.read.update((f"{prefix}.{n}", v) for n, v in holder.items())
            return
        self._classes.append(cls)
        # (nn.Module's own names -- its methods, `double` among them -- are no reads of a module's attributes; an
        # object's `double` is)
        own = _MODULE_CLASS if isinstance(obj, torch.nn.Module) else frozenset()
        entry = (self, prefix, frozenset(holder) if names is None else names, holder, own)
        _RECORDED.setdefault(id(obj), []).append(entry)
        self._registered.append((id(obj), entry))

    def stop(self) -> None:
        with _LOCK:
            for key, entry in self._registered:
                entries = _RECORDED.get(key, [])
                if entry in entries:
                    entries.remove(entry)
                if not entries:
                    _RECORDED.pop(key, None)
            for cls in self._classes:
                _uninstall(cls)
            self._registered, self._classes = [], []

    def result(self, graph) -> Dict[str, Any]:
        """The attributes read, by qualified name, with every plain attribute of the leaf modules ``graph``
        calls (``call_module`` nodes; one forward made is read now).  Values that are not plain data are named by
        their type (the graph's meta stays copyable)."""
        out = dict(self.read)
        for target in dict.fromkeys(n.target for n in graph.nodes if n.op == "call_module"):
            plain = self._plain.get(target)
            if plain is None:                   # (a leaf made by forward on its first call)
                plain = _plain_attributes(self._root.get_submodule(target))
            path = self._user_path(target)
            for name, value in plain.items():
                out.setdefault(f"{path}.{name}" if path else name, value)
        return {k: v if v is ABSENT or watchable(v) else f"<{type(v).__name__}>" for k, v in out.items()}


def holder_of(root: torch.nn.Module, qualname: str) -> Optional[Tuple[Any, str]]:
    """``(the module or object that holds it, attribute)`` for a qualified name of
    ``graph.meta["attribute_reads"]`` under ``root`` (submodules by their registry, then plain attributes); None
    if the path no longer leads to something with a ``__dict__``."""
    *path, attr = qualname.split(".")
    obj: Any = root
    for atom in path:
        if isinstance(obj, torch.nn.Module) and atom in obj._modules:
            obj = obj._modules[atom]
        else:
            obj = getattr(obj, "__dict__", {}).get(atom)
            if obj is None:
                return None
    return (obj, attr) if isinstance(getattr(obj, "__dict__", None), dict) else None
