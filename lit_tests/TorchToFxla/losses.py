# RUN: %python %s | FileCheck %s --enable-var-scope
# Torch -> fxla, families `losses` and `ctc` (lowering/rules/losses.py, lowering/rules/ctc.py): loss functions and
# their modules -- one case per op object of fxla.lowering.RULES; the checks show each formula's key ops and how
# it is reduced (sum / mean, or the weighted mean of class-index losses).
# Check lines drafted with utils/update_torch_op_checks.py, then reviewed.
import torch
import torch.nn as nn
import torch.nn.functional as F

from fxla.testing import case, t


def idx(*shape, high):
    return torch.randint(0, high, shape)


# CHECK-LABEL: case torch.nn.functional.mse_loss:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xf32>) -> tensor<f32>
# CHECK:         %[[D:.+]] = fxla.sub %[[X]], %[[Y]]
# CHECK:         %[[SQ:.+]] = fxla.mul %[[D]], %[[D]]
# CHECK:         fxla.mean %[[SQ]] {dims = [], keepdim = false} : tensor<3x4xf32> -> tensor<f32>
@case(F.mse_loss, t(3, 4), t(3, 4))
def mse(x, y):
    return F.mse_loss(x, y)


# The weighted mean is sum(w * |x - y|) / sum(w) (the weight survives tracing: fxla.frontend.proxy).
# CHECK-LABEL: case torch.nn.functional.l1_loss:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xf32>, %[[W:.+]]: tensor<3x4xf32>)
# CHECK:         %[[A:.+]] = fxla.abs
# CHECK:         %[[WA:.+]] = fxla.mul %[[A]], %[[W]]
# CHECK:         %[[NUM:.+]] = fxla.sum %[[WA]]
# CHECK:         %[[DEN:.+]] = fxla.sum %[[W]]
# CHECK:         fxla.div %[[NUM]], %[[DEN]]
@case(F.l1_loss, t(3, 4), t(3, 4), t(3, 4))
def l1_weighted(x, y, w):
    return F.l1_loss(x, y, weight=w)


# |d| < beta ? 0.5 d² / beta : |d| - beta / 2, with beta = 0.5
# CHECK-LABEL: case torch.nn.functional.smooth_l1_loss:
# CHECK:         %[[A:.+]] = fxla.abs
# CHECK:         fxla.constant {value = dense<2.500000e-01> : tensor<f32>}
# CHECK:         %[[SMALL:.+]] = fxla.lt %[[A]], %{{.+}} : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xi1>
# CHECK:         %[[L:.+]] = fxla.where %[[SMALL]], %{{.+}}, %{{.+}}
# CHECK:         fxla.sum %[[L]] {dims = [], keepdim = false}
@case(F.smooth_l1_loss, t(3, 4), t(3, 4))
def smooth_l1(x, y):
    return F.smooth_l1_loss(x, y, beta=0.5, reduction="sum")


# CHECK-LABEL: case torch.nn.functional.huber_loss:
# CHECK:         func.func @main(%{{.+}}: tensor<3x4xf32>, %{{.+}}: tensor<3x4xf32>) -> tensor<3x4xf32>
# CHECK:         fxla.constant {value = dense<2.000000e+00> : tensor<f32>}
# CHECK:         %[[L:.+]] = fxla.where
# CHECK-NEXT:    return %[[L]] : tensor<3x4xf32>
@case(F.huber_loss, t(3, 4), t(3, 4))
def huber(x, y):
    return F.huber_loss(x, y, delta=2.0, reduction="none")


# Ignored targets (-100) pick class 0 and count with weight 0; the mean divides by the counted weights.
# CHECK-LABEL: case torch.nn.functional.nll_loss:
# CHECK:         func.func @main(%[[X:.+]]: tensor<5x4xf32>, %[[I:.+]]: tensor<5xi64>, %[[W:.+]]: tensor<4xf32>)
# CHECK:         %[[KEEP:.+]] = fxla.ne %[[I]], %{{.+}} : tensor<5xi64>, tensor<i64> -> tensor<5xi1>
# CHECK:         %[[SAFE:.+]] = fxla.where %[[KEEP]], %[[I]], %{{.+}}
# CHECK:         fxla.gather %[[X]], %{{.+}} {dim = 1} : tensor<5x4xf32>, tensor<5x1xi64> -> tensor<5x1xf32>
# CHECK:         fxla.index_select %[[W]], %[[SAFE]] {dim = 0} : tensor<4xf32>, tensor<5xi64> -> tensor<5xf32>
# CHECK:         fxla.div
@case(F.nll_loss, t(5, 4), idx(5, high=4), t(4))
def nll_weighted(x, i, w):
    return F.nll_loss(x, i, weight=w)


# CHECK-LABEL: case torch.nn.functional.cross_entropy:
# CHECK:         %[[LOGP:.+]] = fxla.log_softmax %{{.+}} {dim = 1} : tensor<5x4xf32> -> tensor<5x4xf32>
# CHECK:         fxla.gather %[[LOGP]], %{{.+}} {dim = 1}
# CHECK:         %[[L:.+]] = fxla.neg
# CHECK:         fxla.sum %[[L]] {dims = [], keepdim = false} : tensor<5xf32> -> tensor<f32>
@case(F.cross_entropy, t(5, 4), idx(5, high=4))
def cross_entropy(x, i):
    return F.cross_entropy(x, i, reduction="sum")


# A float target of the input's shape holds class probabilities: -sum_c(p_c * logp_c), averaged over the batch.
# CHECK-LABEL: case torch.nn.functional.cross_entropy (probabilities):
# CHECK:         %[[LOGP:.+]] = fxla.log_softmax
# CHECK:         %[[T:.+]] = fxla.mul %[[LOGP]], %{{.+}} : tensor<5x4xf32>, tensor<5x4xf32> -> tensor<5x4xf32>
# CHECK:         fxla.sum %[[T]] {dims = [1], keepdim = false} : tensor<5x4xf32> -> tensor<5xf32>
# CHECK:         fxla.mean
# CHECK-NOT:     fxla.gather
@case(F.cross_entropy, t(5, 4), t(5, 4), variant="probabilities")
def cross_entropy_probabilities(x, p):
    return F.cross_entropy(x, p)


# Input and target in [0, 1] (NaN fails, as in torch) are two value checks; the program also returns their code.
# CHECK-LABEL: case torch.nn.functional.binary_cross_entropy:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[T:.+]]: tensor<3x4xf32>) -> (tensor<f32>, tensor<i32>)
# CHECK:         fxla.ge %[[X]], %{{.+}} : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xi1>
# CHECK:         %[[X_OK:.+]] = fxla.all %{{.+}} {dims = [], keepdim = false} : tensor<3x4xi1> -> tensor<i1>
# CHECK:         fxla.ge %[[T]], %{{.+}} : tensor<3x4xf32>, tensor<f32> -> tensor<3x4xi1>
# CHECK:         %[[T_OK:.+]] = fxla.all %{{.+}} {dims = [], keepdim = false} : tensor<3x4xi1> -> tensor<i1>
# CHECK:         %[[FLOOR:.+]] = fxla.constant {value = dense<-1.000000e+02> : tensor<f32>}
# CHECK:         %[[LOG:.+]] = fxla.log
# CHECK:         fxla.maximum %[[LOG]], %[[FLOOR]]
# CHECK:         fxla.mean
@case(F.binary_cross_entropy, t(3, 4), t(3, 4))
def bce(x, y):
    return F.binary_cross_entropy(x, y)


# (1 - t) x - (1 + (pos_weight - 1) t) logsigmoid(x); pos_weight broadcasts over the last dim
# CHECK-LABEL: case torch.nn.functional.binary_cross_entropy_with_logits:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[T:.+]]: tensor<3x4xf32>, %[[P:.+]]: tensor<4xf32>)
# CHECK:         %[[LS:.+]] = fxla.logsigmoid %[[X]]
# CHECK:         fxla.sub %[[P]], %{{.+}} : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
# CHECK:         %[[L:.+]] = fxla.sub
# CHECK-NEXT:    return %[[L]] : tensor<3x4xf32>
@case(F.binary_cross_entropy_with_logits, t(3, 4), t(3, 4), t(4))
def bce_logits(x, y, w):
    return F.binary_cross_entropy_with_logits(x, y, pos_weight=w, reduction="none")


# 0 · log 0 is 0 (log of a where), and batchmean divides the sum by the batch size, 3
# CHECK-LABEL: case torch.nn.functional.kl_div:
# CHECK:         %[[POS:.+]] = fxla.gt
# CHECK:         %[[SAFE:.+]] = fxla.where %[[POS]], %{{.+}}, %{{.+}}
# CHECK:         fxla.log %[[SAFE]]
# CHECK:         %[[N:.+]] = fxla.constant {value = dense<3.000000e+00> : tensor<f32>}
# CHECK:         fxla.div %{{.+}}, %[[N]]
@case(F.kl_div, t(3, 4), t(3, 4))
def kl_div(x, y):
    return F.kl_div(x, y, reduction="batchmean")


# CHECK-LABEL: case torch.nn.MSELoss:
# CHECK:         %[[D:.+]] = fxla.sub
# CHECK:         %[[SQ:.+]] = fxla.mul %[[D]], %[[D]]
# CHECK:         fxla.sum %[[SQ]]
@case(nn.MSELoss, t(3, 4), t(3, 4))
def mse_module():
    return nn.MSELoss(reduction="sum")


# CHECK-LABEL: case torch.nn.L1Loss:
# CHECK:         %[[A:.+]] = fxla.abs
# CHECK:         fxla.mean %[[A]]
@case(nn.L1Loss, t(3, 4), t(3, 4))
def l1_module():
    return nn.L1Loss()


# beta = 0 is the L1 loss
# CHECK-LABEL: case torch.nn.SmoothL1Loss:
# CHECK:         %[[A:.+]] = fxla.abs
# CHECK-NEXT:    fxla.mean %[[A]]
# CHECK-NOT:     fxla.where
@case(nn.SmoothL1Loss, t(3, 4), t(3, 4))
def smooth_l1_module():
    return nn.SmoothL1Loss(beta=0.0)


# CHECK-LABEL: case torch.nn.HuberLoss:
# CHECK:         fxla.constant {value = dense<2.500000e-01> : tensor<f32>}
# CHECK:         fxla.lt
# CHECK:         fxla.where
# CHECK:         fxla.mean
@case(nn.HuberLoss, t(3, 4), t(3, 4))
def huber_module():
    return nn.HuberLoss(delta=0.5)


# CHECK-LABEL: case torch.nn.NLLLoss:
# CHECK:         fxla.constant {value = dense<2> : tensor<i64>}
# CHECK:         %[[KEEP:.+]] = fxla.ne
# CHECK:         fxla.convert %[[KEEP]] : tensor<5xi1> -> tensor<5xf32>
# CHECK:         %[[L:.+]] = fxla.neg
# CHECK-NEXT:    return %[[L]] : tensor<5xf32>
@case(nn.NLLLoss, t(5, 4), idx(5, high=4))
def nll_module():
    return nn.NLLLoss(ignore_index=2, reduction="none")


# (1 - 0.1) * nll + 0.1 / 4 * smooth, both averaged over the counted class weights (the module's weight buffer)
# CHECK-LABEL: case torch.nn.CrossEntropyLoss:
# CHECK:         func.func @main(%{{.+}}: tensor<5x4xf32>, %{{.+}}: tensor<5xi64>, %[[W:.+]]: tensor<4xf32> {fxla.param = "mod.weight"})
# CHECK:         fxla.reshape %[[W]] {shape = [1, 4]}
# CHECK:         fxla.constant {value = dense<0.899999976> : tensor<f32>}
# CHECK:         fxla.constant {value = dense<2.500000e-02> : tensor<f32>}
# CHECK:         fxla.add
@case(nn.CrossEntropyLoss, t(5, 4), idx(5, high=4))
def cross_entropy_module():
    return nn.CrossEntropyLoss(weight=torch.ones(4), label_smoothing=0.1)


# CHECK-LABEL: case torch.nn.BCELoss:
# CHECK:         func.func @main(%{{.+}}: tensor<3x4xf32>, %{{.+}}: tensor<3x4xf32>, %[[W:.+]]: tensor<4xf32> {fxla.param = "mod.weight"})
# CHECK:         %[[L:.+]] = fxla.mul %{{.+}}, %[[W]] : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
# CHECK:         fxla.sum %[[L]]
@case(nn.BCELoss, t(3, 4), t(3, 4))
def bce_module():
    return nn.BCELoss(weight=torch.ones(4), reduction="sum")


# CHECK-LABEL: case torch.nn.BCEWithLogitsLoss:
# CHECK:         fxla.logsigmoid
# CHECK:         %[[L:.+]] = fxla.sub
# CHECK-NEXT:    fxla.mean %[[L]]
@case(nn.BCEWithLogitsLoss, t(3, 4), t(3, 4))
def bce_logits_module():
    return nn.BCEWithLogitsLoss()


# log targets: exp(t) * (t - x)
# CHECK-LABEL: case torch.nn.KLDivLoss:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[T:.+]]: tensor<3x4xf32>)
# CHECK:         %[[E:.+]] = fxla.exp %[[T]]
# CHECK:         %[[D:.+]] = fxla.sub %[[T]], %[[X]]
# CHECK:         fxla.mul %[[E]], %[[D]]
# CHECK-NOT:     fxla.log
@case(nn.KLDivLoss, t(3, 4), t(3, 4))
def kl_div_module():
    return nn.KLDivLoss(reduction="sum", log_target=True)


# max(0, -y (a - b) + margin) as aten's clamp_min (its gradient at 0 is the whole one, not maximum's half)
# CHECK-LABEL: case torch.nn.functional.margin_ranking_loss:
# CHECK:         func.func @main(%[[A:.+]]: tensor<5xf32>, %[[B:.+]]: tensor<5xf32>, %[[Y:.+]]: tensor<5xf32>)
# CHECK:         %[[NY:.+]] = fxla.neg %[[Y]]
# CHECK:         %[[D:.+]] = fxla.sub %[[A]], %[[B]]
# CHECK:         fxla.mul %[[NY]], %[[D]]
# CHECK:         fxla.constant {value = dense<5.000000e-01> : tensor<f32>}
# CHECK:         fxla.clamp
# CHECK-NOT:     fxla.maximum
@case(F.margin_ranking_loss, t(5), t(5), t(5))
def margin_ranking(a, b, y):
    return F.margin_ranking_loss(a, b, y, margin=0.5)


# x where y != -1, plus max(0, margin - x) where y != 1
# CHECK-LABEL: case torch.nn.functional.hinge_embedding_loss:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xf32>) -> tensor<3x4xf32>
# CHECK:         %[[NOTPOS:.+]] = fxla.ne %[[Y]], %{{.+}}
# CHECK:         %[[NOTNEG:.+]] = fxla.ne %[[Y]], %{{.+}}
# CHECK:         fxla.where %[[NOTPOS]], %{{.+}}, %{{.+}}
# CHECK:         fxla.where %[[NOTNEG]], %[[X]], %{{.+}}
@case(F.hinge_embedding_loss, t(3, 4), t(3, 4))
def hinge_embedding(x, y):
    return F.hinge_embedding_loss(x, y, reduction="none")


# log1p(exp(-x y)), as aten computes it
# CHECK-LABEL: case torch.nn.functional.soft_margin_loss:
# CHECK:         %[[Z:.+]] = fxla.neg
# CHECK:         %[[E:.+]] = fxla.exp %[[Z]]
# CHECK:         %[[L:.+]] = fxla.log1p %[[E]]
# CHECK:         fxla.mean %[[L]]
@case(F.soft_margin_loss, t(3, 4), t(3, 4))
def soft_margin(x, y):
    return F.soft_margin_loss(x, y)


# averaged over the classes (the last dim, size 4) per sample
# CHECK-LABEL: case torch.nn.functional.multilabel_soft_margin_loss:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %{{.+}}: tensor<3x4xf32>) -> tensor<3xf32>
# CHECK:         fxla.logsigmoid %[[X]]
# CHECK:         %[[S:.+]] = fxla.sum %{{.+}} {dims = [1], keepdim = false} : tensor<3x4xf32> -> tensor<3xf32>
# CHECK:         %[[C:.+]] = fxla.constant {value = dense<4.000000e+00> : tensor<f32>}
# CHECK:         fxla.div %[[S]], %[[C]]
@case(F.multilabel_soft_margin_loss, t(3, 4), t(3, 4))
def multilabel_soft_margin(x, y):
    return F.multilabel_soft_margin_loss(x, y, reduction="none")


# cos = <a, b> / sqrt((|a|² + 1e-12)(|b|² + 1e-12)); 1 - cos where y == 1, max(0, cos - margin) where y == -1
# CHECK-LABEL: case torch.nn.functional.cosine_embedding_loss:
# CHECK:         func.func @main(%{{.+}}: tensor<3x4xf32>, %{{.+}}: tensor<3x4xf32>, %[[Y:.+]]: tensor<3xf32>)
# CHECK:         fxla.constant {value = dense<9.99999996E-13> : tensor<f32>}
# CHECK:         %[[R:.+]] = fxla.sqrt
# CHECK:         %[[COS:.+]] = fxla.div %{{.+}}, %[[R]] : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
# CHECK:         fxla.eq %[[Y]], %{{.+}}
# CHECK:         fxla.mean
@case(F.cosine_embedding_loss, t(3, 4), t(3, 4), t(3))
def cosine_embedding(a, b, y):
    return F.cosine_embedding_loss(a, b, y, margin=0.2)


# swap: d(a, n) becomes min(d(a, n), d(p, n))
# CHECK-LABEL: case torch.nn.functional.triplet_margin_loss:
# CHECK:         fxla.sqrt
# CHECK:         %[[DAP:.+]] = fxla.where
# CHECK:         fxla.sqrt
# CHECK:         %[[DAN:.+]] = fxla.where
# CHECK:         fxla.sqrt
# CHECK:         %[[DPN:.+]] = fxla.where
# CHECK:         fxla.minimum %[[DAN]], %[[DPN]] : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
# CHECK:         fxla.clamp
@case(F.triplet_margin_loss, t(3, 4), t(3, 4), t(3, 4))
def triplet_margin(a, p, n):
    return F.triplet_margin_loss(a, p, n, swap=True, reduction="none")


# exp(x) - t x, plus Stirling's term t log t - t + log(2 pi t) / 2 where t > 1
# CHECK-LABEL: case torch.nn.functional.poisson_nll_loss:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[T:.+]]: tensor<3x4xf32>)
# CHECK:         fxla.exp %[[X]]
# CHECK:         %[[BIG:.+]] = fxla.gt %[[T]], %{{.+}}
# CHECK:         fxla.constant {value = dense<6.28318548> : tensor<f32>}
# CHECK:         fxla.mean
@case(F.poisson_nll_loss, t(3, 4), t(3, 4))
def poisson_nll(x, y):
    return F.poisson_nll_loss(x, y, full=True)


# max(0, margin - x[y] + x[j])², j == y masked out by comparing an iota with y, averaged over 4 classes
# CHECK-LABEL: case torch.nn.functional.multi_margin_loss:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[I:.+]]: tensor<3xi64>) -> tensor<3xf32>
# CHECK:         %[[Y:.+]] = fxla.reshape %[[I]] {shape = [3, 1]}
# CHECK:         fxla.gather %[[X]], %[[Y]] {dim = 1} : tensor<3x4xf32>, tensor<3x1xi64> -> tensor<3x1xf32>
# CHECK:         %[[J:.+]] = fxla.arange {start = {{.+}}, step = {{.+}}, length = 4}
# CHECK:         fxla.eq %[[J]], %[[Y]] : tensor<4xi64>, tensor<3x1xi64> -> tensor<3x4xi1>
@case(F.multi_margin_loss, t(3, 4), idx(3, high=4))
def multi_margin(x, i):
    return F.multi_margin_loss(x, i, p=2, reduction="none")


# CHECK-LABEL: case torch.nn.MarginRankingLoss:
# CHECK:         fxla.clamp
# CHECK:         fxla.sum
@case(nn.MarginRankingLoss, t(5), t(5), t(5))
def margin_ranking_module():
    return nn.MarginRankingLoss(reduction="sum")


# CHECK-LABEL: case torch.nn.HingeEmbeddingLoss:
# CHECK:         fxla.constant {value = dense<2.000000e+00> : tensor<f32>}
# CHECK:         fxla.where
# CHECK:         fxla.mean
@case(nn.HingeEmbeddingLoss, t(3, 4), t(3, 4))
def hinge_embedding_module():
    return nn.HingeEmbeddingLoss(margin=2.0)


# CHECK-LABEL: case torch.nn.SoftMarginLoss:
# CHECK:         %[[L:.+]] = fxla.log1p
# CHECK:         fxla.sum %[[L]]
@case(nn.SoftMarginLoss, t(3, 4), t(3, 4))
def soft_margin_module():
    return nn.SoftMarginLoss(reduction="sum")


# CHECK-LABEL: case torch.nn.MultiLabelSoftMarginLoss:
# CHECK:         func.func @main(%{{.+}}: tensor<3x4xf32>, %{{.+}}: tensor<3x4xf32>, %[[W:.+]]: tensor<4xf32> {fxla.param = "mod.weight"})
# CHECK:         fxla.mul %{{.+}}, %[[W]] : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
# CHECK:         fxla.mean
@case(nn.MultiLabelSoftMarginLoss, t(3, 4), t(3, 4))
def multilabel_soft_margin_module():
    return nn.MultiLabelSoftMarginLoss(weight=torch.ones(4))


# CHECK-LABEL: case torch.nn.CosineEmbeddingLoss:
# CHECK:         func.func @main(%{{.+}}: tensor<3x4xf32>, %{{.+}}: tensor<3x4xf32>, %{{.+}}: tensor<3xf32>) -> tensor<3xf32>
# CHECK:         %[[L:.+]] = fxla.add %{{.+}}, %{{.+}} : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
# CHECK-NEXT:    return %[[L]] : tensor<3xf32>
@case(nn.CosineEmbeddingLoss, t(3, 4), t(3, 4), t(3))
def cosine_embedding_module():
    return nn.CosineEmbeddingLoss(reduction="none")


# p = 1: the distance is a sum of absolute differences, no square root
# CHECK-LABEL: case torch.nn.TripletMarginLoss:
# CHECK:         fxla.abs
# CHECK-NOT:     fxla.sqrt
# CHECK:         fxla.mean
@case(nn.TripletMarginLoss, t(3, 4), t(3, 4), t(3, 4))
def triplet_margin_module():
    return nn.TripletMarginLoss(p=1.0, margin=0.5)


# log_input=False: x - t log(x + eps)
# CHECK-LABEL: case torch.nn.PoissonNLLLoss:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[T:.+]]: tensor<3x4xf32>) -> tensor<3x4xf32>
# CHECK:         %[[S:.+]] = fxla.add %[[X]], %{{.+}}
# CHECK:         fxla.log %[[S]]
# CHECK-NOT:     fxla.exp
@case(nn.PoissonNLLLoss, t(3, 4), t(3, 4))
def poisson_nll_module():
    return nn.PoissonNLLLoss(log_input=False, reduction="none")


# weight[y] per sample
# CHECK-LABEL: case torch.nn.MultiMarginLoss:
# CHECK:         func.func @main(%{{.+}}: tensor<3x4xf32>, %[[I:.+]]: tensor<3xi64>, %[[W:.+]]: tensor<4xf32> {fxla.param = "mod.weight"})
# CHECK:         fxla.index_select %[[W]], %[[I]] {dim = 0} : tensor<4xf32>, tensor<3xi64> -> tensor<3xf32>
# CHECK:         fxla.mean
@case(nn.MultiMarginLoss, t(3, 4), idx(3, high=4))
def multi_margin_module():
    return nn.MultiMarginLoss(weight=torch.ones(4))


# a row's target classes end at its first -1 (a cumprod of y != -1); pairs (target j, non-target i) over 4 classes
# CHECK-LABEL: case torch.nn.functional.multilabel_margin_loss:
# CHECK:         func.func @main(%[[X:.+]]: tensor<3x4xf32>, %[[Y:.+]]: tensor<3x4xi64>) -> tensor<f32>
# CHECK:         fxla.cumprod %{{.+}} {dim = 1} : tensor<3x4xi1> -> tensor<3x4xi64>
# CHECK:         fxla.any %{{.+}} {dims = [1], keepdim = false} : tensor<3x4x4xi1> -> tensor<3x4xi1>
# CHECK:         fxla.gather %[[X]], %{{.+}} {dim = 1} : tensor<3x4xf32>, tensor<3x4xi64> -> tensor<3x4xf32>
# CHECK:         fxla.sum %{{.+}} {dims = [1, 2], keepdim = false} : tensor<3x4x4xf32> -> tensor<3xf32>
# CHECK:         fxla.mean
@case(F.multilabel_margin_loss, t(3, 4), idx(3, 4, high=4))
def multilabel_margin(x, y):
    return F.multilabel_margin_loss(x, y)


# the default distance is pairwise_distance (p = 2)
# CHECK-LABEL: case torch.nn.functional.triplet_margin_with_distance_loss:
# CHECK:         fxla.sqrt
# CHECK:         fxla.sqrt
# CHECK:         fxla.constant {value = dense<5.000000e-01> : tensor<f32>}
# CHECK:         fxla.mean
@case(F.triplet_margin_with_distance_loss, t(3, 4), t(3, 4), t(3, 4))
def triplet_with_distance(a, p, n):
    return F.triplet_margin_with_distance_loss(a, p, n, margin=0.5)


# CHECK-LABEL: case torch.nn.MultiLabelMarginLoss:
# CHECK:         func.func @main(%{{.+}}: tensor<3x4xf32>, %{{.+}}: tensor<3x4xi64>) -> tensor<3xf32>
# CHECK:         %[[L:.+]] = fxla.div
# CHECK-NEXT:    return %[[L]] : tensor<3xf32>
@case(nn.MultiLabelMarginLoss, t(3, 4), idx(3, 4, high=4))
def multilabel_margin_module():
    return nn.MultiLabelMarginLoss(reduction="none")


# nn.PairwiseDistance(p=1) as the distance: absolute differences, no square root
# CHECK-LABEL: case torch.nn.TripletMarginWithDistanceLoss:
# CHECK:         fxla.abs
# CHECK-NOT:     fxla.sqrt
# CHECK:         fxla.mean
@case(nn.TripletMarginWithDistanceLoss, t(3, 4), t(3, 4), t(3, 4))
def triplet_with_distance_module():
    return nn.TripletMarginWithDistanceLoss(distance_function=nn.PairwiseDistance(p=1.0))


# The extended targets (blank, l1, blank, l2, blank: width 5), then one fxla.ctc_loss (the alpha recursion as one
# loop; its gradient is torch's ctc_loss backward): the per-sample losses are its first result.  Lengths given as
# tensors are value checks (fxla.lowering.value_checks): input lengths in [0, 4] (the steps), target lengths in
# [0, 2] (the padded width); the check code, the last result, is the number of the first that fails.
# CHECK-LABEL: case torch.nn.functional.ctc_loss:
# CHECK:         func.func @main(%[[X:.+]]: tensor<4x2x3xf32>, %{{.+}}: tensor<2x2xi64>, %[[IL:.+]]: tensor<2xi64>, %[[TL:.+]]: tensor<2xi64>) -> (tensor<2xf32>, tensor<i32>)
# CHECK:         %[[STEPS:.+]] = fxla.constant {value = dense<4> : tensor<i64>} : () -> tensor<i64>
# CHECK:         fxla.le %[[IL]], %[[STEPS]] : tensor<2xi64>, tensor<i64> -> tensor<2xi1>
# CHECK:         %[[INPUT_OK:.+]] = fxla.all %{{.+}} {dims = [], keepdim = false} : tensor<2xi1> -> tensor<i1>
# CHECK:         %[[WIDTH:.+]] = fxla.constant {value = dense<2> : tensor<i64>} : () -> tensor<i64>
# CHECK:         fxla.le %[[TL]], %[[WIDTH]] : tensor<2xi64>, tensor<i64> -> tensor<2xi1>
# CHECK:         %[[TARGET_OK:.+]] = fxla.all %{{.+}} {dims = [], keepdim = false} : tensor<2xi1> -> tensor<i1>
# CHECK:         %[[EXT:.+]] = fxla.concat %{{.+}}, %{{.+}} {dim = 1} : tensor<2x4xi64>, tensor<2x1xi64> -> tensor<2x5xi64>
# CHECK-NEXT:    %[[L:.+]]:2 = fxla.ctc_loss %[[X]], %[[EXT]], %[[IL]], %[[TL]] {zero_infinity = false} : {{.+}} -> (tensor<2xf32>, tensor<4x2x5xf32>)
# CHECK:         %[[LATER:.+]] = fxla.where %[[TARGET_OK]], %{{.+}}, %{{.+}} : tensor<i1>, tensor<i32>, tensor<i32> -> tensor<i32>
# CHECK:         %[[CODE:.+]] = fxla.where %[[INPUT_OK]], %[[LATER]], %{{.+}} : tensor<i1>, tensor<i32>, tensor<i32> -> tensor<i32>
# CHECK-NEXT:    return %[[L]]#0, %[[CODE]] : tensor<2xf32>, tensor<i32>
@case(F.ctc_loss, t(4, 2, 3), idx(2, 2, high=2), idx(2, high=4), idx(2, high=2))
def ctc(x, y, il, tl):
    return F.ctc_loss(x, y + 1, il, tl, reduction="none")


# zero_infinity replaces inf by 0 (and makes those samples' gradient 0, as torch's); 'mean' divides each loss by
# its target length (at least 1) first
# CHECK-LABEL: case torch.nn.CTCLoss:
# CHECK:         %[[L:.+]]:2 = fxla.ctc_loss {{.+}} {zero_infinity = true}
# CHECK:         %[[INF:.+]] = fxla.eq %[[L]]#0, %{{.+}}
# CHECK:         %[[Z:.+]] = fxla.where %[[INF]], %{{.+}}, %[[L]]#0
# CHECK:         fxla.div %[[Z]], %{{.+}} : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
# CHECK:         fxla.mean
@case(nn.CTCLoss, t(4, 2, 3), idx(2, 2, high=2), idx(2, high=4), idx(2, high=2))
def ctc_module():
    return nn.CTCLoss(blank=2, zero_infinity=True)


# var is clamped at eps (a detached clamp: torch clamps under no_grad, so var's gradient passes), then
# (log(var) + (x - t)² / var) / 2; var one dim short of the input gets it back.  No negative var is a value
# check (torch raises): the program's last result is its check code.
# CHECK-LABEL: case torch.nn.functional.gaussian_nll_loss:
# CHECK:         func.func @main(%{{.+}}: tensor<3x4xf32>, %{{.+}}: tensor<3x4xf32>, %[[V:.+]]: tensor<3xf32>) -> (tensor<3x4xf32>, tensor<i32>)
# CHECK:         %[[NEG:.+]] = fxla.lt %[[V]], %{{.+}} : tensor<3xf32>, tensor<f32> -> tensor<3xi1>
# CHECK:         %[[NONNEG:.+]] = fxla.logical_not %[[NEG]] : tensor<3xi1> -> tensor<3xi1>
# CHECK:         %[[OK:.+]] = fxla.all %[[NONNEG]] {dims = [], keepdim = false} : tensor<3xi1> -> tensor<i1>
# CHECK:         %[[V1:.+]] = fxla.reshape %[[V]] {shape = [3, 1]}
# CHECK:         %[[VC:.+]] = fxla.maximum %[[V1]], %{{.+}}
# CHECK:         fxla.detach %[[VC]]
# CHECK:         %[[VAR:.+]] = fxla.where
# CHECK:         fxla.log %[[VAR]]
# CHECK:         fxla.constant {value = dense<0.918938517> : tensor<f32>}
# CHECK:         %[[CODE:.+]] = fxla.where %[[OK]], %{{.+}}, %{{.+}} : tensor<i1>, tensor<i32>, tensor<i32> -> tensor<i32>
# CHECK:         return %{{.+}}, %[[CODE]] : tensor<3x4xf32>, tensor<i32>
@case(F.gaussian_nll_loss, t(3, 4), t(3, 4), t(3))
def gaussian_nll(x, y, v):
    return F.gaussian_nll_loss(x, y, v, full=True, reduction="none")


# CHECK-LABEL: case torch.nn.GaussianNLLLoss:
# CHECK:         fxla.constant {value = dense<1.000000e-01> : tensor<f32>}
# CHECK:         fxla.log
# CHECK-NOT:     fxla.constant {value = dense<0.918938517> : tensor<f32>}
# CHECK:         fxla.mean
@case(nn.GaussianNLLLoss, t(3, 4), t(3, 4), t(3, 4))
def gaussian_nll_module():
    return nn.GaussianNLLLoss(eps=0.1)
