"""Save and load a :class:`GraphModule` as plain files -- no pickle, no code execution on load.

``save(gm, path)`` writes a directory::

    graph.json     {"format": "fxla.graph_module", "version": 1, "class_name", "training",
                    "nodes": [{"name", "op", "target", "args": [...], "kwargs": {...}, "meta"}],
                    "attributes": {get_attr target: {"kind", "value"}}, "graph_meta": {...},
                    "files": {"modules.json" | "tensors.bin": {"size", "sha256"}}}
    modules.json   {call_module target: module record}
    tensors.bin    every tensor the module needs (see :mod:`fxla.frontend.tensor_file`)

Values (node args/kwargs, ``call_function`` targets, module attributes) use the tagged
JSON scheme of :mod:`fxla.frontend.json_values`. Node ``meta`` keeps ``source``,
``tensor_meta`` and ``grad_disabled``; other meta entries and node type annotations are dropped.  ``graph_meta``
(optional) holds a concrete_shapes trace's ``graph.meta['specialization']``.

A module record is ``{"class": {"module", "qualname"}, "training", "attributes",
"parameters", "buffers", "non_persistent_buffers", "children"}``: the instance
``__dict__`` entries that ``nn.Module`` itself does not create (the layer's
hyper-parameters, e.g. ``in_channels``, ``kernel_size``, ``eps``), its parameters and
buffers (as ``tensors.bin`` keys, or null) and its child modules (records). ``load``
rebuilds it without running ``__init__``: ``cls.__new__(cls)``, ``nn.Module.__init__``,
then the recorded ``__dict__`` entries, parameters, buffers and children.

Limits:

* ``call_module`` targets must be ``torch.nn`` / ``torch.ao.nn`` modules (fxla's default
  leaves) whose ``__dict__`` holds only encodable values -- e.g. ``nn.LSTM`` (weak
  references) and modules with forward/backward hooks are refused. User-defined leaf
  modules are refused (their class would have to be imported on load).
* ``get_attr`` targets must be tensors or encodable values; tensors keep their kind
  (parameter / buffer / plain attribute) and tensors shared between names stay shared.
* Tensors must be dense; they are loaded on CPU.
* Integrity: ``graph.json`` records the size and SHA-256 of the other two files, so any
  truncation or modification of them is detected; ``graph.json`` itself is validated
  structurally (and by :meth:`Graph.lint`). Loading never unpickles or imports anything
  outside ``torch``, but *running* the loaded module calls the functions the graph names,
  so load only directories you trust, as you would run only code you trust.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
from typing import Any, Dict, Iterator, Union

import torch

from . import meta as M
from .errors import GraphError, SerializationError
from .graph import Graph
from .graph_module import GraphModule
from .json_values import ValueDecoder, ValueEncoder
from .node import OPCODES, Node
from .source import SourceLocation, user_frame_location
from .tensor_file import TensorFileError, decode_tensors, encode_tensors

__all__ = ["save", "load"]

FORMAT, VERSION = "fxla.graph_module", 1
GRAPH_FILE, MODULES_FILE, TENSORS_FILE = "graph.json", "modules.json", "tensors.bin"

_MODULE_BOOKKEEPING = frozenset(vars(torch.nn.Module()))
_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
_MODULE_ROOTS = ("torch.nn", "torch.ao.nn")
_LOAD_FIX = ("re-save the module with fxla.frontend.save(gm, path); copy the saved directory whole "
             "and do not edit its files")
_MODULE_FIX = ("fxla cannot rebuild this module type from plain data: trace through it (do not make it a "
               "leaf), or save the model's state_dict with torch.save and rebuild the model in code")
PathLike = Union[str, "os.PathLike[str]"]


def _error(what: str, why: str, fix: str = _LOAD_FIX) -> SerializationError:
    return SerializationError(what, where=user_frame_location(), why=why, fix=fix)


def _digest(data: bytes) -> Dict[str, Any]:
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


# ---- save --------------------------------------------------------------------------------------
class _Saver:
    """Collects what a GraphModule needs into JSON-ready records and a tensor table."""

    def __init__(self, gm: GraphModule) -> None:
        self.gm = gm
        self.tensors: Dict[str, torch.Tensor] = {}
        self._keys: Dict[int, str] = {}
        self.values = ValueEncoder()

    def tensor_key(self, t: torch.Tensor, name: str) -> str:
        key = self._keys.get(id(t))
        if key is None:
            if t.layout != torch.strided or t.is_quantized or t.device.type == "meta":
                raise self.values.error(name, f"a {t.layout} tensor on {t.device}",
                                        "only dense tensors with data can be saved")
            key = self._keys[id(t)] = name
            self.tensors[key] = t
        return key

    def graph_meta(self) -> Dict[str, Any]:
        """``graph.meta['specialization']`` (a concrete_shapes trace); a fixed argument value the
        tagged JSON cannot hold is kept as its ``repr`` string."""
        spec = self.gm.graph.meta.get(M.SPECIALIZATION)
        if spec is None:
            return {}
        fixed = {}
        for k, v in spec.get("fixed", {}).items():
            try:
                fixed[k] = self.values.encode(v, f"specialization of parameter {k!r}")
            except SerializationError:
                fixed[k] = repr(v)
        return {"specialization": {"inputs": self.values.encode(spec["inputs"], "specialization inputs"),
                                   "fixed": fixed, "device": self.values.encode(spec["device"], "device")}}

    def node_record(self, n: Node) -> Dict[str, Any]:
        where = f"node %{n.name} ({n.format_node(abbreviated=True)})"
        target = self.values.encode(n.target, where) if n.op == "call_function" else n.target
        meta: Dict[str, Any] = {}
        src = n.meta.get(M.SOURCE)
        if isinstance(src, SourceLocation):
            meta["source"] = {"file": src.file, "line": src.line, "col": src.col,
                              "source_line": src.source_line, "module_path": src.module_path}
        if M.TENSOR_META in n.meta:
            with contextlib.suppress(SerializationError):
                meta["tensor_meta"] = self.values.encode(n.meta[M.TENSOR_META], where)
        if n.meta.get(M.GRAD_DISABLED):
            meta["grad_disabled"] = True        # (torch.no_grad() in forward: its gradients depend on it)
        return {"name": n.name, "op": n.op, "target": target, "args": self.values.encode(list(n.args), where),
                "kwargs": {k: self.values.encode(v, where) for k, v in n.kwargs.items()}, "meta": meta}

    def attribute_record(self, target: str) -> Dict[str, Any]:
        *prefix, field = target.split(".")
        owner = self.gm.get_submodule(".".join(prefix))
        value = getattr(owner, field)
        if isinstance(value, torch.Tensor):
            kind = ("parameter" if field in owner._parameters else
                    "buffer" if field in owner._buffers else "attribute")
            return {"kind": kind, "value": {"$": "tensor", "key": self.tensor_key(value, target)}}
        return {"kind": "value", "value": self.values.encode(value, f"attribute {target!r}")}

    def module_record(self, m: torch.nn.Module, path: str) -> Dict[str, Any]:
        cls = type(m)
        if not (cls.__module__ in _MODULE_ROOTS or cls.__module__.startswith(tuple(r + "." for r in _MODULE_ROOTS))):
            raise _error(f"cannot save submodule {path!r} of type {cls.__qualname__}",
                         why="only torch.nn leaf modules can be rebuilt on load without importing user code",
                         fix="trace through it (do not make it a leaf), or save its state_dict and rebuild "
                             "the model in code")
        hooked = [h for h in _HOOK_DICTS if getattr(m, h, None)]
        if hooked:
            raise _error(f"cannot save submodule {path!r}: it has hooks ({', '.join(hooked)})",
                         why="hooks are Python callables that cannot be stored without pickle",
                         fix="remove the hooks before saving, or trace the model without them")
        tensor_ref = lambda t, k: self.tensor_key(t, f"{path}.{k}")  # noqa: E731
        attributes = {}
        for k, v in vars(m).items():
            if k in _MODULE_BOOKKEEPING:
                continue
            encoder = ValueEncoder(lambda t, k=k: tensor_ref(t, k), fix=_MODULE_FIX)
            attributes[k] = encoder.encode(v, f"attribute {k!r} of submodule {path!r} ({cls.__qualname__})")
        return {
            "class": {"module": cls.__module__, "qualname": cls.__qualname__}, "training": m.training,
            "attributes": attributes,
            "parameters": {k: None if p is None else tensor_ref(p, k) for k, p in m._parameters.items()},
            "buffers": {k: None if b is None else tensor_ref(b, k) for k, b in m._buffers.items()},
            "non_persistent_buffers": sorted(m._non_persistent_buffers_set),
            "children": {k: None if c is None else self.module_record(c, f"{path}.{k}")
                         for k, c in m._modules.items()},
        }


def save(gm: GraphModule, path: PathLike) -> None:
    """Write ``gm`` to the directory ``path`` (created if needed; the three files are replaced).

    Raises :class:`SerializationError` if the graph holds something the format cannot store
    (see the module docstring).
    """
    if not isinstance(gm, GraphModule):
        raise _error(f"fxla.frontend.save expects a GraphModule, got {type(gm).__name__}",
                     why="only traced graphs have a graph to save",
                     fix="trace the model first: fxla.frontend.save(symbolic_trace(model), path)")
    saver = _Saver(gm)
    nodes = [saver.node_record(n) for n in gm.graph.nodes]
    targets = {n.target: n.op for n in gm.graph.nodes if n.op in ("get_attr", "call_module")}
    modules = {t: saver.module_record(gm.get_submodule(t), t) for t, op in targets.items() if op == "call_module"}
    attributes = {t: saver.attribute_record(t) for t, op in targets.items() if op == "get_attr"}
    modules_bytes = json.dumps(modules, indent=1, allow_nan=False).encode()
    tensors_bytes = encode_tensors(saver.tensors)
    graph = {"format": FORMAT, "version": VERSION, "class_name": type(gm).__name__, "training": gm.training,
             "nodes": nodes, "attributes": attributes, "graph_meta": saver.graph_meta(),
             "files": {MODULES_FILE: _digest(modules_bytes), TENSORS_FILE: _digest(tensors_bytes)}}
    os.makedirs(path, exist_ok=True)
    for name, data in ((TENSORS_FILE, tensors_bytes), (MODULES_FILE, modules_bytes),
                       (GRAPH_FILE, json.dumps(graph, indent=1, allow_nan=False).encode())):
        with open(os.path.join(path, name), "wb") as f:
            f.write(data)


# ---- load --------------------------------------------------------------------------------------
@contextlib.contextmanager
def _reading(path: PathLike, name: str) -> Iterator[None]:
    """Turn any malformed-content exception raised while decoding ``name`` into a SerializationError."""
    try:
        yield
    except SerializationError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError, GraphError) as e:
        raise _error(f"cannot load {os.path.join(path, name)}: its content is malformed",
                     why=f"{type(e).__name__}: {e}") from e


def _read(path: PathLike, name: str) -> bytes:
    try:
        with open(os.path.join(path, name), "rb") as f:
            return f.read()
    except OSError as e:
        raise _error(f"cannot load {path}: {name} cannot be read", why=f"{type(e).__name__}: {e}",
                     fix="pass the directory written by fxla.frontend.save(gm, path), with all of graph.json, "
                         "modules.json and tensors.bin") from e


def _read_checked(path: PathLike, name: str, expected: Any) -> bytes:
    data = _read(path, name)
    if not isinstance(expected, dict):
        raise _error(f"cannot load {path}: graph.json has no record of {name}", why="graph.json is malformed")
    if len(data) != expected.get("size"):
        state = "truncated" if isinstance(expected.get("size"), int) and len(data) < expected["size"] else "resized"
        raise _error(f"cannot load {os.path.join(path, name)}: the file is {state}",
                     why=f"it has {len(data)} bytes but was saved with {expected.get('size')!r}")
    if hashlib.sha256(data).hexdigest() != expected.get("sha256"):
        raise _error(f"cannot load {os.path.join(path, name)}: the file was modified after saving",
                     why="its SHA-256 differs from the one recorded in graph.json")
    return data


def _module_class(record: Dict[str, Any]) -> type:
    module, qualname = record["module"], record["qualname"]
    if not isinstance(module, str) or not (module in _MODULE_ROOTS or module.startswith(
            tuple(r + "." for r in _MODULE_ROOTS))):
        raise ValueError(f"module class from {module!r} is not a torch.nn module")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError:
        raise ValueError(f"module {module!r} does not exist in this version of torch") from None
    for atom in str(qualname).split("."):
        obj = getattr(obj, atom)
    if not (isinstance(obj, type) and issubclass(obj, torch.nn.Module)):
        raise ValueError(f"{module}.{qualname} is not an nn.Module class")
    return obj


def _parameter(t: torch.Tensor) -> torch.nn.Parameter:
    return t if isinstance(t, torch.nn.Parameter) else torch.nn.Parameter(t.detach(), t.requires_grad)


class _Loader:
    """Rebuilds modules and attributes from records, sharing tensors by key."""

    def __init__(self, tensors: Dict[str, torch.Tensor]) -> None:
        self.tensors = tensors
        self.values = ValueDecoder(tensors=tensors)

    def tensor(self, key: str, parameter: bool) -> torch.Tensor:
        t = self.tensors[key]
        if parameter and not isinstance(t, torch.nn.Parameter):
            t = self.tensors[key] = _parameter(t)
        return t

    def module(self, record: Dict[str, Any]) -> torch.nn.Module:
        cls = _module_class(record["class"])
        m = cls.__new__(cls)
        torch.nn.Module.__init__(m)
        m.training = bool(record["training"])
        for k, v in record["attributes"].items():
            m.__dict__[k] = self.values.decode(v)
        for k, key in record["parameters"].items():
            m._parameters[k] = None if key is None else self.tensor(key, parameter=True)
        for k, key in record["buffers"].items():
            m._buffers[k] = None if key is None else self.tensor(key, parameter=False)
        m._non_persistent_buffers_set = set(record["non_persistent_buffers"])
        for k, child in record["children"].items():
            m._modules[k] = None if child is None else self.module(child)
        return m

    def attribute(self, owner: torch.nn.Module, field: str, record: Dict[str, Any]) -> None:
        kind, value = record["kind"], record["value"]
        if kind == "value":
            owner.__dict__[field] = self.values.decode(value)
            return
        if not (isinstance(value, dict) and value.get("$") == "tensor"):
            raise ValueError(f"attribute {field!r} of kind {kind!r} must refer to a tensor")
        store = {"parameter": owner._parameters, "buffer": owner._buffers, "attribute": owner.__dict__}[kind]
        store.setdefault(field, self.tensor(value["key"], parameter=kind == "parameter"))


def _install_path(root: torch.nn.Module, qualname: str) -> tuple:
    """(owner module, last atom) for ``qualname``, creating plain container modules on the way."""
    *prefix, field = qualname.split(".")
    owner = root
    for atom in prefix:
        if atom not in owner._modules:
            owner._modules[atom] = torch.nn.Module()
        owner = owner._modules[atom]
    return owner, field


def _graph_from(records: Any, values: ValueDecoder) -> Graph:
    if not isinstance(records, list):
        raise TypeError("'nodes' must be an array")
    graph = Graph()
    for i, rec in enumerate(records):
        try:
            _add_node(graph, rec, values)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, GraphError) as e:
            raise ValueError(f"node #{i} ({rec.get('name') if isinstance(rec, dict) else rec!r:.40}): "
                             f"{type(e).__name__}: {e}") from e
    return graph


def _add_node(graph: Graph, rec: Dict[str, Any], values: ValueDecoder) -> None:
    """Decode one node record and append the node to ``graph``."""
    op, name = rec["op"], rec["name"]
    if op not in OPCODES or not isinstance(name, str):
        raise ValueError(f"node {name!r} has an unknown opcode {op!r}")
    target = values.decode(rec["target"]) if op == "call_function" else rec["target"]
    if not (callable(target) if op == "call_function" else isinstance(target, str)):
        raise TypeError(f"node {name!r}: bad {op} target {target!r:.60}")
    args, kwargs = rec["args"], rec["kwargs"]
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise TypeError(f"node {name!r}: args must be an array and kwargs an object")
    args, kwargs = values.decode(args), {k: values.decode(v) for k, v in kwargs.items()}
    node = graph.create_node(op, target, tuple(args), kwargs, name=name)
    if node.name != name:
        raise ValueError(f"node name {name!r} is duplicated or not a valid identifier")
    values.nodes[name] = node
    meta = rec.get("meta", {})
    if "source" in meta:
        node.meta[M.SOURCE] = SourceLocation(**meta["source"])
    if "tensor_meta" in meta:
        node.meta[M.TENSOR_META] = values.decode(meta["tensor_meta"])
    if meta.get("grad_disabled") is True:
        node.meta[M.GRAD_DISABLED] = True


def load(path: PathLike) -> GraphModule:
    """Re-create the GraphModule saved in directory ``path`` by :func:`save`.

    Raises :class:`SerializationError` (with a ``fix:``) if a file is missing, truncated,
    modified or malformed.
    """
    graph_bytes = _read(path, GRAPH_FILE)
    with _reading(path, GRAPH_FILE):
        try:
            header = json.loads(graph_bytes.decode())
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise _error(f"cannot load {os.path.join(path, GRAPH_FILE)}: it is not valid JSON",
                         why=f"{e} (the file is truncated or was edited)") from e
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise ValueError(f"it is not an {FORMAT} file")
        if header.get("version") != VERSION:
            raise _error(f"cannot load {path}: format version {header.get('version')!r} is not supported",
                         why=f"this fxla reads version {VERSION}", fix="save the module again with this fxla")
        files = header["files"]
        if not isinstance(files, dict):
            raise TypeError("'files' must be an object")
    modules_bytes = _read_checked(path, MODULES_FILE, files.get(MODULES_FILE))
    tensors_bytes = _read_checked(path, TENSORS_FILE, files.get(TENSORS_FILE))
    try:
        tensors = decode_tensors(bytearray(tensors_bytes))
    except TensorFileError as e:
        raise _error(f"cannot load {os.path.join(path, TENSORS_FILE)}: it is malformed", why=str(e)) from e
    loader = _Loader(tensors)
    root = torch.nn.Module()
    with _reading(path, MODULES_FILE):
        modules = json.loads(modules_bytes.decode())
        for target in sorted(modules, key=lambda t: t.count(".")):
            owner, field = _install_path(root, target)
            if field not in owner._modules:
                owner._modules[field] = loader.module(modules[target])
    with _reading(path, GRAPH_FILE):
        for target, record in header["attributes"].items():
            loader.attribute(*_install_path(root, target), record)
        root.training = bool(header["training"])
        graph = _graph_from(header["nodes"], loader.values)
        spec = header.get("graph_meta", {}).get("specialization")
        if spec is not None:
            graph.meta[M.SPECIALIZATION] = {
                "inputs": loader.values.decode(spec["inputs"]), "device": loader.values.decode(spec["device"]),
                "fixed": {k: loader.values.decode(v) for k, v in spec["fixed"].items()}}
        gm = GraphModule(root, graph, str(header["class_name"]))
        gm.graph.lint()
    return gm
