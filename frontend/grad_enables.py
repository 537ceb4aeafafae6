"""The grad mode as forward sees it while it is traced: the caller's mode it reads, and where it turns grad on.

**The caller's mode.** A trace is made for a caller's grad mode, :func:`caller_grad` (``True`` unless a trace is
made inside :func:`assuming` ``(False)``): the tracer runs forward with grad mode set to it (forward's own
``torch.no_grad()`` regions are recorded: :mod:`fxla.frontend.passes.grad_mode`).  The graph of a trace made for
an enabled caller serves a caller under ``torch.no_grad()`` too -- unless forward *reads* the mode
(``torch.is_grad_enabled()``: a branch, ``set_grad_enabled(torch.is_grad_enabled())``, Hugging Face's ``use_cache``
under gradient checkpointing), which such a graph answered with the trace's ``True``.  The tracer notes the first
read by the model's code as ``graph.meta[GRAD_MODE_READ]`` (``GradModeRead(enabled, where)``; :func:`reads_grad_mode`);
a call under ``no_grad`` of such a trace is then routed to a trace made for it (:func:`assuming` ``(False)``;
``fxla.compile``'s call variants, :mod:`fxla.none_inputs`), where every read answers as eager's.  Grad mode is a
thread's own: the route is chosen per call, so threads in both modes each run their own trace.

torch's ``nn.TransformerEncoder`` reads it too: in ``eval()`` with a ``src_key_padding_mask`` it takes its
nested-tensor path (padded positions zero) only where grad mode is off or none of its parameters requires grad, so
such a call counts as a read, and its parameters' ``requires_grad`` as watched values of the trace
(``graph.meta[REQUIRES_GRAD_READS]``: the encoders' paths; fxla lowers the encoder whole, deciding the path from them:
``fxla.lowering.rules.attention``).

**Forward turning grad on.** A region that turns grad mode *on* inside forward changes nothing for an enabled
caller, but eager gives what it computes a history when the caller runs under ``torch.no_grad()`` (an energy
model's forces, an inner adversarial step), and a compiled call under ``no_grad`` runs forward only.  The tracer
notes the first such switch as ``graph.meta[GRAD_ENABLED_AT]`` (the user's line), and a call under ``no_grad`` is
routed as for a read, to a trace made for it (``graph.meta[CALLER_GRAD_OFF]``), whose nodes are marked ``GRAD_DISABLED`` exactly where eager's grad mode is off.
:func:`history_sources` finds in it the inputs and parameters from which an output (or a tensor changed in place)
gets a history in eager's call -- a region's result used only under ``no_grad`` again gives none -- and such a call
is refused when one of those requires grad (:func:`fxla.autograd.check_grad_enabled_regions`; the torch.compile
backend's graphs too), rather than run without the region's gradients.

Seen as such a switch, wherever it is (also inside forward's own ``no_grad`` region, where eager's region has a
history too): ``torch.enable_grad()`` (a ``with`` block or a decorator, on forward too),
``torch.set_grad_enabled(mode)`` with a true ``mode`` (a constant or a flag; a ``with`` block, a plain call or the
decorator form), and ``torch._C._set_grad_enabled(True)`` called directly (as dynamo's graphs switch a region on)
where grad mode is on (where it is off it is the end of a ``no_grad`` region: dynamo's graphs restore the mode
so).  Not seen: ``is_grad_enabled`` imported by name before the trace (``from torch import is_grad_enabled``),
and ``torch.is_inference_mode_enabled()`` (a call under ``torch.inference_mode()`` runs the ``no_grad`` trace).
"""
from __future__ import annotations

import contextlib
import operator
import sys
import threading
from typing import Any, Dict, FrozenSet, Iterator, Tuple

import torch
import torch.autograd.grad_mode
import torch.utils._contextlib

from . import meta as M
from .source import is_internal_file, user_frame_location

__all__ = ["recorded", "caller_grad", "assuming", "reads_grad_mode", "history_sources", "user_path",
           "REQUIRES_GRAD"]

#: what a watched name ends with where it stands for the ``requires_grad`` of a module's parameters
#: (``graph.meta[REQUIRES_GRAD_READS]``; fxla.frontend.state_capture.watched_attributes, fxla.modes)
REQUIRES_GRAD = ".parameters().requires_grad"

_CALLER = threading.local()


def caller_grad() -> bool:
    """The caller's grad mode the traces made now assume (``True`` outside :func:`assuming`)."""
    return getattr(_CALLER, "grad", True)


@contextlib.contextmanager
def assuming(grad: bool) -> Iterator[None]:
    """Traces made in this block (by this thread) are made for a caller whose grad mode is ``grad``."""
    before = caller_grad()
    _CALLER.grad = bool(grad)
    try:
        yield
    finally:
        _CALLER.grad = before


@contextlib.contextmanager
def recorded(tracer) -> Iterator[None]:
    """While ``tracer`` traces: note in its graph's meta the first read of the grad mode by forward's code and where
    forward first turns grad mode on (see the module docstring; ``__enter__`` is looked up when the ``with`` runs,
    ``torch.is_grad_enabled`` when it is called)."""
    original, set_mode, set_init = _ENABLE_GRAD.__enter__, torch._C._set_grad_enabled, _SET_GRAD.__init__
    is_enabled, caller = torch._C.is_grad_enabled, caller_grad()
    thread = threading.get_ident()

    def tracing() -> bool:
        return not tracer._paused and threading.get_ident() == thread

    def note(frame) -> None:
        if M.GRAD_ENABLED_AT not in tracer.graph.meta and tracing() and _switched_by_user(frame):
            tracer.graph.meta[M.GRAD_ENABLED_AT] = user_frame_location(tracer.module_path)

    def read() -> bool:
        if M.GRAD_MODE_READ not in tracer.graph.meta and tracing() and \
                not is_internal_file(sys._getframe(1).f_code.co_filename):
            tracer.graph.meta[M.GRAD_MODE_READ] = M.GradModeRead(caller, user_frame_location(tracer.module_path))
        return is_enabled()

    def enter(self):
        note(sys._getframe(1))
        return original(self)

    def set_grad_enabled(mode):         # (called directly: dynamo's graphs switch grad mode so, not by torch's
        frame = sys._getframe(1)        # context managers, whose calls come from their own file)
        if mode and is_enabled() and frame.f_code.co_filename not in _SWITCH_FILES:
            note(frame)
        return set_mode(mode)

    def init(self, mode):               # (set_grad_enabled(True) called by forward, or its decorator's clone;
        frame = sys._getframe(1)        # not no_grad's exit restoring the mode before it)
        if mode is True and (frame.f_code is _CLONE or frame.f_code.co_filename not in _SWITCH_FILES):
            note(frame)
        return set_init(self, mode)

    def encoder_call(self, *args, **kwargs):    # (torch's nested-tensor path: where grad is off or nothing needs it)
        if tracing() and not self.training and type(self).forward is _ENCODER.forward and \
                getattr(self, "use_nested_tensor", False) and _padding_mask(args, kwargs) is not None:
            if M.GRAD_MODE_READ not in tracer.graph.meta:
                tracer.graph.meta[M.GRAD_MODE_READ] = M.GradModeRead(caller, user_frame_location(tracer.module_path))
            path = user_path(tracer, tracer.path_of_module(self))
            if path is not None:
                tracer.graph.meta.setdefault(M.REQUIRES_GRAD_READS, set()).add(path)
        return torch.nn.Module.__call__(self, *args, **kwargs)

    _ENABLE_GRAD.__enter__, torch._C._set_grad_enabled, _SET_GRAD.__init__ = enter, set_grad_enabled, init
    torch.is_grad_enabled = torch._C.is_grad_enabled = read
    _ENCODER.__call__ = encoder_call
    if not caller:
        tracer.graph.meta[M.CALLER_GRAD_OFF] = True
    try:
        yield
    finally:
        _ENABLE_GRAD.__enter__, torch._C._set_grad_enabled, _SET_GRAD.__init__ = original, set_mode, set_init
        torch.is_grad_enabled = torch._C.is_grad_enabled = is_enabled
        del _ENCODER.__call__


_ENCODER = torch.nn.TransformerEncoder


def user_path(tracer, path):
    """``path`` (the tracer's) under the user's root: a torch layer traced on its own is the tracer's root's
    :data:`~fxla.frontend.tracer.LEAF_ROOT`."""
    from .tracer import LEAF_ROOT
    if path is not None and type(tracer.root) is torch.nn.Module and LEAF_ROOT in tracer.root._modules:
        return path[len(LEAF_ROOT):].lstrip(".") if path.split(".")[0] == LEAF_ROOT else None
    return path


def _padding_mask(args, kwargs):
    """The ``src_key_padding_mask`` of a call of ``TransformerEncoder.forward(src, mask, src_key_padding_mask)``."""
    return kwargs.get("src_key_padding_mask", args[2] if len(args) > 2 else None)


def reads_grad_mode(graph) -> bool:
    """Whether the trace ``graph`` read the caller's grad mode or turned grad mode on: a call under ``no_grad``
    then needs a trace made for it (``assuming(False)``)."""
    return M.GRAD_MODE_READ in graph.meta or M.GRAD_ENABLED_AT in graph.meta


def history_sources(graph, root) -> Tuple[FrozenSet[Tuple[str, str]], Any]:
    """For a trace made for a caller under ``no_grad`` (``graph.meta[CALLER_GRAD_OFF]``), whose nodes are marked
    ``GRAD_DISABLED`` wherever eager's grad mode is off: ``(sources, where)``, the inputs (``("input", placeholder
    name)``) and parameters or buffers (``("param", qualified name)``) from which eager's call gives an output, a
    tensor changed in place or a tensor forward stores on the module a history (through nodes computed with grad
    mode on: forward's own regions -- and, computed with it off, a view of such a tensor, the tensor itself a cast
    returns, or that tensor changed in place, which keep the history), and where the first node computed with grad
    on from one of them is.  A call under ``no_grad`` needs gradients only when one of them requires grad."""
    from .passes.aliasing import drops_history, is_view, view_sources
    reach: Dict[Any, FrozenSet[Tuple[str, str]]] = {}
    found: set = set()
    where = None

    def through(node) -> set:
        return set().union(*(reach.get(n, ()) for n in node.all_input_nodes))
    for node in graph.nodes:
        if node.op == "placeholder":
            reach[node] = frozenset({("input", node.target)})
        elif node.op == "get_attr":
            reach[node] = frozenset({("param", node.target)})
        elif node.op == "output":
            found.update(through(node))
        elif drops_history(node):                   # (x.detach(), torch.detach(x), x.data)
            reach[node] = frozenset()
        elif node.meta.get(M.GRAD_DISABLED):        # (a view or the tensor itself keeps its history; so does a
            changed = _in_place(node) and node.args   # tensor changed in place)
            kept = view_sources(root, node) if is_view(root, node) else [node.args[0]] if changed else []
            reach[node] = frozenset(set().union(*(reach.get(n, ()) for n in kept if hasattr(n, "op"))))
        else:
            sources = through(node)
            if node.op == "call_module":
                sources.update(("param", f"{node.target}.{name}")
                               for name, _ in root.get_submodule(node.target).named_parameters())
            reach[node] = frozenset(sources)
            if sources and where is None:
                where = node.meta.get(M.SOURCE)
        if reach.get(node) and (_in_place(node) or M.ATTRIBUTE_WRITES in node.meta):
            found.update(reach[node])   # (a tensor changed in place with a history, one stored on the module)
    return frozenset(found), where


def _in_place(node) -> bool:
    return node.op == "call_method" and str(node.target).endswith("_") and node.target != "requires_grad_" \
        or node.target in _IN_PLACE_OPERATORS or node.kwargs.get("inplace") is True


#: ``x += y`` and the like, ``x[i] = y``: the tensor changed in place
_IN_PLACE_OPERATORS = frozenset({operator.setitem, operator.iadd, operator.isub, operator.imul, operator.itruediv,
                                 operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul, operator.iand,
                                 operator.ior, operator.ixor, operator.ilshift, operator.irshift})


_ENABLE_GRAD = torch.autograd.grad_mode.enable_grad
_SET_GRAD = torch.autograd.grad_mode.set_grad_enabled
_CLONE = _SET_GRAD.clone.__code__


#: the files of torch's grad-mode switches (the context managers, their decorator form) and contextlib
_SWITCH_FILES = frozenset(m.__file__ for m in (torch.autograd.grad_mode, torch.utils._contextlib, contextlib))


def _switched_by_user(frame) -> bool:
    """Whether the switch setting grad mode from ``frame`` was made by the model's code (not by torch's or fxla's
    own code running inside forward)."""
    while frame is not None and frame.f_code.co_filename in _SWITCH_FILES:
        decorated = getattr(frame.f_locals.get("func"), "__code__", None) \
            if frame.f_code.co_name == "decorate_context" else None
        if decorated is not None:       # (a decorator form: the function it decorates, forward itself maybe)
            return not is_internal_file(decorated.co_filename)
        frame = frame.f_back
    return frame is not None and not is_internal_file(frame.f_code.co_filename)
