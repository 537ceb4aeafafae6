"""fxla.lowering.dot_rows: the rows of a program's largest matrix product, which picks XLA CPU's dot kernels
(fxla.runtime.executable.forward_xla_options)."""
from fxla.dialects.mlir import fxla_context, ir
from fxla.lowering.dot_rows import largest_dot_rows
from fxla.runtime.executable import SMALL_DOT_MAX_ROWS, SMALL_DOT_XLA_OPTIONS, forward_xla_options

_CONV = ("stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {{stride = "
         "[{s}, {s}], pad = [[{p}, {p}], [{p}, {p}]], rhs_dilate = [1, 1]}} {{batch_group_count = 1 : i64, "
         "feature_group_count = 1 : i64}} : (tensor<2x8x10x10xf32>, tensor<4x8x{k}x{k}xf32>) -> "
         "tensor<2x4x{o}x{o}xf32>")


def _rows(body: str, args: str) -> int:
    with fxla_context():
        return largest_dot_rows(ir.Module.parse(f"func.func @f({args}) {{\n{body}\nreturn\n}}"))


def test_a_batched_dot_counts_its_batch_times_the_lhs_rows():
    # [b=3, m=5, k=7] x [b=3, k=7, n=11]: 15 rows of 11 columns
    assert _rows("%0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : "
                 "(tensor<3x5x7xf32>, tensor<3x7x11xf32>) -> tensor<3x5x11xf32>",
                 "%a: tensor<3x5x7xf32>, %b: tensor<3x7x11xf32>") == 15


def test_pointwise_convolutions_are_dots_and_others_are_not():
    args = "%x: tensor<2x8x10x10xf32>, %k: tensor<4x8x{k}x{k}xf32>"
    assert _rows("%0 = " + _CONV.format(s=1, p=0, k=1, o=10), args.format(k=1)) == 2 * 10 * 10
    assert _rows("%0 = " + _CONV.format(s=1, p=1, k=3, o=10), args.format(k=3)) == 0      # a 3x3 convolution
    assert _rows("%0 = " + _CONV.format(s=2, p=0, k=1, o=5), args.format(k=1)) == 0       # strided
    assert _rows("", "") == 0


def test_small_products_pick_ynnpack_dots():
    assert forward_xla_options(SMALL_DOT_MAX_ROWS) is SMALL_DOT_XLA_OPTIONS
    assert forward_xla_options(SMALL_DOT_MAX_ROWS + 1) is None and forward_xla_options(None) is None
