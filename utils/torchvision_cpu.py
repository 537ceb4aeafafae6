"""Import torchvision's models on CPU torch, whether or not its compiled extension loads.

The package index's torchvision 0.28.0 (the one for torch 2.13, pinned in constraints.txt) is a CUDA build: its
``_C.so`` does not load next to CPU torch, so the operators it would define are missing, and ``import
torchvision`` then fails in ``torchvision/_meta_registrations.py`` with "operator torchvision::nms does not
exist" (it registers fake kernels for ``nms`` and ``qnms``, which need a schema).

:func:`import_torchvision` first loads ``_C.so`` itself, as torchvision would.  Where that works (a CPU build),
it imports torchvision as it is.  Where it does not, it defines the two schemas torchvision's import needs —
``torchvision::nms`` and ``torchvision::qnms``, as in torchvision's C++ sources — with no kernel, then imports
torchvision.  Every model constructor (``torchvision.models.*``) then works; the detection ops (``nms``,
``roi_align``, ...) stay unavailable, as torchvision says when one is called.

Used by the benchmarks (``benchmarks/run.py``) and tests that build torchvision's models::

    sys.path.insert(0, os.path.join(ROOT, "utils"))
    from torchvision_cpu import import_torchvision
    torchvision = import_torchvision()
    model = torchvision.models.mobilenet_v2().eval()
"""
from __future__ import annotations

import importlib.util
import os
import sys
from typing import Optional

import torch

#: The schemas ``import torchvision`` needs when its extension does not load (torchvision/csrc/ops/nms.cpp and
#: csrc/ops/quantized/cpu/qnms_kernel.cpp declare them).
SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)

_library: Optional[torch.library.Library] = None      # kept alive: dropping it would unregister the schemas


def _extension_loads() -> bool:
    """Whether torchvision's ``_C`` extension loads here (it is then loaded: torchvision's own load is a no-op)."""
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return False
    for folder in spec.submodule_search_locations:
        for name in os.listdir(folder):
            if name.startswith("_C.") and name.endswith((".so", ".pyd")):
                try:
                    torch.ops.load_library(os.path.join(folder, name))
                    return True
                except (ImportError, OSError):
                    return False
    return False


def import_torchvision():
    """``import torchvision`` on CPU torch, defining the schemas it needs where its extension does not load.

    Returns the torchvision module.  Raises ImportError if torchvision is not installed (``pip install -c
    constraints.txt -e '.[test]'`` installs it)."""
    global _library
    if "torchvision" in sys.modules:
        return sys.modules["torchvision"]
    if importlib.util.find_spec("torchvision") is None:
        raise ImportError("torchvision is not installed: `.venv/bin/pip install -c constraints.txt -e '.[test]'` "
                          "installs the pinned version")
    if _library is None and not _extension_loads() and not hasattr(torch.ops.torchvision, "nms"):
        _library = torch.library.Library("torchvision", "DEF")
        for schema in SCHEMAS:
            _library.define(schema)
    import torchvision
    return torchvision
