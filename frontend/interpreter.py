"""The :class:`Interpreter`: execute a graph node by node in Python."""
from __future__ import annotations

from typing import Any, Dict, Iterator, Optional, Tuple

import torch

from . import meta as M
from .errors import InterpreterError
from .graph import Graph
from .node import Node, Target, map_arg

__all__ = ["Interpreter"]


class Interpreter:
    """Runs ``graph`` (default: ``module.graph``) on concrete inputs, one node at a time.

    ``run(*args)`` binds ``args`` to the placeholders in order (defaults fill the rest)
    and returns the value of the output node. ``self.env`` maps each executed node to
    its value. Subclasses customise execution by overriding :meth:`run_node` or the
    per-opcode methods, each called as ``method(target, args, kwargs)`` with arguments
    already fetched from ``env``:
    :meth:`placeholder`, :meth:`get_attr`, :meth:`call_function`, :meth:`call_method`,
    :meth:`call_module`, :meth:`output`.

    A failing node raises :class:`InterpreterError` naming the node and its user source
    location; the original exception is the ``__cause__``.
    """

    def __init__(self, module: torch.nn.Module, graph: Optional[Graph] = None) -> None:
        self.module = module
        self.graph = graph if graph is not None else module.graph
        self.submodules = dict(module.named_modules())
        self.env: Dict[Node, Any] = {}
        self.args_iter: Iterator[Any] = iter(())
        self._opcode_impl = {"placeholder": self.placeholder, "get_attr": self.get_attr,
                             "call_function": self.call_function, "call_method": self.call_method,
                             "call_module": self.call_module, "output": self.output}

    def run(self, *args: Any) -> Any:
        """Execute the graph on ``args`` (bound to the placeholders in order) and return the output's value."""
        self.env = {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            try:
                self.env[node] = self.run_node(node)
            except InterpreterError:
                raise
            except Exception as e:
                raise InterpreterError(
                    f"error while running node %{node.name}: {node.format_node(abbreviated=True)}",
                    where=node.meta.get(M.SOURCE),
                    why=f"{type(e).__name__}: {e}",
                    fix="the operation at the source line above failed on these inputs; check the shapes, "
                        "dtypes and values passed to the graph") from e
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n: Node) -> Any:
        """Execute one node: fetch its arguments from ``env`` and call the method named after its opcode."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return self._opcode_impl[n.op](n.target, args, kwargs)

    def fetch_args_kwargs_from_env(self, n: Node) -> Tuple[Tuple, Dict[str, Any]]:
        """``n``'s args and kwargs with every input node replaced by its value in ``env``."""
        lookup = self.env.__getitem__
        return map_arg(n.args, lookup), map_arg(n.kwargs, lookup)

    def fetch_attr(self, target: str) -> Any:
        """The attribute at dotted path ``target`` of the module."""
        obj = self.module
        for atom in target.split("."):
            obj = getattr(obj, atom)
        return obj

    # ---- one method per opcode ---------------------------------------------------------------
    def placeholder(self, target: Target, args: Tuple, kwargs: Dict[str, Any]) -> Any:
        """The next input (``*name``: the remaining ones; ``**name``: ``{}``), else the default in ``args[0]``."""
        if target.startswith("**"):
            return {}
        if target.startswith("*"):
            return tuple(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise TypeError(f"missing value for graph input {target!r}") from None

    def get_attr(self, target: Target, args: Tuple, kwargs: Dict[str, Any]) -> Any:
        """The module attribute ``target`` (a parameter, buffer or constant)."""
        return self.fetch_attr(target)

    def call_function(self, target: Target, args: Tuple, kwargs: Dict[str, Any]) -> Any:
        """``target(*args, **kwargs)``."""
        return target(*args, **kwargs)

    def call_method(self, target: Target, args: Tuple, kwargs: Dict[str, Any]) -> Any:
        """``args[0].<target>(*args[1:], **kwargs)``."""
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target: Target, args: Tuple, kwargs: Dict[str, Any]) -> Any:
        """Call the submodule ``target`` with the arguments."""
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: Target, args: Tuple, kwargs: Dict[str, Any]) -> Any:
        """The value the graph returns (``args[0]``)."""
        return args[0]
