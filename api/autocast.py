"""``torch.autocast`` at call time: refused, since a compiled program cannot follow it.

Autocast is applied by eager torch ops as they run (``linear``/``matmul``/``conv`` cast their inputs to the
autocast dtype).  A compiled call runs none of them: its program computes in the dtypes it was traced with,
so under autocast it would return float32 where eager returns bfloat16.  Rather than that silent difference,
a call made while autocast is enabled raises :class:`fxla.AutocastError` (the tracer likewise refuses a forward
that enters an autocast region: :class:`fxla.frontend.Tracer`).  The check is one C call; the C shortcut of a
call plan leaves such calls to the plan, which raises.
"""
from __future__ import annotations

import torch

from fxla.errors import format_message
from fxla.frontend import AutocastError
from fxla.frontend.source import user_frame_location

is_autocast_enabled = torch._C._is_any_autocast_enabled      # (torch 2.13; covered by tests/test_autocast.py)


def check_not_autocast(name: str) -> None:
    """Raise :class:`AutocastError` if ``torch.autocast`` is enabled (any device type)."""
    if is_autocast_enabled():
        raise AutocastError(format_message(
            f"{name} was called under torch.autocast, which a compiled program cannot follow",
            user_frame_location(),
            why="autocast casts the inputs of ops such as linear and matmul as eager torch runs them; the compiled "
                "program runs none of them and computes in the dtypes it was traced with, so its results would "
                "have other dtypes than eager's",
            fix="call it outside the autocast region (with torch.autocast(..., enabled=False): around the call), "
                "and put the autocast region inside the compiled code (forward, or fxla.compile_step's loss_fn: "
                "fxla traces it as eager runs it), or compile a lower-precision model: "
                "fxla.compile(model.to(torch.bfloat16)) called with bfloat16 inputs"))
