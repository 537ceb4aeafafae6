# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `nn` (lowering/rules/nn.py): 1-3-D convolutions and transposed convolutions (functions
# and modules; a conv's padding_mode is F.pad in that mode, then an unpadded convolution), softmax/log_softmax,
# layer_norm, dropout (every form: eval mode has no ops, training mode a random mask) and Identity, cosine similarity and pairwise distance -- one case per op
# object of fxla.lowering.RULES; the checks show stride/padding/dilation/groups (and output_padding) as
# attributes, the bias as an optional operand and the parameters that become function arguments.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
import torch.nn as nn
import torch.nn.functional as F

from fxla.testing import case, t

BF16, F16 = torch.bfloat16, torch.float16


# CHECK-LABEL: case torch.softmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[SOFTMAX:.+]] = fxla.softmax %[[X]] {dim = -1} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
@case(torch.softmax, t(2, 3, 4))
def softmax(x):
    return torch.softmax(x, -1)


# CHECK-LABEL: case torch.nn.functional.softmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[X]] : tensor<2x3x4xf32> -> tensor<2x3x4xf64>
# CHECK:         %[[SOFTMAX:.+]] = fxla.softmax %[[CONVERT]] {dim = 1} : tensor<2x3x4xf64> -> tensor<2x3x4xf64>
@case(F.softmax, t(2, 3, 4))
def f_softmax_dtype(x):
    return F.softmax(x, dim=1, dtype=torch.float64)


# CHECK-LABEL: case Tensor.softmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xbf16>)
# CHECK:         %[[SOFTMAX:.+]] = fxla.softmax %[[X]] {dim = 0} : tensor<2x3xbf16> -> tensor<2x3xbf16>
@case(torch.Tensor.softmax, t(2, 3, dtype=BF16))
def tensor_softmax(x):
    return x.softmax(0)


# CHECK-LABEL: case torch.nn.Softmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[SOFTMAX:.+]] = fxla.softmax %[[X]] {dim = -2} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
@case(nn.Softmax, t(2, 3, 4))
def softmax_module():
    return nn.Softmax(dim=-2)


# CHECK-LABEL: case torch.log_softmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[LOG_SOFTMAX:.+]] = fxla.log_softmax %[[X]] {dim = 1} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
@case(torch.log_softmax, t(2, 3, 4))
def log_softmax(x):
    return torch.log_softmax(x, 1)


# CHECK-LABEL: case torch.nn.functional.log_softmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[LOG_SOFTMAX:.+]] = fxla.log_softmax %[[X]] {dim = -1} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
@case(F.log_softmax, t(2, 3, 4))
def f_log_softmax(x):
    return F.log_softmax(x, dim=-1)


# CHECK-LABEL: case Tensor.log_softmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3xf16>)
# CHECK:         %[[LOG_SOFTMAX:.+]] = fxla.log_softmax %[[X]] {dim = -1} : tensor<2x3xf16> -> tensor<2x3xf16>
@case(torch.Tensor.log_softmax, t(2, 3, dtype=F16))
def tensor_log_softmax(x):
    return x.log_softmax(-1)


# CHECK-LABEL: case torch.nn.LogSoftmax:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK:         %[[LOG_SOFTMAX:.+]] = fxla.log_softmax %[[X]] {dim = 0} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
@case(nn.LogSoftmax, t(2, 3, 4))
def log_softmax_module():
    return nn.LogSoftmax(dim=0)


# CHECK-LABEL: case torch.conv1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x9xf32>, %[[W:.+]]: tensor<6x2x3xf32>, %[[B:.+]]: tensor<6xf32>)
# CHECK:         %[[CONV:.+]] = fxla.conv %[[X]], %[[W]], bias %[[B]] {stride = [2], padding = [1], dilation = [1], groups = 2, transposed = false, output_padding = []} : tensor<2x4x9xf32>, tensor<6x2x3xf32>, tensor<6xf32> -> tensor<2x6x5xf32>
@case(torch.conv1d, t(2, 4, 9), t(6, 2, 3), t(6))
def conv1d_groups(x, w, b):
    return torch.conv1d(x, w, b, stride=2, padding=1, groups=2)


# CHECK-LABEL: case torch.nn.Conv1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x10xf32>, %[[WEIGHT:.+]]: tensor<4x3x3xf32> {fxla.param = "mod.weight"})
# CHECK:         %[[CONV:.+]] = fxla.conv %[[X]], %[[WEIGHT]] {stride = [1], padding = [2], dilation = [2], groups = 1, transposed = false, output_padding = []} : tensor<2x3x10xf32>, tensor<4x3x3xf32> -> tensor<2x4x10xf32>
@case(nn.Conv1d, t(2, 3, 10))
def conv1d_module_same():
    return nn.Conv1d(3, 4, 3, padding="same", dilation=2, bias=False)


# CHECK-LABEL: case torch.conv2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x3x9x8xf32>, %[[W:.+]]: tensor<2x3x3x3xf32>)
# CHECK:         %[[CONV:.+]] = fxla.conv %[[X]], %[[W]] {stride = [2, 1], padding = [1, 2], dilation = [2, 2], groups = 1, transposed = false, output_padding = []} : tensor<1x3x9x8xf32>, tensor<2x3x3x3xf32> -> tensor<1x2x4x8xf32>
@case(torch.conv2d, t(1, 3, 9, 8), t(2, 3, 3, 3))
def conv2d_stride_pad_dilation(x, w):
    return torch.conv2d(x, w, stride=(2, 1), padding=(1, 2), dilation=2)


# CHECK-LABEL: case torch.nn.Conv2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x8x8xbf16>, %[[WEIGHT:.+]]: tensor<4x3x3x3xbf16> {fxla.param = "mod.weight"}, %[[BIAS:.+]]: tensor<4xbf16> {fxla.param = "mod.bias"})
# CHECK:         %[[CONV:.+]] = fxla.conv %[[X]], %[[WEIGHT]], bias %[[BIAS]] {stride = [2, 2], padding = [1, 1], dilation = [1, 1], groups = 1, transposed = false, output_padding = []} : tensor<2x3x8x8xbf16>, tensor<4x3x3x3xbf16>, tensor<4xbf16> -> tensor<2x4x4x4xbf16>
@case(nn.Conv2d, t(2, 3, 8, 8, dtype=BF16))
def conv2d_module():
    return nn.Conv2d(3, 4, 3, stride=2, padding=1).to(BF16)


# CHECK-LABEL: case torch.conv3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x5x6x7xf32>, %[[W:.+]]: tensor<4x2x3x3x3xf32>, %[[B:.+]]: tensor<4xf32>)
# CHECK:         %[[CONV:.+]] = fxla.conv %[[X]], %[[W]], bias %[[B]] {stride = [1, 1, 1], padding = [0, 1, 1], dilation = [1, 1, 1], groups = 1, transposed = false, output_padding = []} : tensor<1x2x5x6x7xf32>, tensor<4x2x3x3x3xf32>, tensor<4xf32> -> tensor<1x4x3x6x7xf32>
@case(torch.conv3d, t(1, 2, 5, 6, 7), t(4, 2, 3, 3, 3), t(4))
def conv3d(x, w, b):
    return torch.conv3d(x, w, b, padding=(0, 1, 1))


# CHECK-LABEL: case torch.nn.Conv3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x4x6x6x6xf32>, %[[WEIGHT:.+]]: tensor<4x1x2x2x2xf32> {fxla.param = "mod.weight"}, %[[BIAS:.+]]: tensor<4xf32> {fxla.param = "mod.bias"})
# CHECK:         %[[CONV:.+]] = fxla.conv %[[X]], %[[WEIGHT]], bias %[[BIAS]] {stride = [2, 2, 2], padding = [0, 0, 0], dilation = [1, 1, 1], groups = 4, transposed = false, output_padding = []} : tensor<1x4x6x6x6xf32>, tensor<4x1x2x2x2xf32>, tensor<4xf32> -> tensor<1x4x3x3x3xf32>
@case(nn.Conv3d, t(1, 4, 6, 6, 6))
def conv3d_module_depthwise():
    return nn.Conv3d(4, 4, 2, stride=2, groups=4)


# CHECK-LABEL: case torch.conv_transpose1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x5xf32>, %[[W:.+]]: tensor<4x3x3xf32>, %[[B:.+]]: tensor<3xf32>)
# CHECK:         %[[CONV:.+]] = fxla.conv %[[X]], %[[W]], bias %[[B]] {stride = [2], padding = [1], dilation = [1], groups = 1, transposed = true, output_padding = [1]} : tensor<2x4x5xf32>, tensor<4x3x3xf32>, tensor<3xf32> -> tensor<2x3x10xf32>
@case(torch.conv_transpose1d, t(2, 4, 5), t(4, 3, 3), t(3))
def conv_transpose1d(x, w, b):
    return torch.conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1)


# CHECK-LABEL: case torch.nn.ConvTranspose1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x6xf32>, %[[WEIGHT:.+]]: tensor<2x4x3xf32> {fxla.param = "mod.weight"})
# CHECK:         %[[CONV:.+]] = fxla.conv %[[X]], %[[WEIGHT]] {stride = [1], padding = [0], dilation = [2], groups = 1, transposed = true, output_padding = [0]} : tensor<1x2x6xf32>, tensor<2x4x3xf32> -> tensor<1x4x10xf32>
@case(nn.ConvTranspose1d, t(1, 2, 6))
def conv_transpose1d_module():
    return nn.ConvTranspose1d(2, 4, 3, dilation=2, bias=False)


# CHECK-LABEL: case torch.conv_transpose2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x4x5x5xf32>, %[[W:.+]]: tensor<4x2x3x3xf32>)
# CHECK:         %[[CONV:.+]] = fxla.conv %[[X]], %[[W]] {stride = [2, 2], padding = [0, 0], dilation = [1, 1], groups = 2, transposed = true, output_padding = [0, 0]} : tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x11x11xf32>
@case(torch.conv_transpose2d, t(1, 4, 5, 5), t(4, 2, 3, 3))
def conv_transpose2d_groups(x, w):
    return torch.conv_transpose2d(x, w, stride=2, groups=2)


# CHECK-LABEL: case torch.nn.ConvTranspose2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x4xf32>, %[[WEIGHT:.+]]: tensor<3x2x3x2xf32> {fxla.param = "mod.weight"}, %[[BIAS:.+]]: tensor<2xf32> {fxla.param = "mod.bias"})
# CHECK:         %[[CONV:.+]] = fxla.conv %[[X]], %[[WEIGHT]], bias %[[BIAS]] {stride = [2, 1], padding = [1, 0], dilation = [1, 1], groups = 1, transposed = true, output_padding = [1, 0]} : tensor<2x3x4x4xf32>, tensor<3x2x3x2xf32>, tensor<2xf32> -> tensor<2x2x8x5xf32>
@case(nn.ConvTranspose2d, t(2, 3, 4, 4))
def conv_transpose2d_module():
    return nn.ConvTranspose2d(3, 2, (3, 2), stride=(2, 1), padding=(1, 0), output_padding=(1, 0))


# CHECK-LABEL: case torch.conv_transpose3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x3x3xf32>, %[[W:.+]]: tensor<2x3x2x2x2xf32>, %[[B:.+]]: tensor<3xf32>)
# CHECK:         %[[CONV:.+]] = fxla.conv %[[X]], %[[W]], bias %[[B]] {stride = [2, 2, 2], padding = [0, 0, 0], dilation = [1, 1, 1], groups = 1, transposed = true, output_padding = [0, 0, 0]} : tensor<1x2x3x3x3xf32>, tensor<2x3x2x2x2xf32>, tensor<3xf32> -> tensor<1x3x6x6x6xf32>
@case(torch.conv_transpose3d, t(1, 2, 3, 3, 3), t(2, 3, 2, 2, 2), t(3))
def conv_transpose3d(x, w, b):
    return torch.conv_transpose3d(x, w, b, stride=2)


# CHECK-LABEL: case torch.nn.ConvTranspose3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x4x4xf32>, %[[WEIGHT:.+]]: tensor<2x2x3x3x3xf32> {fxla.param = "mod.weight"}, %[[BIAS:.+]]: tensor<2xf32> {fxla.param = "mod.bias"})
# CHECK:         %[[CONV:.+]] = fxla.conv %[[X]], %[[WEIGHT]], bias %[[BIAS]] {stride = [1, 1, 1], padding = [1, 1, 1], dilation = [1, 1, 1], groups = 1, transposed = true, output_padding = [0, 0, 0]} : tensor<1x2x3x4x4xf32>, tensor<2x2x3x3x3xf32>, tensor<2xf32> -> tensor<1x2x3x4x4xf32>
@case(nn.ConvTranspose3d, t(1, 2, 3, 4, 4))
def conv_transpose3d_module():
    return nn.ConvTranspose3d(2, 2, 3, padding=1)


# CHECK-LABEL: case torch.nn.Softmax2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x5xf32>)
# CHECK:         %[[SOFTMAX:.+]] = fxla.softmax %[[X]] {dim = -3} : tensor<2x3x4x5xf32> -> tensor<2x3x4x5xf32>
@case(nn.Softmax2d, t(2, 3, 4, 5))
def softmax2d():
    return nn.Softmax2d()


# cosine_similarity: torch clamps the norms in place under no_grad, so the gradient goes through them unclamped
# (keep_history), and a zero norm gets none (torch's norm_backward)
# CHECK-LABEL: case torch.cosine_similarity:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>, %[[Y:.+]]: tensor<1x3x4xf32>)
# CHECK:         %[[EXPAND:.+]] = fxla.expand %[[Y]] {shape = [2, 3, 4]} : tensor<1x3x4xf32> -> tensor<2x3x4xf32>
# CHECK:         %[[MUL:.+]] = fxla.mul %[[X]], %[[X]] : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
# CHECK:         %[[CLAMPED:.+]] = fxla.maximum %[[NORM:.+]], %{{.+}} : tensor<2x1x4xf32>, tensor<f32> -> tensor<2x1x4xf32>
# CHECK:         fxla.keep_history %[[CLAMPED]], %[[NORM]] : tensor<2x1x4xf32>, tensor<2x1x4xf32> -> tensor<2x1x4xf32>
# CHECK:         %[[SUM:.+]] = fxla.sum %{{.+}} {dims = [1], keepdim = false} : tensor<2x3x4xf32> -> tensor<2x4xf32>
# CHECK:         return %[[SUM]] : tensor<2x4xf32>
@case(F.cosine_similarity, t(2, 3, 4), t(1, 3, 4))
def cosine_similarity(x, y):
    return F.cosine_similarity(x, y)


# CHECK-LABEL: case torch.pairwise_distance:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SUB:.+]] = fxla.sub %[[X]], %[[Y]] : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<9.99999997E-7> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[ZERO:.+]] = fxla.eq %{{.+}}, %{{.+}} : tensor<3xf32>, tensor<f32> -> tensor<3xi1>
# CHECK:         %[[SQRT:.+]] = fxla.sqrt %{{.+}} : tensor<3xf32> -> tensor<3xf32>
# CHECK:         %[[NORM:.+]] = fxla.where %[[ZERO]], %{{.+}}, %[[SQRT]] : tensor<3xi1>, tensor<f32>, tensor<3xf32> -> tensor<3xf32>
# CHECK:         return %[[NORM]] : tensor<3xf32>
@case(F.pairwise_distance, t(3, 4), t(3, 4))
def pairwise_distance(x, y):
    return F.pairwise_distance(x, y)


# CHECK-LABEL: case torch.nn.CosineSimilarity:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xf32>)
# CHECK:         %[[MUL:.+]] = fxla.mul %[[X]], %[[X]] : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
# CHECK:         %[[SUM:.+]] = fxla.sum %[[MUL]] {dims = [1], keepdim = true} : tensor<3x4xf32> -> tensor<3x1xf32>
# CHECK:         %[[SUM_2:.+]] = fxla.sum %{{.+}} {dims = [1], keepdim = false} : tensor<3x4xf32> -> tensor<3xf32>
# CHECK:         return %[[SUM_2]] : tensor<3xf32>
@case(nn.CosineSimilarity, t(3, 4), t(3, 4))
def cosine_similarity_module():
    return nn.CosineSimilarity(dim=-1)


# CHECK-LABEL: case torch.nn.PairwiseDistance:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xf32>)
# CHECK:         %[[SUB:.+]] = fxla.sub %[[X]], %[[Y]] : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<9.99999997E-7> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[POW:.+]] = fxla.pow %{{.+}}, %{{.+}} : tensor<3x1xf32>, tensor<f32> -> tensor<3x1xf32>
# CHECK:         %[[NORM:.+]] = fxla.where %{{.+}}, %{{.+}}, %[[POW]] : tensor<3x1xi1>, tensor<f32>, tensor<3x1xf32> -> tensor<3x1xf32>
# CHECK:         return %[[NORM]] : tensor<3x1xf32>
@case(nn.PairwiseDistance, t(3, 4), t(3, 4))
def pairwise_distance_module():
    return nn.PairwiseDistance(p=1.0, keepdim=True)


# CHECK-LABEL: case torch.nn.Conv2d (padding_mode=reflect):
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x4x4xf32>, %[[WEIGHT:.+]]: tensor<3x2x3x3xf32> {fxla.param = "mod.weight"})
# CHECK:         %[[IDX:.+]] = fxla.constant {value = dense<[1, 0, 1, 2, 3, 2]> : tensor<6xi64>}
# CHECK:         %[[INDEX_SELECT:.+]] = fxla.index_select %[[X]], %[[IDX]] {dim = 3} : tensor<1x2x4x4xf32>, tensor<6xi64> -> tensor<1x2x4x6xf32>
# CHECK:         %[[IDX_2:.+]] = fxla.constant {value = dense<[1, 0, 1, 2, 3, 2]> : tensor<6xi64>}
# CHECK:         %[[INDEX_SELECT_2:.+]] = fxla.index_select %[[INDEX_SELECT]], %[[IDX_2]] {dim = 2} : tensor<1x2x4x6xf32>, tensor<6xi64> -> tensor<1x2x6x6xf32>
# CHECK:         %[[CONV:.+]] = fxla.conv %[[INDEX_SELECT_2]], %[[WEIGHT]] {stride = [1, 1], padding = [0, 0], dilation = [1, 1], groups = 1, transposed = false, output_padding = []} : tensor<1x2x6x6xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x4x4xf32>
# CHECK:         return %[[CONV]] : tensor<1x3x4x4xf32>
@case(torch.nn.Conv2d, t(1, 2, 4, 4), variant="padding_mode=reflect")
def conv2d_reflect():
    return torch.nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect", bias=False)


# CHECK-LABEL: case torch.nn.functional.layer_norm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x8xf32>, %[[W:.+]]: tensor<8xf32>, %[[B:.+]]: tensor<8xf32>)
# CHECK:         %[[LAYER_NORM:.+]] = fxla.layer_norm %[[X]], weight %[[W]], bias %[[B]] {normalized_rank = 1, eps = 1.000000e-03} : tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>
@case(F.layer_norm, t(2, 3, 8), t(8), t(8))
def layer_norm(x, w, b):
    return F.layer_norm(x, (8,), w, b, eps=1e-3)


# CHECK-LABEL: case torch.nn.LayerNorm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x8xf32>)
# CHECK:         %[[LAYER_NORM:.+]] = fxla.layer_norm %[[X]] {normalized_rank = 2, eps = 1.000000e-05} : tensor<2x3x8xf32> -> tensor<2x3x8xf32>
@case(nn.LayerNorm, t(2, 3, 8))
def layer_norm_module_2d_shape():
    return nn.LayerNorm((3, 8), elementwise_affine=False)


# CHECK-LABEL: case torch.nn.functional.dropout:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(F.dropout, t(3, 4))
def dropout_eval(x):
    return F.dropout(x, 0.5, training=False)


# CHECK-LABEL: case torch.nn.Dropout:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(nn.Dropout, t(3, 4))
def dropout_module():
    return nn.Dropout(0.1)


# Training mode: a keep-mask u < 1 - p for a uniform u drawn from the program's seed (fxla.rng), scaled by
# 1 / (1 - p) in f32 and multiplied in.
# CHECK-LABEL: case torch.nn.functional.dropout (training):
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xbf16>, %[[A1:.+]]: tensor<2xi64>)
# CHECK:         %[[RNG:.+]] = fxla.rng %[[A1]] {shape = [3, 4], distribution = "uniform", stream = 0} : tensor<2xi64> -> tensor<3x4xf32>
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<8.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[LT:.+]] = fxla.lt %[[RNG]], %[[CONSTANT]] : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xi1>
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[LT]] : tensor<3x4xi1> -> tensor<3x4xf32>
# CHECK:         %[[CONSTANT_2:.+]] = fxla.constant {value = dense<8.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[DIV:.+]] = fxla.div %[[CONVERT]], %[[CONSTANT_2]] : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xf32>
# CHECK:         %[[CONVERT_2:.+]] = fxla.convert %[[DIV]] : tensor<3x4xf32> -> tensor<3x4xbf16>
# CHECK:         %[[MUL:.+]] = fxla.mul %[[X]], %[[CONVERT_2]] : tensor<3x4xbf16>, tensor<3x4xbf16> -> tensor<3x4xbf16>
@case(F.dropout, t(3, 4, dtype=BF16), variant="training")
def dropout_training(x):
    return F.dropout(x, 0.2, training=True)


# Channel-wise: one mask entry per (sample, channel), broadcast over the spatial dims.
# CHECK-LABEL: case torch.nn.functional.dropout2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x5xf32>, %[[A1:.+]]: tensor<2xi64>)
# CHECK:         %[[RNG:.+]] = fxla.rng %[[A1]] {shape = [2, 3, 1, 1], distribution = "uniform", stream = 0} : tensor<2xi64> -> tensor<2x3x1x1xf32>
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[LT:.+]] = fxla.lt %[[RNG]], %[[CONSTANT]] : tensor<2x3x1x1xf32>, tensor<f32> -> tensor<2x3x1x1xi1>
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[LT]] : tensor<2x3x1x1xi1> -> tensor<2x3x1x1xf32>
# CHECK:         %[[CONSTANT_2:.+]] = fxla.constant {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[DIV:.+]] = fxla.div %[[CONVERT]], %[[CONSTANT_2]] : tensor<2x3x1x1xf32>, tensor<f32> -> tensor<2x3x1x1xf32>
# CHECK:         %[[MUL:.+]] = fxla.mul %[[X]], %[[DIV]] : tensor<2x3x4x5xf32>, tensor<2x3x1x1xf32> -> tensor<2x3x4x5xf32>
@case(F.dropout2d, t(2, 3, 4, 5))
def dropout2d_training(x):
    return F.dropout2d(x, 0.5, training=True)


# An unbatched (C, L) input is one sample.
# CHECK-LABEL: case torch.nn.functional.dropout1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[A1:.+]]: tensor<2xi64>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [1, 3, 4]} : tensor<3x4xf32> -> tensor<1x3x4xf32>
# CHECK:         %[[RNG:.+]] = fxla.rng %[[A1]] {shape = [1, 3, 1], distribution = "uniform", stream = 0} : tensor<2xi64> -> tensor<1x3x1xf32>
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[LT:.+]] = fxla.lt %[[RNG]], %[[CONSTANT]] : tensor<1x3x1xf32>, tensor<f32> -> tensor<1x3x1xi1>
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[LT]] : tensor<1x3x1xi1> -> tensor<1x3x1xf32>
# CHECK:         %[[CONSTANT_2:.+]] = fxla.constant {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[DIV:.+]] = fxla.div %[[CONVERT]], %[[CONSTANT_2]] : tensor<1x3x1xf32>, tensor<f32> -> tensor<1x3x1xf32>
# CHECK:         %[[MUL:.+]] = fxla.mul %[[RESHAPE]], %[[DIV]] : tensor<1x3x4xf32>, tensor<1x3x1xf32> -> tensor<1x3x4xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[MUL]] {shape = [3, 4]} : tensor<1x3x4xf32> -> tensor<3x4xf32>
@case(F.dropout1d, t(3, 4))
def dropout1d_unbatched_training(x):
    return F.dropout1d(x, 0.5, training=True)


# CHECK-LABEL: case torch.nn.functional.dropout3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x2x2x2xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<2x3x2x2x2xf32>
@case(F.dropout3d, t(2, 3, 2, 2, 2))
def dropout3d_eval(x):
    return F.dropout3d(x, 0.5, training=False)


# x * a * mask + b, with a and b keeping SELU's zero mean and unit variance.
# CHECK-LABEL: case torch.nn.functional.alpha_dropout:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[A1:.+]]: tensor<2xi64>)
# CHECK:         %[[RNG:.+]] = fxla.rng %[[A1]] {shape = [3, 4], distribution = "uniform", stream = 0} : tensor<2xi64> -> tensor<3x4xf32>
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[LT:.+]] = fxla.lt %[[RNG]], %[[CONSTANT]] : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xi1>
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[LT]] : tensor<3x4xi1> -> tensor<3x4xf32>
# CHECK:         %[[CONSTANT_2:.+]] = fxla.constant {value = dense<1.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[SUB:.+]] = fxla.sub %[[CONVERT]], %[[CONSTANT_2]] : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xf32>
# CHECK:         %[[CONSTANT_3:.+]] = fxla.constant {value = dense<1.55838788> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[MUL:.+]] = fxla.mul %[[SUB]], %[[CONSTANT_3]] : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xf32>
# CHECK:         %[[CONSTANT_4:.+]] = fxla.constant {value = dense<0.779193937> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[ADD:.+]] = fxla.add %[[MUL]], %[[CONSTANT_4]] : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xf32>
# CHECK:         %[[CONSTANT_5:.+]] = fxla.constant {value = dense<0.886404871> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[MUL_2:.+]] = fxla.mul %[[CONVERT]], %[[CONSTANT_5]] : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xf32>
# CHECK:         %[[MUL_3:.+]] = fxla.mul %[[X]], %[[MUL_2]] : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
# CHECK:         %[[ADD_2:.+]] = fxla.add %[[MUL_3]], %[[ADD]] : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
@case(F.alpha_dropout, t(3, 4))
def alpha_dropout_training(x):
    return F.alpha_dropout(x, 0.5, training=True)


# CHECK-LABEL: case torch.nn.functional.feature_alpha_dropout:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>, %[[A1:.+]]: tensor<2xi64>)
# CHECK:         %[[RNG:.+]] = fxla.rng %[[A1]] {shape = [2, 3, 1], distribution = "uniform", stream = 0} : tensor<2xi64> -> tensor<2x3x1xf32>
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<7.500000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[LT:.+]] = fxla.lt %[[RNG]], %[[CONSTANT]] : tensor<2x3x1xf32>, tensor<f32> -> tensor<2x3x1xi1>
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[LT]] : tensor<2x3x1xi1> -> tensor<2x3x1xf32>
# CHECK:         %[[CONSTANT_2:.+]] = fxla.constant {value = dense<1.000000e+00> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[SUB:.+]] = fxla.sub %[[CONVERT]], %[[CONSTANT_2]] : tensor<2x3x1xf32>, tensor<f32> -> tensor<2x3x1xf32>
# CHECK:         %[[CONSTANT_3:.+]] = fxla.constant {value = dense<1.52472556> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[MUL:.+]] = fxla.mul %[[SUB]], %[[CONSTANT_3]] : tensor<2x3x1xf32>, tensor<f32> -> tensor<2x3x1xf32>
# CHECK:         %[[CONSTANT_4:.+]] = fxla.constant {value = dense<0.381181389> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[ADD:.+]] = fxla.add %[[MUL]], %[[CONSTANT_4]] : tensor<2x3x1xf32>, tensor<f32> -> tensor<2x3x1xf32>
# CHECK:         %[[CONSTANT_5:.+]] = fxla.constant {value = dense<0.867257952> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[MUL_2:.+]] = fxla.mul %[[CONVERT]], %[[CONSTANT_5]] : tensor<2x3x1xf32>, tensor<f32> -> tensor<2x3x1xf32>
# CHECK:         %[[MUL_3:.+]] = fxla.mul %[[X]], %[[MUL_2]] : tensor<2x3x4xf32>, tensor<2x3x1xf32> -> tensor<2x3x4xf32>
# CHECK:         %[[ADD_2:.+]] = fxla.add %[[MUL_3]], %[[ADD]] : tensor<2x3x4xf32>, tensor<2x3x1xf32> -> tensor<2x3x4xf32>
@case(F.feature_alpha_dropout, t(2, 3, 4))
def feature_alpha_dropout_training(x):
    return F.feature_alpha_dropout(x, 0.25, training=True)


# (the modules are cased in eval mode, where they return their input)
# CHECK-LABEL: case torch.nn.Dropout1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<2x3x4xf32>
@case(nn.Dropout1d, t(2, 3, 4))
def dropout1d_module():
    return nn.Dropout1d(0.1)


# CHECK-LABEL: case torch.nn.Dropout2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x4xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<2x3x4x4xf32>
@case(nn.Dropout2d, t(2, 3, 4, 4))
def dropout2d_module():
    return nn.Dropout2d(0.1)


# CHECK-LABEL: case torch.nn.Dropout3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x2x2x2xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<2x3x2x2x2xf32>
@case(nn.Dropout3d, t(2, 3, 2, 2, 2))
def dropout3d_module():
    return nn.Dropout3d(0.1)


# CHECK-LABEL: case torch.nn.AlphaDropout:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(nn.AlphaDropout, t(3, 4))
def alpha_dropout_module():
    return nn.AlphaDropout(0.1)


# CHECK-LABEL: case torch.nn.FeatureAlphaDropout:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<2x3x4xf32>
@case(nn.FeatureAlphaDropout, t(2, 3, 4))
def feature_alpha_dropout_module():
    return nn.FeatureAlphaDropout(0.1)


# CHECK-LABEL: case torch.nn.Identity:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK-NOT:     = fxla.
# CHECK:         return %[[X]] : tensor<3x4xf32>
@case(nn.Identity, t(3, 4))
def identity_module():
    return nn.Identity()
