"""Family ``im2col`` (lowering/rules/im2col.py) against eager: F.unfold / nn.Unfold and F.fold / nn.Fold.
The harness is tests/test_ops.py."""
from __future__ import annotations

from functools import partial

import pytest
import torch.nn as nn
import torch.nn.functional as F
from test_ops import BF16, F32, add_case, params_of, run_case, t

CASES = []
case = partial(add_case, CASES)


# -- unfold (im2col) / fold (col2im) ---------------------------------------------------------------------------
case((F.unfold, F.fold), "unfold_fold",
     lambda x, y: (F.unfold(x, 2), F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
                   F.unfold(x[0], 3, padding=1), F.fold(y, (4, 5), 2), F.fold(y[0], (4, 5), 2),
                   F.fold(F.unfold(x, 3, padding=1, stride=2), (6, 7), 3, padding=1, stride=2)),
     t(2, 3, 6, 7), t(2, 12, 12), dtypes=(F32, BF16), tol=2)
case(nn.Unfold, "nn.Unfold", lambda: nn.Unfold((2, 2), stride=2), t(1, 2, 4, 6), module=True)
case(nn.Fold, "nn.Fold", lambda: nn.Fold((3, 4), 2, dilation=(1, 2)), t(2, 8, 4), module=True)


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)
