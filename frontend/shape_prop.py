"""Shape propagation: run a graph on ``meta`` tensors and record shapes/dtypes per node."""
from __future__ import annotations

import inspect
import itertools
import operator
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from . import meta as M
from .errors import DataDependentError
from .interpreter import Interpreter
from .node import _IMPURE_FUNCTIONS, Node, map_aggregate
from .symbolic import observe_node

__all__ = ["TensorMeta", "ShapeProp", "propagate_shapes", "data_dependent_op", "data_dependent_error"]


@dataclass(frozen=True)
class TensorMeta:
    """Static description of a tensor value: its shape and dtype."""

    shape: Tuple[int, ...]
    dtype: torch.dtype


def to_meta(value: Any) -> Any:
    """Replace every tensor in (nested) ``value`` by an empty ``meta`` tensor of the same shape/dtype."""
    def convert(v: Any) -> Any:
        if isinstance(v, torch.Tensor) and not (v.device.type == "meta" and type(v) is torch.Tensor):
            return torch.empty(tuple(v.shape), dtype=v.dtype, device="meta")
        return v
    return map_aggregate(value, convert)


def _as_meta_device(v: Any) -> Any:
    """Device arguments (``torch.device`` or a device string such as ``'cpu'``/``'cuda:0'``) -> ``'meta'``."""
    if isinstance(v, torch.device):
        return torch.device("meta")
    if isinstance(v, str) and v.split(":")[0] in _DEVICE_TYPES:
        return "meta"
    return v


_DEVICE_TYPES = ("cpu", "cuda", "mps", "xpu", "hip", "xla")


def _contains_tensor(v: Any) -> bool:
    found = []
    map_aggregate(v, lambda x: found.append(x) if isinstance(x, torch.Tensor) else x)
    return bool(found)


def describe(value: Any) -> Any:
    """TensorMeta for a tensor; same-structure tuple/list/dict of TensorMeta/None otherwise."""
    if isinstance(value, torch.Tensor):
        return TensorMeta(tuple(value.shape), value.dtype)
    if isinstance(value, (tuple, list)):
        items = [describe(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {k: describe(v) for k, v in value.items()}
    return None


def set_node_meta(node: Node, value: Any) -> None:
    """Record ``value`` on ``node``: ``meta['tensor_meta']`` if it holds tensors, else ``meta['value']``."""
    node.meta.pop(M.TENSOR_META, None)
    node.meta.pop(M.VALUE, None)
    if _contains_tensor(value):
        node.meta[M.TENSOR_META] = describe(value)
    else:
        node.meta[M.VALUE] = value


# ---- memoising meta results -------------------------------------------------------------------------------------
# Running an op on meta tensors costs 100-1000 µs (torch's Python meta kernels, decompositions, FakeTensor-style
# checks), so graphs that repeat ops -- every layer of a transformer, a chain of elementwise ops -- spend most of
# shape propagation recomputing the same answer.  Within one run, a node whose op is a known side-effect-free torch
# op, whose arguments are meta tensors and plain immutable values, and whose result is tensors (and such values) is
# looked up by (op, argument signature); a hit rebuilds fresh meta tensors with the recorded
# shape/stride/offset/dtype instead of running the kernel.  Anything else runs as before.

class _NoKey(Exception):
    """The value cannot be part of a memo key / template (unknown type, tensor subclass, ...)."""


_SCALAR_TYPES = (int, bool, str, type(None), torch.dtype, torch.device, torch.layout, torch.memory_format)
_MODULE_STATE = frozenset({"_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"})


def _tensor_sig(t: torch.Tensor) -> tuple:
    if type(t) is not torch.Tensor or t.device.type != "meta" or t.requires_grad or t.is_conj() or t.is_neg():
        raise _NoKey
    return (tuple(t.shape), t.stride(), t.storage_offset(), t.dtype)


def _key_of(v: Any) -> Any:
    """A hashable description of an argument that fixes everything a meta kernel can depend on."""
    tv = type(v)
    if tv is torch.Tensor:
        return ("T",) + _tensor_sig(v)
    if tv is float:
        return (float, v.hex())                 # -0.0 and 0.0 differ; NaN equals NaN
    if tv in _SCALAR_TYPES:
        return (tv, v)
    if tv is torch.Size:
        return (torch.Size, tuple(v))
    if tv is tuple or tv is list:
        return (tv, tuple(_key_of(e) for e in v))
    if tv is dict:
        if not all(type(k) is str for k in v):
            raise _NoKey
        return (dict, tuple((k, _key_of(e)) for k, e in v.items()))
    if tv is slice:
        return (slice, _key_of(v.start), _key_of(v.stop), _key_of(v.step))
    if v is Ellipsis:
        return (type(Ellipsis),)
    raise _NoKey


class _MetaSpec:
    """A meta tensor of a recorded result, rebuilt on every memo hit."""

    __slots__ = ("shape", "stride", "offset", "dtype")

    def __init__(self, t: torch.Tensor) -> None:
        self.shape, self.stride, self.offset, self.dtype = _tensor_sig(t)

    def make(self) -> torch.Tensor:
        t = torch.empty_strided(self.shape, self.stride, dtype=self.dtype, device="meta")
        return t.as_strided(self.shape, self.stride, self.offset) if self.offset else t


def _template(v: Any) -> Any:
    """The result with every tensor replaced by a :class:`_MetaSpec` (containers rebuilt), or ``_NoKey``."""
    tv = type(v)
    if tv is torch.Tensor:
        return _MetaSpec(v)
    if tv is float or tv in _SCALAR_TYPES or tv is torch.Size:
        return v
    if tv is tuple or tv is list:
        return tv(_template(e) for e in v)
    if isinstance(v, tuple) and hasattr(type(v), "n_sequence_fields"):     # torch.return_types.*
        return tv(tuple(_template(e) for e in v))
    raise _NoKey


def _instantiate(t: Any) -> Any:
    tt = type(t)
    if tt is _MetaSpec:
        return t.make()
    if tt is tuple or tt is list:
        return tt(_instantiate(e) for e in t)
    if isinstance(t, tuple) and hasattr(tt, "n_sequence_fields"):
        return tt(tuple(_instantiate(e) for e in t))
    return t


def _has_spec(t: Any) -> bool:
    if type(t) is _MetaSpec:
        return True
    return isinstance(t, (tuple, list)) and any(_has_spec(e) for e in t)


_OPERATOR_MODULES = ("_operator", "operator")


def _pure_function(target: Any) -> bool:
    """A torch function / ``operator`` function / Tensor method without side effects on its arguments."""
    try:
        if target in _IMPURE_FUNCTIONS:
            return False
    except TypeError:                            # unhashable callable
        return False
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return False                             # aten ops: in-place ones are not spelled with a trailing _
    name = getattr(target, "__name__", "")
    if not isinstance(name, str) or name.endswith("_"):
        return False                             # in-place variants (relu_, add_) and dunders
    module = getattr(target, "__module__", None)
    if module in _OPERATOR_MODULES:
        return getattr(operator, name, None) is target
    if isinstance(module, str):
        return module == "torch" or module.startswith("torch.")
    return getattr(torch.Tensor, name, None) is target        # method descriptors (torch.Tensor.view)


def _module_key(mod: torch.nn.Module) -> tuple:
    """Type, configuration and state signature of a stock ``torch.nn`` layer without submodules or hooks."""
    cls = type(mod)
    if not (cls.__module__ == "torch.nn" or cls.__module__.startswith("torch.nn.")) or mod._modules:
        raise _NoKey
    if _global_module_hooks():
        raise _NoKey
    config = []
    for k, v in sorted(mod.__dict__.items()):
        if k in _MODULE_STATE or "state_dict" in k:      # state (keyed below) and state_dict hooks
            continue
        if "hook" in k:                                  # forward/backward hooks could change the result
            if v:
                raise _NoKey
            continue
        config.append((k, _key_of(v)))
    state = tuple((k, None if t is None else (tuple(t.shape), t.dtype))
                  for k, t in itertools.chain(mod._parameters.items(), mod._buffers.items()))
    return (cls, tuple(config), state)


def _global_module_hooks() -> bool:
    from torch.nn.modules import module as m
    return any(getattr(m, h, None) for h in ("_global_forward_hooks", "_global_forward_pre_hooks",
                                              "_global_forward_hooks_always_called", "_global_backward_hooks",
                                              "_global_backward_pre_hooks"))


class MetaMemo:
    """Meta results of side-effect-free ops by (op, target, argument signature), for one graph run/trace."""

    def __init__(self) -> None:
        self.table: Dict[Any, Any] = {}
        self.hits = 0

    @staticmethod
    def key(op: str, target: Any, args: Tuple, kwargs: Dict[str, Any], module_of: Callable[[str], Any]) -> Any:
        """The memo key of a ``call_*`` node with meta arguments, or ``None`` when it must run every time."""
        if "out" in kwargs:
            return None                          # out= resizes its argument
        if op == "call_function":
            if not _pure_function(target):
                return None
            head = target
        elif op == "call_method":
            if not isinstance(target, str) or target.endswith("_"):
                return None
            head = target
        elif op == "call_module":
            head = _module_key(module_of(target))
        else:
            return None
        key = (op, head, _key_of(args), _key_of(kwargs))
        hash(key)                                # an unhashable piece fails here (TypeError), not in the dict
        return key

    def run(self, op: str, target: Any, args: Tuple, kwargs: Dict[str, Any], module_of: Callable[[str], Any],
            compute: Callable[[], Any]) -> Any:
        """``compute()`` (the node's meta result), or fresh meta tensors like the memoised result of an equal
        call.  Exceptions of ``compute`` propagate (and nothing is remembered)."""
        try:
            key = self.key(op, target, args, kwargs, module_of)
        except (_NoKey, TypeError):
            key = None
        if key is not None:
            template = self.table.get(key)
            if template is not None:
                self.hits += 1
                return _instantiate(template)
        result = compute()
        if key is not None:
            try:
                template = _template(result)
            except _NoKey:
                template = None
            if template is not None and _has_spec(template):
                self.table[key] = template
        return result


class ShapeProp(Interpreter):
    """An :class:`Interpreter` over meta tensors that fills in node metadata:

    * ``node.meta['tensor_meta']``: a :class:`TensorMeta` if the node's value is a tensor,
      or a tuple/list/dict of the same structure (TensorMeta for tensors, None otherwise)
      if the value is a container holding tensors;
    * ``node.meta['value']``: the concrete value otherwise (ints from ``x.size(0)``,
      ``torch.Size``, floats, bools, None, dtypes, ...).

    Parameters and buffers are read as meta tensors; leaf modules run through
    ``torch.func.functional_call`` with meta versions of their state, so nothing real is
    computed or allocated.  Device arguments are retargeted to ``meta``.
    """

    def __init__(self, module: torch.nn.Module, graph=None) -> None:
        super().__init__(module, graph)
        # only for ShapeProp itself: a subclass may override how ops run, which a memo hit would bypass
        self._memo: Optional[MetaMemo] = MetaMemo() if type(self) is ShapeProp else None

    def run(self, *args: Any) -> Any:
        if self._memo is not None:
            self._memo = MetaMemo()
        return super().run(*to_meta(args))

    def fetch_args_kwargs_from_env(self, n: Node) -> Tuple[Tuple, Dict[str, Any]]:
        # everything runs on the meta device, so device arguments (x.to('cpu'), device=...) are retargeted
        args, kwargs = super().fetch_args_kwargs_from_env(n)
        return map_aggregate(args, _as_meta_device), map_aggregate(kwargs, _as_meta_device)

    def run_node(self, n: Node) -> Any:
        observe_node(n)                   # (a symbolic trace attributes the guards made from here on to n)
        try:
            if self._memo is None or n.op not in ("call_function", "call_method", "call_module"):
                result = to_meta(super().run_node(n))
            else:
                result = self._run_memoised(n)
        except Exception as e:
            if n.op not in ("call_function", "call_method", "call_module"):
                raise
            op = data_dependent_op(lambda: self._opcode_impl[n.op](n.target, *self.fetch_args_kwargs_from_env(n)))
            if op is None:
                raise
            raise data_dependent_error(n, op) from e
        set_node_meta(n, result)
        return result

    def _run_memoised(self, n: Node) -> Any:
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return self._memo.run(n.op, n.target, args, kwargs, self.fetch_attr,
                              lambda: to_meta(self._opcode_impl[n.op](n.target, args, kwargs)))

    @property
    def memo_hits(self) -> int:
        """How many nodes of the last run reused a memoised meta result."""
        return self._memo.hits if self._memo is not None else 0

    def get_attr(self, target, args, kwargs) -> Any:
        return to_meta(super().get_attr(target, args, kwargs))

    def call_module(self, target, args, kwargs) -> Any:
        return call_module_on_meta(self.fetch_attr(target), args, kwargs)

    def call_function(self, target, args, kwargs) -> Any:
        """``target(*args, **kwargs)`` on meta values; a function torch has no meta kernel for (with these
        arguments) takes its meta result from ``_META_FUNCTIONS`` instead (e.g. ``F.ctc_loss``)."""
        meta = meta_function(target)
        return meta(*args, **kwargs) if meta is not None else super().call_function(target, args, kwargs)

    def call_method(self, target, args, kwargs) -> Any:
        """``args[0].<target>(...)`` on meta values, or the meta result registered for ``torch.Tensor.<target>``."""
        meta = meta_function(getattr(torch.Tensor, target, None))
        return meta(*args, **kwargs) if meta is not None else super().call_method(target, args, kwargs)


def meta_function(target: Any) -> Optional[Callable[..., Any]]:
    """The meta result function registered for the torch function ``target`` (:func:`register_meta_function`),
    or None."""
    try:
        return _META_FUNCTIONS.get(target)
    except TypeError:                     # an unhashable callable
        return None


#: torch functions without a meta kernel for some of their arguments -> their meta result (same arguments)
_META_FUNCTIONS: Dict[Any, Callable[..., Any]] = {}
#: leaf modules whose forward calls such a function -> their meta result, given the module and the call's arguments
_META_MODULES: Dict[type, Callable[..., Any]] = {}
#: leaf modules whose forward looks at data and whose result has the meta of one argument -> that argument's name
_META_OF_ARGUMENT: Dict[type, str] = {}


def register_meta_function(function: Any, meta: Callable[..., Any]) -> None:
    """Give ``function`` -- a torch function with no meta kernel for some arguments (``F.ctc_loss`` with tensor
    lengths) -- its meta result: ``meta(*args, **kwargs)`` on the call's meta arguments, used by shape
    propagation instead of running ``function`` on meta tensors.  Registered next to the op's lowering rule."""
    _META_FUNCTIONS[function] = meta


def register_meta_module(module: type, meta: Optional[Callable[..., Any]] = None, *,
                         like: Optional[str] = None) -> None:
    """Give the leaf module class ``module`` its meta result without running its forward on meta tensors:
    ``meta(mod, *args, **kwargs)`` (its forward calls a function registered with
    :func:`register_meta_function`), or, with ``like``, the meta of the forward's argument of that name (its
    forward looks at data, e.g. the transformer stacks compare a mask with a causal one via ``.item()``)."""
    if (meta is None) == (like is None):
        raise TypeError("register_meta_module takes one of meta and like")
    if like is not None:
        _META_OF_ARGUMENT[module] = like
    else:
        _META_MODULES[module] = meta


def call_module_on_meta(mod: torch.nn.Module, args, kwargs) -> Any:
    """Run the leaf module ``mod`` on meta ``args``/``kwargs`` with meta versions of its parameters and buffers.

    torch's fused inference paths (the nn.MultiheadAttention / TransformerEncoderLayer fast paths, the nested
    tensors of nn.TransformerEncoder) are switched off meanwhile: they have no meta kernels, and the shapes and
    dtypes they give are those of the plain path.  Modules in ``_META_OF_ARGUMENT`` and ``_META_MODULES`` are
    not run."""
    like = _META_OF_ARGUMENT.get(type(mod))
    if like is not None:
        bound = inspect.signature(mod.forward).bind(*args, **kwargs)
        return torch.empty_like(to_meta(bound.arguments[like]))
    meta = _META_MODULES.get(type(mod))
    if meta is not None:
        bound = inspect.signature(mod.forward).bind(*args, **kwargs)
        return meta(mod, *bound.args, **bound.kwargs)
    return run_module_on_meta(mod, args, kwargs)


def at_traced_sizes(value: Any) -> Any:
    """``value`` (a structure) with each tensor that has symbolic sizes replaced by a meta tensor of the traced
    sizes (their hints; no guard is added): what a meta function passes to torch's own implementation to check
    the arguments as eager would, before it computes the symbolic result by size arithmetic."""
    from torch.fx.experimental.symbolic_shapes import optimization_hint

    def concrete(t):
        if not isinstance(t, torch.Tensor) or all(type(n) is int for n in t.shape):
            return t
        return torch.empty([optimization_hint(n) for n in t.shape], dtype=t.dtype, device="meta")
    return pytree.tree_map(concrete, value)


def has_symbolic_sizes(value: Any) -> bool:
    """Whether a tensor in ``value`` (a structure) has a symbolic size."""
    return any(isinstance(t, torch.Tensor) and not all(type(n) is int for n in t.shape)
               for t in pytree.tree_leaves(value))


def run_module_on_meta(mod: torch.nn.Module, args, kwargs) -> Any:
    """The leaf module ``mod``'s own forward on meta ``args``/``kwargs`` (no registered meta result; see
    :func:`call_module_on_meta`)."""
    enabled = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:                      # (forward alone: the tracer records the hooks around the node, frontend.hooks)
        return _meta_copy(mod, {}).forward(*args, **kwargs)
    finally:
        torch.backends.mha.set_fastpath_enabled(enabled)


def _meta_copy(mod: torch.nn.Module, metas: Dict[int, torch.Tensor]) -> torch.nn.Module:
    """A shallow copy of ``mod`` and its submodules whose parameters and buffers are meta tensors (``metas``:
    original tensor id -> its meta tensor, shared so tied weights stay tied).  ``mod`` itself is untouched --
    unlike ``torch.func.functional_call``, which swaps the tensors on the module for the call, so a thread
    running the model eagerly meanwhile would see meta tensors.  Lists of those tensors a module keeps next to
    them (``nn.LSTM``'s ``_flat_weights``) are remapped too."""
    def meta(t):
        if t is None:
            return None
        if id(t) not in metas:
            metas[id(t)] = to_meta(t)
        return metas[id(t)]
    copy_ = object.__new__(type(mod))
    copy_.__dict__.update(mod.__dict__)
    copy_.__dict__["_parameters"] = {k: meta(v) for k, v in mod._parameters.items()}
    copy_.__dict__["_buffers"] = {k: meta(v) for k, v in mod._buffers.items()}
    copy_.__dict__["_modules"] = {k: None if m is None else _meta_copy(m, metas) for k, m in mod._modules.items()}
    for name, value in mod.__dict__.items():
        if isinstance(value, list) and value and all(isinstance(v, torch.Tensor) and id(v) in metas for v in value):
            copy_.__dict__[name] = [metas[id(v)] for v in value]
    return copy_


class _DataDependent(Exception):
    """Raised by :class:`_FindDataDependent` out of the aten op (``args[0]``) that failed."""


class _FindDataDependent(TorchDispatchMode):
    """Runs aten ops as they are; one that fails and is tagged as data-dependent by torch
    (``Tag.dynamic_output_shape``: nonzero, index with a boolean mask, masked_select, unique, ...;
    ``Tag.data_dependent_output``: ``.item()``'s ``_local_scalar_dense``) raises :class:`_DataDependent`."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        try:
            return func(*args, **(kwargs or {}))
        except Exception:
            tags = getattr(func, "tags", ())
            if torch.Tag.dynamic_output_shape in tags or torch.Tag.data_dependent_output in tags:
                raise _DataDependent(func) from None
            raise


def data_dependent_op(run: Callable[[], Any]) -> Optional[Any]:
    """The aten op at which ``run()`` (an op on meta tensors that just failed) fails because its output shape or
    value depends on tensor data, or None if it fails for another reason (or does not fail).  Only called on
    failure: it runs the op again under a dispatch mode."""
    try:
        with _FindDataDependent():
            run()
    except _DataDependent as e:
        return e.args[0]
    except Exception:
        return None
    return None


def data_dependent_error(node: Node, op: Any) -> DataDependentError:
    """The error for ``node``, which failed on meta tensors in the data-dependent aten op ``op``."""
    if torch.Tag.dynamic_output_shape in getattr(op, "tags", ()):
        what = (f"%{node.name} ({op}) has a data-dependent output shape: how many elements it returns depends "
                f"on the values of its input")
        fix = ("keep shapes fixed: torch.where(mask, x, 0) instead of x[mask] (assigning, x[mask] = v, is fine), "
               "masked reductions instead of reducing a selection ((x * mask).sum(), "
               "torch.where(mask, x, float('-inf')).amax()), a fixed-size torch.topk(x, k) instead of "
               "torch.nonzero / torch.unique; or run that part outside the compiled function")
    else:
        what = f"%{node.name} ({op}) returns a Python number read from the tensor's data (.item())"
        fix = ("keep the value a tensor: x + t.sum() instead of x + t.sum().item() (a 0-d tensor broadcasts); "
               "or run that part outside the compiled function")
    return DataDependentError(
        what, where=node.meta.get(M.SOURCE),
        why="fxla compiles programs with fixed shapes (StableHLO tensors have static shapes) from a trace without "
            "the data, so a result whose shape or Python value depends on the data cannot be part of one",
        fix=fix)


def propagate_shapes(gm: torch.nn.Module, *example_inputs: Any) -> Any:
    """Run :class:`ShapeProp` on ``gm`` and return the output node's metadata
    (``tensor_meta`` if the output holds tensors, else its ``value``)."""
    ShapeProp(gm).run(*example_inputs)
    out = gm.graph.output_node
    return out.meta.get(M.TENSOR_META, out.meta.get(M.VALUE))
