"""Plain Python objects among a traced program's outputs (a Hugging Face ``DynamicCache``, a user's own state
class): returned by a compiled call as objects of their class again.

A graph's output holds tensors, Python values and tuples/lists/dicts of those.  Forward may return more: an
object of a class torch's pytree does not know whose attributes (through lists, tuples, dicts and further such
objects) hold traced tensors -- ``model(ids)`` of a Hugging Face decoder returns its KV cache, a
``DynamicCache`` whose ``layers`` hold each layer's ``keys`` and ``values``.  :func:`objects_as_fields` replaces
each such object by a *fields* tuple: an instance of a tuple class made for the object's structure
(:class:`ObjectFields`), holding the object's traced values in the order :func:`skeleton` walks its attributes
(``__dict__`` in order, depth first).  The class keeps a *template*: the object with those values taken out (every
other attribute -- flags, dtypes, devices, sizes, ``None`` -- kept as it was).  The class is registered with
torch's pytree, and unflattening it builds a new object from the template with the call's tensors in their
places (:func:`rebuild`: ``cls.__new__`` and the attributes set, as ``copy`` does; ``__init__`` is not run), so
``fxla.compile(model)(ids)`` returns a ``DynamicCache`` as eager does, a fresh one per call.

An artifact holds no code: ``fxla.export`` writes such an output as a dict of its tensors by attribute path
(``"layers.0.keys"``), which is what ``fxla.load``'s module returns (:attr:`ObjectFields.paths`).

Only objects whose state is their ``__dict__`` are taken apart this way (not modules, classes, functions,
tensors or objects with ``__slots__``); a value inside one that is neither traced, nor a Python constant, nor
such a container or object (an open file, a lock) is kept in the template as the object itself.
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

import torch
from torch.utils import _pytree as pytree

from .node import empty_dict_like

__all__ = ["ObjectFields", "ObjectBuilder", "objects_as_fields", "building_spec", "skeleton", "rebuild"]

#: how deep :func:`skeleton` follows attributes (a cycle or a very deep object stays one opaque value)
MAX_DEPTH = 16


class _Slot:
    """Where a traced value was, in a template."""

    def __repr__(self) -> str:
        return "<traced>"


_SLOT = _Slot()


class ObjectFields(tuple):
    """The base of the fields classes :func:`objects_as_fields` makes: a tuple of one object's traced values.
    Each subclass has ``template`` (the object with :data:`_SLOT` markers where the values were), ``paths`` (the
    attribute path of each value) and ``_fields`` (so graphs and generated code keep the class, as for named
    tuples)."""

    template: Any = None
    paths: Tuple[str, ...] = ()
    _fields: Tuple[str, ...] = ()

    def __new__(cls, *values):
        return super().__new__(cls, values)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self))})"


def _slotted(cls: type) -> bool:
    """Whether instances of ``cls`` keep state outside their ``__dict__`` (non-empty ``__slots__`` in its
    classes; ``abc.ABC``'s empty ones do not count)."""
    for klass in cls.__mro__:
        slots = vars(klass).get("__slots__", ())
        names = (slots,) if isinstance(slots, str) else tuple(slots)
        if any(name not in ("__dict__", "__weakref__") for name in names):
            return True
    return False


def _takes_apart(value: Any) -> bool:
    if isinstance(value, (type, torch.nn.Module, torch.Tensor)) or callable(value):
        return False
    return isinstance(getattr(value, "__dict__", None), dict) and not _slotted(type(value))


def skeleton(value: Any, is_traced, found: List[Any], paths: List[str], path: str = "", depth: int = 0) -> Any:
    """``value`` with every traced value (``is_traced``) in it replaced by :data:`_SLOT`, appended to ``found``
    (its attribute path to ``paths``), through lists, tuples, dicts and objects whose state is their
    ``__dict__``; everything else is kept."""
    if is_traced(value):
        found.append(value)
        paths.append(path or "value")
        return _SLOT
    if depth > MAX_DEPTH:
        return value
    where = (path + ".") if path else ""
    if type(value) in (list, tuple):
        return type(value)(skeleton(v, is_traced, found, paths, f"{where}{i}", depth + 1) for i, v in enumerate(value))
    if type(value) is dict:
        return {k: skeleton(v, is_traced, found, paths, f"{where}{k}", depth + 1) for k, v in value.items()}
    if _takes_apart(value):
        out = object.__new__(type(value))
        out.__dict__.update({k: skeleton(v, is_traced, found, paths, f"{where}{k}", depth + 1)
                             for k, v in vars(value).items()})
        return out
    return value


def rebuild(template: Any, values) -> Any:
    """A new object like ``template`` with the next of ``values`` (an iterator) at each :data:`_SLOT`."""
    if template is _SLOT:
        return next(values)
    if type(template) in (list, tuple):
        return type(template)(rebuild(v, values) for v in template)
    if type(template) is dict:
        return {k: rebuild(v, values) for k, v in template.items()}
    if _takes_apart(template):
        out = object.__new__(type(template))
        out.__dict__.update({k: rebuild(v, values) for k, v in vars(template).items()})
        return out
    return template


#: fields classes by (object class, template repr, paths): one per structure, registered with pytree once
_CLASSES: Dict[Tuple[type, str, Tuple[str, ...]], type] = {}


class ObjectBuilder(tuple):
    """The base of the pytree node types that build the objects back (:func:`building_spec`): never
    instantiated; unflattening one of its subclasses runs :func:`rebuild` with its fields class's template."""

    fields: type = ObjectFields


def _fields_class(obj: Any, template: Any, paths: Tuple[str, ...]) -> type:
    cls = type(obj)
    key = (cls, repr(vars(template)), paths)
    made = _CLASSES.get(key)
    if made is None:
        name = f"{cls.__name__}Fields"
        made = type(name, (ObjectFields,), {
            "template": template, "paths": paths, "_fields": tuple(f"f{i}" for i in range(len(paths))),
            "__module__": __name__, "__qualname__": name})
        builder = type(f"{cls.__name__}Builder", (ObjectBuilder,), {"fields": made, "__module__": __name__})
        made.builder = builder
        serial = f"{__name__}.{cls.__module__}.{cls.__qualname__}.{len(_CLASSES)}"
        pytree.register_pytree_node(made, lambda fields: (list(fields), None),
                                    lambda values, _context, _made=made: _made(*values),
                                    serialized_type_name=serial + ".fields")
        pytree.register_pytree_node(builder, lambda built: (list(built), None),
                                    lambda values, _context, _made=made: rebuild(_made.template, iter(values)),
                                    serialized_type_name=serial + ".builder")
        _CLASSES[key] = made
    return made


def building_spec(spec: pytree.TreeSpec) -> pytree.TreeSpec:
    """``spec`` (of a structure holding fields tuples) with each fields class replaced by its builder, so that
    ``tree_unflatten`` with it returns the objects themselves (what a compiled call returns); ``spec`` itself when
    it holds none.  (Within fxla the fields tuples stay tuples: flattening and unflattening them round trips.)"""
    if spec.is_leaf():
        return spec
    children = [building_spec(c) for c in spec.children()]
    kind = spec.type.builder if isinstance(spec.type, type) and issubclass(spec.type, ObjectFields) else spec.type
    if kind is spec.type and all(new is old for new, old in zip(children, spec.children())):
        return spec
    return pytree.TreeSpec(kind, spec.context, children)


def objects_as_fields(result: Any, is_traced) -> Any:
    """``result`` (what forward returned) with each object that holds traced values (``is_traced``) replaced by
    its fields tuple (see the module docstring), through tuples, lists and dicts (their types kept as
    :func:`~fxla.frontend.node.map_aggregate` keeps them)."""
    if is_traced(result) or result is None or isinstance(result, torch.Size):
        return result
    if isinstance(result, tuple):
        items = [objects_as_fields(e, is_traced) for e in result]
        if hasattr(result, "_fields"):
            return type(result)(*items)
        return type(result)(items) if hasattr(type(result), "n_sequence_fields") else tuple(items)
    if isinstance(result, list):
        return [objects_as_fields(e, is_traced) for e in result]
    if isinstance(result, dict):
        items = {k: objects_as_fields(v, is_traced) for k, v in result.items()}
        if all(items[k] is v for k, v in result.items()):
            return result
        out = empty_dict_like(result)
        for k, v in items.items():
            out[k] = v
        return out
    if not _takes_apart(result):
        return result
    found: List[Any] = []
    paths: List[str] = []
    template = skeleton(result, is_traced, found, paths)
    if not found:
        return result
    return _fields_class(result, template, tuple(paths))(*found)
