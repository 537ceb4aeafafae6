"""fxla's verifier: checks every ``fxla.*`` op of a module against the op table.

MLIR treats fxla's generic-form ops as unregistered, so structure is checked here: the op is in the table,
operand count (and ``operandSegmentSizes``), operand element types, attributes (presence, kind, choices, no
unknown ones), result count, and the result types against the table's type inference.  All findings are
collected and raised at once as one :class:`VerificationError`, each with its ``file:line:col``.
"""
from __future__ import annotations


from dataclasses import dataclass
from typing import List, Optional

from fxla.base.errors import FxlaError
from fxla.base.suggest import did_you_mean

from ..mlir import ir, location_parts
from .opdef import ANY_ELEM, SEGMENTS, InferError, OpDef, attr_names, sig_of, type_cache
from .ops import BY_NAME, lookup


@dataclass(frozen=True)
class Diagnostic:
    """One verifier finding at an MLIR location."""

    location: ir.Location
    op_name: str
    message: str

    def __str__(self) -> str:
        parts = location_parts(self.location)
        where = f"{parts[0]}:{parts[1]}:{parts[2]}: " if parts else ""
        return f"{where}error: '{self.op_name}' op {self.message}"


class VerificationError(FxlaError):
    """An fxla module failed verification; ``diagnostics`` lists every finding."""

    def __init__(self, diagnostics: List[Diagnostic]):
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics))


_UNREADABLE = object()


def _attribute(op: ir.Operation, name: str):
    """``op.attributes[name]``, or ``_UNREADABLE`` when the bindings cannot represent it in Python: they cast
    every attribute to its most specific class and raise TypeError for a dense array of an element type they
    have no class for (``array<bf16>``, ``array<f16>``, ``array<f8E4M3FN>`` ...).  Never use ``NamedAttribute
    .attr`` on user input: the same failure there aborts the process."""
    try:
        return op.attributes[name]
    except TypeError:
        return _UNREADABLE


def _check_operands(opdef: OpDef, op: ir.Operation) -> Optional[str]:
    n = len(op.operands)
    if opdef.has_optional:
        if SEGMENTS not in attr_names(op):
            return f"requires attribute '{SEGMENTS}' (it has optional operands)"
        raw = _attribute(op, SEGMENTS)
        try:
            sizes = list(ir.DenseI32ArrayAttr(raw))
        except (TypeError, ValueError):
            shown = "a dense array of another element type" if raw is _UNREADABLE else str(raw)
            return f"attribute '{SEGMENTS}' must be array<i32>, got {shown}"
        if len(sizes) != len(opdef.operands) or any(s not in (0, 1) for s in sizes):
            return f"'{SEGMENTS}' must have {len(opdef.operands)} entries of 0 or 1, got {sizes}"
        for size, decl in zip(sizes, opdef.operands):
            if size == 0 and not decl.optional:
                return f"operand '{decl.name}' is required"
        if sum(sizes) != n:
            return f"'{SEGMENTS}' adds up to {sum(sizes)} but the op has {n} operands"
    elif opdef.is_variadic:
        if n < 1:
            return f"expects at least one '{opdef.operands[0].name}' operand"
    elif n != len(opdef.operands):
        return f"expects {len(opdef.operands)} operand{'s' * (len(opdef.operands) != 1)}, but got {n}"
    return None


def verify_op(op: ir.Operation) -> List[Diagnostic]:
    """Diagnostics for one ``fxla.*`` op (empty when it is valid)."""
    problem = _problem(op)
    return [] if problem is None else [Diagnostic(op.location, op.name, problem)]


def _problem(op: ir.Operation) -> Optional[str]:
    """What is wrong with one ``fxla.*`` op (``None`` when it is valid).  A function of the op's name, operand
    types, attributes, result types and region count only (:func:`verify_fxla` relies on that to reuse verdicts)."""
    name = op.name
    opdef = lookup(name)
    if opdef is None:
        bare = {n.partition(".")[2]: n for n in BY_NAME}           # compared without the dialect prefix
        guess = did_you_mean(name.partition(".")[2], bare, show=bare.__getitem__)
        return f"is not an op of the fxla dialect{guess} (its {len(BY_NAME)} ops are listed in docs/dialect.md)"
    if len(op.regions):
        return f"expects no regions, but has {len(op.regions)}"
    problem = _check_operands(opdef, op)
    if problem:
        return problem
    operands = list(op.operands)
    if opdef.has_optional:
        # not opdef.read: it converts every attribute, and they are checked below (here sizes are known valid)
        given = iter(operands)
        operands = [next(given) if size else None for size in ir.DenseI32ArrayAttr(_attribute(op, SEGMENTS))]
    decls = opdef.operands
    if opdef.is_variadic:
        decls = decls * len(operands)
    sigs = []
    for value, decl in zip(operands, decls):
        if value is None:
            sigs.append(None)
            continue
        sig = sig_of(value.type)
        if sig is None:
            return f"operand '{decl.name}' must be a statically shaped ranked tensor, got {value.type}"
        if sig.elem not in decl.elems:
            return (f"operand '{decl.name}' must have element type in {{{', '.join(decl.elems)}}}, "
                    f"got {sig.elem}")
        sigs.append(sig)
    present = set(attr_names(op)) - {SEGMENTS}
    unknown = sorted(present - set(opdef.attr_index))
    if unknown:
        return f"has unknown attribute{'s' * (len(unknown) > 1)} {', '.join(repr(u) for u in unknown)}"
    attrs = {}
    for a in opdef.attributes:
        if a.name not in present:
            if a.required:
                return f"requires attribute '{a.name}' ({a.kind.name})"
            attrs[a.name] = a.default
            continue
        raw = _attribute(op, a.name)
        try:
            attrs[a.name] = a.kind.to_python(raw)
        except (TypeError, ValueError, OverflowError):
            shown = "a dense array of another element type" if raw is _UNREADABLE else str(raw)
            return f"attribute '{a.name}' must be {a.kind.name}, got {shown}"
        if a.choices and attrs[a.name] not in a.choices:
            return f"attribute '{a.name}' must be one of {list(a.choices)}, got {attrs[a.name]!r}"
    if len(op.results) != len(opdef.results):
        return f"expects {len(opdef.results)} result(s), but got {len(op.results)}"
    if opdef.is_variadic:
        sigs = [sigs]
    try:
        expected = opdef.infer(sigs, attrs)
    except InferError as err:
        return str(err)
    for i, (res, want) in enumerate(zip(op.results, expected)):
        got = sig_of(res.type)
        if got is None or got.shape != want.shape or (want.elem != ANY_ELEM and got.elem != want.elem):
            shown = str(want) if want.elem != ANY_ELEM else f"tensor<{''.join(f'{d}x' for d in want.shape)}?>"
            return f"result #{i} has type {res.type}, but the operands imply {shown}"
    return None


def _signature(op: ir.Operation) -> tuple:
    """Everything :func:`_problem` reads: name, operand types, attributes, result types, region count.  Types and
    attributes are uniqued by MLIR, so they hash and compare by pointer (cheap, and exact within one context)."""
    return (op.name, tuple(v.type for v in op.operands), tuple((n, _attribute(op, n)) for n in op.attributes),
            tuple(op.results.types), len(op.regions))


def verify_fxla(root: ir.Operation) -> List[Diagnostic]:
    """Diagnostics for every ``fxla.*`` op nested under ``root``, in program order.

    Ops with the same signature (:func:`_signature`) get the same verdict, so each distinct signature is checked
    once per call: a graph of repeated layers costs one hash lookup per repeated op.
    """
    found: List[Diagnostic] = []
    verdicts: dict = {}

    def visit(op):
        if op.name.startswith("fxla."):
            key = _signature(op)
            problem = verdicts.get(key, verdicts)
            if problem is verdicts:
                problem = verdicts[key] = _problem(op)
            if problem is not None:
                found.append(Diagnostic(op.location, op.name, problem))
        return ir.WalkResult.ADVANCE

    with type_cache():
        root.walk(visit)
    return found


def verify_module(module) -> None:
    """Raise :class:`VerificationError` unless MLIR's structural verifier and fxla's verifier both pass.

    ``module`` is an ``ir.Module`` or its ``builtin.module`` operation.
    """
    root = module.operation if isinstance(module, ir.Module) else module
    try:
        root.verify()
    except ir.MLIRError as err:
        raise VerificationError([Diagnostic(d.location, "builtin", d.message) for d in err.error_diagnostics]) \
            from None
    found = verify_fxla(root)
    if found:
        raise VerificationError(found)
