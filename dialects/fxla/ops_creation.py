"""The ``creation`` family: tensors made from attributes alone, or from the program's random seed (part of the op
table; see :mod:`.ops`).

Python scalars enter the IR as 0-d ``fxla.constant`` ops; creation ops with static sizes (``torch.zeros``,
``torch.full``, ``torch.arange`` ...) become ``fxla.constant`` splats or ``fxla.arange``.  Random tensors
(``torch.rand``, ``torch.randn``, dropout masks) are ``fxla.rng`` ops reading the program's one seed argument
(docs/training.md, "Random numbers").
"""
from __future__ import annotations

from . import infer, infer_indexing
from .opdef import ANY_ELEM, DENSE, F64, I64, I64_ARRAY, STR, Attr, InferError, OpDef, Operand
from .types import Sig

constant = OpDef("constant", "A tensor literal (also how Python scalars enter the IR, as 0-d tensors).", (),
                 (Attr("value", DENSE, "the elements; its type is the result type"),), infer=infer.constant,
                 torch="torch.tensor")
arange = OpDef("arange", "start + i * step for i in [0, length); the result type names the element type.", (),
               (Attr("start", F64, "first value"), Attr("step", F64, "increment"),
                Attr("length", I64, "number of elements")),
               infer=infer_indexing.arange, torch="torch.arange")


def _rng(ops, attrs) -> list:
    seed = ops[0]
    if seed.shape != (2,):
        raise InferError(f"seed must be a tensor<2xi64>, got shape {list(seed.shape)}")
    if any(d < 0 for d in attrs["shape"]):
        raise InferError(f"shape must be non-negative, got {list(attrs['shape'])}")
    if attrs["stream"] < 0:
        raise InferError(f"stream must be non-negative, got {attrs['stream']}")
    return [Sig(tuple(attrs["shape"]), ANY_ELEM)]


rng = OpDef("rng", "Random numbers of the (floating-point) result type, from the program's seed: uniform in "
            "[0, 1) (k / 2^d for d the type's significand bits, as torch's CPU generator makes them) or standard "
            "normal (Box-Muller, computed in f32 or f64).  Ops with different `stream`s draw independent numbers; "
            "the same seed and stream give the same numbers (what a backward relies on when it recomputes them).",
            (Operand("seed", "the program's random state: two 64-bit words (the THREE_FRY key and counter), drawn "
                     "from torch's generator per call", elems=("i64",)),),
            (Attr("shape", I64_ARRAY, "the result shape"),
             Attr("distribution", STR, "`uniform` or `normal`", choices=("uniform", "normal")),
             Attr("stream", I64, "which independent stream of the seed (one per random op of a program)")),
            infer=_rng, torch="torch.rand / torch.randn")

CREATION_OPS = (constant, arange, rng)
