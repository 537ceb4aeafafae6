"""Python code generation: turn a :class:`Graph` into readable ``def forward`` source.

Output looks like torch.fx's ``gm.code``::

    def forward(self, x):
        fc1 = self.fc1(x);  x = None
        relu = torch.relu(fc1);  fc1 = None
        add = relu + 1;  relu = None
        return add

Each statement frees the values whose last use it is (``;  x = None``).  Calls recorded with grad mode off
(``torch.no_grad()`` in the traced forward: ``node.meta["grad_disabled"]``) run in a ``with torch.no_grad():``
block, so the code traced again, or run, computes without history there too.  Python
operators print as operators, ``call_method`` as a method call, ``get_attr`` as an
attribute path.  Other callables print by qualified name when that name resolves back
to the very same object; otherwise they are bound into ``PythonCode.globals``.
"""
from __future__ import annotations

import builtins
import enum
import math
import operator
import types
from typing import Any, Callable, Dict, List

import torch

from .graph import Graph, Namespace, RESERVED_NAMES
from .meta import GRAD_DISABLED
from .names import qualified_name
from .node import Node, build_dict

__all__ = ["PythonCode", "generate", "OPERATOR_TEMPLATES"]

#: Python callables printed as operator syntax; ``{}`` slots are the formatted args.
OPERATOR_TEMPLATES: Dict[Callable, str] = {
    operator.add: "{} + {}", operator.sub: "{} - {}", operator.mul: "{} * {}",
    operator.truediv: "{} / {}", operator.floordiv: "{} // {}", operator.mod: "{} % {}",
    operator.pow: "{} ** {}", operator.matmul: "{} @ {}", operator.lshift: "{} << {}",
    operator.rshift: "{} >> {}", operator.and_: "{} & {}", operator.or_: "{} | {}",
    operator.xor: "{} ^ {}", operator.eq: "{} == {}", operator.ne: "{} != {}",
    operator.lt: "{} < {}", operator.le: "{} <= {}", operator.gt: "{} > {}",
    operator.ge: "{} >= {}", operator.neg: "-{}", operator.pos: "+{}",
    operator.invert: "~{}", operator.not_: "not {}",
}

_LITERAL_TYPES = (torch.dtype, torch.layout, torch.memory_format)


class PythonCode(str):
    """Generated source (the ``str`` value) plus the ``globals`` it must be exec'd with."""

    globals: Dict[str, Any]

    def __new__(cls, src: str, globals_: Dict[str, Any]) -> "PythonCode":
        self = super().__new__(cls, src)
        self.globals = globals_
        return self

    @property
    def src(self) -> str:
        return str(self)


class _Emitter:
    """Per-graph state of code generation: global bindings and argument formatting."""

    def __init__(self, graph: Graph, root_name: str) -> None:
        self.root_name = root_name
        self.globals: Dict[str, Any] = {"torch": torch, "operator": operator, "math": math,
                                        "inf": math.inf, "nan": math.nan}
        self.namespace = Namespace(reserved=RESERVED_NAMES - set(self.globals))
        for n in graph.nodes:
            self.namespace.mark_used(n.name)
        self.namespace.mark_used(root_name)
        self._bound: Dict[int, str] = {}

    def bind_global(self, obj: Any, hint: str) -> str:
        """Name under which ``obj`` is reachable from the generated code."""
        key = id(obj)
        if key not in self._bound:
            name = self.namespace.create_name(f"_fx_{hint}")
            self.globals[name] = obj
            self._bound[key] = name
        return self._bound[key]

    def callable_name(self, fn: Any) -> str:
        from .wrap import wrapper_for
        if getattr(builtins, getattr(fn, "__name__", ""), None) is fn:
            return fn.__name__
        dotted = qualified_name(fn)
        if dotted is not None:
            return dotted
        leaf = wrapper_for(fn) or fn
        return self.bind_global(leaf, getattr(fn, "__name__", type(fn).__name__))

    # ---- arguments ----------------------------------------------------------------------
    def arg(self, a: Any) -> str:
        if isinstance(a, Node):
            return a.name
        if isinstance(a, torch.Size):
            return f"torch.Size([{', '.join(self.arg(e) for e in a)}])"
        if isinstance(a, tuple):
            items = [self.arg(e) for e in a]
            body = f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
            return f"{self.bind_global(type(a), type(a).__name__)}{body}" if hasattr(a, "_fields") else body
        if isinstance(a, list):
            return f"[{', '.join(self.arg(e) for e in a)}]"
        if isinstance(a, dict):
            body = "{" + ", ".join(f"{self.arg(k)}: {self.arg(v)}" for k, v in a.items()) + "}"
            if type(a) is dict:
                return body
            cls = self.bind_global(type(a), type(a).__name__)
            return f"{self.bind_global(build_dict, 'build_dict')}({cls}, {body})"
        if isinstance(a, slice):
            return f"slice({self.arg(a.start)}, {self.arg(a.stop)}, {self.arg(a.step)})"
        if a is None or a is Ellipsis or isinstance(a, (bool, int, str, bytes, complex)):
            return "..." if a is Ellipsis else repr(a)
        if isinstance(a, float):
            return f"float({repr(a)!r})" if math.isinf(a) or math.isnan(a) else repr(a)
        if isinstance(a, _LITERAL_TYPES):
            return str(a)
        if isinstance(a, torch.device):
            return f"torch.device({str(a)!r})"
        if isinstance(a, (types.FunctionType, types.BuiltinFunctionType, type)) or (
                callable(a) and not isinstance(a, (torch.nn.Module, torch.Tensor))):
            return self.callable_name(a)
        hint = a.name if isinstance(a, enum.Enum) else type(a).__name__
        return self.bind_global(a, hint)

    def index(self, idx: Any) -> str:
        """Format a subscript: slices as ``a:b:c``, Ellipsis as ``...``, tuples unparenthesised."""
        if isinstance(idx, slice):
            parts = ["" if v is None else self.arg(v) for v in (idx.start, idx.stop, idx.step)]
            return ":".join(parts[:2]) + (f":{parts[2]}" if idx.step is not None else "")
        if isinstance(idx, tuple) and not hasattr(idx, "_fields"):
            if not idx:
                return "()"
            # (a tuple inside the subscript is an index sequence, x[:, (-1,), :]: parenthesised)
            inner = ", ".join(self.index(e) if isinstance(e, slice) else self.arg(e) for e in idx)
            return inner + "," if len(idx) == 1 else inner
        return self.arg(idx)

    def call_args(self, args, kwargs) -> str:
        parts = [self.arg(a) for a in args] + [f"{k} = {self.arg(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    # ---- one expression per opcode ---------------------------------------------------------
    def attr_path(self, qualname: str) -> str:
        expr = self.root_name
        for atom in qualname.split("."):
            expr = f"{expr}.{atom}" if atom.isidentifier() else f"getattr({expr}, {atom!r})"
        return expr

    def expr_get_attr(self, n: Node) -> str:
        return self.attr_path(n.target)

    def expr_call_module(self, n: Node) -> str:
        return f"{self.attr_path(n.target)}({self.call_args(n.args, n.kwargs)})"

    def expr_call_method(self, n: Node) -> str:
        obj, *rest = n.args
        receiver = self.arg(obj) if isinstance(obj, Node) else f"({self.arg(obj)})"
        return f"{receiver}.{n.target}({self.call_args(rest, n.kwargs)})"

    def expr_call_function(self, n: Node) -> str:
        template = OPERATOR_TEMPLATES.get(n.target)
        if template is not None and not n.kwargs and len(n.args) == template.count("{}"):
            return template.format(*(self.arg(a) for a in n.args))
        if n.target is operator.getitem and len(n.args) == 2 and not n.kwargs:
            return f"{self.arg(n.args[0])}[{self.index(n.args[1])}]"
        if (n.target is builtins.getattr and len(n.args) == 2 and not n.kwargs
                and isinstance(n.args[1], str) and n.args[1].isidentifier()):
            return f"{self.arg(n.args[0])}.{n.args[1]}"
        return f"{self.callable_name(n.target)}({self.call_args(n.args, n.kwargs)})"


def _signature(graph: Graph, em: _Emitter) -> str:
    params = [em.root_name]
    saw_default = saw_star = False
    for n in graph.nodes:
        if n.op != "placeholder":
            continue
        star = "**" if n.target.startswith("**") else "*" if n.target.startswith("*") else ""
        default = f" = {em.arg(n.args[0])}" if n.args and not star else ""
        if not star and not default and saw_default and not saw_star:
            params.append("*")  # a required input after a defaulted one: keyword-only from here
            saw_star = True
        saw_default |= bool(default)
        saw_star |= star == "*"
        params.append(f"{star}{n.name}{default}")
    return ", ".join(params)


def generate(graph: Graph, root_name: str = "self") -> PythonCode:
    """Generate ``def forward(...)`` source for ``graph`` (see module docstring)."""
    em = _Emitter(graph, root_name)
    expr_for = {"get_attr": em.expr_get_attr, "call_module": em.expr_call_module,
                "call_method": em.expr_call_method, "call_function": em.expr_call_function}
    nodes = list(graph.nodes)
    last_use: Dict[Node, Node] = {}
    for n in nodes:
        for inp in n.all_input_nodes:
            last_use[inp] = n
    frees: Dict[Node, List[Node]] = {}
    for value, user in last_use.items():
        if user.op != "output":
            frees.setdefault(user, []).append(value)
    for n in nodes:
        if not n.users and n.op not in ("output", "placeholder"):
            frees.setdefault(n, []).append(n)

    body: List[str] = []
    off = False                             # (inside a `with torch.no_grad():` block)
    for n in nodes:
        if n.op == "placeholder":
            continue
        if n.op == "output":
            body.append(f"return {em.arg(n.args[0]) if n.args else 'None'}")
            continue
        if n.op != "get_attr" and bool(n.meta.get(GRAD_DISABLED)) != off:
            off = not off
            if off:
                body.append(f"with {em.callable_name(torch.no_grad)}():")
        line = f"{n.name} = {expr_for[n.op](n)}"
        dead = frees.get(n)
        if dead:
            line += ";  " + " = ".join(d.name for d in dead) + " = None"
        body.append("    " * off + line)
    if not any(n.op == "output" for n in nodes):
        body.append("return None")
    src = f"def forward({_signature(graph, em)}):\n" + "".join(f"    {line}\n" for line in body)
    return PythonCode(src, em.globals)
