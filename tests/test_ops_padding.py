"""Family ``padding`` (lowering/rules/padding.py) against eager: F.pad in every mode and the nn padding modules.
The harness is tests/test_ops.py."""
from __future__ import annotations

from functools import partial

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import fxla
from test_ops import BF16, BOOL, F16, F32, I64, add_case, params_of, run_case, t

CASES = []
case = partial(add_case, CASES)


# -- F.pad modes and the padding modules -------------------------------------------------------------------------
case(F.pad, "F.pad_reflect",
     lambda x, v: (F.pad(x, (2, 3), mode="reflect"), F.pad(x, (1, 0, 2, 2), mode="reflect"),
                   F.pad(x, (-1, 2), mode="reflect"), F.pad(v, (1, 2, 0, 1, 2, 1), mode="reflect"),
                   F.pad(x[0], (3, 3), mode="reflect")),
     t(2, 3, 5), t(1, 2, 3, 4, 5), dtypes=(F32, BF16, F16, I64))
case(F.pad, "F.pad_replicate",
     lambda x, v: (F.pad(x, (4, 1), mode="replicate"), F.pad(x, (1, 2, 3, 0), mode="replicate"),
                   F.pad(x, (-2, 1), mode="replicate"), F.pad(v, (2, 0, 1, 1, 0, 3), mode="replicate")),
     t(2, 3, 4), t(1, 2, 2, 3, 3), dtypes=(F32, BF16, I64))
case(F.pad, "F.pad_circular",
     lambda x, v: (F.pad(x, (2, 3), mode="circular"), F.pad(x, (4, 4, 1, 2), mode="circular"),
                   F.pad(x, (-1, 3), mode="circular"), F.pad(v, (1, 1, 2, 0, 1, 2), mode="circular")),
     t(2, 3, 4), t(1, 2, 3, 3, 4), dtypes=(F32, BF16, I64))
case(F.pad, "F.pad_constant_negative", lambda x: (F.pad(x, (1, -1, -2, 0), value=3.0), F.pad(x, (2, 2))),
     t(2, 3, 4), dtypes=(F32, I64))
for _name, _args in (("ReflectionPad1d", (2,)), ("ReflectionPad2d", ((1, 2, 2, 0),)), ("ReflectionPad3d", (1,)),
                     ("ReplicationPad1d", ((3, 1),)), ("ReplicationPad2d", (2,)), ("ReplicationPad3d", ((1, 0, 2, 1, 0, 1),)),
                     ("CircularPad1d", ((1, 3),)), ("CircularPad2d", (2,)), ("CircularPad3d", ((1, 2, 0, 1, 2, 0),)),
                     ("ConstantPad1d", (2, 1.5)), ("ConstantPad2d", ((1, 0, 2, 1), -2.0)), ("ConstantPad3d", (1, 3.0)),
                     ("ZeroPad1d", ((1, 2),)), ("ZeroPad2d", (2,)), ("ZeroPad3d", ((1, 0, 0, 1, 2, 0),))):
    _cls = getattr(nn, _name)
    _rank = int(_name[-2]) + 2
    case(_cls, f"nn.{_name}", partial(_cls, *_args), t(*(2, 3, 4, 5, 4)[:_rank]), module=True,
         dtypes=(F32, BF16) if _name.startswith("Reflection") else (F32,))

case(F.pad, "F.pad", lambda x: (F.pad(x, (1, 2)), F.pad(x, (0, 1, 2, 0), value=-1.5), F.pad(x, (-1, 1, 1, 1, 1, 0))),
     t(2, 3, 4), dtypes=(F32, BF16, I64, BOOL))


@pytest.mark.parametrize("c,dtype", params_of(CASES))
def test_op(c, dtype):
    run_case(c, dtype)


def test_cropping_more_than_a_dim_holds_is_refused_as_eager_refuses_it():
    x = torch.ones(2, 3)
    for pad in ((-5, 2), (-4, 3), (2, -6)):
        with pytest.raises(RuntimeError, match="narrow"):
            F.pad(x, pad)
        # (a negative result already fails shape propagation; a crop that padding makes up for, the rule)
        with pytest.raises(fxla.FxlaError, match=r"F.pad crops dim 1 of size 3 by .*, more than it holds|negative "
                                                 r"dimension -1"):
            fxla.compile(lambda t, p=pad: F.pad(t, p))(x)
    torch.testing.assert_close(fxla.compile(lambda t: F.pad(t, (-3, 0)))(x), F.pad(x, (-3, 0)))   # (empty: fine)
