"""Gradients of every lowered op against torch.autograd: each float case of ``tests/test_ops_*.py`` (the numeric
cases of every lowering rule) is differentiated with respect to its float inputs and parameters
(tests/grad_support.py) through random cotangents of its float outputs."""
from __future__ import annotations

import pytest
import torch

from fxla.lowering.autodiff import NotDifferentiableError
from grad_support import check_grad
from test_ops import _build, all_cases, make

F32 = torch.float32

#: cases whose gradient fxla refuses (NotDifferentiableError naming the op) rather than compute differently
REFUSED = {"custom_autograd_function": "custom torch.autograd.Function",
           "unknown_history": r"contiguous\(\) under torch.no_grad\(\)"}

#: cases where eager's gradient is not the derivative of eager's own forward, or the two sides differentiate
#: different forwards: fxla's gradient is the derivative of the forward it computes (strict: a change shows)
KNOWN = {
    "F.embedding_bag_offsets": "torch's backward also credits the trailing rows include_last_offset leaves out "
                               "of the forward",
    "nn.EmbeddingBag_offsets_mean_last": "torch's backward also credits the trailing rows include_last_offset "
                                         "leaves out of the forward",
    "F.kl_div": "eager's gradient with respect to the target is NaN where the target is 0 (xlogy); fxla's is 0",
    "nn.MultiheadAttention_fully_masked_rows_weights": "a query whose every key is masked is NaN on both sides "
                                                        "(a plain softmax); eager adds the mask as -inf and "
                                                        "carries that NaN into the query's gradient, fxla selects "
                                                        "and gives it 0",
}


def _params():
    params = []
    for c in all_cases():
        if F32 in c.dtypes and F32 not in c.xfail:
            marks = [pytest.mark.xfail(strict=True, reason=KNOWN[c.name])] if c.name in KNOWN else []
            params.append(pytest.param(c, id=c.name.replace("/", "+"), marks=marks))
    return params


@pytest.mark.parametrize("case", _params())
def test_gradient_matches_eager(case):
    gen = torch.Generator().manual_seed(0)
    inputs = tuple(make(spec, F32, gen) for spec in case.inputs)
    fn = _build(case, F32)
    if case.name in REFUSED:
        with pytest.raises(NotDifferentiableError, match=REFUSED[case.name]):
            check_grad(fn, inputs, tol=case.tol)
        return
    check_grad(fn, inputs, tol=case.tol)
