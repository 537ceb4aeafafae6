"""The CI subset of the model zoo (utils/zoo, issue 18): one model per family through each of fxla's three routes.

Each (model, route) either matches eager PyTorch (``utils.zoo.harness.run_route``: every output tensor, float32
at 1e-4) or fails with the error :data:`KNOWN_FAILURES` names -- a failure class of issue 18 still open.  So a
regression (a route that worked now fails, or fails differently) and a fix (a known failure that now matches
eager: remove its entry) both fail this test.  A wrong answer is never a known failure.

``make zoo`` runs the whole zoo and writes docs/zoo.md; this file is what ``make test`` runs of it.
"""
import functools
import os
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.append(ROOT)

from utils.zoo import BY_NAME  # noqa: E402
from utils.zoo.harness import ROUTES, eager_reference, run_route  # noqa: E402

pytestmark = pytest.mark.slow

#: one model per family: the cheapest to compile of each
MODELS = {
    "hf-encoder": "hf_distilbert",
    "hf-decoder": "hf_llama",
    "torchvision": "tv_regnet",
    "timm": "timm_vit",
    "core": "nn_transformer_encoder",
}

#: (model, route) -> a substring of ``"<ErrorClass>: <first line of the message>"`` that it fails with today, and
#: the failure class of issue 18 it belongs to.  Remove an entry when its route starts matching eager.
KNOWN_FAILURES: dict = {}      # none left in this subset


@functools.lru_cache(maxsize=None)
def _reference(name):
    want, note = eager_reference(BY_NAME[name])
    assert note is None, note
    return want


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("family", list(MODELS))
def test_zoo_model_matches_eager_or_fails_as_known(family, route):
    name = MODELS[family]
    entry = BY_NAME[name]
    assert entry.family == family
    result = run_route(entry, route, _reference(name), timing=False)
    got = f"{result.error_class}: {result.message}"
    known = KNOWN_FAILURES.get((name, route))
    if known is None:
        assert result.status == "ok", f"{name} via {route}: {result.status}: {got} (at {result.where})"
        return
    match, issue_class = known
    assert result.status != "ok", (f"{name} via {route} now matches eager: remove it from KNOWN_FAILURES "
                                   f"(issue 18, {issue_class})")
    assert result.status == "error" and match in got, \
        f"{name} via {route} fails differently from KNOWN_FAILURES ({match!r}, {issue_class}): {result.status}: {got}"


def test_known_failures_name_zoo_models_and_routes():
    for (name, route), (match, issue_class) in KNOWN_FAILURES.items():
        assert name in MODELS.values() and route in ROUTES, (name, route)
        assert match and issue_class.startswith("class "), (name, route)


def test_zoo_has_every_family_the_issue_asks_for():
    from utils.zoo import ENTRIES
    count = lambda prefix: sum(e.family.startswith(prefix) for e in ENTRIES)  # noqa: E731
    assert len(ENTRIES) >= 60
    assert count("hf") >= 25 and count("torchvision") >= 12 and count("timm") >= 15 and count("core") >= 4


def test_comparison_refuses_a_wrong_answer():
    from utils.zoo.harness import compare
    want = {"logits": torch.ones(2, 3), "ids": torch.arange(3)}
    assert compare(dict(want), want)[0]
    assert not compare({"logits": torch.ones(2, 3) * (1 + 3e-4), "ids": torch.arange(3)}, want)[0]
    assert not compare({"logits": torch.ones(2, 3), "ids": torch.arange(3) + 1}, want)[0]
    assert not compare({"logits": torch.ones(2, 3)}, want)[0]
    assert not compare({"logits": torch.ones(2, 3).double(), "ids": torch.arange(3)}, want)[0]
    nan, inf = float("nan"), float("inf")
    assert compare((torch.tensor([nan, inf, 1.0]),), (torch.tensor([nan, inf, 1.0]),))[0]
    assert not compare((torch.tensor([nan]),), (torch.tensor([1.0]),))[0]
    assert not compare((torch.tensor([-inf]),), (torch.tensor([inf]),))[0]
    assert not compare((torch.tensor([1.0]),), (torch.tensor([nan]),))[0]


def test_latency_summary_compares_routes_on_the_same_models():
    """``make zoo --routes compile,inductor``'s latency table: each route's geometric mean of latency vs eager,
    over only the models every timed route ran correctly (a model one route failed is left out of both)."""
    from utils.zoo.harness import RouteResult
    from utils.zoo.run import latency_summary

    def r(model, route, compiled, status="ok"):
        return RouteResult(model, route, status, eager_s=1.0, compiled_s=compiled)
    results = [r("a", "compile", 0.5), r("a", "inductor", 2.0), r("b", "compile", 2.0), r("b", "inductor", 0.5),
               r("c", "compile", 0.1), r("c", "inductor", 9.0, status="mismatch")]
    text = "\n".join(latency_summary(results, ["compile", "inductor"]))
    assert "over the 2 models" in text
    assert "| compile | 1.00× | 1 of 2 |" in text and "| inductor | 1.00× | 1 of 2 |" in text
    assert latency_summary([RouteResult("a", "compile", "ok")], ["compile"]) == []
