// RUN: fxla-opt %s --split-input-file --fxla-vjp | FileCheck %s

// VJP rules of the elementwise family (lowering/autodiff/elementwise.py): each @backward takes the residuals, the
// cotangent, then the inputs it reads, and returns one gradient per float argument, of its exact type.  Binary
// ops sum a broadcast cotangent back to each operand's shape and convert it to the operand's element type; unary
// math computes in f32 for f16/bf16; kinks, ties and bounds follow torch's derivatives.yaml.

// add: the cotangent summed over the dims each operand was broadcast along; the f16 operand's is summed in f32, then
// converted.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<3xf16>)
// CHECK:         %[[SA:.+]] = fxla.sum %[[CT]] {dims = [1], keepdim = false}
// CHECK:         %[[GA:.+]] = fxla.reshape %[[SA]] {shape = [2, 1]}
// CHECK:         %[[SB:.+]] = fxla.sum %[[CT]] {dims = [0], keepdim = false}
// CHECK:         %[[GB:.+]] = fxla.convert %[[SB]] : tensor<3xf32> -> tensor<3xf16>
// CHECK:         return %[[GA]], %[[GB]]
func.func @main(%a: tensor<2x1xf32>, %b: tensor<3xf16>) -> tensor<2x3xf32> {
  %0 = "fxla.add"(%a, %b) : (tensor<2x1xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// sub: the subtrahend gets the negated cotangent.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<2x3xf32>)
// CHECK:         fxla.sum %[[CT]] {dims = [1], keepdim = false}
// CHECK:         %[[N:.+]] = fxla.neg %[[CT]]
// CHECK:         fxla.sum %[[N]] {dims = [0], keepdim = false}
func.func @main(%a: tensor<2x1xf32>, %b: tensor<3xf16>) -> tensor<2x3xf32> {
  %0 = "fxla.sub"(%a, %b) : (tensor<2x1xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// mul: each operand gets the cotangent times the other operand (both are read: no residual).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<2x3xf32>, %[[A:.+]]: tensor<2x1xf32>, %[[B:.+]]: tensor<3xf16>)
// CHECK:         %[[DA:.+]] = fxla.mul %[[CT]], %[[B]] : tensor<2x3xf32>, tensor<3xf16> -> tensor<2x3xf32>
// CHECK:         fxla.sum %[[DA]] {dims = [1], keepdim = false}
// CHECK:         %[[DB:.+]] = fxla.mul %[[CT]], %[[A]]
// CHECK:         fxla.sum %[[DB]] {dims = [0], keepdim = false}
func.func @main(%a: tensor<2x1xf32>, %b: tensor<3xf16>) -> tensor<2x3xf32> {
  %0 = "fxla.mul"(%a, %b) : (tensor<2x1xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// div: grad / b for a; -grad * (result / b) for b, the result saved as a residual.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[Y:.+]]: tensor<2x3xf32>, %[[CT:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<3xf16>)
// CHECK:         fxla.div %[[CT]], %[[B]]
// CHECK:         %[[Q:.+]] = fxla.div %[[Y]], %[[B]]
// CHECK:         %[[M:.+]] = fxla.mul %[[CT]], %[[Q]]
// CHECK:         fxla.neg %[[M]]
func.func @main(%a: tensor<2x1xf32>, %b: tensor<3xf16>) -> tensor<2x3xf32> {
  %0 = "fxla.div"(%a, %b) : (tensor<2x1xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// maximum: a tie splits the gradient in halves; the operand that loses gets 0.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<2x3xf32>, %[[A:.+]]: tensor<2x1xf32>, %[[B:.+]]: tensor<3xf16>)
// CHECK:         %[[TIE:.+]] = fxla.eq %[[A]], %[[B]]
// CHECK:         %[[HALF:.+]] = fxla.div %[[CT]], %{{.+}}
// CHECK:         %[[SPLIT:.+]] = fxla.where %[[TIE]], %[[HALF]], %[[CT]]
// CHECK:         %[[ALOSES:.+]] = fxla.lt %[[A]], %[[B]]
// CHECK:         fxla.where %[[ALOSES]], %{{.+}}, %[[SPLIT]]
// CHECK:         %[[BLOSES:.+]] = fxla.lt %[[B]], %[[A]]
// CHECK:         fxla.where %[[BLOSES]], %{{.+}}, %[[SPLIT]]
func.func @main(%a: tensor<2x1xf32>, %b: tensor<3xf16>) -> tensor<2x3xf32> {
  %0 = "fxla.maximum"(%a, %b) : (tensor<2x1xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// minimum: as maximum, the operand greater than the other loses.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<2x3xf32>, %[[A:.+]]: tensor<2x1xf32>, %[[B:.+]]: tensor<3xf16>)
// CHECK:         %[[TIE:.+]] = fxla.eq %[[A]], %[[B]]
// CHECK:         %[[SPLIT:.+]] = fxla.where %[[TIE]], %{{.+}}, %[[CT]]
// CHECK:         %[[ALOSES:.+]] = fxla.gt %[[A]], %[[B]]
// CHECK:         fxla.where %[[ALOSES]], %{{.+}}, %[[SPLIT]]
// CHECK:         %[[BLOSES:.+]] = fxla.gt %[[B]], %[[A]]
func.func @main(%a: tensor<2x1xf32>, %b: tensor<3xf16>) -> tensor<2x3xf32> {
  %0 = "fxla.minimum"(%a, %b) : (tensor<2x1xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// pow: grad * e * b ** (e - 1), zero where e == 0; grad * result * log(b), zero where b == 0 and e >= 0 (torch's
// conventions); e - 1 in the exponent's own type (f16), as torch computes it, the rest in f32.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[Y:.+]]: tensor<2x3xf32>, %[[CT:.+]]: tensor<2x3xf32>, %[[A:.+]]: tensor<2x1xf32>, %[[B:.+]]: tensor<3xf16>)
// CHECK:         %[[E:.+]] = fxla.convert %[[B]] : tensor<3xf16> -> tensor<3xf32>
// CHECK:         %[[EM1:.+]] = fxla.sub %[[B]], %{{.+}} : tensor<3xf16>, tensor<f16> -> tensor<3xf16>
// CHECK:         %[[EM1F:.+]] = fxla.convert %[[EM1]] : tensor<3xf16> -> tensor<3xf32>
// CHECK:         %[[E0:.+]] = fxla.eq %[[E]], %{{.+}}
// CHECK:         fxla.pow %[[A]], %[[EM1F]]
// CHECK:         fxla.where %[[E0]], %{{.+}}, %{{.+}}
// CHECK:         %[[B0:.+]] = fxla.eq %[[A]], %{{.+}}
// CHECK:         %[[EGE:.+]] = fxla.ge %[[E]], %{{.+}}
// CHECK:         %[[AT0:.+]] = fxla.logical_and %[[B0]], %[[EGE]]
// CHECK:         %[[LOG:.+]] = fxla.log %[[A]]
// CHECK:         %[[YLOG:.+]] = fxla.mul %[[Y]], %[[LOG]]
// CHECK:         fxla.where %[[AT0]], %{{.+}}, %[[YLOG]]
func.func @main(%a: tensor<2x1xf32>, %b: tensor<3xf16>) -> tensor<2x3xf32> {
  %0 = "fxla.pow"(%a, %b) : (tensor<2x1xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// fmod: a gets the cotangent; b gets -grad * trunc(a / b), in f32.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<2x3xf32>, %[[A:.+]]: tensor<2x1xf32>, %[[B:.+]]: tensor<3xf16>)
// CHECK:         %[[BF:.+]] = fxla.convert %[[B]] : tensor<3xf16> -> tensor<3xf32>
// CHECK:         fxla.sum %[[CT]] {dims = [1], keepdim = false}
// CHECK:         %[[N:.+]] = fxla.neg %[[CT]]
// CHECK:         %[[Q:.+]] = fxla.div %[[A]], %[[BF]]
// CHECK:         %[[T:.+]] = fxla.trunc %[[Q]]
// CHECK:         fxla.mul %[[N]], %[[T]]
func.func @main(%a: tensor<2x1xf32>, %b: tensor<3xf16>) -> tensor<2x3xf32> {
  %0 = "fxla.fmod"(%a, %b) : (tensor<2x1xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// remainder: a gets the cotangent; b gets -grad * floor_divide(a, b) (torch's div(rounding_mode='floor')).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<2x3xf32>, %[[A:.+]]: tensor<2x1xf32>, %[[B:.+]]: tensor<3xf16>)
// CHECK:         %[[Q:.+]] = fxla.floor_divide %[[A]], %[[B]]
// CHECK:         fxla.sum %[[CT]] {dims = [1], keepdim = false}
// CHECK:         %[[N:.+]] = fxla.neg %[[CT]]
// CHECK:         fxla.mul %[[N]], %[[Q]]
func.func @main(%a: tensor<2x1xf32>, %b: tensor<3xf16>) -> tensor<2x3xf32> {
  %0 = "fxla.remainder"(%a, %b) : (tensor<2x1xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// An integer operand gets no gradient: only the float one is returned.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[I:.+]]: tensor<4xi32>) -> tensor<4xf32>
// CHECK:         %[[G:.+]] = fxla.mul %[[CT]], %[[I]]
// CHECK-NEXT:    return %[[G]]
func.func @main(%i: tensor<4xi32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.mul"(%i, %x) : (tensor<4xi32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// clamp with both bounds: x where min <= x <= max; min where x < min < max; max where x > max or max < min.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<2x3xf32>, %[[X:.+]]: tensor<2x3xf32>, %[[LO:.+]]: tensor<3xf32>, %[[HI:.+]]: tensor<f32>)
// CHECK:         %[[GE:.+]] = fxla.ge %[[X]], %[[LO]]
// CHECK:         %[[LT:.+]] = fxla.lt %[[X]], %[[LO]]
// CHECK:         %[[GT:.+]] = fxla.gt %[[X]], %[[HI]]
// CHECK:         %[[LE:.+]] = fxla.le %[[X]], %[[HI]]
// CHECK:         %[[IN:.+]] = fxla.logical_and %[[GE]], %[[LE]]
// CHECK:         %[[ORDERED:.+]] = fxla.lt %[[LO]], %[[HI]]
// CHECK:         %[[BELOW:.+]] = fxla.logical_and %[[LT]], %[[ORDERED]]
// CHECK:         %[[CROSSED:.+]] = fxla.lt %[[HI]], %[[LO]]
// CHECK:         %[[ABOVE:.+]] = fxla.logical_or %[[GT]], %[[CROSSED]]
// CHECK:         %[[GX:.+]] = fxla.where %[[IN]], %[[CT]], %{{.+}}
// CHECK:         fxla.where %[[BELOW]], %[[CT]], %{{.+}}
// CHECK:         fxla.where %[[ABOVE]], %[[CT]], %{{.+}}
// CHECK:         return %[[GX]], %{{.+}}, %{{.+}} : tensor<2x3xf32>, tensor<3xf32>, tensor<f32>
func.func @main(%x: tensor<2x3xf32>, %lo: tensor<3xf32>, %hi: tensor<f32>) -> tensor<2x3xf32> {
  %0 = "fxla.clamp"(%x, %lo, %hi) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3xf32>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// clamp with a constant min only (clamp_min): the gradient passes where x >= min, the bound included.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[MIN:.+]] = fxla.constant {value = dense<5.000000e-01> : tensor<f32>}
// CHECK:         %[[GE:.+]] = fxla.ge %[[X]], %[[MIN]]
// CHECK:         %[[G:.+]] = fxla.where %[[GE]], %[[CT]], %{{.+}}
// CHECK-NEXT:    return %[[G]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = "fxla.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %0 = "fxla.clamp"(%x, %c) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// neg: the negated cotangent; nothing forward is read.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[G:.+]] = fxla.neg %[[CT]]
// CHECK-NEXT:    return %[[G]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// abs: grad * sign(x), so 0 at 0 (torch's sgn).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[S:.+]] = fxla.sign %[[X]]
// CHECK:         %[[G:.+]] = fxla.mul %[[CT]], %[[S]]
// CHECK-NEXT:    return %[[G]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.abs"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// relu: torch's threshold_backward on the result: 0 where result <= 0 (at 0 too; NaN passes).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[Y:.+]]: tensor<4xf32>, %[[CT:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[LE:.+]] = fxla.le %[[Y]], %{{.+}}
// CHECK:         %[[G:.+]] = fxla.where %[[LE]], %{{.+}}, %[[CT]]
// CHECK-NEXT:    return %[[G]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// exp: grad * result.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[Y:.+]]: tensor<4xf32>, %[[CT:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[G:.+]] = fxla.mul %[[CT]], %[[Y]]
// CHECK-NEXT:    return %[[G]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// log: grad / x.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[G:.+]] = fxla.div %[[CT]], %[[X]]
// CHECK-NEXT:    return %[[G]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.log"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// sqrt: grad / (2 * result).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[Y:.+]]: tensor<4xf32>, %[[CT:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[TWO_Y:.+]] = fxla.mul %{{.+}}, %[[Y]]
// CHECK:         %[[G:.+]] = fxla.div %[[CT]], %[[TWO_Y]]
// CHECK-NEXT:    return %[[G]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.sqrt"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// rsqrt: -0.5 * grad * result**3.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[Y:.+]]: tensor<4xf32>, %[[CT:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[C:.+]] = fxla.constant {value = dense<-5.000000e-01> : tensor<f32>}
// CHECK:         %[[H:.+]] = fxla.mul %[[C]], %[[CT]]
// CHECK:         %[[Y2:.+]] = fxla.mul %[[Y]], %[[Y]]
// CHECK:         %[[Y3:.+]] = fxla.mul %[[Y2]], %[[Y]]
// CHECK:         fxla.mul %[[H]], %[[Y3]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.rsqrt"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// tanh: grad * (1 - result**2).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[Y:.+]]: tensor<4xf32>, %[[CT:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[Y2:.+]] = fxla.mul %[[Y]], %[[Y]]
// CHECK:         %[[D:.+]] = fxla.sub %{{.+}}, %[[Y2]]
// CHECK:         fxla.mul %[[CT]], %[[D]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.tanh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// f16 tanh: the formula in f32 (torch's CPU kernels upcast), rounded once to f16.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[Y:.+]]: tensor<4xf16>, %[[CT:.+]]: tensor<4xf16>) -> tensor<4xf16>
// CHECK-DAG:     %[[CT32:.+]] = fxla.convert %[[CT]] : tensor<4xf16> -> tensor<4xf32>
// CHECK-DAG:     %[[Y32:.+]] = fxla.convert %[[Y]] : tensor<4xf16> -> tensor<4xf32>
// CHECK:         %[[Y2:.+]] = fxla.mul %[[Y32]], %[[Y32]]
// CHECK:         %[[G:.+]] = fxla.mul %[[CT32]], %{{.+}}
// CHECK:         %[[G16:.+]] = fxla.convert %[[G]] : tensor<4xf32> -> tensor<4xf16>
// CHECK-NEXT:    return %[[G16]]
func.func @main(%x: tensor<4xf16>) -> tensor<4xf16> {
  %0 = "fxla.tanh"(%x) : (tensor<4xf16>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// sigmoid: grad * (1 - result) * result.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[Y:.+]]: tensor<4xf32>, %[[CT:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[ONE_MINUS:.+]] = fxla.sub %{{.+}}, %[[Y]]
// CHECK:         %[[D:.+]] = fxla.mul %[[ONE_MINUS]], %[[Y]]
// CHECK:         fxla.mul %[[CT]], %[[D]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.sigmoid"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// reciprocal: -grad * result**2.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[Y:.+]]: tensor<4xf32>, %[[CT:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[N:.+]] = fxla.neg %[[CT]]
// CHECK:         %[[Y2:.+]] = fxla.mul %[[Y]], %[[Y]]
// CHECK:         fxla.mul %[[N]], %[[Y2]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.reciprocal"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// sin: grad * cos(x).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[C:.+]] = fxla.cos %[[X]]
// CHECK:         fxla.mul %[[CT]], %[[C]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.sin"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// cos: grad * -sin(x).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[S:.+]] = fxla.sin %[[X]]
// CHECK:         %[[N:.+]] = fxla.neg %[[S]]
// CHECK:         fxla.mul %[[CT]], %[[N]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.cos"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// tan: grad * (1 + result**2).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[Y:.+]]: tensor<4xf32>, %[[CT:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[Y2:.+]] = fxla.mul %[[Y]], %[[Y]]
// CHECK:         %[[D:.+]] = fxla.add %{{.+}}, %[[Y2]]
// CHECK:         fxla.mul %[[CT]], %[[D]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.tan"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// erf: 2 / sqrt(pi) * exp(-x**2) * grad.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[X2:.+]] = fxla.mul %[[X]], %[[X]]
// CHECK:         %[[N:.+]] = fxla.neg %[[X2]]
// CHECK:         %[[E:.+]] = fxla.exp %[[N]]
// CHECK:         %[[K:.+]] = fxla.constant {value = dense<1.12837923> : tensor<f32>}
// CHECK:         %[[D:.+]] = fxla.mul %[[K]], %[[E]]
// CHECK:         fxla.mul %[[D]], %[[CT]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.erf"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// log1p: grad / (x + 1).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[XP1:.+]] = fxla.add %[[X]], %{{.+}}
// CHECK:         fxla.div %[[CT]], %[[XP1]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.log1p"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expm1: grad * (result + 1).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[Y:.+]]: tensor<4xf32>, %[[CT:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[YP1:.+]] = fxla.add %[[Y]], %{{.+}}
// CHECK:         fxla.mul %[[CT]], %[[YP1]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.expm1"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// floor (like ceil, trunc, round, sign): a zero gradient, nothing forward is read.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%{{.+}}: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[Z:.+]] = fxla.constant {value = dense<0.000000e+00> : tensor<f32>}
// CHECK:         %[[G:.+]] = fxla.expand %[[Z]] {shape = [4]}
// CHECK-NEXT:    return %[[G]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.floor"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// convert f32 -> f16: the f16 cotangent converted back to f32.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf16>) -> tensor<4xf32>
// CHECK:         %[[G:.+]] = fxla.convert %[[CT]] : tensor<4xf16> -> tensor<4xf32>
// CHECK-NEXT:    return %[[G]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf16> {
  %0 = "fxla.convert"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// gelu (erf): grad * (cdf + x * pdf), pdf = exp(-x**2 / 2) / sqrt(2 pi).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[SCALED:.+]] = fxla.mul %[[X]], %{{.+}}
// CHECK:         fxla.erf %[[SCALED]]
// CHECK:         %[[EXP:.+]] = fxla.exp %{{.+}}
// CHECK:         %[[K:.+]] = fxla.constant {value = dense<0.398942292> : tensor<f32>}
// CHECK:         fxla.mul %[[K]], %[[EXP]]
// CHECK:         %[[D:.+]] = fxla.add %{{.+}}, %{{.+}}
// CHECK:         fxla.mul %[[CT]], %[[D]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.gelu"(%x) {approximate = "none"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// gelu (tanh): torch's gelu_backward with the tanh approximation (sqrt(2/pi), 0.044715, 3 * 0.044715).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[X2:.+]] = fxla.mul %[[X]], %[[X]]
// CHECK:         %[[BETA:.+]] = fxla.constant {value = dense<0.797884583> : tensor<f32>}
// CHECK:         %[[T:.+]] = fxla.tanh %{{.+}}
// CHECK:         %[[K3:.+]] = fxla.constant {value = dense<1.341450e-01> : tensor<f32>}
// CHECK:         fxla.mul %[[K3]], %[[X2]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.gelu"(%x) {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// silu: grad * s * (1 + x * (1 - s)), s = sigmoid(x).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[S:.+]] = fxla.sigmoid %[[X]]
// CHECK:         %[[GS:.+]] = fxla.mul %[[CT]], %[[S]]
// CHECK:         %[[ONE_MINUS:.+]] = fxla.sub %{{.+}}, %[[S]]
// CHECK:         fxla.mul %[[X]], %[[ONE_MINUS]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.silu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// mish: grad * (t + x * sigmoid(x) * (1 - t**2)), t = tanh(log1p(exp(x))).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[S:.+]] = fxla.sigmoid %[[X]]
// CHECK:         %[[E:.+]] = fxla.exp %[[X]]
// CHECK:         %[[SP:.+]] = fxla.log1p %[[E]]
// CHECK:         %[[T:.+]] = fxla.tanh %[[SP]]
// CHECK:         fxla.mul %[[X]], %[[S]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.mish"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// softplus (beta 2, threshold 10): grad where beta * x > threshold, else grad * z / (z + 1), z = exp(beta * x);
// at beta * x == threshold that value as a constant of x (torch's double backward is 0 there).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[BX:.+]] = fxla.mul %[[X]], %{{.+}}
// CHECK:         %[[Z:.+]] = fxla.exp %[[BX]]
// CHECK:         %[[LIN:.+]] = fxla.gt %[[BX]], %{{.+}}
// CHECK:         %[[EDGE:.+]] = fxla.eq %[[BX]], %{{.+}}
// CHECK:         %[[GZ:.+]] = fxla.mul %[[CT]], %[[Z]]
// CHECK:         %[[Z1:.+]] = fxla.add %[[Z]], %{{.+}}
// CHECK:         %[[SMOOTH:.+]] = fxla.div %[[GZ]], %[[Z1]]
// CHECK:         %[[BELOW:.+]] = fxla.where %[[EDGE]], %{{.+}}, %[[SMOOTH]]
// CHECK:         fxla.where %[[LIN]], %[[CT]], %[[BELOW]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.softplus"(%x) {beta = 2.000000e+00 : f64, threshold = 1.000000e+01 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// logsigmoid: torch's stable form (1 - z / (1 + z) where x < 0, else z / (1 + z), z = exp(-|x|)) is sigmoid(-x)
// on both sides, written so that its own derivative at 0 is not lost to |x|'s.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[N:.+]] = fxla.neg %[[X]]
// CHECK:         %[[S:.+]] = fxla.sigmoid %[[N]]
// CHECK:         fxla.mul %[[CT]], %[[S]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.logsigmoid"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// leaky_relu (slope 0.2): grad where x > 0, else grad * slope (so the slope at 0).
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[POS:.+]] = fxla.gt %[[X]], %{{.+}}
// CHECK:         %[[SLOPE:.+]] = fxla.constant {value = dense<2.000000e-01> : tensor<f32>}
// CHECK:         %[[NEG:.+]] = fxla.mul %[[CT]], %[[SLOPE]]
// CHECK:         fxla.where %[[POS]], %[[CT]], %[[NEG]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.leaky_relu"(%x) {negative_slope = 2.000000e-01 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// elu (alpha 1.5): grad * alpha * exp(x) where x < 0, grad * alpha at 0 (a constant of x: torch's double backward
// is 0 there), else grad.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[LT:.+]] = fxla.lt %[[X]], %{{.+}}
// CHECK:         %[[E:.+]] = fxla.exp %[[X]]
// CHECK:         %[[NEG:.+]] = fxla.mul %{{.+}}, %[[E]]
// CHECK:         %[[ZERO:.+]] = fxla.eq %[[X]], %{{.+}}
// CHECK:         %[[AT0:.+]] = fxla.where %[[ZERO]], %{{.+}}, %[[CT]]
// CHECK:         fxla.where %[[LT]], %[[NEG]], %[[AT0]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.elu"(%x) {alpha = 1.500000e+00 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// hardswish: 0 where x <= -3, grad * (x / 3 + 0.5) where x < 3, else grad.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[LOW:.+]] = fxla.le %[[X]], %{{.+}}
// CHECK:         %[[MID:.+]] = fxla.lt %[[X]], %{{.+}}
// CHECK:         %[[X3:.+]] = fxla.div %[[X]], %{{.+}}
// CHECK:         %[[UPPER:.+]] = fxla.where %[[MID]], %{{.+}}, %[[CT]]
// CHECK:         fxla.where %[[LOW]], %{{.+}}, %[[UPPER]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.hardswish"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// hardsigmoid: grad / 6 strictly inside (-3, 3), else 0.
// CHECK-LABEL: func.func @backward
// CHECK-SAME:    (%[[CT:.+]]: tensor<4xf32>, %[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[GT:.+]] = fxla.gt %[[X]], %{{.+}}
// CHECK:         %[[LT:.+]] = fxla.lt %[[X]], %{{.+}}
// CHECK:         %[[IN:.+]] = fxla.logical_and %[[GT]], %[[LT]]
// CHECK:         %[[SIXTH:.+]] = fxla.constant {value = dense<0.166666672> : tensor<f32>}
// CHECK:         %[[D:.+]] = fxla.mul %[[CT]], %[[SIXTH]]
// CHECK:         fxla.where %[[IN]], %[[D]], %{{.+}}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "fxla.hardsigmoid"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
