"""Tagged JSON: the value encoding of fxla's pickle-free GraphModule files.

JSON's own ``null``, booleans, integers, strings and finite floats stand for themselves
(floats are written with a ``.`` or exponent, so ``1.0`` stays a float); a JSON array is a
Python ``list``. Every other value is an object ``{"$": <tag>, ...}``:

=================  ==============================================  ==========================
tag                fields                                          Python value
=================  ==============================================  ==========================
``tuple``          ``items``: array                                ``tuple``
``size``           ``items``: array of ints                        ``torch.Size``
``dict``           ``items``: array of ``[key, value]`` pairs;      ``dict`` (any encodable keys), or
                   ``type`` (optional): ``"module:QualName"``      that dict subclass (see below)
``slice``          ``start``, ``stop``, ``step``                   ``slice``
``float``          ``value``: ``"inf"`` / ``"-inf"`` / ``"nan"``   non-finite ``float``
``complex``        ``re``, ``im``                                  ``complex``
``ellipsis``       --                                              ``...``
``dtype``          ``name`` (``"float32"``)                        ``torch.dtype``
``layout``         ``name`` (``"strided"``)                        ``torch.layout``
``memory_format``  ``name`` (``"contiguous_format"``)              ``torch.memory_format``
``device``         ``value`` (``"cpu"``, ``"cuda:0"``)             ``torch.device``
``fn``             ``name``: qualified name                        a function (see below)
``node``           ``name``                                        a graph :class:`Node`
``tensor``         ``key``: entry of ``tensors.bin``               a tensor (module state only)
``tensor_meta``    ``shape``, ``dtype``                            :class:`TensorMeta`
=================  ==============================================  ==========================

Functions are stored by a qualified name that must resolve back to the very same object:
anything reachable from ``torch`` / ``operator`` / ``math`` (``torch.relu``,
``torch.nn.functional.gelu``, ``torch.Tensor.view``, ``operator.getitem``) or one of
:data:`BUILTIN_FUNCTIONS` (``builtins.getattr``). Lambdas, local functions and user
functions (including ``wrap`` ped ones) are not encodable.

A dict subclass a graph keeps (``OrderedDict``, a Hugging Face ``ModelOutput``: the ones torch's pytree
flattens, see :func:`fxla.frontend.node.empty_dict_like`) is stored with its ``type``. Loading resolves it
only among modules already imported (nothing is imported on a file's say-so) and only to a registered dict
subclass; otherwise it is a :class:`SerializationError` saying what to import.
"""
from __future__ import annotations

import builtins
import math
import sys
from typing import Any, Callable, Dict, Optional

import torch

from .errors import SerializationError
from .names import ROOT_MODULES, qualified_name, resolve
from .node import Node, kept_dict_type
from .shape_prop import TensorMeta
from .source import user_frame_location

__all__ = ["ValueEncoder", "ValueDecoder", "function_name", "resolve_function", "resolve_dict_type",
           "BUILTIN_FUNCTIONS"]

#: Python builtins a saved graph may call (``builtins.<name>``).
BUILTIN_FUNCTIONS = frozenset({
    "getattr", "len", "abs", "min", "max", "round", "sum", "pow", "divmod", "int", "float", "bool",
    "tuple", "list", "dict", "slice", "range", "all", "any", "print"})

_DEFAULT_FIX = ("keep only encodable values in the graph (pass others through concrete_args, or compute them "
                "inside a torch.nn leaf module), or save the model's state_dict with torch.save instead")
_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def function_name(fn: Any) -> Optional[str]:
    """The qualified name :func:`resolve_function` maps back to ``fn``, or None."""
    name = getattr(fn, "__name__", None)
    if isinstance(name, str) and name in BUILTIN_FUNCTIONS and getattr(builtins, name) is fn:
        return f"builtins.{name}"
    return qualified_name(fn)


def resolve_function(name: str) -> Any:
    """Inverse of :func:`function_name`; ValueError if ``name`` is not an allowed function."""
    if not isinstance(name, str):
        raise ValueError(f"a function name must be a string, got {name!r}")
    head, _, attr = name.partition(".")
    if head == "builtins":
        if attr not in BUILTIN_FUNCTIONS:
            raise ValueError(f"builtins.{attr} is not one of the builtins a saved graph may call")
        return getattr(builtins, attr)
    if head not in ROOT_MODULES:
        raise ValueError(f"function {name!r} is not under {sorted(ROOT_MODULES)} or builtins")
    try:
        fn = resolve(name)
    except AttributeError:
        raise ValueError(f"function {name!r} does not exist in this version of torch") from None
    if not callable(fn) or isinstance(fn, type(torch)):
        raise ValueError(f"{name!r} is not a function")
    return fn


def resolve_dict_type(name: Any) -> type:
    """The dict subclass ``"module:QualName"`` names, from an already imported module; ValueError if there is
    none (the module not imported: the message says to import it) or it is not one torch's pytree flattens."""
    if not isinstance(name, str) or ":" not in name:
        raise ValueError(f"a dict type must be 'module:QualName', got {name!r:.60}")
    module_name, _, qualname = name.partition(":")
    module = sys.modules.get(module_name)
    if module is None:
        raise ValueError(f"the graph holds a {qualname} from module {module_name}, which is not imported; "
                         f"import {module_name} before loading it")
    cls: Any = module
    for part in qualname.split("."):
        cls = getattr(cls, part, None)
    if not kept_dict_type(cls):
        raise ValueError(f"{name!r} is not a dict subclass torch's pytree flattens")
    return cls


def _dotted_torch_name(value: Any) -> str:
    return str(value).rpartition(".")[2]


class ValueEncoder:
    """Encodes Python values into tagged JSON (see the module docstring).

    ``tensor_key(tensor)`` (optional) stores a tensor and returns its ``tensors.bin`` key;
    without it tensors are not encodable. ``where`` names the value in error messages, and
    ``fix`` is the ``fix:`` line of the :class:`SerializationError` raised for unencodable values.
    """

    def __init__(self, tensor_key: Optional[Callable[[torch.Tensor], str]] = None,
                 fix: Optional[str] = None) -> None:
        self.tensor_key = tensor_key
        self.fix = fix or _DEFAULT_FIX
        self._by_type: Dict[type, Callable[[Any, str], Any]] = {
            type(None): self._plain, bool: self._plain, int: self._plain, str: self._plain,
            float: self._float, list: self._list, tuple: self._tuple, torch.Size: self._size,
            dict: self._dict, slice: self._slice, complex: self._complex, type(Ellipsis): self._ellipsis,
            torch.dtype: self._named("dtype"), torch.layout: self._named("layout"),
            torch.memory_format: self._named("memory_format"), torch.device: self._device,
            Node: self._node, TensorMeta: self._tensor_meta,
        }

    def encode(self, value: Any, where: str) -> Any:
        impl = self._by_type.get(type(value))
        if impl is not None:
            return impl(value, where)
        if isinstance(value, torch.Tensor):
            return self._tensor(value, where)
        if kept_dict_type(type(value)):
            return {**self._dict(value, where), "type": f"{type(value).__module__}:{type(value).__qualname__}"}
        if callable(value) and not isinstance(value, (torch.nn.Module, type)):
            return self._function(value, where)
        raise self.error(where, f"a value of type {type(value).__qualname__} ({value!r:.60})",
                         "only None, bools, ints, floats, complex, strings, Ellipsis, dtypes, layouts, "
                         "memory formats, devices, torch/operator/math functions, graph nodes and "
                         "lists/tuples/dicts/slices of those are encodable")

    def error(self, where: str, what: str, why: str) -> SerializationError:
        return SerializationError(f"cannot save {where}: it holds {what}", where=user_frame_location(),
                                  why=why, fix=self.fix)

    # ---- one encoder per type --------------------------------------------------------------
    @staticmethod
    def _plain(value: Any, where: str) -> Any:
        return value

    @staticmethod
    def _float(value: float, where: str) -> Any:
        if math.isfinite(value):
            return value
        return {"$": "float", "value": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}

    def _list(self, value: list, where: str) -> Any:
        return [self.encode(v, where) for v in value]

    def _tuple(self, value: tuple, where: str) -> Any:
        return {"$": "tuple", "items": [self.encode(v, where) for v in value]}

    def _size(self, value: torch.Size, where: str) -> Any:
        return {"$": "size", "items": list(value)}

    def _dict(self, value: dict, where: str) -> Any:
        return {"$": "dict", "items": [[self.encode(k, where), self.encode(v, where)] for k, v in value.items()]}

    def _slice(self, value: slice, where: str) -> Any:
        return {"$": "slice", "start": self.encode(value.start, where), "stop": self.encode(value.stop, where),
                "step": self.encode(value.step, where)}

    def _complex(self, value: complex, where: str) -> Any:
        return {"$": "complex", "re": self._float(value.real, where), "im": self._float(value.imag, where)}

    @staticmethod
    def _ellipsis(value: Any, where: str) -> Any:
        return {"$": "ellipsis"}

    @staticmethod
    def _named(tag: str) -> Callable[[Any, str], Any]:
        return lambda value, where: {"$": tag, "name": _dotted_torch_name(value)}

    @staticmethod
    def _device(value: torch.device, where: str) -> Any:
        return {"$": "device", "value": str(value)}

    @staticmethod
    def _node(value: Node, where: str) -> Any:
        return {"$": "node", "name": value.name}

    def _tensor_meta(self, value: TensorMeta, where: str) -> Any:
        return {"$": "tensor_meta", "shape": list(value.shape), "dtype": self.encode(value.dtype, where)}

    def _tensor(self, value: torch.Tensor, where: str) -> Any:
        if self.tensor_key is None:
            raise self.error(where, f"a tensor of shape {tuple(value.shape)}",
                             "tensors in node arguments must be get_attr nodes")
        return {"$": "tensor", "key": self.tensor_key(value)}

    def _function(self, value: Any, where: str) -> Any:
        name = function_name(value)
        if name is None:
            raise self.error(where, f"the function {getattr(value, '__qualname__', value)!r}",
                             "functions are saved by a qualified name under torch/operator/math (or an "
                             "allowed builtin) that resolves back to the same object; this one has none")
        return {"$": "fn", "name": name}


class ValueDecoder:
    """Decodes tagged JSON back to Python values; raises ValueError/KeyError/TypeError on
    malformed input (the caller turns those into :class:`SerializationError`).

    ``nodes`` maps names to already-decoded graph nodes; ``tensors`` maps ``tensors.bin`` keys
    to tensors.
    """

    def __init__(self, nodes: Optional[Dict[str, Node]] = None,
                 tensors: Optional[Dict[str, torch.Tensor]] = None) -> None:
        self.nodes = nodes if nodes is not None else {}
        self.tensors = tensors if tensors is not None else {}
        self._by_tag: Dict[str, Callable[[Dict[str, Any]], Any]] = {
            "tuple": lambda o: tuple(self._items(o)), "size": self._size, "dict": self._dict,
            "slice": lambda o: slice(self.decode(o["start"]), self.decode(o["stop"]), self.decode(o["step"])),
            "float": lambda o: _NON_FINITE[o["value"]], "complex": self._complex,
            "ellipsis": lambda o: Ellipsis, "dtype": self._torch_constant(torch.dtype),
            "layout": self._torch_constant(torch.layout),
            "memory_format": self._torch_constant(torch.memory_format),
            "device": lambda o: torch.device(self._str(o["value"])),
            "fn": lambda o: resolve_function(o["name"]), "node": self._node, "tensor": self._tensor,
            "tensor_meta": self._tensor_meta,
        }

    def decode(self, data: Any) -> Any:
        if data is None or isinstance(data, (bool, int, float, str)):
            return data
        if isinstance(data, list):
            return [self.decode(v) for v in data]
        if isinstance(data, dict):
            tag = data.get("$")
            impl = self._by_tag.get(tag) if isinstance(tag, str) else None
            if impl is None:
                raise ValueError(f"unknown value tag {tag!r}")
            return impl(data)
        raise TypeError(f"unexpected JSON value {data!r:.60}")

    def _items(self, o: Dict[str, Any]) -> list:
        items = o["items"]
        if not isinstance(items, list):
            raise TypeError(f"'items' must be an array, got {items!r:.60}")
        return [self.decode(v) for v in items]

    def _size(self, o: Dict[str, Any]) -> torch.Size:
        items = self._items(o)
        if not all(type(i) is int for i in items):
            raise TypeError(f"torch.Size items must be ints, got {items!r:.60}")
        return torch.Size(items)

    def _dict(self, o: Dict[str, Any]) -> dict:
        out = {} if "type" not in o else resolve_dict_type(o["type"])()
        for pair in o["items"]:
            key, value = pair  # ValueError/TypeError if not a pair
            out[self.decode(key)] = self.decode(value)
        return out

    def _complex(self, o: Dict[str, Any]) -> complex:
        re, im = self.decode(o["re"]), self.decode(o["im"])
        if not all(isinstance(v, (int, float)) for v in (re, im)):
            raise TypeError("complex parts must be numbers")
        return complex(re, im)

    @staticmethod
    def _str(value: Any) -> str:
        if not isinstance(value, str):
            raise TypeError(f"expected a string, got {value!r:.60}")
        return value

    def _torch_constant(self, kind: type) -> Callable[[Dict[str, Any]], Any]:
        def decode(o: Dict[str, Any]) -> Any:
            value = getattr(torch, self._str(o["name"]), None)
            if not isinstance(value, kind):
                raise ValueError(f"torch.{o['name']} is not a {kind.__name__}")
            return value
        return decode

    def _node(self, o: Dict[str, Any]) -> Node:
        name = self._str(o["name"])
        if name not in self.nodes:
            raise ValueError(f"reference to node %{name}, which is not defined before its use")
        return self.nodes[name]

    def _tensor(self, o: Dict[str, Any]) -> torch.Tensor:
        key = self._str(o["key"])
        if key not in self.tensors:
            raise ValueError(f"reference to tensor {key!r}, which tensors.bin does not hold")
        return self.tensors[key]

    def _tensor_meta(self, o: Dict[str, Any]) -> TensorMeta:
        shape = o["shape"]
        if not isinstance(shape, list) or not all(type(d) is int for d in shape):
            raise TypeError(f"tensor_meta shape must be an array of ints, got {shape!r:.60}")
        dtype = self.decode(o["dtype"])
        if not isinstance(dtype, torch.dtype):
            raise TypeError("tensor_meta dtype must be a dtype")
        return TensorMeta(tuple(shape), dtype)
