"""The :class:`Tracer`: symbolic tracing of ``nn.Module`` s and functions into a :class:`Graph`.

The core here reads like torch.fx's; two jobs live next to it: the shape-specialising mode in
:mod:`fxla.frontend.concrete` (:class:`~fxla.frontend.concrete.ConcreteShapeTracer`, which
``Tracer(concrete_shapes=True)`` makes) and what forward writes into its modules in
:mod:`fxla.frontend.state_capture`.
"""
from __future__ import annotations

import builtins
import contextlib
import enum
import inspect
import re
import threading
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

import torch

from fxla.base.errors import FxlaError

from . import autocast, checkpointing, grad_enables, meta as M, torch_checks
from .attribute_reads import AttributeReads
from .errors import AutocastError, TraceError
from .factories import FactoryCalls, patched_factories
from .graph import Graph
from .node import CALL_OPCODES, Argument, Node, Target, empty_dict_like
from .object_outputs import objects_as_fields
from .proxy import Proxy, UntracedMutation, tracing_isinstance, _isinstance as _real_isinstance
from .custom_functions import traced_custom_functions
from .eager_values import check_constant
from .untraceable import check_call
from .random_calls import recorded_random_calls
from .remedies import argument_fix, current
from .source import location_of_code, traceback_location, user_frame_location
from .hooks import call_layer, calling_hooks, hooked, inline, traced_through
from .state_capture import AttributeWrite, StateCapture, check_state_versions, final_attribute_writes, state_versions

#: the target of the casts recorded in autocast regions (the function :func:`autocast.autocast_cast` wraps)
_AUTOCAST_CAST = autocast.autocast_cast.__wrapped__

__all__ = ["Tracer", "TracerBase", "symbolic_trace"]
# (AttributeWrite and final_attribute_writes live in state_capture; importable from here as before)

_LITERAL_TYPES = (str, bytes, int, float, bool, complex, type(None), type(Ellipsis), range,
                  torch.dtype, torch.device, torch.layout, torch.memory_format, enum.Enum, type)


_UNSET = object()
#: the submodule name of a root that is itself a leaf (``Tracer().trace(nn.LSTM(...))``): its graph is one
#: ``call_module`` node on ``module`` and its parameters are ``module.<name>`` (like DataParallel's)
LEAF_ROOT = "module"


_ISINSTANCE_LOCK = threading.Lock()

#: One trace at a time per process: a trace patches torch's module class, factory functions and
#: ``torch.compiler``'s flag, and puts back what it found, so two traces in two threads that overlapped would put
#: back each other's patches (leaving them installed for good).  Re-entrant (a trace inside a trace, in its
#: thread); :data:`fxla.pipeline.COMPILING` is this lock too, so compiles and user traces never wait in turn.
TRACING = threading.RLock()
_isinstance_users = 0


def _install_isinstance(change: int) -> None:
    """While any trace runs (in any thread), ``builtins.isinstance`` is :func:`proxy.tracing_isinstance`, which
    answers as before for everything but a Proxy."""
    global _isinstance_users
    with _ISINSTANCE_LOCK:
        _isinstance_users += change
        builtins.isinstance = tracing_isinstance if _isinstance_users else _real_isinstance


@contextlib.contextmanager
def _patched_torch(tracer: "Tracer", state: StateCapture) -> Iterator[None]:
    """``nn.Module.__call__`` / ``__getattr__`` / ``__setattr__`` / ``__delattr__`` / ``register_buffer``,
    ``builtins.isinstance`` and the torch factory functions (:mod:`fxla.frontend.factories`) routed through
    ``tracer`` (see :class:`Tracer`), the reads of the modules' plain attributes recorded
    (:mod:`fxla.frontend.attribute_reads`), and ``torch.compiler.is_compiling()`` true, restored afterwards.  Other
    threads' module calls and writes meanwhile go straight to torch; their traces wait (:data:`TRACING`)."""
    with TRACING:
        yield from _patching_torch(tracer, state)


def _patching_torch(tracer: "Tracer", state: StateCapture) -> Iterator[None]:
    Module = torch.nn.Module
    orig_call, orig_getattr = Module.__call__, Module.__getattr__
    orig_setattr, orig_register, orig_delattr = Module.__setattr__, Module.register_buffer, Module.__delattr__
    thread = threading.get_ident()

    def passing() -> bool:
        """The call goes to torch: the tracer runs module code for real (a leaf module's meta value), or another
        thread runs it (its eager calls and writes are its own)."""
        return tracer._paused or threading.get_ident() != thread

    def module_call(mod, *args, **kwargs):
        if passing():
            return orig_call(mod, *args, **kwargs)
        reads.late(mod)                       # (a module forward made: its reads are recorded too)
        return tracer.call_module(mod, lambda *a, **k: orig_call(mod, *a, **k), args, kwargs)

    # (names under the user's root: a torch layer traced alone is the fresh root's LEAF_ROOT)
    alone = type(tracer.root) is Module and LEAF_ROOT in tracer.root._modules
    reads = AttributeReads(tracer.root, LEAF_ROOT if alone else "")

    def module_getattr(mod, attr):
        if passing():
            return orig_getattr(mod, attr)
        return tracer.getattr(attr, orig_getattr(mod, attr))

    def module_setattr(mod, name, value):
        if passing():
            return orig_setattr(mod, name, value)
        state.setattr(mod, name, value, orig_setattr)

    def module_delattr(mod, name):
        if not passing():
            state.delattr(mod, name)
        return orig_delattr(mod, name)

    def register_buffer(mod, name, tensor, persistent=True):
        if not passing():
            state.check_register_buffer(name, tensor)
        orig_register(mod, name, tensor, persistent)
        if not passing():
            state.registered_buffer(mod, name, tensor)

    versions = state_versions(tracer.root)
    reads.start()
    Module.__call__, Module.__getattr__ = module_call, module_getattr
    Module.__setattr__, Module.register_buffer = module_setattr, register_buffer
    Module.__delattr__ = module_delattr
    _install_isinstance(+1)
    # torch.compiler.is_compiling() is True while fxla traces, as while torch.export traces (its
    # _compiling_state_context): libraries then take their traceable paths (Hugging Face's is_tracing() skips
    # data-dependent shortcuts such as `if attention_mask.all(): mask = None`)
    compiling = torch.compiler._is_compiling_flag
    torch.compiler._is_compiling_flag = True
    try:
        with patched_factories(tracer, tracer._factories), recorded_random_calls(tracer), \
                traced_custom_functions(tracer), grad_enables.recorded(tracer), checkpointing.traced(tracer), \
                torch_checks.traced(tracer):
            yield
        tracer.graph.meta[M.ATTRIBUTE_READS] = reads.result(tracer.graph)
        check_state_versions(versions)
    finally:
        torch.compiler._is_compiling_flag = compiling
        Module.__call__, Module.__getattr__ = orig_call, orig_getattr
        Module.__setattr__, Module.register_buffer = orig_setattr, orig_register
        Module.__delattr__ = orig_delattr
        _install_isinstance(-1)
        state.restore()       # attributes set during the trace: as they were
        reads.stop()


def _parameters(fn, def_loc) -> list:
    """The parameters of the traced function's Python signature (a TraceError for a builtin, which has none)."""
    try:
        return list(inspect.signature(fn).parameters.values())
    except (ValueError, TypeError) as err:
        raise TraceError(f"cannot trace {getattr(fn, '__name__', fn)!r}: {err}", where=def_loc,
                         why="fxla names the traced function's parameters from its Python signature, and a builtin "
                             "(torch.fmod, a C function) has none",
                         fix="wrap it in a Python function: fxla.compile(lambda a, b: torch.fmod(a, b))") from None


def _proxy_type_error(e: TypeError, module_path: str) -> TraceError:
    """A TypeError that names fxla's Proxy (a C function wanted a real tensor: ``zlib.crc32(x)``,
    ``memoryview(x)``, ``torch.Tensor.add_(x, 1)``; ``torch.Size`` of traced sizes) as a TraceError at the user's
    line."""
    if _SIZE_OF_PROXIES.search(str(e)):
        return TraceError(
            f"torch.Size() of traced sizes (such as x.shape[0] * 2): {e}",
            where=traceback_location(e.__traceback__, module_path),
            why="fxla traces the model once for all input shapes, so sizes read from x.shape are symbolic "
                "values (Proxies) that record the arithmetic; torch.Size, a C type, takes ints only",
            fix="pass the sizes as a tuple (x.reshape((n, m)), x.new_zeros((n, m)) and the like take one), or "
                "compile with concrete_shapes=True (one trace per input shape, with ints for sizes; with "
                "dynamic= as well, the marked dims stay symbolic)")
    descriptor = _DESCRIPTOR.match(str(e))
    if descriptor:
        name = descriptor.group(1)
        fix = (f"call it as a method of the tensor: x.{name}(...) instead of torch.Tensor.{name}(x, ...) (or "
               f"the torch function, torch.{name}(x, ...), where there is one)")
    else:
        fix = ("keep the computation in torch operations on the tensor, return the tensor from forward and "
               "use the compiled function's result, or run this part outside the compiled function")
    return TraceError(
        f"a traced tensor was passed where a real tensor or a bytes-like object is needed: {e}",
        where=traceback_location(e.__traceback__, module_path),
        why="while tracing, a tensor is fxla's symbolic stand-in (a Proxy) with no data: it records the "
            "operations torch functions and tensor methods apply to it, but a function that reads the tensor's "
            "memory (the buffer protocol: zlib.crc32, memoryview, hashlib) or an unbound method of the C tensor "
            "class cannot accept it",
        fix=fix)


_DESCRIPTOR = re.compile(r"descriptor '(\w+)' for '[\w.]+' objects doesn't apply")
_SIZE_OF_PROXIES = re.compile(r"torch\.Size\(\) takes an iterable of 'int' \(item \d+ is 'Proxy'\)")


def _caught_error(err: TraceError, def_loc, module_path: str) -> TraceError:
    """The trace ran to its end although ``err`` was raised in it: the traced code caught it (``try: float(x)
    except Exception: ...``) and went on with a value that does not depend on the data."""
    swallowed = traceback_location(err.__traceback__, module_path, innermost=False)
    return TraceError(
        "tracing raised a TraceError that the traced code caught (a try/except around it), and went on",
        where=swallowed or def_loc,
        why="the except branch ran instead of what eager PyTorch computes from the data, so the graph would "
            "silently compute something else; the error was:\n  " + str(err).replace("\n", "\n  "),
        fix="remove the try/except around the operation, or narrow it so it does not catch fxla errors "
            "(fxla.errors.FxlaError), and fix the error above")


def _check_names(given, params, what: str, kind: str, listed: str, def_loc) -> None:
    """TraceError unless every key of ``given`` (concrete_args / example_inputs) names one of ``params``."""
    unknown = set(given) - {p.name for p in params}
    if unknown:
        raise TraceError(
            f"{what} names {kind} parameter(s) {sorted(unknown)}", where=def_loc,
            why=f"the traced signature has {listed} {[p.name for p in params]}",
            fix=f"use the parameter names of forward() as {what} keys")


def _variadic_error(p: inspect.Parameter, fn: Callable, def_loc) -> TraceError:
    empty = '()' if p.kind == p.VAR_POSITIONAL else '{}'
    return TraceError(
        f"cannot trace the variadic parameter '{p}' of {getattr(fn, '__qualname__', fn)}", where=def_loc,
        why="a traced graph has a fixed number of inputs",
        fix=f"give forward() explicit parameters, or fix the parameter at a value (concrete_args={{'{p.name}': "
            f"{empty}}}); a Hugging Face model (its forward also reads optional arguments the trace cannot leave "
            f"open): {current().concrete_shapes}")


def _note_open_defaults(err: Exception, traced: "_Traced", inputs: "_Inputs") -> None:
    """The traced code raised ``err``, an error of its own (a ``ValueError`` of the model): when parameters whose
    default is ``None`` were traced as graph inputs -- each a symbolic tensor, so ``if x is None`` takes the other
    branch -- a note on ``err`` names them and how to fix them (Hugging Face models check which of their optional
    inputs are given: "You must specify exactly one of input_ids or inputs_embeds"); fxla's own errors are left."""
    if isinstance(err, FxlaError):
        return
    params = list(inspect.signature(traced.fn).parameters.values())[len(traced.bound):]
    # (an example input is a value the caller gave: concrete-shapes mode fixes the others at their defaults)
    traced_as_inputs = {name for name, value in inputs.kw_args.items()
                        if isinstance(value, Proxy) and name not in inputs.examples}
    open_defaults = [p.name for p in params if p.default is None and p.name in traced_as_inputs]
    if not open_defaults:
        return
    fixed = ", ".join(f"'{name}': None" for name in open_defaults[:8]) + (", ..." if len(open_defaults) > 8 else "")
    try:
        err.add_note(
            f"fxla: raised while tracing {getattr(traced.fn, '__qualname__', traced.fn)}, which was given symbolic "
            f"tensors for the parameter(s) {open_defaults} although their default is None (a trace has no call "
            f"to read them from), so code that checks `is None` sees a tensor\nfix: fix the ones your calls leave "
            f"out: concrete_args={{{fixed}}}, or {current().concrete_shapes}")
    except (AttributeError, TypeError):        # (an exception class whose __notes__ is not a list: left as it is)
        pass


def _output_error(e: TraceError, def_loc) -> TraceError:
    return TraceError(
        f"forward() returned a value that cannot be a graph output: {str(e).splitlines()[0]}", where=def_loc,
        why="graph outputs are tensors, Python scalars, tuples/lists/dicts of those (named tuples, OrderedDicts "
            "and Hugging Face ModelOutputs keep their type; other dict subclasses become plain dicts) and objects "
            "whose attributes (their __dict__, no __slots__) hold them (a KV cache)",
        fix="return only such values (e.g. the object's tensors in a dict)")


class _Traced(NamedTuple):
    """What :meth:`Tracer.trace` runs: ``fn(*bound, ...)``, or the leaf ``root`` itself when ``leaf_root``."""

    root: Any
    fn: Callable
    bound: Tuple
    leaf_root: bool


class _Inputs(NamedTuple):
    """The traced call's arguments (``pos_args``/``kw_args``: placeholders' Proxies and concrete values), the
    example inputs by parameter name and the parameters fixed at a value no one gave (concrete-shapes mode)."""

    pos_args: List[Any]
    kw_args: Dict[str, Any]
    examples: Dict[str, Any]
    fixed: Dict[str, Any]


def _leaked(tracer: "TracerBase", kind: str, target) -> TraceError:
    """A traced value (a Proxy) used after its trace returned: forward or a hook stored it."""
    what = target if isinstance(target, str) else getattr(target, "__name__", repr(target))
    return TraceError(f"a traced value (a Proxy) was used after fxla's trace had finished ({kind} {what})",
                      where=user_frame_location(tracer.module_path),
                      why="fxla runs forward, and the hooks it calls, once while tracing, with traced values in place "
                          "of tensors; a value forward or a hook stored (features.append(out) in a forward hook, a "
                          "list or object outside the model) holds such a Proxy, not the tensor of any call, and the "
                          "compiled program does not run that Python again",
                      fix="return the tensors from forward instead of storing them (or collect them with the eager "
                          "model, or with torch.compile(model, backend='fxla'), which runs hooks per call)")


class TracerBase:
    """The recording half of a tracer (as in torch.fx): :meth:`create_node`, :meth:`create_proxy`,
    :meth:`create_arg` and :meth:`proxy` write into ``self.graph``, stamping each node's ``meta["source"]``
    with the user's line (``module_path`` names the module whose forward runs).  :class:`Tracer` adds the
    modules, the patching of torch and the :meth:`Tracer.trace` entry point."""

    #: whether Proxies of this tracer carry meta values (concrete shapes, dtypes, devices): see
    #: :class:`~fxla.frontend.concrete.ConcreteShapeTracer`
    concrete_shapes = False
    #: True while :meth:`Tracer.trace` runs the traced code
    tracing = False
    #: True once :meth:`Tracer.trace` returned its graph: a node recorded then comes from a stored Proxy
    _finished = False

    def __init__(self) -> None:
        self.graph: Optional[Graph] = None
        self._module_stack: List[str] = []
        self._autocast_at_start = False           # whether CPU autocast was on when trace() began
        self._speculative: List[Node] = []        # getitem nodes made by iterating a Proxy (dropped if unused)
        self._caught: List[TraceError] = []      # TraceErrors raised by proxies during the current trace
        self._tensor_nodes: Dict[Node, bool] = {}  # whether a node computes a tensor (proxy.eager_class's cache)

    def _note_error(self, err: TraceError) -> TraceError:
        """Remember ``err`` (a :class:`TraceError` about to be raised at the traced code) and return it: a trace
        that completes although one was raised -- the traced code caught it -- fails with it (see :meth:`Tracer.trace`)."""
        if self.tracing:
            self._caught.append(err)
        return err

    def note_speculative(self, node: Node) -> None:
        """``node`` was made by iterating a Proxy of known length: erased at the end of the trace if unused."""
        self._speculative.append(node)

    # ---- meta values (none here: see ConcreteShapeTracer) ---------------------------------
    def meta_value(self, p: Proxy) -> Any:
        """The meta value of ``p``; raises LookupError when it is unknown -- always, in this shape-agnostic
        tracer (:class:`~fxla.frontend.concrete.ConcreteShapeTracer` computes them)."""
        raise LookupError("a shape-agnostic trace has no meta values")

    def meta_error(self, p: Proxy) -> Optional[str]:
        """Why ``p`` has no meta value (None if it has one, or the tracer computes none)."""
        return None

    def create_node(self, kind: str, target: Target, args: Tuple, kwargs: Dict[str, Any],
                    name: Optional[str] = None, type_expr: Optional[Any] = None) -> Node:
        """Insert a node into ``self.graph``, stamping ``meta['source']``."""
        if self._finished:                      # (a Proxy that forward or a hook stored, used after the trace)
            raise _leaked(self, kind, target)
        check_call(kind, target, self.module_path)     # (torch.autograd.grad in forward)
        dtype = autocast.region_dtype(self._autocast_at_start) if kind not in ("placeholder", "output", "get_attr") \
            else None
        if dtype is not None and target is not _AUTOCAST_CAST:
            args, kwargs = self._autocast(kind, target, args, kwargs, dtype)
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        node.meta[M.SOURCE] = user_frame_location(self.module_path)
        if kind in CALL_OPCODES and not torch.is_grad_enabled():     # (torch.no_grad() in forward: passes.grad_mode)
            node.meta[M.GRAD_DISABLED] = True
        return node

    def _autocast(self, kind: str, target: Target, args: Tuple, kwargs: Dict[str, Any], dtype: torch.dtype):
        """The arguments of an op recorded in a CPU autocast region the forward entered: cast as eager autocast
        casts them (see :mod:`fxla.frontend.autocast`)."""
        key = target
        if kind == "call_method":
            key = getattr(torch.Tensor, target, None)
        elif kind == "call_module":
            key = type(self.root.get_submodule(target))
        if key in autocast.COMPOSITES:
            name = getattr(key, "__qualname__", key)
            raise AutocastError(
                f"{name} in a torch.autocast region: fxla cannot follow autocast inside it",
                where=user_frame_location(self.module_path),
                why=f"{name} runs ops that autocast casts (linear, bmm) inside ATen, where the traced graph cannot "
                    "record the casts, so a compiled program would compute in other dtypes than eager",
                fix="run this op outside the autocast region (with torch.autocast('cpu', enabled=False): around it, "
                    "casting its inputs explicitly), or write it with torch.matmul / F.linear")
        cast = dtype if key in autocast.LOWER_PRECISION else torch.float32 if key in autocast.FLOAT32 else None
        if cast is None:
            return args, kwargs

        def one(a):
            return self.create_node("call_function", _AUTOCAST_CAST, (a, cast), {}) if isinstance(a, Node) else a
        return tuple(one(a) for a in args), {k: one(v) for k, v in kwargs.items()}

    def proxy(self, node: Node) -> Proxy:
        """Wrap ``node`` in a :class:`Proxy` of this tracer (override to return a Proxy subclass)."""
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Target, args: Tuple, kwargs: Dict[str, Any],
                     name: Optional[str] = None, type_expr: Optional[Any] = None) -> Proxy:
        """Record ``target(*args, **kwargs)`` and return a Proxy for its result."""
        node = self.create_node(kind, target, self.create_arg(tuple(args)), self.create_arg(dict(kwargs)),
                                name, type_expr)
        return self.proxy(node)

    def create_arg(self, a: Any) -> Argument:
        """Turn a Python value into a node argument (see the Node docstring for what is allowed).

        Proxies become their nodes, aggregates are rebuilt, literals and callables kept (tensors:
        :meth:`Tracer.create_arg`).
        """
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, torch.Size):
            return a
        if isinstance(a, tuple):
            items = tuple(self.create_arg(e) for e in a)
            return type(a)(*items) if hasattr(a, "_fields") else items
        if isinstance(a, list):
            return [self.create_arg(e) for e in a]
        if isinstance(a, dict):
            out = empty_dict_like(a)           # a ModelOutput stays one (see Node: arguments)
            for k, v in a.items():
                if isinstance(k, Proxy):
                    raise self._arg_error(k, "a symbolic value cannot be a dict key")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, _LITERAL_TYPES):
            return a
        if isinstance(a, torch.nn.Module):
            raise self._arg_error(a, "modules cannot be passed as arguments of traced operations")
        if callable(a):
            return a
        raise self._arg_error(a, "only tensors, Python scalars/strings, dtypes, devices, callables "
                                 "and tuples/lists/dicts of those can appear in a graph")

    def guarded_value(self, proxy: Proxy, kind: str) -> Any:
        """The value of ``proxy`` decided from the call's data (``kind``: ``"bool"`` or ``"int"``) and guarded,
        or ``None`` when this tracer does not decide values (see :mod:`fxla.frontend.value_guards`)."""
        return None

    def decided_size(self, proxy: Proxy, kind: Optional[str] = None) -> Any:
        """Where ``proxy`` is a symbolic size or shape (a concrete-shapes trace with symbolic sizes,
        :class:`~fxla.frontend.concrete.ConcreteShapeTracer`), its traced value with each symbol decided (a guard),
        as ``kind`` (``"bool"`` / ``"int"`` / ``"float"``; by default its own); else None."""
        return None

    def _arg_error(self, a: Any, why: str) -> TraceError:
        return TraceError(f"cannot record an argument of type {type(a).__name__}",
                          where=user_frame_location(self.module_path), why=why,
                          fix=argument_fix())

    # ---- where the traced code is ----------------------------------------------------------
    @property
    def module_path(self) -> str:
        """Qualified name of the module whose forward is executing ("" at the root)."""
        return self._module_stack[-1] if self._module_stack else ""


class Tracer(TracerBase):
    """Symbolically executes ``forward`` with :class:`Proxy` inputs, recording a :class:`Graph`.

    Subclass and override the hooks to customise tracing:

    * :meth:`is_leaf_module` -- which submodules become opaque ``call_module`` nodes;
    * :meth:`call_module` -- what happens when a submodule is called;
    * :meth:`create_proxy` / :meth:`create_node` / :meth:`create_arg` -- how calls and their arguments are recorded.

    While :meth:`trace` runs, ``torch.nn.Module.__call__`` is routed through
    :meth:`call_module` and ``torch.nn.Module.__getattr__`` turns the root's parameters and
    buffers into ``get_attr`` proxies, ``torch.nn.Module.__setattr__`` goes to a
    :class:`~fxla.frontend.state_capture.StateCapture` (a traced value assigned to a parameter or buffer is
    recorded as ``copy_`` into it; other attributes forward assigns are recorded to be set after each compiled
    call, and restored after the trace: the user's module is never left holding a Proxy), ``torch.zeros/ones/
    empty/rand/randn`` accept symbolic sizes as varargs (``torch.zeros(x.shape[0], 4)``, recorded as
    ``torch.zeros((getitem, 4))``), ``torch.nn.Module.register_buffer`` refuses a traced value, and
    ``builtins.isinstance`` answers for a Proxy as for its eager value (:func:`proxy.tracing_isinstance`); all
    are restored afterwards, even on error.

    After :meth:`trace`: ``self.graph`` is the graph and ``self.root`` the module its ``get_attr``/``call_module``
    targets refer to (for a plain function: a fresh ``nn.Module`` holding any tensor constants; for a root that is
    itself a leaf, e.g. ``nn.LSTM``: a fresh ``nn.Module`` holding it as ``module``, and the graph is that one
    ``call_module``).

    This tracer is shape-agnostic and torch.fx-compatible: a Proxy has no shape or dtype
    (:attr:`concrete_shapes` is False, :meth:`meta_value` knows none).  ``Tracer(concrete_shapes=True)`` makes
    the shape-specialising :class:`~fxla.frontend.concrete.ConcreteShapeTracer` instead (a subclass; for a
    subclass of Tracer, a class deriving from both).
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> "Tracer":
        if kwargs.get("concrete_shapes", args[0] if cls is Tracer and args else False) and not cls.concrete_shapes:
            cls = _concrete_class(cls)
        return super().__new__(cls)

    def __init__(self, concrete_shapes: bool = False) -> None:
        # (concrete_shapes=True chose the class in __new__)
        super().__init__()
        self.root: Optional[torch.nn.Module] = None
        self._module_paths: Dict[int, str] = {}
        self._tensor_attrs: Dict[int, Tuple[str, torch.Tensor]] = {}
        self._attr_nodes: Dict[str, Node] = {}
        self._constant_count = 0
        #: True while the tracer runs module code for real (a meta value): the patched Module methods pass through
        self._paused = False
        self._state: Optional[StateCapture] = None
        self._factories = FactoryCalls({})

    # ---- hooks ----------------------------------------------------------------------------
    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        """Default: torch's own layers (``torch.nn.*`` / ``torch.ao.nn.*``) are leaves; containers (Sequential,
        ModuleList, ModuleDict), parametrized layers and parametrizations (``torch.nn.utils.*``) and user modules
        are traced through."""
        mod = type(m).__module__
        is_torch = mod == "torch.nn" or mod.startswith(("torch.nn.", "torch.ao.nn."))
        # (parametrized layers -- weight_norm's ParametrizedConv1d -- and their parametrizations are traced
        # through: the layer's forward reads the weight the parametrization computes)
        return is_torch and not mod.startswith("torch.nn.utils.") \
            and not isinstance(m, (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict))

    def call_module(self, m: torch.nn.Module, forward: Callable[..., Any], args: Tuple, kwargs: Dict) -> Any:
        """Record a leaf as one ``call_module`` node; run a non-leaf's ``forward`` inline, and a leaf the traced
        module does not hold when it can be traced through (:func:`fxla.frontend.hooks.traced_through`)."""
        qualname = self.path_of_module(m)
        if qualname is not None and self.is_leaf_module(m, qualname) and not (
                isinstance(m, autocast.TRACED_THROUGH) and autocast.region_dtype(self._autocast_at_start)):
            return call_layer(self, m, qualname, args, kwargs)
        if qualname is None and self.is_leaf_module(m, type(m).__name__) and not traced_through(m):
            raise TraceError(
                f"called a {type(m).__name__} that is not a submodule of the traced module",
                where=user_frame_location(self.module_path),
                why="a leaf module becomes a call_module node naming its qualified path, and this one has none",
                fix="create the module in __init__ and assign it to an attribute (self.name = ...; for "
                    "fxla.compile_step: an attribute of the model, or of a wrapper module holding both)")
        return inline(self, m, qualname, args, kwargs, forward)

    def create_arg(self, a: Any) -> Argument:
        """:meth:`TracerBase.create_arg`, and tensors: the root's parameters, buffers and tensor attributes
        become (cached) ``get_attr`` nodes; other tensors are registered on the root as
        ``_tensor_constant<N>`` and read with ``get_attr``."""
        if isinstance(a, torch.Tensor) and not isinstance(a, Proxy):
            return self._tensor_node(a)
        return super().create_arg(a)

    # ---- attributes -----------------------------------------------------------------------
    def path_of_module(self, mod: torch.nn.Module) -> Optional[str]:
        """Qualified name of ``mod`` inside the root (None if it is not a submodule)."""
        return self._module_paths.get(id(mod))

    def get_attr_proxy(self, qualname: str) -> Proxy:
        """A Proxy reading ``root.<qualname>`` (one get_attr node per qualified name)."""
        node = self._attr_nodes.get(qualname)
        if node is None or node._erased:
            node = self._attr_nodes[qualname] = self.create_node("get_attr", qualname, (), {})
        return self.proxy(node)

    def getattr(self, attr: str, attr_val: Any) -> Any:
        """Called for every ``nn.Module`` attribute lookup that reaches ``__getattr__``."""
        if isinstance(attr_val, torch.Tensor):
            entry = self._tensor_attrs.get(id(attr_val))
            if entry is not None and entry[1] is attr_val:
                return self.get_attr_proxy(entry[0])
        return attr_val

    def _tensor_node(self, t: torch.Tensor) -> Node:
        entry = self._tensor_attrs.get(id(t))
        if entry is None or entry[1] is not t:
            check_constant(t, self.module_path)      # (not a value computed eagerly from parameters)
            name = f"_tensor_constant{self._constant_count}"
            while hasattr(self.root, name):
                self._constant_count += 1
                name = f"_tensor_constant{self._constant_count}"
            self._constant_count += 1
            self.root.__dict__[name] = t       # (a plain attribute; not through the patched __setattr__)
            entry = self._tensor_attrs[id(t)] = (name, t)
        return self.get_attr_proxy(entry[0]).node

    def _collect_root_state(self) -> None:
        self._module_paths = {}
        self._tensor_attrs = {}
        for name, mod in self.root.named_modules(remove_duplicate=False):
            self._module_paths.setdefault(id(mod), name)
            prefix = f"{name}." if name else ""
            for store in (mod._parameters, mod._buffers):     # (first: a buffer is read by its name, not as a
                for key, value in store.items():              # constant an earlier trace left pointing to it)
                    if value is not None:
                        self._tensor_attrs.setdefault(id(value), (prefix + key, value))
            for key, value in vars(mod).items():
                if isinstance(value, torch.Tensor):
                    self._tensor_attrs.setdefault(id(value), (prefix + key, value))

    # ---- entry point ----------------------------------------------------------------------
    def trace(self, root: Union[torch.nn.Module, Callable[..., Any]],
              concrete_args: Optional[Dict[str, Any]] = None,
              example_inputs: Union[None, Tuple, List, Dict[str, Any]] = None) -> Graph:
        """Trace ``root`` (a module's ``forward`` or a function) into a new :class:`Graph`.

        Each parameter of the signature (after ``self``) becomes a ``placeholder`` (keeping defaults), unless named
        in ``concrete_args``: those values are baked in.  The trace runs in grad_enables.caller_grad()'s mode.

        ``example_inputs`` (required by :class:`~fxla.frontend.concrete.ConcreteShapeTracer`, refused by this
        shape-agnostic tracer): a tuple of positional inputs or a dict by parameter name; their shapes/dtypes
        seed the meta values.  Parameters given neither an example input nor a concrete arg are baked in at
        their default (``*args``/``**kwargs`` as empty) -- listed, with the input shapes, in
        ``graph.meta['specialization']``.

        The steps: :meth:`_start` (root, fresh graph), :meth:`_bind_inputs` (placeholders), :meth:`_run`
        (forward on Proxies, with torch patched), :meth:`_create_output`, :meth:`_finish`.  A tensor the code makes
        from constants and then changes in place with a traced value makes the steps before the output run again,
        with that tensor traced from its creation (:mod:`fxla.frontend.factories`).
        """
        promoted, attempt = {}, None      # (factory calls recorded as nodes: fxla.frontend.factories)
        with torch.set_grad_enabled(grad_enables.caller_grad()):   # (the caller's mode the trace is for)
            while attempt is None:
                attempt = self._attempt(root, dict(concrete_args or {}), example_inputs, promoted)
            inputs, result, def_loc = attempt
            self._create_output(result, def_loc)
            self._finish(inputs)
        self._finished = True
        return self.graph

    def _attempt(self, root, concrete_args: Dict[str, Any], example_inputs, promoted: Dict[int, Callable]):
        """:meth:`_start`, :meth:`_bind_inputs` and :meth:`_run`: ``(inputs, result, def_loc)``, or ``None`` when a
        tensor a factory call made from constants was changed with a traced value: that call is then added to
        ``promoted`` (recorded as a node by the next attempt) and this attempt's tensor constants are dropped."""
        traced = self._start(root)
        self._factories = FactoryCalls(promoted)
        before = set(vars(self.root))
        code = getattr(inspect.unwrap(traced.fn), "__code__", None)
        def_loc = location_of_code(code) if code is not None else None
        inputs = self._bind_inputs(traced, concrete_args, example_inputs, def_loc)
        try:
            return inputs, self._run(traced, inputs, def_loc), def_loc
        except Exception as e:
            if not isinstance(e, UntracedMutation) or e.call is None or e.call in promoted:
                _note_open_defaults(e, traced, inputs)     # (the traced code's own error: what the trace gave it)
                raise
            promoted[e.call] = e.factory
        for name in set(vars(self.root)) - before:
            if name.startswith("_tensor_constant"):
                del self.root.__dict__[name]
        return None

    def factory_origin(self, t: torch.Tensor) -> Tuple[Optional[int], Optional[Callable]]:
        """The number and function of the factory call of the running trace that made ``t`` (or the tensor it is a
        view of), or ``(None, None)`` (:mod:`fxla.frontend.factories`)."""
        calls = getattr(self, "_factories", None)
        return calls.origin(t) if calls is not None else (None, None)

    def _start(self, root: Union[torch.nn.Module, Callable[..., Any]]) -> _Traced:
        """Set ``self.root`` and a fresh ``self.graph`` and per-trace state; what to run."""
        leaf_root = isinstance(root, torch.nn.Module) and self.is_leaf_module(root, "") and not hooked(root)
        if leaf_root:           # a torch layer traced on its own: one call_module node, as inside a model
            self.root, fn, bound = torch.nn.Module(), type(root).forward, (root,)
            self.root.add_module(LEAF_ROOT, root)
        elif isinstance(root, torch.nn.Module):
            self.root, fn, bound = root, calling_hooks(root, type(root).forward), (root,)
        else:
            self.root, fn, bound = torch.nn.Module(), root, ()
        self.graph, self._finished = Graph(), False
        self._module_stack, self._attr_nodes, self._constant_count, self._speculative = [], {}, 0, []
        self._state = StateCapture(self)
        # autocast regions the forward enters are recorded as casts (fxla.frontend.autocast); the caller's is not
        self._autocast_at_start = torch.is_autocast_enabled("cpu")
        self._collect_root_state()
        return _Traced(root, fn, bound, leaf_root)

    def _bind_examples(self, params, concrete_args, example_inputs, def_loc) -> Dict[str, Any]:
        """The example inputs by parameter name: none here (a shape-agnostic trace refuses them)."""
        if example_inputs is not None:
            raise TraceError(
                "example_inputs given to a Tracer that is not in concrete_shapes mode", where=def_loc,
                why="the default tracer is shape-agnostic (torch.fx-compatible) and takes no example inputs",
                fix="use Tracer(concrete_shapes=True), or fxla.symbolic_trace(model, example_inputs=...)")
        return {}

    def _fixed_input(self, p: inspect.Parameter, examples: Dict[str, Any], def_loc) -> Any:
        """The value parameter ``p`` (not in concrete_args) is fixed at, or ``_UNSET``: a placeholder."""
        return _UNSET

    def _placeholder(self, p: inspect.Parameter, examples: Dict[str, Any], def_loc) -> Node:
        """The ``placeholder`` node of parameter ``p`` (its default kept)."""
        node = self.create_node("placeholder", p.name, () if p.default is p.empty else (p.default,), {})
        node.meta[M.SOURCE] = def_loc
        return node

    def _bind_inputs(self, traced: _Traced, concrete_args: Dict[str, Any], example_inputs, def_loc) -> _Inputs:
        """A placeholder (or a concrete value) per parameter of the traced signature."""
        params = _parameters(traced.fn, def_loc)[len(traced.bound):]
        _check_names(concrete_args, params, "concrete_args", "unknown", "parameters", def_loc)
        inputs = _Inputs([], {}, self._bind_examples(params, concrete_args, example_inputs, def_loc), {})
        for p in params:
            variadic = p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            if p.name in concrete_args:
                value = concrete_args[p.name]
            else:
                value = self._fixed_input(p, inputs.examples, def_loc)
                if value is not _UNSET:
                    inputs.fixed[p.name] = value
                elif variadic:
                    raise _variadic_error(p, traced.fn, def_loc)
                else:
                    value = self.proxy(self._placeholder(p, inputs.examples, def_loc))
            if p.kind == p.VAR_POSITIONAL:
                inputs.pos_args.extend(value)
            elif p.kind == p.VAR_KEYWORD:
                inputs.kw_args.update(value)
            elif p.kind == p.POSITIONAL_ONLY:
                inputs.pos_args.append(value)
            else:
                inputs.kw_args[p.name] = value
        return inputs

    def _run(self, traced: _Traced, inputs: _Inputs, def_loc) -> Any:
        """Run the traced code on the inputs, torch patched; a TraceError the code caught fails the trace."""
        self._caught, self.tracing = [], True
        try:
            with _patched_torch(self, self._state):
                if traced.leaf_root:
                    result = traced.root(*inputs.pos_args, **inputs.kw_args)    # (through call_module: a leaf)
                    if isinstance(result, Proxy):
                        result.node.meta.setdefault(M.SOURCE, def_loc)
                else:
                    result = traced.fn(*traced.bound, *inputs.pos_args, **inputs.kw_args)
        except TypeError as e:
            if "'Proxy'" not in str(e):
                raise
            raise _proxy_type_error(e, self.module_path) from e
        finally:
            self.tracing = False
        # caught by Python code: its traceback goes on past the frame that raised it.  (torch's C argument parser
        # tries __index__ on a Proxy passed as a size, torch.ones(x.shape), and clears the error before it finds
        # __torch_function__: that one was never seen by Python code.)
        caught = [e for e in self._caught if e.__traceback__ is not None and e.__traceback__.tb_next is not None]
        retrace = [e for e in caught if isinstance(e, UntracedMutation) and e.call is not None
                   and e.call not in self._factories.promoted]
        if retrace:             # caught by the traced code, but the tensor can be traced: trace() goes again
            raise retrace[0]
        if caught:
            raise _caught_error(caught[0], def_loc, self.module_path)
        return result

    def _create_output(self, result: Any, def_loc) -> Node:
        """The ``output`` node returning ``result`` (objects holding traced tensors as their fields tuples:
        :mod:`fxla.frontend.object_outputs`)."""
        try:
            out_arg = self.create_arg(objects_as_fields(result, _traced_value))
        except TraceError as e:
            raise _output_error(e, def_loc) from None
        out = self.create_node("output", "output", (out_arg,), {})
        out.meta[M.SOURCE] = def_loc
        return out

    def _finish(self, inputs: _Inputs) -> None:
        """Erase the getitem nodes made by iterating a Proxy that stayed unused."""
        for node in reversed(self._speculative):
            if not node._erased and not node.users and M.ATTRIBUTE_WRITES not in node.meta:
                self.graph.erase_node(node)


def _traced_value(value: Any) -> bool:
    return isinstance(value, (Proxy, torch.Tensor))


_CONCRETE_CLASSES: Dict[type, type] = {}


def _concrete_class(cls: type) -> type:
    """What ``cls(concrete_shapes=True)`` makes: ConcreteShapeTracer for Tracer, else a class deriving from
    ``cls`` and ConcreteShapeTracer (``cls``'s overrides first)."""
    from .concrete import ConcreteShapeTracer
    if cls is Tracer:
        return ConcreteShapeTracer
    if cls not in _CONCRETE_CLASSES:
        _CONCRETE_CLASSES[cls] = type(cls.__name__, (cls, ConcreteShapeTracer),
                                      {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
    return _CONCRETE_CLASSES[cls]


def symbolic_trace(root: Union[torch.nn.Module, Callable[..., Any]],
                   concrete_args: Optional[Dict[str, Any]] = None,
                   example_inputs: Union[None, Tuple, List, Dict[str, Any]] = None,
                   concrete_shapes: Optional[bool] = None, value_guards: bool = False, symbols=None,
                   real_inputs: Optional[Dict[str, Any]] = None):
    """Trace ``root`` and wrap the result in a GraphModule named after ``root``'s class (or function).

    With ``example_inputs`` (a tuple, or a dict by parameter name) the trace is
    shape-specialising (``Tracer(concrete_shapes=True)``, a
    :class:`~fxla.frontend.concrete.ConcreteShapeTracer`): shapes, dtypes and devices are
    concrete while tracing, and the GraphModule is valid for those input shapes only
    (``gm.specialization``).  Without, it is the default torch.fx-compatible trace.  ``value_guards=True``
    (concrete shapes, with the real call's inputs as examples): data-dependent values are decided from those
    inputs and recorded as guards the caller must check before running the graph on other inputs
    (:mod:`fxla.frontend.value_guards`).  ``symbols`` (concrete shapes, with its FakeTensors as the examples):
    sizes that are its symbols stay symbolic in the graph (:class:`~fxla.frontend.concrete.ConcreteShapeTracer`);
    then ``real_inputs`` (by parameter name) are the call's own values, from which value guards decide.
    """
    from .graph_module import GraphModule
    if concrete_shapes is None:
        concrete_shapes = example_inputs is not None
    tracer = Tracer(concrete_shapes=concrete_shapes)
    tracer.value_guards = bool(value_guards and concrete_shapes)
    if symbols is not None:
        tracer.symbols, tracer.real_inputs = symbols, real_inputs
    graph = tracer.trace(root, concrete_args, example_inputs=example_inputs)
    name = type(root).__name__ if isinstance(root, torch.nn.Module) else getattr(root, "__name__", "Function")
    return GraphModule(tracer.root, graph, name)
