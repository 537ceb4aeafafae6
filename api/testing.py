"""``fxla.testing``: print the fxla IR a torch op lowers to, for FileCheck tests of the lowering rules.

The Python lit tests in ``lit_tests/TorchToFxla/`` (in the style of torch-mlir's Python lit tests) are written
with it.  Each case names the op object it tests (a key of :data:`fxla.lowering.RULES`), traces a small
program that calls it, lowers it to the fxla dialect for the example inputs (nothing is compiled or
executed) and prints a label line followed by the module::

    # RUN: %python %s | FileCheck %s --enable-var-scope
    import torch
    from fxla.testing import case, t

    # CHECK-LABEL: case torch.add:
    # CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<4xf32>)
    # CHECK:         "fxla.add"(%[[X]], %[[Y]]) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    @case(torch.add, t(3, 4), t(4))
    def add(x, y):
        return torch.add(x, y)

The label is ``// case <name>:`` (``// case <name> (<variant>):`` with ``variant=``), where ``<name>`` is the
op's public spelling as :func:`fxla.lowering.coverage` lists it (``torch.nn.functional.gelu``,
``Tensor.view``, ``operator.add``, ``torch.nn.Linear``); ``tests/test_lit_coverage.py`` matches these labels
against the rule table.

A case fails — it prints the label and ``// error: ...`` lines instead of a module, the error goes to
stderr with the case's ``file:line``, and the process exits with status 1 at the end — when tracing or
lowering raises, when the op is not a key of ``RULES``, or when the traced graph (functionalized: ``x[i] = v``
becomes ``fxla.frontend.passes.functionalize.setitem``) does not contain the op
(so a case cannot silently test some other rule).  Later cases still run.

The exit status is set by an ``atexit`` handler registered at the first failure (it flushes the output and
calls ``os._exit(1)``, so handlers registered before it are skipped); :func:`failures` lists the failed labels
for a caller that wants to check them itself.  ``utils/update_torch_op_checks.py`` drafts the check lines of
a file from what its cases print.
"""
from __future__ import annotations

import atexit
import inspect
import os
import sys
import traceback
from typing import Any, Callable, List, Optional

import torch

from fxla.errors import FxlaError
from fxla.frontend import GraphModule, Tracer
from fxla.lowering import RULES
from fxla.pipeline import Pipeline
from fxla.lowering.registry import _label, op_key

__all__ = ["case", "print_fxla", "t", "op_name", "CaseError", "failures"]

_FAILED: List[str] = []


class CaseError(FxlaError):
    """A case that cannot test the op it names: the op is not a key of ``RULES``, the traced graph does not
    call it, or a module case has an unsupported number of example inputs."""


class _Holder(torch.nn.Module):
    """The module under test as the submodule ``mod``, so tracing records one ``call_module`` node for it
    (one subclass per number of inputs: a traced ``forward`` cannot be variadic)."""

    def __init__(self, mod: torch.nn.Module):
        super().__init__()
        self.mod = mod


class _Holder1(_Holder):
    def forward(self, x):
        return self.mod(x)


class _Holder2(_Holder):
    def forward(self, x, y):
        return self.mod(x, y)


class _Holder3(_Holder):
    def forward(self, x, y, z):
        return self.mod(x, y, z)


class _Holder4(_Holder):
    def forward(self, x, y, z, w):
        return self.mod(x, y, z, w)


_HOLDERS = {1: _Holder1, 2: _Holder2, 3: _Holder3, 4: _Holder4}


def _hold(mod: torch.nn.Module, n_inputs: int) -> _Holder:
    if n_inputs not in _HOLDERS:
        raise CaseError(f"a module case takes 1 to 4 example inputs, not {n_inputs}\n"
                        f"fix: write a function case that calls the module instead")
    return _HOLDERS[n_inputs](mod)


def t(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """An example input: zeros of ``shape`` and ``dtype`` (the IR depends only on shapes and dtypes)."""
    return torch.zeros(shape, dtype=dtype)


def op_name(op: Any) -> str:
    """The name a case prints for ``op``: its public spelling, as in :func:`fxla.lowering.coverage`."""
    return _label(op)


def failures() -> List[str]:
    """Labels of the cases that failed so far in this process."""
    return list(_FAILED)


def _where(obj: Any) -> str:
    target = inspect.unwrap(obj) if callable(obj) else obj
    code = getattr(target, "__code__", None)
    return f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}" if code is not None else "<unknown>"


def _exit_failed() -> None:
    sys.stdout.flush()
    print(f"fxla.testing: {len(_FAILED)} case(s) failed: {', '.join(_FAILED)}", file=sys.stderr)
    sys.stderr.flush()
    os._exit(1)


def _fail(label: str, where: str, err: BaseException) -> None:
    if not _FAILED:
        atexit.register(_exit_failed)
    _FAILED.append(label)
    print(f"// {label}:")
    for line in f"{type(err).__name__}: {err}".splitlines():
        print(f"// error: {line}")
    print(f"fxla.testing: case {label[5:]} ({where}) failed:", file=sys.stderr)
    traceback.print_exception(type(err), err, err.__traceback__, file=sys.stderr)
    sys.stdout.flush()


def _check_op_in_graph(op: Any, gm: GraphModule) -> None:
    seen = []
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method", "call_module"):
            key = op_key(node, gm)
            if key is op:
                return
            seen.append(_label(key) if key is not None else f"Tensor.{node.target}")
    raise CaseError(f"the traced graph has no {op_name(op)} node (it has: {', '.join(seen) or 'no calls'})\n"
                    f"why: the case must exercise the rule of the op it names\n"
                    f"fix: call {op_name(op)} on a traced value (wrap functions torch does not dispatch, such as "
                    f"F.tanh, with fxla.wrap)")


def print_fxla(program: Callable, *example_inputs, op: Any = None, variant: Optional[str] = None,
               name: Optional[str] = None) -> bool:
    """Trace ``program`` (a function or ``nn.Module``), lower it for ``example_inputs`` and print the label line
    and the fxla module; return whether it succeeded.

    ``op``: the ``RULES`` key the case tests — the label is its name (:func:`op_name`) and the traced graph must
    call it.  Without ``op``, ``name`` is the label.  ``variant`` tells several cases of one op apart.
    A module is put in eval mode.  Errors never propagate: they are reported as described in the module docs.
    """
    if op is None and name is None:
        raise TypeError("print_fxla needs op= (a key of fxla.lowering.RULES) or name=")
    label = "case " + (op_name(op) if op is not None else name) + (f" ({variant})" if variant else "")
    return _run(label, program, example_inputs, op, _where(program))


def _run(label: str, program: Callable, example_inputs, op: Any, where: str) -> bool:
    try:
        if op is not None and op not in RULES:
            raise CaseError(f"{op!r} is not a key of fxla.lowering.RULES\n"
                            f"fix: name the op object the rule is registered for (torch.add, torch.Tensor.add, "
                            f"operator.add, torch.nn.Linear, ...)")
        if isinstance(program, torch.nn.Module):
            program.eval()
        tracer = Tracer()
        graph = tracer.trace(program)
        gm = GraphModule(tracer.root, graph, getattr(program, "__name__", type(program).__name__))
        pipeline = Pipeline()
        prepared = pipeline.prepare(gm, example_inputs)
        if op is not None:              # in-place ops (x[i] = v) are checked as the op lowering sees
            _check_op_in_graph(op, prepared.graph_module)
        text = pipeline.to_fxla(prepared).text()
    except Exception as err:  # noqa: BLE001 -- every failure is reported, none is skipped
        _fail(label, where, err)
        return False
    print(f"// {label}:")
    print(text, end="" if text.endswith("\n") else "\n")
    sys.stdout.flush()
    return True


def case(op: Any, *example_inputs, variant: Optional[str] = None) -> Callable[[Callable], Callable]:
    """Decorator: run one case now, for the op object ``op`` and ``example_inputs``; returns the function.

    The decorated function is the program (it takes the example inputs) or, when ``op`` is an ``nn.Module``
    class, a factory called with no arguments that returns the module instance; it is traced as the submodule
    ``mod`` of a wrapper (so its parameters are named ``mod.weight``, ...)::

        @case(torch.nn.Linear, torch.randn(2, 8))
        def linear():
            return torch.nn.Linear(8, 3)
    """
    def deco(fn: Callable) -> Callable:
        program = fn
        if isinstance(op, type) and issubclass(op, torch.nn.Module):
            try:
                program = _hold(fn(), len(example_inputs))
            except Exception as err:  # noqa: BLE001
                _fail(f"case {op_name(op)}" + (f" ({variant})" if variant else ""), _where(fn), err)
                return fn
        _run(f"case {op_name(op)}" + (f" ({variant})" if variant else ""), program, example_inputs, op, _where(fn))
        return fn
    return deco
