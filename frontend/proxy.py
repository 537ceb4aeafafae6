"""The :class:`Proxy`: a stand-in for a runtime value that records what is done to it."""
from __future__ import annotations

import builtins
import dis
import operator
import sys
import types
from typing import Any, Dict, Optional, Tuple

import torch

from .errors import TraceError
from .symbolic import is_symbolic, plain
from . import meta as M
from .meta import AssumedClass
from .remedies import current, sizes_only, unknown_value_fix
from .node import Node, map_aggregate
from .source import is_internal_file, user_frame_location

__all__ = ["Proxy", "Attribute", "find_tracer", "eager_class", "tracing_isinstance"]

def find_tracer(args: Any, kwargs: Any = None):
    """The tracer of the first :class:`Proxy` inside ``args``/``kwargs`` (None if none)."""
    found = []

    def visit(a: Any) -> Any:
        if isinstance(a, Proxy) and not found:
            found.append(a.tracer)
        return a
    map_aggregate((args, kwargs or {}), visit)
    return found[0] if found else None


class Proxy:
    """A symbolic value during tracing: wraps the :class:`Node` that will compute it.

    Every operation on a Proxy is recorded into ``tracer.graph`` instead of executed:

    * torch functions (via ``__torch_function__``): ``call_function`` with the torch
      function object as target; Tensor methods/properties reached that way become
      ``call_method`` with the method name;
    * ``proxy.name(...)``: ``call_method`` named ``name``; ``proxy.name`` used as a value:
      ``call_function builtins.getattr(proxy, 'name')``;
    * Python operators (also reflected and in-place), ``proxy[idx]``, ``proxy[idx] = v``:
      ``call_function`` of the matching ``operator`` function.

    Asking for a concrete value (``bool``, ``len``, ``int``, ``float``, ``index``,
    iteration) raises :class:`TraceError` -- except tuple unpacking of a known length
    (``a, b = proxy``), which yields ``proxy[0]``, ``proxy[1]``.  So does asking for the data on the host
    (``.numpy()``, ``.tolist()``, NumPy functions, ``bytes()``) and formatting a Proxy as text from user
    code while tracing (``f"{x}"``, ``str(x)``), which would bake ``"Proxy(x)"`` into the program.  Each
    such error is also recorded on the tracer: a trace during which user code caught one fails with it.

    While tracing, ``isinstance(proxy, torch.Tensor)`` is True for a traced tensor (see
    :func:`tracing_isinstance`); ``type(proxy) is torch.Tensor`` is not.
    """

    def __init__(self, node: Node, tracer) -> None:
        self.node = node
        self.tracer = tracer

    def __repr__(self) -> str:
        if self._formatted_by_user(sys._getframe(1)):
            return repr(self._user_text())
        return f"Proxy({self.node.name})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self._formatted_by_user(sys._getframe(1)):
            return format(self._user_text(), spec)
        return format(repr(self), spec)

    def _user_text(self) -> Any:
        """What user code formats (``f"got {x.shape}"``): a symbolic size or shape is decided as its numbers, as
        ``int()`` decides a size (a guard that fixes those dims: text computed from a size could steer anything
        later, so it must hold eager's number); anything else has no value to show."""
        value = self.tracer.decided_size(self)
        if value is None:
            raise self._host_value_error("cannot format as text (str() / repr() / f-string / format() / %)")
        return value

    def _formatted_by_user(self, caller) -> bool:
        """Text asked for by user code while its trace runs (``f"{x}"``, ``str(x)``, ``"%s" % x``): the text
        would be baked into the graph.  fxla's and torch's own messages and reprs after the trace get it."""
        return self.tracer.tracing and not is_internal_file(caller.f_code.co_filename)

    def __getattr__(self, name: str) -> "Attribute":
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if name in _HOST_METHODS:         # the call is the error (hasattr(x, "numpy") answers as for a tensor)
            return _HostMethod(self, name)
        if name[0] == "_" and not hasattr(torch.Tensor, name) and eager_class(self) is not Proxy:
            # a private attribute no tensor has (nn.Parameter's isinstance check reads `_is_param`)
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")
        if self.tracer.concrete_shapes:
            meta = self._tensor_meta()
            if meta is not None:
                if name in _CONCRETE_ATTRS or name in _CONCRETE_METHODS:
                    return _concrete_attribute(self, meta, name)
                if not hasattr(meta, name):  # duck typing (hasattr(x, "jax")) sees a real tensor's answer
                    raise AttributeError(f"'Tensor' object has no attribute '{name}'")
            elif isinstance(getattr(self._meta_or_none(), name, None), _PLAIN):
                # (a number of a structure argument, a namedtuple's field: the trace's constant, as a call folds it)
                return self.tracer.create_proxy("call_function", builtins.getattr, (self, name), {})
        if name == "requires_grad":
            flag = _parameter_flag(self)
            return _RequiresGrad(self, name) if flag is None else flag
        return Attribute(self, name)

    def _meta_or_none(self) -> Any:
        try:
            return self.tracer.meta_value(self)
        except LookupError:
            return None

    # ---- concrete_shapes mode ----------------------------------------------------------------
    def _meta(self) -> Any:
        """This value's meta value, or ``_NO_META`` (default mode, or the op failed on meta)."""
        if not self.tracer.concrete_shapes:
            return _NO_META
        try:
            return self.tracer.meta_value(self)
        except LookupError:
            return _NO_META

    def _tensor_meta(self) -> Optional[torch.Tensor]:
        m = self._meta()
        return m if isinstance(m, torch.Tensor) else None

    def __call__(self, *args: Any, **kwargs: Any) -> "Proxy":
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __getitem__(self, idx: Any) -> "Proxy":
        return self.tracer.create_proxy("call_function", operator.getitem, (self, idx), {})

    def __setitem__(self, idx: Any, value: Any) -> None:
        self.tracer.create_proxy("call_function", operator.setitem, (self, idx, value), {})

    # ---- concrete-value requests -------------------------------------------------------------
    def _host_value_error(self, what: str) -> TraceError:
        """A request for the tensor's data on the host (``.numpy()``, ``.tolist()``, ``np.sin(x)``, ``bytes(x)``,
        formatting it as text), recorded on the tracer so that a trace that catches it still fails."""
        return self.tracer._note_error(TraceError(
            f"{what} on a traced tensor (%{self._node_name})", where=user_frame_location(self.tracer.module_path),
            why="this needs the tensor's data on the host, and a traced tensor has no values: tracing records "
                "operations for the compiled program to run later, so data-dependent Python values cannot be "
                "part of it",
            fix="keep the computation in torch operations on the tensor (np.sin(x) -> torch.sin(x)), return "
                "the tensor from forward and convert the compiled function's result (out.numpy(), out.tolist()), "
                "or run this part outside the compiled function"))

    @property
    def _node_name(self) -> str:
        """The node's name, for messages (an :class:`Attribute`'s without creating its getattr node)."""
        return self.node.name

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise self._host_value_error("cannot convert to a NumPy array (np.asarray / np.array)")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        raise self._host_value_error(f"cannot apply the NumPy function np.{getattr(ufunc, '__name__', ufunc)}")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raise self._host_value_error(f"cannot apply the NumPy function np.{getattr(func, '__name__', func)}")

    def __bytes__(self) -> bytes:
        raise self._host_value_error("cannot convert to bytes")

    def _no_concrete_value(self, what: str, *, truth: bool = False, length: bool = False) -> TraceError:
        return self.tracer._note_error(self._concrete_value_error(what, truth, length))

    def _concrete_value_error(self, what: str, truth: bool, length: bool) -> TraceError:
        """``truth``: a truth value was asked for; ``length``: the length (of a tensor: its first size)."""
        loc = user_frame_location(self.tracer.module_path)
        concrete = self.tracer.concrete_shapes
        sizes = (length and eager_class(self) is torch.Tensor) or sizes_only(self.node)
        fix = unknown_value_fix(sizes=sizes, truth=truth, concrete_shapes_mode=concrete)
        if concrete and isinstance(self._meta(), (torch.SymInt, torch.SymFloat)):
            return TraceError(f"{what} of a symbolic size (%{self.node.name}) during tracing", where=loc,
                              why="with dynamic= this size is a symbol while tracing (a number, not a sequence: "
                                  "torch.tensor(x.size(1)) asks for its length)",
                              fix="make the tensor from a traced value (torch.full((), x.size(1)), x.new_full((), "
                                  "x.size(1))), or leave that dim static (drop it from dynamic=)")
        if concrete:
            err = self.tracer.meta_error(self)
            why = ("in concrete_shapes mode shapes, dtypes and devices are concrete, but tensor values have "
                   "no concrete value during tracing: this depends on the data, so one trace cannot "
                   "capture every outcome")
            if err:
                why += f"; the shape of %{self.node.name} is unknown too ({err})"
            return TraceError(f"{what} of a symbolic value (%{self.node.name}) during tracing",
                              where=loc, why=why, fix=fix)
        return TraceError(
            f"{what} of a symbolic value (%{self.node.name}) during tracing", where=loc,
            why=("fxla traces forward() with symbolic values that have no concrete value during tracing, "
                 "so Python control flow, len(), iteration and int()/float()/bool() on them cannot be "
                 "decided"),
            fix=fix)

    def _static_length(self) -> Optional[int]:
        """len() known from the meta value (concrete_shapes mode): dim 0 of a tensor, or the
        length of a tuple/list (whose structure the example inputs fixed)."""
        m = self._meta()
        if isinstance(m, torch.Tensor):
            if m.dim() == 0:
                return None
            if isinstance(m.shape[0], torch.SymInt):     # (a symbolic size: decided, as a guard)
                return self.tracer.decided_size(self.tracer.create_proxy(
                    "call_method", "size", (self, 0), {}), "int")
            return m.shape[0]
        if isinstance(m, (tuple, list)):
            return len(m)
        return _known_arity(self.node)

    def __bool__(self) -> bool:
        decided = self.tracer.guarded_value(self, "bool")    # a value guard (concrete_shapes on a real call)
        if decided is not None:
            return decided
        raise self._no_concrete_value("cannot use the truth value (bool / `if` / `while` / `and` / `or`)",
                                      truth=True)

    def __len__(self) -> int:
        n = self._static_length()
        if n is not None:
            return n
        raise self._no_concrete_value("cannot take len()", length=True)

    def __index__(self) -> int:
        decided = self.tracer.guarded_value(self, "int")
        if decided is not None:
            return decided
        raise self._no_concrete_value("cannot use as a Python index (__index__)")

    def __int__(self) -> int:
        decided = self.tracer.guarded_value(self, "int")
        if decided is not None:
            return decided
        raise self._no_concrete_value("cannot convert to int")

    def __float__(self) -> float:
        decided = self.tracer.guarded_value(self, "float")
        if decided is not None:
            return decided
        raise self._no_concrete_value("cannot convert to float")

    def __iter__(self):
        caller = sys._getframe(1)
        n = _unpack_length(caller)
        if n is not None:
            return iter([self[i] for i in range(n)])
        n = self._static_length()
        if n is not None:
            return self._speculative_iter(n)
        raise self._no_concrete_value("cannot iterate over (for-loop / list() / unpacking of unknown length)",
                                      length=True)

    def _speculative_iter(self, n: int):
        # lazily: code that only peeks at the first element (e.g. HF ModelOutput.__post_init__)
        # leaves one getitem node, which the tracer drops at the end if it stayed unused
        for i in range(n):
            item = self[i]
            if isinstance(item, Proxy):     # (concrete shapes: an element that is a plain int is just that value)
                self.tracer.note_speculative(item.node)
            yield item

    def __contains__(self, item: Any) -> bool:
        raise self._no_concrete_value("cannot test membership (`in`)")

    # ---- torch functions ---------------------------------------------------------------------
    @classmethod
    def __torch_function__(cls, orig_method, types, args: Tuple = (), kwargs: Optional[Dict] = None):
        args, kwargs = args or (), kwargs or {}
        tracer = find_tracer(args, kwargs)
        if torch.overrides.is_tensor_method_or_property(orig_method):
            name = orig_method.__name__
            if args and isinstance(args[0], torch.Tensor) and not isinstance(args[0], Proxy) \
                    and _is_inplace_name(name):
                raise tracer._note_error(_untraced_mutation(tracer, name, args[0]))
            return tracer.create_proxy("call_method", name, args, kwargs)
        out = kwargs.get("out")
        if isinstance(out, torch.Tensor) and not isinstance(out, Proxy):     # torch.add(proxy, 1, out=t)
            raise tracer._note_error(_untraced_mutation(tracer, f"{getattr(orig_method, '__name__', 'op')}(out=)",
                                                        out))
        return tracer.create_proxy("call_function", orig_method, args, _restore_dropped(orig_method, kwargs))


#: torch functions whose ``__torch_function__`` call leaves out an argument the user passed, and which ones:
#: torch 2.13's ``F.l1_loss`` lists ``weight`` among the arguments it dispatches on but does not pass it on to the
#: override (``F.mse_loss`` and ``F.huber_loss`` do), so a graph would silently compute the unweighted loss.
_DROPPED_ARGUMENTS: Dict[Any, Tuple[str, ...]] = {torch.nn.functional.l1_loss: ("weight",)}


def _restore_dropped(orig_method, kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """``kwargs`` with the arguments ``_DROPPED_ARGUMENTS`` names taken back from the torch function's own frame
    (its locals hold what the caller passed) where they are not ``None`` and the override was not given them."""
    try:
        names = _DROPPED_ARGUMENTS.get(orig_method)
    except TypeError:                     # an unhashable callable
        return kwargs
    if not names:
        return kwargs
    frame = sys._getframe(1)
    while frame is not None and frame.f_code is not orig_method.__code__:
        frame = frame.f_back
    if frame is None:                     # called as an override directly, not from the function itself
        return kwargs
    restored = {n: frame.f_locals[n] for n in names if n not in kwargs and frame.f_locals.get(n) is not None}
    return {**kwargs, **restored} if restored else kwargs


def _is_inplace_name(name: str) -> bool:
    if name.startswith("__"):
        return name == "__setitem__" or (name.startswith("__i") and name not in ("__index__", "__int__",
                                                                                 "__invert__"))
    return name.endswith("_")


class UntracedMutation(TraceError):
    """An in-place change of a concrete tensor with a traced value; ``call``: the number of the factory call that
    made the tensor in this trace (:mod:`fxla.frontend.factories`: the tracer then traces again with that call
    recorded as a node), or ``None``; ``factory``: its function."""

    def __init__(self, *args: Any, call: Optional[int] = None, factory: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.call, self.factory = call, factory


def _untraced_mutation(tracer, name: str, target: torch.Tensor, random: bool = False) -> TraceError:
    """``t.add_(proxy)`` / ``t[i] = proxy`` on a concrete tensor ``t``: its later uses would read trace-time data.
    ``random``: ``t.uniform_()`` and the other in-place random fills (fxla.frontend.random_calls)."""
    call, factory = tracer.factory_origin(target)
    if random:
        return UntracedMutation(
            f"in-place random fill .{name}() of a tensor that is not traced (a parameter created in forward, or a "
            f"concrete tensor made from constants)", where=user_frame_location(tracer.module_path),
            why="filled while tracing, its numbers would be drawn once and be the same on every call, where eager "
                "draws new ones each time",
            fix="draw from a traced tensor (torch.rand_like(x), x.new_empty(3).uniform_()) or create the tensor "
                "with a torch factory in forward (torch.empty(3, 4).uniform_() is traced); create layers in "
                "__init__", call=call, factory=factory)
    what = "t[...] = <traced value>" if name == "__setitem__" else f"in-place .{name}(<traced value>)"
    return UntracedMutation(
        f"{what} on a tensor that is not traced (a concrete tensor computed at trace time from constants, e.g. "
        f"torch.zeros(3, 4) + 1)", where=user_frame_location(tracer.module_path),
        why="the tensor's later uses are evaluated while tracing, with its old contents, and cannot see the "
            "change",
        fix="create the tensor from a traced value (x.new_zeros(3, 4), torch.zeros_like(x)), or compute the "
            "new value out of place", call=call, factory=factory)


#: torch ops that always return a (values, indices)-style pair (the pools' ``return_indices=True`` forms
#: included); ``max``/``min``/``median`` only with a dim
_PAIR_FUNCTIONS = frozenset({torch.sort, torch.topk, torch.kthvalue, torch.mode, torch.aminmax, torch.frexp,
                             torch.std_mean, torch.var_mean, torch.cummax, torch.cummin,
                             torch.max_pool1d_with_indices,
                             *(getattr(torch.nn.functional, f"{kind}_pool{n}d_with_indices")
                               for kind in ("max", "adaptive_max") for n in (1, 2, 3))})
_PAIR_METHODS = frozenset({"sort", "topk", "kthvalue", "mode", "aminmax", "frexp", "cummax", "cummin"})
_PAIR_WITH_DIM = (frozenset({torch.max, torch.min, torch.median, torch.nanmedian}),
                  frozenset({"max", "min", "median", "nanmedian"}))


def _known_arity(node: Node) -> Optional[int]:
    """The number of results of a call known to return a fixed-size tuple (``torch.sort(x)``: 2), so that
    ``(*torch.sort(x),)`` and ``len(...)`` trace without example inputs; ``None`` otherwise."""
    if node.op == "call_function":
        functions, with_dim = _PAIR_FUNCTIONS, _PAIR_WITH_DIM[0]
    elif node.op == "call_method":
        functions, with_dim = _PAIR_METHODS, _PAIR_WITH_DIM[1]
    else:
        return None
    if node.target in functions:
        return 2
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    return 2 if node.target in with_dim and isinstance(dim, int) and not isinstance(dim, bool) else None


_NO_META = object()

#: Tensor methods that hand the tensor's data to the host (a TraceError while tracing, see ``_host_value_error``)
_HOST_METHODS = frozenset({"numpy", "tolist", "__array__"})
#: Tensor attributes that are tensors (``x.T`` is an :class:`Attribute` until used)
_TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag", "data", "grad"})
#: methods whose result is not a tensor, by name (default mode; in concrete_shapes mode the meta value says)
_NON_TENSOR_METHODS = frozenset({"item", "tolist", "size", "dim", "ndimension", "numel", "nelement",
                                 "element_size", "is_floating_point", "is_complex", "get_device", "stride",
                                 "storage_offset", "is_contiguous", "data_ptr", "__len__"})


_isinstance = builtins.isinstance


def tracing_isinstance(obj: Any, cls: Any) -> bool:
    """``builtins.isinstance`` while a trace runs (the tracer installs it): as ever, except that a traced tensor
    is an instance of what its eager value is an instance of (:func:`eager_class`), so that
    ``isinstance(x, torch.Tensor)`` takes eager's branch.  C code (torch's argument parser among it) keeps
    the real check, so a Proxy is never taken for a tensor's memory.  (Making ``Proxy.__class__`` say
    ``torch.Tensor`` would fool that parser too: ``torch.pow(proxy, 3.0)`` then crashes the process.)"""
    if _isinstance(obj, Proxy) and not _isinstance(obj, cls):
        eager = eager_class(obj)
        if eager is Proxy:          # (a concrete-shapes input holding tensors, a dict or tuple: its meta's class)
            meta = obj._meta() if type(obj) is Proxy else _NO_META
            return meta is not _NO_META and meta is not None and _isinstance(meta, cls)
        answer = _is_subclass(eager, cls)
        if obj.node.op == "placeholder" and _asked_by_model(sys._getframe(1)):    # (the model's own check: each
            assumed = obj.node.meta.get(M.CLASS_ASSUMED)                            # call's value must answer it
            if assumed is None:                                                     # alike: prepare_graph)
                assumed = obj.node.meta[M.CLASS_ASSUMED] = AssumedClass(
                    eager, user_frame_location(obj.tracer.module_path), current(), [])
            assumed.decisions.append((cls, answer))
        return answer
    return _isinstance(obj, cls)


def _asked_by_model(frame) -> bool:
    """Whether the isinstance call made from ``frame`` is the model's own (``torch.is_tensor(t)`` too, whose
    isinstance runs in torch's file), not torch's or fxla's code."""
    if frame.f_code is _IS_TENSOR_CODE:
        frame = frame.f_back
    return frame is not None and not is_internal_file(frame.f_code.co_filename)


_IS_TENSOR_CODE = torch.is_tensor.__code__


def _is_subclass(eager: type, cls: Any) -> bool:
    """``issubclass(eager, cls)`` for what isinstance accepts as ``cls``: a class, a ``X | Y`` union, or a
    (nested) tuple of those."""
    if type(cls) is tuple or type(cls) is types.UnionType:
        return any(_is_subclass(eager, c) for c in (cls if type(cls) is tuple else cls.__args__))
    return _isinstance(cls, type) and issubclass(eager, cls)


def eager_class(p: "Proxy") -> type:
    """The class ``p``'s value has in eager PyTorch, as far as tracing knows: ``torch.Tensor`` for a tensor
    (``nn.Parameter`` and other tensor subclasses for a module's tensors read with ``get_attr``), else ``Proxy``
    (nothing known).  concrete_shapes mode asks the meta value; the default mode, which has none, counts every
    value as a tensor except the sizes, dims, dtypes, devices, numbers and fixed-size tuples that tensor methods
    and attributes return, and Python arithmetic on those only.  Cached on the Proxy."""
    cls = p.__dict__.get("_eager_class")
    if cls is None:
        cls = p.__dict__["_eager_class"] = _eager_class(p)
    return cls


def _eager_class(p: "Proxy") -> type:
    if type(p) is Attribute or issubclass(type(p), Attribute):
        return torch.Tensor if p.attr in _TENSOR_ATTRS and eager_class(p.root) is not Proxy else Proxy
    node = p.node
    if node.op == "get_attr":
        obj: Any = p.tracer.root
        for atom in node.target.split("."):   # (not getattr: while tracing, a module's tensors read as proxies)
            found = vars(obj) if not isinstance(obj, torch.nn.Module) else next(
                (d for d in (obj._parameters, obj._buffers, obj._modules, vars(obj)) if atom in d), {})
            obj = found.get(atom)
        return type(obj) if isinstance(obj, torch.Tensor) else torch.Tensor
    meta = p._meta()
    if meta is not _NO_META:
        return torch.Tensor if isinstance(meta, torch.Tensor) else Proxy
    return torch.Tensor if _default_mode_tensor(node, p.tracer._tensor_nodes) else Proxy


def _default_mode_tensor(node: Node, known: Dict[Node, bool]) -> bool:
    """Whether ``node`` computes a tensor, judged from how it was made (see :func:`_eager_class`); ``known``
    caches the answers (a loop, not recursion: a chain of Python operators can be long)."""
    stack = [node]
    while stack:
        n = stack[-1]
        if n in known:
            stack.pop()
            continue
        kind = _tensor_by_origin(n)
        if kind is None:                  # a Python operator: a tensor if any operand is one
            pending = [a for a in n.all_input_nodes if a not in known]
            if pending:
                stack.extend(pending)
                continue
            kind = any(known[a] for a in n.all_input_nodes)
        known[n] = kind
        stack.pop()
    return known[node]


def _tensor_by_origin(node: Node) -> Optional[bool]:
    """True/False when the kind of node decides whether it computes a tensor, None for a Python operator."""
    if _known_arity(node) is not None:
        return False
    if node.op == "call_method":
        return node.target not in _NON_TENSOR_METHODS
    if node.op != "call_function":
        return True                       # placeholders, get_attr, call_module
    if node.target is builtins.getattr:
        return len(node.args) > 1 and node.args[1] in _TENSOR_ATTRS
    if getattr(node.target, "__module__", None) == "_operator":  # x.shape[0] * 2, x[0], x + 1
        return None
    return True


#: Tensor attributes / methods that are concrete Python values in concrete_shapes mode.
_CONCRETE_ATTRS = frozenset({"shape", "dtype", "device", "ndim", "layout", "is_cuda", "is_cpu", "is_meta",
                             "is_sparse", "is_quantized", "is_mkldnn", "is_nested"})
_CONCRETE_METHODS = frozenset({"size", "dim", "ndimension", "numel", "nelement", "element_size",
                               "is_floating_point", "is_complex", "get_device"})


def _concrete_attribute(p: "Proxy", meta: torch.Tensor, name: str) -> Any:
    device = p.tracer.device
    if name == "device":
        return device
    if name in ("is_cuda", "is_cpu", "is_meta"):
        return device.type == name[3:]
    if name == "get_device":
        return lambda: -1 if device.type == "cpu" else (device.index or 0)
    value = getattr(meta, name)
    if name in _CONCRETE_METHODS:
        def call(*args: Any, **kwargs: Any) -> Any:
            if find_tracer(args, kwargs) is not None:  # x.size(proxy): record it
                return p.tracer.create_proxy("call_method", name, (p,) + args, kwargs)
            result = value(*args, **kwargs)
            if is_symbolic(result):                    # (a symbolic size: computed by the graph)
                return p.tracer.create_proxy("call_method", name, (p,) + args, kwargs)
            return plain(result)
        return call
    if is_symbolic(value):
        return p.tracer.create_proxy("call_function", builtins.getattr, (p, name), {})
    return plain(value)                                # (sizes the trace fixed: plain numbers)


def _unpack_length(frame) -> Optional[int]:
    """If ``frame`` is executing ``UNPACK_SEQUENCE n`` right now, return n."""
    if frame.f_lasti < 0:
        return None
    for inst in dis.get_instructions(frame.f_code):
        if inst.offset == frame.f_lasti:
            return inst.argval if inst.opname == "UNPACK_SEQUENCE" else None
    return None


_PLAIN = (bool, int, float, complex, str)


class Attribute(Proxy):
    """``proxy.name``: a ``call_method`` if called, else (lazily) a ``getattr`` node."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Optional[Node] = None

    @property
    def node(self) -> Node:
        """The ``getattr`` node, created on first use (not created when the attribute is only called)."""
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", builtins.getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


def _parameter_flag(p: "Proxy") -> Optional[bool]:
    """``p.requires_grad`` where ``p`` is a parameter of the traced model (``self.pos_embed.requires_grad``): the
    flag itself, watched from then on (``graph.meta[REQUIRES_GRAD_READS]``: a change traces again); else None."""
    node = p.node
    if node.op != "get_attr":
        return None
    owner, _, attr = node.target.rpartition(".")
    try:
        module = p.tracer.root.get_submodule(owner)
    except AttributeError:
        return None
    if not isinstance(module._parameters.get(attr), torch.nn.Parameter):
        return None
    from .grad_enables import user_path
    path = user_path(p.tracer, owner)
    if path is None:
        return None
    p.tracer.graph.meta.setdefault(M.REQUIRES_GRAD_READS, set()).add(path)
    return module._parameters[attr].requires_grad


class _RequiresGrad(Attribute):
    """``x.requires_grad`` of a traced tensor other than a parameter: no value a trace could keep (each call's
    inputs, parameters and grad mode decide it, and one trace serves calls of every kind), so deciding anything
    from it is a TraceError."""

    @property
    def node(self) -> Node:
        if self._node is None:
            made = self.tracer.create_proxy("call_function", builtins.getattr, (self.root, self.attr), {})
            if not isinstance(made, Proxy):         # (a concrete-shapes trace folds it to its meta value's answer)
                raise self._undecided()
            self._node = made.node
        return self._node

    def __bool__(self) -> bool:
        raise self._undecided()

    def _undecided(self) -> TraceError:
        return self.tracer._note_error(TraceError(
            "cannot decide `.requires_grad` of a traced tensor while tracing",
            where=user_frame_location(self.tracer.module_path),
            why="it depends on each call (the caller's grad mode, which inputs and parameters require grad), and "
                "one trace serves every such call",
            fix="branch on torch.is_grad_enabled() (fxla traces calls under no_grad apart where forward reads it), "
                "on self.training, or on an attribute or argument of your own"))

    @property
    def _node_name(self) -> str:
        return f"{self.root._node_name}.{self.attr}"


class _HostMethod(Attribute):
    """``proxy.numpy`` / ``proxy.tolist``: calling it is a TraceError (the tensor's data on the host)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        raise self.root._host_value_error(f"cannot call .{self.attr}()")


# ---- Python operators ------------------------------------------------------------------------
_REFLECTABLE = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
                "lshift", "rshift", "and_", "or_", "xor")
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
_UNARY = ("neg", "pos", "abs", "invert")
_INPLACE = ("iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "imatmul",
            "ilshift", "irshift", "iand", "ior", "ixor")


def _dunder(op_name: str) -> str:
    return f"__{op_name.rstrip('_')}__"


def _define_binary(op_name: str) -> None:
    fn = getattr(operator, op_name)

    def impl(self, other):
        return self.tracer.create_proxy("call_function", fn, (self, other), {})
    impl.__name__ = _dunder(op_name)
    setattr(Proxy, impl.__name__, impl)


def _define_reflected(op_name: str) -> None:
    fn = getattr(operator, op_name)

    def impl(self, other):
        return self.tracer.create_proxy("call_function", fn, (other, self), {})
    impl.__name__ = f"__r{op_name.rstrip('_')}__"
    setattr(Proxy, impl.__name__, impl)


def _define_unary(op_name: str) -> None:
    fn = getattr(operator, op_name)

    def impl(self):
        return self.tracer.create_proxy("call_function", fn, (self,), {})
    impl.__name__ = _dunder(op_name)
    setattr(Proxy, impl.__name__, impl)


for _name in _REFLECTABLE + _COMPARISONS + _INPLACE:
    _define_binary(_name)
for _name in _REFLECTABLE:
    _define_reflected(_name)
for _name in _UNARY:
    _define_unary(_name)
Proxy.__hash__ = object.__hash__  # __eq__ is symbolic; hashing stays identity-based
