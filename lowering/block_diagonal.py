"""``fxla-block-diagonal-conv``: a grouped ``stablehlo.convolution`` as one dense convolution whose kernel is
block-diagonal, guarded so that it computes what the grouped one computes.

XLA CPU runs a convolution with feature groups through a slow generic loop; its dense (Eigen) convolution is
about 15x faster per multiply-add.  For a few groups of several channels each (RegNetY's first stage: 6 groups of
8), the same convolution with the groups' kernels on the diagonal of one ``[O, G*Ci, spatial...]`` kernel (zeros
elsewhere) does ``G`` times the multiply-adds and is still faster (measured in JAX, NHWC on Eigen: ``[32, 48, 112,
112]`` 3x3 stride 2, 6 groups: 71.4 ms grouped, 27.6 ms dense; ``[32, 104, 56, 56]`` stride 2, 13 groups: 38.5 vs
29.1 ms; from about 13 groups of 8 on the grouped one is faster).  :func:`fxla.lowering.grouped_conv.pays_block_diagonal`
decides, under ``fxla.compile``, where the per-tap form does not pay; ``fxla-opt --fxla-block-diagonal-conv``
rewrites every eligible one (:func:`fxla.lowering.grouped_conv.block_diagonal_conv_pass`).

A zero weight is not a zero term for every input: ``inf * 0`` and ``nan * 0`` are NaN, so one non-finite input
element would make every output channel at its windows NaN, where the grouped convolution keeps the other groups
finite.  The rewrite therefore tests its input first::

    %ok = reduce(and) is_finite(%x)
    %y = stablehlo.if %ok { dense(%x, block_diagonal(%w)) } else { grouped(%x, %w) }

(the test costs one pass over the input: 3 of the 49 ms saved at ``[32, 48, 112, 112]``).  The block-diagonal
kernel is a ``select`` of the weights, never a product, so non-finite weights stay where they were.  When every
input is finite the two compute the same sums, the off-diagonal terms being exact zeros.
"""
from __future__ import annotations

from fxla.dialects.mlir import hlo, ir


def _tensor(shape, elem) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(shape), elem)


def _kernel(w, p: dict):
    """The grouped kernel ``w`` (``[O, Ci, spatial...]``, ``G`` groups of ``Mo = O / G`` outputs) as the dense
    kernel ``[spatial..., G*Ci, O]`` (HWIO: XLA CPU runs a convolution on Eigen only with its kernel in that
    layout, and inside a conditional's branch XLA does not transpose it there itself: 8x slower) with group
    ``g``'s weights at inputs ``g*Ci ... g*Ci + Ci-1`` of its outputs and zeros elsewhere."""
    g, elem = p["groups"], p["elem"]
    out, ci, *kernel = p["w"]
    mo, n = out // g, len(kernel)
    wide = kernel + [g, ci, g, mo]            # [spatial..., G (of the input), Ci, G (of the output), Mo]
    split = hlo.ReshapeOp(_tensor([g, mo, ci] + kernel, elem), w).result
    spread = hlo.BroadcastInDimOp(_tensor(wide, elem), split, [n + 2, n + 3, n + 1] + list(range(n))).result
    rows = hlo.IotaOp(_tensor(wide, ir.IntegerType.get_signless(32)), n).result
    cols = hlo.IotaOp(_tensor(wide, ir.IntegerType.get_signless(32)), n + 2).result
    diagonal = hlo.CompareOp(rows, cols, hlo.ComparisonDirectionAttr.get("EQ")).result
    zeros = hlo.BroadcastInDimOp(_tensor(wide, elem), _zero(elem), []).result
    chosen = hlo.SelectOp(diagonal, spread, zeros).result
    return hlo.ReshapeOp(_tensor(kernel + [g * ci, out], elem), chosen).result


def _hwio(op, n: int) -> ir.Attribute:
    """``op``'s convolution dimension numbers with the kernel as ``[spatial..., I, O]``."""
    dn = hlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
    return hlo.ConvDimensionNumbers.get(
        input_batch_dimension=dn.input_batch_dimension, input_feature_dimension=dn.input_feature_dimension,
        input_spatial_dimensions=list(dn.input_spatial_dimensions),
        kernel_input_feature_dimension=n, kernel_output_feature_dimension=n + 1,
        kernel_spatial_dimensions=list(range(n)), output_batch_dimension=dn.output_batch_dimension,
        output_feature_dimension=dn.output_feature_dimension,
        output_spatial_dimensions=list(dn.output_spatial_dimensions))


def _zero(elem):
    return hlo.ConstantOp(ir.DenseElementsAttr.get_splat(_tensor([], elem), ir.FloatAttr.get(elem, 0.0))).result


def _all_finite(x):
    """``tensor<i1>``: whether every element of ``x`` is finite."""
    i1 = ir.IntegerType.get_signless(1)
    scalar = _tensor([], i1)
    finite = hlo.IsFiniteOp(x).result
    true = hlo.ConstantOp(ir.DenseElementsAttr.get_splat(scalar, ir.BoolAttr.get(True))).result
    reduce = hlo.ReduceOp([scalar], [finite], [true], list(range(ir.RankedTensorType(x.type).rank)))
    block = reduce.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        hlo.ReturnOp([hlo.AndOp(block.arguments[0], block.arguments[1]).result])
    return reduce.result


def rewrite_block_diagonal(op, p: dict) -> None:
    """Replace the grouped convolution ``op`` (parameters ``p`` from ``fxla.lowering.grouped_conv``'s
    eligibility test) by the guarded dense convolution of the module docstring."""
    x, w = op.operands[0], op.operands[1]
    with op.location, ir.InsertionPoint(op):
        guard = hlo.IfOp([op.results[0].type], _all_finite(x))
        dense_block = guard.true_branch.blocks.append()
        with ir.InsertionPoint(dense_block):
            kernel = _kernel(w, p)
            dense = op.operation.clone()
            dense.operands[1] = kernel
            dense.attributes["dimension_numbers"] = _hwio(op, len(p["w"]) - 2)
            dense.attributes["feature_group_count"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)
            hlo.ReturnOp([dense.results[0]])
        grouped_block = guard.false_branch.blocks.append()
        with ir.InsertionPoint(grouped_block):
            grouped = op.operation.clone()
            hlo.ReturnOp([grouped.results[0]])
    op.results[0].replace_all_uses_with(guard.results[0])
    op.erase()
