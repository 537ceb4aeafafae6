"""Value checks: what eager PyTorch checks of a tensor's *data* and raises on, checked by the compiled program too.

Some torch ops raise on their data, not on shapes: ``masked_scatter`` given fewer source elements than the mask
selects, ``x[mask] = v`` with another number of values than positions, ``binary_cross_entropy`` of inputs
outside [0, 1], a negative ``gaussian_nll_loss`` variance.  A compiled program has no data when it is built,
and XLA would compute *something* (a clamped gather repeats the last element), so without a check such a call
would return an answer where eager raises.

A lowering rule states the condition eager requires as a 0-d boolean fxla value (``ctx.check(ok, what, fix)``,
:meth:`fxla.lowering.context.LoweringContext.check`).  The program then computes, besides its results, one
``tensor<i32>`` *check code*: 0 when every condition held, else ``k`` for the first of its :class:`ValueCheck`\\ s
(in program order) that failed.  It is the program's last result (:class:`fxla.lowering.ResultLayout`'s
``checks``), and every caller reads it after the call (:meth:`ResultLayout.split` does, for every call path that
splits results) and raises :class:`ValueCheckError` naming the check and the user's source line where it is
not 0 -- before any output, changed input or module state of the call is used.  Reading it waits for the
program (one device-to-host copy of 4 bytes): only programs with checks pay that, and their calls take the
checked call path (no C-level shortcut).  Inside ``jax.jit`` (``as_jax_function``) the code is read by a host
callback, which raises there.
"""
from __future__ import annotations

import os
import re
from typing import NamedTuple, Optional, Sequence

import numpy as np

from fxla.base.errors import FxlaError, format_location
from fxla.dialects.fxla import ops
from fxla.dialects.fxla.types import is_float
from fxla.dialects.mlir import ir

from .index_bounds import indexes_input, known_bounds, splat_value

__all__ = ["ValueCheck", "ValueCheckError", "IndexCheckError", "ArgumentCheckError", "check_code", "check_indices",
           "check_divisor", "read_code", "raise_failed"]


class ValueCheckError(FxlaError, RuntimeError):
    """A compiled call's data broke a condition eager PyTorch checks and raises on (a ``RuntimeError`` too, as
    torch's own errors for these conditions are)."""


class IndexCheckError(ValueCheckError, IndexError):
    """A compiled call's data holds an index out of range where eager PyTorch raises ``IndexError``."""


class ArgumentCheckError(ValueCheckError, ValueError):
    """A compiled call's data breaks a condition where eager PyTorch raises ``ValueError`` (a negative
    ``gaussian_nll_loss`` variance)."""


class ValueCheck(NamedTuple):
    """One condition a program checks of its data: ``what`` eager requires (in torch's terms), the graph
    ``node`` and its rendered source location ``where`` (plain text: an exported artifact stores it), the
    ``fix``, and ``kind``: what eager raises, ``"runtime"`` (``RuntimeError``: :class:`ValueCheckError`),
    ``"index"`` (``IndexError``: :class:`IndexCheckError`) or ``"argument"`` (``ValueError``:
    :class:`ArgumentCheckError`)."""

    what: str
    node: str
    where: str
    fix: str
    kind: str = "runtime"

    def to_json(self) -> dict:
        """The check as an artifact stores it: its location reduced to ``  at <file name>:<line>:<col>`` (no
        directory of the exporting machine, no source text)."""
        found = re.match(r"\s*at (.+?):(\d+):(\d+)", self.where)
        where = f"  at {os.path.basename(found.group(1))}:{found.group(2)}:{found.group(3)}" if found else \
            "  at <unknown location>"
        return dict(self._replace(where=where)._asdict())

    @staticmethod
    def from_json(data) -> "ValueCheck":
        """The check stored by :meth:`to_json` (strings only: anything else is refused)."""
        if not isinstance(data, dict) or set(data) != set(ValueCheck._fields) or \
                not all(isinstance(data[k], str) for k in ValueCheck._fields) or data["kind"] not in _ERRORS:
            raise ValueError("a value check must be an object of the strings " + ", ".join(ValueCheck._fields) +
                             f" (kind: {' or '.join(_ERRORS)})")
        return ValueCheck(**{k: data[k] for k in ValueCheck._fields})


#: the error a check's ``kind`` raises
_ERRORS = {"runtime": ValueCheckError, "index": IndexCheckError, "argument": ArgumentCheckError}


def where_of(node) -> str:
    """The rendered source location of graph ``node`` (its user's line)."""
    return format_location(node.meta.get("source")) if node is not None else format_location(None)


def check_code(emitter, conditions: Sequence[ir.Value]) -> ir.Value:
    """The ``tensor<i32>`` check code of ``conditions`` (0-d ``i1`` values, in program order), built with
    ``emitter`` (an :class:`fxla.lowering.context.Emitter` at the return's insertion point): 0 when all hold,
    else one more than the position of the first that does not."""
    def constant(k: int) -> ir.Value:
        return emitter.emit(ops.constant, value=ir.DenseElementsAttr.get(np.array(k, np.int32)))
    code = constant(0)
    for k in reversed(range(len(conditions))):
        code = emitter.emit(ops.where, conditions[k], code, constant(k + 1))
    return code


def check_indices(ctx, index: ir.Value, size, what: str, *, low=0, inputs_checked: bool = True) -> None:
    """A value check (kind ``"index"``) that every element of the integer tensor ``index`` lies in ``[low,
    size)`` (``low``: ``-size`` for indices that count from the end), where eager PyTorch raises ``IndexError``
    otherwise and XLA would clamp -- unless the program itself bounds the values in range
    (:func:`fxla.lowering.index_bounds.known_bounds`: positions, constants; a tensor the tracer made a constant,
    :meth:`~fxla.lowering.context.LoweringContext.constant_bounds`) or they are a tensor input's, which
    every call checks before running (:func:`fxla.lowering.index_bounds.input_index_checks`; not with
    ``inputs_checked=False``, where the index op will not read the input's values as they are)."""
    if inputs_checked and indexes_input(index, ctx.n_inputs):
        return
    bounds = known_bounds(index) or ctx.constant_bounds(index)
    if bounds is not None and isinstance(size, int) and isinstance(low, int) and \
            (bounds[0] > bounds[1] or (low <= bounds[0] and bounds[1] < size)):
        return
    ok = ctx.emit(ops.logical_and, ctx.emit(ops.ge, index, ctx.tensor(low, like=index)),
                  ctx.emit(ops.lt, index, ctx.tensor(size, like=index)))
    # (a symbolic size -- a dim dynamo or dynamic= made symbolic -- has no number when the message is made)
    bound = size if isinstance(size, int) else "the size of the dim it indexes"
    lower = low if isinstance(low, int) else "minus that size"
    ctx.check(ok, f"{what}: every index must lie in [{lower}, {bound})",
              "compute indices within the dim they index (token ids below the vocabulary size, positions below "
              "the position table's length)", kind="index")


def check_divisor(ctx, divisor: ir.Value, elem: str) -> None:
    """A value check that an integer division's ``divisor`` has no zero (``elem``: the result's element type;
    floats divide by zero as IEEE says, as torch's do), where torch raises ``ZeroDivisionError`` and XLA would
    return some number -- unless the divisor is a nonzero constant."""
    if is_float(elem) or elem == "i1" or splat_value(divisor) not in (None, 0):
        return
    ctx.check(ctx.emit(ops.ne, divisor, ctx.tensor(0, like=divisor)),
              "integer division by zero: torch raises ZeroDivisionError", "keep integer divisors nonzero")


def read_code(code) -> int:
    """The check code (a 0-d array; waits for the program) as an int."""
    if not getattr(code, "is_fully_addressable", True):      # (a program over several processes: replicated)
        code = code.addressable_shards[0].data
    return int(np.asarray(code))


def raise_failed(checks: Sequence[ValueCheck], code, name: Optional[str] = None) -> None:
    """Raise :class:`ValueCheckError` when the check ``code`` (a program's last result: a 0-d array) is not 0.
    Reading it waits for the program."""
    k = read_code(code)
    if k == 0:
        return
    check = checks[k - 1] if 0 < k <= len(checks) else None
    if check is None:
        raise ValueCheckError(f"{name or 'the program'}: an unknown value check ({k}) failed",
                              why="the program and its recorded checks do not match",
                              fix="report this as an fxla bug")
    prefix = f"{name}: " if name else ""
    raise _ERRORS.get(check.kind, ValueCheckError)(
        f"{prefix}the call's data breaks a condition eager PyTorch checks: {check.what} (graph node "
        f"'{check.node}')", where=check.where,
        why="torch raises an error for this data; the compiled program checks the same condition on every call "
            "instead of returning what XLA would compute",
        fix=check.fix)
