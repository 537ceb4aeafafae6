"""``torch.compile(model, backend="fxla")``: TorchDynamo hands fxla its FX graphs.

Registered through the ``torch_dynamo_backends`` entry point (see pyproject.toml).  Dynamo captures the
program (splitting it at graph breaks and running the Python between graphs itself); each captured
``torch.fx.GraphModule`` is converted node for node into fxla's own graph IR and compiled with
:func:`fxla.compile`, so everything fxla does — per-signature executables, verified StableHLO, PJRT — applies.
An op fxla cannot lower fails the compilation with fxla's :class:`~fxla.UnsupportedOpError` (dynamo wraps it in
``BackendCompilerFailed``); fxla never silently falls back to eager.  Errors point at the user's source line
dynamo recorded for the node; a graph the backend cannot take at all raises :class:`BackendError`.

Symbolic graphs.  With dynamo's automatic dynamic shapes (a second call with other sizes) or
``torch.compile(..., dynamic=True)``, dynamo hands over graphs whose sizes are symbols: ``SymInt``
placeholders (``s0: torch.SymInt``), size reads (``x.size(0)``, ``torch.ops.aten.sym_size.int``), arithmetic
on them (``s0 * 2``, ``s0 // 4``, ``math.ceil(s0 / 3)``, ``torch.sym_max``), ``torch.Size`` of symbols, views
and factories sized by them, and Python numbers dynamo did not specialise (a float argument that changed, a
module's ``eps`` or ``momentum`` under ``dynamic=True``), passed as 0-d tensors and read with ``.item()``.
The backend lowers each such graph once for all sizes: every symbol that is a tensor input's dim becomes a
:class:`~fxla.Dim` of that name (``dynamic=``, one Dim per symbol, not strict), a ``SymInt`` placeholder that is
such a symbol is that Dim's size, and the graph becomes one polymorphic program (``?`` dims in the fxla dialect
and StableHLO, docs/shapes.md); each new size only refines it and compiles it in XLA, cached (at most
``max_signatures``, least recently used dropped first).  A dim that an op's lowering must fix stays fixed, and
sizes that break a condition the program relies on get a program of their own (logged to ``fxla.compile``).
An unspecialised number is a Python-number input (the backend takes ``.item()`` of the argument before the
call) and is specialised per value: a float argument that takes a new value on every call compiles on every
call (pass it as a 0-d tensor instead).

Options (``torch.compile(..., options={...})``): ``device``, ``max_signatures`` and ``dump_dir``, as for
:func:`fxla.compile` (``dump_dir``: each graph's folder also holds ``dynamo.txt``, the graph as dynamo handed it
over); any other key is an :class:`~fxla.OptionError` that names the closest option (``devcie``: did you mean
``device``?).  Each graph received is logged to ``fxla.dynamo`` (INFO: its number, dynamo's compile id, node count,
placeholders with their sizes and symbols); its compiled module logs to ``fxla.compile`` as
``DynamoGraph (dynamo graph #n)`` (docs/debugging.md).
"""
from __future__ import annotations

import itertools
import linecache
import logging
import operator
import re
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch._guards
import torch._refs
from torch.utils import _pytree as pytree

from fxla.base.logs import DYNAMO
from fxla.base.shown import abbreviate
from fxla.base.suggest import closest, did_you_mean
from fxla.backend_weights import DynamoCall, hold_parameters, written_inputs
from fxla.compile import MAX_SIGNATURES, META_WHY, CompiledModule, OptionError, refuse_meta_tensors
from fxla.dumps import GraphDump, open_dumps
from fxla.errors import FxlaError
from fxla.frontend import Graph, GraphModule, SourceLocation, wrap
from fxla.frontend import meta as M
from fxla.frontend.remedies import COMPILE, spelled_as
from fxla.frontend.source import is_internal_file
from fxla.frontend.symbolic import Dim, DynamicSpec

__all__ = ["fxla_backend", "graph_module_from_fx", "BackendError"]

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_ASSIGNED = re.compile(r"\s*([A-Za-z_]\w*) = ")
_GENERATED = "<fxla-generated-"
#: what dynamo's example values of scalar nodes are (sizes, size arithmetic, their comparisons)
_SCALARS = (int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool)
_NO_EXAMPLE = object()
_OPTIONS = ("device", "max_signatures", "dump_dir")
#: numbers the graphs the backend receives in this process (the ``fxla.dynamo`` log, ``dump_dir`` folders)
_GRAPH_NUMBERS = itertools.count(1)


class BackendError(FxlaError):
    """A graph TorchDynamo captured that fxla's ``torch.compile`` backend cannot take (raised with the user's
    source line dynamo recorded for the node that stopped it)."""


def _source_of(fx_node) -> Optional[SourceLocation]:
    """The innermost user frame (not torch's, not fxla's) of dynamo's ``stack_trace`` for the node, if it
    recorded one: file, line, the source line and the column its ``^`` markers start at."""
    lines = (fx_node.meta.get("stack_trace") or "").splitlines()
    frames = [(i, m) for i, m in ((i, _FRAME.search(text)) for i, text in enumerate(lines)) if m]
    if not frames:
        return None
    i, match = next(((i, m) for i, m in reversed(frames) if not is_internal_file(m.group(1))), frames[-1])
    file, line = match.group(1), int(match.group(2))
    shown = lines[i + 1] if i + 1 < len(lines) and not _FRAME.search(lines[i + 1]) else ""
    text = linecache.getline(file, line).rstrip("\n") or shown.strip()
    col = 1
    marks = lines[i + 2] if shown and i + 2 < len(lines) else ""
    if marks.strip() and set(marks.strip()) <= set("^~"):
        offset = (len(marks) - len(marks.lstrip())) - (len(shown) - len(shown.lstrip()))
        col = len(text) - len(text.lstrip()) + offset + 1
    return SourceLocation(file, line, max(col, 1), text, "")


def _is_scalar(value) -> bool:
    """A Python number (or a symbolic one), or a tuple/list of them (``torch.Size``)."""
    if isinstance(value, (tuple, list)):
        return all(_is_scalar(v) for v in value)
    return isinstance(value, _SCALARS)


def _example(fx_node):
    """Dynamo's example value of the node (``meta['val']`` in make_fx/AOT graphs), or ``_NO_EXAMPLE``."""
    return fx_node.meta.get("example_value", fx_node.meta.get("val", _NO_EXAMPLE))


def _scalar_call(fx_node) -> bool:
    """A call computing a number, a ``torch.Size`` or nothing from numbers alone, by dynamo's example values: size
    arithmetic (``s0 * 2``, ``math.ceil(s0 / 3)``, ``s0.__round__()``, ``torch.sym_max``), ``torch.Size([1, s0])``,
    checks (``torch._check_is_size(s0)``).  fxla's tracer re-traces such a call as a leaf (its Python cannot run
    on symbolic values), and shape propagation evaluates it on each signature's values."""
    if fx_node.op not in ("call_function", "call_method") or not fx_node.all_input_nodes:
        return False
    value = _example(fx_node)
    if not (_is_scalar(value) or (value is None and fx_node.op == "call_function")):
        return False
    return all(_is_scalar(_example(n)) for n in fx_node.all_input_nodes)


@wrap
def _scalar_method(name: str, obj, *args, **kwargs):
    """``obj.<name>(*args, **kwargs)`` of a number (``s0.__round__()``): a leaf of fxla's tracer (see
    :func:`_scalar_call`)."""
    return getattr(obj, name)(*args, **kwargs)


def _leaf(target):
    """``target`` as a tracing leaf (recorded as a call of ``target`` itself, whatever its arguments are), or
    ``target`` when it cannot be wrapped (an unhashable callable)."""
    try:
        return wrap(target)
    except TypeError:
        return target


#: factories of a tensor holding the numbers given (``torch.tensor(s0)``, ``torch.tensor([s0, s1])``)
_TENSOR_OF_DATA = (torch.tensor, torch.as_tensor, torch.scalar_tensor, torch._refs.tensor)


def _tensor_of_numbers(fx_node) -> bool:
    """``torch.tensor(data)`` (or ``as_tensor``, ``scalar_tensor``) of numbers that are symbols (sizes), with no
    argument but ``dtype`` and ``device``: rewritten into ``torch.full`` per number (see :func:`_full_of`)."""
    return (fx_node.op == "call_function" and fx_node.target in _TENSOR_OF_DATA and bool(fx_node.all_input_nodes)
            and isinstance(_example(fx_node), torch.Tensor) and set(fx_node.kwargs) <= {"dtype", "device"}
            and len(fx_node.args) == 1 and all(_is_scalar(_example(n)) for n in fx_node.all_input_nodes))


def _spelled_out(graph: Graph, fx_data, data):
    """``data`` (fxla's mapping of dynamo's ``fx_data``) with every node whose example value is a ``torch.Size``
    or tuple (``torch.tensor(x.shape)``, ``as_tensor(x.shape[1:])``) spelled out as a list of its items."""
    if isinstance(fx_data, (tuple, list)):
        return [_spelled_out(graph, f, d) for f, d in zip(fx_data, data)]
    example = _example(fx_data) if isinstance(fx_data, torch.fx.Node) else None
    if isinstance(example, (tuple, list)):
        return [graph.create_node("call_function", operator.getitem, (data, i), {}) for i in range(len(example))]
    return data


def _full_of(graph: Graph, fx_node, data):
    """The tensor ``torch.tensor(data)`` makes (dtype and shape of dynamo's example value), from fxla ops:
    ``torch.full((), number, dtype=...)`` per number, stacked and reshaped for a (nested) list or a size."""
    example = _example(fx_node)
    data = _spelled_out(graph, fx_node.args[0], data)
    if not isinstance(data, (tuple, list)):
        return graph.create_node("call_function", torch.full, ((), data), {"dtype": example.dtype},
                                 name=fx_node.name)
    numbers = [graph.create_node("call_function", torch.full, ((), v), {"dtype": example.dtype})
               for v in pytree.tree_leaves(data)]
    if not numbers:                                   # (an empty size: torch.tensor(x.shape[2:]) of a 2-d x)
        return graph.create_node("call_function", torch.zeros, (tuple(int(d) for d in example.shape),),
                                 {"dtype": example.dtype}, name=fx_node.name)
    stacked = graph.create_node("call_function", torch.stack, (numbers,), {})
    return graph.create_node("call_method", "reshape", (stacked, tuple(int(d) for d in example.shape)), {},
                             name=fx_node.name)


def _unspecialised_scalar(fx_node) -> bool:
    """A placeholder for a Python number dynamo did not specialise: it passes the number as a 0-d tensor and
    the graph reads it with ``.item()`` (and does nothing else with it)."""
    grapharg = fx_node.meta.get("grapharg")
    return (fx_node.op == "placeholder" and bool(getattr(grapharg, "pass_arg_as_tensor", False))
            and bool(fx_node.users)
            and all(user.op == "call_method" and user.target == "item" for user in fx_node.users))


#: dynamo's spelling of an op fxla lowers under its public name (``F.pad`` calls ``torch._C._nn.pad`` as is)
_ALIASES = {torch._C._nn.pad: torch.nn.functional.pad,
            torch._C._autograd._get_data_attr: torch.detach}     # (``x.data`` in dynamo's graphs)
#: tensor methods dynamo records for Python operators (``mask & other`` is ``call_method __and__``): the operator
_OPERATOR_METHODS = {"__and__": operator.and_, "__or__": operator.or_, "__xor__": operator.xor,
                     "__invert__": operator.invert}


def _alias(target):
    try:
        return _ALIASES.get(target, target)
    except TypeError:                     # an unhashable callable
        return target


def _converted(graph: Graph, node, arg: Callable[[Any], Any]):
    """fxla's node for dynamo's ``node`` (its arguments mapped by ``arg``; see :func:`graph_module_from_fx`)."""
    args, kwargs = arg(node.args), arg(node.kwargs)
    if _tensor_of_numbers(node):
        return _full_of(graph, node, args[0])
    if _scalar_call(node) and node.op == "call_method":
        return graph.create_node("call_function", _scalar_method, (node.target, *args), kwargs, name=node.name)
    target = _leaf(node.target) if _scalar_call(node) else _alias(node.target)
    if node.op == "call_method" and node.target in ("__and__", "__or__", "__xor__", "__invert__"):
        return graph.create_node("call_function", _OPERATOR_METHODS[node.target], args, kwargs, name=node.name)
    return graph.create_node(node.op, target, args, kwargs, name=node.name)


def _convert(fx_gm: torch.fx.GraphModule, known: Optional[Sequence[int]] = None) -> Tuple[GraphModule, List[int]]:
    """fxla's GraphModule of ``fx_gm`` (see :func:`graph_module_from_fx`) and the positions of the inputs the
    caller passes as Python numbers (``.item()`` of dynamo's argument) instead of 0-d tensors.  ``known``: those
    positions, found by a first conversion (dynamo drops the placeholders' ``grapharg`` after its compile)."""
    graph = Graph()
    env: Dict[Any, Any] = {}
    numbers: List[int] = []
    scalars = set()                 # (dynamo's placeholders of those numbers)

    def arg(a):
        # torch.fx keeps args in immutable containers; rebuild plain ones with fxla nodes in place of fx nodes
        if isinstance(a, torch.fx.Node):
            return env[a]
        if isinstance(a, list):         # (torch.fx's immutable_list: a list, never a tuple -- x[[-1, 1]] picks
            return [arg(x) for x in a]  # two rows, x[(-1, 1)] one element)
        if isinstance(a, tuple):
            return tuple(arg(x) for x in a)
        if isinstance(a, dict):
            return {k: arg(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(arg(a.start), arg(a.stop), arg(a.step))
        return a

    placeholders = 0
    for node in fx_gm.graph.nodes:
        if node.op == "output":
            graph.output(arg(node.args[0]))
            continue
        if node.op == "call_method" and node.target == "item" and node.args[0] in scalars:
            env[node] = env[node.args[0]]          # the number itself: the caller passes .item() of the tensor
            continue
        if node.op == "placeholder":
            if placeholders in known if known is not None else _unspecialised_scalar(node):
                numbers.append(placeholders)
                scalars.add(node)
            placeholders += 1
        new = _converted(graph, node, arg)
        new.meta[M.SOURCE] = _source_of(node)
        env[node] = new
    return GraphModule(fx_gm, graph, class_name="DynamoGraph"), numbers


def graph_module_from_fx(fx_gm: torch.fx.GraphModule) -> GraphModule:
    """Convert a ``torch.fx.GraphModule`` into fxla's :class:`GraphModule` (same opcodes, targets and names).

    Dynamo's symbolic graphs (see the module docstring) are converted so that fxla's tracer can run them: a
    call computing a number from numbers alone (``s0 * 2``, ``math.ceil(s0 / 3)``, ``torch.Size([1, s0])``)
    becomes a tracing leaf of the same target, and ``.item()`` of an unspecialised number's placeholder is the
    placeholder itself (the backend passes that input as a Python number)."""
    return _convert(fx_gm)[0]


def _dynamic_dims(fx_gm: torch.fx.GraphModule, converted: GraphModule) -> Optional[DynamicSpec]:
    """The symbolic dims of dynamo's graph as fxla's ``dynamic=`` (:mod:`fxla.symbolic`): each tensor input dim
    whose example size is a symbol (``s0``) is marked with a Dim of that name (one Dim for every use of the
    symbol), and a ``SymInt`` input that is such a symbol is that Dim's size.  Not strict: a dim fxla's lowering
    must fix stays fixed, and other sizes get a program of their own.  ``None`` for a graph without symbols."""
    tensors, ints = {}, {}
    mine = [n.name for n in converted.graph.nodes if n.op == "placeholder"]     # (the forward's argument names)
    theirs = [n for n in fx_gm.graph.nodes if n.op == "placeholder"]
    for name, node in zip(mine, theirs):
        value = _example(node)
        if isinstance(value, torch.Tensor):
            dims = {d: Dim(str(n.node.expr)) for d, n in enumerate(value.shape)
                    if isinstance(n, torch.SymInt) and n.node.expr.is_Symbol}
            if dims:
                tensors[name] = dims
        elif isinstance(value, torch.SymInt) and value.node.expr.is_Symbol:
            ints[name] = Dim(str(value.node.expr))
    if not tensors:
        return None
    return DynamicSpec({**tensors, **ints}, lambda what, fix: BackendError(what, fix=fix), "", strict=False)


class _UserLines:
    """The user's source lines dynamo recorded for the nodes of the converted graph ``gm``, found from a line of
    its generated code (``name = ...`` assigns the node ``name``): what fxla's tracer records as the source of
    what it traces from that line."""

    def __init__(self, gm: GraphModule):
        self.by_name = {n.name: n.meta.get(M.SOURCE) for n in gm.graph.nodes}

    def at(self, filename: str, line: int) -> Optional[SourceLocation]:
        """The user's line for line ``line`` of ``filename`` if that is the generated code, else None."""
        if not filename.startswith(_GENERATED):
            return None
        match = _ASSIGNED.match(linecache.getline(filename, line))
        return self.by_name.get(match.group(1)) if match else None

    def of(self, location) -> Optional[SourceLocation]:
        """:meth:`at` for a SourceLocation (None for anything else)."""
        return self.at(location.file, location.line) if isinstance(location, SourceLocation) else None


def _point_at_user_code(err: FxlaError, lines: _UserLines) -> None:
    """An error located in the generated code of the converted graph is moved to the user's line dynamo recorded
    for the node (the generated line is kept as a further location)."""
    user = lines.of(err.where)
    if user is not None:
        err.where, err.locations = user, (*err.locations, err.where)
        err.add_context("while fxla traced the graph TorchDynamo captured there (torch.compile(backend='fxla'))")


def _backend_error(err: Exception, lines: _UserLines) -> BackendError:
    """A non-fxla exception raised while fxla took the graph, as a :class:`BackendError` at the user's line."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename.startswith(_GENERATED)][-1:]
    return BackendError(f"fxla cannot take the graph TorchDynamo captured: {type(err).__name__}: {err}",
                        where=lines.at(frames[0].filename, frames[0].lineno) if frames else None,
                        locations=[SourceLocation(f.filename, f.lineno, 1, f.line or "", "") for f in frames],
                        why="fxla converts dynamo's graph and traces it again into its own graph IR; this node's "
                            "Python could not run on fxla's symbolic values",
                        fix="keep this code out of the compiled region (move it into a function decorated with "
                            "@torch.compiler.disable), or compile with dynamic=False if the values are sizes; "
                            "please report the graph (TORCH_LOGS=graph_code prints it) as an fxla issue")


def _carry_sources(lines: _UserLines, compiled: CompiledModule) -> None:
    """The traced graph's nodes get the user's lines: fxla's tracer ran the converted graph's generated code, so it
    recorded lines of that code (the node names may differ: ``position_diff`` is traced as ``diff``)."""
    for node in compiled.graph_module.graph.nodes:
        user = lines.of(node.meta.get(M.SOURCE))
        if user is not None:
            node.meta[M.SOURCE] = user


def _check_options(options: Dict[str, Any]) -> None:
    """An option fxla does not know is refused, with the closest known name (``devcie``: did you mean
    ``device``?) for each misspelt one."""
    unknown = [name for name in options if name not in _OPTIONS]
    if not unknown:
        return
    if len(unknown) == 1:
        what = f"unknown option {abbreviate(unknown[0])}{did_you_mean(str(unknown[0]), _OPTIONS)}"
    else:
        guesses = [f"{found[0]!r} for {abbreviate(name)}" for name in unknown
                   for found in [closest(str(name), _OPTIONS, 1)] if found]
        what = (f"unknown options {', '.join(abbreviate(name) for name in unknown)}"
                + (f"; did you mean {', '.join(guesses)}?" if guesses else ""))
    raise OptionError(f"torch.compile(backend='fxla') got {what}\n"
                      f"fix: pass only {', '.join(_OPTIONS)} in options={{...}} (as for fxla.compile)")


def _check_materialized(gm: torch.fx.GraphModule, example_inputs: List[Any]) -> None:
    """Dynamo passes a module's parameters and buffers as graph inputs: one on the meta device (no data) is
    refused here, by its dynamo name, rather than at the first call as an anonymous input."""
    placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    refuse_meta_tensors(zip(placeholders, example_inputs), "torch.compile(backend='fxla') got graph inputs",
                        why=f"{META_WHY} (dynamo passes a module's parameters and buffers as inputs)")


def _described_input(node, value) -> str:
    """``l_x_: float32[s0, 4] (symbols s0)``, ``s0: SymInt s0``: a placeholder and dynamo's example value."""
    if isinstance(value, torch.Tensor):
        symbols = sorted({str(d) for d in value.shape if isinstance(d, torch.SymInt)})
        shape = ", ".join(str(d) for d in value.shape)
        return f"{node.name}: {str(value.dtype).rpartition('.')[2]}[{shape}]" + \
            (f" (symbols {', '.join(symbols)})" if symbols else "")
    return f"{node.name}: {type(value).__name__} {value}" if value is not _NO_EXAMPLE else f"{node.name}: ?"


def _received(number: int, gm: torch.fx.GraphModule, example_inputs: List[Any], dump_dir) -> Optional[GraphDump]:
    """Log (``fxla.dynamo``, INFO) the graph dynamo handed over: its number, dynamo's compile id (frame/attempt: a
    second attempt of a frame is a dynamo recompile), its nodes and placeholders; with ``dump_dir``, make its folder
    and write the graph there as dynamo gave it (``dynamo.txt``).  Returns the folder (``None``: no dumps)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    values = [_example(n) for n in placeholders]
    values = [example_inputs[i] if v is _NO_EXAMPLE and i < len(example_inputs) else v for i, v in enumerate(values)]
    compile_id = torch._guards.CompileContext.current_compile_id()     # (None outside a dynamo compile)
    again = compile_id is not None and bool(compile_id.frame_compile_id)
    head = (f"dynamo graph #{number} (dynamo compile id {compile_id}"
            f"{f': recompile {compile_id.frame_compile_id} of frame {compile_id.frame_id}' if again else ''}): "
            f"{len(gm.graph.nodes)} nodes, {len(placeholders)} placeholders")
    inputs = [_described_input(n, v) for n, v in zip(placeholders, values)]
    if DYNAMO.isEnabledFor(logging.INFO):
        DYNAMO.info("%s: %s", head, "; ".join(inputs) or "none")
    dumps = open_dumps(dump_dir)
    if dumps is None:
        return None
    folder = dumps.graph(f"dynamo-graph-{number}")
    folder.write("dynamo.txt", head + "\n" + "\n".join(f"  {line}" for line in inputs) + "\n\n"
                 + gm.print_readable(print_output=False))
    return folder


def fxla_backend(gm: torch.fx.GraphModule, example_inputs: List[Any], options: Optional[Dict[str, Any]] = None,
                 **direct) -> Callable[..., Any]:
    """The TorchDynamo backend: ``torch.compile(model, backend="fxla", options={"device": "cpu"})`` (torch hands
    the dict over as ``options=``; a direct call may pass the same names as keywords).

    Returns the graph compiled by fxla: a :class:`~fxla.CompiledModule`, or a
    :class:`fxla.backend_weights.DynamoCall` over one that holds the graph's parameters (uploaded once, in the
    layout their consumers want) and passes dynamo's unspecialised numbers as Python numbers (see the module
    docstring)."""
    options = {**(options or {}), **direct}
    _check_options(options)
    number = next(_GRAPH_NUMBERS)
    folder = _received(number, gm, example_inputs, options.get("dump_dir"))
    _check_materialized(gm, example_inputs)
    converted, numbers = _convert(gm)
    dynamic = _dynamic_dims(gm, converted)
    examples = [_example(n) for n in gm.graph.nodes if n.op == "placeholder"]
    written = written_inputs(converted)
    held = hold_parameters(converted, example_inputs, examples, skip=numbers)
    label = f"dynamo graph #{number}"
    compiled = _compiled(converted, options, dynamic, label, folder)
    if not numbers and not held:
        return compiled

    def make(args):                      # another set of parameters held, or (None) every parameter an input
        again = _convert(gm, numbers)[0]
        spec = _dynamic_dims(gm, again)  # (before holding: it pairs the placeholders with dynamo's)
        more = hold_parameters(again, args, examples, skip=numbers) if args is not None else []
        suffix = "another set of parameters held" if more else "every parameter an input"
        return _compiled(again, options, spec, f"{label}, {suffix}", folder), more
    return DynamoCall(compiled, len(examples), numbers, held, make, label, written)


def _compiled(converted: GraphModule, options: Dict[str, Any], dynamic: Optional[DynamicSpec], label: str,
              folder: Optional[GraphDump]) -> CompiledModule:
    """The CompiledModule of the converted graph ``converted``, errors pointed at the user's lines."""
    try:
        with spelled_as(COMPILE):     # (not the remedies of dynamic=, which name this very route)
            compiled = CompiledModule(converted, device=options.get("device"), dump_dir=options.get("dump_dir"),
                                      max_signatures=options.get("max_signatures", MAX_SIGNATURES), dynamic=dynamic)
        compiled._graph_label, compiled._graph_dump = label, folder
    except FxlaError as err:
        _point_at_user_code(err, _UserLines(converted))
        raise
    except Exception as err:          # noqa: BLE001  (anything else is a bug to report, in fxla's words)
        raise _backend_error(err, _UserLines(converted)) from err
    _carry_sources(_UserLines(converted), compiled)
    return compiled
