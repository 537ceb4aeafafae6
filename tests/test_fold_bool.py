"""fxla-fold-constants on bool (i1) constants: splat and dense i1 operands fold (no crash), results match eager."""
import torch

import fxla
from fxla.dialects.mlir import ir
from fxla.lowering.fold import constant_value, fold_constants


def _masked(x):
    mask = torch.ones(3, dtype=torch.bool) & (torch.arange(3) != 1)   # i1 splat & i1 comparison of constants
    both = (torch.zeros(3, dtype=torch.bool) == mask) | torch.full((3,), True)
    return torch.where(mask & both, x, -x), mask, both


def test_bool_constants_fold_and_match_eager():
    x = torch.randn(3)
    fast = fxla.compile(_masked)
    for got, want in zip(fast(x), _masked(x)):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)


def test_fold_bool_splat_and_dense_operands():
    src = """
    func.func @f() -> (tensor<3xi1>, tensor<3xi1>) {
      %t = "fxla.constant"() {value = dense<true> : tensor<3xi1>} : () -> tensor<3xi1>
      %m = "fxla.constant"() {value = dense<[true, false, true]> : tensor<3xi1>} : () -> tensor<3xi1>
      %f = "fxla.constant"() {value = dense<false> : tensor<i1>} : () -> tensor<i1>
      %eq = "fxla.eq"(%t, %m) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
      %ne = "fxla.ne"(%m, %f) : (tensor<3xi1>, tensor<i1>) -> tensor<3xi1>
      return %eq, %ne : tensor<3xi1>, tensor<3xi1>
    }"""
    from fxla.dialects.mlir import fxla_context
    with fxla_context() as ctx:
        module = ir.Module.parse(src, ctx)
        fold_constants(module)
        ops = list(module.body.operations[0].regions[0].blocks[0].operations)
        names = [op.operation.name for op in ops]
        assert "fxla.eq" not in names and "fxla.ne" not in names
        ret = ops[-1]
        values = [constant_value(v.owner.operation).tolist() for v in ret.operands]
    assert values == [[True, False, True], [True, False, True]]
