"""Symbolic sizes never trade a check for a wrong answer (issue #21; a review of 2026-12-06): where a rule or meta
result computes with a symbolic size, what eager checks at that size (an index in range, blocks of at least one, a
state's shape) is a guard of the program or an error, and factors computed from sizes equal the static program's
bit for bit.  The oracle is eager PyTorch, and the static program where they must agree exactly."""
from __future__ import annotations

import torch
import torch.nn.functional as F

import fxla


def test_list_indices_through_the_torch_compile_backend():
    """dynamo keeps lists as torch.fx's immutable_list: converted to a tuple, x[[-1, 1]] read one element."""
    def pick(x):
        return x[[-1, 1]] * 2, x[[0, 1], [1, 0]], x[:, [1, 0]]
    for dynamic in (False, True):
        compiled = torch.compile(pick, backend="fxla", dynamic=dynamic)
        for n in (8, 6):
            x = torch.arange(2.0 * n).reshape(n, 2)
            for got, want in zip(compiled(x), pick(x)):
                assert torch.equal(got, want)
