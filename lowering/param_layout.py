"""``fxla-param-layout``: store parameters in the layout their StableHLO consumers want.

Parameters are arguments of ``func.func @main`` (after the inputs).  PJRT gives every argument the default
row-major layout, so a torch-layout weight that a dot or convolution wants in another layout is transposed by
XLA on *every* call.  This pass permutes such parameters once, at upload time, instead:

* **dot** — every use is the rhs of a ``stablehlo.dot_general`` with a rank-2 rhs, ``rhs_contracting_dims =
  [1]`` and no batch dims (``nn.Linear``'s ``x·Wᵀ`` on the torch ``[out, in]`` weight): the parameter is stored
  ``[in, out]`` (permutation ``[1, 0]``) and those dots contract rhs dim 0;
* **convolution** — every use is the kernel of a ``stablehlo.convolution`` whose kernel dims are ``[o, i,
  spatial...]`` = ``[0, 1, 2, ...]`` (torch's OIHW): the parameter is stored ``[spatial..., i, o]`` (HWIO;
  permutation ``[2, ..., n+1, 1, 0]``) and the convolutions' kernel dimension numbers say so;
* **transpose** — every use is a ``stablehlo.transpose`` with one permutation ``p``: the transposes are folded
  into the stored layout (permutation ``p``), then the two rules above are tried on the new uses.

A parameter with any other use (or a mix of uses, or none) is left alone.  The argument's type becomes the
permuted type; ``stored = param.permute(perm)``.  The rewrite is linear in the number of uses and the result is
checked by MLIR's verifier.

:func:`permute_param_layouts` is the rewrite on explicit argument indices; :func:`permute_trailing_params`
is what ``fxla.compile`` runs on its verified StableHLO, whose arguments carry no fxla attributes (the
parameters are the trailing arguments); both return ``{name: perm}``.  The pipeline
pass :func:`param_layout_pass` (``fxla-opt --fxla-param-layout``) takes the parameters from the
``fxla.param = "<name>"`` argument attributes and records each chosen permutation as ``fxla.layout =
array<i64: ...>`` on the argument.
"""
from __future__ import annotations

from typing import Dict, Mapping, Optional, Sequence, Tuple

from fxla.dialects.mlir import hlo, ir

from .errors import LoweringError

PARAM_ATTR = "fxla.param"
LAYOUT_ATTR = "fxla.layout"

Perm = Tuple[int, ...]


class ParamLayoutError(LoweringError):
    """``fxla-param-layout`` produced IR that MLIR's verifier rejects (an fxla bug)."""


def _ints(attr) -> list:
    return list(attr)


def _dot_use(op) -> bool:
    dn = hlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    return (ir.RankedTensorType(op.operands[1].type).rank == 2 and _ints(dn.rhs_contracting_dimensions) == [1]
            and not _ints(dn.rhs_batching_dimensions) and not _ints(dn.lhs_batching_dimensions))


def _rewrite_dot(op) -> None:
    dn = hlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    op.attributes["dot_dimension_numbers"] = hlo.DotDimensionNumbers.get(
        lhs_batching_dimensions=[], rhs_batching_dimensions=[],
        lhs_contracting_dimensions=_ints(dn.lhs_contracting_dimensions), rhs_contracting_dimensions=[0])


def _conv_use(op) -> bool:
    dn = hlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
    n = len(_ints(dn.kernel_spatial_dimensions))
    return (dn.kernel_output_feature_dimension == 0 and dn.kernel_input_feature_dimension == 1
            and _ints(dn.kernel_spatial_dimensions) == list(range(2, 2 + n)))


def inverse(perm: Sequence[int]) -> list:
    """The permutation that undoes ``perm`` (``transpose(transpose(x, perm), inverse(perm)) == x``)."""
    result = [0] * len(perm)
    for i, p in enumerate(perm):
        result[p] = i
    return result


def map_conv_dimensions(op, *, input: Optional[Sequence[int]] = None, kernel: Optional[Sequence[int]] = None,
                        output: Optional[Sequence[int]] = None) -> None:
    """Rewrite convolution ``op``'s dimension numbers for operands and result stored in another order: dim ``d``
    of its input becomes ``input[d]``, of its kernel ``kernel[d]``, of its result ``output[d]`` (None: unchanged).
    A value stored as ``transpose(x, perm)`` has its dim ``d`` at ``inverse(perm)[d]``."""
    dn = hlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
    i, k, o = ((lambda d: d) if m is None else m.__getitem__ for m in (input, kernel, output))
    op.attributes["dimension_numbers"] = hlo.ConvDimensionNumbers.get(
        input_batch_dimension=i(dn.input_batch_dimension), input_feature_dimension=i(dn.input_feature_dimension),
        input_spatial_dimensions=[i(d) for d in _ints(dn.input_spatial_dimensions)],
        kernel_input_feature_dimension=k(dn.kernel_input_feature_dimension),
        kernel_output_feature_dimension=k(dn.kernel_output_feature_dimension),
        kernel_spatial_dimensions=[k(d) for d in _ints(dn.kernel_spatial_dimensions)],
        output_batch_dimension=o(dn.output_batch_dimension), output_feature_dimension=o(dn.output_feature_dimension),
        output_spatial_dimensions=[o(d) for d in _ints(dn.output_spatial_dimensions)])


def _rewrite_conv(op) -> None:
    map_conv_dimensions(op, kernel=inverse(_conv_perm(ir.RankedTensorType(op.operands[1].type).rank)))


def _conv_perm(rank: int) -> Perm:
    return tuple(range(2, rank)) + (1, 0)


#: the two use kinds: op name -> (operand index the parameter must be, accepts the op?, rewrite, permutation)
_KINDS = {
    hlo.DotGeneralOp.OPERATION_NAME: (1, _dot_use, _rewrite_dot, lambda rank: (1, 0)),
    hlo.ConvolutionOp.OPERATION_NAME: (1, _conv_use, _rewrite_conv, _conv_perm),
}


def _uses(value) -> list:
    return [(use.owner.operation, use.operand_number) for use in value.uses]


def _permuted_type(t: ir.Type, perm: Perm) -> ir.Type:
    ranked = ir.RankedTensorType(t)
    shape = ranked.shape
    return ir.RankedTensorType.get([shape[p] for p in perm], ranked.element_type, ranked.encoding,
                                   loc=ir.Location.unknown())


def _fold_transposes(arg, uses) -> Optional[Perm]:
    """If every use is a ``stablehlo.transpose`` with the same permutation, replace them by ``arg`` (retyped)."""
    if not uses or any(op.name != hlo.TransposeOp.OPERATION_NAME for op, _ in uses):
        return None
    perms = {tuple(_ints(op.attributes["permutation"])) for op, _ in uses}
    if len(perms) != 1:
        return None
    perm = perms.pop()
    arg.set_type(_permuted_type(arg.type, perm))
    for op, _ in uses:
        op.results[0].replace_all_uses_with(arg)
        op.erase()
    return perm


def _layout_one(arg) -> Optional[Perm]:
    """Choose and apply the layout of one parameter argument; its permutation, or ``None`` if left alone."""
    uses = _uses(arg)
    folded = _fold_transposes(arg, uses)
    if folded is not None:
        uses = _uses(arg)
    if not uses:
        return folded
    kinds = {op.name for op, _ in uses}
    kind = _KINDS.get(kinds.pop()) if len(kinds) == 1 else None
    if kind is None:
        return folded
    operand, accepts, rewrite, perm_of = kind
    if not all(index == operand and accepts(op) for op, index in uses):
        return folded
    rank = ir.RankedTensorType(arg.type).rank
    perm = perm_of(rank)
    arg.set_type(_permuted_type(arg.type, perm))
    for op, _ in uses:
        rewrite(op)
    return perm if folded is None else tuple(folded[p] for p in perm)


def _main(root: ir.Operation):
    for op in root.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
            return op
    return None


def _set_function_type(fn) -> None:
    block = fn.regions[0].blocks[0]
    old = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    new = ir.FunctionType.get([a.type for a in block.arguments], old.results)
    fn.attributes["function_type"] = ir.TypeAttr.get(new)


def permute_param_layouts(module, params: Mapping[int, str], *, verify: bool = True) -> Dict[str, Perm]:
    """Rewrite ``@main`` of ``module`` (in place) so the parameters at argument indices ``params`` (index ->
    qualified name) are stored in the layout their uses want; returns ``{name: perm}`` for every parameter
    whose layout changed (``stored = param.permute(perm)``)."""
    root = module.operation if isinstance(module, ir.Module) else module
    chosen: Dict[str, Perm] = {}
    with root.context:
        fn = _main(root)
        if fn is None:
            return chosen
        arguments = fn.regions[0].blocks[0].arguments
        for index, name in params.items():
            perm = _layout_one(arguments[index])
            if perm is not None and perm != tuple(range(len(perm))):
                chosen[name] = perm
        if chosen:
            _set_function_type(fn)
            if verify:
                try:
                    root.verify()
                except ir.MLIRError as err:
                    raise ParamLayoutError(
                        f"fxla-param-layout produced invalid StableHLO for parameters {sorted(chosen)}:\n{err}\n"
                        "why: MLIR's verifier rejected the rewritten dots/convolutions\n"
                        "fix: this is an fxla bug; report it with the StableHLO module") from None
    return chosen


def permute_trailing_params(module, names: Sequence[str], fixed: Sequence[str] = ()) -> Dict[str, Perm]:
    """:func:`permute_param_layouts` for the usual argument order of an fxla program: the parameters ``names``
    are the last ``len(names)`` arguments of ``@main``; those in ``fixed`` keep their layout (buffers a loaded
    artifact's program updates: the next call passes the value it returned)."""
    root = module.operation if isinstance(module, ir.Module) else module
    fn = _main(root)
    if fn is None or not names:
        return {}
    first = len(fn.regions[0].blocks[0].arguments) - len(names)
    return permute_param_layouts(root, {first + i: n for i, n in enumerate(names) if n not in fixed})


def _arg_attrs(fn) -> Sequence[ir.DictAttr]:
    if "arg_attrs" not in fn.attributes:
        return []
    return [ir.DictAttr(a) for a in ir.ArrayAttr(fn.attributes["arg_attrs"])]


def param_layout_pass(module) -> None:
    """The ``fxla-param-layout`` pipeline pass: parameters are the ``@main`` arguments with an ``fxla.param``
    attribute; each permuted one gets ``fxla.layout = array<i64: perm...>``."""
    root = module.operation if isinstance(module, ir.Module) else module
    with root.context:
        fn = _main(root)
        if fn is None:
            return
        attrs = _arg_attrs(fn)
        params = {i: ir.StringAttr(a[PARAM_ATTR]).value for i, a in enumerate(attrs) if PARAM_ATTR in a}
        chosen = permute_param_layouts(root, params)
        if not chosen:
            return
        new_attrs = []
        for i, a in enumerate(attrs):
            entries = {a[j].name: a[j].attr for j in range(len(a))}
            if i in params and params[i] in chosen:
                entries[LAYOUT_ATTR] = ir.DenseI64ArrayAttr.get(list(chosen[params[i]]))
            new_attrs.append(ir.DictAttr.get(entries))
        fn.attributes["arg_attrs"] = ir.ArrayAttr.get(new_attrs)
