// (input of ../check-index-bounds.mlir: 12 positions into a table of 10 rows)
func.func @positions(%table: tensor<10x4xf32>) -> tensor<12x4xf32> {
  %0 = "fxla.arange"() {start = 0.0 : f64, step = 1.0 : f64, length = 12 : i64} : () -> tensor<12xi64>
  %1 = "fxla.index_select"(%table, %0) {dim = 0 : i64} : (tensor<10x4xf32>, tensor<12xi64>) -> tensor<12x4xf32>
  return %1 : tensor<12x4xf32>
}
