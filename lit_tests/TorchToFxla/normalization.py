# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, family `normalization` (lowering/rules/normalization.py): batch/instance/group/RMS normalisation
# (instance norm: each sample and channel over its spatial dims; running statistics when tracked), local response
# normalisation, F.normalize and F.scaled_dot_product_attention (q @ k^T, scaled by 1/sqrt(E) unless scale=,
# masked: a bool mask selects with -inf, a float mask is added, is_causal applies tril; softmax over the last
# dim, @ v) -- one case per op object of fxla.lowering.RULES; the checks show eps and the parameters that become
# function arguments.
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
import torch.nn as nn
import torch.nn.functional as F

from fxla.testing import case, t

BF16, BOOL, F16 = torch.bfloat16, torch.bool, torch.float16


# CHECK-LABEL: case torch.nn.functional.group_norm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x6x4xf32>, %[[W:.+]]: tensor<6xf32>, %[[B:.+]]: tensor<6xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 3, 8]} : tensor<2x6x4xf32> -> tensor<2x3x8xf32>
# CHECK:         %[[LAYER_NORM:.+]] = fxla.layer_norm %[[RESHAPE]] {normalized_rank = 1, eps = 1.000000e-05} : tensor<2x3x8xf32> -> tensor<2x3x8xf32>
# CHECK:         %[[ADD:.+]] = fxla.add %{{.+}}, %{{.+}} : tensor<2x6x4xf32>, tensor<6x1xf32> -> tensor<2x6x4xf32>
# CHECK:         return %[[ADD]] : tensor<2x6x4xf32>
@case(F.group_norm, t(2, 6, 4), t(6), t(6))
def group_norm(x, w, b):
    return F.group_norm(x, 3, w, b)


# CHECK-LABEL: case torch.group_norm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x4x3x3xf32>)
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [2, 2, 18]} : tensor<2x4x3x3xf32> -> tensor<2x2x18xf32>
# CHECK:         %[[LAYER_NORM:.+]] = fxla.layer_norm %[[RESHAPE]] {normalized_rank = 1, eps = 1.000000e-03} : tensor<2x2x18xf32> -> tensor<2x2x18xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %[[LAYER_NORM]] {shape = [2, 4, 3, 3]} : tensor<2x2x18xf32> -> tensor<2x4x3x3xf32>
@case(torch.group_norm, t(2, 4, 3, 3))
def torch_group_norm_eps(x):
    return torch.group_norm(x, 2, None, None, 1e-3)


# CHECK-LABEL: case torch.nn.GroupNorm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x6x5xbf16>, %[[WEIGHT:.+]]: tensor<6xbf16> {fxla.param = "mod.weight"}, %[[BIAS:.+]]: tensor<6xbf16> {fxla.param = "mod.bias"})
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[X]] : tensor<2x6x5xbf16> -> tensor<2x6x5xf32>
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[CONVERT]] {shape = [2, 2, 15]} : tensor<2x6x5xf32> -> tensor<2x2x15xf32>
# CHECK:         %[[CONVERT_2:.+]] = fxla.convert %{{.+}} : tensor<2x6x5xf32> -> tensor<2x6x5xbf16>
# CHECK:         return %[[CONVERT_2]] : tensor<2x6x5xbf16>
@case(nn.GroupNorm, t(2, 6, 5, dtype=BF16))
def group_norm_module():
    return nn.GroupNorm(2, 6).to(BF16)


# CHECK-LABEL: case torch.nn.functional.batch_norm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x5xf32>, %[[MEAN:.+]]: tensor<3xf32>, %[[VAR:.+]]: tensor<3xf32>, %[[W:.+]]: tensor<3xf32>, %[[B:.+]]: tensor<3xf32>)
# CHECK:         %[[EPS:.+]] = fxla.constant {value = dense<1.000000e-03> : tensor<f32>}
# CHECK:         %[[INV_STD:.+]] = fxla.rsqrt %{{.+}} : tensor<3x1x1xf32> -> tensor<3x1x1xf32>
# CHECK:         %[[M:.+]] = fxla.reshape %[[MEAN]] {shape = [3, 1, 1]} : tensor<3xf32> -> tensor<3x1x1xf32>
# CHECK:         fxla.sub %[[X]], %[[M]] : tensor<2x3x4x5xf32>, tensor<3x1x1xf32> -> tensor<2x3x4x5xf32>
# CHECK:         fxla.add %{{.+}}, %{{.+}} : tensor<2x3x4x5xf32>, tensor<3x1x1xf32> -> tensor<2x3x4x5xf32>
@case(F.batch_norm, t(2, 3, 4, 5), t(3), t(3), t(3), t(3))
def batch_norm(x, mean, var, w, b):
    return F.batch_norm(x, mean, var, w, b, eps=1e-3)


# Training mode: the batch's mean and biased variance normalise; the running statistics (here inputs of the
# program) are updated in place -- running = running * (1 - momentum) + batch * momentum, with the unbiased
# variance (x 24/23) for running_var, no gradient through the update (fxla.detach) -- and returned after the
# output, for the caller to write back.
# CHECK-LABEL: case torch.nn.functional.batch_norm (training):
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x3xf32>, %[[RUNNING_MEAN:.+]]: tensor<3xf32>, %[[RUNNING_VAR:.+]]: tensor<3xf32>)
# CHECK:         %[[MEAN:.+]] = fxla.mean %[[X]] {dims = [0, 2, 3], keepdim = false} : tensor<2x3x4x3xf32> -> tensor<3xf32>
# CHECK:         %[[VAR:.+]] = fxla.var %[[X]] {dims = [0, 2, 3], keepdim = false, correction = 0} : tensor<2x3x4x3xf32> -> tensor<3xf32>
# CHECK:         %[[BESSEL:.+]] = fxla.constant {value = dense<1.04347825> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[UNBIASED:.+]] = fxla.mul %[[VAR]], %[[BESSEL]]
# CHECK:         %[[BATCH_MEAN:.+]] = fxla.detach %[[MEAN]]
# CHECK:         %[[MOMENTUM:.+]] = fxla.constant {value = dense<2.500000e-01> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[KEPT:.+]] = fxla.mul %[[RUNNING_MEAN]], %{{.+}} : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
# CHECK:         %[[NEW:.+]] = fxla.mul %[[BATCH_MEAN]], %[[MOMENTUM]]
# CHECK:         %[[NEW_MEAN:.+]] = fxla.add %[[KEPT]], %[[NEW]]
# CHECK:         %[[BATCH_VAR:.+]] = fxla.detach %[[UNBIASED]]
# CHECK:         %[[KEPT_VAR:.+]] = fxla.mul %[[RUNNING_VAR]], %{{.+}} : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
# CHECK:         %[[NEW_V:.+]] = fxla.mul %[[BATCH_VAR]], %{{.+}}
# CHECK:         %[[NEW_VAR:.+]] = fxla.add %[[KEPT_VAR]], %[[NEW_V]]
# CHECK:         %[[V:.+]] = fxla.reshape %[[VAR]] {shape = [3, 1, 1]}
# CHECK:         %[[INV_STD:.+]] = fxla.rsqrt
# CHECK:         %[[M:.+]] = fxla.reshape %[[MEAN]] {shape = [3, 1, 1]}
# CHECK:         %[[CENTERED:.+]] = fxla.sub %[[X]], %[[M]]
# CHECK:         %[[Y:.+]] = fxla.mul %[[CENTERED]], %[[INV_STD]]
# CHECK:         return %[[Y]], %[[NEW_MEAN]], %[[NEW_VAR]] : tensor<2x3x4x3xf32>, tensor<3xf32>, tensor<3xf32>
@case(F.batch_norm, t(2, 3, 4, 3), t(3), t(3), variant="training")
def batch_norm_training(x, mean, var):
    return F.batch_norm(x, mean, var, training=True, momentum=0.25)


# CHECK-LABEL: case torch.nn.BatchNorm1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[WEIGHT:.+]]: tensor<4xf32> {fxla.param = "mod.weight"}, %[[BIAS:.+]]: tensor<4xf32> {fxla.param = "mod.bias"}, %[[RUNNING_MEAN:.+]]: tensor<4xf32> {fxla.param = "mod.running_mean"}, %[[RUNNING_VAR:.+]]: tensor<4xf32> {fxla.param = "mod.running_var"})
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<9.99999974E-6> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[ADD:.+]] = fxla.add %[[RUNNING_VAR]], %[[CONSTANT]] : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
# CHECK:         %[[ADD_2:.+]] = fxla.add %{{.+}}, %[[BIAS]] : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
# CHECK:         return %[[ADD_2]] : tensor<3x4xf32>
@case(nn.BatchNorm1d, t(3, 4))
def batch_norm1d_module_2d_input():
    return nn.BatchNorm1d(4)


# CHECK-LABEL: case torch.nn.BatchNorm2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x4xf16>, %[[WEIGHT:.+]]: tensor<3xf16> {fxla.param = "mod.weight"}, %[[BIAS:.+]]: tensor<3xf16> {fxla.param = "mod.bias"}, %[[RUNNING_MEAN:.+]]: tensor<3xf16> {fxla.param = "mod.running_mean"}, %[[RUNNING_VAR:.+]]: tensor<3xf16> {fxla.param = "mod.running_var"})
# CHECK:         %[[CONVERT:.+]] = fxla.convert %[[X]] : tensor<2x3x4x4xf16> -> tensor<2x3x4x4xf32>
# CHECK:         %[[CONVERT_2:.+]] = fxla.convert %[[RUNNING_VAR]] : tensor<3xf16> -> tensor<3xf32>
# CHECK:         %[[CONVERT_3:.+]] = fxla.convert %{{.+}} : tensor<2x3x4x4xf32> -> tensor<2x3x4x4xf16>
# CHECK:         return %[[CONVERT_3]] : tensor<2x3x4x4xf16>
@case(nn.BatchNorm2d, t(2, 3, 4, 4, dtype=F16))
def batch_norm2d_module():
    return nn.BatchNorm2d(3).to(F16)


# CHECK-LABEL: case torch.nn.BatchNorm3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x3x2xf32>, %[[RUNNING_MEAN:.+]]: tensor<2xf32> {fxla.param = "mod.running_mean"}, %[[RUNNING_VAR:.+]]: tensor<2xf32> {fxla.param = "mod.running_var"})
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[RUNNING_VAR]] {shape = [2, 1, 1, 1]} : tensor<2xf32> -> tensor<2x1x1x1xf32>
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<9.99999974E-6> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[MUL:.+]] = fxla.mul %{{.+}}, %{{.+}} : tensor<1x2x3x3x2xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x3x3x2xf32>
# CHECK:         return %[[MUL]] : tensor<1x2x3x3x2xf32>
@case(nn.BatchNorm3d, t(1, 2, 3, 3, 2))
def batch_norm3d_module_no_affine():
    return nn.BatchNorm3d(2, affine=False)


# CHECK-LABEL: case torch.nn.functional.rms_norm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x8xf32>, %[[W:.+]]: tensor<8xf32>)
# CHECK:         %[[MUL:.+]] = fxla.mul %[[X]], %[[X]] : tensor<2x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32>
# CHECK:         %[[MEAN:.+]] = fxla.mean %[[MUL]] {dims = [2], keepdim = true} : tensor<2x3x8xf32> -> tensor<2x3x1xf32>
# CHECK:         %[[MUL_2:.+]] = fxla.mul %{{.+}}, %[[W]] : tensor<2x3x8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>
# CHECK:         return %[[MUL_2]] : tensor<2x3x8xf32>
@case(F.rms_norm, t(2, 3, 8), t(8))
def rms_norm(x, w):
    return F.rms_norm(x, (8,), w)


# CHECK-LABEL: case torch.nn.RMSNorm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x8xf32>, %[[WEIGHT:.+]]: tensor<3x8xf32> {fxla.param = "mod.weight"})
# CHECK:         %[[MUL:.+]] = fxla.mul %[[X]], %[[X]] : tensor<2x3x8xf32>, tensor<2x3x8xf32> -> tensor<2x3x8xf32>
# CHECK:         %[[MEAN:.+]] = fxla.mean %[[MUL]] {dims = [1, 2], keepdim = true} : tensor<2x3x8xf32> -> tensor<2x1x1xf32>
# CHECK:         %[[MUL_2:.+]] = fxla.mul %{{.+}}, %[[WEIGHT]] : tensor<2x3x8xf32>, tensor<3x8xf32> -> tensor<2x3x8xf32>
# CHECK:         return %[[MUL_2]] : tensor<2x3x8xf32>
@case(nn.RMSNorm, t(2, 3, 8))
def rms_norm_module_eps():
    return nn.RMSNorm([3, 8], eps=1e-5)


# CHECK-LABEL: case torch.nn.functional.normalize:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>)
# CHECK:         %[[ABS:.+]] = fxla.abs %[[X]] : tensor<3x4xf32> -> tensor<3x4xf32>
# CHECK:         %[[SUM:.+]] = fxla.sum %[[ABS]] {dims = [0], keepdim = true} : tensor<3x4xf32> -> tensor<1x4xf32>
# CHECK:         %[[DIV:.+]] = fxla.div %[[X]], %{{.+}} : tensor<3x4xf32>, tensor<1x4xf32> -> tensor<3x4xf32>
# CHECK:         return %[[DIV]] : tensor<3x4xf32>
@case(F.normalize, t(3, 4))
def normalize_p1(x):
    return F.normalize(x, p=1.0, dim=0)


# CHECK-LABEL: case torch.nn.functional.scaled_dot_product_attention:
# CHECK:         func.func @main(%[[Q:.+]]: tensor<2x4x5x8xf32>, %[[K:.+]]: tensor<2x4x6x8xf32>, %[[V:.+]]: tensor<2x4x6x8xf32>)
# CHECK:         %[[KT:.+]] = fxla.permute %[[K]] {dims = [0, 1, 3, 2]} : tensor<2x4x6x8xf32> -> tensor<2x4x8x6xf32>
# CHECK:         %[[QK:.+]] = fxla.matmul %[[Q]], %[[KT]] : tensor<2x4x5x8xf32>, tensor<2x4x8x6xf32> -> tensor<2x4x5x6xf32>
# CHECK:         %[[SCALE:.+]] = fxla.constant {value = dense<0.353553385> : tensor<f32>}
# CHECK:         %[[S:.+]] = fxla.mul %[[QK]], %[[SCALE]]
# CHECK:         %[[P:.+]] = fxla.softmax %[[S]] {dim = -1} : tensor<2x4x5x6xf32> -> tensor<2x4x5x6xf32>
# CHECK:         fxla.matmul %[[P]], %[[V]] : tensor<2x4x5x6xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x5x8xf32>
@case(F.scaled_dot_product_attention, t(2, 4, 5, 8), t(2, 4, 6, 8), t(2, 4, 6, 8))
def sdpa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)


# CHECK-LABEL: case torch.nn.functional.scaled_dot_product_attention (causal, scale):
# CHECK:         %[[SCALE:.+]] = fxla.constant {value = dense<5.000000e-01> : tensor<f32>}
# CHECK:         %[[S:.+]] = fxla.mul %{{.+}}, %[[SCALE]] : tensor<2x4x5x5xf32>, tensor<f32> -> tensor<2x4x5x5xf32>
# CHECK:         %[[CAUSAL:.+]] = fxla.tril %{{.+}} {diagonal = 0} : tensor<5x5xi1> -> tensor<5x5xi1>
# CHECK:         %[[NEG_INF:.+]] = fxla.constant {value = dense<0xFF800000> : tensor<f32>}
# CHECK:         %[[MASKED:.+]] = fxla.where %[[CAUSAL]], %[[S]], %[[NEG_INF]] : tensor<5x5xi1>, tensor<2x4x5x5xf32>, tensor<f32> -> tensor<2x4x5x5xf32>
# CHECK:         fxla.softmax %[[MASKED]] {dim = -1}
@case(F.scaled_dot_product_attention, t(2, 4, 5, 8), t(2, 4, 5, 8), t(2, 4, 5, 8), variant="causal, scale")
def sdpa_causal_scale(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.5)


# A given mask: torch's safe softmax, 0 (not NaN) for a query whose every key is masked.
# CHECK-LABEL: case torch.nn.functional.scaled_dot_product_attention (bool mask):
# CHECK:         func.func @main(%{{.+}}, %[[MASK:.+]]: tensor<5x6xi1>)
# CHECK:         %[[S:.+]] = fxla.mul
# CHECK:         %[[NEG_INF:.+]] = fxla.constant {value = dense<0xFF800000> : tensor<f32>}
# CHECK:         %[[MASKED:.+]] = fxla.where %[[MASK]], %[[S]], %[[NEG_INF]] : tensor<5x6xi1>, tensor<1x2x5x6xf32>, tensor<f32> -> tensor<1x2x5x6xf32>
# CHECK:         %[[IS_INF:.+]] = fxla.eq %[[MASKED]], %{{.+}}
# CHECK:         %[[EMPTY:.+]] = fxla.all %[[IS_INF]] {dims = [-1], keepdim = true} : tensor<1x2x5x6xi1> -> tensor<1x2x5x1xi1>
# CHECK:         %[[SAFE:.+]] = fxla.where %[[EMPTY]], %[[ZERO:.+]], %[[MASKED]]
# CHECK:         %[[P:.+]] = fxla.softmax %[[SAFE]] {dim = -1}
# CHECK:         fxla.where %[[EMPTY]], %[[ZERO]], %[[P]]
@case(F.scaled_dot_product_attention, t(1, 2, 5, 8), t(1, 2, 6, 8), t(1, 2, 6, 8), t(5, 6, dtype=BOOL),
      variant="bool mask")
def sdpa_bool_mask(q, k, v, mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


# CHECK-LABEL: case torch.nn.functional.scaled_dot_product_attention (additive mask):
# CHECK:         func.func @main(%{{.+}}, %[[MASK:.+]]: tensor<1x1x5x6xf32>)
# CHECK:         %[[S:.+]] = fxla.mul
# CHECK:         %[[MASKED:.+]] = fxla.add %[[S]], %[[MASK]] : tensor<1x2x5x6xf32>, tensor<1x1x5x6xf32> -> tensor<1x2x5x6xf32>
# CHECK:         fxla.softmax %{{.+}} {dim = -1}
@case(F.scaled_dot_product_attention, t(1, 2, 5, 8), t(1, 2, 6, 8), t(1, 2, 6, 8), t(1, 1, 5, 6),
      variant="additive mask")
def sdpa_float_mask(q, k, v, mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


# CHECK-LABEL: case torch.nn.functional.instance_norm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x5xf32>)
# CHECK:         %[[MEAN:.+]] = fxla.mean %[[X]] {dims = [2, 3], keepdim = true} : tensor<2x3x4x5xf32> -> tensor<2x3x1x1xf32>
# CHECK:         %[[VAR:.+]] = fxla.var %[[X]] {dims = [2, 3], keepdim = true, correction = 0} : tensor<2x3x4x5xf32> -> tensor<2x3x1x1xf32>
# CHECK:         %[[MUL:.+]] = fxla.mul %{{.+}}, %{{.+}} : tensor<2x3x4x5xf32>, tensor<2x3x1x1xf32> -> tensor<2x3x4x5xf32>
# CHECK:         return %[[MUL]] : tensor<2x3x4x5xf32>
@case(F.instance_norm, t(2, 3, 4, 5))
def instance_norm(x):
    return F.instance_norm(x, eps=1e-3)


# CHECK-LABEL: case torch.nn.InstanceNorm1d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x6xf32>, %[[WEIGHT:.+]]: tensor<3xf32> {fxla.param = "mod.weight"}, %[[BIAS:.+]]: tensor<3xf32> {fxla.param = "mod.bias"})
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[X]] {shape = [1, 3, 6]} : tensor<3x6xf32> -> tensor<1x3x6xf32>
# CHECK:         %[[MEAN:.+]] = fxla.mean %[[RESHAPE]] {dims = [2], keepdim = true} : tensor<1x3x6xf32> -> tensor<1x3x1xf32>
# CHECK:         %[[RESHAPE_2:.+]] = fxla.reshape %{{.+}} {shape = [3, 6]} : tensor<1x3x6xf32> -> tensor<3x6xf32>
# CHECK:         return %[[RESHAPE_2]] : tensor<3x6xf32>
@case(nn.InstanceNorm1d, t(3, 6))
def instance_norm_1d_unbatched():
    return nn.InstanceNorm1d(3, affine=True)


# CHECK-LABEL: case torch.nn.InstanceNorm2d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<2x3x4x5xf32>)
# CHECK:         %[[MEAN:.+]] = fxla.mean %[[X]] {dims = [2, 3], keepdim = true} : tensor<2x3x4x5xf32> -> tensor<2x3x1x1xf32>
# CHECK:         %[[VAR:.+]] = fxla.var %[[X]] {dims = [2, 3], keepdim = true, correction = 0} : tensor<2x3x4x5xf32> -> tensor<2x3x1x1xf32>
# CHECK:         %[[MUL:.+]] = fxla.mul %{{.+}}, %{{.+}} : tensor<2x3x4x5xf32>, tensor<2x3x1x1xf32> -> tensor<2x3x4x5xf32>
# CHECK:         return %[[MUL]] : tensor<2x3x4x5xf32>
@case(nn.InstanceNorm2d, t(2, 3, 4, 5))
def instance_norm_2d():
    return nn.InstanceNorm2d(3)


# With track_running_stats (eval mode): the running statistics, as batch norm.
# CHECK-LABEL: case torch.nn.InstanceNorm3d:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x2x3x3x2xf32>, %[[RUNNING_MEAN:.+]]: tensor<2xf32> {fxla.param = "mod.running_mean"}, %[[RUNNING_VAR:.+]]: tensor<2xf32> {fxla.param = "mod.running_var"})
# CHECK:         %[[RESHAPE:.+]] = fxla.reshape %[[RUNNING_VAR]] {shape = [2, 1, 1, 1]} : tensor<2xf32> -> tensor<2x1x1x1xf32>
# CHECK:         %[[CONSTANT:.+]] = fxla.constant {value = dense<9.99999974E-6> : tensor<f32>} : () -> tensor<f32>
# CHECK:         %[[MUL:.+]] = fxla.mul %{{.+}}, %{{.+}} : tensor<1x2x3x3x2xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x3x3x2xf32>
# CHECK:         return %[[MUL]] : tensor<1x2x3x3x2xf32>
@case(nn.InstanceNorm3d, t(1, 2, 3, 3, 2))
def instance_norm_3d_running_stats():
    return nn.InstanceNorm3d(2, track_running_stats=True)


# local_response_norm: x / (k + alpha * mean of x^2 over `size` channels)^beta (the channel window via padded slices).
# CHECK-LABEL: case torch.nn.functional.local_response_norm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x4x3xf32>)
# CHECK:         %[[MUL:.+]] = fxla.mul %[[X]], %[[X]] : tensor<1x4x3xf32>, tensor<1x4x3xf32> -> tensor<1x4x3xf32>
# CHECK:         %[[PAD:.+]] = fxla.pad %[[MUL]] {low = [0, 1, 0], high = [0, 0, 0], value = 0.000000e+00} : tensor<1x4x3xf32> -> tensor<1x5x3xf32>
# CHECK:         %[[DIV:.+]] = fxla.div %[[X]], %{{.+}} : tensor<1x4x3xf32>, tensor<1x4x3xf32> -> tensor<1x4x3xf32>
# CHECK:         return %[[DIV]] : tensor<1x4x3xf32>
@case(F.local_response_norm, t(1, 4, 3))
def local_response_norm(x):
    return F.local_response_norm(x, 2)


# CHECK-LABEL: case torch.nn.LocalResponseNorm:
# CHECK:         func.func @main(%[[X:.+]]: tensor<1x5x2x2xf32>)
# CHECK:         %[[MUL:.+]] = fxla.mul %[[X]], %[[X]] : tensor<1x5x2x2xf32>, tensor<1x5x2x2xf32> -> tensor<1x5x2x2xf32>
# CHECK:         %[[PAD:.+]] = fxla.pad %[[MUL]] {low = [0, 1, 0, 0], high = [0, 1, 0, 0], value = 0.000000e+00} : tensor<1x5x2x2xf32> -> tensor<1x7x2x2xf32>
# CHECK:         %[[DIV:.+]] = fxla.div %[[X]], %{{.+}} : tensor<1x5x2x2xf32>, tensor<1x5x2x2xf32> -> tensor<1x5x2x2xf32>
# CHECK:         return %[[DIV]] : tensor<1x5x2x2xf32>
@case(nn.LocalResponseNorm, t(1, 5, 2, 2))
def local_response_norm_module():
    return nn.LocalResponseNorm(3)
