# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `creation` (lowering/rules/creation.py): creation ops in their traced forms (a shape or
# dtype taken from a traced tensor), arange, eye/linspace/logspace, tril and triu, and the random tensors
# (fxla.rng on the program's seed argument) -- one case per op object of
# fxla.lowering.RULES; the checks show the default and inferred dtypes (float32, the input's dtype for
# *_like/new_*, int64 for an integer fill or arange).
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch

from fxla.testing import case, t

BF16, BOOL, F16, I32, I64 = torch.bfloat16, torch.bool, torch.float16, torch.int32, torch.int64


# CHECK-LABEL: case torch.zeros:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<0.000000e+00> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
@case(torch.zeros, t(2, 3, dtype=I64))
def zeros_traced_shape(x):
    return torch.zeros(x.shape)


# CHECK-LABEL: case torch.zeros_like:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xbf16>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<0.000000e+00> : tensor<2x3xbf16>} : () -> tensor<2x3xbf16>
@case(torch.zeros_like, t(2, 3, dtype=BF16))
def zeros_like(x):
    return torch.zeros_like(x)


# CHECK-LABEL: case Tensor.new_zeros:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<0> : tensor<3xi64>} : () -> tensor<3xi64>
@case(torch.Tensor.new_zeros, t(2, 3, dtype=I64))
def new_zeros(x):
    return x.new_zeros(3)


# CHECK-LABEL: case torch.ones:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<1> : tensor<2x3xi32>} : () -> tensor<2x3xi32>
@case(torch.ones, t(2, 3))
def ones_int32(x):
    return torch.ones(x.shape, dtype=torch.int32)


# CHECK-LABEL: case torch.ones_like:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<1.000000e+00> : tensor<2x3xf16>} : () -> tensor<2x3xf16>
@case(torch.ones_like, t(2, 3))
def ones_like_dtype(x):
    return torch.ones_like(x, dtype=torch.float16)


# CHECK-LABEL: case Tensor.new_ones:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf16>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<1.000000e+00> : tensor<2x2xf16>} : () -> tensor<2x2xf16>
@case(torch.Tensor.new_ones, t(2, 3, dtype=F16))
def new_ones(x):
    return x.new_ones((2, 2))


# CHECK-LABEL: case torch.empty:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<0.000000e+00> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
@case(torch.empty, t(2, 3))
def empty(x):
    return torch.empty((x.shape[0], 4))


# CHECK-LABEL: case torch.empty_like:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xi32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<0> : tensor<2x3xi32>} : () -> tensor<2x3xi32>
@case(torch.empty_like, t(2, 3, dtype=I32))
def empty_like(x):
    return torch.empty_like(x)


# CHECK-LABEL: case Tensor.new_empty:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<0> : tensor<2xi64>} : () -> tensor<2xi64>
@case(torch.Tensor.new_empty, t(2, 3))
def new_empty(x):
    return x.new_empty(2, dtype=torch.int64)


# CHECK-LABEL: case torch.full:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<3> : tensor<2x3xi64>} : () -> tensor<2x3xi64>
@case(torch.full, t(2, 3))
def full_int_fill(x):
    return torch.full(x.shape, 3)


# CHECK-LABEL: case torch.full_like:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xi64>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<true> : tensor<2x3xi1>} : () -> tensor<2x3xi1>
@case(torch.full_like, t(2, 3, dtype=I64))
def full_like_bool(x):
    return torch.full_like(x, True, dtype=torch.bool)


# CHECK-LABEL: case Tensor.new_full:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xbf16>)
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<4.000000e+00> : tensor<2xbf16>} : () -> tensor<2xbf16>
@case(torch.Tensor.new_full, t(2, 3, dtype=BF16))
def new_full(x):
    return x.new_full((2,), 4)


# CHECK-LABEL: case torch.arange:
# CHECK:         func.func @main(%[[X:.+]]: tensor<5x7xf32>)
# CHECK:         %[[ARANGE:.+]] = fxla.arange {start = 1.000000e+00, step = 2.000000e+00, length = 3} : () -> tensor<3xi64>
@case(torch.arange, t(5, 7))
def arange_start_step(x):
    return torch.arange(1, x.size(1), 2)


# torch.eye with a traced size: two iotas compared, converted to the result type.
# CHECK-LABEL: case torch.eye:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x3xf32>) -> tensor<4x3xi64>
# CHECK:         %[[ROWS:.+]] = fxla.reshape %{{.+}} {shape = [4, 1]} : tensor<4xi64> -> tensor<4x1xi64>
# CHECK:         %[[COLS:.+]] = fxla.reshape %{{.+}} {shape = [1, 3]} : tensor<3xi64> -> tensor<1x3xi64>
# CHECK:         %[[EQ:.+]] = fxla.eq %[[ROWS]], %[[COLS]] : tensor<4x1xi64>, tensor<1x3xi64> -> tensor<4x3xi1>
# CHECK:         fxla.convert %[[EQ]] : tensor<4x3xi1> -> tensor<4x3xi64>
@case(torch.eye, t(4, 3))
def eye(x):
    return torch.eye(x.size(0), x.size(1), dtype=torch.int64)


# torch.linspace with 0-d tensor endpoints: torch's two-sided formula (start + i * step for the first half,
# end - (steps - 1 - i) * step for the rest) selected by i < steps // 2; the endpoints detached (torch has no
# derivative for linspace).
# CHECK-LABEL: case torch.linspace:
# CHECK:         %[[MIN:.+]] = fxla.amin
# CHECK:         %[[MAX:.+]] = fxla.amax
# CHECK:         %[[START:.+]] = fxla.detach %[[MIN]]
# CHECK:         %[[END:.+]] = fxla.detach %[[MAX]]
# CHECK:         %[[IDX:.+]] = fxla.arange {start = 0.000000e+00, step = 1.000000e+00, length = 5} : () -> tensor<5xf32>
# CHECK:         %[[LOW:.+]] = fxla.add %[[START]], %{{.+}} : tensor<f32>, tensor<5xf32> -> tensor<5xf32>
# CHECK:         %[[HIGH:.+]] = fxla.sub %[[END]], %{{.+}} : tensor<f32>, tensor<5xf32> -> tensor<5xf32>
# CHECK:         %[[HALF:.+]] = fxla.lt %[[IDX]], %{{.+}} : tensor<5xf32>, tensor<f32> -> tensor<5xi1>
# CHECK:         fxla.where %[[HALF]], %[[LOW]], %[[HIGH]] : tensor<5xi1>, tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
@case(torch.linspace, t(4, 3))
def linspace(x):
    return torch.linspace(x.min(), x.max(), 5)


# torch.logspace: base ** linspace.
# CHECK-LABEL: case torch.logspace:
# CHECK:         %[[EXP:.+]] = fxla.where %{{.+}}, %{{.+}}, %{{.+}} : tensor<4xi1>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
# CHECK:         %[[BASE:.+]] = fxla.constant {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         fxla.pow %[[BASE]], %[[EXP]] : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
@case(torch.logspace, t(4, 3))
def logspace(x):
    return torch.logspace(-1, 1, x.size(0), base=2.0)


# CHECK-LABEL: case torch.tril:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x5xf32>)
# CHECK:         %[[TRIL:.+]] = fxla.tril %[[X]] {diagonal = -1} : tensor<2x4x5xf32> -> tensor<2x4x5xf32>
@case(torch.tril, t(2, 4, 5))
def tril_negative_diagonal(x):
    return torch.tril(x, -1)


# CHECK-LABEL: case Tensor.tril:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi1>)
# CHECK:         %[[TRIL:.+]] = fxla.tril %[[X]] {diagonal = 1} : tensor<4x5xi1> -> tensor<4x5xi1>
@case(torch.Tensor.tril, t(4, 5, dtype=BOOL))
def tensor_tril(x):
    return x.tril(1)


# CHECK-LABEL: case torch.triu:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xi64>)
# CHECK:         %[[TRIU:.+]] = fxla.triu %[[X]] {diagonal = 0} : tensor<4x5xi64> -> tensor<4x5xi64>
@case(torch.triu, t(4, 5, dtype=I64))
def triu(x):
    return torch.triu(x)


# CHECK-LABEL: case Tensor.triu:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x5xf32>)
# CHECK:         %[[TRIU:.+]] = fxla.triu %[[X]] {diagonal = -2} : tensor<4x5xf32> -> tensor<4x5xf32>
@case(torch.Tensor.triu, t(4, 5))
def tensor_triu(x):
    return x.triu(-2)


# Random tensors: one fxla.rng per random op, on the program's seed argument (tensor<2xi64>, right after the
# inputs), each on its own stream; uniform/normal in the result type, masks and integers drawn in f32/f64.
# CHECK-LABEL: case torch.rand:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[A1:.+]]: tensor<2xi64>)
# CHECK:         %[[RNG:.+]] = fxla.rng %[[A1]] {shape = [2, 3], distribution = "uniform", stream = 0} : tensor<2xi64> -> tensor<2x3xf32>
@case(torch.rand, t(2, 3))
def rand_traced_shape(x):
    return torch.rand(x.shape)


# CHECK-LABEL: case torch.rand_like:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xbf16>, %[[A1:.+]]: tensor<2xi64>)
# CHECK:         %[[RNG:.+]] = fxla.rng %[[A1]] {shape = [2, 3], distribution = "uniform", stream = 0} : tensor<2xi64> -> tensor<2x3xbf16>
# CHECK:         %[[RNG_2:.+]] = fxla.rng %[[A1]] {shape = [2, 3], distribution = "uniform", stream = 1} : tensor<2xi64> -> tensor<2x3xbf16>
# CHECK:         %[[ADD:.+]] = fxla.add %[[RNG]], %[[RNG_2]] : tensor<2x3xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
@case(torch.rand_like, t(2, 3, dtype=BF16))
def rand_like_two_streams(x):
    return torch.rand_like(x) + torch.rand_like(x)


# CHECK-LABEL: case torch.randn:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[A1:.+]]: tensor<2xi64>)
# CHECK:         %[[RNG:.+]] = fxla.rng %[[A1]] {shape = [2, 3], distribution = "normal", stream = 0} : tensor<2xi64> -> tensor<2x3xf64>
@case(torch.randn, t(2, 3))
def randn_float64(x):
    return torch.randn(x.shape, dtype=torch.float64)


# CHECK-LABEL: case torch.randn_like:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4xf16>, %[[A1:.+]]: tensor<2xi64>)
# CHECK:         %[[RNG:.+]] = fxla.rng %[[A1]] {shape = [4], distribution = "normal", stream = 0} : tensor<2xi64> -> tensor<4xf16>
@case(torch.randn_like, t(4, dtype=F16))
def randn_like(x):
    return torch.randn_like(x)


# CHECK-LABEL: case torch.randint:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf32>, %[[A1:.+]]: tensor<2xi64>)
# CHECK:         %[[RNG:.+]] = fxla.rng %[[A1]] {shape = [2, 3], distribution = "uniform", stream = 0} : tensor<2xi64> -> tensor<2x3xf64>
# CHECK:         %[[SPAN:.+]] = fxla.constant {value = dense<7.000000e+00> : tensor<f64>} : () -> tensor<f64>
# CHECK:         %[[SCALED:.+]] = fxla.mul %[[RNG]], %[[SPAN]]
# CHECK:         %[[FLOOR:.+]] = fxla.floor %[[SCALED]]
# CHECK:         %[[LAST:.+]] = fxla.constant {value = dense<6.000000e+00> : tensor<f64>} : () -> tensor<f64>
# CHECK:         %[[K:.+]] = fxla.minimum %[[FLOOR]], %[[LAST]]
# CHECK:         %[[LOW:.+]] = fxla.constant {value = dense<-2.000000e+00> : tensor<f64>} : () -> tensor<f64>
# CHECK:         %[[VALUE:.+]] = fxla.add %[[K]], %[[LOW]]
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[VALUE]] : tensor<2x3xf64> -> tensor<2x3xi64>
# CHECK:         return %[[CONVERT]] : tensor<2x3xi64>
@case(torch.randint, t(2, 3))
def randint_range(x):
    return torch.randint(-2, 5, x.shape)


# CHECK-LABEL: case torch.randint_like:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xi32>, %[[A1:.+]]: tensor<2xi64>)
# CHECK:         %[[RNG:.+]] = fxla.rng %[[A1]] {shape = [3], distribution = "uniform", stream = 0} : tensor<2xi64> -> tensor<3xf64>
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<1.000000e+01> : tensor<f64>} : () -> tensor<f64>
# CHECK:         %[[CONVERT:.+]] = fxla.convert %{{.+}} : tensor<3xf64> -> tensor<3xi32>
# CHECK:         return %[[CONVERT]] : tensor<3xi32>
@case(torch.randint_like, t(3, dtype=I32))
def randint_like(x):
    return torch.randint_like(x, 10)


# bernoulli(p) keeps p's history with a zero gradient, as torch's: a select that always takes the draw
# CHECK-LABEL: case torch.bernoulli:
# CHECK:         func.func @main(%[[P:.+]]: tensor<2x3xbf16>, %[[A1:.+]]: tensor<2xi64>)
# CHECK:         %[[RNG:.+]] = fxla.rng %[[A1]] {shape = [2, 3], distribution = "uniform", stream = 0} : tensor<2xi64> -> tensor<2x3xf32>
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[P]] : tensor<2x3xbf16> -> tensor<2x3xf32>
# CHECK:         %[[LT:.+]] = fxla.lt %[[RNG]], %[[CONVERT]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xi1>
# CHECK:         %[[CONVERT_2:.+]] = fxla.convert %[[LT]] : tensor<2x3xi1> -> tensor<2x3xbf16>
# CHECK:         %[[ALWAYS:.+]] = fxla.eq %[[RNG]], %[[RNG]]
# CHECK:         %[[OUT:.+]] = fxla.where %[[ALWAYS]], %[[CONVERT_2]], %[[P]]
# CHECK:         return %[[OUT]] : tensor<2x3xbf16>
@case(torch.bernoulli, t(2, 3, dtype=BF16))
def bernoulli_probabilities(p):
    return torch.bernoulli(p)


# CHECK-LABEL: case Tensor.bernoulli:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3xf32>, %[[A1:.+]]: tensor<2xi64>)
# CHECK:         %[[RNG:.+]] = fxla.rng %[[A1]] {shape = [3], distribution = "uniform", stream = 0} : tensor<2xi64> -> tensor<3xf32>
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<2.500000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[CONVERT:.+]] = fxla.convert %{{.+}} : tensor<3xi1> -> tensor<3xf32>
# CHECK:         %[[REFUSED:.+]] = fxla.no_gradient %[[X]] {op = "aten::bernoulli"{{.*}}} : tensor<3xf32> -> tensor<3xf32>
# CHECK:         %[[ALWAYS:.+]] = fxla.eq %[[RNG]], %[[RNG]]
# CHECK:         %[[OUT:.+]] = fxla.where %[[ALWAYS]], %[[CONVERT]], %[[REFUSED]]
# CHECK:         return %[[OUT]] : tensor<3xf32>
@case(torch.Tensor.bernoulli, t(3))
def tensor_bernoulli_p(x):
    return x.bernoulli(0.25)
