"""The :class:`GraphModule`: an ``nn.Module`` whose ``forward`` is generated from a Graph."""
from __future__ import annotations

import copy
import itertools
import linecache
from typing import Any, Dict, Union

import torch

from fxla.base.shown import abbreviate

from . import meta as M
from .errors import GraphError, SpecializationError
from .graph import Graph
from .node import map_aggregate

__all__ = ["GraphModule"]

_counter = itertools.count()


def _copy_attr(src: Any, dst: torch.nn.Module, qualname: str) -> None:
    """Make ``dst.<qualname>`` refer to the same object as ``src.<qualname>`` (by reference)."""
    *prefix, field = qualname.split(".")
    for atom in prefix:
        src = getattr(src, atom)
        nxt = dst._modules.get(atom) if atom in dst._modules else None
        if nxt is None:
            nxt = torch.nn.Module()
            dst.add_module(atom, nxt)
        dst = nxt
    value = getattr(src, field)
    _assign(dst, field, value, is_buffer=isinstance(src, torch.nn.Module) and field in src._buffers)


def _assign(dst: torch.nn.Module, field: str, value: Any, is_buffer: bool) -> None:
    if isinstance(value, torch.nn.Module):
        dst.add_module(field, value)
    elif isinstance(value, torch.nn.Parameter):
        dst.register_parameter(field, value)
    elif is_buffer:
        dst.register_buffer(field, value)
    else:
        setattr(dst, field, value)


def _assign_from_dict(root: Dict[str, Any], dst: torch.nn.Module, qualname: str) -> None:
    *prefix, field = qualname.split(".")
    for atom in prefix:
        if atom not in dst._modules:
            dst.add_module(atom, torch.nn.Module())
        dst = dst._modules[atom]
    _assign(dst, field, root[qualname], is_buffer=isinstance(root[qualname], torch.Tensor)
            and not isinstance(root[qualname], torch.nn.Parameter))


def rebuilt(value: Any, items) -> Any:
    """A tuple or list of ``value``'s type holding ``items`` (a namedtuple takes its fields positionally)."""
    return type(value)(*items) if isinstance(value, tuple) and hasattr(value, "_fields") else type(value)(items)


def describe_input(value: Any) -> Any:
    """What a specialisation records of an input: TensorMeta for tensors (also nested), the value otherwise."""
    from .shape_prop import TensorMeta
    if isinstance(value, torch.Tensor):
        return TensorMeta(tuple(value.shape), value.dtype)
    if isinstance(value, (tuple, list)):
        return rebuilt(value, [describe_input(v) for v in value])
    if isinstance(value, dict):
        return {k: describe_input(v) for k, v in value.items()}
    return value


def _text(meta: Any) -> str:
    from .shape_prop import TensorMeta
    if isinstance(meta, TensorMeta):
        return f"{str(meta.dtype).rpartition('.')[2]}{list(meta.shape)}"
    if isinstance(meta, (tuple, list)):
        return type(meta).__name__ + "(" + ", ".join(_text(m) for m in meta) + ")"
    if isinstance(meta, dict):
        return "dict(" + ", ".join(f"{k}={_text(v)}" for k, v in meta.items()) + ")"
    return repr(meta)


def _meta_text(meta: Any):
    """A TensorMeta as ``float32[2, 8]`` (for :func:`abbreviate`; other values: its default)."""
    from .shape_prop import TensorMeta
    return f"{str(meta.dtype).rpartition('.')[2]}{list(meta.shape)}" if isinstance(meta, TensorMeta) else None


def check_specialization(name: str, spec: Dict[str, Any], given: Dict[str, Any]) -> None:
    """Raise :class:`SpecializationError` unless every input described in ``given`` (name -> what
    :func:`describe_input` gives) is what the concrete_shapes trace ``spec`` was made for."""
    traced = spec["inputs"]
    bad = [k for k, v in given.items() if k in traced and not _matches(traced[k], v)]
    if bad:
        want = ", ".join(f"{k}={abbreviate(traced[k], _meta_text)}" for k in bad)
        have = ", ".join(f"{k}={abbreviate(given[k], _meta_text)}" for k in bad)
        raise SpecializationError(
            f"{name} was traced with concrete shapes for inputs ({want}) and cannot run on ({have})\n"
            f"why: shape-dependent Python (sizes, shape branches) ran while tracing and its results are baked "
            f"into the graph, so other shapes would give wrong results\n"
            f"fix: trace again with these example inputs, or let fxla re-trace per input signature: "
            f"fxla.compile(model, concrete_shapes=True)")


def _matches(traced: Any, given: Any) -> bool:
    """``given`` is what ``traced`` describes, where a size ``None`` (a symbolic dim) is any size."""
    from .shape_prop import TensorMeta
    if isinstance(traced, TensorMeta) and isinstance(given, TensorMeta):
        return traced.dtype == given.dtype and len(traced.shape) == len(given.shape) and \
            all(t is None or t == g for t, g in zip(traced.shape, given.shape))
    if isinstance(traced, (tuple, list)) and isinstance(given, (tuple, list)):
        return type(traced) is type(given) and len(traced) == len(given) and \
            all(_matches(t, g) for t, g in zip(traced, given))
    if isinstance(traced, dict) and isinstance(given, dict):
        return traced.keys() == given.keys() and all(_matches(traced[k], given[k]) for k in traced)
    return _text(traced) == _text(given)


def _is_proxy(value: Any) -> bool:
    from .proxy import Proxy
    found = []
    map_aggregate(value, lambda v: found.append(v) if isinstance(v, Proxy) else v)
    return bool(found)


class GraphModule(torch.nn.Module):
    """An ``nn.Module`` built from a :class:`Graph` and the module(s) its targets refer to.

    * ``root`` is an ``nn.Module`` or a dict ``qualname -> object``; every ``get_attr`` and
      ``call_module`` target is copied over **by reference** at the same qualified path.
    * ``graph`` (settable; setting recompiles), ``code`` (generated source) and
      ``forward`` (compiled from ``code``; tracebacks show the generated lines).
    * Each instance gets its own subclass so that ``forward`` can be set per instance.
    """

    def __new__(cls, *args: Any, **kwargs: Any):
        if not getattr(cls, "_fxla_impl", False):
            cls = type(cls.__name__, (cls,), {"_fxla_impl": True})
        return super().__new__(cls)

    def __init__(self, root: Union[torch.nn.Module, Dict[str, Any]], graph: Graph,
                 class_name: str = "GraphModule") -> None:
        super().__init__()
        type(self).__name__ = type(self).__qualname__ = class_name
        if isinstance(root, torch.nn.Module):
            self.training = root.training
        for node in graph.nodes:
            if node.op not in ("get_attr", "call_module"):
                continue
            try:
                if isinstance(root, torch.nn.Module):
                    _copy_attr(root, self, node.target)
                else:
                    _assign_from_dict(root, self, node.target)
            except (AttributeError, KeyError) as e:
                raise GraphError(
                    f"GraphModule: node %{node.name} refers to {node.target!r}, which the root does not have",
                    where=node.meta.get(M.SOURCE), why=str(e),
                    fix="pass a root module (or dict) that defines every get_attr/call_module target") from e
        self._graph = graph
        graph.owning_module = self
        self.recompile()

    @property
    def graph(self) -> Graph:
        """The module's :class:`Graph`; assigning a new one makes this its owner and recompiles."""
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        self._graph = g
        g.owning_module = self
        self.recompile()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        spec = self._graph.meta.get(M.SPECIALIZATION)
        if spec:                              # a concrete_shapes trace: only valid for the traced inputs
            named = dict(zip([n.target for n in self._graph.nodes if n.op == "placeholder"], args), **kwargs)
            if not any(_is_proxy(v) for v in named.values()):     # (being traced again: nothing to check)
                check_specialization(type(self).__name__, spec, {k: describe_input(v) for k, v in named.items()})
        return super().__call__(*args, **kwargs)

    @property
    def specialization(self):
        """What a ``concrete_shapes`` trace specialised to (``graph.meta['specialization']``):
        ``{'inputs': {name: TensorMeta or structure}, 'fixed': {name: value baked in},
        'device': torch.device}``; None for a shape-agnostic (default) trace."""
        return self._graph.meta.get(M.SPECIALIZATION)

    @property
    def code(self) -> str:
        """The generated Python source of ``forward``."""
        return self._code

    def recompile(self):
        """Regenerate ``self.code`` from ``self.graph`` and recompile ``forward``."""
        python_code = self._graph.python_code(root_name="self")
        self._code = str(python_code)
        filename = f"<fxla-generated-{next(_counter)}:{type(self).__name__}>"
        lines = self._code.splitlines(keepends=True)
        linecache.cache[filename] = (len(self._code), None, lines, filename)
        globals_ = dict(python_code.globals)
        globals_["__name__"] = "fxla.generated"
        exec(compile(self._code, filename, "exec"), globals_)
        type(self).forward = globals_["forward"]
        return python_code

    # ---- submodules (for passes that add or remove call_module targets, as in torch.fx) --------------------
    def add_submodule(self, target: str, m: torch.nn.Module) -> bool:
        """Install ``m`` at the dotted path ``target``, creating empty ``nn.Module`` parents as needed.  Returns
        False (and installs nothing) when a prefix of the path is an attribute that is not a module."""
        *prefix, field = target.split(".")
        mod: torch.nn.Module = self
        for atom in prefix:
            child = getattr(mod, atom, None)
            if child is None:
                child = torch.nn.Module()
                mod.add_module(atom, child)
            elif not isinstance(child, torch.nn.Module):
                return False
            mod = child
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at ``target``; False when there is none (or the path is not a module)."""
        *prefix, field = target.split(".")
        mod: torch.nn.Module = self
        for atom in prefix:
            mod = getattr(mod, atom, None)
            if not isinstance(mod, torch.nn.Module):
                return False
        if not isinstance(getattr(mod, field, None), torch.nn.Module):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove every submodule that no ``call_module`` or ``get_attr`` node uses (a used module keeps its
        parents and its own children)."""
        used = set()
        for node in self._graph.nodes:
            if node.op in ("call_module", "get_attr"):
                atoms = node.target.split(".")
                used.update(".".join(atoms[:i]) for i in range(1, len(atoms) + 1))
                if node.op == "call_module":     # its children run inside it
                    used.update(f"{node.target}.{name}" for name, _ in self.get_submodule(node.target).named_modules()
                                if name)
        for name, _ in sorted(self.named_modules(remove_duplicate=False), key=lambda item: -item[0].count(".")):
            if name and name not in used:
                self.delete_submodule(name)

    def print_readable(self, print_output: bool = True) -> str:
        """The generated code as a ``class <Name>(torch.nn.Module)`` listing; printed unless ``print_output=False``."""
        body = "".join(f"    {line}\n" for line in self._code.splitlines())
        text = f"class {type(self).__name__}(torch.nn.Module):\n{body}"
        if print_output:
            print(text)
        return text

    def __str__(self) -> str:
        return f"{super().__str__()}\n\n{self._code}"

    def __deepcopy__(self, memo: Dict[int, Any]) -> "GraphModule":
        holder = torch.nn.Module()
        holder.__dict__ = copy.deepcopy({k: v for k, v in self.__dict__.items() if k != "_graph"}, memo)
        return GraphModule(holder, self._graph.copy(), type(self).__name__)
