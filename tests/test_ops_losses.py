"""Families ``losses`` and ``ctc`` (lowering/rules/losses.py, lowering/rules/ctc.py) against eager: every reduction,
class weights, ignore_index, label smoothing, class probabilities, spatial (N, C, d1, ...) inputs, pos_weight,
log targets, CTC; and the errors of invalid options.
The harness is tests/test_ops.py."""
from __future__ import annotations

import ast
import inspect
import textwrap
from functools import partial

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxla
from fxla.frontend.proxy import _DROPPED_ARGUMENTS
from test_ops import BF16, F16, F32, F64, add_case, index, params_of, run_case, t

CASES = []
case = partial(add_case, CASES)


class Pair(nn.Module):
    """A loss module called on (input, target), recorded as one call_module node."""

    def __init__(self, loss: nn.Module, prepare=None):
        super().__init__()
        self.loss = loss
        self.prepare = prepare

    def forward(self, x, y):
        if self.prepare is not None:
            x, y = self.prepare(x, y)
        return self.loss(x, y)


def _ignored(target, every=3):
    """Some targets set to torch's default ignore_index (-100)."""
    return target.masked_fill(target % every == 0, -100)


# -- regression -------------------------------------------------------------------------------------------------
case(F.mse_loss, "F.mse_loss",
     lambda x, y, w: (F.mse_loss(x, y), F.mse_loss(x, y, reduction="sum"), F.mse_loss(x, y, reduction="none"),
                      F.mse_loss(x[0], y), F.mse_loss(x, y, weight=w.abs()),
                      F.mse_loss(x, y, weight=w.abs(), reduction="sum"), F.mse_loss(x, y, size_average=False)),
     t(3, 4), t(3, 4), t(3, 4), dtypes=(F32, BF16, F16), tol=2.0)
case(F.l1_loss, "F.l1_loss",
     lambda x, y, w: (F.l1_loss(x, y), F.l1_loss(x, y, reduction="none"), F.l1_loss(x, y, weight=w.abs()),
                      F.l1_loss(x, y, reduce=False)),
     t(2, 3, 4), t(2, 3, 4), t(2, 3, 4), dtypes=(F32, BF16))
case(F.smooth_l1_loss, "F.smooth_l1_loss",
     lambda x, y: (F.smooth_l1_loss(x, y), F.smooth_l1_loss(x, y, beta=0.5, reduction="sum"),
                   F.smooth_l1_loss(x, y, beta=0.0, reduction="none"), F.smooth_l1_loss(x, y, beta=2.0)),
     t(4, 5), t(4, 5), dtypes=(F32, BF16))
case(F.huber_loss, "F.huber_loss",
     lambda x, y, w: (F.huber_loss(x, y), F.huber_loss(x, y, delta=0.3, reduction="none"),
                      F.huber_loss(x, y, delta=2.0, reduction="sum"), F.huber_loss(x, y, weight=w.abs())),
     t(4, 5), t(4, 5), t(4, 5), dtypes=(F32, BF16))

# -- classification ---------------------------------------------------------------------------------------------
case(F.nll_loss, "F.nll_loss",
     lambda x, i, w: (F.nll_loss(x.log_softmax(1), i), F.nll_loss(x, _ignored(i), reduction="none"),
                      F.nll_loss(x, _ignored(i), weight=w.abs() + 0.1), F.nll_loss(x, i, reduction="sum"),
                      F.nll_loss(x, i, weight=w.abs(), ignore_index=2, reduction="sum"), F.nll_loss(x[0], i[0])),
     t(6, 5), index(6, high=5), t(5), dtypes=(F32, BF16))
case(F.nll_loss, "F.nll_loss_spatial",
     lambda x, i: (F.nll_loss(x, i), F.nll_loss(x, _ignored(i), reduction="none"), F.nll_loss(x, i, ignore_index=0)),
     t(2, 4, 3, 5), index(2, 3, 5, high=4))
case(F.cross_entropy, "F.cross_entropy",
     lambda x, i, w: (F.cross_entropy(x, i), F.cross_entropy(x, _ignored(i), reduction="none"),
                      F.cross_entropy(x, _ignored(i), weight=w.abs() + 0.1),
                      F.cross_entropy(x, i, reduction="sum", ignore_index=1), F.cross_entropy(x[0], i[0])),
     t(6, 5), index(6, high=5), t(5), dtypes=(F32, BF16))
case(F.cross_entropy, "F.cross_entropy_label_smoothing",
     lambda x, i, w: (F.cross_entropy(x, _ignored(i), label_smoothing=0.1),
                      F.cross_entropy(x, _ignored(i), weight=w.abs() + 0.1, label_smoothing=0.25),
                      F.cross_entropy(x, i, label_smoothing=0.2, reduction="sum"),
                      F.cross_entropy(x, _ignored(i), weight=w.abs() + 0.1, label_smoothing=0.3, reduction="none"),
                      F.cross_entropy(x, i, label_smoothing=1.0)),
     t(6, 5), index(6, high=5), t(5))
case(F.cross_entropy, "F.cross_entropy_probabilities",
     lambda x, y, w: (F.cross_entropy(x, y.softmax(1)), F.cross_entropy(x, y.softmax(1), reduction="none"),
                      F.cross_entropy(x, y.softmax(1), weight=w.abs(), label_smoothing=0.2, reduction="sum"),
                      F.cross_entropy(x[0], y[0].softmax(0))),
     t(4, 5), t(4, 5), t(5))
case(F.cross_entropy, "F.cross_entropy_spatial",
     lambda x, i, y: (F.cross_entropy(x, _ignored(i)), F.cross_entropy(x, i, label_smoothing=0.1, reduction="none"),
                      F.cross_entropy(x, y.softmax(1))),
     t(2, 3, 4, 4), index(2, 4, 4, high=3), t(2, 3, 4, 4))

# -- binary cross-entropy, KL divergence --------------------------------------------------------------------------
case(F.binary_cross_entropy, "F.binary_cross_entropy",
     lambda x, y, w: (F.binary_cross_entropy(x.sigmoid(), (y > 0).to(x.dtype)),
                      F.binary_cross_entropy(x.sigmoid(), y.sigmoid(), reduction="none"),
                      F.binary_cross_entropy(x.sigmoid(), y.sigmoid(), weight=w.abs(), reduction="sum"),
                      F.binary_cross_entropy((x * 40).sigmoid(), (y > 0).to(x.dtype))),        # log clamped at -100
     t(3, 4), t(3, 4), t(4), dtypes=(F32, BF16), tol=2.0)
case(F.binary_cross_entropy_with_logits, "F.binary_cross_entropy_with_logits",
     lambda x, y, w: (F.binary_cross_entropy_with_logits(x, (y > 0).to(x.dtype)),
                      F.binary_cross_entropy_with_logits(x * 30, y.sigmoid(), reduction="none"),
                      F.binary_cross_entropy_with_logits(x, y.sigmoid(), pos_weight=w.abs() + 0.5),
                      F.binary_cross_entropy_with_logits(x, y.sigmoid(), weight=w.abs(), pos_weight=w.abs() + 0.5,
                                                         reduction="sum")),
     t(3, 4), t(3, 4), t(4), dtypes=(F32, BF16))
case(F.kl_div, "F.kl_div",
     lambda x, y: (F.kl_div(x.log_softmax(1), y.softmax(1), reduction="batchmean"),
                   F.kl_div(x.log_softmax(1), y.log_softmax(1), reduction="sum", log_target=True),
                   F.kl_div(x.log_softmax(1), y.softmax(1) * (y > 0), reduction="none"),          # 0 · log 0 = 0
                   F.kl_div(x.log_softmax(1), y.softmax(1), reduction="batchmean", log_target=False)),
     t(3, 5), t(3, 5), dtypes=(F32, BF16))

# -- modules ----------------------------------------------------------------------------------------------------
case(nn.MSELoss, "nn.MSELoss", Pair(nn.MSELoss(reduction="sum")), t(3, 4), t(3, 4))
case(nn.L1Loss, "nn.L1Loss", Pair(nn.L1Loss(reduction="none")), t(3, 4), t(3, 4))
case(nn.SmoothL1Loss, "nn.SmoothL1Loss", Pair(nn.SmoothL1Loss(beta=0.4)), t(3, 4), t(3, 4))
case(nn.HuberLoss, "nn.HuberLoss", Pair(nn.HuberLoss(delta=0.6, reduction="sum")), t(3, 4), t(3, 4))
case(nn.NLLLoss, "nn.NLLLoss", Pair(nn.NLLLoss(weight=torch.tensor([0.5, 1.0, 2.0, 1.5]), ignore_index=2)),
     t(5, 4), index(5, high=4))
case(nn.CrossEntropyLoss, "nn.CrossEntropyLoss",
     Pair(nn.CrossEntropyLoss(weight=torch.tensor([0.5, 1.0, 2.0, 1.5]), label_smoothing=0.15),
          prepare=lambda x, i: (x, _ignored(i))),
     t(5, 4), index(5, high=4))
case(nn.BCELoss, "nn.BCELoss", Pair(nn.BCELoss(weight=torch.tensor([0.5, 1.0, 2.0])),
                                    prepare=lambda x, y: (x.sigmoid(), y.sigmoid())), t(2, 3), t(2, 3))
case(nn.BCEWithLogitsLoss, "nn.BCEWithLogitsLoss",
     Pair(nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.0, 3.0, 0.5]), reduction="none"),
          prepare=lambda x, y: (x, y.sigmoid())), t(2, 3), t(2, 3))
case(nn.KLDivLoss, "nn.KLDivLoss", Pair(nn.KLDivLoss(reduction="batchmean", log_target=True),
                                        prepare=lambda x, y: (x.log_softmax(1), y.log_softmax(1))), t(3, 4), t(3, 4))


class Triple(nn.Module):
    """A loss module called on three tensors, recorded as one call_module node."""

    def __init__(self, loss: nn.Module, prepare=None):
        super().__init__()
        self.loss = loss
        self.prepare = prepare

    def forward(self, x, y, z):
        if self.prepare is not None:
            x, y, z = self.prepare(x, y, z)
        return self.loss(x, y, z)


class Quad(nn.Module):
    """A loss module called on four tensors (nn.CTCLoss), recorded as one call_module node."""

    def __init__(self, loss: nn.Module, prepare=None):
        super().__init__()
        self.loss = loss
        self.prepare = prepare

    def forward(self, a, b, c, d):
        return self.loss(*self.prepare(a, b, c, d))


def _signs(y):
    """±1 targets of the margin and embedding losses."""
    return (y > 0).to(y.dtype) * 2 - 1


# -- margin, embedding and Poisson losses ---------------------------------------------------------------------------
case(F.margin_ranking_loss, "F.margin_ranking_loss",
     lambda a, b, y: (F.margin_ranking_loss(a, b, _signs(y)), F.margin_ranking_loss(a, b, _signs(y), margin=0.5,
                                                                                    reduction="none"),
                      F.margin_ranking_loss(a[:, 0], b[:, 0], _signs(y[:, 0]), margin=-0.2, reduction="sum")),
     t(4, 3), t(4, 3), t(4, 3), dtypes=(F32, BF16))
case(F.hinge_embedding_loss, "F.hinge_embedding_loss",
     lambda x, y: (F.hinge_embedding_loss(x, _signs(y)), F.hinge_embedding_loss(x, _signs(y), margin=0.3,
                                                                               reduction="none")),
     t(4, 5), t(4, 5), dtypes=(F32, BF16))
case(F.soft_margin_loss, "F.soft_margin_loss",
     lambda x, y: (F.soft_margin_loss(x, _signs(y)), F.soft_margin_loss(x * 30, _signs(y), reduction="none")),
     t(4, 5), t(4, 5), dtypes=(F32, BF16))
case(F.multilabel_soft_margin_loss, "F.multilabel_soft_margin_loss",
     lambda x, y, w: (F.multilabel_soft_margin_loss(x, (y > 0).to(x.dtype)),
                      F.multilabel_soft_margin_loss(x, y.sigmoid(), weight=w.abs(), reduction="none"),
                      F.multilabel_soft_margin_loss(x, (y > 0).to(x.dtype), reduction="sum")),
     t(4, 5), t(4, 5), t(5), dtypes=(F32, BF16))
case(F.cosine_embedding_loss, "F.cosine_embedding_loss",
     lambda a, b, y: (F.cosine_embedding_loss(a, b, _signs(y)), F.cosine_embedding_loss(a, b, _signs(y), margin=0.3,
                                                                                        reduction="none"),
                      F.cosine_embedding_loss(a[0], b[0], _signs(y[0]))),
     t(4, 6), t(4, 6), t(4))
case(F.triplet_margin_loss, "F.triplet_margin_loss",
     lambda a, p, n: (F.triplet_margin_loss(a, p, n), F.triplet_margin_loss(a, p, n, margin=0.5, p=1, reduction="none"),
                      F.triplet_margin_loss(a, p, n, swap=True, p=3, reduction="sum")),
     t(4, 6), t(4, 6), t(4, 6))
case(F.poisson_nll_loss, "F.poisson_nll_loss",
     lambda x, y: (F.poisson_nll_loss(x, y.abs() * 3), F.poisson_nll_loss(x.exp(), y.abs() * 3, log_input=False),
                   F.poisson_nll_loss(x, (y.abs() * 3).round(), full=True, reduction="none"),
                   F.poisson_nll_loss(x.exp(), y.abs() * 3, log_input=False, full=True, eps=1e-3, reduction="sum")),
     t(4, 5), t(4, 5))
case(F.multi_margin_loss, "F.multi_margin_loss",
     lambda x, i, w: (F.multi_margin_loss(x, i), F.multi_margin_loss(x, i, p=2, margin=0.5, reduction="none"),
                      F.multi_margin_loss(x, i, weight=w.abs(), reduction="sum"), F.multi_margin_loss(x[0], i[:1])),
     t(4, 5), index(4, high=5), t(5))
case(nn.MarginRankingLoss, "nn.MarginRankingLoss",
     Triple(nn.MarginRankingLoss(margin=0.2), prepare=lambda a, b, y: (a, b, _signs(y))), t(5), t(5), t(5))
case(nn.HingeEmbeddingLoss, "nn.HingeEmbeddingLoss",
     Pair(nn.HingeEmbeddingLoss(margin=2.0, reduction="sum"), prepare=lambda x, y: (x, _signs(y))), t(3, 4), t(3, 4))
case(nn.SoftMarginLoss, "nn.SoftMarginLoss", Pair(nn.SoftMarginLoss(), prepare=lambda x, y: (x, _signs(y))),
     t(3, 4), t(3, 4))
case(nn.MultiLabelSoftMarginLoss, "nn.MultiLabelSoftMarginLoss",
     Pair(nn.MultiLabelSoftMarginLoss(weight=torch.tensor([1.0, 0.5, 2.0, 1.5])),
          prepare=lambda x, y: (x, (y > 0).to(x.dtype))), t(3, 4), t(3, 4))
case(nn.CosineEmbeddingLoss, "nn.CosineEmbeddingLoss",
     Triple(nn.CosineEmbeddingLoss(margin=0.1, reduction="none"), prepare=lambda a, b, y: (a, b, _signs(y))),
     t(3, 4), t(3, 4), t(3))
case(nn.TripletMarginLoss, "nn.TripletMarginLoss", Triple(nn.TripletMarginLoss(margin=0.3, swap=True)),
     t(3, 4), t(3, 4), t(3, 4))
case(nn.PoissonNLLLoss, "nn.PoissonNLLLoss",
     Pair(nn.PoissonNLLLoss(full=True), prepare=lambda x, y: (x, (y.abs() * 3).round())), t(3, 4), t(3, 4))
case(nn.MultiMarginLoss, "nn.MultiMarginLoss",
     Pair(nn.MultiMarginLoss(p=2, weight=torch.tensor([1.0, 0.5, 2.0, 1.5]))), t(3, 4), index(3, high=4))
case(F.multilabel_margin_loss, "F.multilabel_margin_loss",
     lambda x, y: (F.multilabel_margin_loss(x, y.masked_fill(y == 2, -1)),                 # rows end at a -1
                   F.multilabel_margin_loss(x, y, reduction="none"),                         # no -1: every entry
                   F.multilabel_margin_loss(x[0], y[0].masked_fill(y[0] == 1, -1), reduction="sum")),
     t(4, 5), index(4, 5, high=5))                      # (torch has no bfloat16 kernel for it)
case(F.triplet_margin_with_distance_loss, "F.triplet_margin_with_distance_loss",
     lambda a, p, n: (F.triplet_margin_with_distance_loss(a, p, n),
                      F.triplet_margin_with_distance_loss(a, p, n, margin=0.3, swap=True, reduction="none"),
                      F.triplet_margin_with_distance_loss(a, p, n, distance_function=F.pairwise_distance)),
     t(4, 6), t(4, 6), t(4, 6))
case(nn.MultiLabelMarginLoss, "nn.MultiLabelMarginLoss",
     Pair(nn.MultiLabelMarginLoss(reduction="none"), prepare=lambda x, y: (x, y.masked_fill(y == 0, -1))),
     t(3, 4), index(3, 4, high=4))
case(nn.TripletMarginWithDistanceLoss, "nn.TripletMarginWithDistanceLoss",
     Triple(nn.TripletMarginWithDistanceLoss(distance_function=nn.PairwiseDistance(p=1.0, eps=1e-3), margin=0.4)),
     t(3, 4), t(3, 4), t(3, 4))
case(F.gaussian_nll_loss, "F.gaussian_nll_loss",
     lambda x, y, v: (F.gaussian_nll_loss(x, y, v.abs() + 0.1), F.gaussian_nll_loss(x, y, v.abs()[:, 0], full=True,
                                                                                   reduction="none"),
                      F.gaussian_nll_loss(x, y, v.abs()[:, :1], eps=0.2, reduction="sum"),
                      F.gaussian_nll_loss(x, y, 0.5)),
     t(4, 3), t(4, 3), t(4, 3), dtypes=(F32, BF16))
case(nn.GaussianNLLLoss, "nn.GaussianNLLLoss",
     Triple(nn.GaussianNLLLoss(full=True, eps=1e-3), prepare=lambda x, y, v: (x, y, v.abs())), t(3, 4), t(3, 4), t(3, 4))


# -- CTC ------------------------------------------------------------------------------------------------------------
def _ctc_args(x, y, i, j, steps=10, size=4):
    """log-probs [T, N, C], labels 1..C-1 (0 is the blank) whose first two repeat, input lengths T, T-1 or T-2
    and target lengths 0..S, the lengths drawn from index tensors."""
    labels = torch.cat([y[:, :1], y[:, :1], y[:, 2:]], dim=1) + 1
    return x.log_softmax(2), labels, steps - i % 3, j % (size + 1)


case(F.ctc_loss, "F.ctc_loss",
     lambda x, y, i, j: (F.ctc_loss(*_ctc_args(x, y, i, j)), F.ctc_loss(*_ctc_args(x, y, i, j), reduction="none"),
                         F.ctc_loss(*_ctc_args(x, y, i, j), reduction="sum", zero_infinity=True),
                         F.ctc_loss(x.log_softmax(2), y + 1, (10, 3, 8), (4, 2, 0), reduction="none"),      # 2nd: inf
                         F.ctc_loss(x.log_softmax(2), (y + 1).flatten()[:6], (10, 9, 8), (3, 2, 1)),       # concatenated
                         F.ctc_loss(x[:, 0].log_softmax(1), y[0, :3] + 1, (10,), (3,), reduction="none"),   # unbatched
                         F.ctc_loss(x.log_softmax(2), (y + 1).flatten()[:7], 10 - i % 3, torch.tensor([3, 0, 4]),
                                    reduction="none")),                        # concatenated, lengths as tensors
     t(10, 3, 5), index(3, 4, high=4), index(3, high=10), index(3, high=10))
case(F.ctc_loss, "F.ctc_loss_repeats_blank_last",
     lambda x: (F.ctc_loss(x.log_softmax(2), torch.tensor([[1, 1, 2], [3, 3, 3]]), (6, 6), (3, 3), blank=4,
                           reduction="none"),
                F.ctc_loss(x.log_softmax(2), torch.tensor([[2, 2, 2], [1, 0, 1]]), (6, 4), (3, 3), reduction="none"),
                F.ctc_loss(x.log_softmax(2), torch.zeros(2, 0, dtype=torch.long), (6, 5), (0, 0))),    # empty targets
     t(6, 2, 5), dtypes=(F32, F64))
case(nn.CTCLoss, "nn.CTCLoss",
     Quad(nn.CTCLoss(blank=0, zero_infinity=True), prepare=lambda x, y, i, j: _ctc_args(x, y, i, j)),
     t(10, 3, 5), index(3, 4, high=4), index(3, high=10), index(3, high=10))


def _dropped_by_torch_function(fn) -> list:
    """The parameters of a torch Python function that its handle_torch_function call does not pass on."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    fdef = tree.body[0]
    params = [a.arg for a in fdef.args.args + fdef.args.kwonlyargs]
    missing = []
    for node in ast.walk(fdef):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "handle_torch_function":
            passed = {a.id for a in node.args[2:] if isinstance(a, ast.Name)}
            passed |= {a.value.id for a in node.args[2:] if isinstance(a, ast.Starred) and isinstance(a.value, ast.Name)}
            passed |= {k.arg or "**" for k in node.keywords}
            if "**" not in passed:
                missing += [p for p in params if p not in passed and p not in missing]
    return missing


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)


@pytest.mark.parametrize("fn, message", [
    (lambda x, i: F.cross_entropy(x, i, reduction="avg"), "avg is not a valid value for reduction"),
    (lambda x, i: F.cross_entropy(x, i, label_smoothing=1.5), "label_smoothing must be between 0.0 and 1.0"),
    (lambda x, i: F.cross_entropy(x, i[:2]), "Expected input batch_size (3) to match target batch_size (2)"),
    (lambda x, i: F.nll_loss(x, i.float()), "expected scalar type Long"),
    (lambda x, i: F.smooth_l1_loss(x, x, beta=-1.0), "smooth_l1_loss does not support negative values for beta"),
    (lambda x, i: F.huber_loss(x, x, delta=0.0), "huber_loss does not support non-positive values for delta"),
    (lambda x, i: F.kl_div(x, x, reduction="avg"), "avg is not a valid value for reduction"),
    (lambda x, i: F.multi_margin_loss(x, i, p=3), "only p == 1 and p == 2 supported"),
    (lambda x, i: F.triplet_margin_with_distance_loss(x, x, x, distance_function=lambda u, v: (u - v).abs().sum(-1)),
     "fxla lowers pairwise distances (the default, nn.PairwiseDistance) only"),
], ids=["reduction", "label_smoothing", "target_shape", "float_target", "beta", "delta", "kl_reduction", "p",
        "distance_function"])
def test_invalid_options_fail_at_the_users_line_with_torchs_reason(fn, message):
    """torch's own checks run first (shape propagation calls the function on meta tensors); the one its meta
    function skips (smooth_l1_loss's beta) is the rule's, with torch's wording."""
    x, i = torch.randn(3, 4), torch.tensor([0, 3, 1])
    with pytest.raises(fxla.FxlaError) as err:
        fxla.compile(fn)(x, i)
    text = str(err.value)
    assert message in text and "test_ops_losses.py:" in text and "fix:" in text, text


def test_l1_loss_weight_survives_tracing():
    """torch 2.13's F.l1_loss drops ``weight`` on its way to __torch_function__; the tracer takes it back from
    the function's frame (fxla.frontend.proxy._DROPPED_ARGUMENTS), whichever name the function is called by."""
    from torch.nn.functional import l1_loss
    x, y, w = torch.randn(2, 3), torch.randn(2, 3), torch.rand(2, 3)
    for fn in (lambda x, y, w: F.l1_loss(x, y, weight=w), lambda x, y, w: l1_loss(x, y, None, None, "sum", w)):
        traced = fxla.symbolic_trace(fn)
        (node,) = [n for n in traced.graph.nodes if n.op == "call_function"]
        assert node.kwargs["weight"].name == "w"
        torch.testing.assert_close(fxla.compile(fn)(x, y, w), fn(x, y, w))


def test_every_argument_torch_function_overrides_lose_is_restored():
    """Scans torch.nn.functional: a torch upgrade that adds (or fixes) a dropped argument fails here, so the
    table in fxla.frontend.proxy stays exact."""
    found = {}
    for name in dir(F):
        fn = getattr(F, name)
        if inspect.isfunction(fn) and fn.__module__ == F.__name__:
            try:
                missing = _dropped_by_torch_function(fn)
            except (OSError, TypeError, SyntaxError):
                continue
            if missing:
                found[fn] = tuple(missing)
    assert found == _DROPPED_ARGUMENTS


def test_ctc_lengths_of_the_wrong_shape_are_an_error_at_the_users_line():
    """torch has no meta kernel for ctc_loss with tensor lengths, so this check is the rule's own."""
    x, y = torch.randn(6, 3, 4).log_softmax(2), torch.randint(1, 4, (3, 2))
    with pytest.raises(fxla.FxlaError) as err:
        fxla.compile(lambda x, y, i: F.ctc_loss(x, y, i, torch.tensor([2, 2, 2])))(x, y, torch.tensor([6, 6]))
    text = str(err.value)
    assert "ctc_loss: input_lengths of shape [2] for a batch of 3" in text and "test_ops_losses.py:" in text, text
    assert "fix: pass input_lengths of shape [3]" in text


def test_ctc_loss_is_one_loop_with_torchs_gradient():
    """F.ctc_loss's alpha recursion is one loop (the program does not grow with the time steps; it was unrolled,
    and Wav2Vec2 with labels took 15 s to compile), and its gradient is torch's ctc_loss backward: for raw
    (not log_softmax-normalised) log_probs too, where torch's formula keeps its exp(log_probs) term, for a sample
    with no alignment (NaN, as torch) and under zero_infinity (0)."""
    def loss(x, targets, input_lengths, target_lengths):
        return (F.ctc_loss(x.log_softmax(2), targets, input_lengths, target_lengths),
                F.ctc_loss(x, targets, input_lengths, target_lengths, reduction="sum", zero_infinity=True),
                F.ctc_loss(x, targets, input_lengths, target_lengths, reduction="none"))

    torch.manual_seed(0)
    fast = fxla.compile(loss)
    sizes = []
    for steps in (8, 300):
        targets = torch.randint(1, 6, (3, 5))
        targets[0, :3] = 2                                  # repeats: a blank must separate them
        lengths = (torch.tensor([steps, steps - 2, 3]), torch.tensor([5, 3, 4]))   # the third: no alignment
        x = torch.randn(steps, 3, 6)
        xs = [x.clone().requires_grad_(True) for _ in range(2)]
        results = [fn(xi, targets, *lengths) for fn, xi in ((loss, xs[0]), (fast, xs[1]))]
        for (a, b, c), xi in zip(results, xs):
            (a + b + c[:2].sum() + c[2]).backward()
        for got, want in zip(results[1], results[0]):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
        assert xs[0].grad[:3, 2].isnan().all()              # (eager: NaN over the impossible sample's steps)
        torch.testing.assert_close(xs[1].grad, xs[0].grad, rtol=1e-4, atol=1e-4, equal_nan=True)
        text = fast.lower(x, targets, *lengths).stablehlo
        assert text.count("stablehlo.while") == 2          # (one alpha loop per input: the raw x's two are one)
        sizes.append(text.count("\n"))
    assert sizes[0] == sizes[1]
