"""The :class:`Graph`: an ordered, SSA-form list of :class:`Node` s."""
from __future__ import annotations

import builtins
import contextlib
import copy
import inspect
import keyword
import re
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from . import meta as M
from .errors import GraphError
from .node import OPCODES, Argument, Node, Target, map_arg

__all__ = ["Graph", "Namespace"]

#: Names generated code must never bind as locals.
RESERVED_NAMES = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | {
    "self", "torch", "operator", "math", "inf", "nan", "device", "fxla"}

_SUFFIX_RE = re.compile(r"^(.*)_(\d+)$")
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])([A-Z])")


class Namespace:
    """Hands out unique, readable, legal Python identifiers (``relu``, ``relu_1``, ...)."""

    def __init__(self, reserved=RESERVED_NAMES) -> None:
        self._used: set = set()
        self._reserved = reserved
        self._next_suffix: Dict[str, int] = {}

    @staticmethod
    def sanitize(candidate: str) -> str:
        candidate = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate) or "node"
        return "_" + candidate if candidate[0].isdigit() else candidate

    def create_name(self, candidate: str) -> str:
        candidate = self.sanitize(candidate)
        if candidate in self._used or candidate in self._reserved:
            m = _SUFFIX_RE.match(candidate)
            base = m.group(1) if m else candidate
            n = self._next_suffix.get(base, 1)
            while f"{base}_{n}" in self._used or f"{base}_{n}" in self._reserved:
                n += 1
            self._next_suffix[base] = n + 1
            candidate = f"{base}_{n}"
        self._used.add(candidate)
        return candidate

    def mark_used(self, name: str) -> None:
        self._used.add(name)

    def __contains__(self, name: str) -> bool:
        return name in self._used


def _name_hint(op: str, target: Target) -> str:
    if isinstance(target, str):
        return target.lstrip("*") if op == "placeholder" else target.replace(".", "_")
    name = getattr(target, "__name__", None) or type(target).__name__
    return _CAMEL_RE.sub(r"_\1", name).lower()


class _NodeList:
    """Live view of a graph's nodes in order (supports ``len``, iteration, ``reversed``)."""

    def __init__(self, graph: "Graph", reverse: bool = False) -> None:
        self._graph, self._reverse = graph, reverse

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self._graph._root
        cur = root._prev if self._reverse else root._next
        while cur is not root:
            nxt = cur._prev if self._reverse else cur._next
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self._graph, not self._reverse))


class Graph:
    """An ordered list of :class:`Node` s in SSA form -- the program fxla captured.

    Invariants (checked by :meth:`lint`):

    * node names are unique legal Python identifiers;
    * every node's inputs are nodes of this graph that come earlier in the order;
    * ``users``/``all_input_nodes`` are mutually consistent;
    * placeholders come first; exactly one ``output`` node, and it is last;
    * ``get_attr``/``call_module`` targets are dotted strings (resolvable on ``owning_module`` when one is set),
      ``call_method`` targets are method names, ``call_function`` targets are callables;
    * the known keys of each ``node.meta`` and of ``graph.meta`` hold their documented types
      (:mod:`fxla.frontend.meta`).

    ``meta`` -- graph-level metadata, a dict (:class:`~fxla.frontend.meta.GraphMeta`).  Known keys, each a
    constant of :mod:`fxla.frontend.meta`:

    * ``"specialization"`` (``SPECIALIZATION``) -- a concrete-shapes trace's inputs (name -> TensorMeta or
      value), the parameters it fixed (``"fixed"``) and its ``"device"``: what the graph is valid for;
    * ``"attribute_constants"`` / ``"attribute_starts"`` / ``"attribute_reads"`` -- ``(serial, name, value)`` per
      value forward assigns to an attribute, name -> what it held before, name -> each attribute read (fxla.modes);
    * ``"input_mutations"`` / ``"state_mutations"`` (``INPUT_MUTATIONS`` / ``STATE_MUTATIONS``) -- set by
      functionalization: placeholder name / parameter-or-buffer qualified name -> the node of its final value;
    * ``"value_guards"`` (``VALUE_GUARDS``) -- data-dependent values a concrete-shapes trace decided from the
      call's data (:class:`fxla.frontend.value_guards.Guard`), checked before the graph runs on other data.
    * ``"quiet_mutations"`` (``QUIET_MUTATIONS``) -- inputs changed only under no_grad or through ``.data``;
    * ``"grad_enabled_at"`` / ``"grad_mode_read"`` -- where forward turns grad on / reads the caller's mode.
    Other keys are free-form.

    New nodes are appended at the end unless inside :meth:`inserting_before` /
    :meth:`inserting_after`.
    """

    def __init__(self) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._len = 0
        self._namespace = Namespace()
        self._insert_before: Node = self._root
        self.owning_module = None
        #: graph-level metadata: the known keys are listed in the class docstring (:mod:`fxla.frontend.meta`)
        self.meta: Dict[str, Any] = {}

    # ---- node list ---------------------------------------------------------------------
    @property
    def nodes(self) -> _NodeList:
        """The nodes in graph order: a live view (``len``, iteration, ``reversed``); iterate over
        ``list(graph.nodes)`` to edit the graph meanwhile."""
        return _NodeList(self)

    @property
    def output_node(self) -> Optional[Node]:
        """The ``output`` node (``None`` while the graph has none)."""
        for n in reversed(self.nodes):
            if n.op == "output":
                return n
        return None

    def find_nodes(self, op: str, target: Target = None) -> List[Node]:
        """The nodes with opcode ``op`` (and, if given, target ``target``), in graph order."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # ---- node creation -----------------------------------------------------------------
    def create_node(self, op: str, target: Target, args: Optional[Tuple] = None,
                    kwargs: Optional[Dict[str, Any]] = None, name: Optional[str] = None,
                    type_expr: Optional[Any] = None) -> Node:
        """Create a node at the current insertion point (the end of the graph by default)."""
        if op not in OPCODES:
            raise GraphError(f"unknown opcode {op!r}", why=f"valid opcodes are {OPCODES}",
                             fix="use one of the six fxla opcodes")
        self._check_args_in_graph(args, kwargs)
        node_name = self._namespace.create_name(name or _name_hint(op, target))
        node = Node(self, node_name, op, target, args or (), kwargs or {}, type_expr)
        self._insert_before.prepend(node)
        self._len += 1
        return node

    def _check_args_in_graph(self, args, kwargs) -> None:
        def check(n: Node) -> Node:
            if n.graph is not self or n._erased:
                raise GraphError(
                    f"argument %{n.name} is not a live node of this graph", where=n.meta.get(M.SOURCE),
                    why="nodes can only read values produced in the same graph",
                    fix="copy the node into this graph first (Graph.node_copy)")
            return n
        map_arg((args, kwargs), check)

    def placeholder(self, name: str, type_expr: Optional[Any] = None,
                    default_value: Any = inspect.Parameter.empty, *,
                    default: Any = inspect.Parameter.empty) -> Node:
        """An input of the graph. A default (``default=`` or fx's ``default_value=``)
        becomes ``args[0]``; ``'*name'`` / ``'**name'`` denote variadic inputs."""
        if default is not inspect.Parameter.empty:
            default_value = default
        args = () if default_value is inspect.Parameter.empty else (default_value,)
        return self.create_node("placeholder", name, args, {}, name=name.lstrip("*"), type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Optional[Any] = None) -> Node:
        """Read ``owning_module.<qualified_name>`` (a parameter, buffer or constant)."""
        return self.create_node("get_attr", qualified_name, (), {}, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: Optional[Tuple] = None,
                      kwargs: Optional[Dict[str, Any]] = None, type_expr: Optional[Any] = None) -> Node:
        """A ``call_function`` node: ``the_function(*args, **kwargs)``."""
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: Optional[Tuple] = None,
                    kwargs: Optional[Dict[str, Any]] = None, type_expr: Optional[Any] = None) -> Node:
        """A ``call_method`` node: ``args[0].<method_name>(*args[1:], **kwargs)``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_module(self, module_name: str, args: Optional[Tuple] = None,
                    kwargs: Optional[Dict[str, Any]] = None, type_expr: Optional[Any] = None) -> Node:
        """A ``call_module`` node: the submodule ``owning_module.<module_name>`` called with the arguments."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def output(self, result: Argument, type_expr: Optional[Any] = None) -> Node:
        """The ``output`` node returning ``result`` (a node or a nested tuple/list/dict of them)."""
        return self.create_node("output", "output", (result,), {}, type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Argument] = lambda x: x) -> Node:
        """Copy ``node`` (from any graph) into this one, mapping its inputs with ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        new = self.create_node(node.op, node.target, args, kwargs, name=node.name, type_expr=node.type)
        new.meta = dict(node.meta)
        return new

    def copy(self) -> "Graph":
        """A structural copy of this graph (meta dicts are shallow-copied)."""
        g = Graph()
        env: Dict[Node, Node] = {}
        for n in self.nodes:
            env[n] = g.node_copy(n, lambda x: env[x])
        g.owning_module = self.owning_module
        g.meta = dict(self.meta)
        return g

    def __deepcopy__(self, memo: Dict[int, Any]) -> "Graph":
        """``copy.deepcopy(graph)``: a structural copy whose node ``meta`` dicts are deep-copied
        (shared through ``memo``). The copy has no ``owning_module``: attach it to a
        GraphModule to resolve its targets."""
        g = Graph()
        memo[id(self)] = g
        env: Dict[Node, Node] = {}
        for n in self.nodes:
            env[n] = memo[id(n)] = g.node_copy(n, lambda x: env[x])
        for old, new in env.items():  # meta may refer to nodes: those map to their copies
            new.meta = copy.deepcopy(old.meta, memo)
        g.meta = copy.deepcopy(self.meta, memo)
        return g

    # ---- insertion point ---------------------------------------------------------------
    @contextlib.contextmanager
    def _insert_point(self, before: Node):
        saved = self._insert_before
        self._insert_before = before
        try:
            yield
        finally:
            self._insert_before = saved

    def inserting_before(self, node: Optional[Node] = None):
        """Context manager: new nodes go right before ``node`` (default: start of graph)."""
        return self._insert_point(node if node is not None else self._root._next)

    def inserting_after(self, node: Optional[Node] = None):
        """Context manager: new nodes go right after ``node``, in creation order
        (default: end of graph)."""
        return self._insert_point(node._next if node is not None else self._root)

    # ---- removal -----------------------------------------------------------------------
    def erase_node(self, to_erase: Node) -> None:
        """Remove a node that has no users."""
        if to_erase.graph is not self or to_erase._erased:
            raise GraphError(f"cannot erase %{to_erase.name}: it is not a live node of this graph",
                             fix="erase nodes through the graph that owns them")
        if to_erase.users:
            users = ", ".join(f"%{u.name}" for u in to_erase.users)
            raise GraphError(
                f"cannot erase %{to_erase.name}: it still has users ({users})", where=to_erase.meta.get(M.SOURCE),
                why="erasing it would leave those nodes reading an undefined value",
                fix="call node.replace_all_uses_with(other) (or erase the users) first")
        if self._insert_before is to_erase:
            self._insert_before = to_erase._next
        to_erase._remove_from_list()
        to_erase._erased = True
        to_erase.args, to_erase.kwargs = (), {}
        self._len -= 1

    def eliminate_dead_code(self) -> bool:
        """Erase pure nodes whose values are never used; returns True if anything changed."""
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not node.is_impure():
                self.erase_node(node)
                changed = True
        return changed

    # ---- checking ----------------------------------------------------------------------
    def lint(self) -> None:
        """Check the invariants in the class docstring; raises :class:`GraphError`."""
        def fail(node: Node, what: str, fix: str) -> None:
            raise GraphError(f"graph lint failed at %{node.name}: {what}", where=node.meta.get(M.SOURCE),
                             why="the graph violates an fxla IR invariant", fix=fix)

        seen: Dict[Node, None] = {}
        names: set = set()
        outputs = 0
        saw_non_placeholder = False
        for node in self.nodes:
            if node.graph is not self:
                fail(node, "node belongs to another graph", "use Graph.node_copy to move nodes")
            if node.op not in OPCODES:
                fail(node, f"unknown opcode {node.op!r}", f"use one of {OPCODES}")
            if node.name in names or not node.name.isidentifier():
                fail(node, f"name {node.name!r} is duplicated or not an identifier", "create nodes via the Graph API")
            names.add(node.name)
            if node.op == "placeholder" and saw_non_placeholder:
                fail(node, "placeholder after a non-placeholder node", "create all placeholders first")
            saw_non_placeholder |= node.op != "placeholder"
            if outputs:
                fail(node, "node after the output node", "the output node must be last")
            outputs += node.op == "output"
            for inp in node.all_input_nodes:
                if inp not in seen:
                    fail(node, f"input %{inp.name} is not defined earlier in this graph",
                         "insert nodes after the values they read")
                if node not in inp.users:
                    fail(node, f"missing from the users of %{inp.name}", "edit args through node.args/kwargs")
            for user in node.users:
                if user._erased or node not in user._input_nodes:
                    fail(node, f"stale user %{user.name}", "edit args through node.args/kwargs")
            self._lint_target(node, fail)
            self._lint_meta(node)
            seen[node] = None
        if outputs != 1:
            raise GraphError(f"graph lint failed: expected one output node, found {outputs}",
                             why="every graph returns exactly one (possibly nested) value",
                             fix="call graph.output(result) once, at the end")
        problem = M.graph_meta_problem(self.meta)
        if problem:
            raise GraphError(f"graph lint failed: {problem}", why="the known graph.meta keys have fixed types "
                             "that later stages rely on (fxla.frontend.meta.GraphMeta)",
                             fix="store values of the documented type, or use a key of your own")

    @staticmethod
    def _lint_meta(node: Node) -> None:
        problem = M.node_meta_problem(node.meta)
        if problem:
            source = node.meta.get(M.SOURCE)
            raise GraphError(f"graph lint failed at %{node.name}: {problem}",
                             where=source if isinstance(source, M.SourceLocation) else None,
                             why="the known node.meta keys have fixed types that later stages rely on "
                                 "(fxla.frontend.meta.NodeMeta)",
                             fix="store values of the documented type, or use a key of your own")

    def _lint_target(self, node: Node, fail) -> None:
        if node.op in ("get_attr", "call_module", "call_method", "placeholder"):
            if not isinstance(node.target, str):
                fail(node, f"{node.op} target must be a string, got {node.target!r}", "pass the qualified name")
            if node.op in ("get_attr", "call_module") and self.owning_module is not None:
                obj = self.owning_module
                for atom in node.target.split("."):
                    if not hasattr(obj, atom):
                        fail(node, f"target {node.target!r} does not exist on the owning module",
                             "register the submodule/parameter on the GraphModule")
                    obj = getattr(obj, atom)
        elif node.op == "call_function" and not callable(node.target):
            fail(node, f"call_function target {node.target!r} is not callable", "pass the function object")

    # ---- printing ----------------------------------------------------------------------
    def __str__(self) -> str:
        params = ", ".join(n.name for n in self.nodes if n.op == "placeholder")
        lines = [f"graph({params}):"] + [f"    {n.format_node()}" for n in self.nodes]
        return "\n".join(lines)

    __repr__ = __str__

    def tabular(self) -> str:
        """Plain-text table of opcode / name / target / args / kwargs."""
        from .node import _format_arg, _target_str
        rows = [("opcode", "name", "target", "args", "kwargs")]
        for n in self.nodes:
            rows.append((n.op, n.name, _target_str(n.target), _format_arg(n.args), _format_arg(n.kwargs)))
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
        return "\n".join([fmt(rows[0]), fmt(tuple("-" * w for w in widths))] + [fmt(r) for r in rows[1:]])

    def print_tabular(self) -> None:
        """Print :meth:`tabular`."""
        print(self.tabular())

    def python_code(self, root_name: str = "self"):
        """Generate the Python source of ``def forward(<root_name>, ...)`` for this graph.

        Returns a :class:`~fxla.frontend.codegen.PythonCode` -- a ``str`` (the source)
        with a ``globals`` dict of the names the source needs.
        """
        from .codegen import generate
        return generate(self, root_name)
