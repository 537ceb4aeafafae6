"""fxla -> StableHLO: the ``convert-fxla-to-stablehlo`` conversion and the strict StableHLO verifier.

Each :data:`~fxla.lowering.patterns.PATTERNS` entry becomes an MLIR rewrite pattern rooted at its op's name
(the root name is read off the ``OpDef`` key, never dispatched on), applied with MLIR's
``walk_and_apply_patterns`` driver.  Afterwards no ``fxla.*`` op may remain, CHLO is legalised to StableHLO,
and the module is re-parsed in a *strict* context (unregistered dialects rejected) and checked by MLIR's own
verifier — the StableHLO handed to XLA is always verified (:func:`fxla.lowering.passes.lower_to_stablehlo`
runs the whole pipeline).
"""
from __future__ import annotations

from typing import List, Optional, Union

from fxla.dialects.fxla import verify_module
from fxla.dialects.fxla.opdef import type_cache
from fxla.dialects.fxla.symbolic import SYM_ATTR, UNKNOWN, NotPolymorphicError, is_result_slot, set_slot, sym_slots
from fxla.dialects.fxla.verifier import Diagnostic
from fxla.dialects.mlir import hlo, ir, passmanager, rewrite, strict_context

from .errors import LoweringError
from .patterns import PATTERNS, Builder


class ConversionError(LoweringError):
    """fxla -> StableHLO left ops behind or produced IR that MLIR's verifier rejects."""

    def __init__(self, diagnostics: List[Diagnostic], why: str):
        self.diagnostics = diagnostics
        super().__init__("\n".join(str(d) for d in diagnostics) + f"\nwhy: {why}")


def _empty_results(b: Builder):
    """Constants for an op whose every result has a size-0 dim (nothing to compute), else None.  Patterns may then
    assume non-empty results: gathers, scans and reductions along a size-0 dim build ops (slices, windows of
    size 0) that StableHLO rejects, while torch accepts the op and returns an empty tensor."""
    if not all(0 in s.shape for s in b.results):
        return None
    values = [b.splat(0, s.elem, s.shape) for s in b.results]
    return values[0] if len(values) == 1 else values


def _unknown_attrs(op, attrs) -> None:
    """A polymorphic op's symbolic attribute entries (``?``, named by ``fxla.sym``) as :data:`UNKNOWN`, so a
    pattern that computes with one raises instead of using ``DYNAMIC`` as a number."""
    for slot in sym_slots(op):
        if not is_result_slot(slot):
            set_slot(attrs, slot, UNKNOWN)


def _rewrite(opdef, fn):
    def apply(op, rewriter):
        operands, attrs = opdef.read(op)
        if SYM_ATTR in op.attributes:
            _unknown_attrs(op, attrs)
        with ir.InsertionPoint(op), op.location:
            b = Builder(op)
            try:
                value = _empty_results(b)
                if value is None:
                    value = fn(b, *operands, **attrs)
                value = _as_result_types(b, op, value)
            except (NotPolymorphicError, TypeError) as err:
                if not _has_dynamic_types(op):
                    raise
                raise ConversionError([Diagnostic(op.location, op.name, f"has no polymorphic StableHLO form yet "
                                                                       f"({str(err).splitlines()[0][:200]})")],
                                      "its pattern needs this ? size as a number; the program can be refined "
                                      "in the fxla dialect and converted per size instead") from None
        rewriter.replace_op(op, list(value) if isinstance(value, (tuple, list)) else [value])
    return apply


def _as_result_types(b: Builder, op, value):
    """``value`` (a pattern's results) with the fxla op's result types.  In a polymorphic program a pattern's ops
    may infer a ``?`` where the fxla op's type has a size the program fixed (``tensor<?x?x4xf32>`` after a
    transpose of a ``tensor<?x?x?xf32>`` argument whose last dim the program requires to be 4); the value is then
    ``dynamic_reshape``d to the op's type, so that every use, ``func.return`` of a forward's residuals included,
    keeps the type the fxla program stated (shape refinement folds the reshape away)."""
    values = list(value) if isinstance(value, (tuple, list)) else [value]
    for r, (v, want) in enumerate(zip(values, op.results.types)):
        if v.type != want and isinstance(ir.Type(v.type).maybe_downcast(), ir.RankedTensorType) and \
                not ir.RankedTensorType(v.type).has_static_shape:
            values[r] = hlo.DynamicReshapeOp(want, v, b.shape_value(b.dims(r))).result
    return values if isinstance(value, (tuple, list)) else values[0]


def _has_dynamic_types(op) -> bool:
    return any(not ir.RankedTensorType(t).has_static_shape for t in [*(v.type for v in op.operands),
                                                                   *op.results.types]
               if isinstance(ir.Type(t).maybe_downcast(), ir.RankedTensorType))


def _pattern_set(context: ir.Context):
    patterns = rewrite.RewritePatternSet(context)
    for opdef, fn in PATTERNS.items():
        patterns.add(opdef.name, _rewrite(opdef, fn))
    return patterns.freeze()


def _root(module) -> ir.Operation:
    return module.operation if isinstance(module, ir.Module) else module


def _leftovers(root: ir.Operation) -> List[Diagnostic]:
    found = []

    def visit(op):
        if op.name.startswith("fxla."):
            found.append(Diagnostic(op.location, op.name, "has no lowering to StableHLO"))
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found


def convert_fxla_to_stablehlo(module) -> None:
    """Rewrite every fxla op of ``module`` (an ``ir.Module`` or its operation) in place, verifying it first."""
    root = _root(module)
    with type_cache():                  # (one cache for the verifier and the patterns)
        verify_module(root)
        _apply_patterns(root)


def _apply_patterns(root: ir.Operation) -> None:
    """Every pattern applied to ``root``; no fxla op may remain, and the fxla argument annotations go."""
    with type_cache(), root.context:
        rewrite.walk_and_apply_patterns(root, _pattern_set(root.context))
    left = _leftovers(root)
    if left:
        raise ConversionError(left, "these fxla ops have no StableHLO pattern")
    _strip_fxla_attrs(root)


def convert_polymorphic(module) -> None:
    """Rewrite every fxla op of a *polymorphic* fxla module (``?`` dims, size operands named by ``fxla.sym``:
    :mod:`fxla.dialects.fxla.symbolic`) in place into polymorphic StableHLO: ``?`` dims stay ``?``, sizes are
    computed by ``stablehlo.get_dimension_size`` and ``tensor<i64>`` arithmetic, and ops whose StableHLO form needs
    static sizes take the dynamic variant (``dynamic_broadcast_in_dim``, ``dynamic_reshape``, ``dynamic_iota``,
    ``real_dynamic_slice``...).  fxla's verifier checks static programs only, so the output is checked by MLIR's
    (:func:`verify_stablehlo`); a pattern with no polymorphic form raises
    :class:`~fxla.dialects.fxla.symbolic.NotPolymorphicError` (a :class:`ConversionError` naming the op here) or
    leaves a static-only op with a ``?`` result, which MLIR's verifier rejects."""
    _apply_patterns(_root(module))


def _strip_fxla_attrs(root: ir.Operation) -> None:
    """Drop ``fxla.*`` argument annotations: the StableHLO module must not mention the fxla dialect."""
    for fn in root.regions[0].blocks[0].operations:
        if "arg_attrs" in fn.attributes:
            del fn.attributes["arg_attrs"]


def legalize_and_clean(module, pipeline: str = "func.func(chlo-legalize-to-stablehlo),canonicalize,cse") -> None:
    """Run an MLIR pipeline (by default: legalise CHLO, canonicalise, CSE) on ``module`` in place."""
    root = _root(module)
    with root.context:
        passmanager.PassManager.parse(f"builtin.module({pipeline})").run(root)


def verify_stablehlo(text: Union[str, bytes], context: Optional[ir.Context] = None) -> ir.Module:
    """Parse ``text`` (MLIR text, or MLIR bytecode as ``bytes``) with unregistered dialects rejected and run
    MLIR's verifier; return the strict module."""
    ctx = context or strict_context()
    try:
        with ctx:
            module = ir.Module.parse(text)
            module.operation.verify()
    except ir.MLIRError as err:
        raise ConversionError([Diagnostic(d.location, "stablehlo", d.message) for d in err.error_diagnostics],
                              "MLIR's verifier rejected the StableHLO fxla produced (an fxla bug)") from None
    return module
